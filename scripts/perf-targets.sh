#!/usr/bin/env bash
# Measures the performance targets of docs/PERFORMANCE.md with this build's own bench modes.
# Usage: scripts/perf-targets.sh            (after `cargo build --release --examples`)
# Prints one JSON line per measurement. Works from a clean clone. The side-by-side latency
# table comes from the side-by-side harness (not part of this repository; see
# docs/PERFORMANCE.md).
set -euo pipefail
cd "$(dirname "$0")/.."
B=target/release/webcodex-plugin
F=target/release/examples/fixture_plugin
[[ -x $B && -x $F ]] || cargo build --release --quiet --bin webcodex-plugin --example fixture_plugin
N=${N:-20000}

echo "# idle: 8 providers, then 64 (limit raised), 10 s each"
$B bench --idle 10 --providers 8
$B bench --idle 10 --providers 64

echo "# startup and reload: 8 providers against 1 (p50 over 10 rounds)"
$B bench --startup --providers 8 -n 10

echo "# stderr flood: quiet run, then 100 MB of stderr spread over 2 s while 200000 calls run"
for round in 1 2 3; do
  $B bench --command "$F" --arg normal -n 200000 --json --name quiet
  FIXTURE_NOISE_BYTES=100000000 FIXTURE_NOISE_SECONDS=2 \
    $B bench --command "$F" --arg noisy -n 200000 --json --name noisy-100MB
done
