//! The bench's MCP client: `tools/call` of `plugin_tool` on a `serve` endpoint's `/mcp`
//! (Streamable HTTP, stateless, protocol 2025-06-18), through the HTTP client every
//! `--server-url` command uses (`HttpClient::mcp`: its connections, proxy and TLS), one per
//! lane so that each lane keeps its own connection. What it adds to a call is the JSON-RPC
//! message's formatting and the answer's parsing, as in any lean client.

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;
use webcodex_plugin_http::{ClientOptions, HttpClient};

use super::record::Outcome;

/// A client of one `/mcp` endpoint.
pub(super) struct McpClient {
    client: HttpClient,
    next_id: AtomicU64,
}

impl McpClient {
    /// A client of `URL/mcp` (`http[s]://HOST[:PORT][/PREFIX]`) presenting `token`.
    pub fn new(url: &str, token: &str) -> Result<McpClient, String> {
        let client = HttpClient::mcp(url, token, ClientOptions::default())
            .map_err(|e| format!("--server-url: {e}"))?;
        Ok(McpClient {
            client,
            next_id: AtomicU64::new(1),
        })
    }

    /// A `describe` through `tools/call`; the binding of its output.
    pub fn describe(&self, params: &Value) -> Result<String, String> {
        let (outcome, reason, body) = self.call_tool(params)?;
        let value: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        match (
            outcome,
            value["result"]["structuredContent"]["binding"].as_str(),
        ) {
            (Outcome::Ok, Some(binding)) => Ok(binding.to_string()),
            _ => Err(format!(
                "describe over MCP: {}",
                reason.unwrap_or_else(|| "no binding in the answer".into())
            )),
        }
    }

    /// One `tools/call` of `plugin_tool` with `params`: how it ended (a result with `isError`
    /// whose structured content is a gateway failure object is a failure; any other `isError`
    /// result is the tool's), the failure's reason, and the answer's body.
    pub fn call_tool(&self, params: &Value) -> Result<(Outcome, Option<String>, Vec<u8>), String> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"plugin_tool","arguments":{params}}}}}"#
        );
        let (status, answer) = self
            .client
            .post_json(body.as_bytes())
            .map_err(|e| format!("transport: {e}"))?;
        let value: Value = serde_json::from_slice(&answer)
            .map_err(|_| format!("the server answered {status} without a JSON body"))?;
        if let Some(error) = value.get("error") {
            let message = error["message"].as_str().unwrap_or("");
            return Ok((
                Outcome::Failed,
                Some(format!("JSON-RPC error {}: {message}", error["code"])),
                answer,
            ));
        }
        let result = &value["result"];
        let is_error = result["isError"]
            .as_bool()
            .ok_or_else(|| format!("the server answered {status} without a tools/call result"))?;
        if !is_error {
            return Ok((Outcome::Ok, None, answer));
        }
        let failure = &result["structuredContent"];
        if failure.get("error").is_some() && failure.get("dispatch").is_some() {
            let reason = format!(
                "{}: {} ({})",
                failure["error"]["code"].as_str().unwrap_or("unknown"),
                failure["error"]["message"].as_str().unwrap_or(""),
                failure["dispatch"].as_str().unwrap_or("")
            );
            return Ok((Outcome::Failed, Some(reason), answer));
        }
        Ok((Outcome::ToolError, None, answer))
    }
}
