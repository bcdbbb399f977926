//! Tracing a Rust closure and calling the IR.

mod common;

use libaf::{Context, ErrorCode, Kind, Value};
use common::trace_hello;

#[test]
fn hello_traced_and_called_returns_native_string() {
    let ctx = Context::new().unwrap();
    let ir = trace_hello(&ctx);
    assert_eq!(ir.input_count(), 1);
    let out = ir.call(&ctx, &[Value::from("World")]).unwrap();
    assert_eq!(out.kind(), Kind::Str);
    let s: String = out.as_str().unwrap();
    assert_eq!(s, "Hello, World!?");
    // The IR is reusable and shareable.
    let again = ir.clone().call(&ctx, &[Value::from("Rust")]).unwrap();
    assert_eq!(again.as_str().unwrap(), "Hello, Rust!?");
}

#[test]
fn closure_sees_placeholders_and_is_tracing() {
    assert!(!libaf::is_tracing());
    let ctx = Context::new().unwrap();
    let mut seen = Vec::new();
    let ir = ctx
        .trace(
            |ctx, inputs| {
                seen.push((
                    libaf::is_tracing(),
                    inputs.len(),
                    inputs[0].kind(),
                    inputs[1].kind(),
                ));
                ctx.concat(&[inputs[0].clone(), inputs[1].clone()])
            },
            &[Value::from("a"), Value::from("b")],
            None,
        )
        .unwrap();
    assert!(!libaf::is_tracing());
    assert_eq!(seen, vec![(true, 2, Kind::Placeholder, Kind::Placeholder)]);
    assert_eq!(
        ir.call(&ctx, &[Value::from("x"), Value::from("y")])
            .unwrap()
            .as_str()
            .unwrap(),
        "xy"
    );
}

#[test]
fn wrong_input_kind_is_invalid_argument() {
    let ctx = Context::new().unwrap();
    let ir = trace_hello(&ctx);
    let err = ir.call(&ctx, &[Value::from(42)]).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
    assert_eq!(err.code_i32(), 1);
    assert!(!err.message.is_empty());
}

#[test]
fn wrong_input_count_is_invalid_argument() {
    let ctx = Context::new().unwrap();
    let ir = trace_hello(&ctx);
    let err = ir.call(&ctx, &[]).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
    let err = ir
        .call(&ctx, &[Value::from("a"), Value::from("b")])
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
}

