//! Transforms and control flow: pullback, pushforward, batch, dce, cse,
//! sched, switch and while_loop, with their errors.

mod common;

use libaf::{Context, ErrorCode, Ir, Value};

fn json(s: &str) -> Value {
    Value::from_json(s).unwrap()
}

/// f(x, y) = format("<{}|{a}>", x, a=y)
fn trace_format(ctx: &Context) -> Ir {
    ctx.trace(
        |ctx, inputs| {
            let named = Value::dict([("a", inputs[1].clone())])?;
            ctx.format("<{}|{a}>", &inputs[..1], Some(&named))
        },
        &[Value::from("x"), Value::from("y")],
        None,
    )
    .unwrap()
}

#[test]
fn pullback_of_format_gives_the_cotangent_to_every_input() {
    let ctx = Context::new().unwrap();
    let pb = trace_format(&ctx).pullback(&ctx).unwrap();
    let out = pb
        .call(&ctx, &[json(r#"["p","q"]"#), Value::from("g")])
        .unwrap();
    assert_eq!(out.to_json().unwrap(), r#"["<p|q>",["g","g"]]"#);
}

#[test]
fn pushforward_and_batch_of_format() {
    let ctx = Context::new().unwrap();
    let ir = trace_format(&ctx);
    let pf = ir.pushforward(&ctx).unwrap();
    let out = pf
        .call(&ctx, &[json(r#"["p","q"]"#), json(r#"["dp","dq"]"#)])
        .unwrap();
    assert_eq!(out.to_json().unwrap(), r#"["<p|q>","<dp|dq>"]"#);

    let b = ir.batch(&ctx, None).unwrap();
    let out = b
        .call(&ctx, &[json(r#"["a","b"]"#), json(r#"["x","y"]"#)])
        .unwrap();
    assert_eq!(out.to_json().unwrap(), r#"["<a|x>","<b|y>"]"#);

    // Only the first input batched: the second is shared.
    let b = ir.batch(&ctx, Some(&json("[true, false]"))).unwrap();
    let out = b
        .call(&ctx, &[json(r#"["a","b"]"#), Value::from("s")])
        .unwrap();
    assert_eq!(out.to_json().unwrap(), r#"["<a|s>","<b|s>"]"#);

    let err = b.call(&ctx, &[json("[]"), Value::from("s")]).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
    assert!(err.message.contains("empty"), "{err}");
}

#[test]
fn dce_cse_sched_and_validate() {
    let ctx = Context::new().unwrap();
    // [concat(x, x), concat(x, x), format("{}", x)]
    let ir = ctx
        .trace(
            |ctx, inputs| {
                let a = ctx.concat(&[inputs[0].clone(), inputs[0].clone()])?;
                let b = ctx.concat(&[inputs[0].clone(), inputs[0].clone()])?;
                let c = ctx.format("{}", &inputs[..1], None)?;
                Ok(Value::list(&[a, b, c]))
            },
            &[Value::from("x")],
            None,
        )
        .unwrap();
    assert_eq!(ir.eqn_prims(), vec!["concat", "concat", "format"]);
    ir.validate().unwrap();

    let cse = ir.cse(&ctx).unwrap();
    assert_eq!(cse.eqn_prims(), vec!["concat", "format"]);
    assert_eq!(
        cse.call(&ctx, &[Value::from("z")])
            .unwrap()
            .to_json()
            .unwrap(),
        r#"["zz","zz","z"]"#
    );
    assert_eq!(ir.cse_with(&ctx, true).unwrap().eqn_count(), 2);

    let dce = ir.dce(&ctx, Some(&json("[false, false, true]"))).unwrap();
    assert_eq!(dce.eqn_prims(), vec!["format"]);
    assert_eq!(
        dce.call(&ctx, &[Value::from("z")])
            .unwrap()
            .to_json()
            .unwrap(),
        r#"[null,null,"z"]"#
    );

    let err = ir.eqn_sched(0).unwrap_err();
    assert_eq!(err.code, ErrorCode::NotFound);
    let s = ir.sched(&ctx).unwrap();
    let (level, priority) = s.eqn_sched(0).unwrap();
    assert_eq!(level, 0);
    assert!(priority > 0.0, "priority {priority}");
    assert!(s.to_text().unwrap().contains("@level=0"));
    assert_eq!(
        s.eqn_sched(99).unwrap_err().code,
        ErrorCode::InvalidArgument
    );

    let err = ir.dce(&ctx, Some(&json("[1]"))).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
}

#[test]
fn switch_runs_the_named_branch_and_unknown_keys_are_not_found() {
    let ctx = Context::new().unwrap();
    let (a, b) = common::branches(&ctx);
    let ir = ctx
        .trace(
            |ctx, i| ctx.switch(&i[0], &[("a", &a), ("b", &b)], &i[1..]),
            &[Value::from("k"), Value::from("x")],
            None,
        )
        .unwrap();
    assert_eq!(ir.eqn_prims(), vec!["switch"]);
    assert_eq!(
        ir.call(&ctx, &[Value::from("a"), Value::from("hi")])
            .unwrap()
            .as_str()
            .unwrap(),
        "Ahi"
    );
    assert_eq!(
        ir.call(&ctx, &[Value::from("b"), Value::from("hi")])
            .unwrap()
            .as_str()
            .unwrap(),
        "hihi"
    );
    // Outside a trace, switch evaluates at once.
    assert_eq!(
        ctx.switch(
            &Value::from("b"),
            &[("a", &a), ("b", &b)],
            &[Value::from("o")]
        )
        .unwrap()
        .as_str()
        .unwrap(),
        "oo"
    );

    let err = ir
        .call(&ctx, &[Value::from("c"), Value::from("hi")])
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::NotFound);
    assert!(
        err.message.contains("a") && err.message.contains("b"),
        "{err}"
    );

    // Pullback keeps the branch taken: "b" = concat(x, x) gives g twice.
    let pb = ir.pullback(&ctx).unwrap();
    let out = pb
        .call(&ctx, &[json(r#"["b","p"]"#), Value::from("g")])
        .unwrap();
    assert_eq!(out.to_json().unwrap(), r#"["pp",[null,"gg"]]"#);

    let err = ctx
        .switch(&Value::from("a"), &[], &[Value::from("o")])
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
}

#[test]
fn while_loop_runs_until_cond_is_false_or_max_iters() {
    let ctx = Context::new().unwrap();
    let yes = ctx
        .trace(|ctx, i| ctx.match_(&i[0], &i[0]), &[Value::from("x")], None)
        .unwrap();
    let no = ctx
        .trace(
            |ctx, i| ctx.match_(&i[0], &ctx.concat(&[i[0].clone(), Value::from("!")])?),
            &[Value::from("x")],
            None,
        )
        .unwrap();
    // cond(s) = s != "aaa" for s in {a, aa, aaa}, as a switch on s.
    let cond = ctx
        .trace(
            |ctx, i| ctx.switch(&i[0], &[("a", &yes), ("aa", &yes), ("aaa", &no)], &i[..1]),
            &[Value::from("s")],
            None,
        )
        .unwrap();
    let body = ctx
        .trace(
            |ctx, i| ctx.concat(&[i[0].clone(), Value::from("a")]),
            &[Value::from("s")],
            None,
        )
        .unwrap();
    assert_eq!(
        ctx.while_loop(&cond, &body, &Value::from("a"), 10)
            .unwrap()
            .as_str()
            .unwrap(),
        "aaa"
    );
    assert_eq!(
        ctx.while_loop(&cond, &body, &Value::from("a"), 1)
            .unwrap()
            .as_str()
            .unwrap(),
        "aa"
    );
    assert_eq!(
        ctx.while_loop(&cond, &body, &Value::from("a"), 0)
            .unwrap()
            .as_str()
            .unwrap(),
        "a"
    );

    let err = ctx
        .while_loop(&body, &body, &Value::from("a"), 3)
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
}
