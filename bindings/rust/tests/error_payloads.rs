//! A callback's own error rides through libaf as its error's payload
//! (`af_error_new_with`): each caller gets back exactly the object its own
//! callback failed with, even when other callbacks fail at the same time
//! with the same text; it keeps its identity across nested calls; panics of
//! trace closures still resume as the same payload; payloads of other
//! bindings are left alone; and every payload is freed with its error.

use std::collections::HashMap;
use std::ffi::c_void;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use libaf::{sys, Context, Error, ErrorCode, Ir, LmRequest, Program, Provider, Value};

/// Every failure shows the same text: only `id` (not in the message) tells
/// them apart.
#[derive(Debug)]
struct Tagged {
    id: String,
    live: Arc<AtomicUsize>,
}

impl Tagged {
    fn new(id: &str, live: &Arc<AtomicUsize>) -> Tagged {
        live.fetch_add(1, Ordering::SeqCst);
        Tagged {
            id: id.to_string(),
            live: live.clone(),
        }
    }
}

impl Drop for Tagged {
    fn drop(&mut self) {
        self.live.fetch_sub(1, Ordering::SeqCst);
    }
}

impl std::fmt::Display for Tagged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the tool failed")
    }
}
impl std::error::Error for Tagged {}

/// The first `Tagged` of `err`'s source chain.
fn find_tagged(err: &Error) -> Option<&Tagged> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = cur {
        if let Some(t) = e.downcast_ref::<Tagged>() {
            return Some(t);
        }
        cur = e.source();
    }
    None
}

/// Where the `Tagged` an error wraps lives: the same address after the trip
/// through libaf means the very object, not a copy.
type Made = Arc<Mutex<HashMap<String, usize>>>;

/// `Error::wrap(code, Tagged(id))`, its object's address recorded in `made`.
fn tagged_error(code: ErrorCode, id: &str, live: &Arc<AtomicUsize>, made: &Made) -> Error {
    let e = Error::wrap(code, Tagged::new(id, live));
    let addr = find_tagged(&e).unwrap() as *const Tagged as usize;
    made.lock().unwrap().insert(id.to_string(), addr);
    e
}

/// Whether `err` ends in the very `Tagged` made for one of `ids`: None if
/// so, else what is wrong.
fn check_own(err: &Error, ids: &[String], made: &Made) -> Option<String> {
    let Some(t) = find_tagged(err) else {
        return Some(format!("no Tagged in {err:#}"));
    };
    if !ids.contains(&t.id) {
        return Some(format!(
            "got {:?}, another caller's error (own: {ids:?})",
            t.id
        ));
    }
    let addr = made.lock().unwrap()[&t.id];
    if t as *const Tagged as usize != addr {
        return Some(format!("a copy of {:?}, not the object", t.id));
    }
    None
}

fn assert_own(err: &Error, ids: &[String], made: &Made) {
    if let Some(wrong) = check_own(err, ids, made) {
        panic!("{wrong}");
    }
}

/// Two threads call `call(ids)` at the same time, `rounds` times, each with
/// two item ids of its own; each must get back an error ending in one of its
/// own items' objects. (Failures are collected, not asserted in the threads,
/// so the other thread never waits at the barrier forever.)
fn race(rounds: usize, made: &Made, call: impl Fn(&[String]) -> libaf::Result<Value> + Sync) {
    let start = Barrier::new(2);
    let wrong = Mutex::new(Vec::new());
    thread::scope(|s| {
        for who in ["a", "b"] {
            let (start, wrong, call) = (&start, &wrong, &call);
            s.spawn(move || {
                for n in 0..rounds {
                    let ids: Vec<String> = (0..2).map(|k| format!("{who}{n}.{k}")).collect();
                    start.wait();
                    let w = match call(&ids) {
                        Ok(v) => Some(format!("{ids:?} succeeded: {v:?}")),
                        Err(err) => check_own(&err, &ids, made),
                    };
                    wrong.lock().unwrap().extend(w);
                }
            });
        }
    });
    let wrong = wrong.into_inner().unwrap();
    assert!(
        wrong.is_empty(),
        "{} of {} calls: {:?}",
        wrong.len(),
        2 * rounds,
        &wrong[..wrong.len().min(5)]
    );
}

