#!/usr/bin/env bash
# Runs every fuzz target of fuzz/ (cargo-fuzz, libFuzzer) for SECONDS each.
#
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
#   SECONDS  time per target (default 600, i.e. 10 minutes); TARGET defaults to every file of
#            fuzz/fuzz_targets/ (so a new target is never left out).
#   JOBS=N   targets run at the same time (default 1); each one uses one core.
#   NICE=N   niceness of the fuzzers (default 19).
#
# Works from a clean clone: installs the nightly toolchain and cargo-fuzz (from crates.io) when
# missing. Every target must have committed seeds in fuzz/seeds/TARGET (a target without any is
# an error, not a run from nothing). The corpus grows in fuzz/corpus/TARGET (git-ignored), seeded
# from fuzz/seeds/TARGET; crashes and hangs land in fuzz/artifacts/TARGET (only those of this run
# count as findings, and each one's path is printed with the command that replays it); each
# run's log is fuzz/logs/TARGET.log. Prints one line per target (executions, corpus size,
# findings) and exits 1 when any target found a crash, a hang (an input slower than 10 s) or an
# out-of-memory input (over 2 GiB), or did not run at all. `.ci/run` runs it with 20 s a target.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET=${1:-600}
shift || true
JOBS=${JOBS:-1}
NICE=${NICE:-19}
ALL=()
for file in fuzz/fuzz_targets/*.rs; do
  ALL+=("$(basename "$file" .rs)")
done
TARGETS=("$@")
[[ ${#TARGETS[@]} -gt 0 ]] || TARGETS=("${ALL[@]}")

for target in "${TARGETS[@]}"; do
  if [[ ! -f fuzz/fuzz_targets/$target.rs ]]; then
    echo "fuzz: no target $target (the targets are: ${ALL[*]})" >&2
    exit 2
  fi
  if [[ -z $(find "fuzz/seeds/$target" -type f 2>/dev/null | head -n 1) ]]; then
    echo "fuzz: the target $target has no seeds: add inputs to fuzz/seeds/$target" >&2
    exit 2
  fi
done

rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
cargo +nightly fuzz --version >/dev/null 2>&1 || cargo install cargo-fuzz --locked

mkdir -p fuzz/logs
stamp=fuzz/logs/.started
touch "$stamp"
echo "# building ${#TARGETS[@]} targets (nightly, sanitizer: address, debug assertions on)"
for target in "${TARGETS[@]}"; do
  # The whole build log is kept; a failed build prints its end (the compiler's or cargo's
  # error, not only cargo-fuzz's backtrace) and the free disk space, then stops.
  if ! nice -n "$NICE" cargo +nightly fuzz build "$target" >"fuzz/logs/$target.build.log" 2>&1; then
    echo "fuzz: building $target failed ($(df -h --output=avail . | tail -n 1 | tr -d ' ') free on disk);" \
      "the end of fuzz/logs/$target.build.log:" >&2
    tail -n 40 "fuzz/logs/$target.build.log" >&2
    exit 1
  fi
  tail -n 1 "fuzz/logs/$target.build.log"
done

run_one() {
  local target=$1
  mkdir -p "fuzz/corpus/$target" "fuzz/artifacts/$target"
  rm -f "fuzz/logs/$target.status"
  local extra=()
  # Connection bytes longer than the 16 KiB head limit, so that 431 by size is reachable.
  if [[ $target == http_wire ]]; then extra=(-max_len=20000); fi
  nice -n "$NICE" cargo +nightly fuzz run "$target" \
    "fuzz/corpus/$target" "fuzz/seeds/$target" -- \
    -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 "${extra[@]}" >"fuzz/logs/$target.log" 2>&1
}

echo "# running each target for ${SECONDS_PER_TARGET}s, $JOBS at a time"
declare -A STATUS
running=0
for target in "${TARGETS[@]}"; do
  if (( running >= JOBS )); then
    wait -n || true
    running=$((running - 1))
  fi
  ( run_one "$target" && echo ok >"fuzz/logs/$target.status" || echo failed >"fuzz/logs/$target.status" ) &
  running=$((running + 1))
done
wait

failed=0
printf '%-22s %14s %8s %s\n' target executions corpus findings
for target in "${TARGETS[@]}"; do
  log="fuzz/logs/$target.log"
  # No final stats after a crash: the count is then unknown.
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" 2>/dev/null | grep -o '[0-9]*$' | tail -n 1 || true)
  corpus=$(find "fuzz/corpus/$target" -type f | wc -l)
  findings=$(find "fuzz/artifacts/$target" -type f -newer "$stamp" | wc -l)
  STATUS[$target]=$(cat "fuzz/logs/$target.status" 2>/dev/null || echo failed)
  printf '%-22s %14s %8s %s\n' "$target" "${execs:-?}" "$corpus" "$findings (${STATUS[$target]})"
  if [[ ${STATUS[$target]} != ok || $findings -gt 0 ]]; then failed=1; fi
  if [[ ${STATUS[$target]} == ok && ${execs:-0} -eq 0 ]]; then
    echo "  $target ran no input: see $log" >&2
    failed=1
  fi
done
if (( failed )); then
  for target in "${TARGETS[@]}"; do
    while IFS= read -r input; do
      echo "finding of $target saved as $input; replay: cargo +nightly fuzz run $target $input" >&2
    done < <(find "fuzz/artifacts/$target" -type f -newer "$stamp")
    if [[ ${STATUS[$target]} != ok ]]; then
      echo "--- the end of fuzz/logs/$target.log:" >&2
      tail -n 30 "fuzz/logs/$target.log" >&2 || true
    fi
  done
fi
exit "$failed"
