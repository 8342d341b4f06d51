//! Project-bound tools over HTTP (docs/PROTOCOL.md, project-bound tools): a real `serve` whose
//! fixture providers each work in a project root of the test's own, `POST /api/tools/call`
//! with tokens that `token new --scopes` printed, and the command-line tool's `--project`.
//! Every fault is real (a root renamed, replaced, deleted, a symbolic link swapped); the
//! plugins' `FIXTURE_LOG` proves that no refused call reached them.
//!
//! Unix only: Windows refuses to rename or remove a directory a plugin works in, and the
//! swapped root is a symbolic link.
#![cfg(unix)]

use crate::common;
use crate::tempdir;

use common::serve::ServeProcess;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tempdir::TempDir;

use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_webcodex-plugin");
/// The longest any process may take or any answer may come (a hang, never a timing).
const LIMIT: Duration = Duration::from_secs(30);

/// The roots of the test, one provider working in each (`p-NAME` works in `NAME`).
const ROOTS: [&str; 5] = ["renamed", "replaced", "deleted", "swapped", "kept"];

fn s(path: &Path) -> &str {
    path.to_str().expect("temp path is UTF-8")
}

fn run(args: &[&str]) -> common::Run {
    let mut cmd = common::cli_command(BIN);
    cmd.args(args);
    for var in common::PROXY_VARIABLES
        .into_iter()
        .chain(["WEBCODEX_TOKEN", "WEBCODEX_PAT"])
    {
        cmd.env_remove(var);
    }
    common::run_to_end(cmd, LIMIT)
}

/// The `[[tokens]]` entry `token new` prints for `scopes` (none given: its default, inspect and
/// invoke), and its token.
fn new_token(name: &str, scopes: &[&str]) -> (String, String) {
    let mut args = vec!["token", "new", "--name", name];
    if !scopes.is_empty() {
        args.push("--scopes");
        args.extend(scopes);
    }
    let r = run(&args);
    assert_eq!(r.code, Some(0), "{r:?}");
    let token = r
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("token = \""))
        .and_then(|rest| rest.strip_suffix('"'))
        .unwrap_or_else(|| panic!("no token line: {r:?}"))
        .to_string();
    (r.stdout, token)
}

/// A `serve` over one provider per root (the `swapped` one works in `current`, a symbolic
/// link to `swapped`), the tokens `all`, `reader` (no project:write) and `plain` (no project
/// scope).
struct Setup {
    dir: TempDir,
    serve: Option<ServeProcess>,
    log: PathBuf,
    pids: PathBuf,
    all: String,
    reader: String,
    plain: String,
}

impl Setup {
    fn start(tag: &str) -> Setup {
        let dir = TempDir::new("project", tag);
        let fixture = serde_json::to_string(s(&common::fixture_path())).unwrap();
        let mut config = String::from("[plugins]\nrequest_timeout_secs = 20\n");
        for name in ROOTS {
            let root = dir.subdir(name);
            let cwd = match name {
                "swapped" => {
                    let link = dir.path("current");
                    std::os::unix::fs::symlink(&root, &link).unwrap();
                    link
                }
                _ => root,
            };
            config.push_str(&format!(
                "\n[[plugins.providers]]\nid = \"p-{name}\"\nname = \"Project {name}\"\n\
                 command = {fixture}\nargs = [\"normal\"]\ncwd = {}\n",
                serde_json::to_string(s(&cwd)).unwrap()
            ));
        }
        let config = dir.write("runner.toml", &config);
        let (all_entry, all) = new_token(
            "all",
            &[
                "plugin:inspect",
                "plugin:invoke",
                "plugin:manage",
                "project:read",
                "project:write",
            ],
        );
        let (reader_entry, reader) =
            new_token("reader", &["plugin:inspect,plugin:invoke", "project:read"]);
        let (plain_entry, plain) = new_token("plain", &[]);
        assert!(
            all_entry.contains(r#""project:read", "project:write""#),
            "{all_entry}"
        );
        let tokens = dir.write(
            "tokens.toml",
            &format!("{all_entry}\n{reader_entry}\n{plain_entry}"),
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        let (log, pids) = (dir.path("plugins.log"), dir.path("plugins.pids"));
        let mut cmd = common::cli_command(BIN);
        cmd.args(["serve", "--config", s(&config), "--listen", "127.0.0.1:0"])
            .args(["--tokens", s(&tokens)])
            .env("FIXTURE_LOG", &log)
            .env("FIXTURE_PIDS", &pids)
            .env("RUST_LOG", "info");
        let serve = ServeProcess::start(cmd);
        Setup {
            dir,
            serve: Some(serve),
            log,
            pids,
            all,
            reader,
            plain,
        }
    }

    fn addr(&self) -> SocketAddr {
        self.serve.as_ref().unwrap().addr
    }

    fn root(&self, name: &str) -> PathBuf {
        self.dir.path(name)
    }

    /// One `POST /api/tools/call`: status and body.
    fn tool(&self, token: &str, params: Value) -> (u16, Value) {
        let body = json!({"tool": "plugin_tool", "params": params}).to_string();
        let mut stream = TcpStream::connect(self.addr()).expect("connect");
        stream.set_read_timeout(Some(LIMIT)).unwrap();
        let raw = format!(
            "POST /api/tools/call HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n\
             {body}",
            body.len()
        );
        stream.write_all(raw.as_bytes()).expect("write");
        let mut response = Vec::new();
        stream.read_to_end(&mut response).expect("read");
        let _ = stream.shutdown(Shutdown::Both);
        let response = common::http::parse_response(&response);
        (response.status, response.json())
    }

    fn describe(&self, token: &str, plugin: &str, project: &Path) -> (u16, Value) {
        self.tool(
            token,
            json!({"action": "describe", "runner": "local", "plugin": plugin, "tool": "echo",
                   "project": s(project)}),
        )
    }

    /// A binding of `p-NAME`'s echo bound to `project`.
    fn bind(&self, name: &str, project: &Path) -> String {
        let (status, body) = self.describe(&self.all, &format!("p-{name}"), project);
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["output"]["project"], json!(s(project)), "{body}");
        body["output"]["binding"].as_str().unwrap().to_string()
    }

    fn call(&self, token: &str, binding: &str) -> (u16, Value) {
        self.tool(
            token,
            json!({"action": "call", "binding": binding, "arguments": {"text": "hi"}}),
        )
    }

    /// The tools/call requests the plugins read.
    fn calls(&self) -> usize {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["method"] == "tools/call")
            .count()
    }

