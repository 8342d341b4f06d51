//! The frames of a runner link (`webcodex-runner-link-v1`): hello, welcome, requests and
//! replies, as a front and a runner read them.
//!
//! The input is one frame's text. No parser panics; whatever is accepted survives a round trip
//! through its encoder unchanged (a reply: payload only with `completed`, exactly one of
//! payload and error), and a call result the front reads fast (`parse_call_result`) is the
//! reply `parse_reply` reads.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use webcodex_plugin_host::ActionKind;
use webcodex_plugin_http::link::wire;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(hello) = wire::parse_hello(text) {
        assert!(wire::valid_instance(&hello.instance));
        let again = wire::parse_hello(&wire::encode_hello(&hello.instance, hello.name.as_deref()))
            .expect("an encoded hello parses");
        assert_eq!(again, hello);
    }
    if let Ok(runner) = wire::parse_welcome(text) {
        assert_eq!(
            wire::parse_welcome(&wire::welcome(&runner)).unwrap(),
            runner
        );
    }
    match wire::parse_request(text) {
        Ok(request) => {
            let kind = request
                .operation
                .carries(&request.params)
                .expect("checked on parse");
            let encoded = wire::encode_request(
                request.id,
                request.operation,
                &request.params,
                request.trace.as_ref(),
            );
            assert_eq!(wire::parse_request(&encoded).unwrap(), request);
            assert_eq!(kind.as_str(), request.params["action"].as_str().unwrap());
        }
        Err((Some(id), _)) => assert_eq!(wire::reply_id(text), Some(id)),
        Err((None, _)) => {}
    }
    // The front's fast reading of a call result agrees with the full one.
    if let Some((id, result)) = wire::parse_call_result(text) {
        let reply = wire::parse_reply(text).expect("a call result read fast is a reply");
        assert_eq!((reply.id, reply.kind), (id, Some(ActionKind::Call)));
        let output: Value = serde_json::from_str(result).expect("the result is JSON");
        assert_eq!(reply.output.to_json(), output);
    }
    if let Ok(reply) = wire::parse_reply(text) {
        assert_eq!(wire::reply_id(text), Some(reply.id));
        assert_eq!(reply.kind.is_some(), reply.output.is_success());
        if let Some(kind) = reply.kind {
            let again = wire::parse_reply(&wire::encode_reply(reply.id, kind, &reply.output))
                .expect("an encoded reply parses");
            assert_eq!(again, reply);
        }
    }
});
