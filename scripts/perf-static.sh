#!/usr/bin/env bash
# Compares the glibc release binary with the static musl one (scripts/build-static.sh x86_64):
# idle RSS with 8 and 64 providers (built-in example plugin, `bench --idle`), then warm-call
# latency against one and the same plugin (the glibc release fixture plugin, so only the host
# differs), alternating the two hosts ROUNDS times, unpinned and pinned to CPU 0. Prints one
# JSON line per idle run and one line per latency round with the musl/glibc p50 and p99 ratios.
# Usage: scripts/perf-static.sh     (after `cargo build --release --bin webcodex-plugin
#        --example fixture_plugin` and `scripts/build-static.sh x86_64`)
set -euo pipefail
cd "$(dirname "$0")/.."
GLIBC=${GLIBC:-target/release/webcodex-plugin}
MUSL=${MUSL:-target/x86_64-unknown-linux-musl/release/webcodex-plugin}
PLUGIN=${PLUGIN:-target/release/examples/fixture_plugin}
ROUNDS=${ROUNDS:-5}
N=${N:-20000}
IDLE_SECONDS=${IDLE_SECONDS:-5}
for b in "$GLIBC" "$MUSL" "$PLUGIN"; do
  [[ -x $b ]] || { echo "missing $b: see the usage line in $0" >&2; exit 1; }
done
ls -l "$GLIBC" "$MUSL" | awk '{ print "# size", $5, $NF }'

echo "# idle: 8 and 64 providers of the built-in example plugin, ${IDLE_SECONDS} s each"
for k in 8 64; do
  for round in $(seq "$ROUNDS"); do
    for b in "$GLIBC" "$MUSL"; do
      "$b" bench --idle "$IDLE_SECONDS" --providers "$k" --name "$b"
    done
  done
done

echo "# warm calls of $PLUGIN, N=$N per run; ratio = musl / glibc within the round"
for pin in none 0; do
  run=()
  [[ $pin == none ]] || run=(taskset -c "$pin")
  for round in $(seq "$ROUNDS"); do
    g=$("${run[@]}" "$GLIBC" bench --command "$PLUGIN" --arg normal -n "$N" --json)
    m=$("${run[@]}" "$MUSL" bench --command "$PLUGIN" --arg normal -n "$N" --json)
    python3 - "$pin" "$round" "$g" "$m" <<'PY'
import json, sys
pin, rnd, g, m = sys.argv[1], sys.argv[2], *map(json.loads, sys.argv[3:])
print(f"pin={pin} round={rnd} glibc p50={g['p50_us']:.1f} p99={g['p99_us']:.1f} | "
      f"musl p50={m['p50_us']:.1f} ({m['p50_us']/g['p50_us']:.2f}x) "
      f"p99={m['p99_us']:.1f} ({m['p99_us']/g['p99_us']:.2f}x)")
PY
  done
done
