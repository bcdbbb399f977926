//! Dropping a Future cancels its run; a host closure's or host provider's
//! own error is at the end of the caller's `source()` chain; hints name this
//! crate's methods.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use libaf::{Context, Error, ErrorCode, Ir, LmRequest, Program, Provider, Value};

/// ask(q, model) = lm_call([{"role": "user", "content": q}], model)
fn trace_ask(ctx: &Context) -> Ir {
    ctx.trace(
        |ctx, i| {
            let msg = Value::dict([("role", Value::from("user")), ("content", i[0].clone())])?;
            ctx.lm_call(&Value::list(&[msg]), &i[1])
        },
        &[Value::from("q"), Value::from("m")],
        None,
    )
    .unwrap()
}

#[test]
fn dropping_a_future_cancels_its_run() {
    let ctx = Context::new().unwrap();
    let parked: Arc<Mutex<Vec<LmRequest>>> = Arc::new(Mutex::new(Vec::new()));
    let (tx, rx) = mpsc::channel();
    let (store, tx) = (parked.clone(), Mutex::new(tx));
    let host = Provider::host(move |req| {
        store.lock().unwrap().push(req);
        let _ = tx.lock().unwrap().send(());
    })
    .unwrap();
    ctx.route("*", &host).unwrap();
    let p = Program::compile(&ctx, &trace_ask(&ctx)).unwrap();
    let f = p
        .call_async(&ctx, &[Value::from("q"), Value::from("m")])
        .unwrap();
    rx.recv_timeout(Duration::from_secs(10)).unwrap();
    drop(f);
    let req = parked.lock().unwrap().pop().unwrap();
    assert!(
        req.cancelled(),
        "the dropped future's run was not cancelled"
    );
    req.complete("late").unwrap();

    // Dropping a finished future changes nothing.
    let echo = Provider::echo("").unwrap();
    ctx.route("*", &echo).unwrap();
    let f = p
        .call_async(&ctx, &[Value::from("a"), Value::from("m")])
        .unwrap();
    assert_eq!(f.wait().unwrap().as_str().unwrap(), "m|a");
    drop(f);
}

#[derive(Debug)]
struct NoResults(String);

impl std::fmt::Display for NoResults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "no results for {}", self.0)
    }
}
impl std::error::Error for NoResults {}

/// The first error of `err`'s source chain that is a `NoResults`.
fn find_no_results(err: &Error) -> Option<&NoResults> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = cur {
        if let Some(n) = e.downcast_ref::<NoResults>() {
            return Some(n);
        }
        cur = e.source();
    }
    None
}

#[test]
fn a_host_closures_own_error_ends_the_source_chain() {
    let ctx = Context::new().unwrap();
    ctx.register_function("search", &Value::from("str"), |args| {
        Err(Error::wrap(
            ErrorCode::NotFound,
            NoResults(args[0].as_str()?.to_string()),
        ))
    })
    .unwrap();
    let ir = ctx
        .trace(
            |ctx, i| ctx.host_call("search", &i[..1]),
            &[Value::from("x")],
            None,
        )
        .unwrap();
    let p = Program::compile(&ctx, &ir).unwrap();
    let err = p.call(&ctx, &[Value::from("cats")]).unwrap_err();
    assert_eq!(err.code, ErrorCode::Callback);
    assert_eq!(err.cause().unwrap().code, ErrorCode::NotFound);
    assert_eq!(
        find_no_results(&err).map(|n| n.0.as_str()),
        Some("cats"),
        "{err:#}"
    );

    let err = ctx.host_call("search", &[Value::from("dogs")]).unwrap_err();
    assert_eq!(
        find_no_results(&err).map(|n| n.0.as_str()),
        Some("dogs"),
        "{err:#}"
    );

    // An libaf::Error with causes comes back whole.
    ctx.register_function("layered", &Value::from("str"), |_| {
        Err(Error::new(ErrorCode::Provider, "outer").with_cause(Error::new(ErrorCode::Io, "disk")))
    })
    .unwrap();
    let err = ctx.host_call("layered", &[]).unwrap_err();
    let codes: Vec<ErrorCode> = err.chain().map(|e| e.code).collect();
    assert_eq!(
        codes,
        [ErrorCode::Callback, ErrorCode::Provider, ErrorCode::Io],
        "{err:#}"
    );
}

#[test]
fn a_host_providers_own_error_ends_the_source_chain() {
    let ctx = Context::new().unwrap();
    let host = Provider::host(|req| {
        let _ = req.fail(Error::wrap(ErrorCode::Provider, NoResults("model".into())));
    })
    .unwrap();
    ctx.route("*", &host).unwrap();
    let p = Program::compile(&ctx, &trace_ask(&ctx)).unwrap();
    let err = p
        .call(&ctx, &[Value::from("q"), Value::from("m")])
        .unwrap_err();
    assert_eq!(
        find_no_results(&err).map(|n| n.0.as_str()),
        Some("model"),
        "{err:#}"
    );
}

#[test]
fn hints_name_this_crates_methods() {
    let ctx = Context::new().unwrap();
    let err = ctx.host_call("nowhere", &[]).unwrap_err();
    assert_eq!(err.code, ErrorCode::NotFound);
    assert!(err.message.contains("Context::register_function"), "{err}");
    assert!(!err.message.contains("af_register_function"), "{err}");
}
