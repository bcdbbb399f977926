//! Errors: codes, messages, causes, closure errors and panics.

mod common;

use std::panic::{self, AssertUnwindSafe};

use libaf::{Context, Error, ErrorCode, Value};

fn trace_template(ctx: &Context, tmpl: &'static str) -> Result<libaf::Ir, Error> {
    ctx.trace(
        move |ctx, inputs| ctx.format(tmpl, &[inputs[0].clone(), inputs[0].clone()], None),
        &[Value::from("x")],
        None,
    )
}

#[test]
fn unbalanced_template_in_trace_is_invalid_argument() {
    let ctx = Context::new().unwrap();
    let err = trace_template(&ctx, "Hello, {").unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument, "{err:#}");
    assert_eq!(err.code_i32(), 1);
    assert!(!err.message.is_empty());
}

#[test]
fn mixed_numbering_in_trace_is_invalid_argument() {
    let ctx = Context::new().unwrap();
    let err = trace_template(&ctx, "{} {0}").unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument, "{err:#}");
    assert!(!err.message.is_empty());
}

#[test]
fn bad_templates_outside_a_trace_are_invalid_argument() {
    let ctx = Context::new().unwrap();
    for tmpl in ["Hello, {", "}", "{} {0}", "{2}", "{name}"] {
        let err = ctx.format(tmpl, &[Value::from("a")], None).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidArgument, "{tmpl:?}: {err:#}");
        assert!(!err.message.is_empty(), "{tmpl:?}");
    }
    let ok = ctx.format("{{{}}} {0}", &[Value::from(2.5)], None);
    // Mixed numbering again ("{}" then "{0}"): must fail.
    assert_eq!(ok.unwrap_err().code, ErrorCode::InvalidArgument);
    let out = ctx
        .format("{{{}}} {}", &[Value::from(2.5), Value::from(true)], None)
        .unwrap();
    assert_eq!(out.as_str().unwrap(), "{2.5} true");
}

#[test]
fn concat_of_a_non_string_is_invalid_argument() {
    let ctx = Context::new().unwrap();
    let err = ctx.concat(&[Value::from("a"), Value::from(1)]).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
}

#[test]
fn closure_error_is_the_cause_of_a_callback_error() {
    let ctx = Context::new().unwrap();
    let err = ctx
        .trace(
            |_, _| Err(Error::new(ErrorCode::NotFound, "no such greeting: xyz")),
            &[Value::from("x")],
            None,
        )
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::Callback, "{err:#}");
    assert_eq!(err.code_i32(), 9);
    let cause = err.cause().expect("a CALLBACK error has a cause");
    assert!(cause.message.contains("no such greeting: xyz"), "{err:#}");
    assert_eq!(cause.code, ErrorCode::NotFound);
    // std::error::Error::source walks the same chain.
    let source = std::error::Error::source(&err).expect("source");
    assert!(source.to_string().contains("no such greeting: xyz"));
    assert!(format!("{err:#}").contains("caused by"));
}

#[test]
fn closure_panic_resumes_after_trace_and_library_stays_usable() {
    let ctx = Context::new().unwrap();
    let caught = panic::catch_unwind(AssertUnwindSafe(|| {
        ctx.trace(
            |_, _| -> libaf::Result<Value> { panic!("boom in closure") },
            &[Value::from("x")],
            None,
        )
    }));
    let payload = caught.expect_err("the panic must propagate");
    let msg = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    assert!(msg.contains("boom in closure"), "{msg:?}");
    // The trace was unwound on the C side: no trace left open on this thread.
    assert!(!libaf::is_tracing());
    let ir = common::trace_hello(&ctx);
    assert_eq!(
        ir.call(&ctx, &[Value::from("again")])
            .unwrap()
            .as_str()
            .unwrap(),
        "Hello, again!?"
    );
}

#[test]
fn panic_inside_a_tag_scope_pops_it() {
    let ctx = Context::new().unwrap();
    let caught = panic::catch_unwind(AssertUnwindSafe(|| {
        ctx.trace(
            |ctx, _| ctx.with_tag("t", || -> libaf::Result<Value> { panic!("inner") }),
            &[Value::from("x")],
            None,
        )
    }));
    assert!(caught.is_err());
    assert!(!libaf::is_tracing());
}

#[test]
fn nested_trace_errors_propagate() {
    let ctx = Context::new().unwrap();
    let err = ctx
        .trace(
            |ctx, inputs| {
                let inner = trace_template(ctx, "{")?;
                inner.call(ctx, inputs)
            },
            &[Value::from("x")],
            None,
        )
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument, "{err:#}");
}

#[test]
fn error_display_and_codes() {
    let e =
        Error::new(ErrorCode::Timeout, "too slow").with_cause(Error::new(ErrorCode::Io, "socket"));
    assert_eq!(e.to_string(), "TIMEOUT: too slow");
    assert_eq!(
        format!("{e:#}"),
        "TIMEOUT: too slow\n  caused by IO: socket"
    );
    assert_eq!(e.chain().count(), 2);
    for n in 1..=12 {
        assert_eq!(ErrorCode::from_i32(n).as_i32(), n);
    }
    assert_eq!(ErrorCode::from_i32(99), ErrorCode::Other(99));
    assert_eq!(ErrorCode::InvalidArgument, 1);
}

// Code names come from libaf's one table (af_error_code_name): each code's
// name, and UNKNOWN for a code libaf does not define.
#[test]
fn code_names_come_from_libaf() {
    assert_eq!(ErrorCode::NotFound.name(), "NOT_FOUND");
    assert_eq!(ErrorCode::OutOfMemory.name(), "OUT_OF_MEMORY");
    assert_eq!(ErrorCode::Internal.name(), "INTERNAL");
    assert_eq!(ErrorCode::Other(99).name(), "UNKNOWN");
    assert_eq!(ErrorCode::Timeout.to_string(), "TIMEOUT");
}
