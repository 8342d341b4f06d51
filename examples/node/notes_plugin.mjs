#!/usr/bin/env node
// A webcodex-plugin-v1 plugin in plain Node.js (no packages, no build step): it speaks the raw
// protocol, newline-delimited JSON-RPC 2.0 on stdin/stdout, with node:readline.
//
// It keeps short notes in memory and offers three tools: add_note, list_notes and
// delete_notes (destructive). stdout carries only protocol lines; logs go to stderr.
// Requests are handled strictly one at a time, in arrival order.

import { createInterface } from "node:readline";

const PROTOCOL = "webcodex-plugin-v1";
const MAX_NOTES = 1000;
const notes = [];

// Nothing but protocol lines may reach stdout.
console.log = console.error;

const TOOLS = [
  {
    name: "add_note",
    title: "Add a note",
    description: "Stores a short note in memory and returns its number.",
    inputSchema: {
      type: "object",
      properties: { text: { type: "string", minLength: 1, maxLength: 280 } },
      required: ["text"],
      additionalProperties: false,
    },
    outputSchema: {
      type: "object",
      properties: { number: { type: "integer" } },
      required: ["number"],
    },
    annotations: { readOnlyHint: false, idempotentHint: false },
  },
  {
    name: "list_notes",
    title: "List notes",
    description: "Returns every stored note.",
    inputSchema: { type: "object", additionalProperties: false },
    outputSchema: {
      type: "object",
      properties: { notes: { type: "array", items: { type: "string" } } },
      required: ["notes"],
    },
    annotations: { readOnlyHint: true },
  },
  {
    name: "delete_notes",
    title: "Delete all notes",
    description: "Deletes every note. Refused unless confirm is true.",
    inputSchema: {
      type: "object",
      properties: { confirm: { type: "boolean" } },
      required: ["confirm"],
      additionalProperties: false,
    },
    annotations: { destructiveHint: true, idempotentHint: true },
  },
];

const text = (value) => [{ type: "text", text: value }];

const HANDLERS = {
  add_note(args) {
    if (notes.length >= MAX_NOTES) {
      return { content: text("the notebook is full"), isError: true };
    }
    notes.push(args.text);
    return { content: text(`note ${notes.length} stored`), structuredContent: { number: notes.length } };
  },
  list_notes() {
    return { content: text(notes.join("\n") || "no notes"), structuredContent: { notes: [...notes] } };
  },
  delete_notes(args) {
    if (args.confirm !== true) {
      // A definite, refused operation: isError true (`webcodex-plugin call` exits 1).
      return { content: text("refused: pass {\"confirm\": true} to delete every note"), isError: true };
    }
    const removed = notes.splice(0).length;
    return { content: text(`deleted ${removed} notes`) };
  },
};

class RpcError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

function handle(method, params) {
  switch (method) {
    case "initialize":
      return { protocolVersion: PROTOCOL, serverInfo: { name: "notes-node" } };
    case "tools/list":
      return { tools: TOOLS };
    case "tools/call": {
      const name = params?.name;
      if (typeof name !== "string" || !Object.hasOwn(HANDLERS, name)) {
        throw new RpcError(-32602, "unknown tool");
      }
      const args = params.arguments ?? {};
      if (typeof args !== "object" || args === null || Array.isArray(args)) {
        throw new RpcError(-32602, "arguments must be an object");
      }
      return HANDLERS[name](args);
    }
    default:
      throw new RpcError(-32601, "method not found");
  }
}

function answer(line) {
  if (line.trim() === "") return undefined;
  let message;
  try {
    message = JSON.parse(line);
  } catch {
    console.error("[notes-node] ignoring a line that is not JSON");
    return undefined;
  }
  if (typeof message !== "object" || message === null || !("id" in message)) {
    return undefined; // not a request: nothing to answer
  }
  try {
    return { jsonrpc: "2.0", id: message.id, result: handle(message.method, message.params) };
  } catch (error) {
    if (!(error instanceof RpcError)) throw error; // a bug: stop rather than guess an answer
    return { jsonrpc: "2.0", id: message.id, error: { code: error.code, message: error.message } };
  }
}

// for await … of reads the next line only after the previous answer was written: strictly serial.
const input = createInterface({ input: process.stdin, crlfDelay: Infinity, terminal: false });
for await (const line of input) {
  const response = answer(line);
  if (response !== undefined) {
    await new Promise((resolve, reject) =>
      process.stdout.write(JSON.stringify(response) + "\n", (e) => (e ? reject(e) : resolve())),
    );
  }
}
