#!/usr/bin/env bash
# Builds and tests the crate for Windows (x86_64-pc-windows-gnu) on Linux, under Wine.
#
# Usage: scripts/windows-test.sh [CARGO-SUBCOMMAND [ARGS...]]
#   scripts/windows-test.sh                          # cargo test --lib --bins --tests, for Windows
#                                                    # (doc tests left out: the crate's example
#                                                    # runs the Python plugin; Wine has no Python)
#   scripts/windows-test.sh test --test provider_runtime
#   scripts/windows-test.sh check --workspace --lib
#
# Needs (Debian 12): wine64, gcc-mingw-w64-x86-64 (linker, and the C compiler ring needs), and
# `rustup target add x86_64-pc-windows-gnu`; INSTALL=1 installs whatever is missing.
# Builds windows/bcryptprimitives.c (the ProcessPrng stub Wine 8 lacks) into
# target/windows-stub/, then runs cargo with scripts/wine-runner.sh as the target's runner.
# CARGO_BUILD_TARGET (rather than --target) so that the fixture plugin the tests build for
# themselves (tests/common) is a Windows executable too.
set -euo pipefail
cd "$(dirname "$0")/.."
target=x86_64-pc-windows-gnu

have_wine() { command -v wine64 >/dev/null || [[ -x /usr/lib/wine/wine64 ]]; }
if [[ ${INSTALL:-0} == 1 ]]; then
  if ! have_wine || ! command -v x86_64-w64-mingw32-gcc >/dev/null; then
    sudo=""
    [[ $(id -u) -eq 0 ]] || sudo="sudo"
    $sudo apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      wine64 gcc-mingw-w64-x86-64
  fi
  rustup target list --installed | grep -x "$target" >/dev/null || rustup target add "$target"
fi
command -v x86_64-w64-mingw32-gcc >/dev/null || { echo "x86_64-w64-mingw32-gcc missing (gcc-mingw-w64-x86-64)" >&2; exit 1; }

stub_dir=target/windows-stub
mkdir -p "$stub_dir"
if [[ ! -f $stub_dir/bcryptprimitives.dll || windows/bcryptprimitives.c -nt $stub_dir/bcryptprimitives.dll ]]; then
  x86_64-w64-mingw32-gcc -O2 -shared -s -o "$stub_dir/bcryptprimitives.dll" \
    windows/bcryptprimitives.c -ladvapi32
fi

export CARGO_BUILD_TARGET=$target
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER="$PWD/scripts/wine-runner.sh"
export CC_x86_64_pc_windows_gnu=${CC_x86_64_pc_windows_gnu:-x86_64-w64-mingw32-gcc}
export AR_x86_64_pc_windows_gnu=${AR_x86_64_pc_windows_gnu:-x86_64-w64-mingw32-ar}
export WINEPREFIX=${WINEPREFIX:-$PWD/target/wine-prefix}
export WINEDEBUG=${WINEDEBUG:--all}
if [[ ! -d $WINEPREFIX ]]; then
  # First use: create the prefix once (tens of seconds), not inside the first test's deadline.
  WINEDLLOVERRIDES="mscoree,mshtml=" scripts/wine-runner.sh wineboot --init >/dev/null 2>&1 || true
fi
if [[ $# -eq 0 ]]; then
  set -- test --lib --bins --tests
fi
if [[ $1 == test ]]; then
  # The tests start the fixture plugin; under Wine they cannot run cargo to build it themselves.
  cargo build --quiet --example fixture_plugin
  # Build everything first, then start Wine's system processes (services.exe and its services)
  # before any test process, and keep the server up between test binaries (-p: 10 s after the
  # last client). Those processes keep naming an exited wineboot.exe as their parent; the
  # leftover checks (tests/common/windows.rs) tell them from a plugin's tree by creation time,
  # which needs them to be older than the test process.
  cargo test --no-run "${@:2}"
  wineserver=$(command -v wineserver || echo /usr/lib/wine/wineserver)
  "$wineserver" -p10 || true
  scripts/wine-runner.sh wineboot >/dev/null 2>&1 || true
fi
exec cargo "$@"
