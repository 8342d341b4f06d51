#!/usr/bin/env bash
# The coordinator's wait for responses (docs/DECISIONS.md 1.19, 1.21, 1.24) in every mode
# (`direct` sleeps in a blocking read, `direct-poll` in poll(2)), first on a quiet machine, then
# with every CPU kept busy by spinning shells for the whole run. `cargo test` alone runs the mode this machine picks (readiness on several CPUs).
set -euo pipefail
cd "$(dirname "$0")/.."
TESTS=(--test provider_wait --test provider_runtime)
cargo test --no-run "${TESTS[@]}" >/dev/null
for mode in block poll direct-poll direct; do
  echo "== $mode"
  WEBCODEX_PLUGIN_RESPONSE_WAIT=$mode cargo test "${TESTS[@]}"
done
busy=()
stop_busy() { [[ ${#busy[@]} -eq 0 ]] || kill "${busy[@]}" 2>/dev/null || true; }
trap stop_busy EXIT
for _ in $(seq "$(nproc)"); do
  (while :; do :; done) &
  busy+=($!)
done
for mode in block poll direct-poll direct; do
  echo "== $mode, every CPU busy"
  WEBCODEX_PLUGIN_RESPONSE_WAIT=$mode cargo test "${TESTS[@]}"
done