#[test]
fn structured_inputs_and_outputs() {
    let ctx = Context::new().unwrap();
    let example = Value::from_json(r#"{"name": "x", "greeting": "y"}"#).unwrap();
    let ir = ctx
        .trace(
            |ctx, inputs| {
                let person = &inputs[0];
                assert_eq!(person.kind(), Kind::Dict);
                let name = person.key("name")?;
                let line =
                    ctx.format("{greeting}, {}!", std::slice::from_ref(&name), Some(person))?;
                Value::dict([("line", line), ("name", name)])
            },
            &[example],
            None,
        )
        .unwrap();
    let out = ir
        .call(
            &ctx,
            &[Value::from_json(r#"{"name": "Ada", "greeting": "Hi"}"#).unwrap()],
        )
        .unwrap();
    assert_eq!(out.key("line").unwrap().as_str().unwrap(), "Hi, Ada!");
    assert_eq!(out.key("name").unwrap().as_str().unwrap(), "Ada");
}

#[test]
fn static_mask_makes_a_literal() {
    let ctx = Context::new().unwrap();
    let mask = Value::list(&[Value::from(false), Value::from(true)]);
    let mut static_seen = None;
    let ir = ctx
        .trace(
            |ctx, inputs| {
                // A static leaf is the example value itself.
                static_seen = Some(inputs[1].as_str()?);
                ctx.concat(&[inputs[0].clone(), inputs[1].clone()])
            },
            &[Value::from("x"), Value::from("!")],
            Some(&mask),
        )
        .unwrap();
    assert_eq!(static_seen.as_deref(), Some("!"));
    let out = ir
        .call(&ctx, &[Value::from("hey"), Value::from("!")])
        .unwrap();
    assert_eq!(out.as_str().unwrap(), "hey!");
    let err = ir
        .call(&ctx, &[Value::from("hey"), Value::from("?")])
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
}

#[test]
fn bad_static_mask_is_invalid_argument() {
    let ctx = Context::new().unwrap();
    let mask = Value::from_json("[true, true, true]").unwrap();
    let err = ctx
        .trace(
            |ctx, inputs| ctx.concat(inputs),
            &[Value::from("x")],
            Some(&mask),
        )
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
}

#[test]
fn output_not_built_from_inputs_is_invalid_argument_or_literal() {
    // A closure must return something derived from the trace; a value made
    // from nothing but a string literal is either accepted as a constant
    // output or rejected with INVALID_ARGUMENT — never a crash.
    let ctx = Context::new().unwrap();
    match ctx.trace(|_, _| Ok(Value::from("const")), &[Value::from("x")], None) {
        Ok(ir) => assert_eq!(
            ir.call(&ctx, &[Value::from("y")])
                .unwrap()
                .as_str()
                .unwrap(),
            "const"
        ),
        Err(e) => assert_eq!(e.code, ErrorCode::InvalidArgument),
    }
}

#[test]
fn other_operations_trace_and_run() {
    let ctx = Context::new().unwrap();
    let ir = ctx
        .trace(
            |ctx, inputs| {
                let x = &inputs[0];
                let m = ctx.match_(x, &Value::from("yes"))?;
                let sg = ctx.stop_gradient(x)?;
                let cp = ctx.checkpoint(&sg, "answer", "intermediates")?;
                let d = ctx.depends(&cp, std::slice::from_ref(&m))?;
                Ok(Value::list(&[d, m]))
            },
            &[Value::from("x")],
            None,
        )
        .unwrap();
    let prims = ir.eqn_prims();
    assert!(prims.contains(&"match"), "{prims:?}");
    assert!(prims.contains(&"checkpoint"), "{prims:?}");
    let out = ir.call(&ctx, &[Value::from("yes")]).unwrap();
    assert_eq!(out.to_json().unwrap(), r#"["yes",true]"#);
    let out = ir.call(&ctx, &[Value::from("no")]).unwrap();
    assert_eq!(out.to_json().unwrap(), r#"["no",false]"#);
}

#[test]
fn calling_an_ir_inside_a_trace_inlines_it() {
    let ctx = Context::new().unwrap();
    let hello = trace_hello(&ctx);
    let twice = ctx
        .trace(
            |ctx, inputs| {
                let a = hello.call(ctx, inputs)?;
                let b = hello.call(ctx, &[a])?;
                Ok(b)
            },
            &[Value::from("x")],
            None,
        )
        .unwrap();
    assert_eq!(twice.eqn_count(), 4);
    let out = twice.call(&ctx, &[Value::from("W")]).unwrap();
    assert_eq!(out.as_str().unwrap(), "Hello, Hello, W!?!?");
}

#[test]
fn tag_scopes_are_part_of_the_ir() {
    let ctx = Context::new().unwrap();
    let plain = trace_hello(&ctx);
    let tagged = ctx
        .trace(
            |ctx, inputs| {
                let greeting =
                    ctx.with_tag("greet", || ctx.format("Hello, {}!", &inputs[..1], None))?;
                ctx.concat(&[greeting, Value::from("?")])
            },
            &[Value::from("x")],
            None,
        )
        .unwrap();
    assert_eq!(tagged.eqn_count(), 2);
    assert_ne!(plain, tagged, "tags take part in IR equality");
    assert!(tagged.to_text().unwrap().contains("greet"));
    assert_eq!(
        tagged
            .call(&ctx, &[Value::from("W")])
            .unwrap()
            .as_str()
            .unwrap(),
        "Hello, W!?"
    );
}

#[test]
fn tag_and_fold_outside_a_trace_are_invalid_argument() {
    let ctx = Context::new().unwrap();
    assert_eq!(
        ctx.tag_push("t").unwrap_err().code,
        ErrorCode::InvalidArgument
    );
    assert_eq!(ctx.tag_pop().unwrap_err().code, ErrorCode::InvalidArgument);
    // Fold scopes outside a trace are no-ops (docs/SEMANTICS.md).
    ctx.fold_push().unwrap();
    ctx.fold_pop().unwrap();
}

#[test]
fn unmatched_tag_pop_inside_a_trace_is_invalid_argument() {
    let ctx = Context::new().unwrap();
    let err = ctx
        .trace(
            |ctx, inputs| {
                ctx.tag_pop()?;
                ctx.concat(inputs)
            },
            &[Value::from("x")],
            None,
        )
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
}

#[test]
fn fold_turns_constant_work_into_literals() {
    let ctx = Context::new().unwrap();
    let ir = ctx
        .trace(
            |ctx, inputs| {
                let prefix = ctx.with_fold(|| {
                    ctx.format("{}-{}: ", &[Value::from("a"), Value::from(1)], None)
                })?;
                assert_eq!(prefix.as_str()?, "a-1: ");
                ctx.concat(&[prefix, inputs[0].clone()])
            },
            &[Value::from("x")],
            None,
        )
        .unwrap();
    assert_eq!(ir.eqn_prims(), vec!["concat"]);
    assert_eq!(
        ir.call(&ctx, &[Value::from("z")])
            .unwrap()
            .as_str()
            .unwrap(),
        "a-1: z"
    );
}

#[test]
fn folding_a_placeholder_is_invalid_argument() {
    let ctx = Context::new().unwrap();
    let err = ctx
        .trace(
            |ctx, inputs| ctx.with_fold(|| ctx.concat(&[inputs[0].clone(), Value::from("!")])),
            &[Value::from("x")],
            None,
        )
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
    assert!(err.message.contains("fold"), "{err}");
}

#[test]
fn equal_traces_are_equal_irs_with_equal_hashes() {
    let ctx = Context::new().unwrap();
    let a = trace_hello(&ctx);
    let b = trace_hello(&Context::new().unwrap());
    assert_eq!(a, b);
    assert_eq!(a.hash(), b.hash());
    let c = ctx
        .trace(
            |ctx, inputs| ctx.format("Bye, {}!", inputs, None),
            &[Value::from("x")],
            None,
        )
        .unwrap();
    assert_ne!(a, c);
    let mut set = std::collections::HashSet::new();
    set.insert(a.clone());
    assert!(set.contains(&b));
    assert!(!set.contains(&c));
}

#[test]
fn handles_cross_threads() {
    let ctx = std::sync::Arc::new(Context::new().unwrap());
    let ir = trace_hello(&ctx);
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let (ctx, ir) = (ctx.clone(), ir.clone());
            std::thread::spawn(move || {
                let name = format!("T{i}");
                let out = ir.call(&ctx, &[Value::from(name.as_str())]).unwrap();
                assert_eq!(out.as_str().unwrap(), format!("Hello, {name}!?"));
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

#[test]
fn version_matches_the_binding() {
    assert_eq!(libaf::abi_version(), libaf::ABI_VERSION);
    assert_eq!(libaf::version(), libaf::sys::AF_VERSION_STRING);
}

#[test]
fn a_traced_list_of_any_length_calls_a_batched_ir() {
    let ctx = Context::new().unwrap();
    let one = ctx
        .trace(
            |ctx, t| ctx.format("Triage: {}", t, None),
            &[Value::from("t")],
            None,
        )
        .unwrap();
    let each = one.batch(&ctx, None).unwrap();
    let lists = Value::from_json("[true]").unwrap();
    let all = ctx
        .trace_with(
            |ctx, tickets| each.call(ctx, tickets),
            &[Value::from_json(r#"["an example"]"#).unwrap()],
            &libaf::TraceOptions {
                list_mask: Some(&lists),
                ..Default::default()
            },
        )
        .unwrap();
    // The batched equations are recorded once: the program is the batched IR.
    assert_eq!(all, each);
    for (input, expected) in [
        (r#"["a"]"#, r#"["Triage: a"]"#),
        (
            r#"["a","b","c"]"#,
            r#"["Triage: a","Triage: b","Triage: c"]"#,
        ),
    ] {
        let out = all.call(&ctx, &[Value::from_json(input).unwrap()]).unwrap();
        assert_eq!(out.to_json().unwrap(), expected);
    }
    let err = all
        .call(&ctx, &[Value::from_json(r#"["a",2]"#).unwrap()])
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
    assert!(err.message.contains("input[0][1]"), "{}", err.message);
    let err = ctx
        .trace_with(
            |_, inputs| Ok(inputs[0].clone()),
            &[Value::from("not a list")],
            &libaf::TraceOptions {
                list_mask: Some(&lists),
                ..Default::default()
            },
        )
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
    assert!(err.message.contains("only a list"), "{}", err.message);
}
