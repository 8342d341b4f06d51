#!/usr/bin/env python3
"""Soak driver for `webcodex-plugin gateway` (Python 3 standard library only).

Starts the gateway (stdio JSON lines) on a runner whose plugins are the fixture in `chaos`
mode (crashes, hangs, garbage, stderr floods, exits leaving grandchildren …) beside one
well-behaved plugin, drives it with several concurrent clients and a reloader for DURATION
seconds, and samples the gateway's fd count, thread count, RSS and child processes (with
their states) plus any orphaned grandchild of the fixture (found by a marker variable in its
environment) every SAMPLE seconds.

Writes OUT/samples.jsonl (one sample a line), OUT/summary.json and prints the summary.
Exits 1 when a check fails: an unanswered or unclassified response, an orphaned grandchild,
a zombie that outlives the 1 s termination bound by more than one sampling period, fds or
threads that grow from the first third of the run to the last, or leftovers after shutdown.

Usage: soak_driver.py --gateway BIN --fixture BIN --out DIR [--seconds N] [--clients N]
"""

import argparse
import json
import os
import queue
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proc_table import CLK_TCK, DISPATCHES, measure, proc_stat, read  # noqa: E402


def uptime_ticks():
    with open("/proc/uptime") as f:
        return float(f.read().split()[0]) * CLK_TCK


def marked_processes(marker):
    """PIDs of every process whose environment carries the marker."""
    needle = marker.encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        env = read(f"/proc/{name}/environ")
        if env and needle in env:
            found.append(int(name))
    return found


class Gateway:
    """The gateway process and a reader that routes responses to waiting clients by id."""

    def __init__(self, argv, env):
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self.lock = threading.Lock()
        self.waiting = {}
        self.next_id = 0
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            try:
                response = json.loads(line)
            except ValueError:
                response = {"id": None, "unparsable": line[:200].decode("utf-8", "replace")}
            with self.lock:
                slot = self.waiting.pop(response.get("id"), None)
            if slot is not None:
                slot.put(response)

    def request(self, params, timeout):
        slot = queue.Queue(maxsize=1)
        with self.lock:
            self.next_id += 1
            rid = self.next_id
            self.waiting[rid] = slot
            line = json.dumps({"id": rid, "tool": "plugin_tool", "params": params}) + "\n"
            self.proc.stdin.write(line.encode())
            self.proc.stdin.flush()
        try:
            return slot.get(timeout=timeout)
        except queue.Empty:
            with self.lock:
                self.waiting.pop(rid, None)
            return None


class Tally:
    def __init__(self):
        self.lock = threading.Lock()
        self.requests = 0
        self.by_outcome = {}
        self.unanswered = 0
        self.unclassified = []

    def record(self, action, response):
        with self.lock:
            self.requests += 1
            if response is None:
                self.unanswered += 1
                return
            output = response.get("output")
            success = response.get("success")
            if success is True and isinstance(output, dict):
                key = f"{action}:ok"
            elif success is False and isinstance(output, dict):
                error = output.get("error") or {}
                code = error.get("code")
                dispatch = output.get("dispatch")
                if not isinstance(code, str) or dispatch not in DISPATCHES:
                    self.unclassified.append(response)
                    return
                key = f"{action}:{code}:{dispatch}"
            else:
                self.unclassified.append(response)
                return
            self.by_outcome[key] = self.by_outcome.get(key, 0) + 1


BACK_OFF = ("plugin_provider_unavailable", "plugin_provider_busy", "plugin_check_busy")


def backs_off(response):
    """True for a refusal that a caller would not repeat at once (a retired or busy plugin)."""
    if not response or response.get("success"):
        return False
    output = response.get("output") or {}
    return (output.get("error") or {}).get("code") in BACK_OFF


def client(gateway, tally, stop, seed, plugins):
    rng = random.Random(seed)
    binding = {}
    while not stop.is_set():
        response = None
        plugin = rng.choice(plugins)
        roll = rng.random()
        if roll < 0.08:
            params = {"action": "list", "runner": "local"}
            tally.record("list", gateway.request(params, 60))
        elif roll < 0.12:
            params = {"action": "check", "runner": "local", "plugin": plugin}
            response = gateway.request(params, 60)
            tally.record("check", response)
        elif roll < 0.30 or plugin not in binding:
            tool = rng.choice(["echo", "add"])
            params = {"action": "describe", "runner": "local", "plugin": plugin, "tool": tool}
            response = gateway.request(params, 60)
            tally.record("describe", response)
            if response and response.get("success"):
                binding[plugin] = (tool, response["output"]["binding"])
            else:
                binding.pop(plugin, None)
        else:
            tool, handle = binding[plugin]
            args = {"text": "soak " * rng.randint(1, 50)} if tool == "echo" else {
                "a": rng.randint(-1000, 1000), "b": rng.randint(-1000, 1000)}
            response = gateway.request(
                {"action": "call", "binding": handle, "arguments": args}, 60)
            tally.record("call", response)
            if not (response and response.get("success")):
                binding.pop(plugin, None)
        if backs_off(response):
            stop.wait(rng.uniform(0.02, 0.1))


