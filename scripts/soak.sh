#!/usr/bin/env bash
# Soak: drives the release `webcodex-plugin gateway` for SECONDS (default 600) with concurrent
# clients, reloads, and fixture plugins in `chaos` mode (they crash, hang, write garbage, flood
# stderr and exit leaving grandchildren), sampling the gateway's fds, threads, RSS and child
# processes. See scripts/soak_driver.py for the checks and docs/RELIABILITY.md for figures.
#
# Usage: scripts/soak.sh [SECONDS] [driver options, e.g. --clients 8 --sample 5]
#   OUT=DIR   where samples.jsonl and summary.json go (default soak-out/, git-ignored)
#   NICE=N    niceness of the gateway and the driver (default 19)
# Exits 1 when a check fails (see the summary's "failures").
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_TOTAL=${1:-600}
shift || true
OUT=${OUT:-soak-out}
NICE=${NICE:-19}
command -v python3 >/dev/null || { echo "python3 is required" >&2; exit 2; }
cargo build --release --quiet --bin webcodex-plugin --example fixture_plugin
exec nice -n "$NICE" python3 scripts/soak_driver.py \
  --gateway target/release/webcodex-plugin \
  --fixture target/release/examples/fixture_plugin \
  --out "$OUT" --seconds "$SECONDS_TOTAL" "$@"
