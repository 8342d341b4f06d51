//! Sealed bindings: a binding that carries what it stands for, in a box only its gateway's
//! keys open, instead of a key into this process's binding store (docs/PROTOCOL.md, sealed
//! bindings).
//!
//! A gateway seals its bindings once it is given a [`BindingSealer`]
//! ([`Gateway::seal_bindings`]): several fronts that share the sealer's keys then open each
//! other's bindings, and no count evicts one (the sealer's expiry does). The sealer owns the
//! box (the AEAD, the key id, the expiry: `webcodex_plugin_http::cluster`); this module owns
//! what goes in it, [`SealedTarget`], written by [`SealedTarget::encode`] and read back,
//! strictly, by [`SealedTarget::decode`].
//!
//! [`Gateway::seal_bindings`]: super::Gateway::seal_bindings

/// Seals a binding's contents into its wire form and opens it again. Implementations keep
/// their keys and expiry to themselves; an open that fails (a text it did not make, one made
/// with a key it no longer holds, one tampered with, one expired) is `None`, and takes the
/// same time whichever of those it is.
pub trait BindingSealer: Send + Sync {
    /// `wc_pbind_` and the box holding `contents`; `None` when it cannot seal (no system
    /// randomness for the nonce).
    fn seal(&self, contents: &[u8]) -> Option<String>;

    /// The contents of a binding this sealer (or one sharing its keys) sealed, while its key is
    /// held and it has not expired; `None` otherwise.
    fn open(&self, binding: &str) -> Option<Vec<u8>>;
}

/// What a sealed binding stands for: what a stored binding's store entry records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SealedTarget {
    /// A tool of a host in the sealing process (a `connect` runner's own bindings).
    Local {
        /// The runner name it was described on.
        runner: String,
        /// The runner (host) instance, as a number of that process.
        runner_id: u64,
        /// The provider id.
        plugin: String,
        /// The provider instance, as a number of that process.
        instance: u64,
        /// The tool name.
        tool: String,
        /// The SHA-256 of the tool's schema observation (`sha256:` + these bytes in hex).
        observation: [u8; 32],
        /// The project target, for a project-bound tool: whether the project was named by its
        /// canonical path (a byte, 0 or 1), the 16 bytes of its target id, and the project as
        /// named (an absolute path, UTF-8). The id is keyed per process: the box opens only in
        /// the process that sealed it.
        project: Option<Vec<u8>>,
    },
    /// A tool described on a remote runner (a front's bindings).
    Remote {
        /// The runner id.
        runner: String,
        /// The runner instance that described it, when the runner names one.
        instance: Option<String>,
        /// The remote's own binding.
        binding: String,
        /// The provider id.
        plugin: String,
        /// The tool name.
        tool: String,
        /// The SHA-256 of the tool's schema observation.
        observation: [u8; 32],
        /// The project target the runner bound its binding to (`wc_proot_` and 32 hex digits),
        /// for a project-bound tool.
        project: Option<Vec<u8>>,
    },
}

const LOCAL: u8 = 1;
const REMOTE: u8 = 2;
/// The prefix of an observation (`Tool::observation`).
const SHA256: &str = "sha256:";

/// The 32 bytes of an observation `sha256:` + 64 lowercase hex digits; `None` for any other
/// text.
pub fn observation_bytes(observation: &str) -> Option<[u8; 32]> {
    let hex = observation.strip_prefix(SHA256)?.as_bytes();
    if hex.len() != 64 {
        return None;
    }
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; 32];
    for (byte, pair) in out.iter_mut().zip(hex.chunks_exact(2)) {
        *byte = (digit(pair[0])? << 4) | digit(pair[1])?;
    }
    Some(out)
}

/// The observation text of 32 bytes: `sha256:` and their lowercase hex.
pub fn observation_text(bytes: &[u8; 32]) -> String {
    let mut text = String::with_capacity(SHA256.len() + 64);
    text.push_str(SHA256);
    for b in bytes {
        text.push(char::from(b"0123456789abcdef"[usize::from(b >> 4)]));
        text.push(char::from(b"0123456789abcdef"[usize::from(b & 15)]));
    }
    text
}

impl SealedTarget {
    /// The bytes a sealer seals: a kind byte, then the fields in order, each text with its
    /// length before it (one byte for ids, two for the tool, the remote binding and the
    /// project). `None` when a field is over its length.
    pub fn encode(&self) -> Option<Vec<u8>> {
        let mut out = Vec::with_capacity(128);
        match self {
            SealedTarget::Local {
                runner,
                runner_id,
                plugin,
                instance,
                tool,
                observation,
                project,
            } => {
                out.push(LOCAL);
                short(&mut out, runner.as_bytes())?;
                out.extend_from_slice(&runner_id.to_be_bytes());
                short(&mut out, plugin.as_bytes())?;
                out.extend_from_slice(&instance.to_be_bytes());
                long(&mut out, tool.as_bytes())?;
                out.extend_from_slice(observation);
                long(&mut out, project.as_deref().unwrap_or_default())?;
            }
            SealedTarget::Remote {
                runner,
                instance,
                binding,
                plugin,
                tool,
                observation,
                project,
            } => {
                out.push(REMOTE);
                short(&mut out, runner.as_bytes())?;
                short(&mut out, instance.as_deref().unwrap_or_default().as_bytes())?;
                long(&mut out, binding.as_bytes())?;
                short(&mut out, plugin.as_bytes())?;
                long(&mut out, tool.as_bytes())?;
                out.extend_from_slice(observation);
                long(&mut out, project.as_deref().unwrap_or_default())?;
            }
        }
        Some(out)
    }

