//! Support for the inspector tests: a `serve` process with its side files, raw HTTP GETs, and a
//! small synchronous WebDriver client (std `TcpStream` + serde_json) driving headless Chromium
//! through `chromedriver`.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common;
use crate::common::serve::ServeProcess;

/// The longest any one process start, request or wait may take (a hang, never a timing).
pub const LIMIT: Duration = Duration::from_secs(30);

/// The tokens of [`tokens_file`] (see `common::serve::write_tokens_file`).
pub const ALL: &str = common::serve::TOKEN_ALL;
pub const VIEWER: &str = common::serve::TOKEN_VIEWER;
pub const CALLER: &str = common::serve::TOKEN_CALLER;

const BIN: &str = env!("CARGO_BIN_EXE_webcodex-plugin");

/// A test's private temporary directory (shared with the other tests).
pub use crate::tempdir::TempDir;

/// A TOML string literal (JSON string syntax is valid TOML for these paths).
pub fn toml_str(s: &str) -> String {
    serde_json::to_string(s).expect("string")
}

/// The Python plugin of these tests.
pub fn python_plugin() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/inspector_plugin.py")
}

/// A `[[plugins.providers]]` block running the Python plugin in `mode`.
pub fn python_provider(id: &str, name: &str, mode: &str, cwd: Option<&Path>) -> String {
    let cwd = cwd.map_or(String::new(), |c| {
        format!("cwd = {}\n", toml_str(c.to_str().expect("UTF-8")))
    });
    format!(
        "[[plugins.providers]]\nid = {}\nname = {}\ncommand = \"python3\"\nargs = [{}, {}]\n{cwd}\n",
        toml_str(id),
        toml_str(name),
        toml_str(python_plugin().to_str().expect("UTF-8")),
        toml_str(mode)
    )
}

/// A `[[plugins.providers]]` block running the fixture plugin in `mode`.
pub fn fixture_provider(id: &str, name: &str, mode: &str) -> String {
    format!(
        "[[plugins.providers]]\nid = {}\nname = {}\ncommand = {}\nargs = [{}]\n\n",
        toml_str(id),
        toml_str(name),
        toml_str(common::fixture_path().to_str().expect("UTF-8")),
        toml_str(mode)
    )
}

/// A `[[plugins.providers]]` block running this binary's built-in example plugin.
pub fn example_provider(id: &str, name: &str) -> String {
    format!(
        "[[plugins.providers]]\nid = {}\nname = {}\ncommand = {}\nargs = [\"example-plugin\"]\n\n",
        toml_str(id),
        toml_str(name),
        toml_str(BIN)
    )
}

/// The tokens file of these tests: all scopes, inspect only, inspect + invoke.
pub fn tokens_file(dir: &TempDir) -> PathBuf {
    common::serve::write_tokens_file(dir)
}

/// A running `webcodex-plugin serve`; killed on drop if the test did not stop it.
pub struct Serve {
    serve: ServeProcess,
    pub addr: SocketAddr,
    /// Every tools/call line that reached a Python plugin.
    pub call_log: PathBuf,
    /// `self PID` lines of every plugin process started.
    pub pids: PathBuf,
}

impl Serve {
    /// Starts `serve` on `127.0.0.1:0` with `providers` (TOML blocks) and the test tokens.
    pub fn start(dir: &TempDir, providers: &str) -> Serve {
        Serve::start_with_args(dir, providers, &[])
    }

