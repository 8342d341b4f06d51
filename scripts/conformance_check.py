#!/usr/bin/env python3
"""Judges the results of the MCP conformance suite against the expected-failures file.

Usage: conformance_check.py EXPECTED_FAILURES RESULTS_DIR...

Each RESULTS_DIR is one run of `conformance server ... -o RESULTS_DIR` (its name is the run's
label); the suite writes one `server-<scenario>-<timestamp>/checks.json` per scenario. A check
whose status is FAILURE (or any status other than SUCCESS, WARNING, INFO, SKIPPED) fails the
job unless the expected-failures file names it, and an entry that matched no failure in any run
fails it too (stale: the suite passes it now, so remove the entry).

The expected-failures file has one entry per line, `SCENARIO[:CHECK-ID] REASON`: the scenario
(every check of it) or one check of it, then, after white space, why it cannot apply to this
server. A reason is required. Blank lines and lines starting with `#` are ignored. Python 3
stdlib only.
"""

import json
import os
import re
import sys

PASSING = {"SUCCESS", "WARNING", "INFO", "SKIPPED"}
RESULT_DIR = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$")


def read_expected(path):
    entries = {}
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            entry, _, reason = line.partition(" ")
            if len(reason.strip().split()) < 3:
                sys.exit(
                    "%s:%d: %r needs a reason (SCENARIO[:CHECK-ID] then why it cannot apply)"
                    % (path, number, entry)
                )
            if entry in entries:
                sys.exit("%s:%d: %r is listed twice" % (path, number, entry))
            entries[entry] = reason.strip()
    scenarios = {e for e in entries if ":" not in e}
    for entry in entries:
        scenario = entry.split(":", 1)[0]
        if ":" in entry and scenario in scenarios:
            sys.exit("%s: %r is listed whole and per check; keep one" % (path, scenario))
    return entries


def read_run(run_dir):
    """(scenario, check id, status, message) of every check of one run."""
    checks = []
    names = sorted(os.listdir(run_dir)) if os.path.isdir(run_dir) else []
    scenarios = [n for n in names if RESULT_DIR.match(n)]
    if not scenarios:
        sys.exit("%s: the suite wrote no scenario results" % run_dir)
    for name in scenarios:
        scenario = RESULT_DIR.match(name).group("scenario")
        path = os.path.join(run_dir, name, "checks.json")
        try:
            with open(path, encoding="utf-8") as f:
                results = json.load(f)
        except (OSError, ValueError) as e:
            sys.exit("%s: no readable checks.json (%s)" % (os.path.join(run_dir, name), e))
        for check in results:
            checks.append(
                (
                    scenario,
                    str(check.get("id")),
                    str(check.get("status")),
                    (check.get("errorMessage") or "").replace("\n", " ")[:300],
                )
            )
    return checks


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    expected = read_expected(sys.argv[1])
    used = set()
    unexpected = []
    for run_dir in sys.argv[2:]:
        label = os.path.basename(os.path.normpath(run_dir))
        checks = read_run(run_dir)
        failed = [c for c in checks if c[2] not in PASSING]
        excused = 0
        for scenario, check, status, message in failed:
            for entry in (scenario + ":" + check, scenario):
                if entry in expected:
                    used.add(entry)
                    excused += 1
                    break
            else:
                unexpected.append((label, scenario, check, status, message))
        scenarios = len({c[0] for c in checks})
        print(
            "conformance %s: %d scenarios, %d checks, %d passed, %d expected failures, %d unexpected"
            % (
                label,
                scenarios,
                len(checks),
                len(checks) - len(failed),
                excused,
                len(failed) - excused,
            )
        )
    stale = sorted(set(expected) - used)
    for label, scenario, check, status, message in unexpected:
        print("UNEXPECTED %s %s:%s %s: %s" % (label, scenario, check, status, message))
    for entry in stale:
        print("STALE %s: no run failed it; remove it from %s" % (entry, sys.argv[1]))
    if stale and os.environ.get("CONFORMANCE_PARTIAL") == "1":
        print("(a partial set of runs: stale entries are not judged)")
    # A partial set of runs (CONFORMANCE_RUNS) cannot tell a stale entry from one of another run.
    if unexpected or (stale and os.environ.get("CONFORMANCE_PARTIAL") != "1"):
        sys.exit(1)
    print("conformance: every failure is expected (%s)" % sys.argv[1])


if __name__ == "__main__":
    main()
