//! Value equality and conversions, and `impl Into<Value>` parameters.

use libaf::{Context, ErrorCode, Value};

fn json(s: &str) -> Value {
    Value::from_json(s).unwrap()
}

#[test]
fn values_compare_structurally() {
    assert_eq!(
        json(r#"{"a": [1, "x"], "b": null}"#),
        json(r#"{"b": null, "a": [1, "x"]}"#)
    );
    assert_ne!(json("[1, 2]"), json("[2, 1]"));
    assert_ne!(json("1"), json("1.0"), "an int never equals a float");
    assert_ne!(json(r#"{"a": 1}"#), json(r#"{"a": 1, "b": 2}"#));
    assert_eq!(Value::from("x"), "x");
    assert_eq!(Value::from(3), 3i64);
    assert_eq!(Value::from(2.5), 2.5);
    assert_eq!(Value::from(true), true);
    assert_ne!(Value::from("x"), 1i64);
}

#[test]
fn values_convert_to_primitives() {
    assert_eq!(i64::try_from(&Value::from(7)).unwrap(), 7);
    assert_eq!(i32::try_from(&Value::from(7)).unwrap(), 7);
    assert_eq!(
        i32::try_from(&Value::int(1 << 40)).unwrap_err().code,
        ErrorCode::InvalidArgument
    );
    assert_eq!(f64::try_from(Value::from(0.5)).unwrap(), 0.5);
    assert!(bool::try_from(Value::from(true)).unwrap());
    assert_eq!(String::try_from(Value::from("s")).unwrap(), "s");
    let err = i64::try_from(&Value::from("s")).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
    let items: Vec<Value> = Vec::try_from(&json("[1, 2]")).unwrap();
    assert_eq!(items, [Value::from(1), Value::from(2)]);
    assert!(Vec::<Value>::try_from(&json(r#"{"a": 1}"#)).is_err());
}

#[test]
fn operations_take_anything_that_becomes_a_value() {
    let ctx = Context::new().unwrap();
    let name = Value::from("ping");
    assert_eq!(ctx.match_(&name, "ping").unwrap(), true);
    assert_eq!(ctx.match_("a", String::from("b")).unwrap(), false);
    assert_eq!(ctx.stop_gradient(42).unwrap(), 42i64);
    // Passing by reference still works (and the caller keeps its value).
    assert_eq!(ctx.match_(&name, &name).unwrap(), true);
    assert_eq!(name, "ping");
}

#[test]
fn iterators_borrow_instead_of_collecting() {
    let list = json(r#"[1, "a", null]"#);
    let kinds: Vec<libaf::Kind> = list.iter().unwrap().map(|v| v.kind()).collect();
    assert_eq!(kinds, [libaf::Kind::Int, libaf::Kind::Str, libaf::Kind::Null]);
    assert_eq!(list.iter().unwrap().len(), 3);
    let dict = json(r#"{"b": 1, "a": 2}"#);
    let entries: Vec<(&str, i64)> =
        dict.iter_entries().unwrap().map(|(k, v)| (k, v.as_int().unwrap())).collect();
    assert_eq!(entries, [("b", 1), ("a", 2)], "insertion order, keys borrowed");
    assert_eq!(list.iter_entries().err().unwrap().code, ErrorCode::InvalidArgument);
    assert_eq!(Value::from(1).iter().err().unwrap().code, ErrorCode::InvalidArgument);
}
