//! The shared conformance corpus: every golden `.afg` of
//! tests/conformance/graphs (found by walking the folder) is loaded and run
//! on the inputs of its `.expected.json`, and must give the expected output
//! or error code. The context provides what the folder's README says a
//! host must: host function `golden.shout` (s -> s + "!") and models
//! `golden-*` routed to the echo provider.

use std::path::{Path, PathBuf};

use libaf::{Context, Ir, Provider, Value};

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/conformance/graphs")
}

/// Runs every case of one golden graph; returns the failures.
fn run_graph(ctx: &Context, afg: &Path, expected: &Path) -> Vec<String> {
    let name = afg.file_name().unwrap().to_string_lossy().into_owned();
    let mut failures = Vec::new();
    let ir = match Ir::load(ctx, afg) {
        Ok(ir) => ir,
        Err(e) => return vec![format!("{name}: load failed: {e:#}")],
    };
    let text = std::fs::read_to_string(expected).unwrap();
    let cases = Value::from_json(&text)
        .unwrap()
        .key("cases")
        .unwrap()
        .items()
        .unwrap();
    assert!(!cases.is_empty(), "{name}: no cases");
    for (i, case) in cases.iter().enumerate() {
        let inputs = case.key("inputs").unwrap().items().unwrap();
        let got = ir.call(ctx, &inputs);
        match (case.key("error"), got) {
            (Ok(code), Err(e)) if e.code_i32() as i64 == code.as_int().unwrap() => {}
            (Ok(code), r) => {
                failures.push(format!("{name} case {i}: expected error {code}, got {r:?}"))
            }
            (Err(_), Ok(out)) => {
                let want = case.key("output").unwrap().to_json().unwrap();
                let got = out.to_json().unwrap();
                if got != want {
                    failures.push(format!("{name} case {i}: expected {want}, got {got}"));
                }
            }
            (Err(_), Err(e)) => failures.push(format!("{name} case {i}: unexpected error {e:#}")),
        }
    }
    failures
}

#[test]
fn every_golden_graph_loads_and_runs() {
    let ctx = Context::new().unwrap();
    ctx.register_function("golden.shout", &Value::from("str"), |args| {
        Ok(Value::from(format!("{}!", args[0].as_str()?)))
    })
    .unwrap();
    ctx.route("golden-*", &Provider::echo("").unwrap()).unwrap();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .expect("tests/conformance/graphs")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "afg"))
        .collect();
    entries.sort();
    let mut ran = 0;
    let mut failures = Vec::new();
    for afg in &entries {
        let expected = afg.with_extension("expected.json");
        if !expected.exists() {
            // An .afg without expectations is not a golden graph (README).
            continue;
        }
        ran += 1;
        failures.extend(run_graph(&ctx, afg, &expected));
    }
    assert!(
        ran >= 3,
        "only {ran} golden graphs found in {}",
        corpus_dir().display()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
