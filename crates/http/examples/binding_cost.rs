//! What opening a binding costs: a stored binding looked up in a full binding store (512) beside
//! a sealed one opened (AES-256-GCM) and read back, what sealing one costs, and what refusing a
//! tampered, a foreign or an expired one costs (docs/PERFORMANCE.md,
//! cluster mode). Run by `scripts/perf-cluster.py` (µs per call, and instructions under
//! callgrind):
//!
//!     binding_cost stored|sealed|seal|tampered|foreign|expired N
//!
//! Prints one JSON line: the mode, N, nanoseconds per operation and the binding's length.

use std::hint::black_box;
use std::time::Instant;

use webcodex_plugin_host::{BindingStore, SealedTarget};
use webcodex_plugin_http::cluster::{ClusterKeys, KeySet, DEFAULT_BINDING_TTL};

/// What a stored remote binding keeps (about the size of the gateway's own entry).
#[allow(dead_code)]
struct Entry {
    runner: String,
    binding: String,
    instance: Option<String>,
    plugin: String,
    tool: String,
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_default();
    let n: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(100_000);
    let keys = ClusterKeys::new(
        KeySet::parse(
            "[[keys]]\nid = \"bench\"\nsecret = \"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\"\n",
        )
        .expect("the bench key"),
        Some(DEFAULT_BINDING_TTL),
    )
    .expect("randomness");
    // The runner's own binding is sealed too (a `connect` runner's): a box inside the box.
    let runner = ClusterKeys::ephemeral().expect("randomness");
    let inner = SealedTarget::Local {
        runner: "local".into(),
        runner_id: 1,
        plugin: "example".into(),
        instance: 7,
        tool: "echo".into(),
        observation: [0x5a; 32],
        project: None,
    };
    let inner = runner
        .seal_at(&inner.encode().unwrap(), 1_800_000_000)
        .unwrap();
    let target = SealedTarget::Remote {
        runner: "edge-1".into(),
        instance: Some("AAAAAAAAAAAAAAAAAAAAAA".into()),
        binding: inner.clone(),
        plugin: "example".into(),
        tool: "echo".into(),
        observation: [0x5a; 32],
        project: None,
    };
    let contents = target.encode().unwrap();
    let now = 1_800_000_000;
    let (elapsed, length) = match mode.as_str() {
        "stored" => {
            let store = BindingStore::<Entry>::default();
            let bindings: Vec<String> = (0..512)
                .map(|_| {
                    store
                        .insert(Entry {
                            runner: "edge-1".into(),
                            binding: inner.clone(),
                            instance: Some("AAAAAAAAAAAAAAAAAAAAAA".into()),
                            plugin: "example".into(),
                            tool: "echo".into(),
                        })
                        .unwrap()
                        .encode()
                })
                .collect();
            let started = Instant::now();
            for i in 0..n {
                let found = store.resolve(black_box(&bindings[i % 16]));
                black_box(found.is_some());
            }
            (started.elapsed(), bindings[0].len())
        }
        "sealed" => {
            let text = keys.seal_at(&contents, now).unwrap();
            let started = Instant::now();
            for _ in 0..n {
                let opened = keys.open_at(black_box(&text), now);
                let target = opened.and_then(|c| SealedTarget::decode(&c));
                black_box(target.is_some());
            }
            (started.elapsed(), text.len())
        }
        // A box that does not open: the opener takes the same steps for each (no timing says
        // which keys exist or what was wrong).
        "tampered" | "foreign" | "expired" => {
            let mut text = keys.seal_at(&contents, now).unwrap();
            let mut at = now;
            match mode.as_str() {
                "tampered" => {
                    let middle = text.len() / 2;
                    let flipped = if &text[middle..=middle] == "A" {
                        "B"
                    } else {
                        "A"
                    };
                    text.replace_range(middle..=middle, flipped);
                }
                "foreign" => {
                    let other = ClusterKeys::new(
                        KeySet::parse(
                            "[[keys]]\nid = \"elsewhere\"\n\
                             secret = \"HxwdHhscGRgXFhUUExIREA8ODQwLCgkIBwYFBAMCAQA=\"\n",
                        )
                        .expect("the other key"),
                        Some(DEFAULT_BINDING_TTL),
                    )
                    .expect("randomness");
                    text = other.seal_at(&contents, now).unwrap();
                }
                _ => at = now + DEFAULT_BINDING_TTL.as_secs() + 1,
            }
            let started = Instant::now();
            for _ in 0..n {
                let opened = keys.open_at(black_box(&text), at);
                assert!(black_box(opened).is_none());
            }
            (started.elapsed(), text.len())
        }
        "seal" => {
            let started = Instant::now();
            let mut length = 0;
            for _ in 0..n {
                let bytes = black_box(&target).encode().unwrap();
                let text = keys.seal_at(&bytes, now).unwrap();
                length = text.len();
                black_box(text);
            }
            (started.elapsed(), length)
        }
        _ => {
            eprintln!("usage: binding_cost stored|sealed|seal|tampered|foreign|expired N");
            std::process::exit(2);
        }
    };
    println!(
        "{{\"mode\":\"{mode}\",\"n\":{n},\"ns_per_op\":{:.1},\"binding_chars\":{length}}}",
        elapsed.as_nanos() as f64 / n as f64
    );
}
