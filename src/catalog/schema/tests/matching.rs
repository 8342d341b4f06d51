use super::*;

#[test]
fn integer_accepts_i64_and_u64() {
    let s = schema(prop(json!({"type": "integer"})));
    for v in [json!(0), json!(-1), json!(i64::MIN), json!(u64::MAX)] {
        assert!(s.check(&json!({ "p": v })).is_ok());
    }
}

#[test]
fn integer_rejects_floats_even_when_whole() {
    let s = schema(prop(json!({"type": "integer"})));
    for v in [json!(1.0), json!(1.5), json!("1")] {
        assert_eq!(
            mismatch(&s, json!({ "p": v })),
            ("/p".into(), "expected integer")
        );
    }
}

#[test]
fn number_accepts_integers_and_floats() {
    let s = schema(prop(json!({"type": "number"})));
    for v in [json!(1), json!(-1.5), json!(u64::MAX)] {
        assert!(s.check(&json!({ "p": v })).is_ok());
    }
    assert_eq!(
        mismatch(&s, json!({"p": "1"})),
        ("/p".into(), "expected number")
    );
}

#[test]
fn every_type_reports_what_it_expected() {
    let cases = [
        ("object", "expected object"),
        ("array", "expected array"),
        ("string", "expected string"),
        ("number", "expected number"),
        ("integer", "expected integer"),
        ("boolean", "expected boolean"),
        ("null", "expected null"),
    ];
    for (t, reason) in cases {
        let s = schema(prop(json!({ "type": t })));
        let wrong = if t == "null" {
            json!(false)
        } else {
            json!(null)
        };
        assert_eq!(mismatch(&s, json!({ "p": wrong })), ("/p".into(), reason));
    }
}

#[test]
fn boolean_and_null_match_their_values() {
    let s = schema(json!({"type": "object", "properties": {
            "b": {"type": "boolean"}, "n": {"type": "null"}}}));
    assert!(s.check(&json!({"b": false, "n": null})).is_ok());
}

#[test]
fn root_mismatch_has_empty_path() {
    let s = schema(json!({"type": "object"}));
    assert_eq!(mismatch(&s, json!([])), (String::new(), "expected object"));
}

#[test]
fn string_length_counts_unicode_scalars_not_bytes() {
    let s = schema(prop(
        json!({"type": "string", "minLength": 3, "maxLength": 3}),
    ));
    assert!(s.check(&json!({"p": "éé€"})).is_ok()); // 7 bytes, 3 chars
    assert_eq!(
        mismatch(&s, json!({"p": "éé"})),
        ("/p".into(), "string too short")
    );
}

#[test]
fn string_length_edges() {
    let s = schema(prop(
        json!({"type": "string", "minLength": 2, "maxLength": 4}),
    ));
    assert!(s.check(&json!({"p": "ab"})).is_ok());
    assert!(s.check(&json!({"p": "abcd"})).is_ok());
    assert_eq!(
        mismatch(&s, json!({"p": "a"})),
        ("/p".into(), "string too short")
    );
    assert_eq!(
        mismatch(&s, json!({"p": "abcde"})),
        ("/p".into(), "string too long")
    );
}

#[test]
fn missing_required_property_is_reported_at_its_path() {
    let s = schema(json!({"type": "object", "required": ["a"],
            "properties": {"a": {"type": "string"}}}));
    assert_eq!(
        mismatch(&s, json!({})),
        ("/a".into(), "missing required property")
    );
    assert!(s.check(&json!({"a": "x"})).is_ok());
}

#[test]
fn required_may_name_an_unlisted_property() {
    let s = schema(json!({"type": "object", "required": ["x"]}));
    assert!(s.check(&json!({"x": [1]})).is_ok());
    assert_eq!(
        mismatch(&s, json!({})),
        ("/x".into(), "missing required property")
    );
}

#[test]
fn unknown_properties_are_allowed_by_default() {
    let s = schema(json!({"type": "object", "properties": {"a": {"type": "string"}}}));
    assert!(s.check(&json!({"a": "x", "b": 1})).is_ok());
}

#[test]
fn unknown_properties_are_allowed_when_additional_properties_is_true() {
    let s = schema(json!({"type": "object", "additionalProperties": true}));
    assert!(s.check(&json!({"b": 1})).is_ok());
}

