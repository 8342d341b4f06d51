//! The plugin inspector served by `webcodex-plugin serve` at `GET /`.
//!
//! The first tests need no browser: the page and its assets are served without authentication,
//! carry the security headers and no data, and `GET /api/whoami` answers a token's scopes only.
//!
//! The browser tests drive the page in real headless Chromium through `chromedriver` (Debian's
//! `chromium` and `chromium-driver`); they are ignored unless asked for:
//! `cargo test --test inspector -- --include-ignored`. The plugins are the Python script in
//! `tests/inspector_support/plugin.py` (which logs every tools/call that reaches it, so a test can
//! prove that nothing was sent) and the fixture plugin in a broken mode.

use crate::common;
use crate::inspector_support;

use std::sync::Mutex;

use inspector_support::{
    example_provider, fixture_provider, get, python_provider, Browser, Serve, TempDir, ALL, CALLER,
    VIEWER,
};
use serde_json::json;
use webcodex_plugin_http::inspector::{CONTENT_SECURITY_POLICY, SECURITY_HEADERS};
use webcodex_plugin_http::MAX_CONNECTIONS;

const NEEDS_BROWSER: &str = "needs chromium and chromedriver";

/// One browser at a time: the machine is small and each Chromium is heavy.
static BROWSER: Mutex<()> = Mutex::new(());

fn one_browser() -> std::sync::MutexGuard<'static, ()> {
    BROWSER.lock().unwrap_or_else(|e| e.into_inner())
}

/// The demo runner: the Python demo plugin and a fixture whose tool list is rejected.
fn demo_serve(dir: &TempDir) -> Serve {
    let providers = format!(
        "{}{}",
        python_provider("demo", "Demo notes", "demo", None),
        fixture_provider("broken", "Broken fixture", "bad-tools")
    );
    Serve::start(dir, &providers)
}

fn assert_security_headers(response: &inspector_support::RawResponse) {
    for (name, value) in SECURITY_HEADERS {
        assert_eq!(response.header(name), value, "{name}");
    }
    assert!(CONTENT_SECURITY_POLICY.contains("default-src 'none'"));
    assert!(CONTENT_SECURITY_POLICY.contains("script-src 'self'"));
    assert!(CONTENT_SECURITY_POLICY.contains("frame-ancestors 'none'"));
    assert!(!CONTENT_SECURITY_POLICY.contains("unsafe"));
}

