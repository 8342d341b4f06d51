//! The cluster keys and the sealed binding box (docs/PROTOCOL.md, cluster mode).
//!
//! The keys file (`serve --cluster-keys FILE`, a Kubernetes Secret) is TOML:
//!
//! ```toml
//! [[keys]]
//! id = "2026-06"
//! secret = "<32 random bytes, standard base64>"   # token new --cluster-key prints one
//! ```
//!
//! 1 to [`MAX_KEYS`] entries, strict like the tokens file (unknown keys, a bad id, a secret that
//! is not 32 bytes of standard base64 or is one byte repeated, a duplicate id or secret are
//! refused, naming `keys[INDEX].KEY` and never quoting a secret). The first key seals; every
//! key opens: rotate by putting a new key first while the old one stays, then removing the old
//! one once its bindings no longer matter (at most one binding TTL later).
//!
//! A sealed binding is `wc_pbind_` + unpadded base64url of the box:
//!
//! | bytes | what |
//! |---|---|
//! | 1 | version, 1 |
//! | 8 | key tag: the first 8 bytes of SHA-256(`webcodex-cluster-key-v1\0` + key id) |
//! | 12 | nonce, random |
//! | n + 8 | AES-256-GCM ciphertext of the expiry (8 bytes, big-endian Unix seconds; all ones: never) and the binding's contents |
//! | 16 | GCM tag |
//!
//! The version and key tag are the additional authenticated data. Opening takes the same
//! steps for a tampered box, a box of an unknown key (opened with a decoy key) and an expired
//! one (the expiry is read only after the box opened), so their times do not tell them apart.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use parking_lot::RwLock;
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, NONCE_LEN};
use sha2::{Digest, Sha256};
use webcodex_plugin_host::random_bytes;

use webcodex_plugin_host::{valid_runner_id, BindingSealer, BINDING_PREFIX};

/// The bytes of a key's secret.
pub const KEY_BYTES: usize = 32;
/// The most keys a keys file holds.
pub const MAX_KEYS: usize = 16;
/// How long a sealed binding opens when `--binding-ttl` is not given.
pub const DEFAULT_BINDING_TTL: Duration = Duration::from_secs(24 * 60 * 60);

const VERSION: u8 = 1;
const TAG_BYTES: usize = 8;
const HEADER: usize = 1 + TAG_BYTES;
const EXPIRY_BYTES: usize = 8;
const GCM_TAG: usize = 16;
/// The expiry of a box that never expires.
const NEVER: u64 = u64::MAX;

/// A keys file that cannot be used; the text names the entry and the field, never a secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeysError(pub String);

impl std::fmt::Display for KeysError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for KeysError {}

/// One key: its id, the tag boxes name it by, and the AEAD key.
struct Key {
    id: String,
    tag: [u8; TAG_BYTES],
    aead: LessSafeKey,
}

/// The keys of a keys file, the first the sealing one.
pub struct KeySet {
    keys: Vec<Key>,
}

impl std::fmt::Debug for KeySet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeySet")
            .field("ids", &self.ids())
            .finish_non_exhaustive()
    }
}

/// The tag of key `id`.
fn key_tag(id: &str) -> [u8; TAG_BYTES] {
    let digest = Sha256::new()
        .chain_update(b"webcodex-cluster-key-v1\0")
        .chain_update(id.as_bytes())
        .finalize();
    let mut tag = [0u8; TAG_BYTES];
    tag.copy_from_slice(&digest[..TAG_BYTES]);
    tag
}

fn aead_key(secret: &[u8; KEY_BYTES]) -> LessSafeKey {
    // A 32-byte key is the one length AES-256-GCM takes: this cannot fail.
    LessSafeKey::new(UnboundKey::new(&AES_256_GCM, secret).expect("a 32-byte AES-256 key"))
}

