//! Framing benches (docs/PERFORMANCE.md): request encoding, line decoding, envelope decoding and
//! the JSON bounds walk, each reported as bytes per second of the protocol line involved.
//!
//! Run with `cargo bench --bench frame`.

use std::io::{BufReader, Cursor};
use std::time::Duration;

use criterion::{black_box, criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use serde_json::{json, Map, Value};
use webcodex_plugin_host::{
    __private::frame::check_json_bounds, __private::frame::check_json_bounds_sized,
    __private::frame::decode_response, __private::frame::validate_raw,
    __private::frame::LineReader, __private::frame::ReadFault, __private::frame::RequestEncoder,
    __private::frame::MAX_LINE_BYTES, __private::frame::MAX_NODES,
};

/// Headroom left under `MAX_LINE_BYTES` for the id to grow while the encode bench runs.
const ID_HEADROOM: usize = 16;

/// The provider's stdout buffer (`provider::io::STDOUT_BUFFER`): lines longer than this are
/// assembled from several `fill_buf` chunks.
const PIPE_CHUNK: usize = 64 * 1024;

/// Largest serialized tools/call result (docs/PROTOCOL.md §3, bounds).
const MAX_RESULT_BYTES: usize = 512 * 1024;

/// `{"text":"x…"}` of exactly `len` serialized bytes.
fn arguments_of(len: usize) -> Value {
    let overhead = serde_json::to_vec(&json!({"text": ""}))
        .expect("serialize")
        .len();
    json!({ "text": "x".repeat(len - overhead) })
}

/// `{"text":"x…"}` whose tools/call frame (`echo`, id 1, without newline) is `line_len` bytes.
fn arguments_for_line(line_len: usize) -> Value {
    let mut out = Vec::new();
    RequestEncoder::new().tools_call("echo", &json!({"text": ""}), &mut out);
    let overhead = out.len() - 1;
    json!({ "text": "x".repeat(line_len - overhead) })
}

/// An echo-shaped tools/call response line (without newline) of exactly `line_len` bytes.
fn response_line(line_len: usize) -> Vec<u8> {
    let line = |text: &str| {
        let v = json!({"jsonrpc": "2.0", "id": 3,
            "result": {"content": [{"type": "text", "text": text}], "isError": false}});
        serde_json::to_vec(&v).expect("serialize response")
    };
    let overhead = line("").len();
    let out = line(&"x".repeat(line_len - overhead));
    assert_eq!(out.len(), line_len);
    out
}

fn encode(c: &mut Criterion) {
    let mut group = c.benchmark_group("frame/encode_tools_call");
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(40);
    let cases = [
        ("args_100B", arguments_of(100)),
        ("args_10KiB", arguments_of(10 * 1024)),
        (
            "line_1MiB_minus_16B",
            arguments_for_line(MAX_LINE_BYTES - ID_HEADROOM),
        ),
    ];
    for (label, arguments) in cases {
        let mut encoder = RequestEncoder::new();
        let mut out = Vec::new();
        encoder.tools_call("echo", &arguments, &mut out);
        assert!(out.len() <= MAX_LINE_BYTES + 1 - ID_HEADROOM);
        group.throughput(Throughput::Bytes(out.len() as u64));
        group.bench_function(label, |b| {
            b.iter(|| encoder.tools_call("echo", black_box(&arguments), &mut out))
        });
    }
    group.finish();
}

fn decode(c: &mut Criterion) {
    let mut group = c.benchmark_group("frame/decode_read_value");
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(40);
    for (label, line_len) in [
        ("line_100B", 100),
        ("line_10KiB", 10 * 1024),
        ("line_1MiB", MAX_LINE_BYTES),
    ] {
        let mut data = response_line(line_len);
        data.push(b'\n');
        group.throughput(Throughput::Bytes(data.len() as u64));
        // The whole line is in one chunk: parsed in place.
        group.bench_function(format!("cursor/{label}"), |b| {
            b.iter(|| {
                let mut reader = LineReader::new(Cursor::new(black_box(&data[..])));
                reader.read_line_with(parse_value).expect("valid line")
            })
        });
        if line_len > PIPE_CHUNK {
            // Arrives in 64 KiB chunks like the provider's pipe: assembled, then parsed.
            group.bench_function(format!("chunked_64KiB/{label}"), |b| {
                b.iter_batched(
                    || {
                        LineReader::new(BufReader::with_capacity(
                            PIPE_CHUNK,
                            Cursor::new(&data[..]),
                        ))
                    },
                    |mut reader| reader.read_line_with(parse_value).expect("valid line"),
                    BatchSize::PerIteration,
                )
            });
        }
    }
    group.finish();
}

/// A line's text parsed as one JSON value (the line checks are the reader's).
fn parse_value(text: &str) -> Result<Value, ReadFault> {
    serde_json::from_str(text).map_err(|_| ReadFault::Malformed)
}

/// A response line decoded into its typed envelope and checked, as the host reads an answer it
/// cannot read on the fast path.
fn envelope(c: &mut Criterion) {
    let mut group = c.benchmark_group("frame/decode_response");
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(40);
    let cases = [
        (
            "echo_result",
            json!({"jsonrpc": "2.0", "id": 3, "result": {
                "content": [{"type": "text", "text": "hello"}],
                "structuredContent": {"text": "hello"}, "isError": false}}),
        ),
        (
            "rpc_error",
            json!({"jsonrpc": "2.0", "id": 3,
                "error": {"code": -32602, "message": "unknown tool", "data": {"x": 1}}}),
        ),
    ];
    for (name, response) in cases {
        let line = serde_json::to_vec(&response).expect("serialize");
        group.throughput(Throughput::Bytes(line.len() as u64));
        group.bench_function(name, |b| {
            b.iter(|| {
                let raw = decode_response(black_box(&line)).expect("one JSON value");
                validate_raw(raw, 3).expect("well-formed envelope")
            })
        });
    }
    group.finish();
}

/// 4096 nodes: a root object with 4095 keyed members (every key scanned for control
/// characters), alternating short strings, numbers and booleans.
fn worst_case_bounds_value() -> Value {
    let mut map = Map::new();
    for i in 0..MAX_NODES - 1 {
        let v = match i % 3 {
            0 => json!("value"),
            1 => json!(i),
            _ => json!(true),
        };
        map.insert(format!("property_{i:04}"), v);
    }
    Value::Object(map)
}

fn bounds(c: &mut Criterion) {
    let mut group = c.benchmark_group("frame/check_json_bounds");
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(40);
    let cases = [
        (
            "typical_result",
            json!({"content": [{"type": "text", "text": "hello"}],
                "structuredContent": {"text": "hello"}, "isError": false}),
        ),
        ("worst_4096_nodes", worst_case_bounds_value()),
    ];
    for (name, value) in cases {
        assert_eq!(check_json_bounds(&value), Ok(()), "{name} is within bounds");
        let len = serde_json::to_vec(&value).expect("serialize").len();
        group.throughput(Throughput::Bytes(len as u64));
        group.bench_function(name, |b| b.iter(|| check_json_bounds(black_box(&value))));
        // The hot-path variant: bounds and compact serialized size in one walk (the result
        // limit, 512 KiB).
        assert_eq!(check_json_bounds_sized(&value, MAX_RESULT_BYTES), Ok(len));
        group.bench_function(format!("sized_512KiB/{name}"), |b| {
            b.iter(|| check_json_bounds_sized(black_box(&value), MAX_RESULT_BYTES))
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default();
    targets = encode, decode, envelope, bounds
}
criterion_main!(benches);