#[test]
#[cfg_attr(
    windows,
    ignore = "stops serve with a console control event, which Wine cannot deliver (GenerateConsoleCtrlEvent fails with error 12; docs/PLATFORMS.md)"
)]
fn page_and_assets_are_served_without_auth_with_security_headers_and_no_data() {
    let dir = TempDir::new("inspector", "assets");
    let serve = demo_serve(&dir);

    let page = get(serve.addr, "/", None);
    assert_eq!(page.status, 200, "{}", page.text());
    assert_eq!(page.header("Content-Type"), "text/html; charset=utf-8");
    assert_security_headers(&page);
    assert_eq!(page.header("X-Frame-Options"), "DENY");
    assert_eq!(page.header("X-Content-Type-Options"), "nosniff");
    assert_eq!(page.header("Referrer-Policy"), "no-referrer");
    let html = page.text();
    assert!(html.contains("<script src=\"/inspector.js\" defer></script>"));
    assert!(html.contains("<link rel=\"stylesheet\" href=\"/inspector.css\">"));
    assert!(html.contains("<label for=\"token-input\">"));
    // No data: neither provider, nor any token, nor anything from the configuration.
    for secret in [
        "demo",
        "Demo notes",
        "broken",
        ALL,
        VIEWER,
        "python3",
        "plugin.py",
    ] {
        assert!(!html.contains(secret), "the page leaks {secret:?}");
    }
    // A query string is ignored, so a token pasted into a URL reaches nothing.
    let with_query = get(serve.addr, &format!("/?token={ALL}"), None);
    assert_eq!(with_query.body, page.body);

    let script = get(serve.addr, "/inspector.js", None);
    assert_eq!(script.status, 200);
    assert_eq!(
        script.header("Content-Type"),
        "text/javascript; charset=utf-8"
    );
    assert_security_headers(&script);
    assert!(script.text().contains("/api/tools/call"));
    assert!(!script.text().contains("innerHTML"));

    let style = get(serve.addr, "/inspector.css", None);
    assert_eq!(style.status, 200);
    assert_eq!(style.header("Content-Type"), "text/css; charset=utf-8");
    assert_security_headers(&style);

    // Other methods are refused; the API route is unchanged.
    let post = inspector_support::exchange(
        serve.addr,
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(post.status, 405);
    assert_eq!(post.header("Allow"), "GET");
    let api = get(serve.addr, "/api/tools/call", Some(ALL));
    assert_eq!(api.status, 405);
    let other = get(serve.addr, "/favicon.ico", None);
    assert_eq!(other.status, 404);
    // Serving the page started no call.
    assert!(serve.calls().is_empty());
    serve.stop();
}

#[test]
#[cfg_attr(
    windows,
    ignore = "stops serve with a console control event, which Wine cannot deliver (GenerateConsoleCtrlEvent fails with error 12; docs/PLATFORMS.md)"
)]
fn whoami_answers_the_scopes_of_a_valid_token_only() {
    let dir = TempDir::new("inspector", "whoami");
    let serve = demo_serve(&dir);

    let none = get(serve.addr, "/api/whoami", None);
    assert_eq!(none.status, 401);
    assert_eq!(none.header("WWW-Authenticate"), "Bearer");
    assert_eq!(
        none.json()["output"]["error"]["code"],
        json!("unauthorized")
    );
    let wrong = get(serve.addr, "/api/whoami", Some("not-a-valid-token-at-all"));
    assert_eq!(wrong.status, 401);
    assert!(!wrong.text().contains("not-a-valid-token-at-all"));

    for (token, scopes) in [
        (
            ALL,
            json!([
                "plugin:inspect",
                "plugin:invoke",
                "plugin:manage",
                "project:read",
                "project:write"
            ]),
        ),
        (VIEWER, json!(["plugin:inspect"])),
        (CALLER, json!(["plugin:inspect", "plugin:invoke"])),
    ] {
        let answer = get(serve.addr, "/api/whoami", Some(token));
        assert_eq!(answer.status, 200, "{}", answer.text());
        assert_eq!(answer.header("Content-Type"), "application/json");
        assert_security_headers(&answer);
        // The scopes and nothing else: no token, no token name.
        assert_eq!(answer.json(), json!({ "scopes": scopes }));
    }
    let stderr = serve.stop();
    assert!(stderr.contains("GET /api/whoami -> 200 (token name viewer)"));
    for token in [ALL, VIEWER, CALLER] {
        assert!(!stderr.contains(token), "a token was logged");
    }
}

#[test]
#[cfg_attr(
    windows,
    ignore = "stops serve with a console control event, which Wine cannot deliver (GenerateConsoleCtrlEvent fails with error 12; docs/PLATFORMS.md)"
)]
fn clients_that_never_read_the_page_do_not_hold_the_server() {
    let dir = TempDir::new("inspector", "stalled");
    let serve = demo_serve(&dir);
    // Stalled clients, each pipelining page requests and never reading: each response is
    // written by that client's own connection thread (within the write deadline), never by the
    // acceptor, so the API keeps answering.
    let per_client = 10;
    let clients = 3;
    assert!(clients < MAX_CONNECTIONS);
    let stalled: Vec<std::net::TcpStream> = (0..clients)
        .map(|_| {
            let mut s = std::net::TcpStream::connect(serve.addr).expect("connect");
            let one = "GET /inspector.js HTTP/1.1\r\nHost: x\r\n\r\n";
            std::io::Write::write_all(&mut s, one.repeat(per_client).as_bytes()).expect("write");
            s
        })
        .collect();
    let answer = get(serve.addr, "/api/whoami", Some(VIEWER));
    assert_eq!(answer.json(), json!({"scopes": ["plugin:inspect"]}));
    let list = inspector_support::exchange(
        serve.addr,
        &format!(
            "POST /api/tools/call HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {VIEWER}\r\n\
             Content-Length: 49\r\nConnection: close\r\n\r\n\
             {{\"tool\":\"plugin_tool\",\"params\":{{\"action\":\"list\"}}}}"
        ),
    );
    assert_eq!(list.status, 200, "{}", list.text());
    drop(stalled);
    // Once the clients are gone, the writers are free again.
    let page = get(serve.addr, "/", None);
    assert_eq!(page.status, 200);
    serve.stop();
}

// ---------------------------------------------------------------------------------------------
// In a real browser
// ---------------------------------------------------------------------------------------------

/// The text of the badges of tool `tool`.
fn badges(browser: &Browser, tool: &str) -> String {
    browser.text_of(&format!("li.tool[data-tool=\"{tool}\"] .badges"))
}

