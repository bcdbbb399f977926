//! Compiled programs run sync and async with the echo provider, a host
//! provider answering from another thread, cancellation, routes and LM
//! errors.

mod common;

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use libaf::{Context, Error, ErrorCode, Ir, LmRequest, Program, Provider, RunOptions, Value};

fn json(s: &str) -> Value {
    Value::from_json(s).unwrap()
}

/// ask(q, model) = lm_call([{"role": "user", "content": format("Q:{}", q)}], model)
fn trace_ask(ctx: &Context) -> Ir {
    ctx.trace(
        |ctx, i| {
            let content = ctx.format("Q:{}", &i[..1], None)?;
            let msg = Value::dict([("role", Value::from("user")), ("content", content)])?;
            ctx.lm_call(&Value::list(&[msg]), &i[1])
        },
        &[Value::from("q"), Value::from("m")],
        None,
    )
    .unwrap()
}

#[test]
fn a_compiled_program_runs_sync_and_async_with_echo() {
    let ctx = Context::new().unwrap();
    ctx.route("*", &Provider::echo("").unwrap()).unwrap();
    let ir = trace_ask(&ctx);
    assert_eq!(ir.eqn_prims(), vec!["format", "lm_call"]);
    let p = Program::compile(&ctx, &ir).unwrap();
    let out = p
        .call(&ctx, &[Value::from("hi"), Value::from("gpt-test")])
        .unwrap();
    assert_eq!(out.as_str().unwrap(), "gpt-test|Q:hi");

    let f = p
        .call_async(&ctx, &[Value::from("there"), Value::from("m2")])
        .unwrap();
    assert_eq!(f.wait().unwrap().as_str().unwrap(), "m2|Q:there");
    assert!(f.ready());
    // wait again: same result.
    assert_eq!(f.wait().unwrap().as_str().unwrap(), "m2|Q:there");

    // on_done runs once the run finishes.
    let (tx, rx) = mpsc::channel();
    let f = p
        .call_async(&ctx, &[Value::from("x"), Value::from("m")])
        .unwrap();
    f.on_done(move || tx.send(()).unwrap()).unwrap();
    rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(f.ready());
    assert_eq!(f.wait().unwrap().as_str().unwrap(), "m|Q:x");

    // Input errors come back from call_async itself.
    let err = p.call_async(&ctx, &[Value::from(1)]).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
}

