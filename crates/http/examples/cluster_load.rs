//! Closed-loop load on a front (docs/PERFORMANCE.md, cluster mode): C client threads, each
//! with its own keep-alive connection and its own provider (a provider serves one call at a
//! time), calling `echo` as fast as the answers come for D seconds. Run by
//! `scripts/perf-cluster.py`:
//!
//!     cluster_load URL TOKEN SECONDS RUNNER:PLUGIN...
//!
//! One client per RUNNER:PLUGIN. Each describes its tool once (through the same URL: behind a
//! balancer, on any replica) and calls the binding. Prints one JSON line: calls, failures,
//! calls per second, and each failure code seen.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use webcodex_plugin_http::{ClientOptions, HttpClient};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 4 {
        eprintln!("usage: cluster_load URL TOKEN SECONDS RUNNER:PLUGIN...");
        std::process::exit(2);
    }
    let (url, token) = (args[0].as_str(), args[1].as_str());
    let seconds: f64 = args[2].parse().expect("SECONDS");
    let lanes: Vec<(&str, &str)> = args[3..]
        .iter()
        .map(|l| l.split_once(':').expect("RUNNER:PLUGIN"))
        .collect();
    let start = AtomicBool::new(false);
    let results: Vec<(usize, BTreeMap<String, usize>, f64)> = std::thread::scope(|scope| {
        let clients: Vec<_> = lanes
            .iter()
            .map(|(runner, plugin)| {
                let start = &start;
                scope.spawn(move || {
                    let client =
                        HttpClient::new(url, token, ClientOptions::default()).expect("a client");
                    let described = client
                        .plugin_tool(&json!({"action": "describe", "runner": runner,
                            "plugin": plugin, "tool": "echo"}))
                        .expect("describe");
                    let binding = described.to_json()["binding"].clone();
                    let params = json!({"action": "call", "binding": binding,
                        "arguments": {"text": "hello"}});
                    while !start.load(Ordering::Acquire) {
                        std::thread::yield_now();
                    }
                    let began = Instant::now();
                    let until = began + Duration::from_secs_f64(seconds);
                    let (mut ok, mut failed) = (0usize, BTreeMap::new());
                    while Instant::now() < until {
                        match client.plugin_tool(&params) {
                            Ok(out) if out.is_success() => ok += 1,
                            Ok(out) => {
                                let code = out.to_json()["error"]["code"]
                                    .as_str()
                                    .unwrap_or("?")
                                    .to_string();
                                *failed.entry(code).or_insert(0) += 1;
                            }
                            Err(e) => *failed.entry(format!("client: {e}")).or_insert(0) += 1,
                        }
                    }
                    (ok, failed, began.elapsed().as_secs_f64())
                })
            })
            .collect();
        start.store(true, Ordering::Release);
        clients.into_iter().map(|c| c.join().unwrap()).collect()
    });
    let calls: usize = results.iter().map(|r| r.0).sum();
    let mut failures = BTreeMap::new();
    for (_, failed, _) in &results {
        for (code, n) in failed {
            *failures.entry(code.clone()).or_insert(0) += n;
        }
    }
    let elapsed = results.iter().map(|r| r.2).fold(0.0, f64::max);
    println!(
        "{}",
        json!({
            "clients": lanes.len(),
            "seconds": elapsed,
            "calls": calls,
            "calls_per_s": (calls as f64 / elapsed).round(),
            "failures": failures,
        })
    );
}
