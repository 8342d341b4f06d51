#!/usr/bin/env bash
# Cargo runner for x86_64-pc-windows-gnu: runs a Windows executable under Wine.
#
# Usage (cargo calls it): scripts/wine-runner.sh PROGRAM.exe [ARGS...]
# Set by scripts/windows-test.sh through CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER.
#
# - Wine 8 (Debian 12) lacks bcryptprimitives.dll, which Rust's standard library needs: the stub
#   built by scripts/windows-test.sh (windows/bcryptprimitives.c) is copied beside PROGRAM and
#   into the profile's examples/ and deps/ directories when it is missing there, so the test
#   binaries, the CLI and the fixture plugin they start all find it.
# - A private Wine prefix (WINEPREFIX, default target/wine-prefix) keeps the user's ~/.wine
#   untouched; WINEDEBUG=-all keeps Wine's own diagnostics out of the test output.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
program=$1
shift

wine=${WINE:-}
if [[ -z $wine ]]; then
  for candidate in wine64 /usr/lib/wine/wine64 wine; do
    if command -v "$candidate" >/dev/null; then
      wine=$candidate
      break
    fi
  done
fi
[[ -n $wine ]] || { echo "wine-runner: no wine64 found (Debian: apt-get install wine64)" >&2; exit 127; }

stub=${WEBCODEX_PRNG_STUB:-$here/target/windows-stub/bcryptprimitives.dll}
[[ -f $stub ]] || { echo "wine-runner: $stub missing: run scripts/windows-test.sh" >&2; exit 127; }
if [[ $program == *.exe && -f $program ]]; then
  dir=$(cd "$(dirname "$program")" && pwd)
  # The profile directory: PROGRAM is in it, or in its deps/ or examples/.
  case $(basename "$dir") in
    deps | examples) profile_dir=$(dirname "$dir") ;;
    *) profile_dir=$dir ;;
  esac
  for d in "$dir" "$profile_dir" "$profile_dir/deps" "$profile_dir/examples"; do
    if [[ -d $d && ! -f $d/bcryptprimitives.dll ]]; then
      cp "$stub" "$d/bcryptprimitives.dll"
    fi
  done
fi

export WINEPREFIX=${WINEPREFIX:-$here/target/wine-prefix}
export WINEDEBUG=${WINEDEBUG:--all}
export WINEDLLOVERRIDES=${WINEDLLOVERRIDES:-mscoree,mshtml=}
exec "$wine" "$program" "$@"
