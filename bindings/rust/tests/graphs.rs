//! Saved graphs: file and byte round trips, the JSON form, verification
//! and the errors of damaged input.

mod common;

use af::{graph_from_json, graph_to_json, graph_verify, Context, ErrorCode, Ir, Value};

#[test]
fn save_and_load_round_trip() {
    let ctx = Context::new().unwrap();
    let ir = common::trace_hello(&ctx);
    let path = std::env::temp_dir().join(format!("af_rust_graph_{}.afg", std::process::id()));
    ir.save(&path).unwrap();
    let back = Ir::load(&ctx, &path).unwrap();
    let _ = std::fs::remove_file(&path);
    assert_eq!(back, ir);
    assert_eq!(
        back.call(&ctx, &[Value::from("World")])
            .unwrap()
            .as_str()
            .unwrap(),
        "Hello, World!?"
    );

    let bytes = ir.to_bytes().unwrap();
    assert_eq!(bytes, ir.to_bytes().unwrap(), "saving is deterministic");
    let again = Ir::from_bytes(&ctx, &bytes).unwrap();
    assert_eq!(again.hash(), ir.hash());

    let summary = graph_verify(&ctx, &bytes).unwrap();
    assert!(summary.contains("format"), "{summary}");
    let text = graph_to_json(&ctx, &bytes).unwrap();
    assert_eq!(graph_from_json(&ctx, &text).unwrap(), bytes);
}

#[test]
fn damaged_or_missing_graphs_are_clear_errors() {
    let ctx = Context::new().unwrap();
    let mut bytes = common::trace_hello(&ctx).to_bytes().unwrap();
    let n = bytes.len();
    bytes[n - 1] ^= 0xff;
    assert_eq!(
        Ir::from_bytes(&ctx, &bytes).unwrap_err().code,
        ErrorCode::Format
    );
    assert_eq!(
        Ir::from_bytes(&ctx, b"not a graph").unwrap_err().code,
        ErrorCode::Format
    );
    assert_eq!(
        graph_verify(&ctx, &bytes[..10]).unwrap_err().code,
        ErrorCode::Format
    );
    let err = Ir::load(&ctx, "/nonexistent/dir/x.afg").unwrap_err();
    assert_eq!(err.code, ErrorCode::Io);
    assert_eq!(
        graph_from_json(&ctx, "{").unwrap_err().code,
        ErrorCode::Format
    );
}