#[test]
#[ignore = "needs chromium and chromedriver"]
fn a_token_shows_providers_tools_badges_and_schemas() {
    let _one = one_browser();
    let _ = NEEDS_BROWSER;
    let dir = TempDir::new("inspector", "browse");
    let serve = demo_serve(&dir);
    let browser = Browser::start();
    // A wrong token is refused in words, and nothing is listed.
    browser.goto(&serve.url());
    browser.type_into(
        &browser.find("#token-input"),
        "wrong-token-0123456789abcdef",
    );
    browser.click(&browser.find("#connect-button"));
    browser.wait_for(
        "return document.getElementById('token-error').textContent;",
        "the refusal",
    );
    assert!(browser
        .text_of("#token-error")
        .contains("not accepted (401)"));
    assert_eq!(browser.count("article.provider"), 0);
    browser.connect(&serve.url(), ALL);

    // Every control has a label.
    let unlabelled = browser.exec(
        "return Array.from(document.querySelectorAll('input, select, textarea'))\
           .filter((c) => !c.labels || c.labels.length === 0).map((c) => c.outerHTML);",
        vec![],
    );
    assert_eq!(unlabelled, json!([]));

    // The token is gone from the input and never in the URL.
    let href = browser.exec("return location.href;", vec![]);
    assert_eq!(href, json!(serve.url()));
    assert_eq!(
        browser.exec(
            "return document.getElementById('token-input').value;",
            vec![]
        ),
        json!("")
    );
    assert!(browser.text_of("#scope-list").contains("plugin:manage"));

    // Providers with status, error code and suggestion.
    let demo = "article.provider[data-plugin=\"demo\"]";
    let broken = "article.provider[data-plugin=\"broken\"]";
    assert!(browser
        .text_of(&format!("{demo} .provider-head"))
        .contains("ready"));
    assert!(browser
        .text_of(&format!("{broken} .provider-head"))
        .contains("failed"));
    let error = browser.text_of(&format!("{broken} .provider-error"));
    assert!(error.contains("plugin_tools_list_invalid"), "{error}");
    assert!(
        error.contains("rejected at admission; the diagnostic names the tool and field"),
        "{error}"
    );

    // Tools with count, title, description and hint badges in words.
    browser.wait_for(
        "return document.querySelector('li.tool[data-tool=\"vanish\"] .badges').textContent;",
        "the last tool to be described",
    );
    assert_eq!(browser.text_of(&format!("{demo} .tool-count")), "3 tools");
    assert_eq!(
        browser.text_of("li.tool[data-tool=\"greet\"] .tool-title"),
        "Greet someone"
    );
    assert_eq!(
        browser.text_of("li.tool[data-tool=\"greet\"] .tool-description"),
        "Says hello to a person, a number of times."
    );
    let greet = badges(&browser, "greet");
    for word in ["read-only", "idempotent", "closed world"] {
        assert!(greet.contains(word), "{greet}");
    }
    assert!(!greet.contains("destructive"), "{greet}");
    let wipe = badges(&browser, "wipe");
    assert!(
        wipe.contains("\u{26a0} destructive") && wipe.contains("modifies state"),
        "{wipe}"
    );
    assert_eq!(
        browser.count("li.tool[data-tool=\"wipe\"] .badge.destructive"),
        1
    );
    assert!(badges(&browser, "vanish").contains("may be destructive (no hint)"));

    // describe → the full schemas, on demand, as text.
    assert_eq!(browser.count(".input-schema"), 0);
    let toggle = browser.find("li.tool[data-tool=\"greet\"] .schema-button");
    browser.click(&toggle);
    let input = browser.text(&browser.find("li.tool[data-tool=\"greet\"] pre.input-schema"));
    let input: serde_json::Value = serde_json::from_str(&input).expect("the schema as JSON text");
    assert_eq!(input["properties"]["name"]["maxLength"], json!(12));
    assert_eq!(input["required"], json!(["name", "times"]));
    let output = browser.text_of("li.tool[data-tool=\"greet\"] pre.output-schema");
    assert!(output.contains("\"greeting\""), "{output}");
    assert_eq!(
        browser.exec(
            "return arguments[0].getAttribute('aria-expanded');",
            vec![Browser::arg(&toggle)]
        ),
        json!("true")
    );
    // Keyboard: the toggle is a real button, reachable and operable without a mouse.
    browser.exec("arguments[0].focus();", vec![Browser::arg(&toggle)]);
    browser.type_into_focused("\u{E007}");
    browser.wait_for(
        "return document.querySelector('li.tool[data-tool=\"greet\"] .schema-view').hidden;",
        "Enter to close the schemas",
    );

    // Listing and describing reached no plugin.
    assert!(serve.calls().is_empty());
    serve.stop();
}

