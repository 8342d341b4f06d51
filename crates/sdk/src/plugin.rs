//! The plugin builder and its request loop.

use std::fmt;
use std::io::{self, BufRead, Write};
use std::panic::{self, AssertUnwindSafe};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::response::{
    write_error, write_result, CallResult, INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST,
    METHOD_NOT_FOUND,
};
use super::tool::{ToolError, ToolReply, ToolSpec};
use super::wire::{read_line, Line, MAX_LINE_BYTES, PROTOCOL_VERSION};

type Handler = Box<dyn Fn(&Map<String, Value>) -> Result<ToolReply, ToolError> + Send + Sync>;

struct Tool {
    spec: ToolSpec,
    handler: Handler,
}

/// A `webcodex-plugin-v1` plugin: a name and its tools, served over newline-delimited JSON-RPC.
///
/// Build it with [`Plugin::new`] and [`Plugin::tool`], then call [`Plugin::serve_stdio`] from
/// the plugin's `main`. The loop answers `initialize`, `tools/list` and `tools/call`, one
/// response line per request, and returns when its input ends.
///
/// # Example
///
/// ```
/// use std::io::Cursor;
///
/// use serde_json::{json, Value};
/// use webcodex_plugin_sdk::{Plugin, ToolError, ToolReply, ToolSpec};
///
/// let plugin = Plugin::new("greeter").tool(
///     ToolSpec::new(
///         "greet",
///         json!({
///             "type": "object",
///             "properties": {"name": {"type": "string"}},
///             "required": ["name"],
///             "additionalProperties": false
///         }),
///     )
///     .title("Greet")
///     .description("Says hello."),
///     |args| {
///         let name = args
///             .get("name")
///             .and_then(Value::as_str)
///             .ok_or_else(|| ToolError::new("name must be a string"))?;
///         Ok(ToolReply::text(format!("hello, {name}")))
///     },
/// );
///
/// // In a real plugin: `plugin.serve_stdio()?;`
/// let input = concat!(
///     r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"webcodex-plugin-v1"}}"#,
///     "\n",
///     r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"}}}"#,
///     "\n",
/// );
/// let mut output = Vec::new();
/// plugin.serve(Cursor::new(input), &mut output)?;
///
/// let responses: Vec<Value> = output
///     .split(|&b| b == b'\n')
///     .filter(|line| !line.is_empty())
///     .map(serde_json::from_slice)
///     .collect::<Result<_, _>>()?;
/// assert_eq!(responses[0]["result"]["protocolVersion"], "webcodex-plugin-v1");
/// assert_eq!(responses[1]["result"]["content"][0]["text"], "hello, Ada");
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Plugin {
    name: String,
    tools: Vec<Tool>,
}

impl Plugin {
    /// A plugin with no tools. `name` is reported as `serverInfo.name` in `initialize`.
    pub fn new(name: impl Into<String>) -> Plugin {
        Plugin {
            name: name.into(),
            tools: Vec::new(),
        }
    }

    /// Adds a tool. Tools are listed in the order they were added.
    ///
    /// The handler receives the call's `arguments` object (`{}` when the host sent none). The
    /// host has already matched it against the input schema, but a handler should still fail
    /// with a [`ToolError`] rather than panic on unexpected input. A handler that panics is
    /// answered with a JSON-RPC internal error and the plugin keeps serving; any state it
    /// shares may then be inconsistent, so prefer returning errors.
    ///
    /// # Panics
    ///
    /// If a tool with the same name was already added: duplicate names are a programming error
    /// that the host would otherwise reject at admission.
    pub fn tool<F>(mut self, spec: ToolSpec, handler: F) -> Plugin
    where
        F: Fn(&Map<String, Value>) -> Result<ToolReply, ToolError> + Send + Sync + 'static,
    {
        assert!(
            self.tools.iter().all(|tool| tool.spec.name != spec.name),
            "duplicate tool name {:?} in plugin {:?}",
            spec.name,
            self.name
        );
        self.tools.push(Tool {
            spec,
            handler: Box::new(handler),
        });
        self
    }

    /// The name reported in `initialize`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The tool definitions, in the order they were added.
    pub fn specs(&self) -> impl Iterator<Item = &ToolSpec> {
        self.tools.iter().map(|tool| &tool.spec)
    }

    /// Serves the process's stdin and stdout until stdin ends.
    ///
    /// Nothing but protocol lines is ever written to stdout; write diagnostics to stderr.
    /// Fails with the first read or write error (a closed stdout, for instance).
    pub fn serve_stdio(self) -> io::Result<()> {
        self.serve(io::stdin().lock(), io::stdout().lock())
    }

    /// Serves requests read from `input`, writing responses to `output`, until `input` ends.
    ///
    /// Reads one JSON value per line (a trailing `\r` is tolerated). A line that is not a JSON
    /// object is ignored; a line longer than [`MAX_LINE_BYTES`] is skipped up to its newline;
    /// a message without `id` is a notification and gets no reply. Every response is one
    /// line, written with a single `write_all` and flushed. Returns `Ok(())` at end of input
    /// and the first read or write error otherwise.
    pub fn serve(self, mut input: impl BufRead, mut output: impl Write) -> io::Result<()> {
        let mut line = Vec::new();
        let mut out = Vec::new();
        loop {
            match read_line(&mut input, &mut line)? {
                Line::Eof => return Ok(()),
                Line::TooLarge => continue,
                Line::Complete => {}
            }
            out.clear();
            if !self.answer(&line, &mut out) {
                continue;
            }
            out.push(b'\n');
            output.write_all(&out)?;
            output.flush()?;
        }
    }

