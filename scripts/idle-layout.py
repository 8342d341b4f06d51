#!/usr/bin/env python3
"""Regenerates crates/cli/layout/idle.ld: the functions a host runs to start and idle, laid out
together in the static (musl) build of the webcodex-plugin binary.

Why: an idle host's memory is mostly its own code pages, and the kernel maps 64 KiB of a file
around each page fault. Left where the compiler puts them, the few hundred functions a host
runs to start its providers and wait (about 0.9 MiB) lie among 5 MiB of code it never runs,
and touch about 3 MiB of it. Listed first in the text segment they touch about 1 MiB
(docs/DECISIONS.md D-PLAT-5, docs/PERFORMANCE.md).

Usage: scripts/idle-layout.py [BINARY]
  BINARY  a static musl build of webcodex-plugin with its symbol table (the release profile
          keeps it); default: target/x86_64-unknown-linux-musl/release/webcodex-plugin, built by
          `scripts/build-static.sh x86_64` first when missing.

Needs valgrind (callgrind). Runs the binary under callgrind in the scenarios an edge host goes
through, in this order: `bench --idle` with 8 providers; `gateway` with 8 providers answering a
list, a describe and a call, then EOF; a `connect` runner of the 8 linked to a `serve` front,
one describe and one call through the front, then SIGTERM; the front itself. It collects every
function that ran and writes one input-section pattern per function, the first scenario's
first, so that the idle host's code stays the most compact. The hash a symbol name carries
(`17h…E`, `Cs…_`, `.llvm.…`) becomes `*`, so the script survives a toolchain or version change;
a function that no longer exists matches nothing, and a new one lands in the ordinary text, so
a stale file costs memory, never correctness. Regenerate it when the idle RSS that
scripts/build-static.sh prints creeps up.
"""
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUTPUT = os.path.join(ROOT, "crates", "cli", "layout", "idle.ld")
DEFAULT_BINARY = os.path.join(
    ROOT, "target", "x86_64-unknown-linux-musl", "release", "webcodex-plugin"
)
PROVIDERS = 8
# Names a linker script can hold as a section pattern as they are.
PLAIN_NAME = re.compile(r"[A-Za-z0-9_$.]+")


def callgrind(binary, args, out):
    """Starts BINARY ARGS under callgrind (its profile to OUT), with pipes to talk to it."""
    return subprocess.Popen(
        ["valgrind", "--tool=callgrind", "--demangle=no", f"--callgrind-out-file={out}",
         binary, *args],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )


def ask(gateway, request):
    """Sends one plugin_tool request to a gateway and returns its answer."""
    gateway.stdin.write(json.dumps({"id": 1, "tool": "plugin_tool", "params": request}) + "\n")
    gateway.stdin.flush()
    return json.loads(gateway.stdout.readline())


def functions_run(profile):
    """The mangled names of the functions a callgrind profile saw run, in first-seen order."""
    names = []
    for line in open(profile, encoding="utf-8", errors="replace"):
        match = re.match(r"^c?fn=\(\d+\)\s+(.*)$", line)
        if match:
            # callgrind marks recursion levels with 'N.
            name = match.group(1).strip().split("'")[0]
            if PLAIN_NAME.fullmatch(name) and not name.startswith("0x"):
                names.append(name)
    return names


def pattern(name):
    """The input-section pattern of a function: its name with every hash made a wildcard."""
    name = re.sub(r"17h[0-9a-f]{16}E", "17h*E", name)
    name = re.sub(r"\.llvm\.\d+", "*", name)
    name = re.sub(r"Cs[0-9a-zA-Z]+_(\d)", r"Cs*_\1", name)
    return f"*(.text.{name})"


