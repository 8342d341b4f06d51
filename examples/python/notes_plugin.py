#!/usr/bin/env python3
"""A webcodex-plugin-v1 plugin in plain Python (standard library only).

It keeps short notes in memory and offers three tools: add_note, list_notes and word_count.
stdout carries only protocol lines (one JSON value per line); logs go to stderr.
"""
import json
import sys

PROTOCOL = "webcodex-plugin-v1"
NOTES = []

TOOLS = [
    {
        "name": "add_note",
        "title": "Add a note",
        "description": "Stores a short note in memory and returns its number.",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string", "minLength": 1, "maxLength": 280}},
            "required": ["text"],
            "additionalProperties": False,
        },
        "outputSchema": {
            "type": "object",
            "properties": {"number": {"type": "integer"}},
            "required": ["number"],
        },
        "annotations": {"readOnlyHint": False, "idempotentHint": False},
    },
    {
        "name": "list_notes",
        "title": "List notes",
        "description": "Returns every stored note.",
        "inputSchema": {"type": "object", "additionalProperties": False},
        "outputSchema": {
            "type": "object",
            "properties": {"notes": {"type": "array", "items": {"type": "string"}}},
            "required": ["notes"],
        },
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "word_count",
        "title": "Count words",
        "description": "Counts the words of a text.",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
        "outputSchema": {
            "type": "object",
            "properties": {"words": {"type": "integer"}},
            "required": ["words"],
        },
        "annotations": {"readOnlyHint": True},
    },
]


def result(text, structured):
    return {"content": [{"type": "text", "text": text}], "structuredContent": structured}


def call(name, args):
    if name == "add_note":
        NOTES.append(args["text"])
        return result("note %d stored" % len(NOTES), {"number": len(NOTES)})
    if name == "list_notes":
        return result("\n".join(NOTES) or "(no notes)", {"notes": list(NOTES)})
    if name == "word_count":
        words = len(args["text"].split())
        return result("%d words" % words, {"words": words})
    return None


def answer(request):
    method = request.get("method")
    params = request.get("params") or {}
    if method == "initialize":
        return {"result": {"protocolVersion": PROTOCOL, "serverInfo": {"name": "notes"}}}
    if method == "tools/list":
        return {"result": {"tools": TOOLS}}
    if method == "tools/call":
        outcome = call(params.get("name"), params.get("arguments") or {})
        if outcome is None:
            return {"error": {"code": -32602, "message": "unknown tool"}}
        return {"result": outcome}
    return {"error": {"code": -32601, "message": "method not found"}}


def main():
    for line in sys.stdin:
        try:
            request = json.loads(line)
        except ValueError:
            print("ignoring a line that is not JSON", file=sys.stderr)
            continue
        if "id" not in request:
            continue  # a notification: no reply
        reply = {"jsonrpc": "2.0", "id": request["id"]}
        reply.update(answer(request))
        sys.stdout.write(json.dumps(reply, separators=(",", ":")) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
