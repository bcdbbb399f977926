//! Lazy contexts from Rust: promises evaluate on read, `eval` runs
//! independent LM calls together, dropped promises never run, the plan cache
//! compiles a repeated structure once, errors keep their origin.

use std::time::Instant;

use af::{Context, ErrorCode, Provider, Value};

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
    assert_eq!(h.kind(), af::Kind::Str);
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
