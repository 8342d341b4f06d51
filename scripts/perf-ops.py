#!/usr/bin/env python3
"""What the operations work costs on the call path (docs/PERFORMANCE.md, "Operations cost").

Starts `serve` from each binary given, with and without `--admin-listen` (the metrics observer
on or off), each hosting the binary's built-in example plugin, describes `echo` once on each,
then makes sequential `call`s over one keep-alive connection per server, alternating server by
server call by call (the order rotates each call), so every server sees the same load. Prints
p50 and p99 (µs) per server per round, and each server's ratio to the first one. With
`--stdio`, the servers are `gateway` processes (JSON lines on stdin/stdout; no observer there).

    scripts/perf-ops.py [--stdio] [--rounds 5] [-n 5000] [--warmup 500] BINARY [BINARY...]

The client is Python: its own time per call is in every figure alike, so ratios understate
a difference; compare ratios within a round and medians over rounds, never absolute figures.
"""

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

TOKEN = "perf-ops-token-0123456789abcdef"


class Stdio:
    """A `gateway` process: one JSON line out, one JSON line back."""

    def __init__(self, binary, config):
        env = {k: v for k, v in os.environ.items() if k != "RUST_LOG"}
        self.proc = subprocess.Popen([binary, "gateway", "--config", config],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env, text=True, bufsize=1)
        self.next_id = 0

    def post(self, params):
        self.next_id += 1
        self.proc.stdin.write(json.dumps({"id": self.next_id, "tool": "plugin_tool",
                                          "params": params}) + "\n")
        self.proc.stdin.flush()
        answer = json.loads(self.proc.stdout.readline())
        if not answer.get("success"):
            sys.exit(f"failed: {answer}")
        return answer

    def close(self):
        self.proc.stdin.close()


def start(binary, workdir, admin, stdio=False):
    config = os.path.join(workdir, "runner.toml")
    with open(config, "w") as f:
        f.write(
            "[plugins]\nrequest_timeout_secs = 30\n\n[[plugins.providers]]\nid = \"ex\"\n"
            f"name = \"Example\"\ncommand = {json.dumps(binary)}\nargs = [\"example-plugin\"]\n"
        )
    tokens = os.path.join(workdir, "tokens.toml")
    with open(tokens, "w") as f:
        f.write(
            f"[[tokens]]\nname = \"perf\"\ntoken = \"{TOKEN}\"\n"
            "scopes = [\"plugin:inspect\", \"plugin:invoke\"]\n"
        )
    os.chmod(tokens, 0o600)
    if stdio:
        server = Stdio(binary, config)
        return server.proc, server
    args = [binary, "serve", "--config", config, "--tokens", tokens, "--listen", "127.0.0.1:0"]
    if admin:
        args += ["--admin-listen", "127.0.0.1:0"]
    env = {k: v for k, v in os.environ.items() if k != "RUST_LOG"}
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                            text=True)
    line = proc.stdout.readline().strip()
    addr = line.removeprefix("listening on http://")
    host, port = addr.rsplit(":", 1)
    return proc, http.client.HTTPConnection(host, int(port), timeout=30)


def post(conn, params):
    if isinstance(conn, Stdio):
        return conn.post(params)
    body = json.dumps({"tool": "plugin_tool", "params": params})
    conn.request("POST", "/api/tools/call", body,
                 {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"})
    response = conn.getresponse()
    data = response.read()
    if response.status != 200:
        sys.exit(f"status {response.status}: {data[:200]!r}")
    return json.loads(data)


def percentile(samples, p):
    ordered = sorted(samples)
    return ordered[max(0, int(len(ordered) * p + 0.5) - 1)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binaries", nargs="+")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("-n", type=int, default=5000)
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--stdio", action="store_true")
    o = parser.parse_args()
    modes = (False,) if o.stdio else (False, True)
    labels = [f"{os.path.basename(os.path.dirname(b)) or b}{'+admin' if admin else ''}"
              for b in o.binaries for admin in modes]
    ratios = {label: ([], []) for label in labels}
    for rnd in range(1, o.rounds + 1):
        with tempfile.TemporaryDirectory() as tmp:
            servers = []
            for i, binary in enumerate(o.binaries):
                for admin in modes:
                    workdir = os.path.join(tmp, f"s{i}{int(admin)}")
                    os.mkdir(workdir)
                    servers.append(start(os.path.abspath(binary), workdir, admin, o.stdio))
            calls = []
            for _, conn in servers:
                described = post(conn, {"action": "describe", "runner": "local",
                                        "plugin": "ex", "tool": "echo"})
                binding = described["output"]["binding"]
                calls.append({"action": "call", "binding": binding,
                              "arguments": {"text": "hello"}})
            samples = [[] for _ in servers]
            for i in range(o.warmup + o.n):
                for k in range(len(servers)):
                    j = (i + k) % len(servers)
                    started = time.perf_counter()
                    post(servers[j][1], calls[j])
                    if i >= o.warmup:
                        samples[j].append((time.perf_counter() - started) * 1e6)
            for proc, conn in servers:
                conn.close()
                if not o.stdio:
                    proc.terminate()
                proc.wait(timeout=30)
        base50, base99 = percentile(samples[0], 0.5), percentile(samples[0], 0.99)
        cells = []
        for label, s in zip(labels, samples):
            p50, p99 = percentile(s, 0.5), percentile(s, 0.99)
            ratios[label][0].append(p50 / base50)
            ratios[label][1].append(p99 / base99)
            cells.append(f"{label} p50={p50:.1f} ({p50 / base50:.3f}) p99={p99:.1f} "
                         f"({p99 / base99:.3f})")
        print(f"round {rnd}: " + " | ".join(cells), flush=True)
    for label, (r50, r99) in ratios.items():
        print(f"median {label}: p50 ratio {statistics.median(r50):.3f}, "
              f"p99 ratio {statistics.median(r99):.3f}")


if __name__ == "__main__":
    main()
