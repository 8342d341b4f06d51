#!/usr/bin/env python3
"""What a dial-out runner's link costs (docs/PERFORMANCE.md, "Dial-out runners").

Runs from a clean clone after `cargo build --release` (the binary's built-in example plugin is
the provider everywhere; loopback only; Python 3 standard library only):

    scripts/perf-link.py [--binary target/release/webcodex-plugin] [--part a,b,c,d]

a. Latency of a sequential `call` over one keep-alive connection: a `serve --config` runner
   asked directly, against a front (`serve --tokens`, no runner of its own) asked for the same
   call on a `connect` runner of the same runner.toml. Both are asked call by call in turn
   (the order swaps every call), so both see the same machine. p50/p99 per round, and the
   hop (front p50 - direct p50). With `--floor` (examples/hop_floor, built by `cargo build
   --release --example hop_floor`) a third path goes through a byte relay in front of the
   direct runner: the floor of any hop through one more process, and "link - floor" what
   the front and the link add on top of it.
b. Calls/s from concurrent keep-alive clients (one process each, each on a provider of its
   own: a provider serves one request at a time), 3 runners x 8 providers: through a front to
   3 `connect` runners, and directly to 3 `serve --config` runners.
c. The front's RSS and threads with 0, 1, 2, 3 idle `connect` runners; the voluntary context
   switches of the front's and of one runner's threads over an idle window (expected: the
   15 s ping and its pong, nothing else).
d. 100 idle links on one front (links of this script's own: a WebSocket handshake and a
   hello each, answering nothing): the front's RSS, threads and open descriptors before and
   with them.

The client is Python: its own time per call (~100 us) is in both paths of (a) alike, so read
the difference, not the absolute figures; (b) is bounded by the clients on a small machine.
"""

import argparse
import base64
import http.client
import json
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

USER = "perf-link-user-token-0123456789abcdef"
PROTOCOL = "webcodex-runner-link-v1"


def runner_token(rid):
    return f"perf-link-runner-token-{rid}-0123456789"


def write(path, text, mode=0o600):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    return path


def runner_config(workdir, binary, providers):
    text = "[plugins]\nrequest_timeout_secs = 30\n\n"
    for i in range(providers):
        text += (f"[[plugins.providers]]\nid = \"ex{i}\"\nname = \"Example {i}\"\n"
                 f"command = {json.dumps(binary)}\nargs = [\"example-plugin\"]\n\n")
    return write(os.path.join(workdir, "runner.toml"), text, 0o644)


def tokens_file(workdir, runner_ids):
    text = (f"[[tokens]]\nname = \"perf\"\ntoken = \"{USER}\"\n"
            "scopes = [\"plugin:inspect\", \"plugin:invoke\"]\n\n")
    for rid in runner_ids:
        text += (f"[[runner_tokens]]\nname = \"{rid}-token\"\ntoken = \"{runner_token(rid)}\"\n"
                 f"runner = \"{rid}\"\n\n")
    return write(os.path.join(workdir, "tokens.toml"), text)


def quiet_env():
    return {k: v for k, v in os.environ.items()
            if k != "RUST_LOG" and not k.upper().endswith("_PROXY")}


