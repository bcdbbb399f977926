//! Saved graphs: file and byte round trips, the JSON form, verification
//! and the errors of damaged input.

mod common;

use libaf::{
    graph_from_json, graph_to_json, graph_verify, Context, ErrorCode, Ir, Program, Provider, Value,
};

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

#[test]
fn a_compiled_program_saves_and_loads() {
    let ctx = Context::new().unwrap();
    ctx.route("*", &Provider::echo("").unwrap()).unwrap();
    // ask(q) = lm_call([{"role": "user", "content": format("Q:{}", q)}], "m")
    let ir = ctx
        .trace(
            |ctx, i| {
                let content = ctx.format("Q:{}", &i[..1], None)?;
                let msg = Value::dict([("role", Value::from("user")), ("content", content)])?;
                ctx.lm_call(&Value::list(&[msg]), &Value::from("m"))
            },
            &[Value::from("q")],
            None,
        )
        .unwrap();
    let p = Program::compile(&ctx, &ir).unwrap();
    let dir = std::env::temp_dir();
    let path = dir.join(format!("af_rust_program_{}.afg", std::process::id()));
    p.save(&path).unwrap();
    let back = Program::load(&ctx, &path).unwrap();
    assert_eq!(
        back.call(&ctx, &[Value::from("hi")])
            .unwrap()
            .as_str()
            .unwrap(),
        "m|Q:hi"
    );
    // The file is also a plain saved IR.
    assert_eq!(Ir::load(&ctx, &path).unwrap(), ir);
    let path2 = dir.join(format!("af_rust_program2_{}.afg", std::process::id()));
    back.save(&path2).unwrap();
    assert_eq!(
        std::fs::read(&path).unwrap(),
        std::fs::read(&path2).unwrap(),
        "same program, same bytes"
    );
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(&path2);
    assert_eq!(
        Program::load(&ctx, "/nonexistent/dir/p.afg")
            .unwrap_err()
            .code,
        ErrorCode::Io
    );
}
