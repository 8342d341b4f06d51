//! The tokens file of `serve --tokens F` against real `serve` processes: a file every user may
//! read is warned about at start; the documentation's example token is refused; no error about
//! a tokens or runners file quotes a value from it; token names reach the log escaped; and
//! `webcodex-plugin token new` prints an entry that `serve` accepts and a client can use.

use crate::common;
use crate::tempdir;

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::serve::ServeProcess;
use tempdir::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_webcodex-plugin");
const LIMIT: Duration = Duration::from_secs(30);

fn s(path: &Path) -> &str {
    path.to_str().expect("temp path is UTF-8")
}

/// A runner.toml with the fixture provider `fx`.
fn config(dir: &TempDir) -> PathBuf {
    dir.write(
        "runner.toml",
        &format!(
            "[plugins]\nrequest_timeout_secs = 20\n\n[[plugins.providers]]\nid = \"fx\"\n\
             name = \"Fixture\"\ncommand = {}\nargs = [\"normal\"]\n",
            serde_json::to_string(s(&common::fixture_path())).unwrap()
        ),
    )
}

fn command(args: &[&str]) -> Command {
    let mut cmd = common::cli_command(BIN);
    cmd.args(args);
    for name in common::PROXY_VARIABLES {
        cmd.env_remove(name);
    }
    cmd
}

fn run(args: &[&str]) -> common::Run {
    common::run_to_end(command(args), LIMIT)
}

/// `serve --config CONFIG --tokens TOKENS` on a free port, logging at info level.
fn serve(config: &Path, tokens: &Path) -> ServeProcess {
    let mut cmd = command(&[
        "serve",
        "--config",
        s(config),
        "--listen",
        "127.0.0.1:0",
        "--tokens",
        s(tokens),
    ]);
    cmd.env("RUST_LOG", "info");
    ServeProcess::start(cmd)
}

/// `serve` that must refuse to start: its run.
fn serve_refused(config: &Path, tokens: &Path) -> common::Run {
    run(&[
        "serve",
        "--config",
        s(config),
        "--listen",
        "127.0.0.1:0",
        "--tokens",
        s(tokens),
    ])
}