impl KeySet {
    /// Reads and checks a keys file.
    pub fn load(path: &Path) -> Result<KeySet, KeysError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| KeysError(format!("the keys file cannot be read: {e}")))?;
        KeySet::parse(&text)
    }

    /// Parses and checks the text of a keys file.
    pub fn parse(text: &str) -> Result<KeySet, KeysError> {
        let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            // The position and the parser's reason, never the line (it may hold a secret).
            let reason = crate::tokens::parser_reason(e.message());
            match e.span() {
                Some(span) => {
                    let before = &text[..span.start.min(text.len())];
                    let line = before.matches('\n').count() + 1;
                    KeysError(format!(
                        "the keys file is not valid TOML (line {line}): {reason}"
                    ))
                }
                None => KeysError(format!("the keys file is not valid TOML: {reason}")),
            }
        })?;
        if table.keys().any(|k| k != "keys") {
            return Err(KeysError(
                "the keys file has a top-level key other than `keys` (only [[keys]] entries \
                 are allowed)"
                    .into(),
            ));
        }
        let items = match table.get("keys") {
            Some(toml::Value::Array(items)) if !items.is_empty() => items,
            Some(toml::Value::Array(_)) | None => {
                return Err(KeysError(
                    "the keys file has no [[keys]] entry; `token new --cluster-key` prints one"
                        .into(),
                ))
            }
            Some(_) => {
                return Err(KeysError(
                    "`keys` must be an array of tables ([[keys]])".into(),
                ))
            }
        };
        if items.len() > MAX_KEYS {
            return Err(KeysError(format!(
                "the keys file has {} keys; at most {MAX_KEYS} (remove keys no binding needs)",
                items.len()
            )));
        }
        let mut keys: Vec<Key> = Vec::with_capacity(items.len());
        let mut secrets: Vec<[u8; KEY_BYTES]> = Vec::with_capacity(items.len());
        for (index, item) in items.iter().enumerate() {
            let (id, secret) = parse_entry(index, item)?;
            if let Some(j) = keys.iter().position(|k| k.id == id) {
                return Err(KeysError(format!(
                    "keys[{index}].id: duplicates the id of keys[{j}]"
                )));
            }
            let tag = key_tag(&id);
            if let Some(j) = keys.iter().position(|k| k.tag == tag) {
                return Err(KeysError(format!(
                    "keys[{index}].id: its tag equals the tag of keys[{j}]; choose another id"
                )));
            }
            if let Some(j) = secrets.iter().position(|s| s == &secret) {
                return Err(KeysError(format!(
                    "keys[{index}].secret: the same secret as keys[{j}]; give each key its own"
                )));
            }
            keys.push(Key {
                id,
                tag,
                aead: aead_key(&secret),
            });
            secrets.push(secret);
        }
        Ok(KeySet { keys })
    }

    /// A set of one random key held only by this process (a `connect` runner's own bindings:
    /// they open only in the process that sealed them). `None` without system randomness.
    pub fn ephemeral() -> Option<KeySet> {
        let secret: [u8; KEY_BYTES] = random_bytes()?;
        let id = "process".to_string();
        Some(KeySet {
            keys: vec![Key {
                tag: key_tag(&id),
                id,
                aead: aead_key(&secret),
            }],
        })
    }

    /// The key ids, the sealing one first.
    pub fn ids(&self) -> Vec<&str> {
        self.keys.iter().map(|k| k.id.as_str()).collect()
    }
}

/// One `[[keys]]` entry: its id and secret.
fn parse_entry(index: usize, item: &toml::Value) -> Result<(String, [u8; KEY_BYTES]), KeysError> {
    let Some(table) = item.as_table() else {
        return Err(KeysError(format!("keys[{index}]: must be a table")));
    };
    if let Some(key) = table
        .keys()
        .find(|k| !matches!(k.as_str(), "id" | "secret"))
    {
        let key = if valid_runner_id(key) {
            key.as_str()
        } else {
            "…"
        };
        return Err(KeysError(format!(
            "keys[{index}]: unknown key `{key}` (an entry has `id` and `secret`)"
        )));
    }
    let id = match table.get("id") {
        Some(toml::Value::String(id)) if valid_runner_id(id) => id.clone(),
        Some(_) => {
            return Err(KeysError(format!(
                "keys[{index}].id: must be 1 to 64 characters of a-z, 0-9, `_`, `.` and `-`"
            )))
        }
        None => return Err(KeysError(format!("keys[{index}]: has no `id`"))),
    };
    let secret = match table.get("secret") {
        Some(toml::Value::String(secret)) => STANDARD
            .decode(secret.trim())
            .ok()
            .and_then(|bytes| <[u8; KEY_BYTES]>::try_from(bytes).ok()),
        Some(_) => None,
        None => return Err(KeysError(format!("keys[{index}]: has no `secret`"))),
    };
    let Some(secret) = secret else {
        return Err(KeysError(format!(
            "keys[{index}].secret: must be {KEY_BYTES} random bytes in standard base64 (44 \
             characters); `token new --cluster-key` prints one"
        )));
    };
    if secret.iter().all(|b| *b == secret[0]) {
        return Err(KeysError(format!(
            "keys[{index}].secret: is one byte repeated, not random; `token new --cluster-key` \
             prints a random one"
        )));
    }
    Ok((id, secret))
}

/// The `[[keys]]` entry of a fresh random key with id `id`, as `token new --cluster-key`
/// prints it; `None` without system randomness.
pub fn new_key_entry(id: &str) -> Option<String> {
    let secret: [u8; KEY_BYTES] = random_bytes()?;
    Some(format!(
        "[[keys]]\nid = \"{id}\"\nsecret = \"{}\"\n",
        STANDARD.encode(secret)
    ))
}

/// Parses a binding TTL: a whole number with an optional unit, `s` (the default), `m`, `h`
/// or `d`, from 1 s to 365 d.
pub fn parse_ttl(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (digits, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => text.split_at(i),
        None => (text, "s"),
    };
    let scale = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err("the unit must be s, m, h or d (e.g. 24h)".into()),
    };
    let seconds = digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .filter(|s| (1..=365 * 86_400).contains(s))
        .ok_or("must be a whole number from 1 s to 365 d (e.g. 24h, 90m, 3600)")?;
    Ok(Duration::from_secs(seconds))
}

