#!/usr/bin/env bash
# `cargo package` for every publishable crate of the workspace, as crates.io would get them,
# offline: each crate's .crate is written, unpacked and built on its own against the others
# packaged beside it (cargo >= 1.90 packages a workspace of interdependent unpublished crates
# through a local registry), so a file the package leaves out, an `include_str!` reaching
# outside its crate, or a dependency without a version fails here. Any cargo warning (a missing
# field, a target left out) fails it too. Unpublished crates (`publish = false`) are left out.
#
#   scripts/package-check.sh [--allow-dirty] [--no-verify]
#
# --allow-dirty packages uncommitted changes (local use); --no-verify writes the packages
# without building them (seconds instead of about 2 CPU-minutes after a `cargo test`).
set -euo pipefail
cd "$(dirname "$0")/.."

args=(package --workspace --offline --locked)
for arg in "$@"; do
  case "$arg" in
    --allow-dirty | --no-verify) args+=("$arg") ;;
    *) echo "usage: scripts/package-check.sh [--allow-dirty] [--no-verify]" >&2; exit 2 ;;
  esac
done
while read -r name; do
  args+=(--exclude "$name")
done < <(cargo metadata --format-version 1 --no-deps --locked | python3 -c '
import json, sys
for p in json.load(sys.stdin)["packages"]:
    if p.get("publish") == []:
        print(p["name"])
')

log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! cargo "${args[@]}" 2>"$log"; then
  cat "$log" >&2
  echo "cargo package failed" >&2
  exit 1
fi
if grep -E '^(warning|error)' "$log" >/dev/null; then
  cat "$log" >&2
  echo "cargo package warned: fix the manifest or the package's files" >&2
  exit 1
fi
grep -E '^ *Packaged' "$log" || true
