#!/usr/bin/env python3
"""A front in cluster mode on loopback, for scripts/perf-cluster.py and scripts/soak_cluster.py
(Python 3 standard library only; needs haproxy).

Replicas of `serve --cluster-keys` on 127.0.0.1, 127.0.0.2, 127.0.0.3 … (one port for all, an
admin listener each on another shared port), `connect` runners linked to every replica (one
`--front-url` per replica), each hosting PROVIDERS providers of the binary's built-in example
plugin (`ex0`, `ex1`, …), and haproxy before them (HTTP mode, round robin per request, no
affinity, `/readyz` checks, a refused connection retried on another replica). A second haproxy
before the first replica alone gives the one-replica figures the same balancer hop.
"""

import http.client
import json
import os
import socket
import subprocess
import sys
import time

USER = "cluster-rig-user-token-0123456789abcdef"


def runner_token(rid):
    return f"cluster-rig-runner-token-{rid}-0123456789"


def write(path, text, mode=0o600):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    return path


def quiet_env():
    return {k: v for k, v in os.environ.items()
            if k != "RUST_LOG" and not k.upper().endswith("_PROXY")}


def shared_port(hosts):
    """A TCP port free on every address of `hosts`."""
    for _ in range(200):
        probe = socket.socket()
        probe.bind((hosts[0], 0))
        port = probe.getsockname()[1]
        others = []
        try:
            for host in hosts[1:]:
                s = socket.socket()
                others.append(s)
                s.bind((host, port))
            return port
        except OSError:
            continue
        finally:
            probe.close()
            for s in others:
                s.close()
    sys.exit("no port free on every replica address")


def post(conn, params):
    body = json.dumps({"tool": "plugin_tool", "params": params})
    conn.request("POST", "/api/tools/call", body,
                 {"Authorization": f"Bearer {USER}", "Content-Type": "application/json"})
    response = conn.getresponse()
    return response.status, json.loads(response.read() or b"null"), \
        response.getheader("Webcodex-Runner-Instance")


def runner_config(workdir, name, binary, providers):
    text = "[plugins]\nrequest_timeout_secs = 30\n\n"
    for i in range(providers):
        text += (f"[[plugins.providers]]\nid = \"ex{i}\"\nname = \"Example {i}\"\n"
                 f"command = {json.dumps(binary)}\nargs = [\"example-plugin\"]\n\n")
    return write(os.path.join(workdir, name), text, 0o644)


