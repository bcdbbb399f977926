//! Values: constructors, JSON, accessors and their errors.

use libaf::{ErrorCode, Kind, Value};

#[test]
fn json_round_trip_keeps_int_and_float_apart() {
    let two = Value::from_json("2").unwrap();
    assert_eq!(two.kind(), Kind::Int);
    assert_eq!(two.to_json().unwrap(), "2");
    assert_eq!(two.as_int().unwrap(), 2);

    let two_f = Value::from_json("2.0").unwrap();
    assert_eq!(two_f.kind(), Kind::Float);
    assert_eq!(two_f.to_json().unwrap(), "2.0");
    assert_eq!(two_f.as_float().unwrap(), 2.0);

    assert_eq!(Value::from(2.0).to_json().unwrap(), "2.0");
    assert_eq!(Value::from(2).to_json().unwrap(), "2");
    assert_eq!(Value::from(0.1).to_json().unwrap(), "0.1");

    let doc = r#"{"b":[1,2.5,"x",null,true],"a":{"n":-7}}"#;
    assert_eq!(Value::from_json(doc).unwrap().to_json().unwrap(), doc);
}

#[test]
fn dict_and_list_access() {
    let v = Value::from_json(r#"{"name":"Ada","tags":["x","y"],"age":36,"ok":false}"#).unwrap();
    assert_eq!(v.kind(), Kind::Dict);
    assert_eq!(v.len().unwrap(), 4);
    assert_eq!(v.keys().unwrap(), vec!["name", "tags", "age", "ok"]);
    assert_eq!(v.key_at(1).unwrap(), "tags");
    assert_eq!(v.key("name").unwrap().as_str().unwrap(), "Ada");
    assert_eq!(v.key("age").unwrap().as_int().unwrap(), 36);
    assert!(!v.key("ok").unwrap().as_bool().unwrap());
    let tags = v.key("tags").unwrap();
    assert_eq!(tags.kind(), Kind::List);
    assert_eq!(tags.len().unwrap(), 2);
    assert_eq!(tags.index(1).unwrap().as_str().unwrap(), "y");
    // index on a dict: the i-th value in insertion order.
    assert_eq!(v.index(0).unwrap().as_str().unwrap(), "Ada");
    let entries = v.entries().unwrap();
    assert_eq!(entries[2].0, "age");
    assert_eq!(entries[2].1.as_int().unwrap(), 36);
}

#[test]
fn missing_key_is_not_found_naming_the_key() {
    let v = Value::from_json(r#"{"a":1}"#).unwrap();
    let err = v.key("zebra").unwrap_err();
    assert_eq!(err.code, ErrorCode::NotFound);
    assert_eq!(err.code_i32(), 2);
    assert!(err.message.contains("zebra"), "{err}");
}

#[test]
fn out_of_range_and_kind_mismatch_are_invalid_argument() {
    let list = Value::from_json("[1]").unwrap();
    assert_eq!(list.index(5).unwrap_err().code, ErrorCode::InvalidArgument);
    assert_eq!(list.key_at(0).unwrap_err().code, ErrorCode::InvalidArgument);
    let s = Value::from("x");
    assert_eq!(s.len().unwrap_err().code, ErrorCode::InvalidArgument);
    assert_eq!(s.as_int().unwrap_err().code, ErrorCode::InvalidArgument);
    assert_eq!(
        Value::from(1).as_str().unwrap_err().code,
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        Value::from(1).as_float().unwrap_err().code,
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        Value::null().as_bool().unwrap_err().code,
        ErrorCode::InvalidArgument
    );
}

#[test]
fn malformed_json_is_invalid_argument() {
    for bad in [
        "",
        "{",
        "[1,]",
        r#"{"a":1,"a":2}"#,
        "99999999999999999999",
        "nul",
    ] {
        let err = Value::from_json(bad).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidArgument, "{bad:?}");
        assert!(!err.message.is_empty());
    }
}

#[test]
fn constructors_and_conversions() {
    assert_eq!(Value::null().kind(), Kind::Null);
    assert_eq!(Value::from(()).to_json().unwrap(), "null");
    assert!(Value::from(true).as_bool().unwrap());
    assert_eq!(Value::from(i64::MIN).as_int().unwrap(), i64::MIN);
    assert_eq!(
        Value::from("héllo \u{1F600}").as_str().unwrap(),
        "héllo \u{1F600}"
    );
    assert_eq!(Value::from(String::from("s")).as_str_ref().unwrap(), "s");
    assert_eq!(Value::from(None::<i64>).kind(), Kind::Null);
    let list: Value = vec![Value::from(1), Value::from("a")].into();
    assert_eq!(list.to_json().unwrap(), r#"[1,"a"]"#);
    let collected: Value = (1..=3).map(Value::from).collect();
    assert_eq!(collected.to_json().unwrap(), "[1,2,3]");
    let d = Value::dict([("z", Value::from(1)), ("a", list.clone())]).unwrap();
    assert_eq!(d.to_json().unwrap(), r#"{"z":1,"a":[1,"a"]}"#);
    assert_eq!(
        Value::dict(Vec::<(&str, Value)>::new())
            .unwrap()
            .to_json()
            .unwrap(),
        "{}"
    );
    assert_eq!(Value::list(&[]).to_json().unwrap(), "[]");
    assert!(Value::list(&[]).is_empty().unwrap());
    assert!(!d.is_empty().unwrap());
    let parsed: Value = "[true]".parse().unwrap();
    assert_eq!(parsed.index(0).unwrap().kind(), Kind::Bool);
    assert_eq!(format!("{d}"), r#"{"z":1,"a":[1,"a"]}"#);
}

#[test]
fn duplicate_dict_key_is_invalid_argument() {
    let err = Value::dict([("k", 1), ("k", 2)]).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
}

#[test]
fn nan_to_json_is_invalid_argument() {
    let v = Value::from(f64::NAN);
    assert_eq!(v.kind(), Kind::Float);
    assert_eq!(v.to_json().unwrap_err().code, ErrorCode::InvalidArgument);
    assert_eq!(
        Value::from(f64::INFINITY).to_json().unwrap_err().code,
        ErrorCode::InvalidArgument
    );
}

#[test]
fn clones_share_and_outlive_the_original() {
    let v = Value::from_json(r#"{"a":[1,2]}"#).unwrap();
    let inner = v.key("a").unwrap();
    let c = v.clone();
    drop(v);
    assert_eq!(c.to_json().unwrap(), r#"{"a":[1,2]}"#);
    assert_eq!(inner.len().unwrap(), 2);
    let t = std::thread::spawn(move || c.key("a").unwrap().index(1).unwrap().as_int().unwrap());
    assert_eq!(t.join().unwrap(), 2);
}
