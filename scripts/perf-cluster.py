#!/usr/bin/env python3
"""What cluster mode costs (docs/PERFORMANCE.md, "Fronts that scale out"). From a clean clone,
with haproxy installed (Debian's `haproxy`) and valgrind for part c's instructions:

    cargo build --release
    cargo build --release -p webcodex-plugin-http --examples
    scripts/perf-cluster.py [--part a,b,c] [--seconds 20]

a. Latency of sequential calls (`bench`, keep-alive, rounds in turn): the runner called
   directly (`serve --config`, the same runner.toml) against haproxy → a replica → the link →
   a `connect` runner (haproxy with a connection to a replica per request, as the balancer
   test, and with idle connections to the replicas reused), and against one replica asked
   directly (no balancer).
b. Calls/s with 16 clients (`examples/cluster_load`: a thread, a keep-alive connection and a
   provider of its own each; two runners of 8 providers): haproxy before 3 replicas against
   haproxy before 1 replica, in turn, twice, with either haproxy setting (with the CPU time
   each role spent per call: haproxy, replicas, runners, plugins, the client); and one
   `serve --config` called directly by 8 clients, one on each of its 8 providers (a
   runner.toml holds at most 8, and a provider serves one call at a time).
c. Opening a binding (`examples/binding_cost`): a stored one looked up in a full store beside a
   sealed one opened, sealing one, and refusing a tampered, a foreign (another key) and an
   expired one: ns per operation, and instructions per operation under
   callgrind ((I(3000) - I(1000)) / 2000).
"""

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster_rig  # noqa: E402
from cluster_rig import USER, Rig, quiet_env, runner_config  # noqa: E402


def start_direct(binary, workdir, providers):
    config = runner_config(workdir, f"direct-{providers}.toml", binary, providers)
    tokens = cluster_rig.write(os.path.join(workdir, "direct-tokens.toml"), (
        f"[[tokens]]\nname = \"rig\"\ntoken = \"{USER}\"\n"
        "scopes = [\"plugin:inspect\", \"plugin:invoke\"]\n"))
    proc = subprocess.Popen([binary, "serve", "--listen", "127.0.0.1:0", "--config", config,
                             "--tokens", tokens], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=quiet_env(), text=True)
    line = proc.stdout.readline().strip()
    host, port = line.removeprefix("listening on http://").rsplit(":", 1)
    return proc, (host, int(port))


def part_a(binary, rig, direct, balancer, reusing, n, rounds):
    token = cluster_rig.write(os.path.join(rig.workdir, "user-token"), USER + "\n")
    argv = [binary, "bench", "--json", "-n", str(n), "--rounds", str(rounds),
            "--token-file", token,
            "--server-url", f"http://{direct[0]}:{direct[1]}", "--plugin", "ex0",
            "--name", "runner-direct",
            "--server-url", f"http://{balancer[0]}:{balancer[1]}", "--runner", "edge-a",
            "--plugin", "ex1", "--name", "haproxy-replica-runner",
            "--server-url", f"http://{reusing[0]}:{reusing[1]}", "--runner", "edge-a",
            "--plugin", "ex2", "--name", "haproxy-reuse-replica-runner",
            "--server-url", f"http://{rig.hosts[0]}:{rig.port}", "--runner", "edge-b",
            "--plugin", "ex1", "--name", "replica-runner"]
    out = subprocess.run(argv, check=True, capture_output=True, text=True, env=quiet_env())
    report = json.loads(out.stdout.strip().splitlines()[-1])
    rows = []
    for target in report.get("targets", [report]):
        rows.append({key: target.get(key) for key in (
            "name", "n", "failures", "p50_us", "p90_us", "p99_us", "median_p50_us",
            "median_p50_ci_us", "round_p50_us")})
    return {"bench": rows, "ranking": report.get("ranking")}


