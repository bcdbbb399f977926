//! Host functions (closures called from traced programs), their errors and
//! lifetime, and the run-time scopes (collect, inject, memoize).

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use libaf::{Context, Error, ErrorCode, FunctionOptions, Value};

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
    // Pure: memoize answers only calls of pure functions (an effectful one
    // runs every time; tests/effects.rs).
    let pure = FunctionOptions {
        pure: true,
        ..Default::default()
    };
    ctx.register_function_with("count", &Value::from("str"), &pure, move |a| {
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

    // Without a memoize scope each run calls it (its two equal calls merged
    // into one, as compile merges equal calls of a pure function)...
    calls.store(0, Ordering::SeqCst);
    ir.call(&ctx, &[Value::from("m")]).unwrap();
    ir.call(&ctx, &[Value::from("m")]).unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    // ... inside one, the second run is answered from the scope.
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

/// Eight independent calls of host function `name`.
fn fan_out(ctx: &Context, name: &'static str) -> libaf::Program {
    let ir = ctx
        .trace(
            move |ctx, _| {
                let mut outs = Vec::new();
                for i in 0..8i64 {
                    outs.push(ctx.host_call(name, &[Value::from(i)])?);
                }
                Ok(Value::list(&outs))
            },
            &[Value::from("x")],
            None,
        )
        .unwrap();
    libaf::Program::compile(ctx, &ir).unwrap()
}

#[test]
fn async_host_functions_overlap_without_holding_libaf_threads() {
    let ctx = Context::new().unwrap();
    let workers = Arc::new(std::sync::Mutex::new(Vec::new()));
    let w = workers.clone();
    ctx.register_function_async("slow", &Value::from("str"), move |args, req| {
        let i = args[0].as_int().unwrap();
        w.lock().unwrap().push(std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(200));
            req.complete(&Value::from(format!("done:{i}"))).unwrap();
            let again = req.complete(&Value::from("again")).unwrap_err();
            assert_eq!(again.code, ErrorCode::InvalidArgument, "{again}");
        }));
    })
    .unwrap();
    let program = fan_out(&ctx, "slow");
    let t0 = std::time::Instant::now();
    let out = program.call(&ctx, &[Value::from("x")]).unwrap();
    let ms = t0.elapsed().as_millis();
    println!("8 async 200 ms tools: {ms} ms");
    assert!(ms < 800, "{ms} ms");
    assert_eq!(out.index(7).unwrap().as_str().unwrap(), "done:7");
    for t in workers.lock().unwrap().drain(..) {
        t.join().unwrap();
    }
}

#[test]
fn blocking_host_functions_run_on_the_host_pool() {
    let ctx = Context::with_options(r#"{"host_threads": 8}"#).unwrap();
    ctx.register_function_blocking("slow", &Value::from("str"), |args| {
        std::thread::sleep(std::time::Duration::from_millis(200));
        Ok(Value::from(format!("done:{}", args[0].as_int()?)))
    })
    .unwrap();
    let t0 = std::time::Instant::now();
    let out = fan_out(&ctx, "slow")
        .call(&ctx, &[Value::from("x")])
        .unwrap();
    let ms = t0.elapsed().as_millis();
    println!("8 blocking 200 ms tools, pool of 8: {ms} ms");
    assert!(ms < 800, "{ms} ms");
    assert_eq!(out.index(0).unwrap().as_str().unwrap(), "done:0");
}

#[test]
fn cancellation_reaches_an_async_host_function() {
    let ctx = Context::new().unwrap();
    let saw = Arc::new(AtomicUsize::new(0));
    let seen = saw.clone();
    let workers = Arc::new(std::sync::Mutex::new(Vec::new()));
    let w = workers.clone();
    ctx.register_function_async("waits", &Value::from("str"), move |_, req| {
        let seen = seen.clone();
        w.lock().unwrap().push(std::thread::spawn(move || {
            let t0 = std::time::Instant::now();
            while !req.cancelled() && t0.elapsed().as_secs() < 5 {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            if req.cancelled() {
                seen.fetch_add(1, Ordering::SeqCst);
            }
            req.complete(&Value::from("late")).unwrap(); // ignored, harmless
        }));
    })
    .unwrap();
    let program = fan_out(&ctx, "waits");
    let opts = libaf::RunOptions {
        timeout: Some(std::time::Duration::from_millis(100)),
        ..Default::default()
    };
    let t0 = std::time::Instant::now();
    let err = program
        .call_with(&ctx, &[Value::from("x")], &opts)
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::Timeout, "{err}");
    assert!(t0.elapsed().as_millis() < 2000);
    for t in workers.lock().unwrap().drain(..) {
        t.join().unwrap();
    }
    assert_eq!(saw.load(Ordering::SeqCst), 8);
}

#[test]
fn async_host_function_errors_name_the_function() {
    let ctx = Context::new().unwrap();
    ctx.register_function_async("wrong", &Value::from("str"), |_, req| {
        let e = req.complete(&Value::from(1i64)).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument);
    })
    .unwrap();
    let e = ctx.host_call("wrong", &[]).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    assert!(e.to_string().contains("\"wrong\""), "{e}");
    ctx.register_function_async("dropped", &Value::from("str"), |_, _req| {})
        .unwrap();
    let e = ctx.host_call("dropped", &[]).unwrap_err();
    assert_eq!(e.code, ErrorCode::Callback, "{e}");
    ctx.register_function_async("panics", &Value::from("str"), |_, _req| panic!("tool down"))
        .unwrap();
    assert_eq!(
        ctx.host_call("panics", &[]).unwrap_err().code,
        ErrorCode::Callback
    );
}

#[test]
fn profile_event_marks_the_profile_of_the_run_calling_the_host_function() {
    let ctx = Context::new().unwrap();
    ctx.register_function("marked", &Value::from("str"), |args| {
        libaf::profile_event("my-marker", Some(r#"{"k":1}"#))?;
        Ok(Value::from(format!("seen {}", args[0].as_str()?)))
    })
    .unwrap();
    let ir = ctx
        .trace(
            |ctx, i| ctx.host_call("marked", &i[..1]),
            &[Value::from("x")],
            None,
        )
        .unwrap();
    let p = libaf::Program::compile(&ctx, &ir).unwrap();
    let opts = libaf::RunOptions {
        profile: true,
        ..libaf::RunOptions::default()
    };
    let f = p.call_async_with(&ctx, &[Value::from("a")], &opts).unwrap();
    assert_eq!(f.wait().unwrap().as_str().unwrap(), "seen a");
    let profile = f.profile().unwrap();
    assert!(profile.contains("my-marker"), "{profile}");
    assert!(profile.contains(r#""ph":"i""#), "{profile}");
    assert!(profile.contains(r#""k":1"#), "{profile}");

    // A run without a profile, an eager call, no run at all: nothing, Ok.
    let out = p.call(&ctx, &[Value::from("b")]).unwrap();
    assert_eq!(out.as_str().unwrap(), "seen b");
    ctx.host_call("marked", &[Value::from("c")]).unwrap();
    libaf::profile_event("my-marker", None).unwrap();
    libaf::profile_event("my-marker", Some(r#"{"k":1}"#)).unwrap();

    // Bad arguments are refused anywhere.
    let err = libaf::profile_event("", None).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
    let err = libaf::profile_event("m", Some("[1]")).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
    let err = libaf::profile_event("m", Some("{nope")).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
}
