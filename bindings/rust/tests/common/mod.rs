#![allow(dead_code)]

use af::{Context, Ir, Value};

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
