#!/usr/bin/env bash
# The public API of the root crate, webcodex-plugin-host, against its record in
# docs/public-api.txt (.ci/run). An embedder builds on every name listed there: a change to one
# must be deliberate, and shows in review as a diff of that file.
#
#   scripts/public-api.sh           fails with the diff when the API differs from the record
#   scripts/public-api.sh --bless   rewrites the record from today's API (then commit it)
#
# The list comes from cargo-public-api (pinned below), which reads rustdoc's JSON output: that
# needs the nightly toolchain. Both are installed when missing (rustup, crates.io). Default
# features only; blanket impls (`impl<T> From<T> for T`, …) are left out, auto traits (Send,
# Sync, Unpin) are kept, since losing one breaks an embedder.
set -euo pipefail
cd "$(dirname "$0")/.."
RECORD=docs/public-api.txt
VERSION=0.52.0

bless=0
case "${1:-}" in
  "") ;;
  --bless) bless=1 ;;
  *) echo "usage: scripts/public-api.sh [--bless]" >&2; exit 2 ;;
esac

rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
if [[ $(cargo public-api --version 2>/dev/null) != "cargo-public-api $VERSION" ]]; then
  cargo install cargo-public-api --version "$VERSION" --locked
fi

current=$(mktemp)
trap 'rm -f "$current"' EXIT
cargo +nightly public-api --package webcodex-plugin-host --simplified --color never \
  >"$current" 2>"$current.log" || { cat "$current.log" >&2; rm -f "$current.log"; exit 1; }
rm -f "$current.log"

if [[ $bless == 1 ]]; then
  cp "$current" "$RECORD"
  echo "wrote $RECORD ($(wc -l <"$RECORD") lines)"
  exit 0
fi
if ! diff -u --label "$RECORD (recorded)" --label "webcodex-plugin-host (now)" "$RECORD" "$current"; then
  echo "the public API of webcodex-plugin-host changed (the diff above: - recorded, + now)." >&2
  echo "If that is intended, run scripts/public-api.sh --bless and commit $RECORD." >&2
  exit 1
fi
echo "public API of webcodex-plugin-host: as recorded in $RECORD ($(wc -l <"$RECORD") lines)"
