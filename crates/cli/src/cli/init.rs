//! `init DIR [--id ID] [--lang ts|python|rust]`: writes the scaffold, then prints the next
//! steps in the order a newcomer runs them: build (when the language needs it), paste the
//! provider block, check.

use std::path::Path;

use super::scaffold::{create, Lang, Scaffold};

use super::{EXIT_OK, EXIT_USAGE};

/// Runs `init` and returns the exit code.
pub(super) fn run(dir: &Path, id: Option<&str>, lang: &str) -> i32 {
    let lang: Lang = match lang.parse() {
        Ok(lang) => lang,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_USAGE;
        }
    };
    match create(dir, id, lang) {
        Ok(scaffold) => {
            println!("{}", report(lang, &scaffold));
            EXIT_OK
        }
        Err(e) => {
            eprintln!("error: {e}");
            EXIT_USAGE
        }
    }
}

/// The text `init` prints: the files, then the numbered next steps.
pub(super) fn report(lang: Lang, scaffold: &Scaffold) -> String {
    let mut out = format!("created a {} plugin:\n", lang.as_str());
    for file in &scaffold.files {
        out.push_str(&format!("  {}\n", file.display()));
    }
    out.push_str("\nnext steps:\n");
    let mut step = 1;
    if let Some(build) = lang.build_command() {
        out.push_str(&format!(
            "\n{step}. build it:\n\n    cd {} && {build}\n",
            shell_quote(&scaffold.dir.to_string_lossy())
        ));
        let target_set = [
            "CARGO_TARGET_DIR",
            "CARGO_BUILD_TARGET_DIR",
            "CARGO_BUILD_TARGET",
        ]
        .iter()
        .any(|name| std::env::var_os(name).is_some_and(|v| !v.is_empty()));
        if lang == Lang::Rust && target_set {
            out.push_str(
                "\n   (a Cargo target directory or target is set here: the block below \
                 names the binary there; build it with the same setting)\n",
            );
        }
        step += 1;
    }
    out.push_str(&format!(
        "\n{step}. add this provider block to runner.toml (in the directory you run the check from):\n\n{}",
        scaffold.provider_block
    ));
    step += 1;
    out.push_str(&format!(
        "\n{step}. check it (a ready plugin lists its tools and its catalog digest):\n\n    \
         {} check --config runner.toml --plugin {}",
        shell_quote(&this_binary()),
        scaffold.id
    ));
    out
}

/// The path of the running binary, so the printed check runs as printed after `cargo run` too
/// (where `webcodex-plugin` is not on PATH); the bare name when the path is unknown.
fn this_binary() -> String {
    std::env::current_exe()
        .ok()
        .and_then(|path| path.to_str().map(str::to_string))
        .unwrap_or_else(|| "webcodex-plugin".to_string())
}

/// `text` as one POSIX shell word: unchanged when it is plainly safe, else single-quoted.
fn shell_quote(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'/' | b'.' | b'_' | b'-' | b'+'));
    if plain {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_quote_leaves_plain_paths_and_quotes_the_rest() {
        assert_eq!(shell_quote("/tmp/a-b_c.d"), "/tmp/a-b_c.d");
        assert_eq!(shell_quote("/tmp/a b"), "'/tmp/a b'");
        assert_eq!(shell_quote("/tmp/it's"), r"'/tmp/it'\''s'");
    }
}
