//! Run journals: a program run given `RunOptions::journal_path` records its
//! LM calls; a rerun of the same program on the same inputs answers them
//! from the journal without reaching the provider; the journal refuses
//! another program or other inputs, garbage is `Format`, it compacts and
//! stays resumable, and it is created 0600.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use libaf::{Context, ErrorCode, Ir, Program, Provider, RunOptions, Value};

/// A fresh (empty) directory for one test under Cargo's temp dir.
fn fresh_dir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("journal")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A host provider counting the requests it receives and answering
/// `"<model>:<content of the last message>"` at once, except that it fails
/// a request whose content starts with "again:" while `refuse` is set.
struct Counting {
    provider: Provider,
    calls: Arc<AtomicUsize>,
    refuse: Arc<AtomicBool>,
}

impl Counting {
    fn new() -> Counting {
        let calls = Arc::new(AtomicUsize::new(0));
        let refuse = Arc::new(AtomicBool::new(false));
        let (c, r) = (calls.clone(), refuse.clone());
        let provider = Provider::host(move |req| {
            c.fetch_add(1, Ordering::SeqCst);
            let j = req.json().unwrap();
            let model = j.key("model").unwrap().as_str().unwrap().to_string();
            let msgs = j.key("messages").unwrap();
            let last = msgs.index(msgs.len().unwrap() - 1).unwrap();
            let content = last.key("content").unwrap().as_str().unwrap().to_string();
            if r.load(Ordering::SeqCst) && content.starts_with("again:") {
                req.fail(libaf::Error::new(ErrorCode::Provider, "refused"))
                    .unwrap();
            } else {
                req.complete(&format!("{model}:{content}")).unwrap();
            }
        })
        .unwrap();
        Counting {
            provider,
            calls,
            refuse,
        }
    }

    /// The requests received since the last `take`.
    fn take(&self) -> usize {
        self.calls.swap(0, Ordering::SeqCst)
    }
}

fn user(content: Value) -> libaf::Result<Value> {
    Ok(Value::list(&[Value::dict([
        ("role", Value::from("user")),
        ("content", content),
    ])?]))
}

/// two(q) = [a, b]: a = lm(q), b = lm("re:" + a); batched over a list of
/// questions, so two LM calls per item.
fn batched_two(ctx: &Context) -> Program {
    let one = ctx
        .trace(
            |ctx, i| {
                let a = ctx.lm_call(user(i[0].clone())?, "m")?;
                let b = ctx.lm_call(user(ctx.concat(&[Value::from("re:"), a.clone()])?)?, "m")?;
                Ok(Value::list(&[a, b]))
            },
            &[Value::from("q")],
            None,
        )
        .unwrap();
    Program::compile(ctx, &one.batch(ctx, None).unwrap()).unwrap()
}

/// chain(q) = c: a = lm(q), b = lm("re:" + a), c = lm("again:" + b), one
/// after the other.
fn chain(ctx: &Context) -> Ir {
    ctx.trace(
        |ctx, i| {
            let a = ctx.lm_call(user(i[0].clone())?, "m")?;
            let b = ctx.lm_call(user(ctx.concat(&[Value::from("re:"), a])?)?, "m")?;
            ctx.lm_call(user(ctx.concat(&[Value::from("again:"), b])?)?, "n")
        },
        &[Value::from("q")],
        None,
    )
    .unwrap()
}

fn with_journal(path: &Path) -> RunOptions {
    RunOptions {
        journal_path: Some(path.to_path_buf()),
        ..RunOptions::default()
    }
}

fn summary(path: &Path) -> Value {
    Value::from_json(&libaf::journal_summary_json(path).unwrap()).unwrap()
}

