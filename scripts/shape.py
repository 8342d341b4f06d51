#!/usr/bin/env python3
"""The tree's shape bounds (docs/ARCHITECTURE.md): no source file under src/ or a crate's src/
(crates/*/src) over 800 lines,
and src/provider/ at most 3300 lines without its tests (files named tests.rs, and a file's
`#[cfg(test)] mod tests { ... }` block). Prints the counts; exits 1 when a bound is passed.

    scripts/shape.py
"""
import pathlib
import sys

MAX_FILE_LINES = 800
MAX_PROVIDER_LINES = 3300


def without_tests(path):
    """The lines of `path` before an inline `#[cfg(test)]` test module (0 for a tests.rs)."""
    if path.name == "tests.rs":
        return 0
    lines = path.read_text().splitlines()
    for i, line in enumerate(lines):
        if line.strip() == "#[cfg(test)]" and i + 1 < len(lines) and \
                lines[i + 1].strip().startswith("mod tests {"):
            return i
    return len(lines)


def main():
    root = pathlib.Path(__file__).resolve().parent.parent
    failed = False
    sources = [root / "src"] + sorted(root.glob("crates/*/src"))
    for path in sorted(p for tree in sources for p in tree.rglob("*.rs")):
        count = len(path.read_text().splitlines())
        if count > MAX_FILE_LINES:
            print(f"{path.relative_to(root)}: {count} lines (at most {MAX_FILE_LINES})")
            failed = True
    provider = sum(without_tests(p) for p in (root / "src" / "provider").rglob("*.rs"))
    print(f"src/provider without tests: {provider} lines (at most {MAX_PROVIDER_LINES})")
    if provider > MAX_PROVIDER_LINES:
        failed = True
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
