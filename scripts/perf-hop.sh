#!/usr/bin/env bash
# The front hop: what a call costs through a front (`serve --runners`) beyond the same call to
# the runner's `serve` directly. Starts a runner `serve` with the fixture plugin and a front in
# front of it (both on loopback), then times `echo` calls directly and through the front in
# alternating rounds, each side on its own keep-alive connection (Python's http.client: the
# client's own cost is the same on both sides, so the difference is the hop's). A third side goes
# through `hop_floor` (examples/hop_floor.rs), a byte relay with no HTTP or JSON work: the floor
# of any hop between two processes on this machine, so "front - floor" is what the front itself
# adds. A fourth side goes through a link: a front with no runner of its own (`serve --tokens`)
# and a `connect` runner of the same runner.toml dialled into it, so "link" is the dial-out
# hop measured the same way as the HTTP one.
#
# Usage: scripts/perf-hop.sh [ROUNDS] [CALLS_PER_ROUND]      (defaults 20 x 500)
#   BIN=path/to/webcodex-plugin FIXTURE=path/to/fixture_plugin FLOOR=path/to/hop_floor to skip
#   the release build.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-20}
CALLS=${2:-500}
if [[ -z ${BIN:-} || -z ${FIXTURE:-} || -z ${FLOOR:-} ]]; then
  cargo build --release -q --bin webcodex-plugin --example fixture_plugin --example hop_floor
  T=${CARGO_TARGET_DIR:-target}
  BIN=${BIN:-$T/release/webcodex-plugin}
  FIXTURE=${FIXTURE:-$T/release/examples/fixture_plugin}
  FLOOR=${FLOOR:-$T/release/examples/hop_floor}
fi
exec python3 - "$BIN" "$FIXTURE" "$ROUNDS" "$CALLS" "$FLOOR" <<'PY'
import http.client, json, os, subprocess, sys, tempfile, time

bin_, fixture, rounds, calls = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
floor_bin = sys.argv[5]
work = tempfile.mkdtemp(prefix="perf-hop.")
token = "perf-hop-token-0123456789abcdef"
def write(name, text):
    path = os.path.join(work, name)
    with open(path, "w") as f:
        f.write(text)
    return path
runner_toml = write("runner.toml",
    '[plugins]\n\n[[plugins.providers]]\nid = "fx"\nname = "Fixture"\n'
    'command = %s\nargs = ["normal"]\n' % json.dumps(os.path.abspath(fixture)))
runner_token = "perf-hop-runner-token-0123456789abcdef"
tokens = write("tokens.toml",
    '[[tokens]]\nname = "perf"\ntoken = "%s"\nscopes = ["plugin:inspect", "plugin:invoke"]\n\n'
    '[[runner_tokens]]\nname = "edge-link"\ntoken = "%s"\nrunner = "edge-link"\n' % (token, runner_token))
write("edge.tok", token + "\n")

procs = []
def quiet_env():
    return {k: v for k, v in os.environ.items() if "proxy" not in k.lower() and k != "RUST_LOG"}

def serve(*args):
    env = quiet_env()
    p = subprocess.Popen([bin_, "serve", "--listen", "127.0.0.1:0", "--tokens", tokens, *args],
                         stdout=subprocess.PIPE, stderr=open(os.environ["PERF_HOP_LOG"], "a") if os.environ.get("PERF_HOP_LOG") else subprocess.DEVNULL, env=env, text=True)
    procs.append(p)
    line = p.stdout.readline().strip()
    if not line.startswith("listening on http://"):
        sys.exit("serve did not start: %r" % line)
    host, port = line[len("listening on http://"):].rsplit(":", 1)
    return host, int(port)

def connect(addr):
    return http.client.HTTPConnection(addr[0], addr[1], timeout=30)

def tool(conn, params):
    body = json.dumps({"tool": "plugin_tool", "params": params})
    conn.request("POST", "/api/tools/call", body, {
        "Authorization": "Bearer " + token, "Content-Type": "application/json"})
    r = conn.getresponse()
    data = r.read()
    if r.status != 200:
        sys.exit("answer %d: %s" % (r.status, data[:300]))
    return json.loads(data)

def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p / 100))]

try:
    runner = serve("--config", runner_toml)
    write("runners.toml", '[[runners]]\nid = "edge"\nname = "Edge"\nurl = "http://%s:%d"\n'
          'token_file = "edge.tok"\n' % runner)
    front = serve("--runners", os.path.join(work, "runners.toml"))
    relay = subprocess.Popen([floor_bin, "%s:%d" % runner], stdout=subprocess.PIPE, text=True)
    procs.append(relay)
    line = relay.stdout.readline().strip()
    if not line.startswith("listening on "):
        sys.exit("hop_floor did not start: %r" % line)
    host, port = line[len("listening on "):].rsplit(":", 1)
    floor = (host, int(port))
    link_front = serve()
    env = quiet_env()
    env["WEBCODEX_RUNNER_TOKEN"] = runner_token
    procs.append(subprocess.Popen([bin_, "connect", "--front-url", "http://%s:%d" % link_front,
                                   "--config", runner_toml, "--no-system-proxy"],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, env=env))
    deadline = time.monotonic() + 30
    probe = connect(link_front)
    while [r["runner"] for r in tool(probe, {"action": "list"})["output"]["runners"]] != ["edge-link"]:
        if time.monotonic() > deadline:
            sys.exit("the connect runner never linked")
        time.sleep(0.05)
    probe.close()
    sides = {}
    names = ("direct", "floor", "front", "link")
    for name, addr, extra in (("direct", runner, {"runner": "local"}),
                              ("floor", floor, {"runner": "local"}),
                              ("front", front, {"runner": "edge"}),
                              ("link", link_front, {"runner": "edge-link"})):
        conn = connect(addr)
        d = tool(conn, dict(extra, action="describe", plugin="fx", tool="echo"))
        call = {"action": "call", "binding": d["output"]["binding"], "arguments": {"text": "x"}}
        for _ in range(200):  # warm-up
            tool(conn, call)
        sides[name] = (conn, call, [])
    for i in range(rounds):
        order = names[i % len(names):] + names[:i % len(names)]
        for name in order:
            conn, call, times = sides[name]
            for _ in range(calls):
                t0 = time.perf_counter_ns()
                tool(conn, call)
                times.append((time.perf_counter_ns() - t0) / 1000)
    print("%d rounds x %d calls a side, rotating the order; one keep-alive connection a side" % (rounds, calls))
    for name in names:
        t = sides[name][2]
        print("%-7s p50 %7.1f us   p99 %7.1f us" % (name, pct(t, 50), pct(t, 99)))
    d, r, f, k = (sides[n][2] for n in names)
    for label, a, b in (("hop", f, d), ("floor", r, d), ("front-floor", f, r),
                        ("link hop", k, d), ("link-floor", k, r)):
        print("%-12s p50 %+7.1f us   p99 %+7.1f us" % (label, pct(a, 50) - pct(b, 50), pct(a, 99) - pct(b, 99)))
finally:
    for p in reversed(procs):
        p.terminate()
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    for name in os.listdir(work):
        os.remove(os.path.join(work, name))
    os.rmdir(work)
PY
