#!/usr/bin/env python3
"""A webcodex-plugin-v1 plugin for the inspector tests (Python 3 standard library only).

`plugin.py demo` serves `greet` (read-only; every Schema Profile v1 field kind), `wipe`
(destructive) and `vanish` (no hints; exits without answering, so its outcome is unknown).
`plugin.py many` serves 70 read-only tools. `plugin.py xss` serves tools whose title, description, schema and results carry HTML and script
payloads that must show as text and never run.

When INSPECTOR_PIDS is set, the plugin appends `self PID` to that file at start. When
INSPECTOR_CALL_LOG is set, every tools/call request line is appended to that file before it
is answered, so a test can prove what reached the plugin (and what did not).
"""

import json
import os
import sys

IMG = "<img src=x onerror=\"window.__xss='img';document.title='pwned'\">"
SCRIPT = "<script>window.__xss='script';document.title='pwned'</script>"
PAYLOAD = IMG + " " + SCRIPT

DEMO_TOOLS = [
    {
        "name": "greet",
        "title": "Greet someone",
        "description": "Says hello to a person, a number of times.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1, "maxLength": 12,
                         "description": "Who to greet."},
                "times": {"type": "integer", "description": "How many times."},
                "style": {"type": "string", "enum": ["plain", "loud"]},
                "polite": {"type": "boolean"},
                "ratio": {"type": "number"},
                "tags": {"type": "array", "items": {"type": "string", "maxLength": 8},
                         "maxItems": 3},
            },
            "required": ["name", "times"],
            "additionalProperties": False,
        },
        "outputSchema": {
            "type": "object",
            "properties": {"greeting": {"type": "string"}},
            "required": ["greeting"],
        },
        "annotations": {"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False},
    },
    {
        "name": "wipe",
        "title": "Wipe all notes",
        "description": "Deletes every note. There is no undo.",
        "inputSchema": {
            "type": "object",
            "properties": {"folder": {"type": "string"}},
            "required": ["folder"],
            "additionalProperties": False,
        },
        "annotations": {"readOnlyHint": False, "destructiveHint": True},
    },
    {
        "name": "vanish",
        "title": "Vanish",
        "description": "Exits before answering: its outcome is unknown.",
        "inputSchema": {"type": "object", "properties": {}, "additionalProperties": False},
    },
]

XSS_TOOLS = [
    {
        "name": "payload",
        "title": "Title " + IMG,
        "description": "Description " + PAYLOAD,
        "inputSchema": {
            "type": "object",
            "title": PAYLOAD,
            "description": PAYLOAD,
            "properties": {
                "text": {"type": "string", "description": "Field " + PAYLOAD,
                         "title": PAYLOAD},
                "choice": {"type": "string", "enum": [IMG, SCRIPT]},
                IMG: {"type": "string", "description": SCRIPT},
            },
            "additionalProperties": False,
        },
        "outputSchema": {
            "type": "object",
            "description": PAYLOAD,
            "properties": {"html": {"type": "string", "description": PAYLOAD}},
            "required": ["html"],
        },
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "fails",
        "title": SCRIPT,
        "description": IMG,
        "inputSchema": {"type": "object"},
        "annotations": {"readOnlyHint": True},
    },
]


# `plugin.py many`: more tools than the page describes by itself in one load.
MANY_TOOLS = [
    {
        "name": "t%02d" % i,
        "title": "Tool %d" % i,
        "description": "Generated tool number %d." % i,
        "inputSchema": {"type": "object", "properties": {}, "additionalProperties": False},
        "annotations": {"readOnlyHint": True},
    }
    for i in range(70)
]


def log_call(line):
    path = os.environ.get("INSPECTOR_CALL_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line)
            if not line.endswith("\n"):
                f.write("\n")


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def text_result(text, structured=None, is_error=False):
    result = {"content": [{"type": "text", "text": text}], "isError": is_error}
    if structured is not None:
        result["structuredContent"] = structured
    return result


def call(mode, request_id, name, arguments):
    if mode == "xss":
        if name == "payload":
            return {"result": text_result("Result " + PAYLOAD, {"html": PAYLOAD})}
        return {"error": {"code": -32000, "message": "Failed " + PAYLOAD}}
    if name == "greet":
        times = arguments.get("times", 1)
        word = "HELLO" if arguments.get("style") == "loud" else "Hello"
        greeting = " ".join([word + ", " + arguments.get("name", "") + "!"] * max(1, min(times, 5)))
        return {"result": text_result(greeting, {"greeting": greeting})}
    if name == "wipe":
        return {"result": text_result("Wiped folder " + arguments.get("folder", ""))}
    if name == "vanish":
        sys.exit(3)
    return {"error": {"code": -32601, "message": "unknown tool"}}


def main():
    pids = os.environ.get("INSPECTOR_PIDS")
    if pids:
        with open(pids, "a", encoding="utf-8") as f:
            f.write("self %d python\n" % os.getpid())
    mode = sys.argv[1] if len(sys.argv) > 1 else "demo"
    tools = {"xss": XSS_TOOLS, "many": MANY_TOOLS}.get(mode, DEMO_TOOLS)
    for line in sys.stdin:
        try:
            request = json.loads(line)
        except ValueError:
            continue
        method = request.get("method")
        request_id = request.get("id")
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": request_id,
                  "result": {"protocolVersion": "webcodex-plugin-v1"}})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": tools}})
        elif method == "tools/call":
            log_call(line)
            params = request.get("params") or {}
            answer = call(mode, request_id, params.get("name"), params.get("arguments") or {})
            answer.update({"jsonrpc": "2.0", "id": request_id})
            send(answer)


if __name__ == "__main__":
    main()
