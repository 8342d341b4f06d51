use serde_json::json;

use super::*;

/// Validates the envelope of a response to the request with id `expected_id`.
///
/// Checks, in order: an object with `"jsonrpc":"2.0"` and no `method` (else
/// [`EnvelopeFault::Protocol`]); an `id` that is a non-negative integer (else
/// [`EnvelopeFault::IdInvalid`]) equal to `expected_id` (below: [`EnvelopeFault::DuplicateId`],
/// above: [`EnvelopeFault::UnknownId`]); exactly one of `result`/`error`, where `error` is an
/// object with an integer `code` and a `message` of 1..=512 bytes (else
/// [`EnvelopeFault::Protocol`]). Other envelope keys, and extra keys inside `error`, are ignored.
/// The result is moved out of `message`, not cloned.
///
/// The oracle of the typed path, which the host decodes with: [`decode_response`] and
/// [`validate_raw`].
pub(crate) fn validate_response(
    message: Value,
    expected_id: u64,
) -> Result<Envelope, EnvelopeFault> {
    let Value::Object(mut map) = message else {
        return Err(EnvelopeFault::Protocol);
    };
    if map.get("jsonrpc").and_then(Value::as_str) != Some("2.0") || map.contains_key("method") {
        return Err(EnvelopeFault::Protocol);
    }
    // `as_u64` is None for negatives and for floats, even integral ones like `1.0`.
    let id = match map.get("id") {
        Some(Value::Number(n)) => n.as_u64().ok_or(EnvelopeFault::IdInvalid)?,
        _ => return Err(EnvelopeFault::IdInvalid),
    };
    if id < expected_id {
        return Err(EnvelopeFault::DuplicateId);
    }
    if id > expected_id {
        return Err(EnvelopeFault::UnknownId);
    }
    match (map.remove("result"), map.remove("error")) {
        (Some(result), None) => Ok(Envelope::Result(result)),
        (None, Some(Value::Object(error))) => rpc_error(error),
        _ => Err(EnvelopeFault::Protocol),
    }
}

/// Validates `v` with the `Value` path, and checks that the typed path gives the same
/// verdict for its serialized line.
fn check(v: Value) -> Result<Envelope, EnvelopeFault> {
    let line = serde_json::to_string(&v).unwrap();
    let typed = decode_response(line.as_bytes()).map(|raw| validate_raw(raw, 5));
    let verdict = validate_response(v, 5);
    assert_eq!(
        typed.ok(),
        Some(verdict.clone()),
        "typed path differs on {line}"
    );
    verdict
}

/// What one path makes of one line: a read fault's code, or the envelope verdict.
type Outcome = Result<Result<Envelope, EnvelopeFault>, ErrorCode>;

/// The reference: the line checks and `Value` parse of the reader, then `validate_response`.
fn value_path(line: &[u8], expected_id: u64) -> Outcome {
    let mut data = line.to_vec();
    data.push(b'\n');
    let value = crate::frame::LineReader::new(&data[..])
        .read_value()
        .map_err(|fault| fault.code())?;
    Ok(validate_response(value, expected_id))
}

/// The typed path as the reader thread and the coordinator run it.
fn typed_path(line: &[u8], expected_id: u64) -> Outcome {
    let mut data = line.to_vec();
    data.push(b'\n');
    let raw = crate::frame::LineReader::new(&data[..])
        .read_response()
        .map_err(|fault| fault.code())?;
    Ok(validate_raw(raw, expected_id))
}

/// Runs both paths on `line` for ids around 5 and at the ends; they must agree. Returns
/// the verdict for id 5.
fn same_on_both_paths(line: &str) -> Outcome {
    for expected in [0, 1, 4, 5, 6, u64::MAX - 1, u64::MAX] {
        let reference = value_path(line.as_bytes(), expected);
        assert_eq!(
            typed_path(line.as_bytes(), expected),
            reference,
            "typed path differs on {line:?} (expected id {expected})"
        );
        let direct = decode_response(line.as_bytes())
            .map(|raw| validate_raw(raw, expected))
            .map_err(|fault| fault.code());
        assert_eq!(direct, reference, "decode_response differs on {line:?}");
    }
    value_path(line.as_bytes(), 5)
}