#[test]
#[ignore = "needs chromium and chromedriver"]
fn try_it_validates_before_sending_then_calls_and_confirms_destructive_tools() {
    let _one = one_browser();
    let dir = TempDir::new("inspector", "try");
    let serve = demo_serve(&dir);
    let browser = Browser::start();
    browser.connect(&serve.url(), ALL);
    let greet = "li.tool[data-tool=\"greet\"]";
    browser.click(&browser.find(&format!("{greet} .try-button")));
    let form = browser.find(&format!("{greet} form.try-form"));

    // Every field kind of the schema has a labelled control.
    let labels = browser.exec(
        "return Array.from(arguments[0].querySelectorAll('input, select, textarea')).every(\
           (c) => c.labels && c.labels.length > 0);",
        vec![Browser::arg(&form)],
    );
    assert_eq!(labels, json!(true));
    assert_eq!(
        browser.count(&format!("{greet} select[data-type=\"boolean\"]")),
        1
    );
    assert_eq!(browser.count(&format!("{greet} .add-item")), 1);

    // Invalid: a name over maxLength and a times that is not an integer.
    let name = browser.find(&format!("{greet} input[name=\"name\"]"));
    let times = browser.find(&format!("{greet} input[name=\"times\"]"));
    let ratio = browser.find(&format!("{greet} input[name=\"ratio\"]"));
    browser.type_into(&name, "a name far too long");
    browser.type_into(&times, "two");
    browser.type_into(&ratio, "1.5.2");
    browser.click(&browser.find(&format!("{greet} .run-button")));
    let summary = browser.text_of(&format!("{greet} .form-summary"));
    assert!(summary.contains("Nothing was sent"), "{summary}");
    let errors = browser.exec(
        "return Array.from(arguments[0].querySelectorAll('.field-error')).map((e) => e.textContent).filter((t) => t);",
        vec![Browser::arg(&form)],
    );
    let errors = errors.to_string();
    assert!(
        errors.contains("name must be at most 12 characters (has 19)"),
        "{errors}"
    );
    assert!(errors.contains("times must be a whole number"), "{errors}");
    assert!(errors.contains("ratio must be a number"), "{errors}");
    assert_eq!(
        browser.exec(
            "return arguments[0].getAttribute('aria-invalid');",
            vec![Browser::arg(&name)]
        ),
        json!("true")
    );
    // Nothing reached the plugin, and no result was shown.
    assert!(serve.calls().is_empty(), "{:?}", serve.calls());
    assert_eq!(browser.count(&format!("{greet} .call-report")), 0);

    // Invalid again: a required integer left empty, and more array items than maxItems.
    browser.type_into(&name, "Ada");
    browser.type_into(&times, "");
    browser.type_into(&ratio, "");
    for tag in ["a", "b", "c", "vip"] {
        browser.click(&browser.find(&format!("{greet} .add-item")));
        browser.type_into_focused(tag);
    }
    browser.click(&browser.find(&format!("{greet} .run-button")));
    let errors = browser
        .exec(
            "return Array.from(arguments[0].querySelectorAll('.field-error')).map((e) => e.textContent).filter((t) => t);",
            vec![Browser::arg(&form)],
        )
        .to_string();
    assert!(
        errors.contains("times is required: enter an integer"),
        "{errors}"
    );
    assert!(errors.contains("tags allows at most 3 items"), "{errors}");
    assert!(!errors.contains("name "), "{errors}");
    assert!(serve.calls().is_empty(), "{:?}", serve.calls());

    // Valid: the result's content and structuredContent.
    browser.type_into(&times, "2");
    for _ in 0..3 {
        browser.click(&browser.find(&format!("{greet} .remove-item")));
    }
    let style = browser.find(&format!("{greet} select[name=\"style\"]"));
    browser.click(&browser.find_in(&style, "option[value=\"1\"]"));
    browser.click(&browser.find(&format!("{greet} .run-button")));
    let report = browser.find(&format!("{greet} .call-report"));
    assert_eq!(
        browser.text(&browser.find_in(&report, ".content-text")),
        "HELLO, Ada! HELLO, Ada!"
    );
    let structured = browser.text(&browser.find_in(&report, ".structured-content"));
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&structured).unwrap(),
        json!({"greeting": "HELLO, Ada! HELLO, Ada!"})
    );
    let calls = serve.calls();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(
        calls[0]["params"],
        json!({"name": "greet", "arguments": {"name": "Ada", "times": 2, "style": "loud", "tags": ["vip"]}})
    );

    // A destructive tool asks first; nothing is sent until confirmed.
    let wipe = "li.tool[data-tool=\"wipe\"]";
    browser.click(&browser.find(&format!("{wipe} .try-button")));
    browser.type_into(&browser.find(&format!("{wipe} [name=\"folder\"]")), "inbox");
    browser.click(&browser.find(&format!("{wipe} .run-button")));
    let confirm = browser.find(&format!("{wipe} .call-confirm"));
    assert!(browser
        .text(&confirm)
        .contains("It may change or delete data"));
    assert_eq!(serve.calls().len(), 1);
    browser.click(&browser.find(&format!("{wipe} .cancel-run")));
    assert_eq!(browser.count(&format!("{wipe} .call-confirm")), 0);
    assert_eq!(serve.calls().len(), 1);
    browser.click(&browser.find(&format!("{wipe} .run-button")));
    browser.click(&browser.find(&format!("{wipe} .confirm-run")));
    let report = browser.find(&format!("{wipe} .call-report"));
    assert!(browser.text(&report).contains("Wiped folder inbox"));
    assert_eq!(serve.calls().len(), 2);

    // An outcome_unknown says so plainly and offers no retry.
    let vanish = "li.tool[data-tool=\"vanish\"]";
    browser.click(&browser.find(&format!("{vanish} .try-button")));
    browser.click(&browser.find(&format!("{vanish} .run-button")));
    browser.click(&browser.find(&format!("{vanish} .confirm-run")));
    let failure = browser.find(&format!(
        "{vanish} .panel.failure[data-dispatch=\"outcome_unknown\"]"
    ));
    let text = browser.text(&failure);
    assert!(text.contains("plugin_eof"), "{text}");
    assert!(
        text.contains("The outcome is unknown: the effect may have happened"),
        "{text}"
    );
    assert!(text.contains("do_not_retry"), "{text}");
    let run = browser.find(&format!("{vanish} .run-button"));
    assert_eq!(
        browser.exec("return arguments[0].disabled;", vec![Browser::arg(&run)]),
        json!(true)
    );
    assert_eq!(serve.calls().len(), 3);
    // The plugin that vanished is gone and reaped by the server.
    let python = serve.python_pids();
    assert!(!python.is_empty());
    assert!(
        common::wait_gone(python[0]),
        "the vanished plugin still runs"
    );
    // No orphan: the plugin's process group is gone.
    let orphans: Vec<i32> = serve
        .plugin_pids()
        .into_iter()
        .filter(|pid| !common::wait_gone(*pid))
        .collect();
    assert!(orphans.is_empty(), "still running: {orphans:?}");
    serve.stop();
}