/// Runs `p` over `ids` as one list.
fn run_items(ctx: &Context, p: &Program, ids: &[String]) -> libaf::Result<Value> {
    let items: Vec<Value> = ids.iter().map(|id| Value::from(id.as_str())).collect();
    p.call(ctx, &[Value::list(&items)])
}

/// Waits until no `Tagged` is alive (runs that failed may still be finishing
/// their other items briefly after the caller got its error).
fn assert_all_freed(live: &AtomicUsize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while live.load(Ordering::SeqCst) != 0 {
        assert!(
            Instant::now() < deadline,
            "{} errors were never freed",
            live.load(Ordering::SeqCst)
        );
        thread::sleep(Duration::from_millis(5));
    }
}

/// tool(x) over a list: the batched IR of `ctx.host_call("tool", [x])`.
fn batched_tool(ctx: &Context) -> Program {
    let one = ctx
        .trace(
            |ctx, i| ctx.host_call("tool", &i[..1]),
            &[Value::from("x")],
            None,
        )
        .unwrap();
    Program::compile(ctx, &one.batch(ctx, None).unwrap()).unwrap()
}

#[test]
fn host_functions_failing_at_once_with_the_same_message_each_get_their_own_error() {
    let ctx = Context::new().unwrap();
    let live = Arc::new(AtomicUsize::new(0));
    let made: Made = Arc::default();
    let (l, m) = (live.clone(), made.clone());
    ctx.register_function("tool", &Value::from("str"), move |args| {
        let id = args[0].as_str()?.to_string();
        thread::sleep(Duration::from_micros(200)); // overlap with the other calls
        Err(tagged_error(ErrorCode::Provider, &id, &l, &m))
    })
    .unwrap();
    let p = batched_tool(&ctx);
    race(200, &made, |ids| run_items(&ctx, &p, ids));

    // Blocking host functions (the host pool) too.
    let (l, m) = (live.clone(), made.clone());
    ctx.register_function_blocking("tool", &Value::from("str"), move |args| {
        let id = args[0].as_str()?.to_string();
        Err(tagged_error(ErrorCode::Provider, &id, &l, &m))
    })
    .unwrap();
    race(200, &made, |ids| run_items(&ctx, &p, ids));

    // Async host functions failing their requests from other threads.
    let (l, m) = (live.clone(), made.clone());
    ctx.register_function_async("tool", &Value::from("str"), move |args, req| {
        let id = args[0].as_str().unwrap().to_string();
        let (l, m) = (l.clone(), m.clone());
        thread::spawn(move || {
            let _ = req.fail(tagged_error(ErrorCode::Provider, &id, &l, &m));
        });
    })
    .unwrap();
    race(200, &made, |ids| run_items(&ctx, &p, ids));

    drop(p);
    drop(ctx);
    assert_all_freed(&live);
}

#[test]
fn host_providers_failing_at_once_with_the_same_message_each_get_their_own_error() {
    let ctx = Context::new().unwrap();
    let live = Arc::new(AtomicUsize::new(0));
    let made: Made = Arc::default();
    let (l, m) = (live.clone(), made.clone());
    let host = Provider::host(move |req: LmRequest| {
        let (l, m) = (l.clone(), m.clone());
        thread::spawn(move || {
            let j = req.json().unwrap();
            let msgs = j.key("messages").unwrap();
            let content = msgs.index(0).unwrap().key("content").unwrap();
            let id = content.as_str().unwrap().to_string();
            let _ = req.fail(tagged_error(ErrorCode::Provider, &id, &l, &m));
        });
    })
    .unwrap();
    ctx.route("*", &host).unwrap();
    let one: Ir = ctx
        .trace(
            |ctx, i| {
                let msg = Value::dict([("role", Value::from("user")), ("content", i[0].clone())])?;
                ctx.lm_call(Value::list(&[msg]), Value::from("m"))
            },
            &[Value::from("q")],
            None,
        )
        .unwrap();
    let p = Program::compile(&ctx, &one.batch(&ctx, None).unwrap()).unwrap();
    race(200, &made, |ids| run_items(&ctx, &p, ids));
    drop(p);
    drop(ctx);
    drop(host);
    assert_all_freed(&live);
}