/// One `list` POST with `token`; the status.
fn list_status(addr: SocketAddr, token: &str) -> u16 {
    let body = r#"{"tool":"plugin_tool","params":{"action":"list"}}"#;
    let raw = format!(
        "POST /api/tools/call HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(LIMIT)).unwrap();
    stream.write_all(raw.as_bytes()).expect("write request");
    let mut response = Vec::new();
    stream.read_to_end(&mut response).expect("read response");
    let _ = stream.shutdown(Shutdown::Both);
    common::http::parse_response(&response).status
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

#[test]
#[cfg(unix)]
fn a_tokens_file_every_user_may_read_is_warned_about_at_start() {
    let dir = TempDir::new("tokens", "mode");
    let config = config(&dir);
    let tokens = common::serve::write_tokens_file(&dir);
    for (mode, warned) in [(0o644, true), (0o604, true), (0o640, false), (0o600, false)] {
        set_mode(&tokens, mode);
        let server = serve(&config, &tokens);
        assert_eq!(list_status(server.addr, common::serve::TOKEN_ALL), 200);
        let stderr = server.stop();
        let warning = "--tokens: every user of this machine may read the tokens file";
        assert_eq!(stderr.contains(warning), warned, "mode {mode:o}: {stderr}");
    }
}

/// The example token of the README's tokens file (the `token = "…"` line of its block).
fn readme_example_token() -> String {
    let readme =
        std::fs::read_to_string(Path::new(common::REPO_ROOT).join("README.md")).expect("README.md");
    let start = readme
        .find("[[tokens]]")
        .expect("the README shows a tokens file");
    readme[start..]
        .lines()
        .find_map(|l| l.trim().strip_prefix("token = \""))
        .and_then(|rest| rest.split('"').next())
        .expect("a token line")
        .to_string()
}

#[test]
fn the_readme_example_token_is_refused_at_start() {
    let dir = TempDir::new("tokens", "example");
    let config = config(&dir);
    let example = readme_example_token();
    let tokens = dir.write(
        "tokens.toml",
        &format!(
            "[[tokens]]\nname = \"copied\"\ntoken = \"{example}\"\nscopes = [\"plugin:inspect\"]\n"
        ),
    );
    let r = serve_refused(&config, &tokens);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert!(r.stderr.contains("tokens[0].token"), "{r:?}");
    assert!(r.stderr.contains("example token"), "{r:?}");
    assert!(
        r.stderr.contains("token new"),
        "says how to make one: {r:?}"
    );
    assert!(
        !r.stderr.contains(&example) && !r.stdout.contains(&example),
        "{r:?}"
    );
}

#[test]
fn no_error_about_a_tokens_or_runners_file_quotes_a_value_from_it() {
    let dir = TempDir::new("tokens", "quote");
    let config = config(&dir);
    let secret = "Looks-Like-A-Token-0123456789abcdef";
    let entry = |extra: &str| {
        format!(
            "[[tokens]]\nname = \"ok\"\ntoken = \"good-token-0123456789abcdef\"\n\
             scopes = [\"plugin:inspect\"]\n{extra}"
        )
    };
    let tokens_files = [
        // The token put where a scope goes, where a key goes, at the top level.
        format!(
            "[[tokens]]\nname = \"a\"\ntoken = \"x-0123456789abcdefgh\"\nscopes = [\"{secret}\"]\n"
        ),
        entry(&format!("{secret} = 1\n")),
        format!("{secret} = \"x\"\n{}", entry("")),
        entry(&format!("\"{secret}\" = \"plugin:inspect\"\n")),
        // A TOML syntax error on the token's line.
        entry(&format!("[[tokens]]\nname = \"b\"\ntoken = {secret}\n")),
        entry(&format!(
            "[[tokens]]\nname = \"b\"\ntoken = \"{secret}\nscopes = []\n"
        )),
        // A short or spaced token, and a duplicate.
        entry(&format!(
            "[[tokens]]\nname = \"b\"\ntoken = \"{secret} x\"\nscopes = [\"plugin:inspect\"]\n"
        )),
        entry(&format!(
            "[[tokens]]\nname = \"{secret}\"\ntoken = \"{secret}\"\nscopes = [\"plugin:inspect\"]\n\
             [[tokens]]\nname = \"{secret}\"\ntoken = \"{secret}\"\nscopes = [\"plugin:inspect\"]\n"
        )),
    ];
    for (i, text) in tokens_files.iter().enumerate() {
        let tokens = dir.write(&format!("tokens-{i}.toml"), text);
        let r = serve_refused(&config, &tokens);
        assert_eq!(r.code, Some(2), "{text}: {r:?}");
        assert!(r.stderr.contains("--tokens"), "{text}: {r:?}");
        assert!(
            !r.stderr.contains(secret),
            "{text}: a value was quoted: {r:?}"
        );
    }
    let runners_files = [
        format!("[[runners]]\nid = \"edge\"\nname = \"E\"\nurl = \"http://127.0.0.1:9\"\ntoken = \"{secret}\"\n"),
        format!("[[runners]]\nid = \"{secret}\"\nname = \"E\"\nurl = \"http://127.0.0.1:9\"\ntoken_env = \"X\"\n"),
        format!("[[runners]]\nid = \"edge\"\nname = \"E\"\nurl = \"http://u:{secret}@127.0.0.1:9\"\ntoken_env = \"WC_TEST_TOKEN\"\n"),
        format!("[[runners]]\nid = \"edge\"\nname = \"E\"\nurl = \"{secret}\"\ntoken_env = \"X\"\n"),
        format!("[[runners]]\nid = \"edge\"\nname = \"E\"\nurl = \"http://127.0.0.1:9\"\ntoken_env = {secret}\n"),
        // The token where a variable name or a path goes.
        format!("[[runners]]\nid = \"edge\"\nname = \"E\"\nurl = \"http://127.0.0.1:9\"\ntoken_env = \"{secret}\"\n"),
        format!("[[runners]]\nid = \"edge\"\nname = \"E\"\nurl = \"http://127.0.0.1:9\"\ntoken_file = \"{secret}\"\n"),
        format!("[[runners]]\nid = \"edge\"\nname = \"E\"\nurl = \"http://127.0.0.1:9\"\ntoken_env = \"WC_TEST_TOKEN\"\nca_file = \"{secret}\"\n"),
        // A control character in a name (it would reach the log).
        "[[runners]]\nid = \"edge\"\nname = \"E\\u001b[2J\"\nurl = \"http://127.0.0.1:9\"\ntoken_env = \"WC_TEST_TOKEN\"\n".to_string(),
    ];
    let tokens = common::serve::write_tokens_file(&dir);
    for (i, text) in runners_files.iter().enumerate() {
        let runners = dir.write(&format!("runners-{i}.toml"), text);
        let mut cmd = command(&[
            "serve",
            "--runners",
            s(&runners),
            "--listen",
            "127.0.0.1:0",
            "--tokens",
            s(&tokens),
        ]);
        cmd.env("WC_TEST_TOKEN", "env-token-0123456789abcdef");
        let r = common::run_to_end(cmd, LIMIT);
        assert_eq!(r.code, Some(2), "{text}: {r:?}");
        assert!(
            !r.stderr.contains(secret),
            "{text}: a value was quoted: {r:?}"
        );
    }
}

#[test]
#[cfg_attr(
    windows,
    ignore = "stops serve with a console control event, which Wine cannot deliver (GenerateConsoleCtrlEvent fails with error 12; docs/PLATFORMS.md)"
)]
fn token_names_reach_the_log_escaped() {
    let dir = TempDir::new("tokens", "names");
    let config = config(&dir);
    let token = "name-escape-token-0123456789";
    let tokens = dir.write(
        "tokens.toml",
        &format!(
            "[[tokens]]\nname = \"evil\\u001b[31m\\nINFO forged line\\r\"\ntoken = \"{token}\"\n\
             scopes = [\"plugin:inspect\"]\n"
        ),
    );
    let server = serve(&config, &tokens);
    assert_eq!(list_status(server.addr, token), 200);
    let stderr = server.stop();
    assert!(
        stderr.contains("token name evil\\u{1b}[31m\\u{a}INFO forged line\\u{d}"),
        "{stderr}"
    );
    assert!(
        !stderr.contains('\u{1b}') && !stderr.contains('\r'),
        "{stderr:?}"
    );
    assert!(
        !stderr.lines().any(|l| l.starts_with("INFO forged")),
        "a name forged a log line: {stderr}"
    );
}