/// A field's help counts in the singular for one: `minLength: 1` reads "at least 1 character".
#[test]
#[ignore = "needs chromium and chromedriver"]
fn field_help_says_at_least_1_character() {
    let _one = one_browser();
    let dir = TempDir::new("inspector", "plural");
    let serve = demo_serve(&dir);
    let browser = Browser::start();
    browser.connect(&serve.url(), ALL);
    let greet = "li.tool[data-tool=\"greet\"]";
    browser.click(&browser.find(&format!("{greet} .try-button")));
    let form = browser.find(&format!("{greet} form.try-form"));
    let help = browser
        .exec(
            "return Array.from(arguments[0].querySelectorAll('.help')).map((e) => e.textContent);",
            vec![Browser::arg(&form)],
        )
        .to_string();
    // `name` has minLength 1 and maxLength 12.
    assert!(
        help.contains("string, at least 1 character, at most 12 characters"),
        "{help}"
    );
    assert!(!help.contains(" 1 characters"), "{help}");
    drop(serve);
}

#[test]
#[ignore = "needs chromium and chromedriver"]
fn check_shows_the_suggestion_and_reload_confirms_then_reports_failures() {
    let _one = one_browser();
    let dir = TempDir::new("inspector", "manage");
    let serve = demo_serve(&dir);
    let browser = Browser::start();
    browser.connect(&serve.url(), ALL);

    let broken = "article.provider[data-plugin=\"broken\"]";
    browser.click(&browser.find(&format!("{broken} .check-button")));
    let report = browser.find(&format!("{broken} .check-report[data-ready=\"false\"]"));
    let text = browser.text(&report);
    assert!(text.contains("validation"), "{text}");
    assert!(text.contains("plugin_tools_list_invalid"), "{text}");
    assert!(text.contains("schema_keyword_unsupported"), "{text}");
    assert!(
        text.contains("Suggestion: The plugin\u{2019}s tool list was rejected"),
        "{text}"
    );
    assert!(text.contains("keyword outside Schema Profile v1"), "{text}");

    let demo = "article.provider[data-plugin=\"demo\"]";
    browser.click(&browser.find(&format!("{demo} .check-button")));
    let ready = browser.find(&format!("{demo} .check-report[data-ready=\"true\"]"));
    assert!(browser.text(&ready).contains("3 tools admitted"));

    // Reload asks first; cancel sends nothing.
    let pids_before = serve.plugin_pids().len();
    browser.click(&browser.find(".reload-button"));
    browser.find(".reload-confirm");
    browser.click(&browser.find(".reload-cancel-button"));
    assert_eq!(browser.count(".reload-confirm"), 0);
    assert_eq!(browser.count(".reload-report"), 0);
    browser.click(&browser.find(".reload-button"));
    browser.click(&browser.find(".reload-confirm-button"));
    let report = browser.find(".reload-report");
    let text = browser.text(&report);
    assert!(text.contains("Not reloaded. 1 candidate failed"), "{text}");
    assert!(text.contains("keeps its previous providers"), "{text}");
    let failure = browser.text_of(".reload-failures li[data-plugin=\"broken\"]");
    assert!(failure.contains("plugin_tools_list_invalid"), "{failure}");
    assert!(failure.contains("rejected at admission"), "{failure}");
    // The reload really ran (candidates were started, then dropped) and the providers were
    // listed again.
    assert!(serve.plugin_pids().len() > pids_before);
    browser.wait_for(
        "return document.querySelector('li.tool[data-tool=\"wipe\"] .badges').textContent;",
        "the tools after the reload",
    );
    assert!(serve.zombies_after_reaping().is_empty());

    // Without the broken plugin the reload commits and the page lists the new set.
    dir.write(
        "runner.toml",
        &format!(
            "[plugins]\nrequest_timeout_secs = 20\n\n{}",
            python_provider("demo", "Demo notes", "demo", None)
        ),
    );
    browser.click(&browser.find(".reload-button"));
    browser.click(&browser.find(".reload-confirm-button"));
    browser.find(".reload-report[data-committed=\"true\"]");
    assert!(browser
        .text_of(".reload-report")
        .contains("Reloaded. Every provider was started again: 1 provider."));
    browser.wait_for(
        "return !document.querySelector('article.provider[data-plugin=\"broken\"]') && \
           document.querySelector('li.tool[data-tool=\"wipe\"] .badges').textContent;",
        "the new provider set",
    );
    assert!(serve.zombies_after_reaping().is_empty());
    serve.stop();
}

