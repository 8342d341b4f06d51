//! The ready-to-paste `[[plugins.providers]]` block (docs/PROTOCOL.md §6, runner.toml), serialized
//! by the `toml` crate so that spaces, quotes and backslashes in paths come out escaped.

use serde::Serialize;

use super::ScaffoldError;

/// One `[[plugins.providers]]` entry as `init` writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct ProviderEntry {
    pub id: String,
    pub name: String,
    pub command: String,
    pub args: Vec<String>,
    pub cwd: String,
}

#[derive(Serialize)]
struct Document<'a> {
    plugins: Plugins<'a>,
}

#[derive(Serialize)]
struct Plugins<'a> {
    providers: [&'a ProviderEntry; 1],
}

/// `entry` as a TOML document holding exactly `[[plugins.providers]]` and its keys.
pub(crate) fn provider_block(entry: &ProviderEntry) -> Result<String, ScaffoldError> {
    let document = Document {
        plugins: Plugins { providers: [entry] },
    };
    toml::to_string(&document).map_err(ScaffoldError::Toml)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(cwd: &str) -> ProviderEntry {
        ProviderEntry {
            id: "echo".into(),
            name: "echo".into(),
            command: "python3".into(),
            args: vec!["plugin.py".into()],
            cwd: cwd.into(),
        }
    }

    #[test]
    fn block_is_one_provider_array_entry() {
        let text = provider_block(&entry("/tmp/echo")).unwrap();
        assert!(text.starts_with("[[plugins.providers]]\n"), "{text}");
        let parsed: toml::Table = toml::from_str(&text).unwrap();
        let providers = parsed["plugins"]["providers"].as_array().unwrap();
        assert_eq!(providers.len(), 1);
        assert_eq!(providers[0]["cwd"].as_str(), Some("/tmp/echo"));
        assert_eq!(providers[0]["args"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn block_keeps_a_windows_path_with_backslashes_and_spaces() {
        let cwd = r"C:\Users\Jo Doe\plugins\echo";
        let text = provider_block(&entry(cwd)).unwrap();
        let parsed: toml::Table = toml::from_str(&text).unwrap();
        assert_eq!(parsed["plugins"]["providers"][0]["cwd"].as_str(), Some(cwd));
    }

    #[test]
    fn block_escapes_quotes_backslashes_and_newlines() {
        let cwd = "/tmp/a b \"q\" back\\slash 'x'\nnl";
        let text = provider_block(&entry(cwd)).unwrap();
        let parsed: toml::Table = toml::from_str(&text).unwrap();
        assert_eq!(parsed["plugins"]["providers"][0]["cwd"].as_str(), Some(cwd));
    }
}
