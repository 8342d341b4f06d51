#!/usr/bin/env python3
"""Soak of a front in cluster mode (Python 3 standard library only; needs haproxy).

Three `serve --cluster-keys` replicas behind haproxy (scripts/cluster_rig.py), two `connect`
runners linked to all three, and one client per provider calling through haproxy for
DURATION seconds (describe now and then, call otherwise), while replica 1 is SIGKILLed and
started again, replica 2 stopped (SIGTERM) and started again, and runner edge-b stopped or
SIGKILLed and started again, in turn, every CHAOS seconds. Replica 3 and runner edge-a run
throughout. Every SAMPLE seconds each process's fds, threads and RSS are read from /proc,
with its children and their states, and any plugin process that outlived its runner.

Every request must be answered and classified: a success; a failure object with a code and a
dispatch state (e.g. plugin_replaced after a runner restarted, describe_required,
plugin_runner_not_found while a runner is away); or a lost answer (the balancer's own 502/504,
or the connection closed, when a replica died with the request in flight), which is counted
apart. Anything else fails the soak, and so does an answer that never comes (60 s), fds or
threads of a process that ran throughout growing from the first third of the run to the last,
its RSS growing by more than half, a zombie seen twice running, an orphaned plugin, or a
process left after the stop.

Writes OUT/samples.jsonl and OUT/summary.json and prints the summary; exits 1 on a failure.

Usage: soak_cluster.py --binary BIN --out DIR [--seconds N] [--chaos N] [--sample N]
"""

import argparse
import http.client
import json
import os
import random
import signal
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_rig import USER, Rig  # noqa: E402
from proc_table import DISPATCHES, measure, read, table  # noqa: E402

def plugin_processes(binary, before=frozenset()):
    """PIDs of the example plugins of this binary (`BIN example-plugin`), but those of
    `before` (running before the soak started: another run's, not this one's)."""
    found = []
    needle = binary.encode() + b"\0example-plugin"
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) not in before:
            cmdline = read(f"/proc/{name}/cmdline") or b""
            if cmdline.startswith(needle):
                found.append(int(name))
    return found


class Tally:
    def __init__(self):
        self.lock = threading.Lock()
        self.requests = 0
        self.outcomes = {}
        self.lost = 0
        self.unanswered = 0
        self.unclassified = []

    def note(self, key):
        with self.lock:
            self.requests += 1
            self.outcomes[key] = self.outcomes.get(key, 0) + 1


def classify(action, status, body, instance):
    """The outcome key of one answer; None when it is not classifiable."""
    if status == 200 and isinstance(body, dict) and body.get("success") is True:
        return f"{action}:ok"
    output = body.get("output") if isinstance(body, dict) else None
    if isinstance(output, dict) and isinstance(output.get("error"), dict):
        code, dispatch = output["error"].get("code"), output.get("dispatch")
        if isinstance(code, str) and dispatch in DISPATCHES:
            return f"{action}:{code}:{dispatch}"
    if status in (502, 503, 504) and not instance:
        return f"{action}:lost:balancer_{status}"
    return None


