//! Bindings: opaque handles from a describe to the exact tool instance it described.
//!
//! A binding is `wc_pbind_` + base64url (no padding) of 16 random bytes, 22 characters. It
//! encodes nothing: the runner, provider instance, tool name and schema observation it stands
//! for live only in the [`BindingStore`], which keeps the newest [`BINDING_CAPACITY`] bindings
//! and evicts the oldest first. A binding is not a bearer token: every call re-checks scope.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::host::{ProjectTarget, RunnerId};
use crate::provider::InstanceId;

/// How many bindings the store keeps (docs/PROTOCOL.md §3, bounds).
pub const BINDING_CAPACITY: usize = 512;
/// The prefix of every binding.
pub const BINDING_PREFIX: &str = "wc_pbind_";
const RANDOM_BYTES: usize = 16;
const ENCODED_LEN: usize = 22;
const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
/// The table entry of a byte outside [`ALPHABET`]: any value with a bit above the low six.
const NOT_BASE64: u8 = 0xFF;
/// Each byte's sextet in [`ALPHABET`], or [`NOT_BASE64`].
const SEXTETS: [u8; 256] = {
    let mut table = [NOT_BASE64; 256];
    let mut i = 0;
    while i < ALPHABET.len() {
        table[ALPHABET[i] as usize] = i as u8;
        i += 1;
    }
    table
};

/// A well-formed binding. Built only by [`Binding::generate`] or validated by
/// [`Binding::parse`]; whether it is still known is the store's business.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Binding([u8; RANDOM_BYTES]);

impl Hash for Binding {
    /// The 16 bytes as two words (no length prefix): equal bindings hash equally for any
    /// hasher, and the binding store's hasher has nothing left to do.
    fn hash<H: Hasher>(&self, state: &mut H) {
        let (low, high) = self.0.split_at(8);
        state.write_u64(u64::from_le_bytes(low.try_into().expect("eight bytes")));
        state.write_u64(u64::from_le_bytes(high.try_into().expect("eight bytes")));
    }
}

impl Binding {
    /// A fresh binding from the OS random source; `None` if the source failed.
    pub fn generate() -> Option<Binding> {
        crate::random_bytes().map(Binding)
    }

    /// Parses the wire form; `None` unless it is exactly a canonical binding.
    pub fn parse(text: &str) -> Option<Binding> {
        let encoded: &[u8; ENCODED_LEN] = text
            .strip_prefix(BINDING_PREFIX)?
            .as_bytes()
            .try_into()
            .ok()?;
        let sextet = |c: u8| u32::from(SEXTETS[usize::from(c)]);
        // Every sextet is or-ed in: one check at the end catches any byte outside the alphabet.
        let mut seen = 0u32;
        let mut bytes = [0u8; RANDOM_BYTES];
        // 20 characters → 15 bytes, four characters to three bytes at a time.
        for (chars, out) in encoded.chunks_exact(4).zip(bytes.chunks_exact_mut(3)) {
            let (a, b, c, d) = (
                sextet(chars[0]),
                sextet(chars[1]),
                sextet(chars[2]),
                sextet(chars[3]),
            );
            seen |= a | b | c | d;
            let n = (a << 18) | (b << 12) | (c << 6) | d;
            out.copy_from_slice(&n.to_be_bytes()[1..]);
        }
        // The last two characters carry the 16th byte and 4 bits that must be zero for the
        // canonical form.
        let (a, b) = (sextet(encoded[20]), sextet(encoded[21]));
        seen |= a | b;
        bytes[RANDOM_BYTES - 1] = ((a << 2) | (b >> 4)) as u8;
        (seen < 64 && b & 0x0F == 0).then_some(Binding(bytes))
    }

    /// The wire form: `wc_pbind_` + 22 base64url characters.
    pub fn encode(&self) -> String {
        let mut out = String::with_capacity(BINDING_PREFIX.len() + ENCODED_LEN);
        out.push_str(BINDING_PREFIX);
        for chunk in self.0.chunks(3) {
            let mut n = 0u32;
            for (i, b) in chunk.iter().enumerate() {
                n |= u32::from(*b) << (16 - 8 * i);
            }
            for i in 0..=chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            }
        }
        out
    }
}

impl fmt::Display for Binding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.encode())
    }
}

impl fmt::Debug for Binding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Binding({})", self.encode())
    }
}

/// A binding as the store keys it: its 22 characters. A text is looked up as it came, never
/// decoded: only the text of a canonical binding can equal a stored key (the store keys only
/// [`Binding::encode`]'s), so looking the text up finds what [`Binding::parse`] and a lookup of
/// the binding would find.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Key([u8; ENCODED_LEN]);

