//! `Context::scan` (af_scan): a carry threaded through a list, one output per
//! item. Eager, reverse, empty, a tree of lists; traced over a list input of
//! any length; batch over documents of different lengths; pushforward and
//! pullback against the same body unrolled by hand; a lazy promise; an LM
//! rolling summary; saved graphs; the errors of bad bodies and inputs.

use libaf::{Context, ErrorCode, Ir, Program, Provider, TraceOptions, Value};

fn json(s: &str) -> Value {
    Value::from_json(s).unwrap()
}

/// One step of the body: `[concat(c, x), format("<{}>", x)]`.
fn step(ctx: &Context, c: &Value, x: &Value) -> libaf::Result<(Value, Value)> {
    let next = ctx.concat(&[c.clone(), x.clone()])?;
    let y = ctx.format("<{}>", std::slice::from_ref(x), None)?;
    Ok((next, y))
}

/// body(c, x) = [concat(c, x), format("<{}>", x)]
fn body(ctx: &Context) -> Ir {
    ctx.trace(
        |ctx, i| {
            let (next, y) = step(ctx, &i[0], &i[1])?;
            Ok(Value::list(&[next, y]))
        },
        &[Value::from("c"), Value::from("x")],
        None,
    )
    .unwrap()
}

/// f(init, xs) = scan(body, init, xs), xs a list input of any length.
fn trace_scan(ctx: &Context, body: &Ir, reverse: bool) -> Ir {
    let lists = json("[false, true]");
    ctx.trace_with(
        |ctx, i| ctx.scan(body, &i[0], &i[1], reverse),
        &[Value::from("c"), json(r#"["x"]"#)],
        &TraceOptions {
            list_mask: Some(&lists),
            ..Default::default()
        },
    )
    .unwrap()
}

/// The same as `trace_scan` over three items, unrolled by hand:
/// f(init, a, b, c) = [carry, [y0, y1, y2]].
fn trace_unrolled(ctx: &Context) -> Ir {
    ctx.trace(
        |ctx, i| {
            let mut carry = i[0].clone();
            let mut ys = Vec::new();
            for x in &i[1..4] {
                let (next, y) = step(ctx, &carry, x)?;
                carry = next;
                ys.push(y);
            }
            Ok(Value::list(&[carry, Value::list(&ys)]))
        },
        &[Value::from("c"), Value::from("x"), Value::from("x"), Value::from("x")],
        None,
    )
    .unwrap()
}

/// The JSON of `v` without brackets: its leaves in order, whatever the
/// nesting (the bodies here write no brackets into strings).
fn leaves(v: &Value) -> String {
    v.to_json().unwrap().replace(['[', ']'], "")
}

#[test]
fn eager_scan_threads_the_carry_and_keeps_ys_by_index() {
    let ctx = Context::new().unwrap();
    let body = body(&ctx);
    let xs = json(r#"["a","b","c"]"#);
    let out = ctx.scan(&body, &Value::from(">"), &xs, false).unwrap();
    assert_eq!(out.to_json().unwrap(), r#"[">abc",["<a>","<b>","<c>"]]"#);
    assert_eq!(out.index(0).unwrap(), ">abc");
    assert_eq!(out.index(1).unwrap().len().unwrap(), 3);
}

#[test]
fn reverse_goes_last_to_first_and_ys_stay_at_their_items() {
    let ctx = Context::new().unwrap();
    let body = body(&ctx);
    let xs = json(r#"["a","b","c"]"#);
    let out = ctx.scan(&body, &Value::from(">"), &xs, true).unwrap();
    assert_eq!(out.to_json().unwrap(), r#"[">cba",["<a>","<b>","<c>"]]"#);
}

#[test]
fn no_items_gives_init_and_empty_ys() {
    let ctx = Context::new().unwrap();
    let body = body(&ctx);
    let out = ctx.scan(&body, &Value::from(">"), &json("[]"), false).unwrap();
    assert_eq!(out.to_json().unwrap(), r#"[">",[]]"#);
    let out = ctx.scan(&body, &Value::from(">"), &json("[]"), true).unwrap();
    assert_eq!(out.to_json().unwrap(), r#"[">",[]]"#);
}

#[test]
fn xs_may_be_a_tree_of_lists_of_one_length() {
    let ctx = Context::new().unwrap();
    let body = ctx
        .trace(
            |ctx, i| {
                let q = i[1].key("q")?;
                let a = i[1].key("a")?;
                let line = ctx.format("{}={};", &[q, a], None)?;
                let next = ctx.concat(&[i[0].clone(), line.clone()])?;
                Ok(Value::list(&[next, line]))
            },
            &[Value::from("c"), json(r#"{"q":"x","a":"y"}"#)],
            None,
        )
        .unwrap();
    let xs = json(r#"{"q":["1+1","2+2"],"a":["2","4"]}"#);
    let out = ctx.scan(&body, &Value::from(""), &xs, false).unwrap();
    assert_eq!(out.to_json().unwrap(), r#"["1+1=2;2+2=4;",["1+1=2;","2+2=4;"]]"#);

    let ragged = json(r#"{"q":["1+1","2+2"],"a":["2"]}"#);
    let err = ctx.scan(&body, &Value::from(""), &ragged, false).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
    assert!(err.message.contains("one length"), "{err}");
}

#[test]
fn traced_over_a_list_of_any_length_runs_on_lists_of_different_lengths() {
    let ctx = Context::new().unwrap();
    let body = body(&ctx);
    let ir = trace_scan(&ctx, &body, false);
    assert!(ir.to_text().unwrap().contains("scan["), "{}", ir.to_text().unwrap());
    for (inputs, expected) in [
        (r#"["",["a"]]"#, r#"["a",["<a>"]]"#),
        (
            r#"["0",["a","b","c","d"]]"#,
            r#"["0abcd",["<a>","<b>","<c>","<d>"]]"#,
        ),
        (r#"["0",[]]"#, r#"["0",[]]"#),
    ] {
        let args: Vec<Value> = json(inputs).iter().unwrap().collect();
        let out = ir.call(&ctx, &args).unwrap();
        assert_eq!(out.to_json().unwrap(), expected, "{inputs}");
    }

    // Compiled, and reversed.
    let prog = Program::compile(&ctx, &ir).unwrap();
    let out = prog.call(&ctx, &[Value::from("s"), json(r#"["p","q"]"#)]).unwrap();
    assert_eq!(out.to_json().unwrap(), r#"["spq",["<p>","<q>"]]"#);
    let rev = trace_scan(&ctx, &body, true);
    let out = rev.call(&ctx, &[Value::from("s"), json(r#"["p","q"]"#)]).unwrap();
    assert_eq!(out.to_json().unwrap(), r#"["sqp",["<p>","<q>"]]"#);
}

#[test]
fn batch_runs_documents_of_different_lengths() {
    let ctx = Context::new().unwrap();
    let body = body(&ctx);
    let batched = trace_scan(&ctx, &body, false).batch(&ctx, None).unwrap();
    batched.validate().unwrap();
    let out = batched
        .call(&ctx, &[json(r#"["1","2"]"#), json(r#"[["a","b"],["c"]]"#)])
        .unwrap();
    assert_eq!(out.to_json().unwrap(), r#"[["1ab","2c"],[["<a>","<b>"],["<c>"]]]"#);
}

#[test]
fn pullback_gives_feedback_to_init_and_every_item_as_the_unrolled_body() {
    let ctx = Context::new().unwrap();
    let body = body(&ctx);
    let scan_pb = trace_scan(&ctx, &body, false).pullback(&ctx).unwrap();
    let unrolled_pb = trace_unrolled(&ctx).pullback(&ctx).unwrap();
    scan_pb.validate().unwrap();

    let out = scan_pb
        .call(&ctx, &[json(r#"["i",["a","b","c"]]"#), json(r#"["G",["y0",null,"y2"]]"#)])
        .unwrap();
    assert_eq!(out.index(0).unwrap().to_json().unwrap(), r#"["iabc",["<a>","<b>","<c>"]]"#);
    assert_eq!(out.index(1).unwrap().to_json().unwrap(), r#"["G",["Gy0","G","Gy2"]]"#);
    let by_hand = unrolled_pb
        .call(&ctx, &[json(r#"["i","a","b","c"]"#), json(r#"["G",["y0",null,"y2"]]"#)])
        .unwrap();
    assert_eq!(leaves(&out), leaves(&by_hand));

    // Feedback on the ys only.
    let out = scan_pb
        .call(&ctx, &[json(r#"["i",["a","b","c"]]"#), json(r#"[null,["y0","y1","y2"]]"#)])
        .unwrap();
    let by_hand = unrolled_pb
        .call(&ctx, &[json(r#"["i","a","b","c"]"#), json(r#"[null,["y0","y1","y2"]]"#)])
        .unwrap();
    assert!(leaves(&out).contains("iabc"), "{}", leaves(&out));
    assert_eq!(leaves(&out), leaves(&by_hand));
}

#[test]
fn pushforward_agrees_with_the_unrolled_body() {
    let ctx = Context::new().unwrap();
    let body = body(&ctx);
    let scan_pf = trace_scan(&ctx, &body, false).pushforward(&ctx).unwrap();
    let unrolled_pf = trace_unrolled(&ctx).pushforward(&ctx).unwrap();
    let out = scan_pf
        .call(&ctx, &[json(r#"["i",["a","b","c"]]"#), json(r#"["di",["da",null,"dc"]]"#)])
        .unwrap();
    let by_hand = unrolled_pf
        .call(&ctx, &[json(r#"["i","a","b","c"]"#), json(r#"["di","da",null,"dc"]"#)])
        .unwrap();
    assert!(leaves(&out).contains("iabc"), "{}", leaves(&out));
    assert_eq!(leaves(&out), leaves(&by_hand));
}

#[test]
fn on_a_lazy_context_it_is_a_promise() {
    let ctx = Context::new_lazy().unwrap();
    let body = body(&ctx);
    let init = ctx.format("{}", &[Value::from("")], None).unwrap();
    let out = ctx.scan(&body, &init, &json(r#"["p","q"]"#), false).unwrap();
    assert!(!out.is_ready());
    assert_eq!(out.to_json().unwrap(), r#"["pq",["<p>","<q>"]]"#);
}

#[test]
fn a_rolling_summary_with_an_lm_saves_and_loads() {
    let ctx = Context::new().unwrap();
    ctx.route("m", &Provider::echo("").unwrap()).unwrap();
    // body(c, x) = the LM asked "<c> / <x>", as the next carry and the y.
    let lm_body = ctx
        .trace(
            |ctx, i| {
                let content = ctx.format("{} / {}", &i[..2], None)?;
                let msg = Value::dict([("role", Value::from("user")), ("content", content)])?;
                let reply = ctx.lm_call(Value::list(&[msg]), "m")?;
                Ok(Value::list(&[reply.clone(), reply]))
            },
            &[Value::from("c"), Value::from("x")],
            None,
        )
        .unwrap();
    let ir = trace_scan(&ctx, &lm_body, false);
    let out = ir.call(&ctx, &[Value::from("start"), json(r#"["one","two"]"#)]).unwrap();
    assert_eq!(
        out.to_json().unwrap(),
        r#"["m|m|start / one / two",["m|start / one","m|m|start / one / two"]]"#
    );
    // Cost counts one pass of the body.
    assert!(ir.cost_json(1).unwrap().contains(r#""total":{"calls":1"#));
    let loaded = Ir::from_bytes(&ctx, &ir.to_bytes().unwrap()).unwrap();
    assert_eq!(loaded, ir);
    let out = loaded.call(&ctx, &[Value::from("s"), json(r#"["x"]"#)]).unwrap();
    assert_eq!(out.to_json().unwrap(), r#"["m|s / x",["m|s / x"]]"#);
}

#[test]
fn bad_bodies_and_inputs_are_invalid_arguments() {
    let ctx = Context::new().unwrap();
    let body = body(&ctx);
    let init = Value::from("");
    let xs = json(r#"["a"]"#);

    let err = ctx.scan(&body, &init, &Value::from("a"), false).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
    assert!(err.message.contains("not a list"), "{err}");

    let err = ctx.scan(&body, &init, &json("[1,2]"), false).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
    assert!(err.message.contains("xs leaf 0 is list<int>"), "{err}");

    let one_input = ctx
        .trace(|_, i| Ok(i[0].clone()), &[Value::from("c")], None)
        .unwrap();
    let err = ctx.scan(&one_input, &init, &xs, false).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
    assert!(err.message.contains("must take two inputs"), "{err}");

    let no_pair = ctx
        .trace(|_, i| Ok(i[1].clone()), &[Value::from("c"), Value::from("x")], None)
        .unwrap();
    let err = ctx.scan(&no_pair, &init, &xs, false).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
    assert!(err.message.contains("must return [next carry, y]"), "{err}");

    let bool_carry = ctx
        .trace(
            |ctx, i| Ok(Value::list(&[ctx.match_(&i[0], &i[1])?, i[1].clone()])),
            &[Value::from("c"), Value::from("x")],
            None,
        )
        .unwrap();
    let err = ctx.scan(&bool_carry, &init, &xs, false).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
    assert!(err.message.contains("changes carry leaf 0"), "{err}");

    // Inside a trace the body is checked when the scan is recorded.
    let lists = json("[false, true]");
    let err = ctx
        .trace_with(
            |ctx, i| ctx.scan(&one_input, &i[0], &i[1], false),
            &[Value::from("c"), json(r#"["x"]"#)],
            &TraceOptions {
                list_mask: Some(&lists),
                ..Default::default()
            },
        )
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
}