fn error_with(error: Value) -> Result<Envelope, EnvelopeFault> {
    check(json!({"jsonrpc": "2.0", "id": 5, "error": error}))
}

fn id_fault(id: Value) -> Result<Envelope, EnvelopeFault> {
    check(json!({"jsonrpc": "2.0", "id": id, "result": {}}))
}

#[test]
fn result_is_accepted() {
    let env = check(json!({"jsonrpc": "2.0", "id": 5, "result": {"x": [1]}}));
    assert_eq!(env, Ok(Envelope::Result(json!({"x": [1]}))));
}

#[test]
fn null_result_is_a_result() {
    let env = check(json!({"jsonrpc": "2.0", "id": 5, "result": null}));
    assert_eq!(env, Ok(Envelope::Result(Value::Null)));
}

#[test]
fn extra_envelope_keys_are_ignored() {
    let env = check(json!({"jsonrpc": "2.0", "id": 5, "result": 1, "extra": true}));
    assert_eq!(env, Ok(Envelope::Result(json!(1))));
}

#[test]
fn non_object_is_protocol_error() {
    assert_eq!(check(json!([1, 2])), Err(EnvelopeFault::Protocol));
    assert_eq!(check(json!("x")), Err(EnvelopeFault::Protocol));
}

#[test]
fn missing_jsonrpc_is_protocol_error() {
    assert_eq!(
        check(json!({"id": 5, "result": 1})),
        Err(EnvelopeFault::Protocol)
    );
}

#[test]
fn wrong_jsonrpc_version_is_protocol_error() {
    let env = check(json!({"jsonrpc": "1.0", "id": 5, "result": 1}));
    assert_eq!(env, Err(EnvelopeFault::Protocol));
    let env = check(json!({"jsonrpc": 2.0, "id": 5, "result": 1}));
    assert_eq!(env, Err(EnvelopeFault::Protocol));
}

#[test]
fn method_key_is_protocol_error() {
    let env = check(json!({"jsonrpc": "2.0", "id": 5, "method": "x", "result": 1}));
    assert_eq!(env, Err(EnvelopeFault::Protocol));
}

#[test]
fn protocol_checks_come_before_id_checks() {
    let env = check(json!({"jsonrpc": "2.0", "id": "bad", "method": "x"}));
    assert_eq!(env, Err(EnvelopeFault::Protocol));
}

#[test]
fn missing_id_is_invalid() {
    assert_eq!(
        check(json!({"jsonrpc": "2.0", "result": 1})),
        Err(EnvelopeFault::IdInvalid)
    );
}

#[test]
fn null_id_is_invalid() {
    assert_eq!(id_fault(Value::Null), Err(EnvelopeFault::IdInvalid));
}

#[test]
fn string_id_is_invalid() {
    assert_eq!(id_fault(json!("5")), Err(EnvelopeFault::IdInvalid));
}

#[test]
fn negative_id_is_invalid() {
    assert_eq!(id_fault(json!(-1)), Err(EnvelopeFault::IdInvalid));
}

