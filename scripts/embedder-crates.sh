#!/usr/bin/env bash
# How many crates an embedder compiles: a scratch program that adds the root package
# `webcodex-plugin-host` by path with its default features, counted by `cargo tree` (normal and
# build dependencies, the program itself included), on this machine's target.
# Usage: scripts/embedder-crates.sh [MAX]   (exit 1 when the count is over MAX)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
max=${1:-}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/src"
cat > "$scratch/Cargo.toml" <<TOML
[package]
name = "scratch-embedder"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
webcodex-plugin-host = { path = "$root" }

[workspace]
TOML
echo 'fn main() {}' > "$scratch/src/main.rs"
# The workspace's lock file, so the count is of the versions the repository builds with.
cp "$root/Cargo.lock" "$scratch/Cargo.lock"
crates=$(cd "$scratch" && cargo tree -e normal,build --prefix none 2>/dev/null | sed 's/ (\*)$//; s/ (proc-macro)$//' | awk '{print $1}' | sort -u)
count=$(wc -l <<<"$crates")
echo "an embedder of webcodex-plugin-host compiles $count crates (itself included):"
tr '\n' ' ' <<<"$crates"; echo
if [[ -n $max ]] && (( count > max )); then
  echo "more than $max crates: the root package must stay the lean runtime" >&2
  exit 1
fi