def reloader(gateway, tally, stop, period, seed):
    rng = random.Random(seed)
    while not stop.wait(rng.uniform(period / 2, period * 1.5)):
        tally.record("reload", gateway.request({"action": "reload", "runner": "local"}, 120))


def sample(gateway_pid, marker, started):
    """One sample of the gateway and its processes."""
    measured = measure(gateway_pid) or {"fds": None, "threads": 0, "rss_kib": 0}
    now = uptime_ticks()
    children, states, grandchildren, orphans, zombie_pids = [], {}, 0, [], []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        stat = proc_stat(int(name))
        if stat and stat[1] == gateway_pid:
            children.append(int(name))
            states[stat[0]] = states.get(stat[0], 0) + 1
            if stat[0] == "Z":
                zombie_pids.append(int(name))
    for pid in marked_processes(marker):
        stat = proc_stat(pid)
        if stat is None or stat[1] == gateway_pid or pid == gateway_pid:
            continue
        grandchildren += 1
        age = (now - stat[2]) / CLK_TCK
        # A grandchild of a plugin that exited is killed with its group within the 1 s
        # termination bound; older than 3 s it has outlived the host's reach.
        if age > 3.0:
            orphans.append({"pid": pid, "ppid": stat[1], "state": stat[0], "age_s": round(age, 1)})
    return {
        "t": round(time.monotonic() - started, 1),
        **measured,
        "children": len(children),
        "child_states": states,
        "zombies": states.get("Z", 0),
        "zombie_pids": zombie_pids,
        "grandchildren": grandchildren,
        "orphans": orphans,
    }


def write_config(directory, fixture, chaos_plugins):
    lines = ["[plugins]", "request_timeout_secs = 2", ""]
    for i in range(chaos_plugins):
        lines += [
            "[[plugins.providers]]",
            f'id = "chaos{i}"',
            f'name = "Chaos {i}"',
            f"command = {json.dumps(fixture)}",
            f'args = ["chaos", "{1000 + i}"]',
            "",
        ]
    lines += [
        "[[plugins.providers]]",
        'id = "steady"',
        'name = "Steady"',
        f"command = {json.dumps(fixture)}",
        "",
    ]
    path = os.path.join(directory, "runner.toml")
    with open(path, "w") as f:
        f.write("\n".join(lines))
    return path