/// The sealer of a replica's bindings: the keys in force (swapped whole on a reload) and the
/// binding TTL.
pub struct ClusterKeys {
    set: RwLock<Arc<KeySet>>,
    /// `None`: the boxes never expire (an ephemeral set's).
    ttl: Option<Duration>,
    /// The key a box of an unknown key is opened with, so that it takes the time of any other
    /// box that does not open.
    decoy: LessSafeKey,
}

impl std::fmt::Debug for ClusterKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterKeys")
            .field("ids", &self.set.read().ids())
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl ClusterKeys {
    /// A sealer of `set` whose boxes open for `ttl` after sealing (`None`: forever). `None`
    /// without system randomness (for the decoy key).
    pub fn new(set: KeySet, ttl: Option<Duration>) -> Option<ClusterKeys> {
        let decoy: [u8; KEY_BYTES] = random_bytes()?;
        Some(ClusterKeys {
            set: RwLock::new(Arc::new(set)),
            ttl,
            decoy: aead_key(&decoy),
        })
    }

    /// A sealer of one key of this process's own, whose boxes never expire: a `connect`
    /// runner's.
    pub fn ephemeral() -> Option<ClusterKeys> {
        ClusterKeys::new(KeySet::ephemeral()?, None)
    }

    /// Puts `set` in force: boxes are sealed with its first key from now on, and boxes of a
    /// key it lacks no longer open.
    pub fn replace(&self, set: KeySet) {
        *self.set.write() = Arc::new(set);
    }

    /// The key ids in force, the sealing one first.
    pub fn ids(&self) -> Vec<String> {
        self.set
            .read()
            .ids()
            .into_iter()
            .map(String::from)
            .collect()
    }

    /// [`BindingSealer::seal`] at `now` (Unix seconds).
    pub fn seal_at(&self, contents: &[u8], now: u64) -> Option<String> {
        let set = self.set.read().clone();
        let key = set.keys.first()?;
        let expiry = match self.ttl {
            Some(ttl) => now.saturating_add(ttl.as_secs()).min(NEVER - 1),
            None => NEVER,
        };
        let nonce: [u8; NONCE_LEN] = random_bytes()?;
        let mut sealed =
            Vec::with_capacity(HEADER + NONCE_LEN + EXPIRY_BYTES + contents.len() + GCM_TAG);
        sealed.push(VERSION);
        sealed.extend_from_slice(&key.tag);
        sealed.extend_from_slice(&nonce);
        let mut body = Vec::with_capacity(EXPIRY_BYTES + contents.len() + GCM_TAG);
        body.extend_from_slice(&expiry.to_be_bytes());
        body.extend_from_slice(contents);
        let aad = Aad::from(&sealed[..HEADER]);
        key.aead
            .seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), aad, &mut body)
            .ok()?;
        sealed.extend_from_slice(&body);
        let mut text = String::with_capacity(BINDING_PREFIX.len() + sealed.len() * 4 / 3 + 4);
        text.push_str(BINDING_PREFIX);
        URL_SAFE_NO_PAD.encode_string(&sealed, &mut text);
        Some(text)
    }

    /// [`BindingSealer::open`] at `now` (Unix seconds).
    pub fn open_at(&self, binding: &str, now: u64) -> Option<Vec<u8>> {
        let encoded = binding.strip_prefix(BINDING_PREFIX)?;
        let mut sealed = URL_SAFE_NO_PAD.decode(encoded).ok()?;
        if sealed.len() < HEADER + NONCE_LEN + EXPIRY_BYTES + GCM_TAG || sealed[0] != VERSION {
            return None;
        }
        let set = self.set.read().clone();
        // Every key's tag is compared (no early end); an unknown tag opens with the decoy.
        let mut found = None;
        for key in &set.keys {
            if key.tag == sealed[1..HEADER] {
                found = Some(&key.aead);
            }
        }
        let known = found.is_some();
        let aead = found.unwrap_or(&self.decoy);
        let (header, rest) = sealed.split_at_mut(HEADER);
        let (nonce, body) = rest.split_at_mut(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let plain = aead.open_in_place(nonce, Aad::from(&header[..]), body);
        let (expiry, contents) = match plain {
            Ok(plain) if known => plain.split_at(EXPIRY_BYTES),
            _ => return None,
        };
        let expiry = u64::from_be_bytes(expiry.try_into().ok()?);
        (now < expiry).then(|| contents.to_vec())
    }
}

impl BindingSealer for ClusterKeys {
    fn seal(&self, contents: &[u8]) -> Option<String> {
        self.seal_at(contents, now_secs())
    }

    fn open(&self, binding: &str) -> Option<Vec<u8>> {
        self.open_at(binding, now_secs())
    }
}

#[cfg(test)]
mod tests;