class Rig:
    def __init__(self, binary, workdir, replicas=3, runners=2, providers=8):
        self.binary = os.path.abspath(binary)
        self.workdir = workdir
        self.hosts = [f"127.0.0.{i + 1}" for i in range(replicas)]
        self.port = shared_port(self.hosts)
        self.admin_port = shared_port(self.hosts)
        self.runner_ids = [f"edge-{chr(ord('a') + j)}" for j in range(runners)]
        self.providers = providers
        keys = subprocess.run([self.binary, "token", "new", "--cluster-key", "--name", "rig"],
                              check=True, capture_output=True, text=True).stdout
        self.keys = write(os.path.join(workdir, "keys.toml"), keys)
        text = (f"[[tokens]]\nname = \"rig\"\ntoken = \"{USER}\"\n"
                "scopes = [\"plugin:inspect\", \"plugin:invoke\"]\n\n")
        for rid in self.runner_ids:
            text += (f"[[runner_tokens]]\nname = \"{rid}-token\"\n"
                     f"token = \"{runner_token(rid)}\"\nrunner = \"{rid}\"\n\n")
        self.tokens = write(os.path.join(workdir, "tokens.toml"), text)
        self.config = runner_config(workdir, "runner.toml", self.binary, providers)
        self.replicas = [None] * replicas
        self.runners = [None] * runners
        self.balancers = []
        try:
            for i in range(replicas):
                self.start_replica(i)
            for j in range(runners):
                self.start_runner(j)
            for i in range(replicas):
                self.wait_linked(i)
        except BaseException:
            # Nothing it started outlives a rig that could not start.
            self.stop()
            raise

    def replica_addr(self, i):
        return (self.hosts[i], self.port)

    def start_replica(self, i):
        host = self.hosts[i]
        proc = subprocess.Popen(
            [self.binary, "serve", "--listen", f"{host}:{self.port}",
             "--admin-listen", f"{host}:{self.admin_port}", "--tokens", self.tokens,
             "--cluster-keys", self.keys],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=quiet_env(), text=True)
        line = proc.stdout.readline().strip()
        if not line.startswith("listening on http://"):
            sys.exit(f"serve printed {line!r}")
        self.replicas[i] = proc
        return proc

    def start_runner(self, j):
        env = quiet_env()
        env["WEBCODEX_RUNNER_TOKEN"] = runner_token(self.runner_ids[j])
        argv = [self.binary, "connect", "--config", self.config, "--no-system-proxy"]
        for host in self.hosts:
            argv += ["--front-url", f"http://{host}:{self.port}"]
        self.runners[j] = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                           stdout=subprocess.DEVNULL,
                                           stderr=subprocess.DEVNULL, env=env)
        return self.runners[j]

    def listed(self, i):
        conn = http.client.HTTPConnection(*self.replica_addr(i), timeout=30)
        try:
            status, body, _ = post(conn, {"action": "list"})
        finally:
            conn.close()
        return sorted(r["runner"] for r in (body or {}).get("output", {}).get("runners", []))

    def wait_linked(self, i, within=60.0):
        """Waits until replica i lists every runner; how long it took."""
        started = time.monotonic()
        while self.listed(i) != sorted(self.runner_ids):
            if time.monotonic() - started > within:
                sys.exit(f"replica {i} lists {self.listed(i)}, not {self.runner_ids}")
            time.sleep(0.05)
        return time.monotonic() - started

    def balancer(self, replicas=None, reuse=False):
        """Starts haproxy before `replicas` (indexes; default all); its address. By default
        a connection to a replica per request (`http-server-close`, as the balancer test:
        a retry is only ever of a refused connection); `reuse` keeps idle connections to the
        replicas and reuses them (`http-reuse safe`), as a balancer in production would."""
        replicas = range(len(self.hosts)) if replicas is None else replicas
        port = shared_port(["127.0.0.1"])
        servers = "".join(
            f"    server r{i} {self.hosts[i]}:{self.port} check port {self.admin_port}\n"
            for i in replicas)
        config = write(os.path.join(self.workdir, f"haproxy-{port}.cfg"), (
            "global\n    maxconn 2048\n\n"
            "defaults\n    mode http\n    timeout connect 2s\n    timeout client 120s\n"
            "    timeout server 120s\n    retries 3\n    option redispatch 1\n"
            + ("    http-reuse safe\n\n" if reuse else
               "    option http-server-close\n    http-reuse never\n\n") +
            f"frontend clients\n    bind 127.0.0.1:{port}\n    default_backend replicas\n\n"
            "backend replicas\n    balance roundrobin\n    option httpchk GET /readyz\n"
            "    http-check expect status 200\n    default-server inter 200ms fall 1 rise 1\n"
            + servers), 0o644)
        proc = subprocess.Popen(["haproxy", "-db", "-f", config], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.balancers.append(proc)
        deadline = time.monotonic() + 30
        while True:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                status, _, _ = post(conn, {"action": "list"})
                conn.close()
                if status == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                sys.exit("haproxy does not answer")
            time.sleep(0.05)
        return ("127.0.0.1", port)

    def processes(self):
        """{name: pid} of every replica and runner running now."""
        named = {}
        for i, proc in enumerate(self.replicas):
            if proc and proc.poll() is None:
                named[f"replica{i + 1}"] = proc.pid
        for j, proc in enumerate(self.runners):
            if proc and proc.poll() is None:
                named[self.runner_ids[j]] = proc.pid
        return named

    def stop(self):
        for proc in self.balancers:
            proc.kill()
            proc.wait()
        for proc in self.runners + self.replicas:
            if proc and proc.poll() is None:
                proc.terminate()
        for proc in self.runners + self.replicas:
            if proc:
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
