#!/usr/bin/env python3
"""Checks each publishable crate's `rust-version` against its dependencies' (.ci/run).

A crate cannot build on a Rust older than the newest `rust-version` among the crates it
compiles. For every workspace crate that is published (not `publish = false`), this walks its
normal and build dependencies (not dev-dependencies) as Cargo.lock resolves them, on each of
the platforms the crates build for (one platform at a time, since a dependency can be
conditional on one), and fails when the crate's own `rust-version` is below their
maximum. The other half of an honest rust-version, that the crate's own code uses no newer
standard library API, is clippy's `incompatible_msrv` lint (`cargo clippy -- -D warnings`).

Usage: scripts/msrv.py [--verbose]   (needs cargo; no network: `cargo metadata --locked`)
"""

import json
import subprocess
import sys

# The platforms the crates build for (deny.toml lists the same).
TARGETS = [
    "x86_64-unknown-linux-gnu",
    "aarch64-unknown-linux-gnu",
    "x86_64-unknown-linux-musl",
    "aarch64-unknown-linux-musl",
    "x86_64-apple-darwin",
    "aarch64-apple-darwin",
    "x86_64-pc-windows-gnu",
    "x86_64-pc-windows-msvc",
]


def version(text):
    """`1.85` or `1.85.0` as a comparable tuple (missing parts are 0); None when unset."""
    if not text:
        return None
    parts = [int(p) for p in text.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


def shown(v):
    return ".".join(str(p) for p in v) if v else "unset"


def needs(target):
    """For each published workspace crate on `target`: its name, its own rust-version, and
    the highest rust-version among the crates it compiles there (with the crate that has it)."""
    command = ["cargo", "metadata", "--format-version", "1", "--locked"]
    command += ["--filter-platform", target]
    metadata = json.loads(subprocess.check_output(command))
    packages = {p["id"]: p for p in metadata["packages"]}
    # Filtered to one platform, the resolve holds only the edges that platform compiles: a
    # crate's Windows-only dependency of a Unix-only dependency is in no platform's graph.
    nodes = {n["id"]: n for n in metadata["resolve"]["nodes"]}
    result = {}
    for member in metadata["workspace_members"]:
        package = packages[member]
        if package.get("publish") == []:
            continue
        seen = set()
        stack = [member]
        while stack:
            for dep in nodes[stack.pop()]["deps"]:
                shipped = any(k["kind"] in (None, "build") for k in dep["dep_kinds"])
                if shipped and dep["pkg"] not in seen:
                    seen.add(dep["pkg"])
                    stack.append(dep["pkg"])
        needed, by = max(
            ((version(packages[d].get("rust_version")) or (0, 0, 0), d) for d in seen),
            default=((0, 0, 0), None),
        )
        by_text = f"{packages[by]['name']} {packages[by]['version']}" if by else "nothing"
        own = version(package.get("rust_version"))
        result[package["name"]] = (own, needed, by_text, len(seen))
    return result


def main():
    verbose = "--verbose" in sys.argv[1:]
    # Per crate: the platform whose dependencies need the newest Rust.
    worst = {}
    for target in TARGETS:
        for name, (own, needed, by_text, count) in needs(target).items():
            if name not in worst or needed > worst[name][1]:
                worst[name] = (own, needed, f"{by_text} on {target}", count)
    failed = False
    for name, (own, needed, by_text, count) in worst.items():
        ok = own is not None and own >= needed
        failed |= not ok
        if verbose or not ok:
            verdict = "ok" if ok else "TOO LOW"
            print(
                f"{name}: rust-version {shown(own)}, its {count} dependencies "
                f"need {shown(needed)} ({by_text}): {verdict}"
            )
    if failed:
        sys.stdout.flush()
        print(
            "a crate's rust-version is below what its dependencies need: raise it in its "
            "Cargo.toml (and check that clippy still passes), or lower the dependency in "
            "Cargo.lock",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
