//! Inspection and graph queries: JSON per equation and variable, sub-IRs,
//! ancestors/descendants against a naive reference, a slice that runs, and
//! the dry-run cost.

mod common;

use libaf::{Context, Direction, ErrorCode, Ir, Program, Provider, RunOptions, Value};

fn ask(ctx: &Context, content: Value, model: &str) -> libaf::Result<Value> {
    let msg = Value::dict([("role", Value::from("user")), ("content", content)])?;
    ctx.lm_call(&Value::list(&[msg]), &Value::from(model))
}

/// chain(q) = {a: ask(q, m1), b: ask(a, m2), c: q + q}
fn chain(ctx: &Context) -> Ir {
    ctx.trace(
        |ctx, i| {
            let a = ask(ctx, i[0].clone(), "m1")?;
            let b = ask(ctx, a.clone(), "m2")?;
            let c = ctx.concat(&[i[0].clone(), i[0].clone()])?;
            Value::dict([("a", a), ("b", b), ("c", c)])
        },
        &[Value::from("q")],
        None,
    )
    .unwrap()
}

fn ints(v: &Value) -> Vec<usize> {
    (0..v.len().unwrap())
        .map(|k| v.index(k).unwrap().as_int().unwrap() as usize)
        .collect()
}

/// Direct deps of each equation, from its "in" vars and their producers.
fn deps(ir: &Ir) -> Vec<Vec<usize>> {
    (0..ir.eqn_count())
        .map(|i| {
            let e = Value::from_json(&ir.eqn_json(i).unwrap()).unwrap();
            let ins = e.key("in").unwrap();
            let mut d = Vec::new();
            for k in 0..ins.len().unwrap() {
                if let Ok(var) = ins.index(k).unwrap().key("var") {
                    let v = Value::from_json(&ir.var_json(var.as_int().unwrap() as u32).unwrap())
                        .unwrap();
                    if let Ok(p) = v.key("producer").unwrap().as_int() {
                        d.push(p as usize);
                    }
                }
            }
            d
        })
        .collect()
}

#[test]
fn ancestors_descendants_and_order_match_a_naive_reference() {
    let ctx = Context::new().unwrap();
    let ir = chain(&ctx);
    let d = deps(&ir);
    let n = ir.eqn_count();
    // reach[i][k]: eqn i transitively reads eqn k (relaxation to a fixpoint).
    let mut reach: Vec<Vec<bool>> = (0..n)
        .map(|i| (0..n).map(|k| d[i].contains(&k)).collect())
        .collect();
    loop {
        let mut changed = false;
        for a in 0..n {
            for b in 0..n {
                for c in 0..n {
                    if reach[a][b] && reach[b][c] && !reach[a][c] {
                        reach[a][c] = true;
                        changed = true;
                    }
                }
            }
        }
        if !changed {
            break;
        }
    }
    for i in 0..n {
        let up =
            Value::from_json(&ir.related_json(i, Direction::Ancestors, false).unwrap()).unwrap();
        let down =
            Value::from_json(&ir.related_json(i, Direction::Descendants, false).unwrap()).unwrap();
        assert_eq!(
            ints(&up.key("eqns").unwrap()),
            (0..n).filter(|&k| reach[i][k]).collect::<Vec<_>>()
        );
        assert_eq!(
            ints(&down.key("eqns").unwrap()),
            (0..n).filter(|&k| reach[k][i]).collect::<Vec<_>>()
        );
    }
    let whole = Value::from_json(&ir.json().unwrap()).unwrap();
    let order = ints(&whole.key("topological_order").unwrap());
    let pos = |e: usize| order.iter().position(|&x| x == e).unwrap();
    for (i, di) in d.iter().enumerate() {
        for &k in di {
            assert!(pos(k) < pos(i), "eqn {k} before eqn {i}");
        }
    }
}

