"""What the soak drivers read from /proc (Linux; Python 3 standard library only): a process's
state and parent, its fds, threads and RSS, and the table of every process."""

import os

CLK_TCK = os.sysconf("SC_CLK_TCK")
# The dispatch states a failure object may carry (docs/PROTOCOL.md).
DISPATCHES = {"not_started", "outcome_unknown", "completed"}


def read(path):
    """The bytes of a file, or None when it cannot be read (e.g. the process is gone)."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def proc_stat(pid):
    """(state, ppid, start_ticks) of a process, or None when it is gone."""
    raw = read(f"/proc/{pid}/stat")
    if raw is None:
        return None
    text = raw.decode("utf-8", "replace")
    rest = text[text.rindex(")") + 2:].split()
    return rest[0], int(rest[1]), int(rest[19])


def measure(pid):
    """{fds, threads, rss_kib} of a process, or None when it is gone."""
    status = read(f"/proc/{pid}/status")
    if status is None:
        return None
    fields = {}
    for line in status.decode().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    try:
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None
    return {"fds": fds, "threads": int(fields.get("Threads", "0")),
            "rss_kib": int(fields.get("VmRSS", "0 kB").split()[0])}


def table():
    """{pid: (state, ppid, start_ticks)} of every process."""
    rows = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            stat = proc_stat(int(name))
            if stat:
                rows[int(name)] = stat
    return rows
