//! Project-bound tools across a front (docs/PROTOCOL.md, project-bound tools): the project of a
//! `describe` and the project target of a `call` travel to the runner, which decides. Two real
//! fronts: one whose runner dials out (`connect`, the link) and one with a `--runners` runner
//! (`serve`, the HTTP hop). The runner's fixture providers each work in a project root of the
//! test's own; each fault is real (a root renamed, replaced, deleted, a symbolic link swapped)
//! and the runner's plugin log proves no refused call reached a plugin. A runner of the wire
//! before project-bound tools is a link client of the test's own: the front refuses it rather
//! than bind nothing.
//!
//! Unix only: Windows refuses to rename or remove a directory a plugin works in, the swapped
//! root is a symbolic link, and `connect` is stopped with SIGTERM.
#![cfg(unix)]

use crate::common;
use crate::tempdir;

use common::serve::{runner_token, ServeProcess};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};
use tempdir::TempDir;

use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_webcodex-plugin");
/// The longest any process may take or any answer may come (a hang, never a timing).
const LIMIT: Duration = Duration::from_secs(30);
/// The front's user token with every scope.
const USER: &str = "project-user-every-scope-0123456789";
/// The front's user token without project:write.
const READER: &str = "project-reader-no-write-0123456789";
/// The front's credential on its `--runners` runner.
const LINK: &str = "project-front-on-runner-0123456789";
/// The roots of the runner, one provider working in each (`p-NAME` works in `NAME`).
const ROOTS: [&str; 5] = ["renamed", "replaced", "deleted", "swapped", "kept"];
const EVERY_SCOPE: &str =
    r#"["plugin:inspect", "plugin:invoke", "plugin:manage", "project:read", "project:write"]"#;

fn s(path: &Path) -> &str {
    path.to_str().expect("temp path is UTF-8")
}

/// The runner's runner.toml: one fixture provider per root (`p-swapped` works in `current`, a
/// symbolic link to `swapped`).
fn runner_config(dir: &TempDir) -> PathBuf {
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
    dir.write("runner.toml", &config)
}

/// The front's tokens: USER, READER, and a runner token for each of `runners`.
fn front_tokens(dir: &TempDir, runners: &[&str]) -> PathBuf {
    let mut text = format!(
        "[[tokens]]\nname = \"user\"\ntoken = \"{USER}\"\nscopes = {EVERY_SCOPE}\n\n\
         [[tokens]]\nname = \"reader\"\ntoken = \"{READER}\"\n\
         scopes = [\"plugin:inspect\", \"plugin:invoke\", \"project:read\"]\n\n"
    );
    for id in runners {
        text.push_str(&format!(
            "[[runner_tokens]]\nname = \"{id}-token\"\ntoken = \"{}\"\nrunner = \"{id}\"\n\n",
            runner_token(id)
        ));
    }
    dir.write("front-tokens.toml", &text)
}

fn serve(args: &[&str], env: &[(&str, &Path)]) -> ServeProcess {
    let mut cmd = common::cli_command(BIN);
    cmd.arg("serve").args(args).env("RUST_LOG", "info");
    for (name, value) in env {
        cmd.env(name, value);
    }
    for var in common::PROXY_VARIABLES {
        cmd.env_remove(var);
    }
    ServeProcess::start(cmd)
}

fn tool(front: SocketAddr, token: &str, params: Value) -> (u16, Value) {
    let response = common::http::post_tool(front, token, &params, LIMIT * 2);
    (response.status, response.json())
}

fn describe(front: SocketAddr, runner: &str, plugin: &str, project: &Path) -> (u16, Value) {
    tool(
        front,
        USER,
        json!({"action": "describe", "runner": runner, "plugin": plugin, "tool": "echo",
               "project": s(project)}),
    )
}

fn call(front: SocketAddr, token: &str, binding: &str) -> (u16, Value) {
    tool(
        front,
        token,
        json!({"action": "call", "binding": binding, "arguments": {"text": "hi"}}),
    )
}

