//! Helpers of the `bench` tests (tests/cli_bench.rs): a bench process and its JSON line, the
//! calls a fixture logged, a plugin that logs which target it is, `serve` processes in front of
//! the fixture, and readers of the SVG plots.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use super::common::serve::ServeProcess;
use super::common::{self, Run};
use super::tempdir::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_webcodex-plugin");
/// The longest one bench process may run before the test gives up (a hang, never a timing).
const PROCESS_LIMIT: Duration = Duration::from_secs(60);

/// The words of `template` (split at whitespace), each `{}` replaced by the next of `values`
/// (as is: a path with spaces stays one argument).
pub fn argv(template: &str, values: &[&str]) -> Vec<String> {
    let mut values = values.iter();
    let out: Vec<String> = template
        .split_whitespace()
        .map(|word| match word {
            "{}" => values.next().expect("a value for each {}").to_string(),
            _ => word.to_string(),
        })
        .collect();
    assert!(
        values.next().is_none(),
        "more values than {{}} in {template}"
    );
    out
}

/// Runs `webcodex-plugin bench ARGS` (no proxy variables) with `env` added.
pub fn bench_in(args: &[String], env: &[(&str, &Path)]) -> Run {
    let mut cmd = common::cli_command(BIN);
    for key in common::PROXY_VARIABLES {
        cmd.env_remove(key);
    }
    cmd.arg("bench").args(args);
    for (key, value) in env {
        cmd.env(key, value);
    }
    common::run_to_end(cmd, PROCESS_LIMIT)
}

/// The one JSON line of a successful run.
pub fn json_of(run: &Run) -> Value {
    assert_eq!(run.code, Some(0), "bench failed: {run:?}");
    let line = run.stdout.trim_end();
    assert!(!line.contains('\n'), "more than one line: {run:?}");
    serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
}

/// The fixture plugin's path.
pub fn fixture() -> String {
    common::fixture_path()
        .to_str()
        .expect("fixture path is UTF-8")
        .to_string()
}

/// The `tools/call` requests a fixture logged.
pub fn logged_calls(log: &Path) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("\"tools/call\""))
        .count()
}

/// A plugin (Python, standard library) with one tool `echo` that appends its name (argv 1) to a
/// shared log (argv 2) on each call: the log shows the order in which targets were called.
pub const NAMED_PLUGIN: &str = r#"import json, sys
name, log = sys.argv[1], sys.argv[2]
for line in sys.stdin:
    req = json.loads(line)
    if "id" not in req:
        continue
    method = req.get("method")
    if method == "initialize":
        res = {"protocolVersion": "webcodex-plugin-v1", "serverInfo": {"name": name}}
    elif method == "tools/list":
        res = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
    else:
        with open(log, "a") as f:
            f.write(name + "\n")
        res = {"content": [{"type": "text", "text": name}]}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": req["id"], "result": res}) + "\n")
    sys.stdout.flush()
"#;

/// A runner.toml hosting the fixture as provider `fx`.
pub fn fixture_runner(dir: &TempDir) -> PathBuf {
    dir.write(
        "runner.toml",
        &format!(
            "[plugins]\n\n[[plugins.providers]]\nid = \"fx\"\nname = \"Fixture\"\ncommand = {:?}\n",
            fixture()
        ),
    )
}

/// `serve ARGS --listen 127.0.0.1:0` with FIXTURE_LOG set to `log`.
pub fn serve(args: &[&str], log: &Path) -> ServeProcess {
    let mut command = common::cli_command(BIN);
    for key in common::PROXY_VARIABLES {
        command.env_remove(key);
    }
    command
        .arg("serve")
        .args(args)
        .args(["--listen", "127.0.0.1:0"]);
    command.env("FIXTURE_LOG", log);
    ServeProcess::start(command)
}

/// The `<polyline>`s of an SVG document (which must parse as XML) drawn through at least three
/// points: the plotted series (axes, ticks and legend marks are two-point lines).
pub fn svg_series(path: &Path) -> usize {
    let text = std::fs::read_to_string(path).expect("the SVG was written");
    let doc = roxmltree::Document::parse(&text).unwrap_or_else(|e| panic!("not XML ({e})"));
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    doc.descendants()
        .filter(|n| n.tag_name().name() == "polyline")
        .filter(|n| {
            n.attribute("points")
                .unwrap_or("")
                .split_whitespace()
                .count()
                >= 3
        })
        .count()
}

/// The texts of an SVG document.
pub fn svg_texts(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).expect("the SVG was written");
    let doc = roxmltree::Document::parse(&text).expect("XML");
    doc.descendants()
        .filter(|n| n.tag_name().name() == "text")
        .filter_map(|n| n.text().map(|t| t.trim().to_string()))
        .collect()
}
