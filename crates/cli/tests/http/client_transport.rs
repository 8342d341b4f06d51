//! The `--server-url` client's transport against real endpoints in this process: https with a
//! test CA (trusted with `--ca-cert`, refused without it), a recording proxy (`--proxy`, the
//! proxy environment, `--no-system-proxy`, `NO_PROXY`, CONNECT for https), and responses lost
//! after the request was sent (never retried).

use crate::client_support;

use client_support::{run, write, Origin, RecordingProxy, Reply, TestPki};

const TOKEN: &str = "transport-test-token-0123456789";

fn list(url: &str, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = ["list", "--json", "--server-url", url, "--token", TOKEN]
        .map(String::from)
        .to_vec();
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

fn run_list(url: &str, extra: &[&str], env: &[(&str, &str)]) -> client_support::Run {
    let args = list(url, extra);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = run(&args, env);
    assert!(
        !r.stdout.contains(TOKEN) && !r.stderr.contains(TOKEN),
        "the token was printed: {r:?}"
    );
    r
}

#[test]
fn https_with_the_private_ca_is_trusted_and_without_it_is_refused() {
    let dir = client_support::temp_dir("tls");
    let pki = TestPki::new();
    let ca = write(&dir, "ca.pem", &pki.ca_pem);
    let origin = Origin::start(Reply::Answer, Some(pki.server.clone()));
    let url = origin.url("https");

    let r = run_list(&url, &["--ca-cert", &ca], &[]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(r.stdout.contains("canned"), "{r:?}");
    let seen = origin.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(seen[0]
        .request
        .starts_with("POST /api/tools/call HTTP/1.1\r\n"));

    // The built-in roots do not hold the test CA: the handshake fails, nothing was sent.
    let r = run_list(&url, &[], &[]);
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(r.stderr.contains("is not trusted"), "{r:?}");
    assert!(r.stderr.contains("nothing was sent"), "{r:?}");
    assert!(r.stderr.contains("--ca-cert"), "{r:?}");
    let seen = origin.seen();
    assert!(seen.iter().all(|s| s.request.is_empty()), "{seen:?}");

    // A file without a certificate: a usage error before any request.
    let junk = write(&dir, "junk.pem", "not a certificate\n");
    let r = run_list(&url, &["--ca-cert", &junk], &[]);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert!(origin.seen().is_empty());
}

#[test]
fn requests_go_through_the_proxy_that_the_flags_or_environment_name() {
    let proxy = RecordingProxy::start();
    let origin = Origin::start(Reply::Answer, None);
    let url = origin.url("http");
    let tunnel = format!("CONNECT {} HTTP/1.1", origin.addr);
    let through_proxy = |r: &client_support::Run| {
        assert_eq!(r.code, Some(0), "{r:?}");
        assert!(r.stdout.contains("canned"), "{r:?}");
        assert_eq!(
            proxy.request_lines(),
            std::slice::from_ref(&tunnel),
            "{r:?}"
        );
        assert_eq!(origin.seen().len(), 1);
    };
    let direct = |r: &client_support::Run| {
        assert_eq!(r.code, Some(0), "{r:?}");
        assert!(r.stdout.contains("canned"), "{r:?}");
        assert!(proxy.request_lines().is_empty(), "{r:?}");
        assert_eq!(origin.seen().len(), 1);
    };

    through_proxy(&run_list(&url, &["--proxy", &proxy.url()], &[]));
    // HTTP_PROXY (either case) applies to an http:// URL without flags; HTTPS_PROXY does not.
    through_proxy(&run_list(&url, &[], &[("HTTP_PROXY", &proxy.url())]));
    through_proxy(&run_list(&url, &[], &[("http_proxy", &proxy.url())]));
    direct(&run_list(&url, &[], &[("HTTPS_PROXY", &proxy.url())]));
    // --no-system-proxy ignores HTTP_PROXY; NO_PROXY exempts the host.
    direct(&run_list(
        &url,
        &["--no-system-proxy"],
        &[("HTTP_PROXY", &proxy.url())],
    ));
    direct(&run_list(
        &url,
        &[],
        &[
            ("HTTP_PROXY", &proxy.url()),
            ("NO_PROXY", "localhost,127.0.0.1"),
        ],
    ));
    // --proxy is used even with --no-system-proxy, and whatever the environment says.
    through_proxy(&run_list(
        &url,
        &["--proxy", &proxy.url(), "--no-system-proxy"],
        &[("NO_PROXY", "*")],
    ));
}

#[test]
fn https_goes_through_the_proxy_with_connect() {
    let dir = client_support::temp_dir("connect");
    let pki = TestPki::new();
    let ca = write(&dir, "ca.pem", &pki.ca_pem);
    let origin = Origin::start(Reply::Answer, Some(pki.server.clone()));
    let proxy = RecordingProxy::start();
    let url = origin.url("https");
    let r = run_list(&url, &["--ca-cert", &ca], &[("HTTPS_PROXY", &proxy.url())]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(r.stdout.contains("canned"), "{r:?}");
    let lines = proxy.request_lines();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with(&format!("CONNECT {} HTTP/1.1", origin.addr)),
        "{lines:?}"
    );
    assert_eq!(origin.seen().len(), 1);
}

#[test]
fn a_response_lost_after_sending_is_reported_and_never_retried() {
    let dir = client_support::temp_dir("lost");
    let pki = TestPki::new();
    let ca = write(&dir, "ca.pem", &pki.ca_pem);
    for (reply, tls, extra) in [
        (Reply::Close, false, &[][..]),
        (Reply::Close, true, &["--ca-cert", ca.as_str()][..]),
        // The read timeout: the server holds the request and never answers.
        (Reply::Hold, false, &["--read-timeout", "1"][..]),
    ] {
        let origin = Origin::start(reply, tls.then(|| pki.server.clone()));
        let url = origin.url(if tls { "https" } else { "http" });
        let mut args = vec!["reload", "--server-url", &url, "--token", TOKEN];
        args.extend(extra);
        let r = run(&args, &[]);
        let case = format!("{reply:?} tls={tls}");
        assert_eq!(r.code, Some(1), "{case}: {r:?}");
        assert!(r.stderr.contains("`reload`"), "{case}: {r:?}");
        assert!(r.stderr.contains("outcome may be unknown"), "{case}: {r:?}");
        assert!(r.stderr.contains("NOT retried"), "{case}: {r:?}");
        assert!(!r.stderr.contains(TOKEN) && !r.stdout.contains(TOKEN));
        let seen = origin.seen();
        assert_eq!(seen.len(), 1, "{case}: a request was retried: {seen:?}");
        assert!(seen[0].request.contains("\"reload\""), "{case}: {seen:?}");
    }
}

#[test]
fn a_refused_connection_sent_nothing() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let r = run_list(&url, &["--connect-timeout", "5"], &[]);
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(r.stderr.contains("nothing was sent"), "{r:?}");
    assert!(!r.stderr.contains("outcome may be unknown"), "{r:?}");
}
