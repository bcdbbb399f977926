//! Printing and inspecting IRs.

mod common;

use libaf::{Context, Value};

#[test]
fn text_names_the_primitives_and_eqn_count_is_two() {
    let ctx = Context::new().unwrap();
    let ir = common::trace_hello(&ctx);
    let text = ir.to_text().unwrap();
    assert!(text.contains("format"), "{text}");
    assert!(text.contains("concat"), "{text}");
    assert_eq!(ir.eqn_count(), 2);
    assert_eq!(ir.eqn_prim(0), Some("format"));
    assert_eq!(ir.eqn_prim(1), Some("concat"));
    assert_eq!(ir.eqn_prim(2), None);
    assert_eq!(format!("{ir}"), text);
    let dbg = format!("{ir:?}");
    assert!(dbg.contains("format") && dbg.contains("concat"), "{dbg}");
}

#[test]
fn dot_is_a_graphviz_digraph() {
    let ctx = Context::new().unwrap();
    let ir = common::trace_hello(&ctx);
    let dot = ir.to_dot().unwrap();
    assert!(dot.contains("digraph"), "{dot}");
    assert!(dot.contains("format") && dot.contains("concat"), "{dot}");
    assert!(dot.contains("->"), "{dot}");
}

#[test]
fn text_is_deterministic() {
    let ctx = Context::new().unwrap();
    let a = common::trace_hello(&ctx).to_text().unwrap();
    let b = common::trace_hello(&ctx).to_text().unwrap();
    assert_eq!(a, b);
    let _ = Value::null();
}