/// The `[[tokens]]` entry `token new` printed, and its token.
fn new_entry(args: &[&str]) -> (String, String) {
    let mut all = vec!["token", "new"];
    all.extend(args);
    let r = run(&all);
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

#[test]
#[cfg_attr(
    windows,
    ignore = "stops serve with a console control event, which Wine cannot deliver (GenerateConsoleCtrlEvent fails with error 12; docs/PLATFORMS.md)"
)]
fn token_new_prints_an_entry_that_serve_accepts() {
    let dir = TempDir::new("tokens", "new");
    let config = config(&dir);
    let (viewer, viewer_token) =
        new_entry(&["--name", "viewer \"one\"", "--scopes", "plugin:inspect"]);
    let (manager, manager_token) = new_entry(&["--scopes", "plugin:inspect,plugin:manage"]);
    let (_, other) = new_entry(&[]);
    for token in [&viewer_token, &manager_token, &other] {
        let body = token.strip_prefix("wcp_").expect("the prefix");
        assert_eq!(body.len(), 43, "32 random bytes in base64url: {token}");
        assert!(
            body.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
            "URL-safe: {token}"
        );
    }
    assert!(
        viewer_token != manager_token && manager_token != other,
        "fresh each time"
    );
    assert!(viewer.contains("[[tokens]]") && viewer.contains("scopes = [\"plugin:inspect\"]"));
    let tokens = dir.write("tokens.toml", &format!("{viewer}\n{manager}"));
    set_private(&tokens);
    let server = serve(&config, &tokens);
    let url = format!("http://{}", server.addr);
    let viewer_file = dir.write("viewer.token", &format!("{viewer_token}\n"));
    let client = |args: &[&str], token_file: &Path| {
        let mut all = args.to_vec();
        all.extend([
            "--json",
            "--server-url",
            &url,
            "--token-file",
            s(token_file),
        ]);
        run(&all)
    };
    let r = client(&["list"], &viewer_file);
    assert_eq!(r.code, Some(0), "{r:?}");
    let r = client(&["reload"], &viewer_file);
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(r.stdout.contains("insufficient_scope"), "{r:?}");
    let manager_file = dir.write("manager.token", &manager_token);
    let r = client(&["reload"], &manager_file);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert_eq!(list_status(server.addr, &other), 401, "not in the file");
    let stderr = server.stop();
    assert!(stderr.contains("token name viewer \"one\""), "{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");
    // A bad scope or name is a usage error.
    assert_eq!(
        run(&["token", "new", "--scopes", "plugin:root"]).code,
        Some(2)
    );
    assert_eq!(run(&["token", "new", "--name", ""]).code, Some(2));
}