/// The tools/call requests the runner's plugins read.
fn calls(log: &Path) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["method"] == "tools/call")
        .count()
}

/// A failure of `code`, not started, with 400 (or `status`) and nothing of the test's paths.
fn assert_refused(answer: &(u16, Value), status: u16, code: &str, dir: &Path) {
    let (got, body) = answer;
    assert_eq!(*got, status, "{body}");
    assert_eq!(body["output"]["error"]["code"], code, "{body}");
    assert_eq!(body["output"]["dispatch"], "not_started", "{body}");
    assert!(!body.to_string().contains(s(dir)), "a path in {body}");
}

/// The faults of the module text, through `front` to its runner `runner` whose roots are in
/// `dir` and whose plugins log to `log`.
fn faults_through(front: SocketAddr, runner: &str, dir: &TempDir, log: &Path) {
    let bindings: Vec<(&str, String)> = ROOTS
        .iter()
        .map(|name| {
            let project = match *name {
                "swapped" => dir.path("current"),
                _ => dir.path(name),
            };
            let (status, body) = describe(front, runner, &format!("p-{name}"), &project);
            assert_eq!(status, 200, "{body}");
            assert_eq!(body["output"]["runner"], json!(runner), "{body}");
            assert_eq!(body["output"]["project"], json!(s(&project)), "{body}");
            let target = body["output"]["projectTarget"].as_str().unwrap();
            assert!(target.starts_with("wc_proot_"), "{body}");
            (
                *name,
                body["output"]["binding"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    for (name, binding) in &bindings {
        let (status, body) = call(front, USER, binding);
        assert_eq!(status, 200, "{name}: {body}");
        assert_eq!(body["output"]["structuredContent"]["text"], "hi");
    }
    assert_eq!(calls(log), ROOTS.len());
    // The front checks project:write before anything is sent.
    let answer = call(front, READER, &bindings[4].1);
    assert_refused(&answer, 403, "insufficient_scope", dir);
    assert_eq!(calls(log), ROOTS.len());

    std::fs::rename(dir.path("renamed"), dir.path("renamed-away")).unwrap();
    std::fs::rename(dir.path("replaced"), dir.path("replaced-old")).unwrap();
    std::fs::create_dir(dir.path("replaced")).unwrap();
    std::fs::remove_dir_all(dir.path("deleted")).unwrap();
    let elsewhere = dir.subdir("elsewhere");
    std::os::unix::fs::symlink(&elsewhere, dir.path("current.next")).unwrap();
    std::fs::rename(dir.path("current.next"), dir.path("current")).unwrap();
    for (name, binding) in &bindings {
        let answer = call(front, USER, binding);
        match *name {
            "kept" => assert_eq!(answer.0, 200, "{}", answer.1),
            "deleted" => assert_refused(&answer, 400, "plugin_project_unavailable", dir),
            _ => {
                assert_refused(&answer, 400, "plugin_project_changed", dir);
                assert_eq!(answer.1["output"]["recovery"], "list_and_describe");
            }
        }
    }
    assert_eq!(
        calls(log),
        ROOTS.len() + 1,
        "only the kept root's call was read"
    );
    let answer = describe(front, runner, "p-kept", &dir.path("replaced"));
    assert_refused(&answer, 400, "plugin_project_mismatch", dir);
    let answer = describe(front, runner, "p-replaced", &dir.path("replaced"));
    assert_refused(&answer, 400, "plugin_project_mismatch", dir);
    let answer = describe(front, runner, "p-renamed", &dir.path("renamed"));
    assert_refused(&answer, 400, "plugin_project_unavailable", dir);
}

/// Waits (bounded) until the front lists `id`.
fn wait_listed(front: SocketAddr, id: &str) {
    let deadline = Instant::now() + LIMIT;
    loop {
        let (_, body) = tool(front, USER, json!({"action": "list"}));
        if body["output"]["runners"]
            .as_array()
            .is_some_and(|r| r.iter().any(|r| r["runner"] == id))
        {
            return;
        }
        assert!(Instant::now() < deadline, "{id} never linked: {body}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_linked_runner_decides_project_bound_calls_and_its_plugins_read_no_refused_one() {
    let dir = TempDir::new("project", "link");
    let config = runner_config(&dir);
    let tokens = front_tokens(&dir, &["edge-1"]);
    let front = serve(&["--listen", "127.0.0.1:0", "--tokens", s(&tokens)], &[]);
    let (log, pids) = (dir.path("plugins.log"), dir.path("plugins.pids"));
    let mut cmd = common::connect_command(BIN, &runner_token("edge-1"));
    cmd.args(["--front-url", &front.url(), "--config", s(&config)])
        .env("FIXTURE_LOG", &log)
        .env("FIXTURE_PIDS", &pids);
    let mut runner: Child = cmd.spawn().expect("spawn connect");
    let stderr = common::read_all(runner.stderr.take().unwrap());
    wait_listed(front.addr, "edge-1");
    faults_through(front.addr, "edge-1", &dir, &log);

    assert!(common::request_stop(runner.id()), "SIGTERM to connect");
    let status = common::wait_bounded(&mut runner, LIMIT);
    let stderr = stderr.join().unwrap();
    assert_eq!(status.code(), Some(0), "connect: {stderr}");
    let recorded = common::recorded_pids(&pids);
    assert_eq!(recorded.len(), ROOTS.len(), "one plugin per root");
    common::assert_all_gone(&recorded, "plugin");
    let front_pid = front.pid();
    front.stop();
    assert!(common::zombie_children_of(front_pid).is_empty());
    common::assert_no_zombie_children_of_self();
}

#[test]
fn a_runners_file_runner_decides_project_bound_calls_across_the_http_hop() {
    let dir = TempDir::new("project", "hop");
    let config = runner_config(&dir);
    let runner_tokens = dir.write(
        "runner-tokens.toml",
        &format!("[[tokens]]\nname = \"front\"\ntoken = \"{LINK}\"\nscopes = {EVERY_SCOPE}\n"),
    );
    let (log, pids) = (dir.path("plugins.log"), dir.path("plugins.pids"));
    let runner = serve(
        &["--config", s(&config), "--listen", "127.0.0.1:0"]
            .into_iter()
            .chain(["--tokens", s(&runner_tokens)])
            .collect::<Vec<_>>(),
        &[("FIXTURE_LOG", &log), ("FIXTURE_PIDS", &pids)],
    );
    dir.write("edge.tok", &format!("{LINK}\n"));
    let runners = dir.write(
        "runners.toml",
        &format!(
            "[[runners]]\nid = \"edge\"\nname = \"Edge\"\nurl = \"{}\"\n\
             token_file = \"edge.tok\"\n",
            runner.url()
        ),
    );
    let tokens = front_tokens(&dir, &[]);
    let front = serve(
        &["--runners", s(&runners), "--listen", "127.0.0.1:0"]
            .into_iter()
            .chain(["--tokens", s(&tokens)])
            .collect::<Vec<_>>(),
        &[],
    );
    faults_through(front.addr, "edge", &dir, &log);

    let front_pid = front.pid();
    front.stop();
    assert!(common::zombie_children_of(front_pid).is_empty());
    let runner_pid = runner.pid();
    runner.stop();
    let recorded = common::recorded_pids(&pids);
    assert_eq!(recorded.len(), ROOTS.len(), "one plugin per root");
    common::assert_all_gone(&recorded, "plugin");
    assert!(common::zombie_children_of(runner_pid).is_empty());
    common::assert_no_zombie_children_of_self();
}

/// A link of the test's own, authenticated as runner `id`, its hello sent and the welcome read:
/// a runner of the wire before project-bound tools (its hello is the same).
fn old_runner_link(front: SocketAddr, id: &str) -> tungstenite::WebSocket<TcpStream> {
    use tungstenite::client::ClientRequestBuilder;
    let stream = TcpStream::connect(front).expect("connect");
    stream.set_read_timeout(Some(LIMIT)).unwrap();
    let uri: tungstenite::http::Uri = format!("ws://{front}/api/runners/connect").parse().unwrap();
    let request = ClientRequestBuilder::new(uri)
        .with_header("Authorization", format!("Bearer {}", runner_token(id)))
        .with_sub_protocol("webcodex-runner-link-v1");
    let (mut ws, _) = tungstenite::client::client(request, stream).expect("upgrade");
    let hello =
        r#"{"hello":{"protocol":"webcodex-runner-link-v1","instance":"OLDOLDOLDOLDOLDOLDOLD0"}}"#;
    ws.send(tungstenite::Message::Text(hello.into())).unwrap();
    let welcome = ws.read().unwrap();
    assert!(welcome.to_text().unwrap().contains("welcome"), "{welcome}");
    ws
}

/// The next request the front sends on `ws` (pings skipped).
fn next_request(ws: &mut tungstenite::WebSocket<TcpStream>) -> Value {
    loop {
        if let tungstenite::Message::Text(text) = ws.read().unwrap() {
            return serde_json::from_str(&text).unwrap();
        }
    }
}

fn answer(ws: &mut tungstenite::WebSocket<TcpStream>, reply: Value) {
    ws.send(tungstenite::Message::Text(reply.to_string().into()))
        .unwrap();
}

/// `params` sent to the front by another thread, while this one plays the runner on `ws`
/// with `reply` (given the request, the reply frame): the front's answer and the request.
fn through_old_runner(
    front: SocketAddr,
    ws: &mut tungstenite::WebSocket<TcpStream>,
    params: Value,
    reply: impl FnOnce(&Value) -> Value,
) -> ((u16, Value), Value) {
    let asker = std::thread::spawn(move || tool(front, USER, params));
    let request = next_request(ws);
    answer(ws, reply(&request));
    (asker.join().unwrap(), request)
}

#[test]
fn a_runner_of_the_wire_before_project_bound_tools_is_refused_never_used_unbound() {
    let dir = TempDir::new("project", "old-runner");
    let tokens = front_tokens(&dir, &["edge-1"]);
    let front = serve(&["--listen", "127.0.0.1:0", "--tokens", s(&tokens)], &[]);
    let mut ws = old_runner_link(front.addr, "edge-1");
    wait_listed(front.addr, "edge-1");
    let project = "/srv/app";
    let bound_describe = json!({"action": "describe", "runner": "edge-1", "plugin": "fx",
                                "tool": "echo", "project": project});
    let described = |request: &Value, extra: Value| {
        let mut output = json!({"runner": "local", "plugin": "fx", "pluginName": "Fixture",
            "binding": "wc_pbind_RRRRRRRRRRRRRRRRRRRRRR",
            "tool": {"name": "echo", "inputSchema": {"type": "object"}}});
        for (key, value) in extra.as_object().unwrap() {
            output[key] = value.clone();
        }
        json!({"id": request["id"], "dispatch_state": "completed",
               "payload": {"kind": "describe", "output": output}})
    };

    // 1. The runner's strict parameters refuse the field, as a runner of the old wire does.
    let (answered, request) =
        through_old_runner(front.addr, &mut ws, bound_describe.clone(), |r| {
            json!({"id": r["id"], "dispatch_state": "not_started",
               "error": {"code": "invalid_arguments", "recovery": "fix_arguments",
                         "message": "field `project` is not allowed for action `describe`"}})
        });
    assert_eq!(request["operation"], "tools_list", "{request}");
    assert_eq!(
        request["params"]["project"], project,
        "the front carries the project"
    );
    let (status, body) = &answered;
    assert_eq!(*status, 400, "{body}");
    assert_eq!(
        body["output"]["error"]["code"],
        "plugin_project_unavailable"
    );
    assert_eq!(body["output"]["dispatch"], "not_started");
    assert!(body["output"].get("recovery").is_none(), "{body}");
    let message = body["output"]["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("edge-1") && message.contains("does not support project-bound tools"),
        "{message}"
    );

    // 2. A runner that ignores the field and describes the tool unbound: refused, no binding.
    let (answered, _) = through_old_runner(front.addr, &mut ws, bound_describe.clone(), |r| {
        described(r, json!({}))
    });
    assert_eq!(answered.0, 400, "{}", answered.1);
    assert_eq!(
        answered.1["output"]["error"]["code"],
        "plugin_project_unavailable"
    );
    assert!(answered.1["output"].get("binding").is_none());

    // 3. An echo of another project is not an answer to this describe.
    let target = "wc_proot_00112233445566778899aabbccddeeff";
    let (answered, _) = through_old_runner(front.addr, &mut ws, bound_describe.clone(), |r| {
        described(r, json!({"project": "/srv/other", "projectTarget": target}))
    });
    assert_eq!(answered.0, 504, "{}", answered.1);
    assert_eq!(answered.1["output"]["dispatch"], "not_started");

    // 4. Bound as asked: the call carries the target, and a runner that refuses the field is
    //    refused the same way; nothing is called unbound.
    let (answered, _) = through_old_runner(front.addr, &mut ws, bound_describe, |r| {
        described(r, json!({"project": project, "projectTarget": target}))
    });
    assert_eq!(answered.0, 200, "{}", answered.1);
    assert_eq!(answered.1["output"]["project"], project);
    assert_eq!(answered.1["output"]["projectTarget"], target);
    let binding = answered.1["output"]["binding"]
        .as_str()
        .unwrap()
        .to_string();
    let call = json!({"action": "call", "binding": binding, "arguments": {"text": "hi"}});
    let (answered, request) = through_old_runner(front.addr, &mut ws, call.clone(), |r| {
        json!({"id": r["id"], "dispatch_state": "not_started",
               "error": {"code": "invalid_arguments",
                         "message": "field `project_target` is not allowed for action `call`"}})
    });
    assert_eq!(request["operation"], "tools_call", "{request}");
    assert_eq!(request["params"]["project_target"], target, "{request}");
    assert_eq!(
        request["params"]["binding"], "wc_pbind_RRRRRRRRRRRRRRRRRRRRRR",
        "{request}"
    );
    assert_eq!(answered.0, 400, "{}", answered.1);
    assert_eq!(
        answered.1["output"]["error"]["code"],
        "plugin_project_unavailable"
    );
    // A runner that decides: its own project failure passes through as it came.
    let (answered, _) = through_old_runner(front.addr, &mut ws, call, |r| {
        json!({"id": r["id"], "dispatch_state": "not_started",
               "error": {"code": "plugin_project_changed", "recovery": "list_and_describe",
                         "message": "the project root changed; the call was not dispatched"}})
    });
    assert_eq!(answered.0, 400, "{}", answered.1);
    assert_eq!(
        answered.1["output"]["error"]["code"],
        "plugin_project_changed"
    );
    assert_eq!(answered.1["output"]["recovery"], "list_and_describe");

    // 5. A describe without a project answered bound: not the answer asked for.
    let plain = json!({"action": "describe", "runner": "edge-1", "plugin": "fx", "tool": "echo"});
    let (answered, request) = through_old_runner(front.addr, &mut ws, plain, |r| {
        described(r, json!({"project": project, "projectTarget": target}))
    });
    assert!(request["params"].get("project").is_none(), "{request}");
    assert_eq!(answered.0, 504, "{}", answered.1);
    drop(ws);
    let front_pid = front.pid();
    front.stop();
    assert!(common::zombie_children_of(front_pid).is_empty());
    common::assert_no_zombie_children_of_self();
}
