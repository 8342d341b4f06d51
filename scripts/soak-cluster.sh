#!/usr/bin/env bash
# Soak of a front in cluster mode: three `serve --cluster-keys` replicas behind haproxy, two
# `connect` runners linked to all three, clients calling through haproxy for SECONDS (default
# 660) while replicas and a runner are killed or stopped and started again; fds, threads and
# RSS of every process sampled from /proc. See scripts/soak_cluster.py for the checks and
# docs/PERFORMANCE.md ("Fronts that scale out") for figures.
#
# Usage: scripts/soak-cluster.sh [SECONDS] [driver options, e.g. --chaos 40 --sample 5]
#   OUT=DIR   where samples.jsonl and summary.json go (default soak-cluster-out/, git-ignored)
#   NICE=N    niceness of the driver and everything it starts (default 19)
# Needs python3 and haproxy (Debian package haproxy). Exits 1 when a check fails.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_TOTAL=${1:-660}
shift || true
OUT=${OUT:-soak-cluster-out}
NICE=${NICE:-19}
command -v python3 >/dev/null || { echo "python3 is required" >&2; exit 2; }
command -v haproxy >/dev/null || { echo "haproxy is required (apt-get install haproxy)" >&2; exit 2; }
cargo build --release --quiet --bin webcodex-plugin
exec nice -n "$NICE" python3 scripts/soak_cluster.py \
  --binary target/release/webcodex-plugin --out "$OUT" --seconds "$SECONDS_TOTAL" "$@"
