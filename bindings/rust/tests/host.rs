//! Host functions (closures called from traced programs), their errors and
//! lifetime, and the run-time scopes (collect, inject, memoize).

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use af::{Context, Error, ErrorCode, Value};

/// Counts drops of the closure it is captured in.
struct DropCounter(Arc<AtomicUsize>);
impl Drop for DropCounter {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn a_host_function_runs_inside_a_traced_program() {
    let ctx = Context::new().unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    ctx.register_function("upper", &Value::from("str"), move |args| {
        seen.fetch_add(1, Ordering::SeqCst);
        Ok(Value::from(args[0].as_str()?.to_uppercase()))
    })
    .unwrap();
    let ir = ctx
        .trace(
            |ctx, i| {
                let u = ctx.host_call("upper", &i[..1])?;
                ctx.format("<{}>", &[u], None)
            },
            &[Value::from("x")],
            None,
        )
        .unwrap();
    assert_eq!(
        calls.load(Ordering::SeqCst),
        0,
        "tracing must not call the function"
    );
    assert_eq!(ir.eqn_prims(), vec!["host_call", "format"]);
    assert_eq!(
        ir.call(&ctx, &[Value::from("abc")])
            .unwrap()
            .as_str()
            .unwrap(),
        "<ABC>"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    // Called at once outside a trace.
    assert_eq!(
        ctx.host_call("upper", &[Value::from("q")])
            .unwrap()
            .as_str()
            .unwrap(),
        "Q"
    );
}

#[test]
fn host_function_errors_are_callback_errors_with_the_cause() {
    let ctx = Context::new().unwrap();
    ctx.register_function("search", &Value::from("str"), |args| {
        Err(Error::new(
            ErrorCode::Provider,
            format!("no results for {}", args[0].as_str()?),
        ))
    })
    .unwrap();
    let err = ctx.host_call("search", &[Value::from("cats")]).unwrap_err();
    assert_eq!(err.code, ErrorCode::Callback);
    assert!(err.message.contains("search"), "{err:#}");
    let cause = err.cause().expect("a cause");
    assert_eq!(cause.code, ErrorCode::Provider);
    assert_eq!(cause.message, "no results for cats");

    // A panic is caught in the trampoline and reported, never unwound into C.
    ctx.register_function("boom", &Value::from("str"), |_| panic!("kaboom"))
        .unwrap();
    let err = ctx.host_call("boom", &[Value::from("x")]).unwrap_err();
    assert_eq!(err.code, ErrorCode::Callback);
    assert!(err.cause().unwrap().message.contains("kaboom"), "{err:#}");

    // A result of the wrong kind.
    ctx.register_function("liar", &Value::from("int"), |_| Ok(Value::from("nope")))
        .unwrap();
    assert_eq!(
        ctx.host_call("liar", &[]).unwrap_err().code,
        ErrorCode::InvalidArgument
    );

    let err = ctx.host_call("missing", &[]).unwrap_err();
    assert_eq!(err.code, ErrorCode::NotFound);
    assert!(err.message.contains("missing"), "{err}");
}

#[test]
fn the_closure_is_dropped_exactly_once() {
    let drops = Arc::new(AtomicUsize::new(0));
    {
        let ctx = Context::new().unwrap();
        let guard = DropCounter(drops.clone());
        ctx.register_function("f", &Value::from("str"), move |_| {
            let _ = &guard;
            Ok(Value::from("f"))
        })
        .unwrap();
        // Replacing drops the first closure.
        let guard2 = DropCounter(drops.clone());
        ctx.register_function("f", &Value::from("str"), move |_| {
            let _ = &guard2;
            Ok(Value::from("g"))
        })
        .unwrap();
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        assert_eq!(ctx.host_call("f", &[]).unwrap().as_str().unwrap(), "g");
        // A failed registration drops its closure too.
        let guard3 = DropCounter(drops.clone());
        let err = ctx
            .register_function("", &Value::from("str"), move |_| {
                let _ = &guard3;
                Ok(Value::from("h"))
            })
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidArgument);
        assert_eq!(drops.load(Ordering::SeqCst), 2);
    }
    assert_eq!(drops.load(Ordering::SeqCst), 3);
}

#[test]
fn a_host_function_is_not_differentiable_unless_stopped() {
    let ctx = Context::new().unwrap();
    ctx.register_function("id", &Value::from("str"), |a| Ok(a[0].clone()))
        .unwrap();
    let ir = ctx
        .trace(
            |ctx, i| ctx.host_call("id", &i[..1]),
            &[Value::from("x")],
            None,
        )
        .unwrap();
    let err = ir.pullback(&ctx).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
    let stopped = ctx
        .trace(
            |ctx, i| ctx.stop_gradient(&ctx.host_call("id", &i[..1])?),
            &[Value::from("x")],
            None,
        )
        .unwrap();
    let pb = stopped.pullback(&ctx).unwrap();
    let out = pb
        .call(
            &ctx,
            &[Value::from_json(r#"["v"]"#).unwrap(), Value::from("g")],
        )
        .unwrap();
    assert_eq!(out.to_json().unwrap(), r#"["v",[null]]"#);
}

#[test]
fn collect_inject_and_memoize_scopes() {
    let ctx = Context::new().unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    ctx.register_function("count", &Value::from("str"), move |a| {
        seen.fetch_add(1, Ordering::SeqCst);
        Ok(a[0].clone())
    })
    .unwrap();
    // [checkpoint(concat(x, "!"), "k", "c"), count(x), count(x)]
    let ir = ctx
        .trace(
            |ctx, i| {
                let e = ctx.concat(&[i[0].clone(), Value::from("!")])?;
                let k = ctx.checkpoint(&e, "k", "c")?;
                let a = ctx.host_call("count", &i[..1])?;
                let b = ctx.host_call("count", &i[..1])?;
                Ok(Value::list(&[k, a, b]))
            },
            &[Value::from("x")],
            None,
        )
        .unwrap();

    ctx.collect_push("c").unwrap();
    ir.call(&ctx, &[Value::from("a")]).unwrap();
    ir.call(&ctx, &[Value::from("b")]).unwrap();
    assert_eq!(
        ctx.collect_pop().unwrap().to_json().unwrap(),
        r#"{"k":["a!","b!"]}"#
    );

    ctx.inject_push("c", &Value::from_json(r#"{"k":["injected"]}"#).unwrap())
        .unwrap();
    assert_eq!(
        ir.call(&ctx, &[Value::from("a")])
            .unwrap()
            .to_json()
            .unwrap(),
        r#"["injected","a","a"]"#
    );
    // The queue is empty now: the checkpoint runs normally.
    assert_eq!(
        ir.call(&ctx, &[Value::from("a")])
            .unwrap()
            .to_json()
            .unwrap(),
        r#"["a!","a","a"]"#
    );
    ctx.inject_pop().unwrap();

    calls.store(0, Ordering::SeqCst);
    ctx.memoize_push().unwrap();
    ir.call(&ctx, &[Value::from("m")]).unwrap();
    ir.call(&ctx, &[Value::from("m")]).unwrap();
    ctx.memoize_pop().unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);

    assert_eq!(
        ctx.collect_pop().unwrap_err().code,
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        ctx.inject_pop().unwrap_err().code,
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        ctx.memoize_pop().unwrap_err().code,
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        ctx.inject_push("c", &Value::from("not a dict"))
            .unwrap_err()
            .code,
        ErrorCode::InvalidArgument
    );
}
