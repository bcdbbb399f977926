#!/usr/bin/env python3
"""Writes the hand-crafted loader inputs of fuzz/regressions and
fuzz/corpus/graph: shapes that pass the container checks but once broke
the loader (core/io/README.md lists the limits they probe). Each file is
mode byte 2 (the JSON form, see graph_harness.h) + graph JSON.

  regressions/deep_sub_irs_json      switches nested 200 deep (limit 64)
  regressions/template_fields_json   a format template of 10001 fields
  corpus/graph/deep_sub_irs_64_json  nested exactly 64 deep: loads
  corpus/graph/fan_sub_irs_json      a 19-level fan of shared sub-IRs: 2.3e9
                                     equations once expanded, within every
                                     limit; every pass must work on the DAG
  corpus/graph/template_fields_json  a format template of exactly 10000 fields
  corpus/graph/format_bomb_json      two such formats in a row: 4 KB in, 400 GB
                                     out when run (each format checks the run's
                                     max_value_bytes before it allocates)
  corpus/graph/long_names_fan_json   switches 18 deep with two 250-byte branch
                                     names sharing the level below: a deep
                                     related query would answer ~3 GB (refused
                                     by its size)

and the hand-made seeds of the other targets (corpus/value_json: JSON
text; corpus/schema: schema JSON, a NUL byte, the reply):

  corpus/value_json/*     nesting at and past the 512 limit, int64 edges,
                          escapes, surrogates, the "$float" / "$dict" forms
  corpus/schema/*         the reply to af.h's own pattern example (100 KB,
                          which crashed std::regex), a pattern that is
                          exponential for backtracking engines, length
                          bounds at and past the limit, every node type

Usage: fuzz/crafted.py   (rewrites the files; they are committed)
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def nested_switches(depth):
    # IR 0: (key, x) -> concat(x, "!"); IR k: (key, x) -> switch(key) {"a": IR k-1}(key, x).
    irs = [{"vars": ["str", "str", "str"], "in": ["%0", "%1"],
            "eqns": [{"prim": "concat", "out": "%2", "in": ["%1", {"lit": "!"}]}], "out": "%2"}]
    for k in range(1, depth + 1):
        irs.append({"vars": ["str", "str", "str"], "in": ["%0", "%1"],
                    "eqns": [{"prim": "switch", "out": "%2", "in": ["%0", "%0", "%1"],
                              "params": {"branches": {"ir_map": {"a": k - 1}}}}],
                    "out": "%2"})
    return {"afg": 1, "irs": irs}


def fan(levels):
    # IR 0: the cond (state) -> true. IR 1: (state [x]) -> [concat(x, "!")].
    # IR k+1: (state [x]) -> y = switch("a") {"a": IR k, "b": IR k}([x]);
    #         [z] = while_loop[cond=IR 0, body=IR k, max_iters=1]([y]).
    # Each level uses the one below three times: 2 * 3^levels - 1 equations
    # once expanded, in a graph of a few hundred bytes.
    state = {"tree": [["*"]], "atoms": ["%0"]}
    irs = [{"vars": ["str"], "in": state, "eqns": [], "out": {"lit": True}},
           {"vars": ["str", "str"], "in": state,
            "eqns": [{"prim": "concat", "out": "%1", "in": ["%0", {"lit": "!"}]}],
            "out": {"tree": ["*"], "atoms": ["%1"]}}]
    for k in range(1, levels + 1):
        irs.append({"vars": ["str", "str", "str"], "in": state, "eqns": [
            {"prim": "switch", "out": {"tree": ["*"], "atoms": ["%1"]},
             "in": {"tree": ["*", ["*"]], "atoms": [{"lit": "a"}, "%0"]},
             "params": {"branches": {"ir_map": {"a": k, "b": k}}}},
            {"prim": "while_loop", "out": {"tree": ["*"], "atoms": ["%2"]},
             "in": {"tree": [["*"]], "atoms": ["%1"]},
             "params": {"body": {"ir": k}, "cond": {"ir": 0}, "max_iters": {"value": 1}}}],
            "out": {"tree": ["*"], "atoms": ["%2"]}})
    return {"afg": 1, "irs": irs}


def many_fields(n):
    return {"afg": 1, "irs": [{"vars": ["str", "str"], "in": ["%0"],
                               "eqns": [{"prim": "format", "out": "%1", "in": ["%0"],
                                         "params": {"names": {"value": []},
                                                    "template": {"value": "{0}" * n}}}],
                               "out": "%1"}]}


def format_bomb():
    template = {"value": "{0}" * 10000}
    return {"afg": 1, "irs": [{"vars": ["str", "str", "str"], "in": ["%0"], "eqns": [
        {"prim": "format", "out": "%1", "in": ["%0"], "params": {"names": {"value": []}, "template": template}},
        {"prim": "format", "out": "%2", "in": ["%1"], "params": {"names": {"value": []}, "template": template}}],
        "out": "%2"}]}


def long_names_fan(depth, name_len):
    # IR 0: (key, x) -> concat(x, "!"); IR k: (key, x) -> concat(switch(key) {A: IR k-1, B: IR k-1}(key, x), "?").
    a, b = "a" * name_len, "b" * name_len
    irs = [{"vars": ["str", "str", "str"], "in": ["%0", "%1"],
            "eqns": [{"prim": "concat", "out": "%2", "in": ["%1", {"lit": "!"}]}], "out": "%2"}]
    for k in range(1, depth + 1):
        irs.append({"vars": ["str", "str", "str", "str"], "in": ["%0", "%1"], "eqns": [
            {"prim": "switch", "out": "%2", "in": ["%0", "%0", "%1"],
             "params": {"branches": {"ir_map": {a: k - 1, b: k - 1}}}},
            {"prim": "concat", "out": "%3", "in": ["%2", {"lit": "?"}]}], "out": "%3"})
    return {"afg": 1, "irs": irs}


def write(rel, graph):
    with open(os.path.join(HERE, rel), "wb") as f:
        f.write(b"\x02" + json.dumps(graph, separators=(",", ":")).encode())


def write_raw(rel, text):
    with open(os.path.join(HERE, rel), "wb") as f:
        f.write(text.encode())


def value_seeds():
    yield "deep_512", "[" * 512 + "]" * 512
    yield "deep_513", "[" * 513 + "]" * 513
    yield "deep_dicts", '{"a":' * 300 + "1" + "}" * 300
    yield "ints", "[9223372036854775807,-9223372036854775808,18446744073709551615,0,-0,1e308,5e-324,-0.0]"
    yield "escapes", '["\\u0000\\u001f\\"\\\\\\/\\b\\f\\n\\r\\t","\\ud83d\\ude00","\\u00e9","\u00e9"]'
    yield "lone_surrogate", '"\\ud800"'
    yield "escape_forms", '[{"$float":"nan"},{"$float":"-inf"},{"$dict":{"$float":1}},{"$float":0}]'
    yield "dicts", '{"b":1,"a":[true,false,null],"a":2,"":{"x":1.5}}'
    yield "long_string", '"' + "x" * 3000 + '"'


def schema_seeds():
    def case(schema, reply=None):
        return json.dumps(schema) + ("" if reply is None else "\0" + reply)

    yield "pattern_100k_reply", case({"type": "str", "pattern": "^[a-z]+$"}, json.dumps({"value": "a" * 100000}))
    yield "pattern_backtracking", case({"type": "str", "pattern": "^(a+)+b$"}, json.dumps({"value": "a" * 40 + "c"}))
    yield "str_bounds_at_limit", case({"type": "str", "min": 1000, "max": 67108864}, '{"value":""}')
    yield "str_bounds_past_limit", case({"type": "str", "min": 1e12})
    everything = {"answer": {"type": "enum", "values": ["yes", "no"], "doc": "d"},
                  "n": {"type": "int", "min": 1, "max": 10},
                  "x": {"type": "float", "min": 0.0, "max": 1.0},
                  "ok": {"type": "bool"},
                  "tags": [{"type": "str", "max": 8}, {"type": "str"}],
                  "nested": {"type": "dict", "fields": {"type": {"type": "str"}}},
                  "pair": {"type": "list", "items": [{"type": "int"}, {"type": "enum", "values": [1, 2]}]}}
    reply = {"answer": "yes", "n": 3, "x": 0.5, "ok": True, "tags": {"0": "a", "1": "b"},
             "nested": {"type": "t"}, "pair": {"0": 1, "1": 2}}
    yield "every_node", case(everything, json.dumps(reply))
    yield "wrong_reply", case(everything, json.dumps({"answer": "maybe"}))
    yield "not_json_reply", case({"type": "int"}, '{"value": 1,')


write("regressions/deep_sub_irs_json", nested_switches(200))
write("regressions/template_fields_json", many_fields(10001))
write("corpus/graph/deep_sub_irs_64_json", nested_switches(64))
write("corpus/graph/fan_sub_irs_json", fan(19))
write("corpus/graph/template_fields_json", many_fields(10000))
write("corpus/graph/format_bomb_json", format_bomb())
write("corpus/graph/long_names_fan_json", long_names_fan(18, 250))
for name, text in value_seeds():
    write_raw("corpus/value_json/" + name, text)
for name, text in schema_seeds():
    write_raw("corpus/schema/" + name, text)
