//! Sealed bindings (cluster mode): arbitrary text given to the opener as a binding, and
//! arbitrary bytes as a binding's contents.
//!
//! The input is opened as binding text with a fixed key (a box that opens is read as a
//! binding's target), sealed and opened again as contents (the round trip gives them back),
//! and read as a target (one that reads back encodes to the same bytes). Nothing panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use webcodex_plugin_http::__private::fuzz_sealed_binding;

fuzz_target!(|data: &[u8]| {
    fuzz_sealed_binding(data);
});
