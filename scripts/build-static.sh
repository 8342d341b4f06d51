#!/usr/bin/env bash
# Builds the static (musl) webcodex-plugin binary for edge hosts and smoke-tests it.
#
# Usage: scripts/build-static.sh [x86_64|aarch64|all]      (default: all)
#
# - Installs the rustup target (x86_64-unknown-linux-musl, aarch64-unknown-linux-musl) when
#   it is missing.
# - x86_64 links with the system C compiler driver, as cargo does by default; aarch64 links with
#   rust-lld, which rustup ships (set CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_LINKER to use
#   another linker). ring, under rustls, compiles some C: x86_64 needs `musl-gcc` (Debian's
#   musl-tools), aarch64 a cross C compiler (Debian's gcc-aarch64-linux-gnu).
# - The binary is target/<arch>-unknown-linux-musl/<profile>/webcodex-plugin (PROFILE=release by
#   default). It has no program interpreter and needs no shared library: copy it to the host.
# - Smoke test: x86_64 runs `demo` and prints the idle memory of 8 providers; aarch64 runs a
#   `check` and a `call` of its built-in example plugin under qemu-user (qemu-aarch64-static or
#   qemu-aarch64) when one is installed, and says that it skipped otherwise (Debian: `apt-get
#   install qemu-user-static`). SMOKE=0 skips both.
# - Static optimised builds link with crates/cli/layout/idle.ld (the CLI's build.rs), which lays
#   out the code a host runs to start and idle together (docs/DECISIONS.md D-PLAT-5); a binary
#   without its `.text.idle` section fails the build.
#
# Prints one line per binary: target, path, size in bytes and MiB.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  echo "usage: $0 [x86_64|aarch64|all]" >&2
  exit 2
}

case "${1:-all}" in
  x86_64) arches=(x86_64) ;;
  aarch64) arches=(aarch64) ;;
  all) arches=(x86_64 aarch64) ;;
  *) usage ;;
esac
[[ $# -le 1 ]] || usage
profile=${PROFILE:-release}
# cargo names the directory of the dev profile `debug`; every other profile after itself.
profile_dir=$profile
[[ $profile == dev ]] && profile_dir=debug

ensure_target() {
  local target=$1
  if ! rustup target list --installed | grep -x "$target" >/dev/null; then
    echo "installing rustup target $target" >&2
    rustup target add "$target" >&2
  fi
}

# Fails when the binary asks for a program interpreter (i.e. is not statically linked).
check_static() {
  local bin=$1
  if command -v readelf >/dev/null && readelf -l "$bin" | grep -q 'INTERP'; then
    echo "error: $bin is dynamically linked" >&2
    exit 1
  fi
}

# Fails when an optimised build lacks the idle layout's section (the CLI's build.rs passes
# crates/cli/layout/idle.ld to the linker; docs/DECISIONS.md D-PLAT-5).
check_idle_layout() {
  local bin=$1
  if [[ $profile != dev ]] && command -v readelf >/dev/null &&
    ! readelf -S -W "$bin" | grep -q ' \.text\.idle '; then
    echo "error: $bin has no .text.idle section: the idle layout was not linked" >&2
    exit 1
  fi
}

# `check` and `call` of the binary's own example plugin, host and plugin run by `runner`
# (empty: natively). The runner.toml names the emulator as the plugin's command, so no binfmt
# registration is needed for the host to start its aarch64 plugin.
smoke_call() {
  local bin=$1 runner=$2 dir
  dir=$(mktemp -d)
  local abs
  abs=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
  {
    echo '[[plugins.providers]]'
    echo 'id = "example"'
    echo 'name = "Example plugin"'
    if [[ -n $runner ]]; then
      echo "command = \"$runner\""
      echo "args = [\"$abs\", \"example-plugin\"]"
    else
      echo "command = \"$abs\""
      echo 'args = ["example-plugin"]'
    fi
  } >"$dir/runner.toml"
  local out status=0
  out=$($runner "$abs" check --config "$dir/runner.toml" --plugin example 2>&1) || status=$?
  if [[ $status -eq 0 ]]; then
    out=$($runner "$abs" call --config "$dir/runner.toml" --plugin example --tool echo \
      --arguments '{"text":"hello from the edge"}' --json 2>&1) || status=$?
  fi
  rm -rf "$dir"
  if [[ $status -ne 0 || $out != *'hello from the edge'* ]]; then
    echo "error: smoke test of $bin failed (exit $status):" >&2
    echo "$out" >&2
    exit 1
  fi
}

smoke() {
  local arch=$1 bin=$2
  [[ ${SMOKE:-1} == 0 ]] && return
  case $arch in
    x86_64)
      if [[ $(uname -m) == x86_64 ]]; then
        "$bin" demo >/dev/null
        echo "smoke: $bin demo ok" >&2
        # The edge figure (docs/PERFORMANCE.md): resident memory of a host idling with 8
        # providers, 4 MiB at most; it creeps up when crates/cli/layout/idle.ld goes stale
        # (scripts/idle-layout.py regenerates it).
        local rss
        rss=$("$bin" bench --idle 1 --providers 8 | grep -o '"rss_kb":[0-9]*' | cut -d: -f2)
        echo "idle: $bin holds $rss KiB with 8 idle providers (goal: at most 4096)" >&2
      fi
      ;;
    aarch64)
      if [[ $(uname -m) == aarch64 ]]; then
        "$bin" demo >/dev/null
        echo "smoke: $bin demo ok" >&2
        return
      fi
      local qemu
      qemu=$(command -v qemu-aarch64-static || command -v qemu-aarch64 || true)
      if [[ -z $qemu ]]; then
        echo "smoke: skipped for $bin (no qemu-aarch64; Debian: apt-get install qemu-user-static)" >&2
        return
      fi
      smoke_call "$bin" "$qemu"
      echo "smoke: $bin check + call under $(basename "$qemu") ok" >&2
      ;;
  esac
}

for arch in "${arches[@]}"; do
  target=$arch-unknown-linux-musl
  ensure_target "$target"
  if [[ $arch == aarch64 && -z ${CC_aarch64_unknown_linux_musl:-} ]]; then
    # ring (rustls) compiles a little C: any aarch64 C compiler will do for it.
    export CC_aarch64_unknown_linux_musl=aarch64-linux-gnu-gcc
  fi
  if [[ $arch == aarch64 && -z ${CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_LINKER:-} ]]; then
    export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_LINKER=rust-lld
  fi
  cargo build --quiet --profile "$profile" --target "$target" --bin webcodex-plugin
  bin=target/$target/$profile_dir/webcodex-plugin
  check_static "$bin"
  check_idle_layout "$bin"
  smoke "$arch" "$bin"
  bytes=$(stat -c %s "$bin")
  printf '%s\t%s\t%s bytes (%s MiB)\n' "$target" "$bin" "$bytes" \
    "$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1048576 }')"
done