#[test]
#[ignore = "needs chromium and chromedriver"]
fn an_inspect_only_token_sees_no_call_check_or_reload_controls() {
    let _one = one_browser();
    let dir = TempDir::new("inspector", "viewer");
    let serve = demo_serve(&dir);
    let browser = Browser::start();
    browser.connect(&serve.url(), VIEWER);
    browser.wait_for(
        "return document.querySelector('li.tool[data-tool=\"vanish\"] .schema-button');",
        "the tools to be described",
    );
    assert_eq!(browser.text_of("#scope-list").trim(), "plugin:inspect");
    assert_eq!(browser.count("li.tool"), 3);
    assert_eq!(browser.count(".schema-button"), 3);
    for control in [
        ".try-button",
        ".run-button",
        ".check-button",
        ".reload-button",
        ".reload-control",
    ] {
        assert_eq!(browser.count(control), 0, "{control} is shown");
    }
    // The catalog is an inspect action; a relative path is refused before anything is sent.
    let input = browser.find(".catalog-form input");
    browser.type_into(&input, "relative/path");
    browser.click(&browser.find(".catalog-button"));
    assert!(browser
        .text_of(".catalog-form .field-error")
        .contains("absolute path"));
    assert_eq!(browser.count(".catalog-report"), 0);

    // An invoke token sees try-it but still no check or reload.
    let browser2 = Browser::start();
    browser2.connect(&serve.url(), CALLER);
    browser2.wait_for(
        "return document.querySelectorAll('.try-button').length === 3;",
        "try-it buttons",
    );
    assert_eq!(
        browser2.count(".check-button") + browser2.count(".reload-button"),
        0
    );
    serve.stop();
}

