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
through (`bench --idle` with 8 providers; `gateway` with 8 providers answering a list, a
describe and a call, then EOF), collects every function that ran, and writes one input-section
pattern per function. The hash a symbol name carries (`17h…E`, `Cs…_`, `.llvm.…`) becomes `*`,
so the script survives a toolchain or version change; a function that no longer exists matches
nothing, and a new one lands in the ordinary text, so a stale file costs memory, never
correctness. Regenerate it when the idle RSS that scripts/build-static.sh prints creeps up.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

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
