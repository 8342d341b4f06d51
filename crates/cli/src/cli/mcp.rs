//! `manifest` (the static ToolSpec of `plugin_tool`) and `mcp` (an MCP server on stdio).

use std::io::Write;
use webcodex_plugin_mcp::{manifest, serve_stdio};

use super::{EXIT_FAILURE, EXIT_OK};

/// Prints the ToolSpec: canonical JSON with `--json`, else a readable summary.
pub(super) fn manifest(json: bool) -> i32 {
    let text = if json {
        manifest::canonical_json()
    } else {
        manifest::human()
    };
    let mut stdout = std::io::stdout().lock();
    match writeln!(stdout, "{}", text.trim_end()) {
        Ok(()) => EXIT_OK,
        Err(_) => EXIT_FAILURE,
    }
}

/// Serves MCP on stdin/stdout until EOF, then shuts the providers down.
pub(super) fn mcp(front: &super::target::Front, scopes: &str) -> i32 {
    super::serve::on_stdio(front, scopes, "MCP", serve_stdio)
}
