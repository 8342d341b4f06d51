#!/usr/bin/env bash
# The provider tests on both response paths (docs/DECISIONS.md 1.26): the direct read that a
# Linux build has, and the portable path (reader thread + event channel, what Windows and macOS
# build) through the test-only `--cfg webcodex_portable_wait` (its own target directory, so the
# two builds never invalidate each other); first on a quiet machine, then with every CPU kept
# busy by spinning shells for the whole run. (A `connect` runner's link has one crew on every
# platform, leader/follower: the plain `cargo test` runs it, so no cfg of its own here.)
set -euo pipefail
cd "$(dirname "$0")/.."
portable() { CARGO_TARGET_DIR=target/portable-wait RUSTFLAGS="${RUSTFLAGS:-} --cfg webcodex_portable_wait" "$@"; }
direct() { "$@"; }
runtime_tests() {
  "$1" cargo test -p webcodex-plugin-host --test runtime -- provider_wait:: provider_runtime:: \
    provider_reaping:: provider_kick_fds:: host_lifecycle::
  "$1" cargo test -p webcodex-plugin-host --lib provider::
  "$1" cargo test -p webcodex-plugin-cli --test cli -- provider_host_process::
}
for build in direct portable; do
  $build cargo test -p webcodex-plugin-host --no-run --test runtime >/dev/null
  $build cargo test -p webcodex-plugin-cli --no-run --test cli >/dev/null
done
run_all() {
  for build in direct portable; do
    echo "== $build$1"
    runtime_tests $build
  done
}
run_all ""
busy=()
stop_busy() { [[ ${#busy[@]} -eq 0 ]] || kill "${busy[@]}" 2>/dev/null || true; }
trap stop_busy EXIT
for _ in $(seq "$(nproc)"); do
  (while :; do :; done) &
  busy+=($!)
done
run_all ", every CPU busy"
