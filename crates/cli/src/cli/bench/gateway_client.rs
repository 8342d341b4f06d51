//! The bench's stdio gateway client: a `webcodex-plugin gateway --config F` child of this
//! binary, spoken to in its JSON lines (`{"id","tool":"plugin_tool","params"}` →
//! `{"id","success","output"}`), one request at a time. Its stdin is closed when the client is
//! dropped, which ends the child (and its providers); the child is then reaped, or killed and
//! reaped if it has not exited within a bound.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::Value;
use wait_timeout::ChildExt;
use webcodex_plugin_host::ToolOutput;

/// How long a closed gateway may take to exit before it is killed.
const EXIT_BOUND: Duration = Duration::from_secs(10);
/// The longest answer line read.
const MAX_LINE: u64 = 16 * 1024 * 1024;

/// A gateway child and its pipes.
pub(super) struct GatewayClient {
    pipes: Mutex<Option<(ChildStdin, BufReader<ChildStdout>)>>,
    child: Mutex<Child>,
    next_id: Mutex<u64>,
}

impl GatewayClient {
    /// Starts `THIS_BINARY gateway --config CONFIG` (its stderr, the gateway's log, passes
    /// through).
    pub fn start(config: &Path) -> Result<GatewayClient, String> {
        let exe = std::env::current_exe()
            .map_err(|e| format!("cannot locate this binary to start its gateway: {e}"))?;
        let mut child = Command::new(exe)
            .arg("gateway")
            .arg("--config")
            .arg(config)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start the gateway: {e}"))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err("the gateway's pipes could not be opened".into());
        };
        Ok(GatewayClient {
            pipes: Mutex::new(Some((stdin, BufReader::with_capacity(64 * 1024, stdout)))),
            child: Mutex::new(child),
            next_id: Mutex::new(1),
        })
    }

    /// One `plugin_tool` request: its output, or why there was none.
    pub fn plugin_tool(&self, params: &Value) -> Result<ToolOutput, String> {
        let id = {
            let mut next = self.next_id.lock();
            *next += 1;
            *next - 1
        };
        let mut line = format!(r#"{{"id":{id},"tool":"plugin_tool","params":{params}}}"#);
        line.push('\n');
        let mut pipes = self.pipes.lock();
        let (stdin, stdout) = pipes.as_mut().ok_or("the gateway has stopped")?;
        stdin
            .write_all(line.as_bytes())
            .map_err(|e| format!("the gateway took no request: {e}"))?;
        let mut answer = String::new();
        let read = stdout
            .by_ref()
            .take(MAX_LINE)
            .read_line(&mut answer)
            .map_err(|e| format!("the gateway's answer was lost: {e}"))?;
        if read == 0 {
            *pipes = None;
            return Err("the gateway exited without an answer".into());
        }
        let mut value: Value = serde_json::from_str(&answer)
            .map_err(|_| "the gateway answered a line that is not JSON".to_string())?;
        let output = value["output"].take();
        match (value["id"].as_u64(), value["success"].as_bool()) {
            (Some(got), Some(success)) if got == id && output.is_object() => {
                Ok(ToolOutput::received(success, output))
            }
            _ => Err("the gateway answered something that is not this request's answer".into()),
        }
    }
}

impl Drop for GatewayClient {
    /// Closes the gateway's stdin (it exits at EOF), then reaps it; kills it if it has not
    /// exited within [`EXIT_BOUND`].
    fn drop(&mut self) {
        drop(self.pipes.lock().take());
        let child = self.child.get_mut();
        if !matches!(child.wait_timeout(EXIT_BOUND), Ok(Some(_))) {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