    /// [`Serve::start`] with more command-line arguments (e.g. `--allow-origin O`).
    pub fn start_with_args(dir: &TempDir, providers: &str, args: &[&str]) -> Serve {
        let config = dir.write(
            "runner.toml",
            &format!("[plugins]\nrequest_timeout_secs = 20\n\n{providers}"),
        );
        let tokens = tokens_file(dir);
        let call_log = dir.path("calls.log");
        let pids = dir.path("pids");
        let mut cmd = common::cli_command(BIN);
        cmd.args(["serve", "--config"])
            .arg(&config)
            .args(["--listen", "127.0.0.1:0", "--tokens"])
            .arg(&tokens)
            .args(args)
            .env("INSPECTOR_CALL_LOG", &call_log)
            .env("INSPECTOR_PIDS", &pids)
            .env("FIXTURE_PIDS", &pids)
            .env("RUST_LOG", "info");
        let serve = ServeProcess::start(cmd);
        Serve {
            addr: serve.addr,
            serve,
            call_log,
            pids,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    pub fn pid(&self) -> i32 {
        self.serve.pid()
    }

    /// The tools/call lines that reached the Python plugins.
    pub fn calls(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.call_log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("a logged JSON line"))
            .collect()
    }

    /// The PIDs of every plugin process started so far.
    pub fn plugin_pids(&self) -> Vec<i32> {
        common::recorded_plugin_pids(&self.pids)
    }

    /// The PIDs of the Python plugin processes started so far.
    pub fn python_pids(&self) -> Vec<i32> {
        std::fs::read_to_string(&self.pids)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with("self ") && l.ends_with(" python"))
            .filter_map(|l| l.split_whitespace().nth(1)?.parse().ok())
            .collect()
    }

    /// Zombie children of the server (none may linger after a fault).
    pub fn zombie_children(&self) -> Vec<i32> {
        common::zombie_children_of(self.pid())
    }

    /// Waits (bounded by [`common::GENEROUS`]) until the server has no zombie child; returns
    /// the zombies left after that bound (a retired plugin must be reaped at once, see
    /// docs/PROTOCOL.md, retirement).
    pub fn zombies_after_reaping(&self) -> Vec<i32> {
        let deadline = Instant::now() + common::GENEROUS;
        loop {
            let zombies = self.zombie_children();
            if zombies.is_empty() || Instant::now() >= deadline {
                return zombies;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// SIGTERM, a bounded wait for exit 0, and every plugin process gone; returns stderr.
    pub fn stop(self) -> String {
        let stderr = self.serve.stop_within(LIMIT);
        common::assert_all_gone(&common::recorded_plugin_pids(&self.pids), "plugin process");
        stderr
    }
}

pub use crate::common::http::RawResponse;

/// Sends `raw` to `addr` and reads the whole response (`Connection: close` expected).
pub fn exchange(addr: SocketAddr, raw: &str) -> RawResponse {
    let mut stream = TcpStream::connect_timeout(&addr, LIMIT).expect("connect");
    stream.set_read_timeout(Some(LIMIT)).expect("timeout");
    stream.write_all(raw.as_bytes()).expect("write");
    let mut bytes = Vec::new();
    stream.read_to_end(&mut bytes).expect("read the response");
    let _ = stream.shutdown(Shutdown::Both);
    common::http::parse_response(&bytes)
}

/// Reads one HTTP response: the head, then `Content-Length` bytes (or up to EOF without one).
/// chromedriver keeps connections open even after `Connection: close`.
fn read_message(stream: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        if let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&bytes[..end]).to_ascii_lowercase();
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok());
            if let Some(length) = length {
                while bytes.len() < end + 4 + length {
                    let n = stream.read(&mut chunk)?;
                    if n == 0 {
                        break;
                    }
                    bytes.extend_from_slice(&chunk[..n]);
                }
                return Ok(bytes);
            }
        }
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Ok(bytes);
        }
        bytes.extend_from_slice(&chunk[..n]);
    }
}

/// One `GET path` with an optional bearer token.
pub fn get(addr: SocketAddr, path: &str, token: Option<&str>) -> RawResponse {
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    exchange(
        addr,
        &format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}Connection: close\r\n\r\n"),
    )
}

// ---------------------------------------------------------------------------------------------
// WebDriver
// ---------------------------------------------------------------------------------------------

const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";

/// Headless Chromium driven through `chromedriver` (both from Debian's packages).
pub struct Browser {
    driver: Child,
    port: u16,
    session: String,
    _profile: TempDir,
}

/// One element of the page.
#[derive(Debug, Clone)]
pub struct Element(String);