    /// Writes the response to one line into `out`; false when the line gets no reply.
    fn answer(&self, line: &[u8], out: &mut Vec<u8>) -> bool {
        // Only objects are requests; this also keeps serde from reading an array as a struct.
        if line.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
            return false;
        }
        let Ok(request) = serde_json::from_slice::<Request>(line) else {
            return false;
        };
        let Some(id) = request.id else {
            return false;
        };
        match request.method.as_ref().and_then(Value::as_str) {
            Some("initialize") => self.initialize(&id, request.params, out),
            Some("tools/list") => {
                self.write_or_internal(out, &id, |out| write_result(out, &id, &ToolList(self)))
            }
            Some("tools/call") => self.call(&id, request.params, out),
            Some(_) => write_error(out, &id, METHOD_NOT_FOUND, "method not found"),
            None => write_error(out, &id, INVALID_REQUEST, "invalid request"),
        }
        true
    }

    fn initialize(&self, id: &Value, params: Option<Value>, out: &mut Vec<u8>) {
        let version = params.as_ref().and_then(|p| p.get("protocolVersion"));
        if version.and_then(Value::as_str) != Some(PROTOCOL_VERSION) {
            write_error(
                out,
                id,
                INVALID_PARAMS,
                "unsupported protocolVersion; expected webcodex-plugin-v1",
            );
            return;
        }
        let result = InitializeResult {
            protocol_version: PROTOCOL_VERSION,
            server_info: ServerInfo { name: &self.name },
        };
        self.write_or_internal(out, id, |out| write_result(out, id, &result));
    }

    fn call(&self, id: &Value, params: Option<Value>, out: &mut Vec<u8>) {
        let Some(Value::Object(mut params)) = params else {
            return write_error(out, id, INVALID_PARAMS, "params must be an object");
        };
        let Some(name) = params.get("name").and_then(Value::as_str) else {
            return write_error(out, id, INVALID_PARAMS, "params.name must be a string");
        };
        let Some(tool) = self.tools.iter().find(|tool| tool.spec.name == name) else {
            return write_error(out, id, INVALID_PARAMS, "unknown tool");
        };
        let arguments = match params.remove("arguments") {
            None => Map::new(),
            Some(Value::Object(arguments)) => arguments,
            Some(_) => {
                return write_error(out, id, INVALID_PARAMS, "arguments must be an object");
            }
        };
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| (tool.handler)(&arguments)));
        let written = match &outcome {
            Ok(Ok(output)) => write_result(
                out,
                id,
                &CallResult {
                    text: &output.text,
                    structured: output.structured.as_ref(),
                    is_error: false,
                },
            ),
            Ok(Err(error)) => write_result(
                out,
                id,
                &CallResult {
                    text: std::slice::from_ref(&error.message),
                    structured: None,
                    is_error: true,
                },
            ),
            Err(_) => {
                return write_error(out, id, INTERNAL_ERROR, "tool handler panicked");
            }
        };
        if written.is_err() {
            out.clear();
            write_error(
                out,
                id,
                INTERNAL_ERROR,
                "tool result could not be serialized",
            );
        } else if out.len() > MAX_LINE_BYTES {
            // The host would reject the line as too large; say why instead.
            out.clear();
            write_error(
                out,
                id,
                INTERNAL_ERROR,
                "tool result exceeds the 1 MiB line limit",
            );
        }
    }

    /// Runs `write`; if it fails, replaces the partial output with an internal error.
    fn write_or_internal(
        &self,
        out: &mut Vec<u8>,
        id: &Value,
        write: impl FnOnce(&mut Vec<u8>) -> serde_json::Result<()>,
    ) {
        if write(out).is_err() {
            out.clear();
            write_error(out, id, INTERNAL_ERROR, "result could not be serialized");
        }
    }
}

impl fmt::Debug for Plugin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Plugin")
            .field("name", &self.name)
            .field("tools", &self.specs().map(|s| &s.name).collect::<Vec<_>>())
            .finish()
    }
}

/// The fields of an incoming message the plugin looks at; others (`jsonrpc`, …) are ignored.
#[derive(Deserialize)]
struct Request {
    /// `Some` whenever the key is present, even as `null`: only a missing id is a notification.
    #[serde(default, deserialize_with = "present")]
    id: Option<Value>,
    #[serde(default)]
    method: Option<Value>,
    #[serde(default)]
    params: Option<Value>,
}

fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct InitializeResult<'a> {
    protocol_version: &'static str,
    server_info: ServerInfo<'a>,
}

#[derive(Serialize)]
struct ServerInfo<'a> {
    name: &'a str,
}

/// `{"tools":[…]}`, serialized straight from the plugin's specs.
struct ToolList<'a>(&'a Plugin);

impl Serialize for ToolList<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry("tools", &Specs(self.0))?;
        map.end()
    }
}

struct Specs<'a>(&'a Plugin);

impl Serialize for Specs<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.specs())
    }
}
