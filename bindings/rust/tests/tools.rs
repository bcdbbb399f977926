//! Tool calling: `Context::lm_tool_call` (af_lm_tool_call) and
//! `Context::tool_results` (af_tool_results). Eagerly on an echo context (it
//! calls each tool once, in order, with its smallest arguments, then answers
//! "<model>|<last message>"), an agent loop traced as a while_loop over the
//! history (run, saved and reloaded), and the errors.

use libaf::{Context, ErrorCode, Ir, Program, Provider, TraceOptions, Value};

fn json(s: &str) -> Value {
    Value::from_json(s).unwrap()
}

const TOOLS: &str = r#"[
    {"name": "add", "description": "a + b",
     "parameters": {"a": {"type": "int", "min": 2}, "b": {"type": "int", "min": 3}}},
    {"name": "lookup", "description": "today's weather in a city",
     "parameters": {"city": {"type": "enum", "values": ["Paris", "Rome"]}}}
]"#;

const MESSAGES: &str = r#"[
    {"role": "system", "content": "Answer with the tools."},
    {"role": "user", "content": "What is 2 + 3, and the weather in Paris?"}
]"#;

/// An echo context with the host functions "add" and "lookup" (each takes
/// the arguments JSON of its tool and returns a str).
fn agent_context() -> Context {
    let ctx = Context::new().unwrap();
    ctx.route("*", &Provider::echo("").unwrap()).unwrap();
    ctx.register_function("add", &Value::from("str"), |args| {
        let a = Value::from_json(args[0].as_str_ref()?)?;
        Ok(Value::from(
            (a.key("a")?.as_int()? + a.key("b")?.as_int()?).to_string(),
        ))
    })
    .unwrap();
    ctx.register_function("lookup", &Value::from("str"), |args| {
        let a = Value::from_json(args[0].as_str_ref()?)?;
        Ok(Value::from(match a.key("city")?.as_str_ref()? {
            "Paris" => "Paris: 21C, sunny",
            _ => "no data",
        }))
    })
    .unwrap();
    ctx
}

fn strs(v: &Value) -> Vec<String> {
    v.items()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect()
}