def start_serve(binary, args):
    proc = subprocess.Popen([binary, "serve", "--listen", "127.0.0.1:0", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=quiet_env(),
                            text=True)
    line = proc.stdout.readline().strip()
    if not line.startswith("listening on http://"):
        sys.exit(f"serve printed {line!r}")
    host, port = line.removeprefix("listening on http://").rsplit(":", 1)
    return proc, (host, int(port))


def start_connect(binary, front, config, rid):
    env = quiet_env()
    env["WEBCODEX_RUNNER_TOKEN"] = runner_token(rid)
    return subprocess.Popen([binary, "connect", "--front-url", f"http://{front[0]}:{front[1]}",
                             "--config", config, "--no-system-proxy"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env)


def stop(procs):
    for proc in procs:
        proc.terminate()
    for proc in procs:
        proc.wait(timeout=30)


def post(conn, params):
    body = json.dumps({"tool": "plugin_tool", "params": params})
    conn.request("POST", "/api/tools/call", body,
                 {"Authorization": f"Bearer {USER}", "Content-Type": "application/json"})
    response = conn.getresponse()
    data = response.read()
    if response.status != 200:
        raise RuntimeError(f"status {response.status}: {data[:300]!r}")
    return json.loads(data)


def wait_listed(addr, rids, within=30.0):
    conn = http.client.HTTPConnection(*addr, timeout=30)
    deadline = time.monotonic() + within
    while True:
        listed = [r["runner"] for r in post(conn, {"action": "list"})["output"]["runners"]]
        if sorted(listed) == sorted(rids):
            conn.close()
            return
        if time.monotonic() > deadline:
            sys.exit(f"list shows {listed}, not {rids}")
        time.sleep(0.05)


def call_params(addr, runner, plugin):
    conn = http.client.HTTPConnection(*addr, timeout=30)
    described = post(conn, {"action": "describe", "runner": runner, "plugin": plugin,
                            "tool": "echo"})
    conn.close()
    return {"action": "call", "binding": described["output"]["binding"],
            "arguments": {"text": "hello"}}


def percentile(samples, p):
    ordered = sorted(samples)
    return ordered[max(0, int(len(ordered) * p + 0.5) - 1)]


def start_floor(floor, upstream):
    proc = subprocess.Popen([floor, f"{upstream[0]}:{upstream[1]}"], stdout=subprocess.PIPE,
                            text=True)
    line = proc.stdout.readline().strip()
    if not line.startswith("listening on "):
        sys.exit(f"hop_floor printed {line!r}")
    host, port = line.removeprefix("listening on ").rsplit(":", 1)
    return proc, (host, int(port))


def part_a(o, tmp):
    print(f"(a) sequential call, direct vs front -> link -> runner; {o.rounds} rounds of "
          f"{o.n} calls per path after {o.warmup} warm-up calls", flush=True)
    hops, floors = [], []
    for rnd in range(1, o.rounds + 1):
        workdir = tempfile.mkdtemp(dir=tmp)
        config = runner_config(workdir, o.binary, 1)
        tokens = tokens_file(workdir, ["edge-1"])
        direct, direct_addr = start_serve(o.binary, ["--config", config, "--tokens", tokens])
        front, front_addr = start_serve(o.binary, ["--tokens", tokens])
        runner = start_connect(o.binary, front_addr, config, "edge-1")
        wait_listed(front_addr, ["edge-1"])
        paths = [(direct_addr, call_params(direct_addr, "local", "ex0")),
                 (front_addr, call_params(front_addr, "edge-1", "ex0"))]
        groups = [[direct.pid], [front.pid, runner.pid]]
        procs = [runner, front, direct]
        if o.floor:
            relay, relay_addr = start_floor(o.floor, direct_addr)
            paths.append((relay_addr, paths[0][1]))
            groups.append([relay.pid])
            procs.insert(0, relay)
        conns = [http.client.HTTPConnection(*addr, timeout=30) for addr, _ in paths]
        samples = [[] for _ in paths]
        counted = None
        for i in range(o.warmup + o.n):
            if i == o.warmup:
                counted = [sum_switches(g) for g in groups]
            for k in range(len(paths)):
                j = (i + k) % len(paths)
                started = time.perf_counter()
                post(conns[j], paths[j][1])
                if i >= o.warmup:
                    samples[j].append((time.perf_counter() - started) * 1e6)
        handoffs = [(sum_switches(g) - c) / o.n for g, c in zip(groups, counted)]
        for conn in conns:
            conn.close()
        stop(procs)
        (d50, d99), (f50, f99) = [(percentile(s, 0.5), percentile(s, 0.99)) for s in samples[:2]]
        hops.append(f50 - d50)
        line = (f"  round {rnd}: direct p50 {d50:.0f} us p99 {d99:.0f} us | front p50 {f50:.0f} "
                f"us p99 {f99:.0f} us | hop p50 +{f50 - d50:.0f} us, p99 +{f99 - d99:.0f} us | "
                f"switches per call: direct {handoffs[0]:.1f}, front+runner {handoffs[1]:.1f}")
        if o.floor:
            r50 = percentile(samples[2], 0.5)
            floors.append(r50 - d50)
            line += f" | floor relay p50 +{r50 - d50:.0f} us ({handoffs[2]:.1f} switches)"
        print(line, flush=True)
    print(f"  median hop at p50: +{statistics.median(hops):.0f} us", flush=True)
    if floors:
        print(f"  median floor hop at p50: +{statistics.median(floors):.0f} us; link above the "
              f"floor: +{statistics.median(hops) - statistics.median(floors):.0f} us", flush=True)


def client_loop(addr, params, seconds, out):
    conn = http.client.HTTPConnection(*addr, timeout=30)
    post(conn, params)
    count = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        post(conn, params)
        count += 1
    conn.close()
    out.put(count)


def throughput(targets, clients, seconds):
    """Calls/s of `clients` processes, client i on targets[i] = (addr, call params)."""
    out = multiprocessing.Queue()
    procs = [multiprocessing.Process(target=client_loop,
                                     args=(targets[i][0], targets[i][1], seconds, out))
             for i in range(clients)]
    for p in procs:
        p.start()
    total = sum(out.get(timeout=seconds + 60) for _ in procs)
    for p in procs:
        p.join()
    return total / seconds


def part_b(o, tmp):
    rids = ["edge-1", "edge-2", "edge-3"]
    workdir = tempfile.mkdtemp(dir=tmp)
    config = runner_config(workdir, o.binary, 8)
    tokens = tokens_file(workdir, rids)
    front, front_addr = start_serve(o.binary, ["--tokens", tokens])
    runners = [start_connect(o.binary, front_addr, config, rid) for rid in rids]
    wait_listed(front_addr, rids)
    directs = [start_serve(o.binary, ["--config", config, "--tokens", tokens]) for _ in rids]
    # Client i: runner i % 3, provider i // 3 (24 clients: every provider once).
    via_front = [(front_addr, call_params(front_addr, rids[i % 3], f"ex{i // 3}"))
                 for i in range(24)]
    direct = [(directs[i % 3][1], call_params(directs[i % 3][1], "local", f"ex{i // 3}"))
              for i in range(24)]
    print(f"(b) calls/s, 3 runners x 8 providers, {o.seconds} s per measure", flush=True)
    for clients in (8, 24):
        for rnd in range(1, 3):
            f = throughput(via_front, clients, o.seconds)
            d = throughput(direct, clients, o.seconds)
            print(f"  {clients} clients, round {rnd}: through the front {f:.0f} calls/s | "
                  f"directly to the 3 runners {d:.0f} calls/s | ratio {f / d:.2f}", flush=True)
    stop(runners + [front] + [p for p, _ in directs])


def proc_status(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return int(fields["VmRSS"].split()[0]), int(fields["Threads"])


def fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def switches(pid):
    by_thread = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                text = f.read()
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
        except OSError:
            continue
        count = int(text.split("voluntary_ctxt_switches:")[1].split()[0])
        by_thread[tid] = (name, count)
    return by_thread


def sum_switches(pids):
    """Voluntary context switches of every thread of `pids` and of their child processes
    (the plugins): about one per time a thread waits for another."""
    total = 0
    for pid in pids:
        family = [str(pid)]
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    family += f.read().split()
            except OSError:
                pass
        for member in family:
            total += sum(count for _, count in switches(member).values())
    return total


def woken(before, after):
    out = {}
    for tid, (name, count) in after.items():
        delta = count - before.get(tid, (name, 0))[1]
        if delta:
            out[f"{name}/{tid}"] = delta
    return out


def settle(seconds=1.0):
    time.sleep(seconds)


def part_c(o, tmp):
    rids = ["edge-1", "edge-2", "edge-3"]
    workdir = tempfile.mkdtemp(dir=tmp)
    config = runner_config(workdir, o.binary, 8)
    tokens = tokens_file(workdir, rids)
    front, front_addr = start_serve(o.binary, ["--tokens", tokens])
    settle()
    print("(c) the front with idle connect runners (8 providers each)", flush=True)
    rss, threads = proc_status(front.pid)
    print(f"  0 runners: RSS {rss} KiB, {threads} threads, {fds(front.pid)} fds", flush=True)
    runners = []
    for n, rid in enumerate(rids, 1):
        runners.append(start_connect(o.binary, front_addr, config, rid))
        wait_listed(front_addr, rids[:n])
        settle()
        rss, threads = proc_status(front.pid)
        print(f"  {n} runner(s): RSS {rss} KiB, {threads} threads, {fds(front.pid)} fds",
              flush=True)
    r_rss, r_threads = proc_status(runners[0].pid)
    print(f"  one connect runner: RSS {r_rss} KiB, {r_threads} threads (8 example plugins "
          "besides)", flush=True)
    settle(2)
    before = (switches(front.pid), switches(runners[0].pid))
    time.sleep(o.idle)
    after = (switches(front.pid), switches(runners[0].pid))
    for label, b, a in (("front (3 idle links)", before[0], after[0]),
                        ("runner edge-1", before[1], after[1])):
        w = woken(b, a)
        print(f"  {label}: {sum(w.values())} voluntary switches in {o.idle:.0f} s: {w}",
              flush=True)
    stop(runners + [front])


def ws_link(addr, rid, instance):
    """A link of this script's own: upgrade, hello, welcome; the socket stays open."""
    sock = socket.create_connection(addr, timeout=30)
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall((f"GET /api/runners/connect HTTP/1.1\r\nHost: {addr[0]}:{addr[1]}\r\n"
                  f"Authorization: Bearer {runner_token(rid)}\r\nUpgrade: websocket\r\n"
                  f"Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                  f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Protocol: {PROTOCOL}\r\n\r\n")
                 .encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        if not chunk:
            sys.exit("the front closed the upgrade")
        head += chunk
    if not head.startswith(b"HTTP/1.1 101"):
        sys.exit(f"upgrade refused: {head[:100]!r}")
    hello = json.dumps({"hello": {"protocol": PROTOCOL, "instance": instance}}).encode()
    sock.sendall(bytes([0x81, 0x80 | len(hello), 0, 0, 0, 0]) + hello)
    rest = head.split(b"\r\n\r\n", 1)[1]
    while len(rest) < 2 or len(rest) < 2 + rest[1]:
        rest += sock.recv(4096)
    return sock


def part_d(o, tmp):
    count = o.links
    rids = [f"idle-{i}" for i in range(count)]
    workdir = tempfile.mkdtemp(dir=tmp)
    tokens = tokens_file(workdir, rids)
    front, front_addr = start_serve(o.binary, ["--tokens", tokens])
    settle()
    rss0, threads0 = proc_status(front.pid)
    fds0 = fds(front.pid)
    socks = []
    for i, rid in enumerate(rids):
        instance = base64.urlsafe_b64encode(i.to_bytes(16, "big")).decode()[:22]
        socks.append(ws_link(front_addr, rid, instance))
    wait_listed(front_addr, rids)
    settle(2)
    rss1, threads1 = proc_status(front.pid)
    fds1 = fds(front.pid)
    print(f"(d) {count} idle links on one front", flush=True)
    print(f"  no link: RSS {rss0} KiB, {threads0} threads, {fds0} fds", flush=True)
    print(f"  {count} links: RSS {rss1} KiB, {threads1} threads, {fds1} fds "
          f"(per link: {(rss1 - rss0) / count:.1f} KiB, {(threads1 - threads0) / count:.2f} "
          f"threads, {(fds1 - fds0) / count:.2f} fds)", flush=True)
    for sock in socks:
        sock.close()
    stop([front])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default="target/release/webcodex-plugin")
    parser.add_argument("--part", default="a,b,c,d")
    parser.add_argument("--floor", default=None,
                        help="the hop_floor relay (target/release/examples/hop_floor)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("-n", type=int, default=3000)
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--idle", type=float, default=20.0)
    parser.add_argument("--links", type=int, default=100)
    o = parser.parse_args()
    o.binary = os.path.abspath(o.binary)
    if not os.access(o.binary, os.X_OK):
        sys.exit(f"{o.binary}: not built (cargo build --release)")
    parts = o.part.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        for name, run in (("a", part_a), ("b", part_b), ("c", part_c), ("d", part_d)):
            if name in parts:
                run(o, tmp)


if __name__ == "__main__":
    main()
