//! The `serde` feature: `Value` through serde_json agrees with libaf's own
//! JSON (ints stay ints, floats stay floats, dict order kept) and refuses
//! what libaf refuses. Built only with `--features serde`.

use std::collections::BTreeMap;

use libaf::{Context, Kind, Value};

/// Documents whose serde_json text is byte-identical to libaf's.
const SAME_TEXT: &[&str] = &[
    "null",
    "true",
    "0",
    "-9223372036854775808",
    "9223372036854775807",
    "2.0",
    "-0.5",
    "0.1",
    r#""""#,
    r#""tab\tquote\"snow☃""#,
    "[]",
    "{}",
    r#"[1,1.0,"1",[true,null]]"#,
    r#"{"b":1,"a":2.5,"c":{"z":[],"y":"x"}}"#,
];

#[test]
fn serializing_writes_what_af_writes() {
    for json in SAME_TEXT {
        let v = Value::from_json(json).unwrap();
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            v.to_json().unwrap(),
            "{json}"
        );
    }
}

#[test]
fn deserializing_reads_what_af_reads() {
    for json in SAME_TEXT {
        let ours: Value = serde_json::from_str(json).unwrap();
        let af = Value::from_json(json).unwrap();
        assert_eq!(ours, af, "{json}");
        // Text equality also checks kinds and dict order, which `==` does not.
        assert_eq!(ours.to_json().unwrap(), af.to_json().unwrap(), "{json}");
    }
    let v: Value = serde_json::from_str("[2, 2.0, 1e3]").unwrap();
    let kinds: Vec<Kind> = v.iter().unwrap().map(|x| x.kind()).collect();
    assert_eq!(kinds, [Kind::Int, Kind::Float, Kind::Float]);
    // Exponent floats print differently ("1e+30" vs "1e30") but are equal.
    let big: Value = serde_json::from_str("1e30").unwrap();
    assert_eq!(big, Value::from_json("1e+30").unwrap());
    assert_eq!(
        serde_json::from_str::<Value>(&serde_json::to_string(&big).unwrap()).unwrap(),
        big
    );
}

#[test]
fn values_nest_inside_other_serde_types() {
    let mut m = BTreeMap::new();
    m.insert("n", Value::from(3));
    m.insert("s", Value::from("x"));
    assert_eq!(serde_json::to_string(&m).unwrap(), r#"{"n":3,"s":"x"}"#);
    let back: BTreeMap<String, Value> = serde_json::from_str(r#"{"n":3,"s":"x"}"#).unwrap();
    assert_eq!(back["n"], 3);
    let opt: Option<Value> = serde_json::from_str("null").unwrap();
    assert_eq!(opt, None);
    let list: Vec<Value> = serde_json::from_str(r#"[1, "a"]"#).unwrap();
    assert_eq!(list, [Value::from(1), Value::from("a")]);
}

#[test]
fn what_af_refuses_is_refused() {
    let nan = serde_json::to_string(&Value::float(f64::NAN)).unwrap_err();
    assert!(nan.to_string().contains("NaN"), "{nan}");
    assert!(serde_json::to_string(&Value::list(&[Value::float(f64::INFINITY)])).is_err());

    let dup = serde_json::from_str::<Value>(r#"{"a":1,"a":2}"#).unwrap_err();
    assert!(dup.to_string().contains("duplicate"), "{dup}");
    let big = serde_json::from_str::<Value>("9223372036854775808").unwrap_err();
    assert!(big.to_string().contains("outside int64"), "{big}");

    // A placeholder has no content to write while tracing.
    let ctx = Context::new().unwrap();
    let ir = ctx.trace(
        |_, inputs| {
            let err = serde_json::to_string(&inputs[0]).unwrap_err();
            assert!(err.to_string().contains("placeholder"), "{err}");
            Ok(inputs[0].clone())
        },
        &[Value::from("x")],
        None,
    );
    assert!(ir.is_ok());
}

#[test]
fn nesting_beyond_libafs_limit_is_an_error_not_a_panic() {
    let deep = format!("{}{}", "[".repeat(600), "]".repeat(600));
    let mut de = serde_json::Deserializer::from_str(&deep);
    de.disable_recursion_limit();
    let err = <Value as serde::Deserialize>::deserialize(&mut de).unwrap_err();
    assert!(err.to_string().contains("512"), "{err}");
}