#[test]
fn a_slice_of_one_output_gives_the_full_programs_value() {
    let ctx = Context::new().unwrap();
    let echo = Provider::echo("").unwrap();
    ctx.route("*", &echo).unwrap();
    let ir = chain(&ctx);
    let full = ir.call(&ctx, &[Value::from("hi")]).unwrap();
    let b = ir.slice(&["b"], Some(&["0"])).unwrap();
    assert!(b.eqn_count() < ir.eqn_count());
    let got = b.call(&ctx, &[Value::from("hi")]).unwrap();
    assert_eq!(
        got.index(0).unwrap().to_json().unwrap(),
        full.key("b").unwrap().to_json().unwrap()
    );
    // Echo's usage: words sent ("hi", then "m1|hi") and words replied
    // ("m1|hi", "m2|m1|hi"), for the full run and the slice's, summed.
    let stats = echo.stats().unwrap();
    assert_eq!(stats.key("prompt_tokens").unwrap().as_int().unwrap(), 4);
    assert_eq!(stats.key("completion_tokens").unwrap().as_int().unwrap(), 4);
    let c = ir.slice(&["c"], None).unwrap();
    assert_eq!(
        c.call(&ctx, &[Value::from("hi")])
            .unwrap()
            .to_json()
            .unwrap(),
        r#"["hihi"]"#
    );
    let err = ir.slice(&["b"], Some(&[])).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
    assert!(
        err.message.contains("not among the chosen inputs"),
        "{}",
        err.message
    );
    assert_eq!(
        ir.slice(&["nope"], None).unwrap_err().code,
        ErrorCode::InvalidArgument
    );
}

