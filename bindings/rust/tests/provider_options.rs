//! Typed provider options: the JSON each builds, and providers made from
//! them answering (echo, replay recording then replaying) or refused by
//! libaf's own checks (which reach the caller unchanged).

use std::time::Duration;

use libaf::{
    Context, EchoOptions, ErrorCode, OpenAiOptions, Provider, ReplayOptions, StructuredOutput,
    Upstream, Value,
};

fn ask(ctx: &Context, content: &str) -> libaf::Result<Value> {
    let msg = Value::dict([("role", "user"), ("content", content)])?;
    ctx.lm_call(Value::list(&[msg]), "m")
}

#[test]
fn echo_options_build_the_json_and_a_working_provider() {
    assert_eq!(EchoOptions::new().to_json().unwrap(), "{}");
    let opts = EchoOptions::new()
        .name("fast")
        .max_in_flight(2)
        .latency(Duration::from_millis(5));
    assert_eq!(
        opts.to_json().unwrap(),
        r#"{"name":"fast","max_in_flight":2,"latency_ms":5}"#
    );
    let echo = Provider::echo_with(&opts).unwrap();
    let ctx = Context::new().unwrap();
    ctx.route("*", &echo).unwrap();
    assert_eq!(ask(&ctx, "hi").unwrap(), "m|hi");
    assert_eq!(echo.stats().unwrap().key("max_in_flight").unwrap(), 2);

    // Every u64 seed passes (libaf reads the int64's bits).
    let ranged = EchoOptions::new().latency_range(
        Duration::from_millis(1),
        Duration::from_millis(3),
        u64::MAX,
    );
    assert_eq!(
        ranged.to_json().unwrap(),
        r#"{"latency_min_ms":1,"latency_max_ms":3,"seed":-1}"#
    );
    Provider::echo_with(&ranged).unwrap();

    // libaf's checks still apply, with its message.
    let inverted =
        EchoOptions::new().latency_range(Duration::from_millis(9), Duration::from_millis(3), 0);
    let err = Provider::echo_with(&inverted).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
    assert!(err.message.contains("latency_min_ms"), "{err}");
}