def client(balancer, runner, plugin, tally, stop, pace, seed):
    rng = random.Random(seed)
    binding = None
    conn = None
    while not stop.is_set():
        if binding is None or rng.random() < 0.05:
            action = "describe"
            params = {"action": "describe", "runner": runner, "plugin": plugin, "tool": "echo"}
        else:
            action = "call"
            params = {"action": "call", "binding": binding,
                      "arguments": {"text": "soak " * rng.randint(1, 20)}}
        body = json.dumps({"tool": "plugin_tool", "params": params})
        try:
            if conn is None:
                conn = http.client.HTTPConnection(*balancer, timeout=60)
            conn.request("POST", "/api/tools/call", body,
                         {"Authorization": f"Bearer {USER}",
                          "Content-Type": "application/json"})
            response = conn.getresponse()
            data = response.read()
            status, instance = response.status, response.getheader("Webcodex-Runner-Instance")
            if response.getheader("Connection", "").lower() == "close":
                conn.close()
                conn = None
        except TimeoutError:
            with tally.lock:
                tally.requests += 1
                tally.unanswered += 1
            conn = None
            continue
        except (OSError, http.client.HTTPException):
            # The connection ended with no answer: a replica died with it in flight (the
            # balancer closes the client's connection) — a lost answer.
            tally.note(f"{action}:lost:connection")
            with tally.lock:
                tally.lost += 1
            if conn is not None:
                conn.close()
            conn = None
            stop.wait(0.05)
            continue
        try:
            parsed = json.loads(data) if data else None
        except ValueError:
            parsed = None
        key = classify(action, status, parsed, instance)
        if key is None:
            with tally.lock:
                tally.requests += 1
                tally.unclassified.append({"status": status, "body": data[:300].decode(
                    "utf-8", "replace")})
            continue
        tally.note(key)
        if ":lost:" in key:
            with tally.lock:
                tally.lost += 1
        if key == "describe:ok":
            binding = parsed["output"]["binding"]
        elif not key.endswith(":ok"):
            binding = None
            stop.wait(0.05)
        stop.wait(pace)


def chaos(rig, stop, every, events, lock):
    """Restarts replicas 1 and 2 and runner edge-b in turn."""
    steps = [
        ("kill replica1", lambda: restart_replica(rig, 0, signal.SIGKILL)),
        ("stop runner edge-b", lambda: restart_runner(rig, 1, signal.SIGTERM)),
        ("stop replica2", lambda: restart_replica(rig, 1, signal.SIGTERM)),
        ("kill runner edge-b", lambda: restart_runner(rig, 1, signal.SIGKILL)),
    ]
    n = 0
    while not stop.wait(every):
        name, step = steps[n % len(steps)]
        n += 1
        started = time.monotonic()
        with lock:
            detail = step()
        events.append({"t": round(started - events[0]["t0"], 1), "event": name, **detail})


def restart_replica(rig, i, how):
    proc = rig.replicas[i]
    proc.send_signal(how)
    code = proc.wait(timeout=60)
    time.sleep(1.0)
    rig.start_replica(i)
    relinked = rig.wait_linked(i, within=120)
    return {"exit": code, "relinked_s": round(relinked, 2)}


def restart_runner(rig, j, how):
    proc = rig.runners[j]
    proc.send_signal(how)
    code = proc.wait(timeout=60)
    time.sleep(1.0)
    rig.start_runner(j)
    took = max(rig.wait_linked(i, within=120) for i in range(len(rig.replicas)))
    return {"exit": code, "relinked_s": round(took, 2)}


