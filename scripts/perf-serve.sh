#!/usr/bin/env bash
# `serve` beside a byte relay: the relay (`http-floor` of the side-by-side harness, not part of
# this repository) and `serve` (8 providers of the harness's echo-plugin) run side by side and the
# same keep-alive client (examples/serve_load.rs) drives them in alternating rounds: relay call,
# /mcp call, /api/tools/call call, list and describe. Prints each row and the ratios to the
# relay's call per round; then c=8 calls/s (one provider per client thread), and the RSS and
# thread wake-ups of `serve` holding 256 idle keep-alive connections.
# Usage: scripts/perf-serve.sh HARNESS_DIR [ROUNDS] [N]   (BIN=path to webcodex-plugin)
set -euo pipefail
cd "$(dirname "$0")/.."
H=${1:?the side-by-side harness directory (with http-floor and echo-plugin)}
ROUNDS=${2:-3}; N=${3:-5000}
(cd "$H" && cargo build --release -q -p echo-plugin -p http-floor)
HT=${HARNESS_TARGET:-$H/target}; EP=$HT/release/echo-plugin; HF=$HT/release/http-floor
cargo build --release -q -p webcodex-plugin-cli --bin webcodex-plugin
cargo build --release -q --example serve_load
BIN=${BIN:-target/release/webcodex-plugin}; CL=target/release/examples/serve_load
W=$(mktemp -d /tmp/perf-serve.XXXX)
TOKEN=bench-token-0123456789abcdef
: > "$W/runner.toml"
for i in $(seq 1 8); do
  printf '[[plugins.providers]]\nid = "echo%d"\nname = "Echo %d"\ncommand = "%s"\n' "$i" "$i" "$EP" >> "$W/runner.toml"
done
printf '[[tokens]]\nname = "bench"\ntoken = "%s"\nscopes = ["plugin:inspect", "plugin:invoke"]\n' $TOKEN > "$W/tokens.toml"
wait_port() { for _ in $(seq 1 100); do (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.1; done; return 1; }
"$HF" --plugin "$EP" --listen 127.0.0.1:18950 > "$W/floor.log" 2>&1 & fpid=$!
"$BIN" serve --config "$W/runner.toml" --listen 127.0.0.1:18951 --tokens "$W/tokens.toml" > "$W/serve.log" 2>&1 & spid=$!
trap 'kill $fpid $spid 2>/dev/null; rm -rf "$W"' EXIT
wait_port 18950; wait_port 18951
relay() { "$CL" --url http://127.0.0.1:18950/mcp --kind relay-call --n "$N" --name relay-call "$@"; }
ours() { # KIND ROUTE [flags]
  local kind=$1 route=$2; shift 2
  "$CL" --url "http://127.0.0.1:18951$route" --token $TOKEN --kind "$kind" --n "$N" --name "$kind" "$@"
}
for r in $(seq 1 "$ROUNDS"); do
  {
    relay; ours mcp-call /mcp; ours api-call /api/tools/call; relay
    ours mcp-list /mcp; ours mcp-describe /mcp; ours api-list /api/tools/call
  } > "$W/round.jsonl"
  python3 - "$r" "$W/round.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[2])]
relays = [r for r in rows if r["name"] == "relay-call"]
p50 = sorted(r["p50_us"] for r in relays)[0]; p99 = sorted(r["p99_us"] for r in relays)[0]
print(f"round {sys.argv[1]}: relay call p50 {p50:.1f} p99 {p99:.1f} (best of {len(relays)})")
for r in rows:
    if r["name"] == "relay-call": continue
    print(f"  {r['name']:<14} p50 {r['p50_us']:7.1f} ({r['p50_us']/p50:.2f}x)  p99 {r['p99_us']:7.1f} ({r['p99_us']/p99:.2f}x)")
PY
done
echo "c=8, one provider per client thread:"
relay --conc 8 --name relay-call-c8
ours mcp-call /mcp --conc 8 --n $((N * 4)) --name mcp-call-c8
ours api-call /api/tools/call --conc 8 --n $((N * 4)) --name api-call-c8
echo "256 idle keep-alive connections:"
python3 - "$spid" $TOKEN <<'PY'
import glob, socket, sys, time
pid, token = sys.argv[1], sys.argv[2]
def switches():
    total = 0
    for f in glob.glob(f"/proc/{pid}/task/*/status"):
        try:
            for l in open(f):
                if "ctxt_switches" in l: total += int(l.split()[1])
        except FileNotFoundError: pass
    return total
def rss(): return int([l for l in open(f"/proc/{pid}/status") if l.startswith("VmRSS")][0].split()[1])
body = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"plugin_tool","arguments":{"action":"list"}}}'
req = (b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAccept: application/json\r\n"
       b"MCP-Protocol-Version: 2025-06-18\r\nAuthorization: Bearer " + token.encode() +
       b"\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
print(f"  before: rss {rss()} KiB, threads {len(glob.glob(f'/proc/{pid}/task/*'))}")
conns = []
for _ in range(256):
    s = socket.create_connection(("127.0.0.1", 18951)); s.sendall(req)
    got = b""
    while b"\r\n\r\n" not in got or not got.rstrip().endswith(b"}"): got += s.recv(65536)
    conns.append(s)
time.sleep(0.2)
a = switches(); time.sleep(4); b = switches()
print(f"  256 open: rss {rss()} KiB, threads {len(glob.glob(f'/proc/{pid}/task/*'))}, "
      f"context switches over 4 s idle: {b - a}")
time.sleep(2)
a = switches(); time.sleep(10); b = switches()
print(f"  after the keep-alive limit closed them: rss {rss()} KiB, context switches over 10 s: {b - a}")
PY
