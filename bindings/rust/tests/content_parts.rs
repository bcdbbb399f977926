//! LM call messages whose content is a list of text and image parts: echo
//! reads the text parts, a host provider sees every part, a traced text and
//! url, and a malformed part is InvalidArgument.

use std::sync::{Arc, Mutex};

use libaf::{Context, ErrorCode, LmRequest, Provider, Value};

const PNG: &str = "iVBORw0KGgo=";
const URL: &str = "https://example.com/cat.png";

fn text(t: impl Into<Value>) -> Value {
    Value::dict([("type", Value::from("text")), ("text", t.into())]).unwrap()
}

fn image_url(u: impl Into<Value>) -> Value {
    Value::dict([("type", Value::from("image")), ("url", u.into())]).unwrap()
}

fn image_data(media_type: &str, data: &str) -> Value {
    Value::dict([
        ("type", Value::from("image")),
        ("media_type", Value::from(media_type)),
        ("data", Value::from(data)),
    ])
    .unwrap()
}

/// [{"role": "user", "content": [text, image url, image data, "Be brief."]}]
fn messages(t: impl Into<Value>, u: impl Into<Value>) -> Value {
    let parts = Value::list(&[
        text(t),
        image_url(u),
        image_data("image/png", PNG),
        text("Be brief."),
    ]);
    let user = Value::dict([("role", Value::from("user")), ("content", parts)]).unwrap();
    Value::list(&[user])
}

#[test]
fn echo_reads_the_text_parts() {
    let ctx = Context::new().unwrap();
    ctx.route("*", &Provider::echo("").unwrap()).unwrap();
    let out = ctx.lm_call(messages("What is this?", URL), "m").unwrap();
    assert_eq!(out.as_str().unwrap(), "m|What is this?\n\nBe brief.");
}

#[test]
fn a_host_provider_sees_every_part() {
    let ctx = Context::new().unwrap();
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let store = seen.clone();
    let host = Provider::host(move |req: LmRequest| {
        let msgs = req.json().unwrap().key("messages").unwrap();
        store.lock().unwrap().push(msgs.to_json().unwrap());
        req.complete("ok").unwrap();
    })
    .unwrap();
    ctx.route("*", &host).unwrap();
    let msgs = messages("What is this?", URL);
    assert_eq!(ctx.lm_call(&msgs, "m").unwrap().as_str().unwrap(), "ok");
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    let got = Value::from_json(&seen[0]).unwrap();
    assert_eq!(got, msgs);
    let content = got.index(0).unwrap().key("content").unwrap();
    assert_eq!(content.index(1).unwrap().key("url").unwrap().as_str().unwrap(), URL);
    assert_eq!(content.index(2).unwrap().key("data").unwrap().as_str().unwrap(), PNG);
    assert_eq!(
        content.index(2).unwrap().key("media_type").unwrap().as_str().unwrap(),
        "image/png"
    );
}

#[test]
fn a_traced_text_and_url() {
    let ctx = Context::new().unwrap();
    ctx.route("*", &Provider::echo("").unwrap()).unwrap();
    let ir = ctx
        .trace(
            |ctx, i| ctx.lm_call(messages(i[0].clone(), i[1].clone()), "m"),
            &[Value::from("q"), Value::from("u")],
            None,
        )
        .unwrap();
    assert_eq!(ir.eqn_prims(), vec!["lm_call"]);
    let out = ir
        .call(&ctx, &[Value::from("What is this?"), Value::from(URL)])
        .unwrap();
    assert_eq!(out.as_str().unwrap(), "m|What is this?\n\nBe brief.");
}

#[test]
fn a_bad_part_is_invalid_argument() {
    let ctx = Context::new().unwrap();
    ctx.route("*", &Provider::echo("").unwrap()).unwrap();
    let parts = Value::list(&[text("hi"), image_data("image/png", "not base64!")]);
    let user = Value::dict([("role", Value::from("user")), ("content", parts)]).unwrap();
    let err = ctx.lm_call(Value::list(&[user]), "m").unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument, "{err:#}");
    assert!(err.message.contains("not base64"), "{err:#}");
    assert!(err.message.contains("messages[0].content[1]"), "{err:#}");
}