def third(values, which):
    n = max(1, len(values) // 3)
    part = values[:n] if which == "first" else values[-n:]
    return max(part) if part else None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--seconds", type=float, default=660)
    parser.add_argument("--chaos", type=float, default=40)
    parser.add_argument("--sample", type=float, default=5)
    parser.add_argument("--providers", type=int, default=4)
    parser.add_argument("--pace", type=float, default=0.002)
    args = parser.parse_args()
    binary = os.path.abspath(args.binary)
    os.makedirs(args.out, exist_ok=True)
    workdir = tempfile.mkdtemp(prefix="wc-soak-cluster-")
    before = frozenset(plugin_processes(binary))
    if before:
        print(f"note: {len(before)} plugin processes of this binary ran before the soak; "
              "they are not counted", file=sys.stderr)
    rig = Rig(binary, workdir, replicas=3, runners=2, providers=args.providers)
    balancer = rig.balancer()
    started = time.monotonic()
    tally, stop, lock = Tally(), threading.Event(), threading.Lock()
    events = [{"t0": started}]
    lanes = [(rid, f"ex{i}") for rid in rig.runner_ids for i in range(args.providers)]
    workers = [threading.Thread(target=client, args=(balancer, runner, plugin, tally, stop,
                                                     args.pace, 7 + k))
               for k, (runner, plugin) in enumerate(lanes)]
    workers.append(threading.Thread(target=chaos, args=(rig, stop, args.chaos, events, lock)))
    for worker in workers:
        worker.start()
    samples, failures, zombie_streak = [], [], 0
    max_zombie_streak, orphans = 0, []
    with open(os.path.join(args.out, "samples.jsonl"), "w") as out:
        while time.monotonic() - started < args.seconds:
            time.sleep(args.sample)
            with lock:
                named = rig.processes()
                rows = table()
            sample = {"t": round(time.monotonic() - started, 1), "requests": tally.requests}
            zombies = 0
            for name, pid in named.items():
                m = measure(pid)
                if m is None:
                    continue
                children = [(p, s[0]) for p, s in rows.items() if s[1] == pid]
                m["pid"] = pid
                m["children"] = len(children)
                m["zombies"] = sum(1 for _, state in children if state == "Z")
                zombies += m["zombies"]
                sample[name] = m
            runner_pids = {pid for name, pid in named.items() if name.startswith("edge")}
            lost_plugins = [p for p in plugin_processes(binary, before)
                            if rows.get(p, ("", 0))[1] not in runner_pids]
            if lost_plugins:
                orphans.append({"t": sample["t"], "pids": lost_plugins})
            zombie_streak = zombie_streak + 1 if zombies else 0
            max_zombie_streak = max(max_zombie_streak, zombie_streak)
            samples.append(sample)
            out.write(json.dumps(sample) + "\n")
            out.flush()
    stop.set()
    for worker in workers:
        worker.join(timeout=180)
    rig.stop()
    time.sleep(1.0)
    leftovers = plugin_processes(binary, before)

    # Per process name and incarnation (pid): the series of each measure.
    series = {}
    for sample in samples:
        for name, m in sample.items():
            if isinstance(m, dict):
                series.setdefault(name, {}).setdefault(m["pid"], []).append(m)
    processes = {}
    for name, incarnations in sorted(series.items()):
        entry = {"incarnations": len(incarnations)}
        for key in ("fds", "threads", "rss_kib"):
            per = [[m[key] for m in ms] for ms in incarnations.values()]
            entry[key] = {"first": per[0][0], "max": max(max(p) for p in per),
                          "max_of_each_incarnation": [max(p) for p in per]}
            if len(incarnations) == 1:
                values = per[0]
                entry[key]["first_third_max"] = third(values, "first")
                entry[key]["last_third_max"] = third(values, "last")
        processes[name] = entry
    for name in ("replica3", "edge-a"):
        entry = processes.get(name, {})
        if entry.get("incarnations") != 1:
            failures.append(f"{name} did not run throughout")
            continue
        for key, slack in (("fds", 8), ("threads", 8)):
            first, last = entry[key]["first_third_max"], entry[key]["last_third_max"]
            if last > first + slack:
                failures.append(f"{name}: {key} grew from {first} to {last}")
        first, last = entry["rss_kib"]["first_third_max"], entry["rss_kib"]["last_third_max"]
        if last > first * 1.5 + 4096:
            failures.append(f"{name}: RSS grew from {first} KiB to {last} KiB")
    summary = {
        "duration_s": round(time.monotonic() - started, 1),
        "clients": len(lanes),
        "requests": tally.requests,
        "lost": tally.lost,
        "unanswered": tally.unanswered,
        "unclassified": len(tally.unclassified),
        "outcomes": dict(sorted(tally.outcomes.items())),
        "events": events[1:],
        "processes": processes,
        "longest_zombie_streak_samples": max_zombie_streak,
        "orphan_observations": orphans[:5],
        "leftover_plugins": leftovers,
    }
    if tally.unanswered:
        failures.append(f"{tally.unanswered} requests got no answer within 60 s")
    if tally.unclassified:
        failures.append(f"{len(tally.unclassified)} answers not classified, e.g. "
                        f"{tally.unclassified[0]}")
        summary["unclassified_examples"] = tally.unclassified[:5]
    if max_zombie_streak >= 2:
        failures.append(f"zombies in {max_zombie_streak} consecutive samples")
    if orphans:
        failures.append(f"{len(orphans)} observations of plugins outliving their runner")
    if leftovers:
        failures.append(f"{len(leftovers)} plugin processes left after the stop")
    summary["failures"] = failures
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    print(json.dumps(summary, indent=2))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