    /// Reads what [`SealedTarget::encode`] wrote: every field present, every text UTF-8 and
    /// not empty (but an absent instance or project), nothing after the last. `None` for
    /// anything else.
    pub fn decode(bytes: &[u8]) -> Option<SealedTarget> {
        let mut r = Reader(bytes);
        let target = match r.byte()? {
            LOCAL => SealedTarget::Local {
                runner: r.text(1)?,
                runner_id: r.u64()?,
                plugin: r.text(1)?,
                instance: r.u64()?,
                tool: r.text(2)?,
                observation: r.array()?,
                project: r.optional(2)?,
            },
            REMOTE => SealedTarget::Remote {
                runner: r.text(1)?,
                instance: r.optional(1)?.map(String::from_utf8).transpose().ok()?,
                binding: r.text(2)?,
                plugin: r.text(1)?,
                tool: r.text(2)?,
                observation: r.array()?,
                project: r.optional(2)?,
            },
            _ => return None,
        };
        r.0.is_empty().then_some(target)
    }
}

/// Appends `bytes` after a one-byte length.
fn short(out: &mut Vec<u8>, bytes: &[u8]) -> Option<()> {
    out.push(u8::try_from(bytes.len()).ok()?);
    out.extend_from_slice(bytes);
    Some(())
}

/// Appends `bytes` after a two-byte length (big-endian).
fn long(out: &mut Vec<u8>, bytes: &[u8]) -> Option<()> {
    out.extend_from_slice(&u16::try_from(bytes.len()).ok()?.to_be_bytes());
    out.extend_from_slice(bytes);
    Some(())
}

/// Reads the fields of [`SealedTarget::decode`] off the front of a slice.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    fn byte(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_be_bytes(self.take(8)?.try_into().ok()?))
    }

    fn array(&mut self) -> Option<[u8; 32]> {
        self.take(32)?.try_into().ok()
    }

    /// Bytes after a length of `width` bytes (1 or 2); empty is `None`.
    fn optional(&mut self, width: usize) -> Option<Option<Vec<u8>>> {
        let len = match width {
            1 => usize::from(self.byte()?),
            _ => usize::from(u16::from_be_bytes(self.take(2)?.try_into().ok()?)),
        };
        let bytes = self.take(len)?;
        Some((!bytes.is_empty()).then(|| bytes.to_vec()))
    }

    /// A text that is not empty, after a length of `width` bytes.
    fn text(&mut self, width: usize) -> Option<String> {
        String::from_utf8(self.optional(width)??).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote() -> SealedTarget {
        SealedTarget::Remote {
            runner: "edge-1".into(),
            instance: Some("AAAAAAAAAAAAAAAAAAAAAA".into()),
            binding: "wc_pbind_xyz".into(),
            plugin: "fx".into(),
            tool: "echo".into(),
            observation: [7; 32],
            project: None,
        }
    }

    fn local() -> SealedTarget {
        SealedTarget::Local {
            runner: "local".into(),
            runner_id: 3,
            plugin: "fx".into(),
            instance: u64::MAX,
            tool: "ü".into(),
            observation: [0xab; 32],
            project: Some(vec![1, 2]),
        }
    }

    #[test]
    fn targets_round_trip_and_every_cut_or_extra_byte_is_refused() {
        let without_instance = match remote() {
            SealedTarget::Remote { .. } => SealedTarget::Remote {
                runner: "r".into(),
                instance: None,
                binding: "b".into(),
                plugin: "p".into(),
                tool: "t".into(),
                observation: [0; 32],
                project: None,
            },
            other => other,
        };
        for target in [remote(), local(), without_instance] {
            let bytes = target.encode().unwrap();
            assert_eq!(SealedTarget::decode(&bytes), Some(target.clone()));
            for cut in 0..bytes.len() {
                assert_eq!(SealedTarget::decode(&bytes[..cut]), None, "cut {cut}");
            }
            let mut longer = bytes.clone();
            longer.push(0);
            assert_eq!(SealedTarget::decode(&longer), None);
        }
        assert_eq!(SealedTarget::decode(&[3]), None);
    }

    #[test]
    fn empty_names_and_over_long_fields_are_refused() {
        let mut bytes = remote().encode().unwrap();
        // The runner id's length set to zero: an empty text.
        bytes[1] = 0;
        assert_eq!(SealedTarget::decode(&bytes), None);
        let long = SealedTarget::Remote {
            runner: "r".repeat(256),
            instance: None,
            binding: "b".into(),
            plugin: "p".into(),
            tool: "t".into(),
            observation: [0; 32],
            project: None,
        };
        assert_eq!(long.encode(), None);
    }

    #[test]
    fn observations_convert_both_ways_and_only_the_canonical_text_converts() {
        let text = observation_text(&[0x0f; 32]);
        assert_eq!(text, format!("sha256:{}", "0f".repeat(32)));
        assert_eq!(observation_bytes(&text), Some([0x0f; 32]));
        for bad in [
            "sha256:".to_string(),
            format!("sha256:{}", "0F".repeat(32)),
            format!("sha256:{}", "0f".repeat(31)),
            format!("md5:{}", "0f".repeat(32)),
            format!("sha256:{}g", "0f".repeat(31) + "0"),
        ] {
            assert_eq!(observation_bytes(&bad), None, "{bad}");
        }
    }
}