#[test]
fn eager_conversation_calls_each_tool_then_answers() {
    let ctx = agent_context();
    let (messages, tools) = (json(MESSAGES), json(TOOLS));

    let r = ctx.lm_tool_call(&messages, "", "echo", &tools).unwrap();
    let mut keys = r.keys().unwrap();
    keys.sort();
    assert_eq!(keys, ["arguments", "called", "names", "text", "turn"]);
    assert_eq!(r.key("called").unwrap(), true);
    assert_eq!(r.key("text").unwrap(), "");
    assert_eq!(strs(&r.key("names").unwrap()), ["add"]);
    assert_eq!(strs(&r.key("arguments").unwrap()), [r#"{"a":2,"b":3}"#]);
    let h1 = ctx
        .tool_results("", r.key("turn").unwrap(), Value::list(&[Value::from("5")]))
        .unwrap();
    let msgs = json(h1.as_str_ref().unwrap());
    assert_eq!(msgs.len().unwrap(), 2);
    assert_eq!(msgs.index(0).unwrap().key("role").unwrap(), "assistant");
    let answer = msgs.index(1).unwrap();
    assert_eq!(answer.key("role").unwrap(), "tool");
    assert_eq!(answer.key("tool_call_id").unwrap(), "call_0");
    assert_eq!(answer.key("content").unwrap(), "5");

    // "[]" is no history too; params are sampling params.
    let again = ctx
        .lm_tool_call_with(
            &messages,
            "[]",
            "echo",
            &tools,
            json(r#"{"temperature": 0}"#),
        )
        .unwrap();
    assert_eq!(again, r);

    let r = ctx.lm_tool_call(&messages, &h1, "echo", &tools).unwrap();
    assert_eq!(strs(&r.key("names").unwrap()), ["lookup"]);
    assert_eq!(strs(&r.key("arguments").unwrap()), [r#"{"city":"Paris"}"#]);
    let h2 = ctx
        .tool_results(
            &h1,
            r.key("turn").unwrap(),
            Value::list(&[Value::from("Paris: 21C, sunny")]),
        )
        .unwrap();

    let r = ctx.lm_tool_call(&messages, &h2, "echo", &tools).unwrap();
    assert_eq!(r.key("called").unwrap(), false);
    assert_eq!(r.key("text").unwrap(), "echo|Paris: 21C, sunny");
    assert_eq!(r.key("names").unwrap().len().unwrap(), 0);
    assert_eq!(r.key("arguments").unwrap().len().unwrap(), 0);
    // A final turn with no results is appended alone.
    let h3 = ctx
        .tool_results(&h2, r.key("turn").unwrap(), Value::list(&[]))
        .unwrap();
    let msgs = json(h3.as_str_ref().unwrap());
    assert_eq!(msgs.len().unwrap(), 5);
    assert_eq!(
        msgs.index(4).unwrap().key("content").unwrap(),
        "echo|Paris: 21C, sunny"
    );
}

#[test]
fn tool_results_needs_one_result_per_call() {
    let ctx = agent_context();
    let r = ctx
        .lm_tool_call(json(MESSAGES), "", "echo", json(TOOLS))
        .unwrap();
    let turn = r.key("turn").unwrap();
    for results in [
        Value::list(&[]),
        Value::list(&[Value::from("5"), Value::from("6")]),
    ] {
        let err = ctx.tool_results("", &turn, results).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidArgument, "{err}");
    }
    let err = ctx
        .tool_results("not json", &turn, Value::list(&[Value::from("5")]))
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument, "{err}");
    let err = ctx.tool_results("", "{", Value::list(&[])).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument, "{err}");
    // A tool list that is not one: an unnamed tool.
    let err = ctx
        .lm_tool_call(
            json(MESSAGES),
            "",
            "echo",
            json(r#"[{"description": "x"}]"#),
        )
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument, "{err}");
}

/// agent(history) = the state after the loop: while state.called,
/// r = lm_tool_call(MESSAGES, state.history, "echo", TOOLS), each call run by
/// a scan over (names, arguments) switching on the name, and
/// state = {history: tool_results(history, r.turn, results), called, text}.
fn trace_agent(ctx: &Context, max_steps: u64) -> Ir {
    let (messages, tools) = (json(MESSAGES), json(TOOLS));
    let tool = |name: &'static str| {
        ctx.trace(
            move |ctx, i| ctx.host_call(name, &i[..1]),
            &[Value::from("{}")],
            None,
        )
        .unwrap()
    };
    let (add, lookup) = (tool("add"), tool("lookup"));
    // run_tool(carry, {name, args}) = [carry, the tool's result]
    let call = Value::dict([("name", "add"), ("args", "{}")]).unwrap();
    let run_tool = ctx
        .trace(
            |ctx, i| {
                let args = i[1].key("args")?;
                let y = ctx.switch(
                    &i[1].key("name")?,
                    &[("add", &add), ("lookup", &lookup)],
                    &[args],
                )?;
                Ok(Value::list(&[i[0].clone(), y]))
            },
            &[Value::from(0), call],
            None,
        )
        .unwrap();
    let state = Value::dict([
        ("history", Value::from("")),
        ("called", Value::from(true)),
        ("text", Value::from("")),
    ])
    .unwrap();
    let step = ctx
        .trace(
            |ctx, s| {
                let history = s[0].key("history")?;
                let r = ctx.lm_tool_call(&messages, &history, "echo", &tools)?;
                let calls =
                    Value::dict([("name", r.key("names")?), ("args", r.key("arguments")?)])?;
                let results = ctx
                    .scan(&run_tool, &Value::from(0), &calls, false)?
                    .index(1)?;
                Value::dict([
                    (
                        "history",
                        ctx.tool_results(&history, r.key("turn")?, results)?,
                    ),
                    ("called", r.key("called")?),
                    ("text", r.key("text")?),
                ])
            },
            std::slice::from_ref(&state),
            None,
        )
        .unwrap();
    let more = ctx
        .trace(|_, s| s[0].key("called"), &[state], None)
        .unwrap();
    ctx.trace(
        |ctx, i| {
            let init = Value::dict([
                ("history", i[0].clone()),
                ("called", Value::from(true)),
                ("text", Value::from("")),
            ])?;
            ctx.while_loop(&more, &step, &init, max_steps)
        },
        &[Value::from("")],
        None,
    )
    .unwrap()
}

#[test]
fn traced_agent_loop_runs_saves_and_reloads() {
    let ctx = agent_context();
    let agent = trace_agent(&ctx, 4);
    let prog = Program::compile(&ctx, &agent).unwrap();
    let out = prog.call(&ctx, &[Value::from("")]).unwrap();
    assert_eq!(out.key("called").unwrap(), false);
    assert_eq!(out.key("text").unwrap(), "echo|Paris: 21C, sunny");
    let history = out.key("history").unwrap();
    let msgs = json(history.as_str_ref().unwrap());
    let roles: Vec<String> = msgs
        .items()
        .unwrap()
        .iter()
        .map(|m| m.key("role").unwrap().as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["assistant", "tool", "assistant", "tool", "assistant"]
    );
    assert_eq!(msgs.index(1).unwrap().key("content").unwrap(), "5");
    assert_eq!(
        msgs.index(3).unwrap().key("content").unwrap(),
        "Paris: 21C, sunny"
    );
    assert_eq!(
        msgs.index(3).unwrap().key("tool_call_id").unwrap(),
        "call_1"
    );

    // The same history, step by step.
    let (messages, tools) = (json(MESSAGES), json(TOOLS));
    let mut h = Value::from("");
    loop {
        let r = ctx.lm_tool_call(&messages, &h, "echo", &tools).unwrap();
        let results: Vec<Value> = strs(&r.key("names").unwrap())
            .iter()
            .zip(strs(&r.key("arguments").unwrap()))
            .map(|(name, args)| ctx.host_call(name, &[Value::from(args)]).unwrap())
            .collect();
        h = ctx
            .tool_results(&h, r.key("turn").unwrap(), Value::list(&results))
            .unwrap();
        if r.key("called").unwrap() == false {
            break;
        }
    }
    assert_eq!(h, history);

    // Resuming from a history: the loop goes on from its first turn.
    let first = json(history.as_str_ref().unwrap()).items().unwrap()[..2].to_vec();
    let resumed = prog
        .call(&ctx, &[Value::from(Value::list(&first).to_json().unwrap())])
        .unwrap();
    assert_eq!(resumed.key("text").unwrap(), "echo|Paris: 21C, sunny");

    // Saved and reloaded (bytes, and a program file in another context).
    let loaded = Ir::from_bytes(&ctx, &agent.to_bytes().unwrap()).unwrap();
    assert_eq!(loaded, agent);
    assert_eq!(loaded.call(&ctx, &[Value::from("")]).unwrap(), out);
    let path = std::env::temp_dir().join(format!("af-agent-{}.afg", std::process::id()));
    prog.save(&path).unwrap();
    let other = agent_context();
    let again = Program::load(&other, &path)
        .unwrap()
        .call(&other, &[Value::from("")])
        .unwrap();
    std::fs::remove_file(&path).ok();
    assert_eq!(again, out);
}

#[test]
fn agent_loop_stops_at_max_steps() {
    let ctx = agent_context();
    // Two steps: both call a tool, so the loop ends still called, no text.
    let out = trace_agent(&ctx, 2).call(&ctx, &[Value::from("")]).unwrap();
    assert_eq!(out.key("called").unwrap(), true);
    assert_eq!(out.key("text").unwrap(), "");
    assert_eq!(
        json(out.key("history").unwrap().as_str_ref().unwrap())
            .len()
            .unwrap(),
        4
    );
}

#[test]
fn tool_results_is_recorded_in_a_trace() {
    let ctx = agent_context();
    // tool_results(history, turn, results): the results a list of any length.
    let lists = json("[false, false, true]");
    let ir = ctx
        .trace_with(
            |ctx, i| ctx.tool_results(&i[0], &i[1], &i[2]),
            &[Value::from(""), Value::from("{}"), json(r#"["r"]"#)],
            &TraceOptions {
                list_mask: Some(&lists),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(ir.eqn_prims(), ["tool_results"]);
    let r = ctx
        .lm_tool_call(json(MESSAGES), "", "echo", json(TOOLS))
        .unwrap();
    let turn = r.key("turn").unwrap();
    let five = json(r#"["5"]"#);
    let traced = ir
        .call(&ctx, &[Value::from(""), turn.clone(), five.clone()])
        .unwrap();
    assert_eq!(traced, ctx.tool_results("", &turn, &five).unwrap());
    // Saved and reloaded.
    let loaded = Ir::from_bytes(&ctx, &ir.to_bytes().unwrap()).unwrap();
    assert_eq!(
        loaded
            .call(&ctx, &[Value::from(""), turn.clone(), five])
            .unwrap(),
        traced
    );
    // The wrong number of results is an error of the run.
    let err = ir
        .call(&ctx, &[Value::from(""), turn, json(r#"["5", "6"]"#)])
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument, "{err}");
}