fn int(v: &Value, key: &str) -> i64 {
    v.key(key).unwrap().as_int().unwrap()
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn a_rerun_answers_the_recorded_calls_from_the_journal() {
    let dir = fresh_dir("rerun");
    // Missing parent directories are created.
    let path = dir.join("nested/deeper/run.journal");
    let ctx = Context::new().unwrap();
    let host = Counting::new();
    ctx.route("*", &host.provider).unwrap();
    let p = batched_two(&ctx);
    let qs = [Value::from_json(r#"["x", "y"]"#).unwrap()];
    let expected = r#"[["m:x","m:y"],["m:re:m:x","m:re:m:y"]]"#;

    let first = p.call_with(&ctx, &qs, &with_journal(&path)).unwrap();
    assert_eq!(first.to_json().unwrap(), expected);
    let n = host.take();
    assert_eq!(n, 4, "two calls for each of two items");
    assert!(path.is_file());
    #[cfg(unix)]
    {
        assert_eq!(mode(&path), 0o600, "the journal holds LM replies");
        for sibling in ["-wal", "-shm"] {
            let s = PathBuf::from(format!("{}{sibling}", path.display()));
            if s.exists() {
                assert_eq!(mode(&s), 0o600, "{}", s.display());
            }
        }
    }

    let s = summary(&path);
    assert_eq!(int(&s, "calls"), n as i64);
    assert_eq!(
        int(&s.key("models").unwrap().key("m").unwrap(), "calls"),
        n as i64
    );
    for key in ["program", "inputs"] {
        let hex = s.key(key).unwrap().as_str().unwrap().to_string();
        assert!(
            !hex.is_empty() && hex.chars().all(|c| c.is_ascii_hexdigit()),
            "{key}: {hex}"
        );
    }
    // The host provider reports no usage.
    assert_eq!(int(&s, "prompt_tokens"), 0);
    assert_eq!(int(&s, "completion_tokens"), 0);

    // Same program, same inputs, same journal: no request reaches the provider.
    let again = p.call_with(&ctx, &qs, &with_journal(&path)).unwrap();
    assert_eq!(host.take(), 0);
    assert_eq!(again, first);
    // An asynchronous run resumes the same way.
    let f = p.call_async_with(&ctx, &qs, &with_journal(&path)).unwrap();
    assert_eq!(f.wait().unwrap(), first);
    assert_eq!(host.take(), 0);
    // Answers from the journal record nothing new.
    assert_eq!(int(&summary(&path), "calls"), n as i64);

    // Compacting keeps it valid and resumable.
    libaf::journal_compact(&path).unwrap();
    assert_eq!(int(&summary(&path), "calls"), n as i64);
    let after = p.call_with(&ctx, &qs, &with_journal(&path)).unwrap();
    assert_eq!(host.take(), 0);
    assert_eq!(after, first);
    #[cfg(unix)]
    assert_eq!(mode(&path), 0o600);

    // Without the journal the provider is asked again.
    assert_eq!(p.call(&ctx, &qs).unwrap(), first);
    assert_eq!(host.take(), n);
}

#[test]
fn a_journal_refuses_other_inputs_and_other_programs() {
    let dir = fresh_dir("refuses");
    let path = dir.join("run.journal");
    let ctx = Context::new().unwrap();
    let host = Counting::new();
    ctx.route("*", &host.provider).unwrap();
    let p = batched_two(&ctx);
    let qs = [Value::from_json(r#"["x", "y"]"#).unwrap()];
    p.call_with(&ctx, &qs, &with_journal(&path)).unwrap();
    assert_eq!(host.take(), 4);
    let recorded = libaf::journal_summary_json(&path).unwrap();

    let other_inputs = [Value::from_json(r#"["x", "z"]"#).unwrap()];
    let err = p
        .call_with(&ctx, &other_inputs, &with_journal(&path))
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument, "{err:#}");
    assert_eq!(host.take(), 0, "refused at the start of the run");

    let other_program = Program::compile(&ctx, &chain(&ctx)).unwrap();
    let err = other_program
        .call_with(&ctx, &[Value::from("x")], &with_journal(&path))
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument, "{err:#}");
    assert_eq!(host.take(), 0);

    // The journal is unchanged and still resumes its own run.
    assert_eq!(libaf::journal_summary_json(&path).unwrap(), recorded);
    p.call_with(&ctx, &qs, &with_journal(&path)).unwrap();
    assert_eq!(host.take(), 0);
}

#[test]
fn a_failed_run_resumes_where_it_stopped() {
    let dir = fresh_dir("resume");
    let path = dir.join("run.journal");
    let ctx = Context::new().unwrap();
    let host = Counting::new();
    ctx.route("*", &host.provider).unwrap();
    let p = Program::compile(&ctx, &chain(&ctx)).unwrap();
    let q = [Value::from("x")];

    host.refuse.store(true, Ordering::SeqCst);
    let err = p.call_with(&ctx, &q, &with_journal(&path)).unwrap_err();
    assert_eq!(err.code, ErrorCode::Provider, "{err:#}");
    assert_eq!(host.take(), 3);
    // The two calls that completed are recorded, the failed one is not.
    let s = summary(&path);
    assert_eq!(int(&s, "calls"), 2);
    assert_eq!(int(&s.key("models").unwrap().key("m").unwrap(), "calls"), 2);

    host.refuse.store(false, Ordering::SeqCst);
    let out = p.call_with(&ctx, &q, &with_journal(&path)).unwrap();
    assert_eq!(out.as_str().unwrap(), "n:again:m:re:m:x");
    assert_eq!(host.take(), 1, "only the call that failed is asked again");
    let s = summary(&path);
    assert_eq!(int(&s, "calls"), 3);
    let models = s.key("models").unwrap();
    assert_eq!(int(&models.key("m").unwrap(), "calls"), 2);
    assert_eq!(int(&models.key("n").unwrap(), "calls"), 1);

    assert_eq!(p.call_with(&ctx, &q, &with_journal(&path)).unwrap(), out);
    assert_eq!(host.take(), 0);
}

#[test]
fn garbage_missing_files_and_bad_paths() {
    let dir = fresh_dir("garbage");
    let ctx = Context::new().unwrap();
    let host = Counting::new();
    ctx.route("*", &host.provider).unwrap();
    let p = batched_two(&ctx);
    let qs = [Value::from_json(r#"["x"]"#).unwrap()];

    let garbage = dir.join("garbage.journal");
    let bytes: Vec<u8> = (0..8192u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(&garbage, &bytes).unwrap();
    let err = p.call_with(&ctx, &qs, &with_journal(&garbage)).unwrap_err();
    assert_eq!(err.code, ErrorCode::Format, "{err:#}");
    assert_eq!(host.take(), 0);
    let err = libaf::journal_summary_json(&garbage).unwrap_err();
    assert_eq!(err.code, ErrorCode::Format, "{err:#}");
    let err = libaf::journal_compact(&garbage).unwrap_err();
    assert_eq!(err.code, ErrorCode::Format, "{err:#}");
    assert_eq!(
        std::fs::read(&garbage).unwrap(),
        bytes,
        "garbage is left alone"
    );

    let missing = dir.join("missing.journal");
    assert_eq!(
        libaf::journal_summary_json(&missing).unwrap_err().code,
        ErrorCode::NotFound
    );
    assert_eq!(
        libaf::journal_compact(&missing).unwrap_err().code,
        ErrorCode::NotFound
    );
    assert!(!missing.exists(), "reading a journal does not create it");

    #[cfg(unix)]
    {
        use std::ffi::OsStr;
        use std::os::unix::ffi::OsStrExt;
        let bad = dir.join(OsStr::from_bytes(b"not-utf8-\xff.journal"));
        let err = libaf::journal_summary_json(&bad).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidArgument);
        assert!(err.message.contains("journal path"), "{err}");
        let err = p.call_with(&ctx, &qs, &with_journal(&bad)).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidArgument);
        assert_eq!(host.take(), 0);
    }
}

#[test]
fn eval_with_refuses_a_journal() {
    let dir = fresh_dir("eval");
    let path = dir.join("run.journal");
    let ctx = Context::new_lazy().unwrap();
    ctx.route("*", &Provider::echo("").unwrap()).unwrap();
    let promise = ctx.lm_call(user(Value::from("x")).unwrap(), "m").unwrap();
    let err = ctx
        .eval_with(std::slice::from_ref(&promise), &with_journal(&path))
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument, "{err:#}");
}