#[test]
fn equations_describe_inputs_and_cost_counts_models() {
    let ctx = Context::new().unwrap();
    let ir = chain(&ctx);
    let lm = (0..ir.eqn_count())
        .find(|&i| ir.eqn_prim(i) == Some("lm_call"))
        .unwrap();
    let e = ir.eqn_json(lm).unwrap();
    assert!(e.contains(r#"{"lit":"m1","kind":"str"}"#), "{e}");
    assert!(e.contains(r#""roles":["user"]"#), "{e}");
    assert_eq!(
        ir.eqn_json(99).unwrap_err().code,
        ErrorCode::InvalidArgument
    );
    assert_eq!(ir.sub(lm, "body").unwrap_err().code, ErrorCode::NotFound);
    assert_eq!(
        ir.cost_json(3).unwrap(),
        r#"{"batch":3,"total":{"calls":6,"models":{"m1":3,"m2":3}},"critical_path":{"calls":2,"models":{"m1":1,"m2":1}}}"#
    );
}

/// named(q) = ask(q, "m1") inside the name scopes triage, ask.
fn named(ctx: &Context) -> Ir {
    ctx.trace(
        |ctx, i| {
            ctx.with_name("triage", || {
                ctx.with_name("ask", || ask(ctx, i[0].clone(), "m1"))
            })
        },
        &[Value::from("q")],
        None,
    )
    .unwrap()
}

#[test]
fn name_paths_are_recorded_shown_and_name_errors() {
    let ctx = Context::new().unwrap();
    let ir = named(&ctx);
    assert!(ir.to_text().unwrap().contains("@name=\"triage/ask\""));
    let e = Value::from_json(&ir.eqn_json(0).unwrap()).unwrap();
    assert_eq!(
        e.key("name_path").unwrap().to_json().unwrap(),
        r#"["triage","ask"]"#
    );
    // No route for m1: the failing call names its path.
    let err = ir.call(&ctx, &[Value::from("hi")]).unwrap_err();
    assert_eq!(err.code, ErrorCode::NotFound);
    assert!(err.message.contains("in triage/ask: "), "{}", err.message);
    // Outside a trace on an eager context, and a name holding '/'.
    assert_eq!(
        ctx.name_push("x").unwrap_err().code,
        ErrorCode::InvalidArgument
    );
    let bad = ctx.trace(
        |ctx, i| ctx.with_name("a/b", || Ok(i[0].clone())),
        &[Value::from("q")],
        None,
    );
    assert!(bad.unwrap_err().message.contains("one name per level"));
}

/// Echo counts words: "hi there" in (2), "m1|hi there" out (2).
fn check_summary(json: &str) {
    let s = Value::from_json(json).unwrap();
    let total = s.key("total").unwrap();
    let int = |v: &Value, k: &str| v.key(k).unwrap().as_int().unwrap();
    assert_eq!(int(&total, "calls"), 1, "{json}");
    assert_eq!(int(&total, "failed"), 0, "{json}");
    assert_eq!(int(&total, "prompt_tokens"), 2, "{json}");
    assert_eq!(int(&total, "completion_tokens"), 2, "{json}");
    assert_eq!(int(&total, "retries"), 0, "{json}");
    assert_eq!(
        int(&s.key("models").unwrap().key("m1").unwrap(), "calls"),
        1,
        "{json}"
    );
    assert!(s.key("wall_ms").unwrap().as_float().unwrap() >= 0.0);
}

#[test]
fn run_summaries_add_up_echo_usage() {
    let ctx = Context::new().unwrap();
    let echo = Provider::echo("").unwrap();
    ctx.route("*", &echo).unwrap();
    let p = Program::compile(&ctx, &named(&ctx)).unwrap();
    let hi = [Value::from("hi there")];
    let (out, summary) = p.call_with_summary(&ctx, &hi, &RunOptions::default());
    assert_eq!(out.unwrap().to_json().unwrap(), r#""m1|hi there""#);
    check_summary(&summary.unwrap());
    let opts = RunOptions {
        summary: true,
        ..Default::default()
    };
    let run = p.call_async_with(&ctx, &hi, &opts).unwrap();
    run.wait().unwrap();
    check_summary(&run.summary().unwrap());
    // The provider counted the same requests.
    let stats = echo.stats().unwrap();
    assert_eq!(stats.key("prompt_tokens").unwrap().as_int().unwrap(), 4);
    // Misuse: an async-only option on a blocking call; no summary recorded.
    assert_eq!(
        p.call_with(&ctx, &hi, &opts).unwrap_err().code,
        ErrorCode::InvalidArgument
    );
    let plain = p.call_async(&ctx, &hi).unwrap();
    assert_eq!(
        plain.summary().unwrap_err().code,
        ErrorCode::InvalidArgument
    );
    // A failed run has a summary too; nothing ran, none.
    let bare = Context::new().unwrap();
    let (out, summary) = p.call_with_summary(&bare, &hi, &RunOptions::default());
    assert_eq!(out.unwrap_err().code, ErrorCode::NotFound);
    assert!(summary.unwrap().contains(r#""calls":0"#));
    let (out, summary) = p.call_with_summary(&ctx, &[], &RunOptions::default());
    assert_eq!(out.unwrap_err().code, ErrorCode::InvalidArgument);
    assert!(summary.is_none());
}

#[test]
fn related_json_with_bounds_a_deep_answer_in_bytes() {
    let ctx = Context::new().unwrap();
    let (a, b) = common::branches(&ctx);
    // g(k, x) = concat(switch(k, a, b)(x), "!"): the last equation reads
    // the switch, whose branches hold one equation each.
    let ir = ctx
        .trace(
            |ctx, i| {
                let s = ctx.switch(&i[0], &[("a", &a), ("b", &b)], &i[1..])?;
                ctx.concat(&[s, Value::from("!")])
            },
            &[Value::from("k"), Value::from("x")],
            None,
        )
        .unwrap();
    let last = ir.eqn_count() - 1;
    let deep = ir.related_json(last, Direction::Ancestors, true).unwrap();
    assert!(deep.contains(r#""nested""#), "{deep}");
    assert!(deep.contains("branches/"), "{deep}");

    let err = ir
        .related_json_with(last, Direction::Ancestors, true, 1)
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument, "{err}");
    assert!(err.message.contains("over the limit"), "{err}");

    // Exactly the default answer's length is enough, and gives that answer.
    let n = deep.len() as u64;
    assert_eq!(
        ir.related_json_with(last, Direction::Ancestors, true, n)
            .unwrap(),
        deep
    );
    let err = ir
        .related_json_with(last, Direction::Ancestors, true, n - 1)
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument, "{err}");
    assert!(err.message.contains("over the limit"), "{err}");
    // A shallow query under the same limit, and 0 (the default in C) refused.
    assert_eq!(
        ir.related_json_with(last, Direction::Ancestors, false, n)
            .unwrap(),
        ir.related_json(last, Direction::Ancestors, false).unwrap()
    );
    assert_eq!(
        ir.related_json_with(last, Direction::Ancestors, true, 0)
            .unwrap_err()
            .code,
        ErrorCode::InvalidArgument
    );
}
