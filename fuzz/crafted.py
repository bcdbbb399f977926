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


def write(rel, graph):
    with open(os.path.join(HERE, rel), "wb") as f:
        f.write(b"\x02" + json.dumps(graph, separators=(",", ":")).encode())


write("regressions/deep_sub_irs_json", nested_switches(200))
write("regressions/template_fields_json", many_fields(10001))
write("corpus/graph/deep_sub_irs_64_json", nested_switches(64))
write("corpus/graph/fan_sub_irs_json", fan(19))
write("corpus/graph/template_fields_json", many_fields(10000))