def third(samples, which, key):
    n = max(1, len(samples) // 3)
    part = samples[:n] if which == "first" else samples[-n:]
    values = [s[key] for s in part if s[key] is not None]
    return max(values) if values else None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gateway", required=True)
    parser.add_argument("--fixture", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--clients", type=int, default=6)
    parser.add_argument("--chaos-plugins", type=int, default=4)
    parser.add_argument("--sample", type=float, default=5.0)
    parser.add_argument("--reload-every", type=float, default=6.0)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()

    os.makedirs(args.out, exist_ok=True)
    marker = f"wc-soak-{os.getpid()}-{int(time.time())}"
    workdir = tempfile.mkdtemp(prefix="wc-soak-")
    config = write_config(workdir, os.path.abspath(args.fixture), args.chaos_plugins)
    env = dict(os.environ)
    env["FIXTURE_CHAOS_MARKER"] = marker
    env.setdefault("RUST_LOG", "off")
    gateway = Gateway([args.gateway, "gateway", "--config", config], env)
    started = time.monotonic()
    tally = Tally()
    stop = threading.Event()
    plugins = [f"chaos{i}" for i in range(args.chaos_plugins)] + ["steady"]
    workers = [
        threading.Thread(target=client, args=(gateway, tally, stop, args.seed + i, plugins))
        for i in range(args.clients)
    ]
    workers.append(threading.Thread(
        target=reloader, args=(gateway, tally, stop, args.reload_every, args.seed)))
    for worker in workers:
        worker.start()

    samples = []
    zombie_streak, max_zombie_streak, failures = 0, 0, []
    with open(os.path.join(args.out, "samples.jsonl"), "w") as out:
        while time.monotonic() - started < args.seconds:
            time.sleep(args.sample)
            if gateway.proc.poll() is not None:
                failures.append(f"the gateway exited early with {gateway.proc.returncode}")
                break
            s = sample(gateway.proc.pid, marker, started)
            with tally.lock:
                s["requests"] = tally.requests
            samples.append(s)
            out.write(json.dumps(s) + "\n")
            out.flush()
            zombie_streak = zombie_streak + 1 if s["zombies"] else 0
            max_zombie_streak = max(max_zombie_streak, zombie_streak)

    stop.set()
    for worker in workers:
        worker.join(timeout=150)
    # Shutdown: stdin EOF; the gateway finishes in-flight requests and exits 0.
    gateway.proc.stdin.close()
    try:
        exit_code = gateway.proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        gateway.proc.kill()
        exit_code = gateway.proc.wait()
        failures.append("the gateway did not exit within 30 s of stdin EOF")
    time.sleep(1.5)
    leftovers = marked_processes(marker)
    for pid in leftovers:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass

    orphans = [o for s in samples for o in s["orphans"]]
    # How long each zombie child stayed unreaped, by first and last sample that saw it.
    seen = {}
    for s in samples:
        for pid in s["zombie_pids"]:
            first, _ = seen.get(pid, (s["t"], s["t"]))
            seen[pid] = (first, s["t"])
    zombie_spans = sorted(last - first for first, last in seen.values())
    summary = {
        "duration_s": round(time.monotonic() - started, 1),
        "clients": args.clients,
        "chaos_plugins": args.chaos_plugins,
        "samples": len(samples),
        "requests": tally.requests,
        "unanswered": tally.unanswered,
        "unclassified": len(tally.unclassified),
        "outcomes": dict(sorted(tally.by_outcome.items())),
        "first_sample": samples[0] if samples else None,
        "last_sample": samples[-1] if samples else None,
        "max": {k: max((s[k] for s in samples if s[k] is not None), default=None)
                for k in ("fds", "threads", "rss_kib", "children", "zombies", "grandchildren")},
        "first_third_max": {k: third(samples, "first", k) for k in ("fds", "threads", "rss_kib")},
        "last_third_max": {k: third(samples, "last", k) for k in ("fds", "threads", "rss_kib")},
        "samples_with_zombies": sum(1 for s in samples if s["zombies"]),
        "longest_zombie_streak_samples": max_zombie_streak,
        "distinct_zombies": len(seen),
        "longest_lived_zombie_s": round(zombie_spans[-1], 1) if zombie_spans else 0,
        "median_zombie_life_s": round(zombie_spans[len(zombie_spans) // 2], 1) if zombie_spans else 0,
        "orphan_observations": len(orphans),
        "gateway_exit_code": exit_code,
        "leftover_marked_processes": len(leftovers),
    }
    if tally.unanswered:
        failures.append(f"{tally.unanswered} requests got no response within their deadline")
    if tally.unclassified:
        failures.append(f"{len(tally.unclassified)} responses were not classified, e.g. "
                        f"{json.dumps(tally.unclassified[0])[:300]}")
        summary["unclassified_examples"] = tally.unclassified[:5]
    if orphans:
        failures.append(f"{len(orphans)} observations of orphaned grandchildren, e.g. {orphans[0]}")
    if max_zombie_streak >= 2:
        failures.append(f"zombies were seen in {max_zombie_streak} consecutive samples "
                        f"({args.sample:g} s apart): they outlive the 1 s termination bound")
    for key, slack in (("fds", 8), ("threads", 8)):
        first, last = summary["first_third_max"][key], summary["last_third_max"][key]
        if first is not None and last is not None and last > first + slack:
            failures.append(f"{key} grew from {first} (first third) to {last} (last third)")
    first, last = summary["first_third_max"]["rss_kib"], summary["last_third_max"]["rss_kib"]
    if first and last and last > first * 1.5 + 4096:
        failures.append(f"RSS grew from {first} KiB (first third) to {last} KiB (last third)")
    if exit_code != 0:
        failures.append(f"the gateway exited with {exit_code} after stdin EOF")
    if leftovers:
        failures.append(f"{len(leftovers)} marked processes outlived the gateway's shutdown")
    summary["failures"] = failures
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    print(json.dumps(summary, indent=2))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