#[test]
fn unknown_property_is_rejected_at_the_object_path_when_additional_properties_is_false() {
    let s = schema(
        json!({"type": "object", "properties": {"o": {"type": "object",
            "properties": {"a": {"type": "string"}}, "additionalProperties": false}}}),
    );
    assert!(s.check(&json!({"o": {"a": "x"}})).is_ok());
    let m = s
        .check(&json!({"o": {"a": "x", "secret-key": 1}}))
        .unwrap_err();
    assert_eq!((m.path.as_str(), m.reason), ("/o", "unknown property"));
    assert!(!format!("{m:?}").contains("secret"));
}

#[test]
fn listed_properties_are_validated() {
    let s = schema(json!({"type": "object", "properties": {"a": {"type": "string"}}}));
    assert_eq!(
        mismatch(&s, json!({"a": 1})),
        ("/a".into(), "expected string")
    );
}

#[test]
fn const_requires_equal_value() {
    let s = schema(prop(json!({"type": "integer", "const": 1})));
    assert!(s.check(&json!({"p": 1})).is_ok());
    assert_eq!(
        mismatch(&s, json!({"p": 2})),
        ("/p".into(), "not equal to const")
    );
}

#[test]
fn const_distinguishes_1_from_1_point_0() {
    let s = schema(prop(json!({"type": "number", "const": 1})));
    assert_eq!(
        mismatch(&s, json!({"p": 1.0})),
        ("/p".into(), "not equal to const")
    );
}

#[test]
fn enum_requires_one_of_its_values() {
    let s = schema(prop(json!({"type": "string", "enum": ["a", "b"]})));
    assert!(s.check(&json!({"p": "b"})).is_ok());
    assert_eq!(
        mismatch(&s, json!({"p": "c"})),
        ("/p".into(), "not one of enum")
    );
}

#[test]
fn enum_compares_structured_values() {
    let s = schema(prop(json!({"type": "object", "enum": [{"a": [1]}]})));
    assert!(s.check(&json!({"p": {"a": [1]}})).is_ok());
    assert_eq!(
        mismatch(&s, json!({"p": {"a": [2]}})),
        ("/p".into(), "not one of enum")
    );
}

#[test]
fn items_are_validated_with_their_index_in_the_path() {
    let s = schema(prop(json!({"type": "array", "items": {"type": "integer"}})));
    assert!(s.check(&json!({"p": [1, 2]})).is_ok());
    assert_eq!(
        mismatch(&s, json!({"p": [1, "x", 3.5]})),
        ("/p/1".into(), "expected integer")
    );
}

#[test]
fn array_length_edges() {
    let s = schema(prop(json!({"type": "array", "minItems": 1, "maxItems": 2})));
    assert!(s.check(&json!({"p": [1]})).is_ok());
    assert!(s.check(&json!({"p": [1, 2]})).is_ok());
    assert_eq!(
        mismatch(&s, json!({"p": []})),
        ("/p".into(), "too few items")
    );
    assert_eq!(
        mismatch(&s, json!({"p": [1, 2, 3]})),
        ("/p".into(), "too many items")
    );
}

#[test]
fn nested_path_names_each_step() {
    let s = schema(
        json!({"type": "object", "properties": {"a": {"type": "array",
            "items": {"type": "object", "properties": {"b": {"type": "boolean"}}}}}}),
    );
    assert_eq!(
        mismatch(&s, json!({"a": [{"b": true}, {"b": "no"}]})),
        ("/a/1/b".into(), "expected boolean")
    );
}

#[test]
fn path_escapes_tilde_and_slash() {
    let s = schema(json!({"type": "object", "properties": {"a/b~c": {"type": "null"}}}));
    assert_eq!(
        mismatch(&s, json!({"a/b~c": 1})),
        ("/a~1b~0c".into(), "expected null")
    );
}

#[test]
fn first_mismatch_in_sorted_key_order_wins() {
    let s = schema(json!({"type": "object", "properties": {
            "a": {"type": "string"}, "b": {"type": "string"}}}));
    assert_eq!(
        mismatch(&s, json!({"b": 1, "a": 1})),
        ("/a".into(), "expected string")
    );
}

#[test]
fn mismatch_never_contains_instance_values() {
    let s = schema(prop(json!({"type": "integer", "enum": [1]})));
    let m = s.check(&json!({"p": 99_999})).unwrap_err();
    assert!(!m.path.contains("99999") && !m.reason.contains("99999"));
}
