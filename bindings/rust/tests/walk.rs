//! Walking an IR one equation at a time.

mod common;

use libaf::{Context, ErrorCode, Value};

#[test]
fn walk_with_eval_gives_the_same_output_as_call() {
    let ctx = Context::new().unwrap();
    let ir = common::trace_hello(&ctx);
    let mut w = ir.walk(&ctx, &[Value::from("World")]).unwrap();
    let mut prims = Vec::new();
    while let Some(step) = w.next_eqn().unwrap() {
        prims.push(step.prim.unwrap());
        w.eval().unwrap();
    }
    assert_eq!(prims, vec!["format", "concat"]);
    assert_eq!(w.outputs().unwrap().as_str().unwrap(), "Hello, World!?");
    // Done stays done.
    assert!(w.next_eqn().unwrap().is_none());
}

#[test]
fn walk_next_is_idempotent_and_send_overrides_an_equation() {
    let ctx = Context::new().unwrap();
    let ir = common::trace_hello(&ctx);
    let mut w = ir.walk(&ctx, &[Value::from("World")]).unwrap();
    let first = w.next_eqn().unwrap().unwrap();
    let again = w.next_eqn().unwrap().unwrap();
    assert_eq!(first.eqn_index, again.eqn_index);
    assert_eq!(first.prim, Some("format"));
    // The equation's input tree holds the concrete input somewhere.
    assert!(
        first.inputs.to_json().unwrap().contains("World"),
        "{}",
        first.inputs
    );
    // Outputs requested too early.
    assert_eq!(w.outputs().unwrap_err().code, ErrorCode::InvalidArgument);
    // The host supplies format's output itself.
    w.send(&Value::from("Howdy")).unwrap();
    let step = w.next_eqn().unwrap().unwrap();
    assert_eq!(step.prim, Some("concat"));
    w.eval().unwrap();
    assert!(w.next_eqn().unwrap().is_none());
    assert_eq!(w.outputs().unwrap().as_str().unwrap(), "Howdy?");
}

#[test]
fn walk_send_of_the_wrong_kind_is_invalid_argument() {
    let ctx = Context::new().unwrap();
    let ir = common::trace_hello(&ctx);
    let mut w = ir.walk(&ctx, &[Value::from("World")]).unwrap();
    w.next_eqn().unwrap().unwrap();
    assert_eq!(
        w.send(&Value::from(3)).unwrap_err().code,
        ErrorCode::InvalidArgument
    );
}

#[test]
fn walk_checks_inputs_like_call() {
    let ctx = Context::new().unwrap();
    let ir = common::trace_hello(&ctx);
    assert_eq!(
        ir.walk(&ctx, &[Value::from(1)]).unwrap_err().code,
        ErrorCode::InvalidArgument
    );
    let mut w = ir.walk(&ctx, &[Value::from("R")]).unwrap();
    assert_eq!(w.run_to_end().unwrap().as_str().unwrap(), "Hello, R!?");
}
