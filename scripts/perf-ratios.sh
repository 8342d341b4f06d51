#!/usr/bin/env bash
# Alternates the floor client and this host's bench against
# the echo-plugin of the side-by-side harness (not part of this repository), ROUNDS times,
# unpinned and pinned to CPU 0, and prints the p50 and p99 ratios of each round.
# Needs the harness built in $PERF (default /tmp/perf): see docs/PERFORMANCE.md.
set -euo pipefail
cd "$(dirname "$0")/.."
PERF=${PERF:-/tmp/perf}
P=$PERF/target/release/echo-plugin
FLOOR=$PERF/target/release/floor
B=target/release/webcodex-plugin
ROUNDS=${ROUNDS:-5}
if [[ ! -x $P || ! -x $FLOOR ]]; then
  echo "needs the side-by-side harness (not part of this repository): $P and $FLOOR" >&2
  echo "set PERF to the harness directory; see docs/PERFORMANCE.md" >&2
  exit 2
fi
[[ -x $B ]] || cargo build --release --quiet --bin webcodex-plugin
N=${N:-20000}
field() { python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(d[sys.argv[2]])' "$1" "$2"; }
for pin in none 0; do
  run=()
  [[ $pin == none ]] || run=(taskset -c "$pin")
  for round in $(seq "$ROUNDS"); do
    f=$("${run[@]}" "$FLOOR" --plugin "$P" --n "$N" --warmup 1000 | grep '^{' | tail -1)
    h=$("${run[@]}" "$B" bench --command "$P" -n "$N" --json)
    python3 - "$pin" "$round" "$f" "$h" <<'PY'
import json, sys
pin, rnd, f, h = sys.argv[1], sys.argv[2], *map(json.loads, sys.argv[3:])
print(f"pin={pin} round={rnd} floor p50={f['p50_us']:.1f} p99={f['p99_us']:.1f} | "
      f"host p50={h['p50_us']:.1f} ({h['p50_us']/f['p50_us']:.2f}x) p99={h['p99_us']:.1f} ({h['p99_us']/f['p99_us']:.2f}x)")
PY
  done
done