impl Key {
    /// The key a text would have as a binding: `None` unless it is the prefix and 22 bytes.
    fn of(text: &str) -> Option<Key> {
        let encoded = text.strip_prefix(BINDING_PREFIX)?.as_bytes();
        Some(Key(encoded.try_into().ok()?))
    }
}

impl Hash for Key {
    /// Three words of the characters (the last two overlap), no length prefix.
    fn hash<H: Hasher>(&self, state: &mut H) {
        let word = |at: usize| u64::from_le_bytes(self.0[at..at + 8].try_into().expect("eight"));
        state.write_u64(word(0));
        state.write_u64(word(8));
        state.write_u64(word(ENCODED_LEN - 8));
    }
}

/// The hasher of the binding store: a binding's bytes come from the OS random source, so they
/// are their own hash (and so are its characters, six random bits each). No caller can choose a stored key (only [`BindingStore::insert`] makes
/// them), so a trivial hash gives no handle for flooding one bucket.
#[derive(Debug, Default, Clone, Copy)]
struct BindingHasher(u64);

impl Hasher for BindingHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write_u64(&mut self, word: u64) {
        self.0 = self.0.rotate_left(23) ^ word;
    }

    /// Only for keys other than [`Binding`]: the bytes, eight at a time, zero-padded.
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }
}

/// What a binding stands for: the exact runner instance, provider instance, tool and schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BindingTarget {
    /// The runner name, as routed (e.g. `local`).
    pub runner: String,
    /// The runner instance described.
    pub runner_id: RunnerId,
    /// The provider id.
    pub plugin: String,
    /// The provider instance described.
    pub instance: InstanceId,
    /// The tool name.
    pub tool: String,
    /// The tool's schema observation at describe time.
    pub observation: String,
    /// The project the binding is bound to (a describe with `project`): a call re-resolves it
    /// before anything reaches the plugin. `None`: a binding as any other.
    pub project: Option<ProjectTarget>,
}

/// The newest bindings, oldest evicted first (FIFO, not LRU: a call does not refresh one).
///
/// Generic over what a binding stands for so that its eviction logic is testable on its own;
/// the gateway stores [`BindingTarget`]s.
#[derive(Debug)]
pub struct BindingStore<T = BindingTarget> {
    capacity: usize,
    inner: Mutex<Inner<T>>,
}

#[derive(Debug)]
struct Inner<T> {
    order: VecDeque<Key>,
    targets: HashMap<Key, Arc<T>, BuildHasherDefault<BindingHasher>>,
}

impl<T> Default for BindingStore<T> {
    fn default() -> Self {
        BindingStore::new(BINDING_CAPACITY)
    }
}

impl<T> BindingStore<T> {
    /// A store keeping at most `capacity` bindings (at least one).
    pub fn new(capacity: usize) -> BindingStore<T> {
        BindingStore {
            capacity: capacity.max(1),
            inner: Mutex::new(Inner {
                order: VecDeque::new(),
                targets: HashMap::default(),
            }),
        }
    }

    /// Stores `target` under a fresh binding, evicting the oldest when full; `None` only if the
    /// OS random source failed.
    pub fn insert(&self, target: T) -> Option<Binding> {
        let target = Arc::new(target);
        let mut inner = self.inner.lock();
        let (binding, key) = loop {
            let candidate = Binding::generate()?;
            let key = Key::of(&candidate.encode()).expect("a binding's own text");
            if !inner.targets.contains_key(&key) {
                break (candidate, key);
            }
        };
        while inner.order.len() >= self.capacity {
            if let Some(oldest) = inner.order.pop_front() {
                inner.targets.remove(&oldest);
            }
        }
        inner.order.push_back(key);
        inner.targets.insert(key, target);
        Some(binding)
    }

    /// The target of a binding given in wire form; `None` when the text is not a well-formed
    /// binding or the binding is unknown or evicted.
    pub fn resolve(&self, text: &str) -> Option<Arc<T>> {
        let key = Key::of(text)?;
        self.inner.lock().targets.get(&key).cloned()
    }

    /// How many bindings are stored.
    pub fn len(&self) -> usize {
        self.inner.lock().order.len()
    }

