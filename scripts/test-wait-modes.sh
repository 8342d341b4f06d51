#!/usr/bin/env bash
# The provider tests on both response paths (docs/DECISIONS.md 1.26): the direct read that a
# Linux build has, and the portable path (reader thread + event channel, what Windows and macOS
# build) through the test-only `portable-wait` feature; first on a quiet machine, then with
# every CPU kept busy by spinning shells for the whole run. The runner link's leader/follower
# (the portable wait of a `connect` runner) once, quiet.
set -euo pipefail
cd "$(dirname "$0")/.."
TESTS=(--test provider_wait --test provider_runtime --test provider_reaping
  --test provider_kick_fds --test host_lifecycle --test provider_host_process)
BUILDS=("" "--features=portable-wait")
for build in "${BUILDS[@]}"; do
  cargo test --no-run $build "${TESTS[@]}" >/dev/null
done
run_all() {
  for build in "${BUILDS[@]}"; do
    echo "== ${build:-direct read}$1"
    cargo test $build "${TESTS[@]}"
    cargo test $build --lib provider::
  done
}
run_all ""
# A runner link's request threads wait per platform too (docs/DECISIONS.md 6.39): epoll on
# Linux (the plain `cargo test` runs it), leader/follower elsewhere and under `portable-wait`.
echo "== runner links, --features=portable-wait"
cargo test --features=portable-wait --test runners_link
busy=()
stop_busy() { [[ ${#busy[@]} -eq 0 ]] || kill "${busy[@]}" 2>/dev/null || true; }
trap stop_busy EXIT
for _ in $(seq "$(nproc)"); do
  (while :; do :; done) &
  busy+=($!)
done
run_all ", every CPU busy"
