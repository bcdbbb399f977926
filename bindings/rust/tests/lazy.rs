//! Lazy contexts from Rust: promises evaluate on read, `eval` runs
//! independent LM calls together, dropped promises never run, the plan cache
//! compiles a repeated structure once, errors keep their origin, an
//! evaluation can be stopped (`eval_with`, `"eval_timeout_ms"`), and a
//! promise keeps its context alive.

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use libaf::{CancelToken, Context, ErrorCode, Provider, RunOptions, Value};

fn ask(ctx: &Context, q: &str) -> Value {
    let msg = Value::dict([("role", Value::from("user")), ("content", Value::from(q))]).unwrap();
    ctx.lm_call(&Value::list(&[msg]), &Value::from("m")).unwrap()
}

fn counter(stats: &Value, section: &str, field: &str) -> i64 {
    stats.key(section).unwrap().key(field).unwrap().as_int().unwrap()
}

#[test]
fn a_promise_evaluates_when_read() {
    let ctx = Context::new_lazy().unwrap();
    let h = ctx.format("Hello {}", &[Value::from("lazy")], None).unwrap();
    assert_eq!(h.kind(), libaf::Kind::Str);
    assert!(!h.is_ready());
    assert_eq!(h.as_str().unwrap(), "Hello lazy");
    assert!(h.is_ready());
    let s = ctx.stats().unwrap();
    assert_eq!(counter(&s, "lazy", "evaluated"), 1);
}

