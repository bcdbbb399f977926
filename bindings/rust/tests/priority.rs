//! The priority hint: with one request in flight, the call tagged "urgent"
//! starts before an equally ready untagged one.

mod common;

use std::sync::{Arc, Mutex};

use libaf::{Context, Provider, Value};

fn first_model(urgent: bool) -> String {
    let ctx = Context::new().unwrap();
    let order = Arc::new(Mutex::new(Vec::<String>::new()));
    let seen = order.clone();
    let host = Provider::host(move |req| {
        let model = req
            .json()
            .unwrap()
            .key("model")
            .unwrap()
            .as_str()
            .unwrap()
            .to_string();
        seen.lock().unwrap().push(model);
        req.complete("ok").unwrap();
    })
    .unwrap();
    host.set_max_in_flight(1).unwrap();
    ctx.route("*", &host).unwrap();
    let ir = ctx
        .trace(
            move |ctx, i| {
                let msg = Value::dict([("role", Value::from("user")), ("content", i[0].clone())])?;
                let msgs = Value::list(&[msg]);
                if urgent {
                    ctx.tag_push("urgent")?;
                }
                let first = ctx.lm_call(&msgs, &Value::from("first"))?;
                if urgent {
                    ctx.tag_pop()?;
                }
                let second = ctx.lm_call(&msgs, &Value::from("second"))?;
                Ok(Value::list(&[first, second]))
            },
            &[Value::from("q")],
            None,
        )
        .unwrap();
    ir.call(&ctx, &[Value::from("q")]).unwrap();
    let first = order.lock().unwrap()[0].clone();
    first
}

#[test]
fn the_urgent_tag_starts_first() {
    // Untagged, the later of two equal roots starts first; the hint turns it round.
    assert_eq!(first_model(false), "second");
    assert_eq!(first_model(true), "first");
}