#[test]
fn float_id_is_invalid() {
    let v: Value = serde_json::from_str(r#"{"jsonrpc":"2.0","id":5.0,"result":1}"#).unwrap();
    assert_eq!(check(v), Err(EnvelopeFault::IdInvalid));
}

#[test]
fn id_below_expected_is_duplicate() {
    assert_eq!(id_fault(json!(4)), Err(EnvelopeFault::DuplicateId));
}

#[test]
fn id_above_expected_is_unknown() {
    assert_eq!(id_fault(json!(6)), Err(EnvelopeFault::UnknownId));
}

#[test]
fn id_checks_come_before_result_checks() {
    let env = check(json!({"jsonrpc": "2.0", "id": 6}));
    assert_eq!(env, Err(EnvelopeFault::UnknownId));
}

#[test]
fn neither_result_nor_error_is_protocol_error() {
    assert_eq!(
        check(json!({"jsonrpc": "2.0", "id": 5})),
        Err(EnvelopeFault::Protocol)
    );
}

#[test]
fn both_result_and_error_is_protocol_error() {
    let env = check(json!({
        "jsonrpc": "2.0", "id": 5, "result": 1, "error": {"code": 1, "message": "m"}
    }));
    assert_eq!(env, Err(EnvelopeFault::Protocol));
}

#[test]
fn well_formed_error_is_rpc_error() {
    let env = error_with(json!({"code": -32000, "message": "boom"}));
    let expected = Envelope::Error {
        code: -32000,
        message: "boom".into(),
    };
    assert_eq!(env, Ok(expected));
}

#[test]
fn error_data_and_extra_keys_are_ignored() {
    let env = error_with(json!({"code": 7, "message": "m", "data": [1], "other": {}}));
    let expected = Envelope::Error {
        code: 7,
        message: "m".into(),
    };
    assert_eq!(env, Ok(expected));
}

#[test]
fn error_that_is_not_an_object_is_protocol_error() {
    assert_eq!(error_with(json!("boom")), Err(EnvelopeFault::Protocol));
    assert_eq!(error_with(Value::Null), Err(EnvelopeFault::Protocol));
}

#[test]
fn error_without_code_is_protocol_error() {
    assert_eq!(
        error_with(json!({"message": "m"})),
        Err(EnvelopeFault::Protocol)
    );
}

#[test]
fn non_integer_error_code_is_protocol_error() {
    assert_eq!(
        error_with(json!({"code": 1.5, "message": "m"})),
        Err(EnvelopeFault::Protocol)
    );
    assert_eq!(
        error_with(json!({"code": "1", "message": "m"})),
        Err(EnvelopeFault::Protocol)
    );
}

#[test]
fn error_code_beyond_i64_is_protocol_error() {
    let env = error_with(json!({"code": u64::MAX, "message": "m"}));
    assert_eq!(env, Err(EnvelopeFault::Protocol));
}

#[test]
fn error_without_message_is_protocol_error() {
    assert_eq!(error_with(json!({"code": 1})), Err(EnvelopeFault::Protocol));
}

#[test]
fn non_string_error_message_is_protocol_error() {
    assert_eq!(
        error_with(json!({"code": 1, "message": 2})),
        Err(EnvelopeFault::Protocol)
    );
}

#[test]
fn empty_error_message_is_protocol_error() {
    assert_eq!(
        error_with(json!({"code": 1, "message": ""})),
        Err(EnvelopeFault::Protocol)
    );
}

#[test]
fn error_message_of_512_bytes_is_accepted() {
    let message = "é".repeat(256);
    let env = error_with(json!({"code": 1, "message": message}));
    assert_eq!(env, Ok(Envelope::Error { code: 1, message }));
}

#[test]
fn error_message_of_513_bytes_is_protocol_error() {
    let env = error_with(json!({"code": 1, "message": "m".repeat(513)}));
    assert_eq!(env, Err(EnvelopeFault::Protocol));
}

#[test]
fn faults_map_to_stable_codes() {
    assert_eq!(EnvelopeFault::Protocol.code(), ErrorCode::ProtocolError);
    assert_eq!(
        EnvelopeFault::IdInvalid.code(),
        ErrorCode::ResponseIdInvalid
    );
    assert_eq!(
        EnvelopeFault::DuplicateId.code(),
        ErrorCode::DuplicateResponseId
    );
    assert_eq!(
        EnvelopeFault::UnknownId.code(),
        ErrorCode::UnknownResponseId
    );
}

#[test]
fn typed_path_matches_value_path_on_envelope_shapes() {
    let lines = [
        // Results.
        r#"{"jsonrpc":"2.0","id":5,"result":{"x":[1]}}"#,
        r#"{"jsonrpc":"2.0","id":5,"result":null}"#,
        r#"{"jsonrpc":"2.0","id":5,"result":[]}"#,
        r#"{"jsonrpc":"2.0","id":5,"result":"s"}"#,
        r#"{"result":{"content":[{"text":"hello","type":"text"}],"isError":false},"id":5,"jsonrpc":"2.0"}"#,
        r#"{"id":5,"jsonrpc":"2.0","result":{"content":[{"text":"hello","type":"text"}],"isError":false}}"#,
        r#"{"jsonrpc":"2.0","id":5,"result":1,"extra":true}"#,
        r#"{"jsonrpc":"2.0","id":5,"result":1,"extra":{"a":[1,{"b":null}],"c":"2.0"}}"#,
        r#"  {"jsonrpc" : "2.0" , "id" : 5 , "result" : 1 }  "#,
        // Not objects.
        "[1,2]",
        "[]",
        r#"[{"jsonrpc":"2.0","id":5,"result":1}]"#,
        r#""x""#,
        r#""2.0""#,
        "5",
        "-5",
        "5.5",
        "true",
        "false",
        "null",
        "{}",
        // jsonrpc and method.
        r#"{"id":5,"result":1}"#,
        r#"{"jsonrpc":"1.0","id":5,"result":1}"#,
        r#"{"jsonrpc":2.0,"id":5,"result":1}"#,
        r#"{"jsonrpc":2,"id":5,"result":1}"#,
        r#"{"jsonrpc":null,"id":5,"result":1}"#,
        r#"{"jsonrpc":["2.0"],"id":5,"result":1}"#,
        r#"{"jsonrpc":{"2.0":"2.0"},"id":5,"result":1}"#,
        r#"{"jsonrpc":"2.0 ","id":5,"result":1}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"x","result":1}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":null,"result":1}"#,
        r#"{"jsonrpc":"2.0","id":"bad","method":"x"}"#,
        r#"{"jsonrpc":"2.0","id":5,"Method":"x","result":1}"#,
        // Ids.
        r#"{"jsonrpc":"2.0","result":1}"#,
        r#"{"jsonrpc":"2.0","id":null,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":"5","result":{}}"#,
        r#"{"jsonrpc":"2.0","id":-1,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":-0,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":0,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":5.0,"result":1}"#,
        r#"{"jsonrpc":"2.0","id":5e0,"result":1}"#,
        r#"{"jsonrpc":"2.0","id":true,"result":1}"#,
        r#"{"jsonrpc":"2.0","id":[5],"result":1}"#,
        r#"{"jsonrpc":"2.0","id":{"id":5},"result":1}"#,
        r#"{"jsonrpc":"2.0","id":4,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":6,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":6}"#,
        r#"{"jsonrpc":"2.0","id":18446744073709551614,"result":1}"#,
        r#"{"jsonrpc":"2.0","id":18446744073709551615,"result":1}"#,
        r#"{"jsonrpc":"2.0","id":18446744073709551616,"result":1}"#,
        r#"{"jsonrpc":"2.0","id":-9223372036854775808,"result":1}"#,
        // Result and error.
        r#"{"jsonrpc":"2.0","id":5}"#,
        r#"{"jsonrpc":"2.0","id":5,"result":1,"error":{"code":1,"message":"m"}}"#,
        r#"{"jsonrpc":"2.0","id":5,"result":null,"error":null}"#,
        r#"{"jsonrpc":"2.0","id":5,"error":{"code":-32000,"message":"boom"}}"#,
        r#"{"jsonrpc":"2.0","id":5,"error":{"code":7,"message":"m","data":[1],"other":{}}}"#,
        r#"{"jsonrpc":"2.0","id":5,"error":"boom"}"#,
        r#"{"jsonrpc":"2.0","id":5,"error":null}"#,
        r#"{"jsonrpc":"2.0","id":5,"error":[]}"#,
        r#"{"jsonrpc":"2.0","id":5,"error":{"message":"m"}}"#,
        r#"{"jsonrpc":"2.0","id":5,"error":{"code":1.5,"message":"m"}}"#,
        r#"{"jsonrpc":"2.0","id":5,"error":{"code":"1","message":"m"}}"#,
        r#"{"jsonrpc":"2.0","id":5,"error":{"code":18446744073709551615,"message":"m"}}"#,
        r#"{"jsonrpc":"2.0","id":5,"error":{"code":-9223372036854775808,"message":"m"}}"#,
        r#"{"jsonrpc":"2.0","id":5,"error":{"code":1}}"#,
        r#"{"jsonrpc":"2.0","id":5,"error":{"code":1,"message":2}}"#,
        r#"{"jsonrpc":"2.0","id":5,"error":{"code":1,"message":""}}"#,
        r#"{"jsonrpc":"2.0","id":5,"error":{"code":1,"message":"a","message":"b"}}"#,
        r#"{"jsonrpc":"2.0","id":5,"error":{"code":1,"message":"a","code":"x"}}"#,
        // Duplicate keys: the last one wins.
        r#"{"jsonrpc":"2.0","id":5,"result":1,"result":2}"#,
        r#"{"jsonrpc":"2.0","id":5,"result":1,"result":null}"#,
        r#"{"jsonrpc":"1.0","jsonrpc":"2.0","id":5,"result":1}"#,
        r#"{"jsonrpc":"2.0","jsonrpc":"1.0","id":5,"result":1}"#,
        r#"{"jsonrpc":"2.0","id":5,"id":4,"result":1}"#,
        r#"{"jsonrpc":"2.0","id":4,"id":5,"result":1}"#,
        r#"{"jsonrpc":"2.0","id":5,"id":"x","result":1}"#,
        r#"{"jsonrpc":"2.0","id":"x","id":5,"result":1}"#,
        r#"{"jsonrpc":"2.0","id":5,"error":{"code":1,"message":"m"},"error":{"code":2,"message":"n"}}"#,
        r#"{"jsonrpc":"2.0","id":5,"error":{"code":1,"message":"m"},"error":"x"}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"x","method":"y","result":1}"#,
        // Escaped keys and values mean what they decode to.
        r#"{"json\u0072pc":"2.0","id":5,"result":1}"#,
        r#"{"jsonrpc":"2\u002e0","\u0069d":5,"res\u0075lt":1}"#,
        r#"{"jsonrpc":"2.0","id":5,"\u006dethod":1,"result":1}"#,
        r#"{"jsonrpc":"2.0","id":5,"error":{"c\u006fde":1,"message":"\u00e9"}}"#,
        r#"{"jsonrpc":"2.0","id":5,"result":"\ud83d\ude00"}"#,
        r#"{"jsonrpc":"2.0","id":5,"result":1,"x\u0000":"\u0000"}"#,
        // JSON that no `Value` accepts, also in ignored members.
        r#"{"jsonrpc":"2.0","id":5,"result":1,"x":1e400}"#,
        r#"{"jsonrpc":"2.0","id":5,"result":1,"x":-1e400}"#,
        r#"{"jsonrpc":"2.0","id":5,"result":1,"x":[1e999]}"#,
        r#"{"jsonrpc":"2.0","id":1e400,"result":1}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":1e400,"result":1}"#,
        r#"{"jsonrpc":"2.0","id":5,"result":1,"x":"\ud800"}"#,
        r#"{"jsonrpc":"2.0","id":5,"result":1,"x":"\udc00"}"#,
        r#"{"jsonrpc":"2.0","id":5,"result":1,"\ud800":1}"#,
        r#"{"jsonrpc":"2.0","id":5,"result":1,"x":{"\ud800":1}}"#,
        r#"{"jsonrpc":"\ud800","id":5,"result":1}"#,
        r#"{"jsonrpc":"2.0","id":5,"result":1,"x":"\x"}"#,
        r#"{"jsonrpc":"2.0","id":5,"result":1,"x":"\u12"}"#,
        "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":1,\"x\":\"a\tb\"}",
        r#"{"jsonrpc":"2.0","id":5,"result":1,"x":01}"#,
        r#"{"jsonrpc":"2.0","id":5,"result":1,"x":1.}"#,
        r#"{"jsonrpc":"2.0","id":5,"result":1,"x":.5}"#,
        r#"{"jsonrpc":"2.0","id":5,"result":1,"x":+1}"#,
        r#"{"jsonrpc":"2.0","id":5,"result":1,"x":NaN}"#,
        r#"{"jsonrpc":"2.0","id":5,"result":1,"x":tru}"#,
        r#"{"jsonrpc":"2.0","id":05,"result":1}"#,
        // Broken syntax.
        r#"{"jsonrpc":"2.0","id":5,"result":1"#,
        r#"{"jsonrpc":"2.0","id":5,"result":1,}"#,
        r#"{"jsonrpc":"2.0","id":5,"result":}"#,
        r#"{"jsonrpc":"2.0","id":5 "result":1}"#,
        r#"{"jsonrpc":"2.0","id":5,"result":[1,]}"#,
        r#"{"jsonrpc":"2.0","id":5,"result":1,"x":[1,}"#,
        r#"{"jsonrpc":"2.0","id":5,"result":1} x"#,
        r#"{"jsonrpc":"2.0","id":5,"result":1} {}"#,
        r#"{"jsonrpc":"2.0","id":5,"result":1}}"#,
        r#"{jsonrpc:"2.0","id":5,"result":1}"#,
        r#"{"a":1,"a"}"#,
        "[1,2",
        "[1 2]",
        "[1,2] 3",
        r#""x" "y""#,
        "nul",
        "{",
        "}",
        "   ",
    ];
    for line in lines {
        let _ = same_on_both_paths(line);
    }
}

#[test]
fn typed_path_keeps_the_verdicts() {
    let ok = same_on_both_paths(r#"{"jsonrpc":"2.0","id":5,"result":null}"#);
    assert_eq!(ok, Ok(Ok(Envelope::Result(Value::Null))));
    let last = same_on_both_paths(r#"{"jsonrpc":"2.0","id":5,"result":1,"result":null}"#);
    assert_eq!(last, Ok(Ok(Envelope::Result(Value::Null))));
    let last = same_on_both_paths(r#"{"jsonrpc":"2.0","id":4,"id":5,"result":[2]}"#);
    assert_eq!(last, Ok(Ok(Envelope::Result(json!([2])))));
    let err = same_on_both_paths(
        r#"{"jsonrpc":"2.0","id":5,"error":{"code":-1,"message":"a","message":"b"}}"#,
    );
    let expected = Envelope::Error {
        code: -1,
        message: "b".into(),
    };
    assert_eq!(err, Ok(Ok(expected)));
    // JSON that is no envelope is a protocol error, not malformed JSON.
    for line in ["[1,2]", "\"x\"", "7", "null", "{}"] {
        assert_eq!(same_on_both_paths(line), Ok(Err(EnvelopeFault::Protocol)));
    }
    for line in [
        r#"{"jsonrpc":"2.0","id":5,"result":1,"x":1e400}"#,
        r#"{"jsonrpc":"2.0","id":5,"result":1,"x":"\ud800"}"#,
        "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":1} x",
    ] {
        assert_eq!(same_on_both_paths(line), Err(ErrorCode::MalformedJson));
    }
}

#[test]
fn typed_path_keeps_the_nesting_limit() {
    for depth in [1, 100, 126, 127, 128, 129, 200] {
        let nested = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        let objects = format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth));
        for inner in [&nested, &objects] {
            for line in [
                format!(r#"{{"jsonrpc":"2.0","id":5,"result":{inner}}}"#),
                format!(r#"{{"jsonrpc":"2.0","id":5,"result":1,"x":{inner}}}"#),
                format!(r#"{{"jsonrpc":"2.0","id":5,"method":{inner},"result":1}}"#),
                format!(r#"{{"jsonrpc":{inner},"id":5,"result":1}}"#),
                format!(r#"{{"jsonrpc":"2.0","id":{inner},"result":1}}"#),
                format!(
                    r#"{{"jsonrpc":"2.0","id":5,"error":{{"code":1,"message":"m","data":{inner}}}}}"#
                ),
                inner.clone(),
            ] {
                let _ = same_on_both_paths(&line);
            }
        }
    }
    // The limit itself: serde_json's 127 levels, the envelope object included.
    let at = |depth: usize| {
        let inner = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        same_on_both_paths(&format!(
            r#"{{"jsonrpc":"2.0","id":5,"result":1,"x":{inner}}}"#
        ))
    };
    assert_eq!(at(126), Ok(Ok(Envelope::Result(json!(1)))));
    assert_eq!(at(127), Err(ErrorCode::MalformedJson));
}

#[test]
fn typed_path_keeps_the_line_faults() {
    let cases: [(&[u8], ErrorCode); 6] = [
        (b"", ErrorCode::MalformedJson),
        (b"\r", ErrorCode::MalformedJson),
        (b"   ", ErrorCode::MalformedJson),
        (
            b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":1}",
            ErrorCode::MalformedJson,
        ),
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":\"\xFF\"}",
            ErrorCode::MalformedJson,
        ),
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":5,\"x\":\"\xFF\",\"result\":1}",
            ErrorCode::MalformedJson,
        ),
    ];
    for (line, code) in cases {
        assert_eq!(value_path(line, 5), Err(code));
        assert_eq!(typed_path(line, 5), Err(code));
        assert_eq!(
            decode_response(line).map_err(|f| f.code()).err(),
            Some(code)
        );
    }
    // One `\r` is stripped; a second one is JSON whitespace.
    for crlf in [
        &b"{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":1}\r"[..],
        b"{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":1}\r\r",
    ] {
        assert_eq!(typed_path(crlf, 5), Ok(Ok(Envelope::Result(json!(1)))));
        assert_eq!(value_path(crlf, 5), typed_path(crlf, 5));
    }
    let mut long = b"{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":\"".to_vec();
    long.resize(crate::frame::MAX_LINE_BYTES - 2, b'a');
    long.extend_from_slice(b"\"}");
    assert_eq!(long.len(), crate::frame::MAX_LINE_BYTES);
    assert!(matches!(typed_path(&long, 5), Ok(Ok(Envelope::Result(_)))));
    long.insert(1, b' ');
    assert!(matches!(decode_response(&long), Err(ReadFault::TooLarge)));
    assert_eq!(typed_path(&long, 5), Err(ErrorCode::MessageTooLarge));
    assert_eq!(value_path(&long, 5), Err(ErrorCode::MessageTooLarge));
}

#[test]
fn raw_envelope_reports_every_fault_kind() {
    let raw = |line: &str| decode_response(line.as_bytes()).unwrap();
    let result = raw(r#"{"jsonrpc":"2.0","id":5,"result":{}}"#);
    assert_eq!(
        validate_raw(result.clone(), 6),
        Err(EnvelopeFault::DuplicateId)
    );
    assert_eq!(
        validate_raw(result.clone(), 4),
        Err(EnvelopeFault::UnknownId)
    );
    assert_eq!(validate_raw(result, 5), Ok(Envelope::Result(json!({}))));
    let bad_id = raw(r#"{"jsonrpc":"2.0","id":-5,"result":{}}"#);
    assert_eq!(validate_raw(bad_id, 5), Err(EnvelopeFault::IdInvalid));
    let no_body = raw(r#"{"jsonrpc":"2.0","id":5}"#);
    assert_eq!(
        validate_raw(no_body.clone(), 5),
        Err(EnvelopeFault::Protocol)
    );
    // The id comparison comes before the result/error checks.
    assert_eq!(validate_raw(no_body, 4), Err(EnvelopeFault::UnknownId));
}