#[test]
fn openai_options_build_the_json_and_reach_libaf_checks() {
    let opts = OpenAiOptions::new("http://127.0.0.1:9")
        .name("local")
        .max_in_flight(3)
        .allow_insecure_http(false)
        .timeout(Duration::from_secs(2))
        .max_retries(0)
        .backoff(Duration::from_millis(10))
        .backoff_max(Duration::from_millis(40))
        .extra(Value::from_json(r#"{"temperature": 0.5, "seed": 1}"#).unwrap());
    assert_eq!(
        opts.to_json().unwrap(),
        concat!(
            r#"{"name":"local","max_in_flight":3,"base_url":"http://127.0.0.1:9","#,
            r#""allow_insecure_http":false,"timeout_ms":2000,"max_retries":0,"#,
            r#""backoff_ms":10,"backoff_max_ms":40,"extra":{"temperature":0.5,"seed":1}}"#
        )
    );
    // Made without a request (nothing listens on port 9).
    let openai = Provider::openai_with(&opts).unwrap();
    assert_eq!(openai.stats().unwrap().key("max_in_flight").unwrap(), 3);

    let unset = OpenAiOptions::new("https://example.invalid/v1")
        .api_key_env("AF_TEST_SURELY_UNSET_KEY_VARIABLE");
    let err = Provider::openai_with(&unset).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
    assert!(
        err.message.contains("AF_TEST_SURELY_UNSET_KEY_VARIABLE"),
        "{err}"
    );

    let reserved = OpenAiOptions::new("https://example.invalid/v1")
        .extra(Value::dict([("model", "x")]).unwrap());
    let err = Provider::openai_with(&reserved).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
    assert!(err.message.contains("\"model\""), "{err}");
}

#[test]
fn limits_re_asks_and_the_structured_output_dialect() {
    let opts = OpenAiOptions::new("http://127.0.0.1:9")
        .requests_per_minute(600)
        .tokens_per_minute(90_000)
        .schema_retries(2)
        .structured_output(StructuredOutput::JsonObject);
    assert_eq!(
        opts.to_json().unwrap(),
        concat!(
            r#"{"requests_per_minute":600,"tokens_per_minute":90000,"schema_retries":2,"#,
            r#""base_url":"http://127.0.0.1:9","structured_output":"json_object"}"#
        )
    );
    let stats = Provider::openai_with(&opts).unwrap().stats().unwrap();
    assert_eq!(stats.key("requests_per_minute").unwrap(), 600);
    assert_eq!(stats.key("tokens_per_minute").unwrap(), 90_000);
    assert_eq!(stats.key("schema_retries").unwrap(), 2);

    let echo = Provider::echo_with(&EchoOptions::new().requests_per_minute(60)).unwrap();
    assert_eq!(
        echo.stats().unwrap().key("requests_per_minute").unwrap(),
        60
    );

    // libaf's range checks reach the caller.
    let err = Provider::echo_with(&EchoOptions::new().schema_retries(11)).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
    assert!(err.message.contains("schema_retries"), "{err}");
}

#[test]
fn replay_options_record_then_replay() {
    let path = std::env::temp_dir().join(format!(
        "af_rust_replay_options_{}.jsonl",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&path);
    {
        let upstream = EchoOptions::new().name("up");
        let record = ReplayOptions::new(&path).name("rec").record(upstream);
        let json = record.to_json().unwrap();
        assert!(
            json.ends_with(r#""mode":"record","upstream":{"type":"echo","name":"up"}}"#),
            "{json}"
        );
        let ctx = Context::new().unwrap();
        ctx.route("*", &Provider::replay_with(&record).unwrap())
            .unwrap();
        assert_eq!(ask(&ctx, "rec").unwrap(), "m|rec");
    }
    let ctx = Context::new().unwrap();
    ctx.route(
        "*",
        &Provider::replay_with(&ReplayOptions::new(&path)).unwrap(),
    )
    .unwrap();
    assert_eq!(ask(&ctx, "rec").unwrap(), "m|rec");
    assert_eq!(
        ask(&ctx, "never recorded").unwrap_err().code,
        ErrorCode::NotFound
    );
    let _ = std::fs::remove_file(&path);

    // An OpenAI upstream is a spec with its type and options.
    let spec = ReplayOptions::new("x.jsonl")
        .record(Upstream::from(OpenAiOptions::new("https://h/v1")))
        .to_json()
        .unwrap();
    assert!(
        spec.ends_with(r#""upstream":{"type":"openai","base_url":"https://h/v1"}}"#),
        "{spec}"
    );
    // A replay file that does not exist: libaf's IO error, naming it.
    let missing = ReplayOptions::new("/nonexistent-dir/af.jsonl");
    let err = Provider::replay_with(&missing).unwrap_err();
    assert_eq!(err.code, ErrorCode::Io);
    assert!(err.message.contains("/nonexistent-dir/af.jsonl"), "{err}");
}

#[cfg(unix)]
#[test]
fn a_replay_path_that_is_not_utf8_is_refused() {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::OsStr::from_bytes(b"bad-\xff.jsonl");
    let err = ReplayOptions::new(path).to_json().unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
    assert!(err.message.contains("not UTF-8"), "{err}");
}

// A provider from a spec naming its type (af_provider_new), and an unknown type refused.
#[test]
fn providers_come_from_specs() {
    let ctx = libaf::Context::new().unwrap();
    ctx.route("m", &libaf::Provider::from_spec(r#"{"type":"echo"}"#).unwrap()).unwrap();
    let msgs = libaf::Value::from_json(r#"[{"role":"user","content":"hi"}]"#).unwrap();
    assert_eq!(ctx.lm_call(&msgs, &libaf::Value::from("m")).unwrap().as_str().unwrap(), "m|hi");
    assert!(libaf::Provider::from_spec(r#"{"type":"ollama"}"#).is_ok());
    let err = libaf::Provider::from_spec(r#"{"type":"carrier-pigeon"}"#).unwrap_err();
    assert_eq!(err.code, libaf::ErrorCode::InvalidArgument);
    assert!(err.message.contains("unknown type"), "{}", err.message);
}

/// The keys libaf describes for a provider type (`af_options_json`).
fn described(provider_type: &str) -> Vec<String> {
    let all = Value::from_json(&libaf::options_json().unwrap()).unwrap();
    let keys = all.key("af_provider_new").unwrap().key(provider_type).unwrap();
    keys.items().unwrap().iter().map(|k| k.key("key").unwrap().as_str().unwrap()).collect()
}

/// Every key an options value sets.
fn set_keys(json: &str) -> Vec<String> {
    Value::from_json(json).unwrap().keys().unwrap()
}

#[test]
fn typed_options_cover_what_libaf_describes() {
    // Each builder with every setter used: the keys it writes are libaf's
    // own (the description is made by the code that reads them), and
    // every key libaf reads has a setter, except those named here on
    // purpose. A new option in libaf fails this test until it gets a setter
    // or a place in this list.
    let echo = EchoOptions::new()
        .name("e")
        .max_in_flight(1)
        .requests_per_minute(1)
        .tokens_per_minute(1)
        .schema_retries(1)
        .latency(Duration::from_millis(1));
    let echo_range = EchoOptions::new().latency_range(Duration::ZERO, Duration::from_millis(2), 7);
    let openai = OpenAiOptions::new("http://127.0.0.1:1/v1")
        .name("o")
        .max_in_flight(1)
        .requests_per_minute(1)
        .tokens_per_minute(1)
        .schema_retries(1)
        .api_key_env("K")
        .allow_insecure_http(true)
        .timeout(Duration::from_millis(1))
        .max_retries(1)
        .backoff(Duration::from_millis(1))
        .backoff_max(Duration::from_millis(1))
        .structured_output(StructuredOutput::JsonObject)
        .extra(Value::from_json(r#"{"user": "u"}"#).unwrap());
    let replay = ReplayOptions::new("/tmp/r.jsonl")
        .name("r")
        .max_in_flight(1)
        .requests_per_minute(1)
        .tokens_per_minute(1)
        .schema_retries(1)
        .record(EchoOptions::new());
    let cases: [(&str, Vec<String>, &[&str]); 3] = [
        (
            "echo",
            [set_keys(&echo.to_json().unwrap()), set_keys(&echo_range.to_json().unwrap())].concat(),
            &["schema_replies"],
        ),
        ("openai", set_keys(&openai.to_json().unwrap()), &[]),
        ("replay", set_keys(&replay.to_json().unwrap()), &[]),
    ];
    for (provider_type, typed, untyped) in cases {
        let libaf_keys = described(provider_type);
        for k in &typed {
            assert!(libaf_keys.contains(k), "{provider_type}: the typed option {k} is not one libaf reads");
        }
        for k in &libaf_keys {
            assert!(
                typed.contains(k) || untyped.contains(&k.as_str()),
                "{provider_type}: libaf reads {k:?}, which the typed options cannot set"
            );
        }
    }
}