impl Browser {
    /// Starts chromedriver on a free loopback port and opens a headless Chromium session with a
    /// fresh profile. The flags keep Chromium off the network (this machine refuses it).
    pub fn start() -> Browser {
        let port = {
            let probe = TcpListener::bind("127.0.0.1:0").expect("a free port");
            probe.local_addr().expect("addr").port()
        };
        let driver = Command::new(chromedriver())
            .arg(format!("--port={port}"))
            .arg("--allowed-ips=127.0.0.1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn chromedriver (install Debian's chromium-driver)");
        let profile = TempDir::new("inspector", "chromium-profile");
        let mut browser = Browser {
            driver,
            port,
            session: String::new(),
            _profile: profile,
        };
        let deadline = Instant::now() + LIMIT;
        while browser.raw("GET", "/status", None).is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        let args = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--window-size=1280,1600",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain(std::iter::once(format!(
            "--user-data-dir={}",
            browser._profile.display()
        )))
        .collect::<Vec<_>>();
        let created = browser
            .raw(
                "POST",
                "/session",
                Some(json!({"capabilities": {"alwaysMatch": {
                    "browserName": "chrome",
                    "goog:chromeOptions": {"binary": chromium(), "args": args},
                }}})),
            )
            .expect("create a WebDriver session");
        browser.session = created["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session id in {created}"))
            .to_string();
        browser.cmd(
            "POST",
            "timeouts",
            json!({"implicit": 30000, "script": 30000, "pageLoad": 30000}),
        );
        browser
    }

    /// One WebDriver request; the response's `value`, or the error it carried.
    fn raw(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value, String> {
        let addr = SocketAddr::from(([127, 0, 0, 1], self.port));
        let mut stream =
            TcpStream::connect_timeout(&addr, Duration::from_secs(5)).map_err(|e| e.to_string())?;
        stream
            .set_read_timeout(Some(Duration::from_secs(90)))
            .map_err(|e| e.to_string())?;
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.port,
            body.len()
        );
        stream
            .write_all(request.as_bytes())
            .map_err(|e| e.to_string())?;
        let bytes = read_message(&mut stream).map_err(|e| e.to_string())?;
        let response = common::http::parse_response(&bytes);
        let value: Value = serde_json::from_slice(&response.body)
            .map_err(|e| format!("{e}: {}", response.text()))?;
        if response.status != 200 {
            return Err(format!("{method} {path}: {}: {}", response.status, value));
        }
        Ok(value["value"].clone())
    }

    fn cmd(&self, method: &str, path: &str, body: Value) -> Value {
        let path = format!("/session/{}/{path}", self.session);
        let body = (method == "POST").then_some(body);
        self.raw(method, &path, body)
            .unwrap_or_else(|e| panic!("WebDriver: {e}"))
    }

    /// Opens `url`.
    pub fn goto(&self, url: &str) {
        self.cmd("POST", "url", json!({ "url": url }));
    }

    /// The first element matching `css` (waits up to the implicit timeout, 30 s).
    pub fn find(&self, css: &str) -> Element {
        let v = self.cmd(
            "POST",
            "element",
            json!({"using": "css selector", "value": css}),
        );
        Element(v[ELEMENT_KEY].as_str().expect("an element").to_string())
    }

    /// The first element matching `css` inside `parent`.
    pub fn find_in(&self, parent: &Element, css: &str) -> Element {
        let v = self.cmd(
            "POST",
            &format!("element/{}/element", parent.0),
            json!({"using": "css selector", "value": css}),
        );
        Element(v[ELEMENT_KEY].as_str().expect("an element").to_string())
    }

    /// Clicks `element`.
    pub fn click(&self, element: &Element) {
        self.cmd("POST", &format!("element/{}/click", element.0), json!({}));
    }

    /// Clears `element` and types `text` into it.
    pub fn type_into(&self, element: &Element, text: &str) {
        self.cmd("POST", &format!("element/{}/clear", element.0), json!({}));
        self.cmd(
            "POST",
            &format!("element/{}/value", element.0),
            json!({ "text": text }),
        );
    }

    /// Types `text` (WebDriver key codes allowed, e.g. `\u{E007}` for Enter) into the element
    /// that has the focus.
    pub fn type_into_focused(&self, text: &str) {
        let active = self.cmd("GET", "element/active", json!(null));
        let element = Element(active[ELEMENT_KEY].as_str().expect("active").to_string());
        self.cmd(
            "POST",
            &format!("element/{}/value", element.0),
            json!({ "text": text }),
        );
    }

    /// The rendered text of `element`.
    pub fn text(&self, element: &Element) -> String {
        self.cmd("GET", &format!("element/{}/text", element.0), json!(null))
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// Runs `script` (a function body; `arguments` holds `args`) and returns its value.
    pub fn exec(&self, script: &str, args: Vec<Value>) -> Value {
        self.cmd(
            "POST",
            "execute/sync",
            json!({"script": script, "args": args}),
        )
    }

    /// An element as a script argument.
    pub fn arg(element: &Element) -> Value {
        json!({ ELEMENT_KEY: element.0 })
    }

    /// Waits (bounded by twice [`LIMIT`]: a loaded machine) until `script` returns a truthy
    /// value; returns it.
    pub fn wait_for(&self, script: &str, what: &str) -> Value {
        let deadline = Instant::now() + 2 * LIMIT;
        loop {
            let v = self.exec(script, vec![]);
            let truthy = match &v {
                Value::Null | Value::Bool(false) => false,
                Value::String(s) => !s.is_empty(),
                Value::Number(n) => n.as_f64() != Some(0.0),
                _ => true,
            };
            if truthy {
                return v;
            }
            assert!(Instant::now() < deadline, "waited too long for {what}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The number of elements matching `css`, without waiting.
    pub fn count(&self, css: &str) -> usize {
        self.exec(
            "return document.querySelectorAll(arguments[0]).length;",
            vec![json!(css)],
        )
        .as_u64()
        .expect("a count") as usize
    }

    /// The text content of the first element matching `css`, without waiting ("" if none).
    pub fn text_of(&self, css: &str) -> String {
        self.exec(
            "const e = document.querySelector(arguments[0]); return e ? e.textContent : '';",
            vec![json!(css)],
        )
        .as_str()
        .unwrap_or_default()
        .to_string()
    }

    /// Opens the page at `url`, pastes `token` and waits until everything is loaded.
    pub fn connect(&self, url: &str, token: &str) {
        self.goto(url);
        let input = self.find("#token-input");
        self.type_into(&input, token);
        self.click(&self.find("#connect-button"));
        self.wait_for(
            "return document.getElementById('inspector').getAttribute('data-loaded') === 'true';",
            "the inspector to load",
        );
    }

    /// Resizes the browser window.
    pub fn set_window_size(&self, width: u32, height: u32) {
        self.cmd(
            "POST",
            "window/rect",
            json!({"width": width, "height": height}),
        );
    }

    /// A PNG screenshot of the viewport.
    pub fn screenshot(&self) -> Vec<u8> {
        let b64 = self.cmd("GET", "screenshot", json!(null));
        base64_decode(b64.as_str().expect("base64 text"))
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = self.raw("DELETE", &format!("/session/{}", self.session), None);
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

fn chromium() -> String {
    std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into())
}

fn chromedriver() -> String {
    std::env::var("CHROMEDRIVER").unwrap_or_else(|_| "/usr/bin/chromedriver".into())
}

/// Standard base64 (with padding) to bytes.
pub fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => (c - b'A') as u32,
            b'a'..=b'z' => (c - b'a' + 26) as u32,
            b'0'..=b'9' => (c - b'0' + 52) as u32,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {c}"),
        }
    };
    let clean: Vec<u8> = text
        .bytes()
        .filter(|b| !b.is_ascii_whitespace() && *b != b'=')
        .collect();
    let mut out = Vec::with_capacity(clean.len() * 3 / 4);
    for chunk in clean.chunks(4) {
        let mut n = 0u32;
        for (i, c) in chunk.iter().enumerate() {
            n |= value(*c) << (18 - 6 * i);
        }
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..chunk.len() - 1]);
    }
    out
}
