//! Cancel scopes (`Context::with_cancel_scope`, `af_cancel_scope_push/pop`):
//! what this thread runs on the context inside the closure ends with
//! `Cancelled` once the token fires; after the scope, calls run as usual;
//! scopes nest and belong to their thread.

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use libaf::{sys, CancelToken, Context, ErrorCode, Provider, Value};

fn messages(text: &str) -> Value {
    Value::from_json(&format!(r#"[{{"role":"user","content":"{text}"}}]"#)).unwrap()
}

/// The code of a raw call's error (0 = success), freeing the error.
fn raw_code(e: *mut sys::af_error_t) -> i32 {
    if e.is_null() {
        return 0;
    }
    let code = unsafe { sys::af_error_code(e) };
    unsafe { sys::af_error_free(e) };
    code
}

/// Triggers `token` from another thread after `ms` (as a Ctrl-C handler would).
fn trigger_after(token: &Arc<CancelToken>, ms: u64) -> thread::JoinHandle<()> {
    let token = Arc::clone(token);
    thread::spawn(move || {
        thread::sleep(Duration::from_millis(ms));
        token.trigger();
    })
}

#[test]
fn an_eager_lm_call_in_a_scope_is_cancelled_and_calls_work_after_it() {
    let ctx = Context::new().unwrap();
    ctx.route("*", &Provider::echo(r#"{"latency_ms": 5000}"#).unwrap())
        .unwrap();
    // 100 ms: long enough that a call still in a fired scope would be cancelled.
    ctx.route("fast", &Provider::echo(r#"{"latency_ms": 100}"#).unwrap())
        .unwrap();
    let token = Arc::new(CancelToken::new().unwrap());
    let msgs = messages("hi");
    let trigger = trigger_after(&token, 100);
    let t0 = Instant::now();
    let err = ctx
        .with_cancel_scope(&token, || ctx.lm_call(&msgs, "m"))
        .unwrap_err();
    let waited = t0.elapsed();
    trigger.join().unwrap();
    assert_eq!(err.code, ErrorCode::Cancelled, "{err}");
    assert!(
        waited < Duration::from_secs(2),
        "the reply takes 5 s; waited {waited:?}"
    );
    assert!(token.is_triggered());

    // A fired token stays fired: the next call in a scope of it ends at once.
    let t0 = Instant::now();
    let err = ctx
        .with_cancel_scope(&token, || ctx.lm_call(&msgs, "fast"))
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::Cancelled);
    assert!(t0.elapsed() < Duration::from_secs(1));

    // After the scope, calls are the thread's own again.
    assert_eq!(ctx.lm_call(&msgs, "fast").unwrap(), "fast|hi");
    // An untriggered scope changes nothing; the closure's value comes back.
    let fresh = CancelToken::new().unwrap();
    let out = ctx
        .with_cancel_scope(&fresh, || ctx.lm_call(&msgs, "fast"))
        .unwrap();
    assert_eq!(out, "fast|hi");
}

#[test]
fn a_blocking_host_call_in_a_scope_is_cancelled() {
    let ctx = Context::new().unwrap();
    ctx.register_function_blocking("sleepy", &Value::from("str"), |_args| {
        thread::sleep(Duration::from_secs(3));
        Ok(Value::from("late"))
    })
    .unwrap();
    let token = Arc::new(CancelToken::new().unwrap());
    let trigger = trigger_after(&token, 100);
    let t0 = Instant::now();
    let err = ctx
        .with_cancel_scope(&token, || ctx.host_call("sleepy", &[Value::from("x")]))
        .unwrap_err();
    trigger.join().unwrap();
    assert_eq!(err.code, ErrorCode::Cancelled, "{err}");
    assert!(
        t0.elapsed() < Duration::from_secs(2),
        "the function sleeps 3 s"
    );
}

#[test]
fn scopes_nest_and_belong_to_their_thread() {
    let ctx = Context::new().unwrap();
    // 200 ms: a call that is not stopped really waits for its reply.
    ctx.route("*", &Provider::echo(r#"{"latency_ms": 200}"#).unwrap())
        .unwrap();
    let (outer, inner) = (CancelToken::new().unwrap(), CancelToken::new().unwrap());
    let msgs = messages("hi");
    let cancelled = |r: libaf::Result<Value>| r.unwrap_err().code == ErrorCode::Cancelled;
    ctx.with_cancel_scope(&outer, || {
        ctx.with_cancel_scope(&inner, || {
            // Neither token fired: calls run.
            assert_eq!(ctx.lm_call(&msgs, "m")?, "m|hi");
            // The outer token stops what runs inside the inner scope too: an
            // inner scope never shields from an outer one.
            outer.trigger();
            assert!(cancelled(ctx.lm_call(&msgs, "m")));
            // Another thread's calls on the context are not in these scopes.
            thread::scope(|s| {
                let other = s.spawn(|| ctx.lm_call(&msgs, "m"));
                assert_eq!(other.join().unwrap().unwrap(), "m|hi");
            });
            Ok(())
        })?;
        // Back in the outer scope: its token has fired.
        assert!(cancelled(ctx.lm_call(&msgs, "m")));
        Ok(())
    })
    .unwrap();
    // Outside both scopes, calls run again.
    assert_eq!(ctx.lm_call(&msgs, "m").unwrap(), "m|hi");

    // A fired token ends nothing outside its own scope: the inner token
    // stops the inner scope's calls, not the (unfired) outer scope's.
    let outer = CancelToken::new().unwrap();
    ctx.with_cancel_scope(&outer, || {
        inner.trigger();
        ctx.with_cancel_scope(&inner, || {
            assert!(cancelled(ctx.lm_call(&msgs, "m")));
            Ok(())
        })?;
        assert_eq!(ctx.lm_call(&msgs, "m")?, "m|hi");
        Ok(())
    })
    .unwrap();
    assert_eq!(ctx.lm_call(&msgs, "m").unwrap(), "m|hi");
}

#[test]
fn the_closure_error_comes_back_and_a_panic_still_pops() {
    let ctx = Context::new().unwrap();
    ctx.route("*", &Provider::echo(r#"{"latency_ms": 100}"#).unwrap())
        .unwrap();
    let token = CancelToken::new().unwrap();
    let err = ctx
        .with_cancel_scope(&token, || -> libaf::Result<()> {
            Err(libaf::Error::new(ErrorCode::NotFound, "mine"))
        })
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::NotFound);
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = ctx.with_cancel_scope(&token, || -> libaf::Result<()> { panic!("boom") });
    }));
    assert!(panicked.is_err());
    // Both scopes were popped: a fired token no longer reaches this thread's calls.
    token.trigger();
    assert_eq!(ctx.lm_call(messages("hi"), "m").unwrap(), "m|hi");
    // No scope is left open on this thread: a raw pop has nothing to pop.
    let left_open = raw_code(unsafe { sys::af_cancel_scope_pop(ctx.as_ptr()) });
    assert_eq!(left_open, sys::AF_ERR_INVALID_ARGUMENT);
}

/// A pop without a push cannot be written with `with_cancel_scope`; the C
/// API refuses one made through `sys`.
#[test]
fn the_raw_api_refuses_a_pop_without_a_push() {
    let ctx = Context::new().unwrap();
    let token = CancelToken::new().unwrap();
    let code = raw_code;
    unsafe {
        assert_eq!(
            code(sys::af_cancel_scope_pop(ctx.as_ptr())),
            sys::AF_ERR_INVALID_ARGUMENT
        );
        assert_eq!(
            code(sys::af_cancel_scope_push(
                std::ptr::null_mut(),
                token.as_ptr()
            )),
            sys::AF_ERR_INVALID_ARGUMENT
        );
        assert_eq!(
            code(sys::af_cancel_scope_push(ctx.as_ptr(), std::ptr::null())),
            sys::AF_ERR_INVALID_ARGUMENT
        );
        assert_eq!(
            code(sys::af_cancel_scope_push(ctx.as_ptr(), token.as_ptr())),
            0
        );
        assert_eq!(code(sys::af_cancel_scope_pop(ctx.as_ptr())), 0);
    }
}
