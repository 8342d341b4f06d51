//! The secrets this process holds as a client (its `--server-url` token, the tokens a front
//! presents to its runners), so the logger can take them out of any record: a record of the
//! HTTP client may quote what a server sent, and a hostile server may echo a token back.

use std::borrow::Cow;
use std::sync::RwLock;

/// The most secrets kept (one per runner of a runners file, and one client token).
const MAX_SECRETS: usize = 1024;

/// What replaces a secret in a log record.
const MARK: &str = "[redacted]";

static SECRETS: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Remembers `secret` for [`scrub`] (an empty one, or one beyond [`MAX_SECRETS`], is ignored).
pub(crate) fn register(secret: &str) {
    if secret.is_empty() {
        return;
    }
    let mut secrets = SECRETS.write().unwrap_or_else(|e| e.into_inner());
    if secrets.len() < MAX_SECRETS && !secrets.iter().any(|s| s == secret) {
        secrets.push(secret.to_string());
    }
}

/// True when some secret is registered (else [`scrub`] has nothing to do).
pub(crate) fn any() -> bool {
    !SECRETS.read().unwrap_or_else(|e| e.into_inner()).is_empty()
}

/// `text` with every registered secret replaced by `[redacted]`.
pub(crate) fn scrub(text: &str) -> Cow<'_, str> {
    let secrets = SECRETS.read().unwrap_or_else(|e| e.into_inner());
    let mut out = Cow::Borrowed(text);
    for secret in secrets.iter() {
        if out.contains(secret.as_str()) {
            out = Cow::Owned(out.replace(secret.as_str(), MARK));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registered_secrets_are_scrubbed() {
        register("s3cret-value-for-the-scrub-test");
        assert_eq!(
            scrub("a s3cret-value-for-the-scrub-test b"),
            "a [redacted] b"
        );
        assert!(matches!(scrub("nothing here"), Cow::Borrowed(_)));
        assert!(any());
    }
}