    /// SIGTERM: exit 0, every plugin gone, no zombie left behind.
    fn stop(mut self) -> String {
        let serve = self.serve.take().unwrap();
        let pid = serve.pid();
        let stderr = serve.stop_within(LIMIT);
        let recorded = common::recorded_pids(&self.pids);
        assert_eq!(recorded.len(), ROOTS.len(), "one plugin per root");
        common::assert_all_gone(&recorded, "plugin");
        assert!(common::zombie_children_of(pid).is_empty());
        common::assert_no_zombie_children_of_self();
        stderr
    }
}

/// A failure of `code`, not started, with 400 (or `status`) and no path of the test in it.
fn assert_refused(answer: &(u16, Value), status: u16, code: &str, dir: &Path) {
    let (got, body) = answer;
    assert_eq!(*got, status, "{body}");
    assert_eq!(body["success"], false, "{body}");
    assert_eq!(body["output"]["error"]["code"], code, "{body}");
    assert_eq!(body["output"]["dispatch"], "not_started", "{body}");
    assert!(!body.to_string().contains(s(dir)), "a path in {body}");
}

#[test]
fn moved_replaced_deleted_and_swapped_roots_are_refused_over_http() {
    let t = Setup::start("http-faults");
    let bindings: Vec<(&str, String)> = ROOTS
        .iter()
        .map(|name| {
            let project = match *name {
                "swapped" => t.dir.path("current"),
                _ => t.root(name),
            };
            (*name, t.bind(name, &project))
        })
        .collect();
    for (name, binding) in &bindings {
        let (status, body) = t.call(&t.all, binding);
        assert_eq!(status, 200, "{name}: {body}");
        assert_eq!(body["output"]["structuredContent"]["text"], "hi");
    }
    assert_eq!(t.calls(), ROOTS.len());

    // The faults, each on its own root.
    std::fs::rename(t.root("renamed"), t.dir.path("renamed-away")).unwrap();
    std::fs::rename(t.root("replaced"), t.dir.path("replaced-old")).unwrap();
    std::fs::create_dir(t.root("replaced")).unwrap();
    std::fs::remove_dir_all(t.root("deleted")).unwrap();
    let elsewhere = t.dir.subdir("elsewhere");
    std::os::unix::fs::symlink(&elsewhere, t.dir.path("current.next")).unwrap();
    std::fs::rename(t.dir.path("current.next"), t.dir.path("current")).unwrap();

    for (name, binding) in &bindings {
        let answer = t.call(&t.all, binding);
        match *name {
            "kept" => assert_eq!(answer.0, 200, "{}", answer.1),
            "deleted" => assert_refused(&answer, 400, "plugin_project_unavailable", &t.dir),
            _ => {
                assert_refused(&answer, 400, "plugin_project_changed", &t.dir);
                assert_eq!(answer.1["output"]["recovery"], "list_and_describe");
                assert_eq!(
                    answer.1["output"]["error"]["message"],
                    "the project root changed; the call was not dispatched (list and describe \
                     again)"
                );
            }
        }
    }
    assert_eq!(
        t.calls(),
        ROOTS.len() + 1,
        "only the kept root's call was read"
    );

    // A describe for a root that is not the provider's cwd, or is not there.
    let answer = t.describe(&t.all, "p-kept", &t.root("replaced"));
    assert_refused(&answer, 400, "plugin_project_mismatch", &t.dir);
    let answer = t.describe(&t.all, "p-renamed", &t.root("renamed"));
    assert_refused(&answer, 400, "plugin_project_unavailable", &t.dir);
    let answer = t.describe(&t.all, "p-replaced", &t.root("replaced"));
    assert_refused(&answer, 400, "plugin_project_mismatch", &t.dir);
    let answer = t.tool(
        &t.all,
        json!({"action": "describe", "runner": "local", "plugin": "p-kept", "tool": "echo",
               "project": "kept"}),
    );
    assert_eq!(answer.0, 400);
    assert_eq!(answer.1["output"]["error"]["code"], "invalid_arguments");
    assert_eq!(t.calls(), ROOTS.len() + 1);
    t.stop();
}

