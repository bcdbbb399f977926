//! Streaming runs, sampling params, fallback routes and provider options.

mod common;

use std::sync::{Arc, Mutex};

use libaf::{Context, ErrorCode, Program, Provider, RunOptions, Value};

fn ask(ctx: &Context, params: Option<&str>) -> libaf::Ir {
    let params = params.map(|p| Value::from_json(p).unwrap());
    ctx.trace(
        move |ctx, i| {
            let msg = Value::dict([("role", Value::from("user")), ("content", i[0].clone())])?;
            let msgs = Value::list(&[msg]);
            match &params {
                Some(p) => ctx.lm_call_with(&msgs, &Value::from("m"), p),
                None => ctx.lm_call(&msgs, &Value::from("m")),
            }
        },
        &[Value::from("q")],
        None,
    )
    .unwrap()
}

/// Pieces by (equation, item); a reset clears its text.
type Seen = Arc<Mutex<Vec<(u32, u64, String)>>>;

fn collector(seen: &Seen) -> RunOptions {
    let seen = seen.clone();
    RunOptions {
        stream: Some(Arc::new(move |eqn: u32, item: u64, piece: Option<&str>| {
            let mut s = seen.lock().unwrap();
            match piece {
                Some(p) => match s.iter_mut().find(|(e, i, _)| *e == eqn && *i == item) {
                    Some(entry) => entry.2.push_str(p),
                    None => s.push((eqn, item, p.to_string())),
                },
                None => s.retain(|(e, i, _)| !(*e == eqn && *i == item)),
            }
        })),
        ..RunOptions::default()
    }
}

#[test]
fn a_streamed_run_delivers_the_reply_in_pieces() {
    let ctx = Context::new().unwrap();
    let echo = Provider::echo("").unwrap();
    ctx.route("*", &echo).unwrap();
    let prog = Program::compile(&ctx, &ask(&ctx, None)).unwrap();
    let seen: Seen = Arc::default();
    let out = prog
        .call_with(&ctx, &[Value::from("one two")], &collector(&seen))
        .unwrap();
    assert_eq!(out.as_str().unwrap(), "m|one two");
    assert_eq!(*seen.lock().unwrap(), vec![(0, 0, "m|one two".to_string())]);
    // A tag nothing carries: no piece.
    let seen: Seen = Arc::default();
    let mut opts = collector(&seen);
    opts.stream_tag = Some("live".into());
    prog.call_with(&ctx, &[Value::from("x")], &opts).unwrap();
    assert!(seen.lock().unwrap().is_empty());
}

#[test]
fn a_host_provider_streams_and_restarts() {
    let ctx = Context::new().unwrap();
    let host = Provider::host(|req| {
        let streaming = req.json().unwrap().key("stream").is_ok();
        if streaming {
            req.stream("wro").unwrap();
            req.restart_stream().unwrap();
            req.stream("he").unwrap();
            req.stream("llo").unwrap();
        }
        req.complete("hello").unwrap();
    })
    .unwrap();
    ctx.route("*", &host).unwrap();
    let prog = Program::compile(&ctx, &ask(&ctx, None)).unwrap();
    let seen: Seen = Arc::default();
    let out = prog
        .call_with(&ctx, &[Value::from("q")], &collector(&seen))
        .unwrap();
    assert_eq!(out.as_str().unwrap(), "hello");
    assert_eq!(*seen.lock().unwrap(), vec![(0, 0, "hello".to_string())]);
}

#[test]
fn sampling_params_are_in_the_ir_and_checked() {
    let ctx = Context::new().unwrap();
    let ir = ask(
        &ctx,
        Some(r#"{"temperature": 0, "max_tokens": 16, "stop": ["\n"]}"#),
    );
    let text = ir.to_text().unwrap();
    assert!(
        text.contains("temperature=0.0") && text.contains("max_tokens=16"),
        "{text}"
    );
    let err = ctx
        .trace(
            |ctx, i| {
                let msg = Value::dict([("role", Value::from("user")), ("content", i[0].clone())])?;
                ctx.lm_call_with(
                    &Value::list(&[msg]),
                    &Value::from("m"),
                    &Value::from_json(r#"{"top_p": 2}"#)?,
                )
            },
            &[Value::from("q")],
            None,
        )
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
    assert!(err.message.contains("top_p"), "{}", err.message);
}

#[test]
fn a_fallback_route_asks_the_next_provider() {
    let ctx = Context::new().unwrap();
    let down = Provider::host(|req| {
        req.fail(libaf::Error::new(ErrorCode::Provider, "down"))
            .unwrap();
    })
    .unwrap();
    let echo = Provider::echo("").unwrap();
    ctx.route_fallback("*", &[&down, &echo]).unwrap();
    let out = ask(&ctx, None).call(&ctx, &[Value::from("q")]).unwrap();
    assert_eq!(out.as_str().unwrap(), "m|q");
    let err = ctx.route_fallback("*", &[]).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
}

#[test]
fn provider_options_change_and_show_in_stats() {
    let echo = Provider::echo(r#"{"requests_per_minute": 60}"#).unwrap();
    echo.set_options(r#"{"schema_retries": 2, "tokens_per_minute": 9000}"#)
        .unwrap();
    let stats = echo.stats().unwrap();
    assert_eq!(
        stats.key("requests_per_minute").unwrap().as_int().unwrap(),
        60
    );
    assert_eq!(
        stats.key("tokens_per_minute").unwrap().as_int().unwrap(),
        9000
    );
    assert_eq!(stats.key("schema_retries").unwrap().as_int().unwrap(), 2);
    let err = echo.set_options(r#"{"rpm": 1}"#).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
    assert!(err.message.contains("rpm"), "{}", err.message);
}