    /// True when no binding is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    struct Target {
        tool: String,
    }

    fn target(tool: &str) -> Target {
        Target { tool: tool.into() }
    }

    fn well_formed(s: &str) -> bool {
        let Some(rest) = s.strip_prefix("wc_pbind_") else {
            return false;
        };
        rest.len() == 22
            && rest
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    }

    #[test]
    fn binding_has_the_documented_format() {
        for _ in 0..200 {
            let b = Binding::generate().unwrap().encode();
            assert!(well_formed(&b), "{b}");
        }
    }

    #[test]
    fn encode_and_parse_round_trip() {
        for bytes in [[0u8; 16], [255u8; 16], *b"0123456789abcdef"] {
            let b = Binding(bytes);
            assert_eq!(Binding::parse(&b.encode()), Some(b));
        }
        assert_eq!(Binding([0; 16]).encode(), "wc_pbind_AAAAAAAAAAAAAAAAAAAAAA");
        assert_eq!(
            Binding([255; 16]).encode(),
            "wc_pbind______________________w"
        );
    }

    #[test]
    fn parse_rejects_malformed_text() {
        let good = Binding::generate().unwrap().encode();
        assert!(Binding::parse(&good).is_some());
        for bad in [
            String::new(),
            "wc_pbind_".to_string(),
            good[..good.len() - 1].to_string(),
            format!("{good}A"),
            good.replace("wc_pbind_", "wc_pbinx_"),
            format!("wc_pbind_{}", "A".repeat(21) + "="),
            format!("wc_pbind_{}", "A".repeat(21) + "+"),
            // Non-zero trailing bits: not the canonical encoding.
            format!("wc_pbind_{}", "A".repeat(21) + "B"),
            format!("wc_pbind_{}", "é".repeat(11)),
        ] {
            assert!(Binding::parse(&bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn two_inserts_give_two_bindings_for_the_same_target() {
        let store = BindingStore::<Target>::default();
        let a = store.insert(target("t")).unwrap();
        let b = store.insert(target("t")).unwrap();
        assert_ne!(a, b);
        assert_eq!(store.resolve(&a.encode()).unwrap().tool, "t");
        assert_eq!(store.resolve(&b.encode()).unwrap().tool, "t");
    }

    #[test]
    fn unknown_or_malformed_bindings_do_not_resolve() {
        let store = BindingStore::<Target>::default();
        store.insert(target("t")).unwrap();
        assert!(store
            .resolve(&Binding::generate().unwrap().encode())
            .is_none());
        assert!(store.resolve("not a binding").is_none());
    }

    #[test]
    fn evicts_oldest_first_at_capacity() {
        let store = BindingStore::<Target>::default();
        let bindings: Vec<Binding> = (0..BINDING_CAPACITY)
            .map(|i| store.insert(target(&format!("t{i}"))).unwrap())
            .collect();
        assert_eq!(store.len(), BINDING_CAPACITY);
        assert!(bindings
            .iter()
            .all(|b| store.resolve(&b.encode()).is_some()));
        // Resolving does not refresh: the first one is still the oldest.
        let newest = store.insert(target("new")).unwrap();
        assert_eq!(store.len(), BINDING_CAPACITY);
        assert!(store.resolve(&bindings[0].encode()).is_none());
        assert_eq!(store.resolve(&bindings[1].encode()).unwrap().tool, "t1");
        assert_eq!(store.resolve(&newest.encode()).unwrap().tool, "new");
        store.insert(target("newer")).unwrap();
        assert!(store.resolve(&bindings[1].encode()).is_none());
        assert!(store.resolve(&bindings[2].encode()).is_some());
    }

    /// The decoder `Binding::parse` had before its lookup table: the reference.
    fn reference_parse(text: &str) -> Option<Binding> {
        fn decode_char(c: u8) -> Option<u8> {
            match c {
                b'A'..=b'Z' => Some(c - b'A'),
                b'a'..=b'z' => Some(c - b'a' + 26),
                b'0'..=b'9' => Some(c - b'0' + 52),
                b'-' => Some(62),
                b'_' => Some(63),
                _ => None,
            }
        }
        let encoded = text.strip_prefix(BINDING_PREFIX)?.as_bytes();
        if encoded.len() != ENCODED_LEN {
            return None;
        }
        let mut sextets = [0u8; ENCODED_LEN];
        for (slot, &c) in sextets.iter_mut().zip(encoded) {
            *slot = decode_char(c)?;
        }
        let mut bytes = [0u8; RANDOM_BYTES];
        let mut acc: u32 = 0;
        let mut bits = 0;
        let mut out = 0;
        for s in sextets {
            acc = (acc << 6) | u32::from(s);
            bits += 6;
            if bits >= 8 {
                bits -= 8;
                bytes[out] = (acc >> bits) as u8;
                out += 1;
                acc &= (1 << bits) - 1;
            }
        }
        (acc == 0 && out == RANDOM_BYTES).then_some(Binding(bytes))
    }

    #[test]
    fn table_decoder_matches_the_reference_on_every_single_change() {
        let mut texts = Vec::new();
        for _ in 0..20 {
            texts.push(Binding::generate().unwrap().encode());
        }
        texts.push(Binding([0; 16]).encode());
        texts.push(Binding([255; 16]).encode());
        let replacements: Vec<char> = (0u8..=127)
            .map(char::from)
            .chain(['é', '\u{80}', '\u{ff}', '€', '😀'])
            .collect();
        for text in &texts {
            assert_eq!(Binding::parse(text), reference_parse(text));
            assert!(Binding::parse(text).is_some());
            let chars: Vec<char> = text.chars().collect();
            for position in 0..chars.len() {
                for &c in &replacements {
                    let mut changed = chars.clone();
                    changed[position] = c;
                    let changed: String = changed.into_iter().collect();
                    assert_eq!(
                        Binding::parse(&changed),
                        reference_parse(&changed),
                        "{changed:?}"
                    );
                }
            }
            // Shorter, longer and prefix-less forms.
            for cut in 0..text.len() {
                assert_eq!(Binding::parse(&text[..cut]), None);
            }
            assert_eq!(Binding::parse(&format!("{text}A")), None);
            assert_eq!(Binding::parse(&text[BINDING_PREFIX.len()..]), None);
        }
    }

    #[test]
    fn a_text_resolves_exactly_when_it_parses_to_a_stored_binding() {
        // The store looks a text up as it came; parsing it and looking the binding up is the
        // reference. Every stored binding, and every single change and cut of its text.
        let store = BindingStore::<Target>::new(64);
        let mut stored = Vec::new();
        for i in 0..40 {
            let b = store.insert(target(&format!("t{i}"))).unwrap();
            stored.push((b, format!("t{i}")));
        }
        let reference = |text: &str| {
            let b = Binding::parse(text)?;
            stored.iter().find(|(s, _)| *s == b).map(|(_, t)| t.clone())
        };
        let replacements: Vec<char> = (0u8..=127).map(char::from).chain(['é', '😀']).collect();
        for (binding, _) in &stored {
            let text = binding.encode();
            let mut texts = vec![text.clone(), format!("{text}A"), text[1..].to_string()];
            texts.extend((0..text.len()).map(|cut| text[..cut].to_string()));
            for position in 0..text.len() {
                for &c in &replacements {
                    let mut chars: Vec<char> = text.chars().collect();
                    chars[position] = c;
                    texts.push(chars.into_iter().collect());
                }
            }
            for t in texts {
                let found = store.resolve(&t).map(|target| target.tool.clone());
                assert_eq!(found, reference(&t), "{t:?}");
            }
        }
    }

    #[test]
    fn every_last_character_decodes_like_the_reference() {
        // The last character carries 2 bits of the 16th byte and 4 bits that must be zero.
        for &c in ALPHABET {
            for &d in ALPHABET {
                let text = format!("wc_pbind_{}{}{}", "A".repeat(20), c as char, d as char);
                assert_eq!(Binding::parse(&text), reference_parse(&text), "{text}");
            }
        }
    }

    #[test]
    fn random_bindings_round_trip_and_resolve() {
        let store = BindingStore::<Target>::new(64);
        let mut kept = Vec::new();
        for i in 0..200 {
            let b = Binding::generate().unwrap();
            assert_eq!(Binding::parse(&b.encode()), Some(b));
            assert_eq!(reference_parse(&b.encode()), Some(b));
            kept.push(store.insert(target(&format!("t{i}"))).unwrap());
        }
        // The newest 64 resolve to their own targets, the rest are evicted.
        for (i, b) in kept.iter().enumerate() {
            let resolved = store.resolve(&b.encode());
            if i >= 200 - 64 {
                assert_eq!(resolved.unwrap().tool, format!("t{i}"));
            } else {
                assert!(resolved.is_none());
            }
        }
    }

    #[test]
    fn binding_hash_is_consistent_with_equality() {
        use std::hash::BuildHasher;

        let build = BuildHasherDefault::<BindingHasher>::default();
        let std_build = std::collections::hash_map::RandomState::new();
        for _ in 0..100 {
            let a = Binding::generate().unwrap();
            let b = Binding::parse(&a.encode()).unwrap();
            assert_eq!(build.hash_one(a), build.hash_one(b));
            assert_eq!(std_build.hash_one(a), std_build.hash_one(b));
        }
        // Bindings that differ in one byte hash differently.
        let base = Binding([7; 16]);
        for i in 0..16 {
            let mut bytes = [7; 16];
            bytes[i] ^= 1;
            assert_ne!(build.hash_one(base), build.hash_one(Binding(bytes)));
        }
        // Other keys still hash by their bytes.
        assert_ne!(build.hash_one("a"), build.hash_one("b"));
    }
}
