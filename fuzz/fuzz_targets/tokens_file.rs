//! The tokens file of the HTTP transport (`serve --tokens`).
//!
//! The input is the file's text. An accepted file authenticates each of its tokens as its
//! entry's name; a rejection's message never contains a token value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use webcodex_plugin_http::Tokens;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // The entries as a plain TOML reader sees them, to check the verdict against.
    let entries: Vec<(String, String)> = text
        .parse::<toml::Table>()
        .ok()
        .and_then(|table| table.get("tokens").and_then(|t| t.as_array()).cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|entry| {
            let name = entry.get("name")?.as_str()?;
            let token = entry.get("token")?.as_str()?;
            Some((name.to_owned(), token.to_owned()))
        })
        .collect();
    match Tokens::parse(text) {
        Ok(tokens) => {
            assert_eq!(tokens.len(), entries.len());
            for (name, token) in &entries {
                let (found, _) = tokens
                    .authenticate(token)
                    .expect("every listed token authenticates");
                // Names are kept with control characters (and `\`) escaped, for log lines.
                if name.contains(|c: char| c.is_control() || c == '\\') {
                    assert!(!found.contains(char::is_control), "{found:?}");
                } else {
                    assert_eq!(found, name);
                }
            }
            assert!(
                tokens.authenticate("").is_none(),
                "the empty token never does"
            );
        }
        Err(error) => {
            let message = error.to_string();
            for (_, token) in &entries {
                // Only tokens that occur once in the file (not also as a key or a name) and
                // cannot be mistaken for the message's own `tokens[N].key:` words.
                let distinctive = token.len() >= 16
                    && text.matches(token.as_str()).count() == 1
                    && !token.starts_with("tokens[");
                // A leak echoes the value: with the value swapped for another of the same
                // length, the message would then change with it. Text the message holds for
                // the other file as well is the message's own words (e.g. the value
                // `kens[1].token: missin` inside "tokens[1].token: missing").
                if distinctive && message.contains(token.as_str()) {
                    let other = ['Q', 'J', 'X']
                        .into_iter()
                        .find(|c| !token.contains(*c))
                        .expect("one of three letters is not in the token");
                    let swapped = text.replace(
                        token.as_str(),
                        &other.to_string().repeat(token.chars().count()),
                    );
                    let own_words = Tokens::parse(&swapped)
                        .err()
                        .is_some_and(|e| e.to_string().contains(token.as_str()));
                    assert!(own_words, "a token leaked: {message}");
                }
            }
        }
    }
});