#[test]
fn an_error_crossing_a_nested_run_keeps_its_identity() {
    let live = Arc::new(AtomicUsize::new(0));
    let made: Made = Arc::default();
    // The inner context runs a program whose host function fails.
    let inner = Arc::new(Context::new().unwrap());
    let (l, m) = (live.clone(), made.clone());
    inner
        .register_function("tool", &Value::from("str"), move |args| {
            let id = args[0].as_str()?.to_string();
            Err(tagged_error(ErrorCode::NotFound, &id, &l, &m))
        })
        .unwrap();
    let inner_p = Arc::new(batched_tool(&inner));
    // The outer context's host function runs it and returns its error as is.
    let outer = Context::new().unwrap();
    let (ic, ip) = (inner.clone(), inner_p.clone());
    outer
        .register_function("relay", &Value::from("str"), move |args| {
            ip.call(&ic, &[Value::list(&[args[0].clone()])])?;
            Ok(Value::from("unreachable"))
        })
        .unwrap();
    let ir = outer
        .trace(
            |ctx, i| ctx.host_call("relay", &i[..1]),
            &[Value::from("x")],
            None,
        )
        .unwrap();
    let p = Program::compile(&outer, &ir).unwrap();
    for n in 0..20 {
        let id = format!("deep{n}");
        let err = p.call(&outer, &[Value::from(id.as_str())]).unwrap_err();
        let codes: Vec<ErrorCode> = err.chain().map(|e| e.code).collect();
        // relay failed <- (tool failed <- NotFound(Tagged)), the middle one
        // being the very error the relay got from the inner run.
        assert_eq!(
            codes,
            [
                ErrorCode::Callback,
                ErrorCode::Callback,
                ErrorCode::NotFound
            ],
            "{err:#}"
        );
        assert!(err.cause().unwrap().message.contains("tool"), "{err:#}");
        assert_own(&err, &[id], &made);
    }

    // A trace closure's own error is the cause of the Callback error, itself.
    let ctx = Context::new().unwrap();
    let (l, m) = (live.clone(), made.clone());
    let err = ctx
        .trace(
            move |_, _| Err(tagged_error(ErrorCode::Schema, "traced", &l, &m)),
            &[Value::from("x")],
            None,
        )
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::Callback, "{err:#}");
    assert_eq!(err.cause().unwrap().code, ErrorCode::Schema);
    assert_own(&err, &["traced".to_string()], &made);
    drop(err);

    drop(p);
    drop(outer);
    drop(inner_p);
    drop(inner);
    assert_all_freed(&live);
}

/// A panic payload that is neither `&str` nor `String`.
#[derive(Debug, PartialEq)]
struct Token(u64);

/// The `Token` a panic carried (the caught payload itself, not a message).
fn caught_token(f: impl FnOnce()) -> Token {
    let payload = panic::catch_unwind(AssertUnwindSafe(f)).expect_err("the panic must resume");
    *payload.downcast::<Token>().expect("the very panic payload")
}