#[test]
fn eval_runs_ten_calls_together() {
    let ctx = Context::new_lazy().unwrap();
    let echo = Provider::echo(r#"{"latency_ms": 200}"#).unwrap();
    ctx.route("*", &echo).unwrap();
    let outs: Vec<Value> = (0..10).map(|i| ask(&ctx, &format!("q{i}"))).collect();
    let t0 = Instant::now();
    ctx.eval(&outs).unwrap();
    let took = t0.elapsed().as_millis();
    assert!(took < 1500, "10 calls of 200 ms took {took} ms");
    assert_eq!(outs[4].as_str().unwrap(), "m|q4");
    assert_eq!(
        echo.stats().unwrap().key("peak_in_flight").unwrap().as_int().unwrap(),
        10
    );
}

#[test]
fn a_dropped_promise_makes_no_call() {
    let ctx = Context::new_lazy().unwrap();
    let echo = Provider::echo("").unwrap();
    ctx.route("*", &echo).unwrap();
    drop(ask(&ctx, "never"));
    let kept = ask(&ctx, "kept");
    assert_eq!(kept.as_str().unwrap(), "m|kept");
    assert_eq!(echo.stats().unwrap().key("submitted").unwrap().as_int().unwrap(), 1);
    assert_eq!(counter(&ctx.stats().unwrap(), "lazy", "dropped"), 1);
}

#[test]
fn a_loop_compiles_once_and_foreign_promises_are_refused() {
    let ctx = Context::with_options(r#"{"lazy": true, "plan_cache": {"max_entries": 8}}"#).unwrap();
    for i in 0..50 {
        let v = ctx.concat(&[Value::from("n"), Value::from(i.to_string().as_str())]).unwrap();
        assert_eq!(v.as_str().unwrap(), format!("n{i}"));
    }
    let s = ctx.stats().unwrap();
    assert_eq!(counter(&s, "plan_cache", "misses"), 1);
    assert_eq!(counter(&s, "plan_cache", "hits"), 49);

    let other = Context::new_lazy().unwrap();
    let foreign = other.format("{}", &[Value::from("x")], None).unwrap();
    let err = ctx.format("{}", &[foreign.clone()], None).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
    assert!(err.message.contains("another lazy context"), "{err}");
    assert_eq!(Context::with_options(r#"{"lazy": 1}"#).unwrap_err().code, ErrorCode::InvalidArgument);
}

/// A lazy context (with `options`) whose LM calls take 3 s.
fn slow_lazy(options: &str) -> Context {
    let ctx = Context::with_options(options).unwrap();
    ctx.route("*", &Provider::echo(r#"{"latency_ms": 3000}"#).unwrap()).unwrap();
    ctx
}

#[test]
fn eval_with_a_timeout_stops_the_evaluation() {
    let ctx = slow_lazy(r#"{"lazy": true}"#);
    let p = ask(&ctx, "slow");
    let opts = RunOptions {
        timeout: Some(Duration::from_millis(100)),
        ..Default::default()
    };
    let t0 = Instant::now();
    let err = ctx.eval_with(std::slice::from_ref(&p), &opts).unwrap_err();
    assert_eq!(err.code, ErrorCode::Timeout, "{err}");
    assert!(t0.elapsed() < Duration::from_secs(2), "took {:?}", t0.elapsed());
    // The promise holds the evaluation's error: reading it runs nothing.
    assert!(p.is_ready());
    assert_eq!(p.as_str().unwrap_err().code, ErrorCode::Timeout);
    assert!(t0.elapsed() < Duration::from_secs(2), "the read waited: {:?}", t0.elapsed());
    assert_eq!(counter(&ctx.stats().unwrap(), "lazy", "timed_out"), 1);
    // summary is for asynchronous runs; eval_with_summary returns it.
    let summary_flag = RunOptions { summary: true, ..Default::default() };
    let err = ctx.eval_with(&[], &summary_flag).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
    assert!(err.message.contains("Context::eval_with_summary"), "{err}");
}

#[test]
fn a_cancel_token_stops_eval_with() {
    let ctx = slow_lazy(r#"{"lazy": true}"#);
    let p = ask(&ctx, "slow");
    let token = Arc::new(CancelToken::new().unwrap());
    let trigger = {
        let token = Arc::clone(&token);
        thread::spawn(move || {
            thread::sleep(Duration::from_millis(100));
            token.trigger();
        })
    };
    let opts = RunOptions {
        cancel: Some(token),
        ..Default::default()
    };
    let t0 = Instant::now();
    let err = ctx.eval_with(std::slice::from_ref(&p), &opts).unwrap_err();
    trigger.join().unwrap();
    assert_eq!(err.code, ErrorCode::Cancelled, "{err}");
    assert!(t0.elapsed() < Duration::from_secs(2), "took {:?}", t0.elapsed());
    assert_eq!(p.as_str().unwrap_err().code, ErrorCode::Cancelled);
    assert_eq!(counter(&ctx.stats().unwrap(), "lazy", "cancelled"), 1);
}

#[test]
fn eval_with_summary_reports_the_evaluation() {
    let ctx = Context::new_lazy().unwrap();
    ctx.route("*", &Provider::echo("").unwrap()).unwrap();
    let outs = [ask(&ctx, "a"), ask(&ctx, "b")];
    let (result, summary) = ctx.eval_with_summary(&outs, &RunOptions::default());
    result.unwrap();
    let summary = Value::from_json(&summary.expect("a summary")).unwrap();
    assert_eq!(summary.key("total").unwrap().key("calls").unwrap(), 2);
    assert_eq!(outs[1].as_str().unwrap(), "m|b");
}

#[test]
fn the_context_eval_timeout_bounds_a_read() {
    let ctx = slow_lazy(r#"{"lazy": true, "eval_timeout_ms": 100}"#);
    let p = ask(&ctx, "slow");
    let t0 = Instant::now();
    assert_eq!(p.as_str().unwrap_err().code, ErrorCode::Timeout);
    assert!(t0.elapsed() < Duration::from_secs(2), "took {:?}", t0.elapsed());
    // eval_with's own timeout replaces it.
    let q = ask(&ctx, "also slow");
    let opts = RunOptions {
        timeout: Some(Duration::from_millis(200)),
        ..Default::default()
    };
    assert_eq!(ctx.eval_with(&[q], &opts).unwrap_err().code, ErrorCode::Timeout);
}

/// Values are not tied to a context by a lifetime, so a pending promise holds
/// the context itself: dropping the `Context` first must not free it.
#[test]
fn a_promise_keeps_its_context_alive() {
    let ctx = Context::new_lazy().unwrap();
    ctx.route("*", &Provider::echo("").unwrap()).unwrap();
    let reply = ask(&ctx, "kept");
    let greeting = ctx.format("Hello {}", &[Value::from("ctx")], None).unwrap();
    let both = Value::list(&[greeting.clone(), reply.clone()]);
    let first = both.index(0).unwrap();
    let shout = ctx.concat(&[reply.clone(), Value::from("!")]).unwrap();
    drop(ctx);
    assert_eq!(reply.as_str().unwrap(), "m|kept");
    drop((reply, greeting)); // the list and its item still hold the context
    assert_eq!(both.to_json().unwrap(), r#"["Hello ctx","m|kept"]"#);
    assert_eq!(first, "Hello ctx");
    drop((both, first));
    assert_eq!(shout, "m|kept!");

    // A concrete value holds nothing: into_raw gives the context away.
    let ctx = Context::new_lazy().unwrap();
    let v = ctx.format("{}", &[Value::from("x")], None).unwrap();
    assert_eq!(v, "x");
    drop(v);
    let raw = ctx.into_raw();
    unsafe { libaf::sys::af_context_free(raw) };
}
