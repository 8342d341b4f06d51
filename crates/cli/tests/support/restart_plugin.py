#!/usr/bin/env python3
"""A webcodex-plugin-v1 plugin for the restart policy tests (Python 3 standard library only).

At start it appends `self PID` to the file named by RESTART_PIDS (the fixture's format). Then,
by the files beside that one (so a test switches its behaviour for the next start, as a
restart or a reload starts it):
- `crash` exists: it exits at once with status 9 (a plugin that fails at start);
- `hang` exists: it reads its requests and never answers (an admission that never ends);
- otherwise it serves one tool, `echo` (`{"text": string}` → that text).
"""

import json
import os
import sys

PIDS = os.environ["RESTART_PIDS"]
HERE = os.path.dirname(PIDS)

with open(PIDS, "a") as pids:
    pids.write("self %d\n" % os.getpid())

if os.path.exists(os.path.join(HERE, "crash")):
    sys.exit(9)
HANG = os.path.exists(os.path.join(HERE, "hang"))

TOOLS = [{
    "name": "echo",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
}]


def answer(request_id, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    if HANG:
        continue
    request = json.loads(line)
    method = request.get("method")
    if method == "initialize":
        answer(request["id"], {"protocolVersion": "webcodex-plugin-v1",
                               "serverInfo": {"name": "restart-plugin"}})
    elif method == "tools/list":
        answer(request["id"], {"tools": TOOLS})
    elif method == "tools/call":
        text = request["params"]["arguments"]["text"]
        answer(request["id"], {"content": [{"type": "text", "text": text}]})
