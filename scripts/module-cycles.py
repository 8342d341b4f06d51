#!/usr/bin/env python3
"""Import cycles between sibling modules of src/ (docs/ARCHITECTURE.md §2.1, the layering rule).

Reads every `crate::…` and `super::…` path in src/ (comments stripped), maps each to the module
file it names, and, for every parent module, builds the graph between its direct children. A
child using its parent (or the parent its child) is not an edge. Prints each level's graph and
exits 1 when any level has a cycle. Text matching, not a Rust parser: a reviewer's aid.
"""
import os
import re
import sys
from collections import defaultdict

ROOT = sys.argv[1] if len(sys.argv) > 1 else "src"


def module_of(path):
    rel = os.path.relpath(path, ROOT)[:-3].split(os.sep)
    return rel[:-1] if rel[-1] == "mod" else rel


def exists(module):
    return os.path.exists(os.path.join(ROOT, *module) + ".rs") or os.path.exists(
        os.path.join(ROOT, *module, "mod.rs"))


edges = defaultdict(set)
for folder, _, files in os.walk(ROOT):
    for name in files:
        if not name.endswith(".rs"):
            continue
        path = os.path.join(folder, name)
        module = module_of(path)
        if module in (["lib"], ["main"]):
            continue
        code = "\n".join(line.split("//")[0] for line in open(path).read().splitlines())
        paths = [t.split("::") for t in re.findall(r"crate::((?:[a-z_][a-z0-9_]*)(?:::[a-z_][a-z0-9_]*)*)", code)]
        for supers, rest in re.findall(r"\b((?:super::)+)((?:[a-z_][a-z0-9_]*)(?:::[a-z_][a-z0-9_]*)*)", code):
            paths.append(module[: len(module) - supers.count("super::")] + rest.split("::"))
        for group in re.findall(r"use (crate|super)::\{([^;]*)\};", code, re.S):
            base = [] if group[0] == "crate" else module[:-1]
            for part in group[1].split(","):
                part = part.strip().lstrip("{").strip()
                if re.match(r"[a-z_]", part):
                    paths.append(base + [p for p in re.split(r"::|\{", part)[:2] if p])
        for target_path in paths:
            target = []
            for segment in target_path:
                if not exists(target + [segment]):
                    break
                target.append(segment)
            src, dst = tuple(module), tuple(target)
            if not dst or src[: len(dst)] == dst or dst[: len(src)] == src:
                continue
            edges[src].add(dst)

cycles = []
parents = {k[:i] for k in edges for i in range(len(k))}
for parent in sorted(parents):
    depth = len(parent)
    graph = defaultdict(set)
    for src, targets in edges.items():
        for dst in targets:
            if src[:depth] == parent == dst[:depth] and len(src) > depth and len(dst) > depth:
                a, b = src[: depth + 1], dst[: depth + 1]
                if a != b:
                    graph[a].add(b)
    if not graph:
        continue
    print("::".join(parent) or "crate", {"::".join(k[depth:]): sorted("::".join(x[depth:]) for x in v) for k, v in sorted(graph.items())})
    index, low, stack, on, counter = {}, {}, [], set(), [0]

    def strongconnect(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted("::".join(c) for c in component))

    for v in list(graph):
        if v not in index:
            strongconnect(v)

print("cycles:", cycles or "none")
sys.exit(1 if cycles else 0)
