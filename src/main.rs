//! `webcodex-plugin`: the command-line tool of webcodex-plugin-host.

mod cli;

fn main() {
    let logger =
        env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn"))
            .target(env_logger::Target::Stderr)
            .format(cli::logging::write_record)
            .build();
    let level = logger.filter();
    if log::set_boxed_logger(Box::new(NoWireTrace(logger))).is_ok() {
        log::set_max_level(level);
    }
    std::process::exit(cli::run());
}

/// The logger, minus the HTTP client's trace records: ureq logs the request bytes at trace
/// level, `Authorization` header included, and a token is never logged.
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
        if !Self::wire(record.metadata()) {
            self.0.log(record);
        }
    }

    fn flush(&self) {
        self.0.flush();
    }
}