#[test]
fn run_options_profile_progress_and_timeout() {
    let ctx = Context::new().unwrap();
    ctx.route("slow", &Provider::echo(r#"{"latency_ms": 2000}"#).unwrap())
        .unwrap();
    ctx.route("*", &Provider::echo("").unwrap()).unwrap();
    let p = Program::compile(&ctx, &trace_ask(&ctx)).unwrap();

    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let opts = RunOptions {
        profile: true,
        progress: Some(Arc::new(move |done, total| {
            s.lock().unwrap().push((done, total))
        })),
        ..RunOptions::default()
    };
    let f = p
        .call_async_with(&ctx, &[Value::from("a"), Value::from("m")], &opts)
        .unwrap();
    assert_eq!(f.wait().unwrap().as_str().unwrap(), "m|Q:a");
    assert!(f.profile().unwrap().contains("traceEvents"));
    assert_eq!(seen.lock().unwrap().last(), Some(&(2, 2)));

    let f = p
        .call_async(&ctx, &[Value::from("a"), Value::from("m")])
        .unwrap();
    f.wait().unwrap();
    assert_eq!(f.profile().unwrap_err().code, ErrorCode::InvalidArgument);

    let opts = RunOptions {
        timeout: Some(Duration::from_millis(50)),
        ..RunOptions::default()
    };
    let err = p
        .call_with(&ctx, &[Value::from("a"), Value::from("slow")], &opts)
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::Timeout);
}

#[test]
fn keep_going_turns_failed_outputs_into_error_leaves() {
    let ctx = Context::new().unwrap();
    ctx.route("ok", &Provider::echo("").unwrap()).unwrap();
    let ir = ctx
        .trace(
            |ctx, i| {
                let msg = Value::dict([("role", Value::from("user")), ("content", i[0].clone())])?;
                let msgs = Value::list(&[msg]);
                let a = ctx.lm_call(&msgs, &Value::from("ok"))?;
                let b = ctx.lm_call(&msgs, &Value::from("nowhere"))?;
                Ok(Value::list(&[a, b]))
            },
            &[Value::from("q")],
            None,
        )
        .unwrap();
    let p = Program::compile(&ctx, &ir).unwrap();
    let err = p.call(&ctx, &[Value::from("x")]).unwrap_err();
    assert_eq!(err.code, ErrorCode::NotFound);
    assert!(err.message.contains("nowhere"), "{err}");
    let opts = RunOptions {
        keep_going: true,
        ..RunOptions::default()
    };
    let out = p.call_with(&ctx, &[Value::from("x")], &opts).unwrap();
    assert_eq!(out.index(0).unwrap().as_str().unwrap(), "ok|x");
    let e = out.index(1).unwrap().key("error").unwrap();
    assert_eq!(e.key("code").unwrap().as_int().unwrap(), 2);
    assert_eq!(e.key("name").unwrap().as_str().unwrap(), "NOT_FOUND");
}

/// A host provider failing every third item ("q<i>", i % 3 == 0) at once
/// and answering the others 30 ms later; counts answers found cancelled.
fn fail_every_third(cancelled: Arc<Mutex<u32>>) -> Provider {
    Provider::host(move |req: LmRequest| {
        let cancelled = cancelled.clone();
        thread::spawn(move || {
            let j = req.json().unwrap();
            let msgs = j.key("messages").unwrap();
            let last = msgs.index(msgs.len().unwrap() - 1).unwrap();
            let content = last.key("content").unwrap().as_str().unwrap().to_string();
            let i: u32 = content[1..].parse().unwrap();
            if i % 3 == 0 {
                req.fail(Error::new(ErrorCode::Provider, &format!("item {content} refused")))
                    .unwrap();
                return;
            }
            thread::sleep(Duration::from_millis(30));
            if req.cancelled() {
                *cancelled.lock().unwrap() += 1;
            }
            req.complete(&format!("ok {content}")).unwrap();
        });
    })
    .unwrap()
}

#[test]
fn item_errors_isolate_the_items_of_a_batched_run() {
    let ctx = Context::new().unwrap();
    let cancelled = Arc::new(Mutex::new(0));
    ctx.route("m", &fail_every_third(cancelled.clone())).unwrap();
    let one = ctx
        .trace(
            |ctx, i| {
                let msg = Value::dict([("role", Value::from("user")), ("content", i[0].clone())])?;
                let a = ctx.lm_call(&Value::list(&[msg]), &Value::from("m"))?;
                let marked = ctx.concat(&[a.clone(), Value::from("!")])?;
                Ok(Value::list(&[a, marked]))
            },
            &[Value::from("q")],
            None,
        )
        .unwrap();
    let p = Program::compile(&ctx, &one.batch(&ctx, None).unwrap()).unwrap();
    let qs: Vec<Value> = (0..9).map(|i| Value::from(format!("q{i}").as_str())).collect();
    let opts = RunOptions {
        item_errors: true,
        ..RunOptions::default()
    };
    let out = p.call_with(&ctx, &[Value::list(&qs)], &opts).unwrap();
    let (answers, marked) = (out.index(0).unwrap(), out.index(1).unwrap());
    assert_eq!(answers.len().unwrap(), 9);
    for i in 0..9 {
        let (a, m) = (answers.index(i).unwrap(), marked.index(i).unwrap());
        if i % 3 == 0 {
            let e = a.key("error").unwrap();
            assert_eq!(e.key("code").unwrap().as_int().unwrap(), 6);
            assert_eq!(e.key("name").unwrap().as_str().unwrap(), "PROVIDER");
            let msg = e.key("message").unwrap().as_str().unwrap().to_string();
            assert!(msg.contains(&format!("item q{i} refused")), "{msg}");
            assert_eq!(m.to_json().unwrap(), a.to_json().unwrap());
        } else {
            assert_eq!(a.as_str().unwrap(), format!("ok q{i}"));
            assert_eq!(m.as_str().unwrap(), format!("ok q{i}!"));
        }
    }
    assert_eq!(*cancelled.lock().unwrap(), 0);
    let err = p.call(&ctx, &[Value::list(&qs)]).unwrap_err();
    assert_eq!(err.code, ErrorCode::Provider);
    thread::sleep(Duration::from_millis(100)); // the cancelled run's answers finish
}

#[test]
fn a_host_provider_answers_from_another_thread() {
    let ctx = Context::new().unwrap();
    let host = Provider::host(|req: LmRequest| {
        thread::spawn(move || {
            let j = req.json().unwrap();
            let model = j.key("model").unwrap().as_str().unwrap();
            let msgs = j.key("messages").unwrap();
            let last = msgs.index(msgs.len().unwrap() - 1).unwrap();
            let content = last.key("content").unwrap().as_str().unwrap();
            if model == "fail" {
                req.fail(Error::new(ErrorCode::Provider, "host says no"))
                    .unwrap();
            } else {
                req.complete(&format!("host:{model}:{content}")).unwrap();
            }
        });
    })
    .unwrap();
    ctx.route("*", &host).unwrap();
    let p = Program::compile(&ctx, &trace_ask(&ctx)).unwrap();
    let out = p
        .call(&ctx, &[Value::from("hi"), Value::from("mine")])
        .unwrap();
    assert_eq!(out.as_str().unwrap(), "host:mine:Q:hi");
    let f = p
        .call_async(&ctx, &[Value::from("yo"), Value::from("m")])
        .unwrap();
    assert_eq!(f.wait().unwrap().as_str().unwrap(), "host:m:Q:yo");

    let err = p
        .call(&ctx, &[Value::from("hi"), Value::from("fail")])
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::Provider);
    assert!(format!("{err:#}").contains("host says no"), "{err:#}");

    let stats = host.stats().unwrap();
    assert_eq!(stats.key("finished").unwrap().as_int().unwrap(), 3);

    // Outside a trace, lm_call makes one blocking request.
    let msgs = json(r#"[{"role":"user","content":"direct"}]"#);
    assert_eq!(
        ctx.lm_call(&msgs, &Value::from("d"))
            .unwrap()
            .as_str()
            .unwrap(),
        "host:d:direct"
    );
}

#[test]
fn cancelling_a_run_fails_it_with_cancelled() {
    let ctx = Context::new().unwrap();
    let parked: Arc<Mutex<Vec<LmRequest>>> = Arc::new(Mutex::new(Vec::new()));
    let (tx, rx) = mpsc::channel();
    let store = parked.clone();
    let tx = Mutex::new(tx);
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
    assert!(!f.ready());
    f.cancel();
    assert_eq!(f.wait().unwrap_err().code, ErrorCode::Cancelled);
    let req = parked.lock().unwrap().pop().unwrap();
    assert!(req.cancelled());
    // Finishing a cancelled request is still required and harmless.
    req.complete("late").unwrap();
}

#[test]
fn schema_calls_and_provider_errors() {
    let ctx = Context::new().unwrap();
    let echo = Provider::echo(r#"{"max_in_flight": 2, "name": "e"}"#).unwrap();
    ctx.route("*", &echo).unwrap();
    let schema = json(
        r#"{"answer": {"type": "str", "min": 2}, "score": {"type": "int", "min": 3, "max": 9}}"#,
    );
    let msgs = json(r#"[{"role":"user","content":"rate"}]"#);
    let out = ctx
        .lm_schema_call(&msgs, &Value::from("m"), &schema)
        .unwrap();
    assert_eq!(out.key("score").unwrap().as_int().unwrap(), 3);
    assert_eq!(
        out.key("answer").unwrap().as_str().unwrap().chars().count(),
        2
    );

    echo.set_max_in_flight(4).unwrap();
    assert_eq!(
        echo.stats()
            .unwrap()
            .key("max_in_flight")
            .unwrap()
            .as_int()
            .unwrap(),
        4
    );
    assert_eq!(
        echo.clone()
            .stats()
            .unwrap()
            .key("submitted")
            .unwrap()
            .as_int()
            .unwrap(),
        1
    );

    let bad = json(r#"[{"content":"no role"}]"#);
    assert_eq!(
        ctx.lm_call(&bad, &Value::from("m")).unwrap_err().code,
        ErrorCode::InvalidArgument
    );

    assert_eq!(
        Provider::echo(r#"{"nope": 1}"#).unwrap_err().code,
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        Provider::openai("{}").unwrap_err().code,
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        Provider::replay("{}").unwrap_err().code,
        ErrorCode::InvalidArgument
    );

    let fresh = Context::new().unwrap();
    let err = fresh.lm_call(&msgs, &Value::from("unrouted")).unwrap_err();
    assert_eq!(err.code, ErrorCode::NotFound);
    assert!(err.message.contains("unrouted"), "{err}");
}

#[test]
fn replay_records_then_replays() {
    let path = std::env::temp_dir().join(format!("af_rust_replay_{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let msgs = json(r#"[{"role":"user","content":"rec"}]"#);
    {
        let ctx = Context::new().unwrap();
        let opts = format!(
            r#"{{"path": "{}", "mode": "record", "upstream": {{"type": "echo"}}}}"#,
            path.display()
        );
        ctx.route("*", &Provider::replay(&opts).unwrap()).unwrap();
        assert_eq!(
            ctx.lm_call(&msgs, &Value::from("m"))
                .unwrap()
                .as_str()
                .unwrap(),
            "m|rec"
        );
    }
    let ctx = Context::new().unwrap();
    let opts = format!(r#"{{"path": "{}"}}"#, path.display());
    ctx.route("*", &Provider::replay(&opts).unwrap()).unwrap();
    assert_eq!(
        ctx.lm_call(&msgs, &Value::from("m"))
            .unwrap()
            .as_str()
            .unwrap(),
        "m|rec"
    );
    let other = json(r#"[{"role":"user","content":"never recorded"}]"#);
    assert_eq!(
        ctx.lm_call(&other, &Value::from("m")).unwrap_err().code,
        ErrorCode::NotFound
    );
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_cancel_token_stops_a_blocking_call_from_another_thread() {
    let ctx = Context::new().unwrap();
    ctx.route("*", &Provider::echo(r#"{"latency_ms": 5000}"#).unwrap())
        .unwrap();
    let p = Program::compile(&ctx, &trace_ask(&ctx)).unwrap();
    let token = Arc::new(libaf::CancelToken::new().unwrap());
    assert!(!token.is_triggered());
    let opts = RunOptions {
        cancel: Some(token.clone()),
        ..RunOptions::default()
    };
    let trigger = token.clone();
    let t = thread::spawn(move || {
        thread::sleep(Duration::from_millis(50));
        trigger.trigger();
    });
    let err = p
        .call_with(&ctx, &[Value::from("a"), Value::from("m")], &opts)
        .unwrap_err();
    t.join().unwrap();
    assert_eq!(err.code, ErrorCode::Cancelled);
    assert!(token.is_triggered());
    // Later runs with a triggered token end at once.
    let f = p
        .call_async_with(&ctx, &[Value::from("a"), Value::from("m")], &opts)
        .unwrap();
    assert_eq!(f.wait().unwrap_err().code, ErrorCode::Cancelled);
}

/// A minimal executor: polls `f` on this thread, parking between wakes.
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    use std::task::{Context as TaskContext, Poll, Wake, Waker};
    struct Unpark(thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = TaskContext::from_waker(&waker);
    let mut f = std::pin::pin!(f);
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        thread::park();
    }
}

#[test]
fn a_future_can_be_awaited() {
    let ctx = Context::new().unwrap();
    ctx.route("*", &Provider::echo(r#"{"latency_ms": 30}"#).unwrap())
        .unwrap();
    let p = Program::compile(&ctx, &trace_ask(&ctx)).unwrap();
    let f = p
        .call_async(&ctx, &[Value::from("aw"), Value::from("m")])
        .unwrap();
    let out = block_on(f).unwrap();
    assert_eq!(out.as_str().unwrap(), "m|Q:aw");
    // Two runs awaited together.
    let a = p
        .call_async(&ctx, &[Value::from("1"), Value::from("m")])
        .unwrap();
    let b = p
        .call_async(&ctx, &[Value::from("2"), Value::from("m")])
        .unwrap();
    let (x, y) = block_on(async { (a.await, b.await) });
    assert_eq!(
        (x.unwrap().as_str().unwrap(), y.unwrap().as_str().unwrap()),
        ("m|Q:1".into(), "m|Q:2".into())
    );
}

/// Feedback is text on every field of a schema call: the int and bool
/// fields take text, null is Zero, and a number given as feedback is refused.
#[test]
fn pullback_of_a_schema_call_takes_text_feedback_on_int_and_bool_fields() {
    let ctx = Context::new().unwrap();
    let echo = Provider::echo("{}").unwrap();
    ctx.route("*", &echo).unwrap();
    let schema = json(r#"{"n": {"type": "int"}, "ok": {"type": "bool"}, "why": {"type": "str"}}"#);
    let ir = ctx
        .trace(
            |ctx, i| {
                let msg = Value::dict([("role", Value::from("user")), ("content", i[0].clone())])?;
                ctx.lm_schema_call(&Value::list(&[msg]), &Value::from("m"), &schema)
            },
            &[Value::from("q")],
            None,
        )
        .unwrap();
    let pb = ir.pullback(&ctx).unwrap();
    let feedback = json(
        r#"{"n": "too low for this ticket", "ok": "should be true: the ticket mentions a refund", "why": null}"#,
    );
    let out = pb.call(&ctx, &[json(r#"["ticket"]"#), feedback]).unwrap();
    let advice = out.index(1).unwrap().index(0).unwrap().as_str().unwrap();
    assert!(
        advice.contains("- $.n = 0\n  feedback: too low for this ticket"),
        "{advice}"
    );
    assert!(
        advice.contains("- $.ok = false\n  feedback: should be true: the ticket mentions a refund"),
        "{advice}"
    );

    let bad = json(r#"{"n": 3, "ok": "", "why": ""}"#);
    let err = pb.call(&ctx, &[json(r#"["ticket"]"#), bad]).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
    assert!(err.message.contains("feedback must be text"), "{err}");
    assert!(err.message.contains(r#"input[1]["n"]"#), "{err}");
}

#[test]
fn max_value_bytes_bounds_the_values_a_run_builds() {
    let ctx = Context::new().unwrap();
    // format("{0}{0}...{0}", x): 1000 copies of x, 1000 bytes for x = "a".
    let tmpl = "{0}".repeat(1000);
    let ir = ctx
        .trace(
            |ctx, i| ctx.format(&tmpl, &i[..1], None),
            &[Value::from("x")],
            None,
        )
        .unwrap();
    let p = Program::compile(&ctx, &ir).unwrap();
    let a = [Value::from("a")];

    let small = RunOptions {
        max_value_bytes: Some(100),
        ..RunOptions::default()
    };
    let err = p.call_with(&ctx, &a, &small).unwrap_err();
    assert_eq!(err.code, ErrorCode::OutOfMemory, "{err}");
    assert!(err.message.contains("max_value_bytes"), "{err}");
    assert!(err.message.contains("format"), "{err}");
    // The asynchronous run carries the option too.
    let err = p
        .call_async_with(&ctx, &a, &small)
        .unwrap()
        .wait()
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::OutOfMemory, "{err}");

    // The default (1 GiB), and a budget the result fits exactly.
    let out = p.call_with(&ctx, &a, &RunOptions::default()).unwrap();
    assert_eq!(out.as_str().unwrap(), "a".repeat(1000));
    let exact = RunOptions {
        max_value_bytes: Some(1000),
        ..RunOptions::default()
    };
    assert_eq!(
        p.call_with(&ctx, &a, &exact)
            .unwrap()
            .as_str()
            .unwrap()
            .len(),
        1000
    );

    // 0 would mean the default in C: refused rather than surprising.
    let zero = RunOptions {
        max_value_bytes: Some(0),
        ..RunOptions::default()
    };
    assert_eq!(
        p.call_with(&ctx, &a, &zero).unwrap_err().code,
        ErrorCode::InvalidArgument
    );
}
