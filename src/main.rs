//! `webcodex-plugin`: the command-line tool of webcodex-plugin-host.

mod cli;

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn"))
        .target(env_logger::Target::Stderr)
        .init();
    std::process::exit(cli::run());
}
