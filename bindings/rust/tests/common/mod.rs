#![allow(dead_code)]

use libaf::{Context, Ir, Value};

/// hello(x) = concat(format("Hello, {}!", x), "?")
pub fn trace_hello(ctx: &Context) -> Ir {
    ctx.trace(
        |ctx, inputs| {
            let greeting = ctx.format("Hello, {}!", &inputs[..1], None)?;
            ctx.concat(&[greeting, Value::from("?")])
        },
        &[Value::from("x")],
        None,
    )
    .expect("tracing hello")
}

/// Two one-equation branches of x: a(x) = format("A{}", x), b(x) = concat(x, x).
pub fn branches(ctx: &Context) -> (Ir, Ir) {
    let a = ctx
        .trace(
            |ctx, i| ctx.format("A{}", &i[..1], None),
            &[Value::from("x")],
            None,
        )
        .unwrap();
    let b = ctx
        .trace(
            |ctx, i| ctx.concat(&[i[0].clone(), i[0].clone()]),
            &[Value::from("x")],
            None,
        )
        .unwrap();
    (a, b)
}
