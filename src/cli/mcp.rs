//! `manifest` (the static ToolSpec of `plugin_tool`) and `mcp` (an MCP server on stdio).

use std::io::Write;
use std::path::Path;

use webcodex_plugin_host::gateway::{Caller, Scopes};
use webcodex_plugin_host::mcp::{manifest, serve_stdio};

use super::{target, EXIT_FAILURE, EXIT_OK, EXIT_USAGE};

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
pub(super) fn mcp(config: &Path, scopes: &str) -> i32 {
    let scopes = match Scopes::parse(scopes) {
        Ok(scopes) => scopes,
        Err(e) => {
            eprintln!("error: --scopes: {e}");
            return EXIT_USAGE;
        }
    };
    let gateway = match target::start(config) {
        Ok(gateway) => gateway,
        Err(code) => return code,
    };
    let stdin = std::io::stdin();
    let result = serve_stdio(
        gateway.clone(),
        Caller::new(scopes),
        stdin.lock(),
        std::io::stdout(),
    );
    gateway.shutdown();
    match result {
        Ok(()) => EXIT_OK,
        Err(e) => {
            eprintln!("error: the MCP transport failed: {e}");
            EXIT_FAILURE
        }
    }
}
