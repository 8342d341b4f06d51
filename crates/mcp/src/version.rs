//! MCP protocol versions and the two eras they belong to.
//!
//! The handshake era (2024-11-05 through 2025-11-25) agrees on a version once, in `initialize`.
//! The stateless era (2026-07-28) carries the version in every request's `_meta`.

/// The versions negotiated by `initialize`, newest first.
pub const HANDSHAKE_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
/// The versions served statelessly (per-request `_meta`), newest first.
pub const STATELESS_VERSIONS: [&str; 1] = ["2026-07-28"];
/// Every version this server speaks, newest first (`server/discover`'s `supportedVersions` and
/// the `supported` list of an unsupported-version error).
pub const SUPPORTED_VERSIONS: [&str; 5] = [
    "2026-07-28",
    "2025-11-25",
    "2025-06-18",
    "2025-03-26",
    "2024-11-05",
];

/// The version `initialize` answers: the client's when it is a handshake version, else the
/// newest handshake version (the client then decides whether it can go on).
pub fn negotiate_handshake(requested: Option<&str>) -> &'static str {
    requested
        .and_then(|r| HANDSHAKE_VERSIONS.iter().find(|v| **v == r))
        .copied()
        .unwrap_or(HANDSHAKE_VERSIONS[0])
}

/// The methods the stateless revision removed: unknown (-32601) in a request of that era.
pub const REMOVED_IN_STATELESS: [&str; 3] = ["initialize", "ping", "logging/setLevel"];

/// True when `method` does not exist in the stateless era (see [`REMOVED_IN_STATELESS`]).
pub fn removed_in_stateless(method: &str) -> bool {
    REMOVED_IN_STATELESS.contains(&method)
}

/// The one revision that requires JSON-RPC batches (2025-06-18 removed them).
pub const BATCH_VERSION: &str = "2025-03-26";

/// True when a batch (a JSON array) is served under `version` (only [`BATCH_VERSION`]).
pub fn serves_batches(version: &str) -> bool {
    version == BATCH_VERSION
}

/// True when `version` is served statelessly.
pub fn is_stateless(version: &str) -> bool {
    STATELESS_VERSIONS.contains(&version)
}

/// True when `version` is any version this server speaks.
pub fn is_supported(version: &str) -> bool {
    SUPPORTED_VERSIONS.contains(&version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handshake_answers_the_clients_version_or_the_newest() {
        for v in HANDSHAKE_VERSIONS {
            assert_eq!(negotiate_handshake(Some(v)), v);
        }
        assert_eq!(negotiate_handshake(Some("2026-07-28")), "2025-11-25");
        assert_eq!(negotiate_handshake(Some("1999-01-01")), "2025-11-25");
        assert_eq!(negotiate_handshake(None), "2025-11-25");
    }

    #[test]
    fn supported_is_both_eras() {
        for v in HANDSHAKE_VERSIONS.iter().chain(&STATELESS_VERSIONS) {
            assert!(is_supported(v));
        }
        assert_eq!(
            SUPPORTED_VERSIONS.len(),
            HANDSHAKE_VERSIONS.len() + STATELESS_VERSIONS.len()
        );
        assert!(is_stateless("2026-07-28"));
        assert!(!is_stateless("2025-11-25"));
        assert!(removed_in_stateless("ping") && removed_in_stateless("initialize"));
        assert!(!removed_in_stateless("tools/list"));
    }
}