#[test]
#[ignore = "needs chromium and chromedriver"]
fn the_token_stays_for_the_tab_and_many_tools_are_described_on_request() {
    let _one = one_browser();
    let dir = TempDir::new("inspector", "many");
    let serve = Serve::start(&dir, &python_provider("many", "Many tools", "many", None));
    let browser = Browser::start();
    browser.connect(&serve.url(), VIEWER);
    browser.wait_for(
        "return document.querySelectorAll('.load-details').length === 6;",
        "the tools over the describe budget",
    );
    // 64 tools described by the page itself, the other 6 on request.
    assert_eq!(browser.count("li.tool"), 70);
    assert_eq!(browser.count(".schema-button"), 64);
    assert_eq!(browser.text_of("li.tool[data-tool=\"t69\"] .badges"), "");
    browser.click(&browser.find("li.tool[data-tool=\"t69\"] .load-details"));
    browser.wait_for(
        "return document.querySelector('li.tool[data-tool=\"t69\"] .badges').textContent;",
        "the requested description",
    );
    assert!(browser
        .text_of("li.tool[data-tool=\"t69\"] .badges")
        .contains("read-only"));
    assert_eq!(
        browser.text_of("li.tool[data-tool=\"t69\"] .tool-description"),
        "Generated tool number 69."
    );

    // Opening the page again in the same tab reconnects from session storage.
    browser.goto(&serve.url());
    browser.wait_for(
        "return document.getElementById('inspector').getAttribute('data-loaded') === 'true';",
        "the reconnection",
    );
    assert_eq!(browser.count("li.tool"), 70);
    // "Forget token" clears it: the token form is back and nothing is listed.
    browser.click(&browser.find("#forget-button"));
    assert_eq!(
        browser.exec(
            "return [sessionStorage.length, document.getElementById('token-form').hidden, \
               document.querySelectorAll('li.tool').length];",
            vec![]
        ),
        json!([0, false, 0])
    );
    browser.goto(&serve.url());
    // The script has started (it focuses the token input when it has no token) and is idle.
    browser.wait_for(
        "return document.activeElement && document.activeElement.id === 'token-input';",
        "the page to ask for a token",
    );
    assert_eq!(browser.count("li.tool"), 0);
    assert_eq!(
        browser.exec("return document.getElementById('session').hidden;", vec![]),
        json!(true)
    );
    serve.stop();
}

#[test]
#[ignore = "needs chromium and chromedriver"]
fn plugin_supplied_html_and_script_show_as_text_and_never_run() {
    let _one = one_browser();
    let dir = TempDir::new("inspector", "xss");
    let payload_name =
        "<img src=x onerror=\"window.__xss='name'\"><script>window.__xss='n'</script>";
    let providers = python_provider("evil", payload_name, "xss", Some(&dir));
    let serve = Serve::start(&dir, &providers);
    let browser = Browser::start();
    browser.connect(&serve.url(), ALL);
    browser.wait_for(
        "return document.querySelector('li.tool[data-tool=\"fails\"] .tool-description').textContent;",
        "the tools to be described",
    );
    // Everything rendered as text.
    assert_eq!(
        browser.text_of("article.provider[data-plugin=\"evil\"] .provider-name"),
        payload_name
    );
    let title = browser.text_of("li.tool[data-tool=\"payload\"] .tool-title");
    assert!(title.starts_with("Title <img src=x onerror="), "{title}");
    let description = browser.text_of("li.tool[data-tool=\"payload\"] .tool-description");
    assert!(
        description.contains("<script>window.__xss='script'"),
        "{description}"
    );

    // Schemas, the try-it form (labels, enum options, help) and results.
    browser.click(&browser.find("li.tool[data-tool=\"payload\"] .schema-button"));
    let schema = browser.text(&browser.find("li.tool[data-tool=\"payload\"] pre.input-schema"));
    assert!(schema.contains("<img src=x onerror="), "{schema}");
    browser.click(&browser.find("li.tool[data-tool=\"payload\"] .try-button"));
    let form = browser.find("li.tool[data-tool=\"payload\"] form.try-form");
    let form_text = browser.text(&form);
    assert!(form_text.contains("Field <img src=x"), "{form_text}");
    let options = browser.exec(
        "return Array.from(arguments[0].querySelectorAll('option')).map((o) => o.textContent);",
        vec![Browser::arg(&form)],
    );
    assert!(
        options
            .to_string()
            .contains("<script>window.__xss='script'"),
        "{options}"
    );
    browser.type_into(
        &browser.find("li.tool[data-tool=\"payload\"] [name=\"text\"]"),
        "hi",
    );
    browser.click(&browser.find("li.tool[data-tool=\"payload\"] .run-button"));
    let report = browser.find("li.tool[data-tool=\"payload\"] .call-report");
    let content = browser.text(&browser.find_in(&report, ".content-text"));
    assert!(
        content.starts_with("Result <img src=x onerror="),
        "{content}"
    );
    let structured = browser.text(&browser.find_in(&report, ".structured-content"));
    assert!(structured.contains("<script>"), "{structured}");

    // A plugin's error message, and the project catalog.
    browser.click(&browser.find("li.tool[data-tool=\"fails\"] .try-button"));
    browser.click(&browser.find("li.tool[data-tool=\"fails\"] .run-button"));
    let failure = browser.find("li.tool[data-tool=\"fails\"] .panel.failure");
    let text = browser.text(&failure);
    assert!(
        text.contains("plugin_rpc_error") && text.contains("Failed <img src=x"),
        "{text}"
    );
    let input = browser.find(".catalog-form input");
    browser.type_into(&input, dir.to_str().unwrap());
    browser.click(&browser.find(".catalog-button"));
    let catalog = browser.find(".catalog-report");
    let text = browser.text(&catalog);
    assert!(
        text.contains("2 of 2 tools") && text.contains("Description <img"),
        "{text}"
    );
    assert!(browser
        .text_of(".catalog-revision")
        .starts_with("wc_plugcat_"));

    // Nothing ran: no global, the title untouched, no element came from the payloads.
    assert_eq!(
        browser.exec("return typeof window.__xss;", vec![]),
        json!("undefined")
    );
    assert_eq!(
        browser.exec("return document.title;", vec![]),
        json!("Plugin inspector")
    );
    assert_eq!(browser.count("img"), 0);
    assert_eq!(browser.count("script"), 1);
    assert_eq!(serve.calls().len(), 2);
    serve.stop();
}