def cpu_seconds(pid):
    """User + system CPU seconds of process `pid` so far (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children(pids):
    """The child processes of `pids` (a runner's plugins)."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if ppid in pids:
                found.append(int(name))
    return found


def roles(rig):
    """{role: [pids]}: the processes whose CPU time a load run splits."""
    replicas = [p.pid for p in rig.replicas]
    runners = [p.pid for p in rig.runners]
    return {"haproxy": [p.pid for p in rig.balancers], "replicas": replicas,
            "runners": runners, "plugins": children(set(runners))}


def load(example, addr, seconds, lanes, rig=None):
    """One run of `cluster_load`; with `rig`, the CPU seconds per call each role spent
    (`cpu_us_per_call`: the client's own from its rusage)."""
    argv = [example, f"http://{addr[0]}:{addr[1]}", USER, str(seconds), *lanes]
    watched = roles(rig) if rig else {}
    before = {role: sum(cpu_seconds(p) for p in pids) for role, pids in watched.items()}
    client_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(argv, check=True, capture_output=True, text=True, env=quiet_env())
    client_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    if rig and result.get("calls"):
        spent = {role: sum(cpu_seconds(p) for p in pids) - before[role]
                 for role, pids in watched.items()}
        spent["client"] = (client_after.ru_utime + client_after.ru_stime
                           - client_before.ru_utime - client_before.ru_stime)
        result["cpu_us_per_call"] = {role: round(1e6 * sec / result["calls"], 1)
                                     for role, sec in spent.items()}
        result["cpu_us_per_call"]["total"] = round(
            sum(result["cpu_us_per_call"].values()), 1)
    return result


def part_b(examples, rig, balancers, direct8, seconds):
    lanes = [f"{rid}:ex{i}" for rid in rig.runner_ids for i in range(rig.providers)]
    runs = []
    for turn in range(2):
        for name, addr in balancers:
            result = load(os.path.join(examples, "cluster_load"), addr, seconds, lanes, rig)
            result["target"], result["turn"] = name, turn + 1
            runs.append(result)
            print(json.dumps(result), flush=True)
    direct = load(os.path.join(examples, "cluster_load"), direct8, seconds,
                  [f"local:ex{i}" for i in range(8)])
    direct["target"] = "runner-direct-8-clients"
    runs.append(direct)
    print(json.dumps(direct), flush=True)
    return runs


def part_c(examples):
    example = os.path.join(examples, "binding_cost")
    result = {}
    for mode in ("stored", "sealed", "seal", "tampered", "foreign", "expired"):
        timed = [json.loads(subprocess.run([example, mode, "200000"], check=True,
                                           capture_output=True, text=True).stdout)
                 for _ in range(3)]
        entry = {"ns_per_op": sorted(t["ns_per_op"] for t in timed),
                 "binding_chars": timed[0]["binding_chars"]}
        if shutil.which("valgrind"):
            counts = []
            for n in (1000, 3000):
                out = subprocess.run(["valgrind", "--tool=callgrind",
                                      "--callgrind-out-file=/dev/null", example, mode, str(n)],
                                     check=True, capture_output=True, text=True).stderr
                counts.append(int(next(l for l in out.splitlines() if "Collected" in l)
                                  .split(":")[-1].strip()))
            entry["instructions_per_op"] = round((counts[1] - counts[0]) / 2000)
        result[mode] = entry
        print(json.dumps({mode: entry}), flush=True)
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default="target/release/webcodex-plugin")
    parser.add_argument("--examples", default="target/release/examples")
    parser.add_argument("--part", default="a,b,c")
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("-n", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    parts = set(args.part.split(","))
    binary = os.path.abspath(args.binary)
    examples = os.path.abspath(args.examples)
    summary = {"when": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "nproc": os.cpu_count(),
               "loadavg_before": os.getloadavg()}
    if "c" in parts:
        summary["c"] = part_c(examples)
    if parts & {"a", "b"}:
        if not shutil.which("haproxy"):
            sys.exit("parts a and b need haproxy (Debian package haproxy)")
        workdir = tempfile.mkdtemp(prefix="wc-perf-cluster-")
        rig = Rig(binary, workdir, replicas=3, runners=2, providers=8)
        direct = None
        try:
            direct, direct_addr = start_direct(binary, workdir, 8)
            three, one = rig.balancer(), rig.balancer([0])
            three_reuse, one_reuse = rig.balancer(reuse=True), rig.balancer([0], reuse=True)
            if "a" in parts:
                summary["a"] = part_a(binary, rig, direct_addr, three, three_reuse, args.n,
                                      args.rounds)
                print(json.dumps(summary["a"]["bench"]), flush=True)
            if "b" in parts:
                balancers = (("haproxy-3-replicas", three), ("haproxy-1-replica", one),
                             ("haproxy-reuse-3-replicas", three_reuse),
                             ("haproxy-reuse-1-replica", one_reuse))
                summary["b"] = part_b(examples, rig, balancers, direct_addr, args.seconds)
        finally:
            rig.stop()
            if direct is not None:
                direct.terminate()
                direct.wait(timeout=60)
    summary["loadavg_after"] = os.getloadavg()
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
