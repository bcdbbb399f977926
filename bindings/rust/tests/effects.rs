//! Host functions registered pure or effectful (`register_function_with`,
//! `FunctionOptions`): what compile (dce, cse), memoize and a lazy context
//! may do with their calls, how `Ir::eqn_json` shows it, that saved graphs
//! keep it, the async and blocking registrations with options, and the
//! errors of a bad combination. "send" stands for a tool with an effect
//! (the default), "lookup" for a pure one; both are counted.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, ThreadId};
use std::time::Duration;

use libaf::{Context, ErrorCode, FunctionOptions, Ir, Program, Value};

const PURE: FunctionOptions = FunctionOptions {
    pure: true,
    blocking: false,
};

/// Counts the calls of the closure it is cloned into.
#[derive(Clone, Default)]
struct Calls(Arc<AtomicUsize>);
impl Calls {
    fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
    fn bump(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A counted host function returning its argument with `tag` ("sent:a").
fn tagged(
    calls: &Calls,
    tag: &'static str,
) -> impl Fn(&[Value]) -> libaf::Result<Value> + Send + Sync + 'static {
    let calls = calls.clone();
    move |args| {
        calls.bump();
        Ok(Value::from(format!("{tag}:{}", args[0].as_str()?)))
    }
}

/// Registers "send" (effectful: default options) and "lookup" (pure) on ctx.
fn register_both(ctx: &Context) -> (Calls, Calls) {
    let (sent, looked) = (Calls::default(), Calls::default());
    let str_kind = Value::from("str");
    ctx.register_function_with(
        "send",
        &str_kind,
        &FunctionOptions::default(),
        tagged(&sent, "sent"),
    )
    .unwrap();
    ctx.register_function_with("lookup", &str_kind, &PURE, tagged(&looked, "found"))
        .unwrap();
    (sent, looked)
}

/// f(x) = x, calling send(x) and lookup(x) and reading neither.
fn trace_unused_calls(ctx: &Context) -> Ir {
    ctx.trace(
        |ctx, i| {
            ctx.host_call("send", &i[..1])?;
            ctx.host_call("lookup", &i[..1])?;
            Ok(i[0].clone())
        },
        &[Value::from("x")],
        None,
    )
    .unwrap()
}

/// f(x) = concat(name(x), name(x)): two equal calls of `name`.
fn trace_twice(ctx: &Context, name: &'static str) -> Ir {
    ctx.trace(
        move |ctx, i| {
            let a = ctx.host_call(name, &i[..1])?;
            let b = ctx.host_call(name, &i[..1])?;
            ctx.concat(&[a, b])
        },
        &[Value::from("x")],
        None,
    )
    .unwrap()
}

/// The `af_ir_eqn_json` of every host_call equation of ir, parsed.
fn host_eqns(ir: &Ir) -> Vec<serde_json::Value> {
    (0..ir.eqn_count())
        .filter(|&i| ir.eqn_prim(i) == Some("host_call"))
        .map(|i| serde_json::from_str(&ir.eqn_json(i).unwrap()).unwrap())
        .collect()
}

#[test]
fn an_unused_effectful_call_runs_an_unused_pure_call_does_not() {
    let ctx = Context::new().unwrap();
    let (sent, looked) = register_both(&ctx);
    let ir = trace_unused_calls(&ctx);
    assert_eq!(ir.eqn_prims(), vec!["host_call", "host_call"]);
    assert_eq!(ir.call(&ctx, &[Value::from("a")]).unwrap(), "a");
    assert_eq!((sent.get(), looked.get()), (1, 0));
    let program = Program::compile(&ctx, &ir).unwrap();
    assert_eq!(program.call(&ctx, &[Value::from("b")]).unwrap(), "b");
    assert_eq!((sent.get(), looked.get()), (2, 0));
    // dce keeps the effectful call (even with every output unused) and
    // drops the pure one.
    let dce = ir.dce(&ctx, None).unwrap();
    let names: Vec<String> = host_eqns(&dce)
        .iter()
        .map(|e| e["params"]["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, vec!["send"]);
    let none_used = ir.dce(&ctx, Some(&Value::from(false))).unwrap();
    assert_eq!(none_used.eqn_prims(), vec!["host_call"]);
    assert_eq!(
        none_used.call(&ctx, &[Value::from("c")]).unwrap(),
        Value::null()
    );
    assert_eq!((sent.get(), looked.get()), (3, 0));
}

#[test]
fn the_registrations_without_options_stay_effectful() {
    let ctx = Context::new().unwrap();
    let (sync, blocking, not_waited) = (Calls::default(), Calls::default(), Calls::default());
    let str_kind = Value::from("str");
    ctx.register_function("sync", &str_kind, tagged(&sync, "s"))
        .unwrap();
    ctx.register_function_blocking("blocking", &str_kind, tagged(&blocking, "b"))
        .unwrap();
    let seen = not_waited.clone();
    ctx.register_function_async("async", &str_kind, move |args, req| {
        seen.bump();
        req.complete(&args[0]).unwrap();
    })
    .unwrap();
    let ir = ctx
        .trace(
            |ctx, i| {
                for name in ["sync", "blocking", "async"] {
                    // Two equal calls, neither read.
                    ctx.host_call(name, &i[..1])?;
                    ctx.host_call(name, &i[..1])?;
                }
                Ok(i[0].clone())
            },
            &[Value::from("x")],
            None,
        )
        .unwrap();
    assert_eq!(ir.call(&ctx, &[Value::from("a")]).unwrap(), "a");
    assert_eq!((sync.get(), blocking.get(), not_waited.get()), (2, 2, 2));
    for eqn in host_eqns(&ir) {
        assert_eq!(eqn["effects"], true, "{eqn}");
        assert!(eqn["params"].get("pure").is_none(), "{eqn}");
    }
}

#[test]
fn equal_calls_of_a_pure_function_merge_of_an_effectful_one_never() {
    let ctx = Context::new().unwrap();
    let (sent, looked) = register_both(&ctx);
    let send2 = trace_twice(&ctx, "send");
    let lookup2 = trace_twice(&ctx, "lookup");
    // cse: even merge_nondeterministic keeps both effectful calls.
    assert_eq!(host_eqns(&send2.cse_with(&ctx, true).unwrap()).len(), 2);
    assert_eq!(host_eqns(&send2.cse(&ctx).unwrap()).len(), 2);
    assert_eq!(host_eqns(&lookup2.cse(&ctx).unwrap()).len(), 1);
    // Running compiles, and compile merges what cse may.
    assert_eq!(
        send2.call(&ctx, &[Value::from("a")]).unwrap(),
        "sent:asent:a"
    );
    assert_eq!(sent.get(), 2);
    assert_eq!(
        lookup2.call(&ctx, &[Value::from("a")]).unwrap(),
        "found:afound:a"
    );
    assert_eq!(looked.get(), 1);
}

#[test]
fn memoize_answers_calls_of_pure_functions_only() {
    let ctx = Context::new().unwrap();
    let (sent, looked) = register_both(&ctx);
    let send2 = trace_twice(&ctx, "send");
    let lookup2 = trace_twice(&ctx, "lookup");
    ctx.memoize_push().unwrap();
    for _ in 0..2 {
        assert_eq!(
            send2.call(&ctx, &[Value::from("a")]).unwrap(),
            "sent:asent:a"
        );
        assert_eq!(
            lookup2.call(&ctx, &[Value::from("a")]).unwrap(),
            "found:afound:a"
        );
    }
    ctx.memoize_pop().unwrap();
    // send: twice per run; lookup: once in the first run (its equal calls
    // merged), the second run answered from the scope.
    assert_eq!(sent.get(), 4);
    assert_eq!(looked.get(), 1);
    // Outside the scope, each run calls lookup again.
    assert_eq!(
        lookup2.call(&ctx, &[Value::from("a")]).unwrap(),
        "found:afound:a"
    );
    assert_eq!(looked.get(), 2);
}

#[test]
fn a_lazy_context_runs_a_dropped_effectful_call_and_never_a_dropped_pure_one() {
    let ctx = Context::new_lazy().unwrap();
    let (sent, looked) = register_both(&ctx);
    let x = [Value::from("a")];
    drop(ctx.host_call("send", &x).unwrap());
    drop(ctx.host_call("lookup", &x).unwrap());
    assert_eq!(sent.get(), 0, "recorded, not run");
    ctx.eval(&[]).unwrap();
    assert_eq!((sent.get(), looked.get()), (1, 0));
    // Evaluated once, then read: it ran once.
    let kept = ctx.host_call("send", &x).unwrap();
    ctx.eval(&[]).unwrap();
    assert_eq!(sent.get(), 2);
    assert_eq!(kept, "sent:a");
    assert_eq!(sent.get(), 2);
    // Or by the next evaluation, whatever it reads.
    drop(ctx.host_call("send", &x).unwrap());
    drop(ctx.host_call("lookup", &x).unwrap());
    let other = ctx.concat(&[Value::from("n"), Value::from("1")]).unwrap();
    assert_eq!(other, "n1");
    assert_eq!((sent.get(), looked.get()), (3, 0));
    ctx.eval(&[]).unwrap();
    assert_eq!((sent.get(), looked.get()), (3, 0));
    // A pure call that is read runs.
    assert_eq!(ctx.host_call("lookup", &x).unwrap(), "found:a");
    assert_eq!(looked.get(), 1);
}

#[test]
fn an_async_function_registered_pure_works_and_is_pure() {
    let ctx = Context::new().unwrap();
    let calls = Calls::default();
    let seen = calls.clone();
    ctx.register_function_async_with(
        "echo_async",
        &Value::from("str"),
        &PURE,
        move |args, req| {
            seen.bump();
            let v = args[0].clone();
            thread::spawn(move || {
                thread::sleep(Duration::from_millis(10));
                req.complete(&v).unwrap();
            });
        },
    )
    .unwrap();
    assert_eq!(
        ctx.host_call("echo_async", &[Value::from("z")]).unwrap(),
        "z"
    );
    assert_eq!(calls.get(), 1);
    let twice = trace_twice(&ctx, "echo_async");
    assert_eq!(twice.call(&ctx, &[Value::from("q")]).unwrap(), "qq");
    assert_eq!(calls.get(), 2, "the two equal calls merged");
    assert_eq!(host_eqns(&twice)[0]["params"]["pure"], true);
}

#[test]
fn a_blocking_function_registered_pure_runs_on_the_host_pool_and_is_pure() {
    let ctx = Context::with_options(r#"{"host_threads": 1}"#).unwrap();
    let calls = Calls::default();
    let threads = Arc::new(Mutex::new(HashSet::<ThreadId>::new()));
    let (in_flight, peak) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let options = FunctionOptions {
        pure: true,
        blocking: true,
    };
    let (seen, t, f, p) = (
        calls.clone(),
        threads.clone(),
        in_flight.clone(),
        peak.clone(),
    );
    ctx.register_function_with("slow_lookup", &Value::from("str"), &options, move |args| {
        seen.bump();
        t.lock().unwrap().insert(thread::current().id());
        let now = f.fetch_add(1, Ordering::SeqCst) + 1;
        p.fetch_max(now, Ordering::SeqCst);
        thread::sleep(Duration::from_millis(50));
        f.fetch_sub(1, Ordering::SeqCst);
        Ok(Value::from(format!("found:{}", args[0].as_str()?)))
    })
    .unwrap();
    // Pure: two equal calls run once.
    let twice = trace_twice(&ctx, "slow_lookup");
    assert_eq!(
        twice.call(&ctx, &[Value::from("a")]).unwrap(),
        "found:afound:a"
    );
    assert_eq!(calls.get(), 1);
    // Blocking: four different calls go through the one pool thread, one at
    // a time (on scheduler threads they would overlap).
    let four = ctx
        .trace(
            |ctx, i| {
                let outs = (0..4)
                    .map(|k| {
                        let arg = ctx.format(&format!("{{}}{k}"), &i[..1], None)?;
                        ctx.host_call("slow_lookup", &[arg])
                    })
                    .collect::<libaf::Result<Vec<_>>>()?;
                Ok(Value::list(&outs))
            },
            &[Value::from("x")],
            None,
        )
        .unwrap();
    let out = four.call(&ctx, &[Value::from("b")]).unwrap();
    assert_eq!(
        out.to_json().unwrap(),
        r#"["found:b0","found:b1","found:b2","found:b3"]"#
    );
    assert_eq!(calls.get(), 5);
    assert_eq!(peak.load(Ordering::SeqCst), 1);
    let threads = threads.lock().unwrap();
    assert_eq!(threads.len(), 1, "{threads:?}");
    assert!(!threads.contains(&thread::current().id()));
}

/// Counts drops of the closure it is captured in.
struct DropCounter(Arc<AtomicUsize>);
impl Drop for DropCounter {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn blocking_with_async_is_invalid_argument_and_drops_the_closure() {
    let ctx = Context::new().unwrap();
    let drops = Arc::new(AtomicUsize::new(0));
    let guard = DropCounter(drops.clone());
    let options = FunctionOptions {
        blocking: true,
        ..Default::default()
    };
    let err = ctx
        .register_function_async_with("f", &Value::from("str"), &options, move |args, req| {
            let _ = &guard;
            req.complete(&args[0]).unwrap();
        })
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument, "{err}");
    assert!(err.message.contains("AF_FUNCTION_BLOCKING"), "{err}");
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    assert_eq!(
        ctx.host_call("f", &[]).unwrap_err().code,
        ErrorCode::NotFound
    );

    // The errors of register_function still apply, the closure dropped once.
    let guard = DropCounter(drops.clone());
    let err = ctx
        .register_function_with("", &Value::from("str"), &PURE, move |_| {
            let _ = &guard;
            Ok(Value::from("x"))
        })
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument, "{err}");
    assert_eq!(drops.load(Ordering::SeqCst), 2);

    // A registered closure is dropped when replaced and with the context.
    let guard = DropCounter(drops.clone());
    ctx.register_function_with("g", &Value::from("str"), &PURE, move |_| {
        let _ = &guard;
        Ok(Value::from("g"))
    })
    .unwrap();
    ctx.register_function("g", &Value::from("str"), |_| Ok(Value::from("g2")))
        .unwrap();
    assert_eq!(drops.load(Ordering::SeqCst), 3);
    let guard = DropCounter(drops.clone());
    ctx.register_function_async_with("h", &Value::from("str"), &PURE, move |_, req| {
        let _ = &guard;
        req.complete(&Value::from("h")).unwrap();
    })
    .unwrap();
    assert_eq!(ctx.host_call("h", &[]).unwrap(), "h");
    drop(ctx);
    assert_eq!(drops.load(Ordering::SeqCst), 4);
}

#[test]
fn eqn_json_shows_the_flag_and_saved_graphs_keep_it() {
    let ctx = Context::new().unwrap();
    let (sent, looked) = register_both(&ctx);
    let ir = trace_unused_calls(&ctx);
    let eqns = host_eqns(&ir);
    assert_eq!(eqns.len(), 2);
    let (send, lookup) = (&eqns[0], &eqns[1]);
    assert_eq!(send["params"]["name"], "send");
    assert_eq!(send["effects"], true);
    assert!(send["params"].get("pure").is_none(), "{send}");
    assert_eq!(lookup["params"]["name"], "lookup");
    assert_eq!(lookup["effects"], false);
    assert_eq!(lookup["params"]["pure"], true);

    // Saved and loaded, the graph keeps the flags it was traced with, even
    // when the registrations are swapped.
    let loaded = Ir::from_bytes(&ctx, &ir.to_bytes().unwrap()).unwrap();
    assert_eq!(loaded, ir);
    assert_eq!(host_eqns(&loaded)[1]["params"]["pure"], true);
    ctx.register_function_with("send", &Value::from("str"), &PURE, tagged(&sent, "sent"))
        .unwrap();
    ctx.register_function("lookup", &Value::from("str"), tagged(&looked, "found"))
        .unwrap();
    assert_eq!(loaded.call(&ctx, &[Value::from("a")]).unwrap(), "a");
    assert_eq!((sent.get(), looked.get()), (1, 0));
    // A new trace records the new registrations.
    let retraced = host_eqns(&trace_unused_calls(&ctx));
    assert_eq!(retraced[0]["effects"], false);
    assert_eq!(retraced[1]["effects"], true);
}
