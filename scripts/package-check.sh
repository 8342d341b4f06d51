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
# Cargo treats a registry crate as immutable: it unpacks each package it verifies the others
# against into $CARGO_HOME/registry/src/<local registry>/NAME-VERSION, and keeps what it built
# from it, and reuses both on the next run while the version is unchanged, so a second run
# would build against the first run's sources. Both are removed first: the unpacked copies of
# our crates (only in local registries, whose directory names start with "-"; crates.io's are
# never touched) and our crates' build fingerprints (they are rebuilt, nothing else).
cargo_home=${CARGO_HOME:-$HOME/.cargo}
metadata=$(cargo metadata --format-version 1 --no-deps --locked)
target_dir=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["target_directory"])' "$metadata")
while read -r kind name version; do
  if [[ $kind == unpublished ]]; then
    args+=(--exclude "$name")
  else
    rm -rf "$cargo_home"/registry/src/-*/"$name-$version" "$target_dir"/debug/.fingerprint/"$name"-*
  fi
done < <(python3 -c '
import json, sys
for p in json.loads(sys.argv[1])["packages"]:
    kind = "unpublished" if p.get("publish") == [] else "published"
    print(kind, p["name"], p["version"])
' "$metadata")

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
