//! The keys file and the box: rotation with overlap, tampering, foreign and expired boxes,
//! the strict file format (never quoting a secret), and the TTL syntax.

use std::time::Duration;

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;

use super::*;

const NOW: u64 = 1_800_000_000;

fn secret(byte: u8) -> String {
    let mut bytes = [byte; KEY_BYTES];
    bytes[0] = byte.wrapping_add(1);
    STANDARD.encode(bytes)
}

fn file(keys: &[(&str, u8)]) -> String {
    keys.iter()
        .map(|(id, byte)| {
            format!(
                "[[keys]]\nid = \"{id}\"\nsecret = \"{}\"\n\n",
                secret(*byte)
            )
        })
        .collect()
}

fn sealer(keys: &[(&str, u8)], ttl: Duration) -> ClusterKeys {
    ClusterKeys::new(KeySet::parse(&file(keys)).unwrap(), Some(ttl)).unwrap()
}

#[test]
fn a_box_opens_on_every_sealer_with_its_key_and_gives_the_contents_back() {
    let a = sealer(&[("a", 1)], DEFAULT_BINDING_TTL);
    let other_replica = sealer(&[("a", 1)], DEFAULT_BINDING_TTL);
    let text = a.seal_at(b"contents", NOW).unwrap();
    assert!(text.starts_with("wc_pbind_"), "{text}");
    assert!(text[9..]
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
    assert_eq!(other_replica.open_at(&text, NOW + 1).unwrap(), b"contents");
    // Two seals of the same contents differ (a fresh nonce each).
    assert_ne!(a.seal_at(b"contents", NOW).unwrap(), text);
}

#[test]
fn rotation_with_overlap_keeps_old_boxes_until_their_key_leaves() {
    let keys = sealer(&[("old", 1)], DEFAULT_BINDING_TTL);
    let old_box = keys.seal_at(b"old", NOW).unwrap();
    keys.replace(KeySet::parse(&file(&[("new", 2), ("old", 1)])).unwrap());
    assert_eq!(keys.ids(), ["new", "old"]);
    let new_box = keys.seal_at(b"new", NOW).unwrap();
    // The new key seals: its tag is in the box.
    let tag = |text: &str| URL_SAFE_NO_PAD.decode(&text[9..]).unwrap()[1..9].to_vec();
    assert_eq!(tag(&new_box), key_tag("new"));
    assert_eq!(tag(&old_box), key_tag("old"));
    assert_eq!(keys.open_at(&old_box, NOW).unwrap(), b"old");
    assert_eq!(keys.open_at(&new_box, NOW).unwrap(), b"new");
    keys.replace(KeySet::parse(&file(&[("new", 2)])).unwrap());
    assert_eq!(keys.open_at(&old_box, NOW), None);
    assert_eq!(keys.open_at(&new_box, NOW).unwrap(), b"new");
}

#[test]
fn tampered_foreign_malformed_and_expired_boxes_do_not_open() {
    let keys = sealer(&[("a", 1)], Duration::from_secs(60));
    let text = keys.seal_at(b"some contents", NOW).unwrap();
    assert!(keys.open_at(&text, NOW + 59).is_some());
    // Expired: at the expiry and after.
    assert_eq!(keys.open_at(&text, NOW + 60), None);
    assert_eq!(keys.open_at(&text, u64::MAX), None);
    // Every single character changed (to another of the alphabet) fails.
    let alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    for position in 9..text.len() {
        let current = text.as_bytes()[position] as char;
        let other = alphabet.chars().find(|c| *c != current).unwrap();
        let mut changed = text.clone();
        changed.replace_range(position..=position, &other.to_string());
        assert_eq!(keys.open_at(&changed, NOW), None, "position {position}");
    }
    // Cut, extended, without the prefix, not base64, empty.
    for bad in [
        text[..text.len() - 1].to_string(),
        format!("{text}A"),
        text[9..].to_string(),
        format!("wc_pbind_{}", "*".repeat(80)),
        "wc_pbind_".to_string(),
        "wc_pbind_AAAAAAAAAAAAAAAAAAAAAA".to_string(),
        String::new(),
    ] {
        assert_eq!(keys.open_at(&bad, NOW), None, "{bad}");
    }
    // Another cluster's key with the same id, and another id: neither opens.
    let foreign = sealer(&[("a", 9)], Duration::from_secs(60));
    assert_eq!(foreign.open_at(&text, NOW), None);
    let other_id = sealer(&[("b", 1)], Duration::from_secs(60));
    assert_eq!(other_id.open_at(&text, NOW), None);
    // A box re-labelled with the tag of a key the opener holds fails too (the tag is
    // authenticated).
    let mut raw = URL_SAFE_NO_PAD.decode(&text[9..]).unwrap();
    raw[1..9].copy_from_slice(&key_tag("b"));
    let relabelled = format!("wc_pbind_{}", URL_SAFE_NO_PAD.encode(&raw));
    let both = sealer(&[("b", 1), ("a", 1 + 2)], Duration::from_secs(60));
    assert_eq!(both.open_at(&relabelled, NOW), None);
}

#[test]
fn an_ephemeral_sealer_never_expires_and_no_other_process_opens_its_boxes() {
    let runner = ClusterKeys::ephemeral().unwrap();
    let text = runner.seal_at(b"x", NOW).unwrap();
    assert_eq!(runner.open_at(&text, u64::MAX - 1).unwrap(), b"x");
    let another = ClusterKeys::ephemeral().unwrap();
    assert_eq!(another.open_at(&text, NOW), None);
}

#[test]
fn a_sealed_target_round_trips_through_a_box() {
    use webcodex_plugin_host::SealedTarget;
    let keys = sealer(&[("a", 1)], DEFAULT_BINDING_TTL);
    let target = SealedTarget::Remote {
        runner: "edge-1".into(),
        instance: Some("AAAAAAAAAAAAAAAAAAAAAA".into()),
        binding: "wc_pbind_AAAAAAAAAAAAAAAAAAAAAA".into(),
        plugin: "fx".into(),
        tool: "echo".into(),
        observation: [3; 32],
        project: None,
    };
    let text = keys.seal_at(&target.encode().unwrap(), NOW).unwrap();
    let opened = SealedTarget::decode(&keys.open_at(&text, NOW).unwrap()).unwrap();
    assert_eq!(opened, target);
    // The size a caller carries: well under a kilobyte.
    assert!(text.len() < 300, "{} bytes", text.len());
}

#[test]
fn the_keys_file_is_strict_and_its_messages_never_quote_a_secret() {
    let good = secret(5);
    let cases: Vec<(String, &str)> = vec![
        (String::new(), "no [[keys]] entry"),
        ("keys = 1\n".into(), "array of tables"),
        ("other = 1\n".into(), "top-level key other than `keys`"),
        (
            format!("[[keys]]\nid = \"a\"\nsecret = \"{good}\"\nextra = 1\n"),
            "keys[0]: unknown key `extra`",
        ),
        (
            format!("[[keys]]\nsecret = \"{good}\"\n"),
            "keys[0]: has no `id`",
        ),
        ("[[keys]]\nid = \"a\"\n".into(), "keys[0]: has no `secret`"),
        (
            format!("[[keys]]\nid = \"A B\"\nsecret = \"{good}\"\n"),
            "keys[0].id: must be",
        ),
        (
            "[[keys]]\nid = \"a\"\nsecret = \"c2hvcnQ=\"\n".into(),
            "keys[0].secret: must be 32 random bytes",
        ),
        (
            "[[keys]]\nid = \"a\"\nsecret = \"not base64 at all!!\"\n".into(),
            "keys[0].secret: must be 32",
        ),
        (
            format!(
                "[[keys]]\nid = \"a\"\nsecret = \"{}\"\n",
                STANDARD.encode([0u8; 32])
            ),
            "one byte repeated",
        ),
        (
            file(&[("a", 1), ("a", 2)]),
            "keys[1].id: duplicates the id of keys[0]",
        ),
        (
            file(&[("a", 1), ("b", 1)]),
            "keys[1].secret: the same secret as keys[0]",
        ),
        (
            format!("[[keys]]\nid = \"a\"\nsecret = \"{good}\n"),
            "not valid TOML (line 3)",
        ),
    ];
    for (text, expected) in cases {
        let error = KeySet::parse(&text).unwrap_err().to_string();
        assert!(error.contains(expected), "{text:?}: {error}");
        assert!(!error.contains(&good), "a secret in the message: {error}");
    }
    let many: Vec<(String, u8)> = (0..=MAX_KEYS as u8)
        .map(|i| (format!("k{i}"), i + 1))
        .collect();
    let many: Vec<(&str, u8)> = many.iter().map(|(id, b)| (id.as_str(), *b)).collect();
    assert!(KeySet::parse(&file(&many))
        .unwrap_err()
        .0
        .contains("at most 16"));
    assert_eq!(
        KeySet::parse(&file(&many[..MAX_KEYS])).unwrap().ids().len(),
        MAX_KEYS
    );
}

#[test]
fn a_new_key_entry_is_a_keys_file() {
    let entry = new_key_entry("2026-06").unwrap();
    let set = KeySet::parse(&entry).unwrap();
    assert_eq!(set.ids(), ["2026-06"]);
    assert_ne!(new_key_entry("x").unwrap(), new_key_entry("x").unwrap());
}

#[test]
fn binding_ttls_take_a_unit() {
    assert_eq!(parse_ttl("3600"), Ok(Duration::from_secs(3600)));
    assert_eq!(parse_ttl("24h"), Ok(DEFAULT_BINDING_TTL));
    assert_eq!(parse_ttl("90m"), Ok(Duration::from_secs(5400)));
    assert_eq!(parse_ttl("7d"), Ok(Duration::from_secs(7 * 86_400)));
    assert_eq!(parse_ttl("1s"), Ok(Duration::from_secs(1)));
    for bad in [
        "",
        "0",
        "h",
        "-1h",
        "1.5h",
        "24 h",
        "366d",
        "1w",
        "99999999999999999999",
    ] {
        assert!(parse_ttl(bad).is_err(), "{bad}");
    }
}