/// A plugin that exits in the middle of a call is reaped at once (the retirement rule: no zombie
/// waits for a reload or shutdown), not left a zombie of the server. No browser needed.
#[test]
#[cfg_attr(
    windows,
    ignore = "stops serve with a console control event, which Wine cannot deliver (GenerateConsoleCtrlEvent fails with error 12; docs/PLATFORMS.md)"
)]
fn a_plugin_that_exits_mid_call_is_reaped_at_once() {
    let dir = TempDir::new("inspector", "reap");
    let serve = demo_serve(&dir);
    let call = |params: serde_json::Value| {
        let body = json!({"tool": "plugin_tool", "params": params}).to_string();
        let raw = format!(
            "POST /api/tools/call HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {ALL}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        inspector_support::exchange(serve.addr, &raw).json()
    };
    let described =
        call(json!({"action": "describe", "runner": "local", "plugin": "demo", "tool": "vanish"}));
    let binding = described["output"]["binding"].as_str().expect("a binding");
    let called = call(json!({"action": "call", "binding": binding, "arguments": {}}));
    assert_eq!(
        called["output"]["dispatch"],
        json!("outcome_unknown"),
        "{called}"
    );
    let zombies = serve.zombies_after_reaping();
    assert!(zombies.is_empty(), "zombies of the server: {zombies:?}");
    serve.stop();
}

/// Takes the README screenshot of a demo runner; writes it to `INSPECTOR_SCREENSHOT` when set
/// (`scripts/inspector-screenshot.sh`), and always checks that a PNG came back.
#[test]
#[ignore = "needs chromium and chromedriver"]
fn screenshot_of_a_demo_runner() {
    let _one = one_browser();
    let dir = TempDir::new("inspector", "shot");
    let providers = format!(
        "{}{}{}",
        example_provider("example", "Example plugin (built in)"),
        fixture_provider("broken", "Broken fixture", "bad-tools"),
        python_provider("notes", "Notes (demo)", "demo", None),
    );
    let serve = Serve::start(&dir, &providers);
    let browser = Browser::start();
    browser.connect(&serve.url(), ALL);
    browser.wait_for(
        "return document.querySelector('li.tool[data-tool=\"vanish\"] .badges').textContent;",
        "every tool to be described",
    );
    browser.click(&browser.find("article.provider[data-plugin=\"broken\"] .check-button"));
    browser.find(".check-report");
    let echo = "li.tool[data-tool=\"echo\"]";
    browser.click(&browser.find(&format!("{echo} .schema-button")));
    browser.find(&format!("{echo} pre.input-schema"));
    browser.click(&browser.find(&format!("{echo} .try-button")));
    browser.type_into(
        &browser.find(&format!("{echo} [name=\"text\"]")),
        "Hello from the inspector",
    );
    browser.click(&browser.find(&format!("{echo} .run-button")));
    browser.find(&format!("{echo} .call-report"));
    browser.exec(
        "document.activeElement.blur(); window.scrollTo(0, 0);",
        vec![],
    );
    let height = browser
        .exec("return document.documentElement.scrollHeight;", vec![])
        .as_u64()
        .expect("a height");
    browser.set_window_size(1280, (height as u32 + 160).min(4000));
    let png = browser.screenshot();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    if let Some(path) = std::env::var_os("INSPECTOR_SCREENSHOT") {
        std::fs::write(&path, &png).expect("write the screenshot");
    }
    serve.stop();
}