def scenarios(binary, work):
    """Runs each scenario under callgrind; yields the profile files."""
    config = os.path.join(work, "runner.toml")
    with open(config, "w", encoding="utf-8") as f:
        for i in range(PROVIDERS):
            f.write(f'[[plugins.providers]]\nid = "p{i}"\nname = "Plugin {i}"\n'
                    f'command = "{binary}"\nargs = ["example-plugin"]\n\n')
    idle = os.path.join(work, "idle.out")
    bench = callgrind(binary, ["bench", "--idle", "1", "--providers", str(PROVIDERS)], idle)
    bench.communicate(timeout=600)
    yield idle
    profile = os.path.join(work, "gateway.out")
    gateway = callgrind(binary, ["gateway", "--config", config], profile)
    ask(gateway, {"action": "list"})
    described = ask(gateway, {"action": "describe", "runner": "local", "plugin": "p0",
                              "tool": "echo"})
    binding = json.dumps(described)
    binding = re.search(r'"(wc_pbind_[^"]+)"', binding).group(1)
    ask(gateway, {"action": "call", "binding": binding, "arguments": {"text": "hi"}})
    gateway.communicate(timeout=600)
    yield profile
    yield from front_and_runner(binary, config, work)


def front_and_runner(binary, config, work):
    """A `serve` front and a `connect` runner of the 8 providers linked to it, both under
    callgrind: the runner links, one describe and one call go through the front, then both
    stop (SIGTERM). Yields the runner's profile, then the front's."""
    tokens = os.path.join(work, "tokens.toml")
    with open(tokens, "w", encoding="utf-8") as f:
        for args in (["--name", "user", "--token-file", os.path.join(work, "user.tok")],
                     ["--runner", "edge", "--token-file", os.path.join(work, "edge.tok")]):
            f.write(subprocess.run([binary, "token", "new", *args], check=True,
                                   capture_output=True, text=True).stdout)
    with open(os.path.join(work, "user.tok"), encoding="utf-8") as f:
        user = f.read().strip()
    front_profile = os.path.join(work, "serve.out")
    front = callgrind(binary, ["serve", "--listen", "127.0.0.1:0", "--tokens", tokens],
                      front_profile)
    address = re.search(r"http://([0-9.:]+)", front.stdout.readline()).group(1)
    runner_profile = os.path.join(work, "connect.out")
    runner = callgrind(binary, ["connect", "--front-url", f"http://{address}", "--config",
                                config, "--token-file", os.path.join(work, "edge.tok")],
                       runner_profile)

    def ask_front(request):
        connection = http.client.HTTPConnection(address, timeout=120)
        connection.request("POST", "/api/tools/call",
                           json.dumps({"tool": "plugin_tool", "params": request}),
                           {"Authorization": f"Bearer {user}",
                            "Content-Type": "application/json"})
        return connection.getresponse().read().decode()

    deadline = time.monotonic() + 300
    while '"edge"' not in ask_front({"action": "list"}):
        if time.monotonic() > deadline:
            raise SystemExit("the runner did not link to the front within 300 s")
        time.sleep(0.5)
    described = ask_front({"action": "describe", "runner": "edge", "plugin": "p0",
                           "tool": "echo"})
    binding = re.search(r'"(wc_pbind_[^"]+)"', described).group(1)
    ask_front({"action": "call", "binding": binding, "arguments": {"text": "hi"}})
    for process in (runner, front):
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=600)
    yield runner_profile
    yield front_profile


def main():
    binary = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_BINARY
    if not os.path.exists(binary):
        subprocess.run([os.path.join(ROOT, "scripts", "build-static.sh"), "x86_64"], check=True)
    patterns, seen = [], set()
    with tempfile.TemporaryDirectory() as work:
        for profile in scenarios(binary, work):
            for name in functions_run(profile):
                line = pattern(name)
                if line not in seen:
                    seen.add(line)
                    patterns.append(line)
    os.makedirs(os.path.dirname(OUTPUT), exist_ok=True)
    with open(OUTPUT, "w", encoding="utf-8") as f:
        f.write("/* Generated by scripts/idle-layout.py: do not edit by hand.\n"
                " * The functions a host runs to start its providers and idle, first in the text\n"
                " * segment of the static build (docs/DECISIONS.md D-PLAT-5). A pattern that\n"
                " * matches nothing is harmless. */\n")
        f.write("SECTIONS\n{\n  .text.idle :\n  {\n")
        for line in patterns:
            f.write(f"    {line}\n")
        f.write("  }\n}\nINSERT BEFORE .text;\n")
    print(f"{OUTPUT}: {len(patterns)} functions")


if __name__ == "__main__":
    main()