#[test]
fn project_scopes_from_token_new_hold_over_http() {
    let t = Setup::start("http-scopes");
    let kept = t.root("kept");
    let answer = t.describe(&t.plain, "p-kept", &kept);
    assert_refused(&answer, 403, "insufficient_scope", &t.dir);
    let message = answer.1["output"]["error"]["message"].as_str().unwrap();
    assert!(message.contains("project:read"), "{message}");
    // Without a project, today's scopes as today.
    let (status, body) = t.tool(
        &t.plain,
        json!({"action": "describe", "runner": "local", "plugin": "p-kept", "tool": "echo"}),
    );
    assert_eq!(status, 200, "{body}");
    assert!(body["output"].get("project").is_none(), "{body}");
    let unbound = body["output"]["binding"].as_str().unwrap().to_string();
    assert_eq!(t.call(&t.plain, &unbound).0, 200);

    let (status, body) = t.describe(&t.reader, "p-kept", &kept);
    assert_eq!(status, 200, "{body}");
    let bound = body["output"]["binding"].as_str().unwrap().to_string();
    for token in [&t.reader, &t.plain] {
        let answer = t.call(token, &bound);
        assert_refused(&answer, 403, "insufficient_scope", &t.dir);
        let message = answer.1["output"]["error"]["message"].as_str().unwrap();
        assert!(message.contains("project:write"), "{message}");
    }
    assert_eq!(t.calls(), 1, "a refused call reached the plugin");
    assert_eq!(t.call(&t.all, &bound).0, 200);
    assert_eq!(t.calls(), 2);
    t.stop();
}

#[test]
fn the_command_line_binds_with_project_in_process_and_over_http() {
    let t = Setup::start("http-cli");
    let kept = t.root("kept");
    let url = format!("http://{}", t.addr());
    let token_file = t.dir.write("all.token", &format!("{}\n", t.all));
    let remote = ["--server-url", &url, "--token-file", s(&token_file)];
    let mut describe = vec!["describe", "--plugin", "p-kept", "--tool", "echo"];
    describe.extend(["--project", s(&kept)]);
    let r = run(&[&describe[..], &remote[..], &["--json"]].concat());
    assert_eq!(r.code, Some(0), "{r:?}");
    assert_eq!(r.json()["project"], json!(s(&kept)), "{r:?}");
    let binding = r.json()["binding"].as_str().unwrap().to_string();
    let r = run(&[&describe[..], &remote[..]].concat());
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(
        r.stdout.contains(&format!("project: {}", s(&kept))),
        "{r:?}"
    );

    // `call --binding` of the bound binding, then the same after the root was replaced.
    let mut call = vec!["call", "--binding", &binding];
    call.extend(["--arguments", r#"{"text":"hi"}"#]);
    let r = run(&[&call[..], &remote[..], &["--json"]].concat());
    assert_eq!(r.code, Some(0), "{r:?}");
    std::fs::rename(&kept, t.dir.path("kept-old")).unwrap();
    std::fs::create_dir(&kept).unwrap();
    let r = run(&[&call[..], &remote[..]].concat());
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(
        r.stdout.contains("plugin_project_changed") && r.stdout.contains("not_started"),
        "{r:?}"
    );
    assert_eq!(t.calls(), 1);

    // In process: `call --config --project` describes bound and calls in one host.
    let config = t.dir.path("runner.toml");
    let (swapped, renamed) = (t.root("swapped"), t.root("renamed"));
    let mut args = vec!["call", "--config", s(&config), "--plugin", "p-swapped"];
    args.extend(["--tool", "echo", "--project", s(&swapped)]);
    args.extend(["--arguments", r#"{"text":"local"}"#, "--json"]);
    let r = run(&args);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert_eq!(r.json()["structuredContent"]["text"], "local", "{r:?}");
    let mut args = vec!["call", "--config", s(&config), "--plugin", "p-deleted"];
    args.extend(["--tool", "echo", "--project", s(&renamed)]);
    let r = run(&args);
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(r.stdout.contains("plugin_project_mismatch"), "{r:?}");
    t.stop();
}