#[test]
fn a_trace_closures_panic_resumes_as_the_same_payload() {
    let ctx = Context::new().unwrap();
    let t = caught_token(|| {
        let _ = ctx.trace(
            |_, _| -> libaf::Result<Value> { panic::panic_any(Token(7)) },
            &[Value::from("x")],
            None,
        );
    });
    assert_eq!(t, Token(7));

    // Through a nested trace: the inner panic resumes in the outer closure,
    // which libaf unwinds too, and then in the caller.
    let t = caught_token(|| {
        let _ = ctx.trace(
            |ctx, i| {
                ctx.trace(
                    |_, _| -> libaf::Result<Value> { panic::panic_any(Token(8)) },
                    &[Value::from("y")],
                    None,
                )?;
                Ok(i[0].clone())
            },
            &[Value::from("x")],
            None,
        );
    });
    assert_eq!(t, Token(8));
    assert!(!libaf::is_tracing());

    // Two threads at once, each getting its own payload.
    thread::scope(|s| {
        for base in [1000u64, 2000] {
            let ctx = &ctx;
            s.spawn(move || {
                for n in 0..100 {
                    let t = caught_token(|| {
                        let _ = ctx.trace(
                            move |_, _| -> libaf::Result<Value> { panic::panic_any(Token(base + n)) },
                            &[Value::from("x")],
                            None,
                        );
                    });
                    assert_eq!(t, Token(base + n));
                }
            });
        }
    });

    // A panicking host function is still reported as a Callback error.
    ctx.register_function("boom", &Value::from("str"), |_| panic!("kaboom"))
        .unwrap();
    let err = ctx.host_call("boom", &[]).unwrap_err();
    assert_eq!(err.code, ErrorCode::Callback);
    assert!(err.cause().unwrap().message.contains("kaboom"), "{err:#}");
}

/// Another binding's payload: a magic number of its own first.
#[repr(C)]
struct Foreign {
    magic: u64,
    owner: usize,
    freed: *const AtomicUsize,
}

unsafe extern "C" fn destroy_foreign(p: *mut c_void) {
    let f = Box::from_raw(p.cast::<Foreign>());
    (*f.freed).fetch_add(1, Ordering::SeqCst);
}

#[test]
fn payloads_of_other_bindings_are_left_alone_and_freed_once() {
    let freed = AtomicUsize::new(0);
    // The C++ header's magic, and ours with another crate instance's owner
    // (another build of this crate in the same process).
    let magics = [0x6166_6870_7065_7863u64, u64::from_be_bytes(*b"afrs_err")];
    for (i, magic) in magics.into_iter().enumerate() {
        let payload = Box::into_raw(Box::new(Foreign {
            magic,
            owner: 1,
            freed: &freed,
        }));
        let msg = "someone else's failure";
        let err = unsafe {
            let raw = sys::af_error_new_with(
                sys::AF_ERR_IO,
                msg.as_ptr().cast(),
                msg.len(),
                payload.cast(),
                Some(destroy_foreign),
            );
            assert_eq!(sys::af_error_payload(raw), payload.cast::<c_void>());
            Error::from_raw(raw)
        };
        assert_eq!(err.code, ErrorCode::Io);
        assert_eq!(err.message, msg);
        assert_eq!(freed.load(Ordering::SeqCst), i + 1);
    }

    // Ours come back as themselves through the raw API, and are freed with
    // the error.
    let live = Arc::new(AtomicUsize::new(0));
    let made: Made = Arc::default();
    let raw = tagged_error(ErrorCode::Timeout, "raw", &live, &made).into_raw();
    assert!(!unsafe { sys::af_error_payload(raw) }.is_null());
    let err = unsafe { Error::from_raw(raw) };
    assert_eq!(err.code, ErrorCode::Timeout);
    assert_own(&err, &["raw".to_string()], &made);
    assert_eq!(live.load(Ordering::SeqCst), 1, "err holds it");
    drop(err);
    assert_eq!(live.load(Ordering::SeqCst), 0);
    unsafe { sys::af_error_free(tagged_error(ErrorCode::Io, "lost", &live, &made).into_raw()) };
    assert_eq!(live.load(Ordering::SeqCst), 0);
}
