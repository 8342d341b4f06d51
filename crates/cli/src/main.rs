//! `webcodex-plugin`: the command-line tool of webcodex-plugin-host.
//!
//! One binary for everything around the runtime crate: try it (`demo`), write a plugin (`init`
//! in Python, TypeScript or Rust), inspect and call plugins (`check`, `list`, `describe`,
//! `call`, `reload`, in-process from a runner.toml or against a server with `--server-url`),
//! serve them (`gateway` on stdio, `mcp`, `serve` over HTTP with the admin listener, `connect`
//! to dial out to a front), and measure them (`bench`). Each command is a thin layer over the
//! crates of the workspace: the runtime (`webcodex-plugin-host`), `webcodex-plugin-sdk` (the
//! built-in example plugin), `-mcp`, `-http` and `-ops`.
//!
//! Exit codes: 0 ok; 1 a tool failure; 2 a usage error, an invalid configuration, a check not
//! ready or a reload with failures. Caveats: the binary is the product, not a library: its
//! modules are private and its output formats are documented in the README, not here.

#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod cli;

fn main() {
    // Warnings, and the lines of a `connect` runner's link (linked, relinked, ended and why).
    let default_filter = format!("warn,{}=info", webcodex_plugin_http::link::LINK_LOG_TARGET);
    let logger =
        env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(default_filter))
            .target(env_logger::Target::Stderr)
            .format(cli::logging::write_record)
            .build();
    let level = logger.filter();
    if log::set_boxed_logger(Box::new(NoWireTrace(logger))).is_ok() {
        log::set_max_level(level);
    }
    std::process::exit(cli::run());
}

/// The logger, minus ureq's trace records: ureq logs wire bytes at trace level (today the
/// `CONNECT` to an HTTP proxy, with its `Proxy-Authorization`; the client writes its requests
/// itself), and no credential is ever logged. A record that holds a token this process
/// presents to a server (a hostile server may echo it back) is written with the token
/// replaced.
struct NoWireTrace(env_logger::Logger);

impl NoWireTrace {
    fn wire(metadata: &log::Metadata<'_>) -> bool {
        metadata.level() == log::Level::Trace && metadata.target().starts_with("ureq")
    }
}

impl log::Log for NoWireTrace {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        !Self::wire(metadata) && self.0.enabled(metadata)
    }

    fn log(&self, record: &log::Record<'_>) {
        if Self::wire(record.metadata()) {
            return;
        }
        if !cli::redact::any() {
            return self.0.log(record);
        }
        let text = record.args().to_string();
        match cli::redact::scrub(&text) {
            std::borrow::Cow::Borrowed(_) => self.0.log(record),
            std::borrow::Cow::Owned(clean) => self.0.log(
                &log::Record::builder()
                    .metadata(record.metadata().clone())
                    .args(format_args!("{clean}"))
                    .module_path(record.module_path())
                    .file(record.file())
                    .line(record.line())
                    .build(),
            ),
        }
    }

    fn flush(&self) {
        self.0.flush();
    }
}