#[cfg(unix)]
fn set_private(path: &Path) {
    set_mode(path, 0o600);
}

#[cfg(not(unix))]
fn set_private(_: &Path) {}

#[test]
fn a_toml_error_in_the_tokens_file_gives_the_parsers_reason_and_no_value() {
    let dir = TempDir::new("tokens", "reason");
    let config = config(&dir);
    let secret = "Looks-Like-A-Token-0123456789abcdef";
    let good = "[[tokens]]\nname = \"ok\"\ntoken = \"good-token-0123456789abcdef\"\n\
                scopes = [\"plugin:inspect\"]\n";
    let cases = [
        (
            format!("{good}[[tokens]]\nname = \"b\"\ntoken = \"{secret}\nscopes = []\n"),
            "(line 7, column 45): invalid basic string",
        ),
        (
            format!("{good}[[tokens]\nname = \"{secret}\"\n"),
            "(line 5, column 9): invalid table header; expected `.`, `]]`",
        ),
        // A token where a key goes: the parser quotes the key, the message does not.
        (
            format!("{good}[[tokens]]\n{secret} = 1\n{secret} = 2\n"),
            "duplicate key `…` in table `tokens`",
        ),
    ];
    for (i, (text, reason)) in cases.iter().enumerate() {
        let tokens = dir.write(&format!("tokens-{i}.toml"), text);
        let r = serve_refused(&config, &tokens);
        assert_eq!(r.code, Some(2), "{text}: {r:?}");
        assert!(
            r.stderr.contains("the tokens file is not valid TOML") && r.stderr.contains(reason),
            "{text}: no parser reason {reason:?}: {r:?}"
        );
        assert!(
            !r.stderr.contains(secret),
            "{text}: a value was quoted: {r:?}"
        );
    }
}

#[cfg(unix)]
#[test]
fn token_new_writes_the_bare_token_to_a_private_file_and_never_overwrites_it() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    let dir = TempDir::new("tokens", "file");
    let config = config(&dir);
    let path = dir.path("ci.token");
    let (entry, token) = new_entry(&["--name", "ci", "--token-file", s(&path)]);
    assert!(entry.contains("[[tokens]]"), "{entry}");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        format!("{token}\n")
    );
    assert_eq!(mode(&path), 0o600, "created private");

    // The file is what a client's --token-file reads.
    let tokens = dir.write("tokens.toml", &entry);
    set_private(&tokens);
    let server = serve(&config, &tokens);
    let url = format!("http://{}", server.addr);
    let r = run(&[
        "list",
        "--json",
        "--server-url",
        &url,
        "--token-file",
        s(&path),
    ]);
    assert_eq!(r.code, Some(0), "{r:?}");
    server.stop();

    // An existing file is refused: exit 2, no entry printed, the file unchanged.
    let r = run(&["token", "new", "--token-file", s(&path)]);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert!(r.stderr.contains("--force"), "{r:?}");
    assert!(
        !r.stdout.contains("token ="),
        "a refused file prints no token: {r:?}"
    );
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        format!("{token}\n")
    );

    // --force replaces it, and makes a file every user could read private again.
    set_mode(&path, 0o644);
    let (runner_entry, forced) =
        new_entry(&["--runner", "edge-1", "--token-file", s(&path), "--force"]);
    assert!(runner_entry.contains("[[runner_tokens]]"), "{runner_entry}");
    assert_ne!(forced, token);
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        format!("{forced}\n")
    );
    assert_eq!(mode(&path), 0o600, "replaced and private");

    // --force alone is a usage error; a directory that does not exist is a failure.
    assert_eq!(run(&["token", "new", "--force"]).code, Some(2));
    let missing = dir.path("no/such/dir/t.token");
    let r = run(&["token", "new", "--token-file", s(&missing)]);
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(r.stdout.is_empty(), "{r:?}");
}
