/* trace_test.c — tracing, operations and IR inspection through the C API. */
#include "check.h"

#include <pthread.h>

static af_error_t* str_in(af_context_t* c, const char* s, af_value_t** out) {
  return af_value_str(c, s, strlen(s), out);
}

/* ---- programs --------------------------------------------------------- */

struct greet {
  const char* tmpl;   /* default "Hello, {}!" */
  const char* suffix; /* default "?" */
  int32_t tracing_inside;
  af_context_t* ctx_seen;
  int calls;
};

/* hello(x) = concat(format(tmpl, x), suffix) */
static af_error_t* hello_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                            af_value_t** out) {
  struct greet* g = (struct greet*)ud;
  const char* tmpl = g && g->tmpl ? g->tmpl : "Hello, {}!";
  const char* suffix = g && g->suffix ? g->suffix : "?";
  af_value_t* parts[2] = {NULL, NULL};
  af_error_t* e;
  if (g) {
    g->tracing_inside = af_is_tracing();
    g->ctx_seen = c;
    g->calls++;
  }
  if (n != 1) return af_error_new(AF_ERR_INTERNAL, "hello_fn: expected 1 input", 26);
  e = af_format(c, tmpl, strlen(tmpl), in, 1, NULL, &parts[0]);
  if (e) return e;
  e = str_in(c, suffix, &parts[1]);
  if (!e) e = af_concat(c, AS_ARGS(parts), 2, out);
  af_value_free(parts[0]);
  af_value_free(parts[1]);
  return e;
}

/* ---- hello ------------------------------------------------------------ */

static void hello_traces_and_calls(void) {
  struct greet g = {NULL, NULL, 0, NULL, 0};
  af_ir_t* ir;
  CHECK_INT_EQ(af_is_tracing(), 0);
  ir = TRACE(hello_fn, &g, "[\"World\"]", NULL);
  if (!ir) return;
  CHECK_INT_EQ(g.calls, 1); /* traced once */
  CHECK_INT_EQ(g.tracing_inside, 1);
  CHECK(g.ctx_seen == ctx);
  CHECK_INT_EQ(af_is_tracing(), 0);
  CHECK_INT_EQ(af_ir_input_count(ir), 1);
  CHECK_INT_EQ(af_ir_eqn_count(ir), 2);
  CHECK_STR_EQ(af_ir_eqn_prim(ir, 0), "format");
  CHECK_STR_EQ(af_ir_eqn_prim(ir, 1), "concat");
  CHECK(af_ir_eqn_prim(ir, 2) == NULL);
  CHECK(af_ir_eqn_prim(ir, (size_t)-1) == NULL);
  CHECK_CALL(ir, "[\"World\"]", "\"Hello, World!?\"");
  /* The IR is reusable, and inputs are read from the call, not the example. */
  CHECK_CALL(ir, "[\"Ada\"]", "\"Hello, Ada!?\"");
  CHECK_CALL(ir, "[\"\"]", "\"Hello, !?\"");
  CHECK_CALL(ir, "[\"{}\"]", "\"Hello, {}!?\"");
  CHECK_CALL(ir, "[\"\xc3\xa9\xf0\x9f\x98\x80\"]", "\"Hello, \xc3\xa9\xf0\x9f\x98\x80!?\"");
  af_ir_free(ir);
}

static void ir_text_and_dot(void) {
  af_ir_t* ir = TRACE(hello_fn, NULL, "[\"World\"]", NULL);
  char* text;
  char* dot;
  af_bytes_t b;
  if (!ir) return;
  text = ir_text(ir);
  if (text) {
    CHECK_CONTAINS(text, "format");
    CHECK_CONTAINS(text, "concat");
    CHECK_CONTAINS(text, "Hello, {}!");
    CHECK_CONTAINS(text, "\"?\"");
    CHECK_NOT_CONTAINS(text, "World"); /* examples give only kinds */
  }
  free(text);
  dot = ir_dot(ir);
  if (dot) {
    CHECK_CONTAINS(dot, "digraph");
    CHECK_CONTAINS(dot, "doubleoctagon");
    CHECK_CONTAINS(dot, "box");
    CHECK_CONTAINS(dot, "format");
    CHECK_CONTAINS(dot, "concat");
    CHECK_CONTAINS(dot, "->");
  }
  free(dot);
  b.data = (uint8_t*)&b;
  b.len = 3;
  CHECK_ERR(af_ir_to_text(NULL, &b), AF_ERR_INVALID_ARGUMENT, "null|ir");
  CHECK(b.data == NULL && b.len == 0);
  b.data = (uint8_t*)&b;
  b.len = 3;
  CHECK_ERR(af_ir_to_dot(NULL, &b), AF_ERR_INVALID_ARGUMENT, "null|ir");
  CHECK(b.data == NULL && b.len == 0);
  CHECK_ERR(af_ir_to_text(ir, NULL), AF_ERR_INVALID_ARGUMENT, "out");
  CHECK_ERR(af_ir_to_dot(ir, NULL), AF_ERR_INVALID_ARGUMENT, "out");
  af_ir_free(ir);
}

static void ir_handles(void) {
  af_ir_t* ir = TRACE(hello_fn, NULL, "[\"World\"]", NULL);
  af_ir_t* c;
  if (!ir) return;
  c = af_ir_clone(ir);
  CHECK(c == ir);
  af_ir_free(ir);
  CHECK_INT_EQ(af_ir_eqn_count(c), 2);
  CHECK_CALL(c, "[\"W\"]", "\"Hello, W!?\"");
  af_ir_free(c);
  CHECK(af_ir_clone(NULL) == NULL);
  af_ir_free(NULL);
  CHECK_INT_EQ(af_ir_eqn_count(NULL), 0);
  CHECK(af_ir_eqn_prim(NULL, 0) == NULL);
  CHECK_INT_EQ(af_ir_input_count(NULL), 0);
}

/* ---- outputs ---------------------------------------------------------- */

/* f(a, b) = [concat(a, b), concat(b, a)] */
static af_error_t* two_outputs_fn(void* ud, af_context_t* c, const af_value_t* const* in,
                                  size_t n, af_value_t** out) {
  const af_value_t* ba[2];
  af_value_t* outs[2] = {NULL, NULL};
  af_error_t* e;
  (void)ud;
  (void)n;
  ba[0] = in[1];
  ba[1] = in[0];
  e = af_concat(c, in, 2, &outs[0]);
  if (!e) e = af_concat(c, ba, 2, &outs[1]);
  if (!e) e = af_value_list(c, AS_ARGS(outs), 2, out);
  af_value_free(outs[0]);
  af_value_free(outs[1]);
  return e;
}

static void multiple_outputs_are_a_list(void) {
  af_ir_t* ir = TRACE(two_outputs_fn, NULL, "[\"a\", \"b\"]", NULL);
  if (!ir) return;
  CHECK_INT_EQ(af_ir_input_count(ir), 2);
  CHECK_INT_EQ(af_ir_eqn_count(ir), 2);
  CHECK_CALL(ir, "[\"x\", \"y\"]", "[\"xy\",\"yx\"]");
  af_ir_free(ir);
}

/* f(x) = {"zeta": format("Hi {}", x), "alpha": x, "lit": [42, "const", 2.0, null]} */
static af_error_t* dict_output_fn(void* ud, af_context_t* c, const af_value_t* const* in,
                                  size_t n, af_value_t** out) {
  const char* keys[3] = {"zeta", "alpha", "lit"};
  size_t lens[3] = {4, 5, 3};
  af_value_t* vals[3] = {NULL, NULL, NULL};
  af_error_t* e;
  (void)ud;
  (void)n;
  e = af_format(c, "Hi {}", 5, in, 1, NULL, &vals[0]);
  vals[1] = af_value_clone(in[0]);
  if (!e) e = af_value_from_json(c, "[42,\"const\",2.0,null]", 21, &vals[2]);
  if (!e) e = af_value_dict(c, keys, lens, AS_ARGS(vals), 3, out);
  af_value_free(vals[0]);
  af_value_free(vals[1]);
  af_value_free(vals[2]);
  return e;
}

static void dict_output_with_literal_leaves(void) {
  af_ir_t* ir = TRACE(dict_output_fn, NULL, "[\"x\"]", NULL);
  if (!ir) return;
  CHECK_INT_EQ(af_ir_eqn_count(ir), 1);
  /* Insertion order of the traced dict is kept in the output. */
  CHECK_CALL(ir, "[\"Bo\"]",
             "{\"zeta\":\"Hi Bo\",\"alpha\":\"Bo\",\"lit\":[42,\"const\",2.0,null]}");
  af_ir_free(ir);
}

/* f(x) = x */
static af_error_t* identity_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                               af_value_t** out) {
  (void)ud;
  (void)c;
  (void)n;
  *out = af_value_clone(in[0]);
  return NULL;
}

static void identity_on_nested_inputs(void) {
  af_ir_t* ir = TRACE(identity_fn, NULL, "[{\"b\":[1,2.5,true],\"a\":\"s\",\"c\":{}}]", NULL);
  if (!ir) return;
  CHECK_INT_EQ(af_ir_eqn_count(ir), 0);
  CHECK_INT_EQ(af_ir_input_count(ir), 1);
  CHECK_CALL(ir, "[{\"b\":[7,-0.5,false],\"a\":\"t\",\"c\":{}}]",
             "{\"b\":[7,-0.5,false],\"a\":\"t\",\"c\":{}}");
  af_ir_free(ir);
}

/* f() = format("hi") */
static af_error_t* no_input_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                               af_value_t** out) {
  (void)ud;
  (void)in;
  if (n != 0) return af_error_new(AF_ERR_INTERNAL, "expected no inputs", 18);
  return af_format(c, "hi {{}}", 7, NULL, 0, NULL, out);
}

static void program_without_inputs(void) {
  af_ir_t* ir = NULL;
  af_value_t* out = NULL;
  if (!CHECK_OK(af_trace(ctx, no_input_fn, NULL, NULL, 0, NULL, &ir))) return;
  CHECK_INT_EQ(af_ir_input_count(ir), 0);
  /* Literal-only operations are recorded, not folded. */
  CHECK_INT_EQ(af_ir_eqn_count(ir), 1);
  if (CHECK_OK(af_ir_call(ctx, ir, NULL, 0, &out))) CHECK_JSON(out, "\"hi {}\"");
  af_value_free(out);
  af_ir_free(ir);
}

/* ---- format ----------------------------------------------------------- */

struct fmt_prog {
  const char* tmpl;
  size_t n_args;     /* positional args taken from the inputs */
  const char* named; /* if set: a dict {named: inputs[0]} is passed as named */
};

static af_error_t* fmt_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                          af_value_t** out) {
  const struct fmt_prog* p = (const struct fmt_prog*)ud;
  af_value_t* named = NULL;
  af_error_t* e;
  size_t len;
  (void)n;
  if (p->named) {
    len = strlen(p->named);
    e = af_value_dict(c, &p->named, &len, in, 1, &named);
    if (e) return e;
  }
  e = af_format(c, p->tmpl, strlen(p->tmpl), in, p->n_args, named, out);
  af_value_free(named);
  return e;
}

static void format_fields_traced(void) {
  static const struct {
    struct fmt_prog prog;
    const char* inputs;
    const char* expected;
  } table[] = {
      {{"{0} {1} {0}", 2, NULL}, "[\"x\", \"y\"]", "\"x y x\""},
      {{"{1}{0}", 2, NULL}, "[\"x\", \"y\"]", "\"yx\""},
      {{"{} and {}", 2, NULL}, "[\"x\", \"y\"]", "\"x and y\""},
      {{"{{x}} {} }}{{", 1, NULL}, "[\"v\", \"unused\"]", "\"{x} v }{\""},
      {{"Hi {name}!", 0, "name"}, "[\"Bo\", \"unused\"]", "\"Hi Bo!\""},
      {{"{} is {name}", 1, "name"}, "[\"Bo\", \"unused\"]", "\"Bo is Bo\""},
      {{"no fields", 0, NULL}, "[\"a\", \"b\"]", "\"no fields\""},
      {{"", 0, NULL}, "[\"a\", \"b\"]", "\"\""},
      {{"\xc3\xa9{}\xe2\x9c\x93", 1, NULL}, "[\"\xf0\x9f\x98\x80\", \"b\"]",
       "\"\xc3\xa9\xf0\x9f\x98\x80\xe2\x9c\x93\""},
  };
  size_t i;
  for (i = 0; i < sizeof table / sizeof table[0]; i++) {
    af_ir_t* ir = TRACE(fmt_fn, (void*)&table[i].prog, "[\"a\", \"b\"]", NULL);
    if (!ir) {
      printf("    template: %s\n", table[i].prog.tmpl);
      continue;
    }
    if (!CHECK_CALL(ir, table[i].inputs, table[i].expected))
      printf("    template: %s\n", table[i].prog.tmpl);
    af_ir_free(ir);
  }
}

/* Template errors: traced (raised from af_format inside the callback and
 * propagated by af_trace with the same code) and evaluated at once. */
static const struct {
  struct fmt_prog prog;
  const char* fragment;
} bad_templates[] = {
    {{"Hello {", 1, NULL}, "brace|unmatched|unbalanced|unclosed|single|expected '}'"},
    {{"Hello }", 1, NULL}, "brace|unmatched|unbalanced|single"},
    {{"{", 0, NULL}, "brace|unmatched|unbalanced|unclosed|single|expected '}'"},
    {{"a } b", 0, NULL}, "brace|unmatched|unbalanced|single"},
    {{"{} {0}", 2, NULL}, "numbering|automatic|manual"},
    {{"{0} {}", 2, NULL}, "numbering|automatic|manual"},
    {{"{who}", 1, NULL}, "who"},
    {{"{who}", 0, "name"}, "who"},
    {{"{} {}", 1, NULL}, "argument|positional|index"},
    {{"{2}", 2, NULL}, "argument|positional|index"},
};

static void template_errors_at_trace_time(void) {
  size_t i;
  for (i = 0; i < sizeof bad_templates / sizeof bad_templates[0]; i++) {
    af_ir_t* ir = (af_ir_t*)&ir;
    if (!CHECK_ERR(trace_json(fmt_fn, (void*)&bad_templates[i].prog, "[\"a\", \"b\"]", NULL, &ir),
                   AF_ERR_INVALID_ARGUMENT, "format", bad_templates[i].fragment))
      printf("    template: %s\n", bad_templates[i].prog.tmpl);
    CHECK_NULLED(ir, af_ir_free);
  }
}

static void template_errors_outside_a_trace(void) {
  size_t i;
  af_value_t* args[2];
  args[0] = mk_str("a");
  args[1] = mk_str("b");
  for (i = 0; i < sizeof bad_templates / sizeof bad_templates[0]; i++) {
    af_value_t* out = (af_value_t*)&out;
    if (!CHECK_ERR(fmt_fn((void*)&bad_templates[i].prog, ctx, AS_ARGS(args), 2, &out),
                   AF_ERR_INVALID_ARGUMENT, "format", bad_templates[i].fragment))
      printf("    template: %s\n", bad_templates[i].prog.tmpl);
    CHECK_NULLED(out, af_value_free);
  }
  free_items(args, 2);
}

static void format_stringifies_non_strings(void) {
  af_value_t* args[7];
  af_value_t* out = NULL;
  size_t n = split_list("[2, 2.5, 2.0, true, null, [1,\"a\",false], {\"k\":1e30,\"a\":-3}]", args);
  const char* tmpl = "{}|{}|{}|{}|{}|{}|{}";
  CHECK_INT_EQ(n, 7);
  if (n == 7 && CHECK_OK(af_format(ctx, tmpl, strlen(tmpl), AS_ARGS(args), 7, NULL, &out)))
    CHECK_JSON(out, "\"2|2.5|2.0|true|null|[1,\\\"a\\\",false]|{\\\"k\\\":1e+30,\\\"a\\\":-3}\"");
  af_value_free(out);
  free_items(args, n);
}

/* f(i, fl, b) = format("{} {} {}", i, fl, b) */
static void format_stringifies_traced_non_strings(void) {
  static const struct fmt_prog prog = {"{} {} {}", 3, NULL};
  af_ir_t* ir = TRACE(fmt_fn, (void*)&prog, "[1, 1.0, false]", NULL);
  if (!ir) return;
  CHECK_CALL(ir, "[2, 2.5, true]", "\"2 2.5 true\"");
  CHECK_CALL(ir, "[-7, 2.0, false]", "\"-7 2.0 false\"");
  CHECK_CALL(ir, "[0, 1e30, false]", "\"0 1e+30 false\"");
  af_ir_free(ir);
}

/* f(x) = format("{}", [x]) : a container holding a placeholder. */
static af_error_t* fmt_container_fn(void* ud, af_context_t* c, const af_value_t* const* in,
                                    size_t n, af_value_t** out) {
  af_value_t* list = NULL;
  af_error_t* e;
  (void)ud;
  (void)n;
  e = af_value_list(c, in, 1, &list);
  if (e) return e;
  e = af_format(c, "{}", 2, AS_ARGS(&list), 1, NULL, out);
  af_value_free(list);
  return e;
}

/* f(x) = format("{a}", named = "not a dict") */
static af_error_t* fmt_bad_named_fn(void* ud, af_context_t* c, const af_value_t* const* in,
                                    size_t n, af_value_t** out) {
  (void)ud;
  (void)n;
  return af_format(c, "{a}", 3, NULL, 0, in[0], out);
}

static void format_argument_errors(void) {
  af_ir_t* ir = (af_ir_t*)&ir;
  af_value_t* out = (af_value_t*)&out;
  af_value_t* s = mk_str("s");
  /* A container holding a traced value is formatted as JSON when called. */
  ir = NULL;
  if (CHECK_OK(trace_json(fmt_container_fn, NULL, "[\"a\"]", NULL, &ir))) {
    CHECK_CALL(ir, "[\"v\"]", "\"[\\\"v\\\"]\"");
  }
  af_ir_free(ir);
  ir = (af_ir_t*)&ir;
  CHECK_ERR(trace_json(fmt_bad_named_fn, NULL, "[\"a\"]", NULL, &ir), AF_ERR_INVALID_ARGUMENT,
            "named", "dict");
  CHECK_NULLED(ir, af_ir_free);
  CHECK_ERR(af_format(ctx, "{a}", 3, NULL, 0, s, &out), AF_ERR_INVALID_ARGUMENT, "named", "dict");
  CHECK_NULLED(out, af_value_free);
  out = (af_value_t*)&out;
  CHECK_ERR(af_format(ctx, "{}", 2, NULL, 1, NULL, &out), AF_ERR_INVALID_ARGUMENT, "null|arg");
  CHECK_NULLED(out, af_value_free);
  out = (af_value_t*)&out;
  CHECK_ERR(af_format(ctx, "\xff{}", 3, AS_ARGS(&s), 1, NULL, &out), AF_ERR_INVALID_ARGUMENT,
            "utf-8|utf8");
  CHECK_NULLED(out, af_value_free);
  out = (af_value_t*)&out;
  CHECK_ERR(af_format(ctx, NULL, 2, AS_ARGS(&s), 1, NULL, &out), AF_ERR_INVALID_ARGUMENT,
            "null|template");
  CHECK_NULLED(out, af_value_free);
  /* The template is length-delimited. */
  out = NULL;
  if (CHECK_OK(af_format(ctx, "<{}>{", 4, AS_ARGS(&s), 1, NULL, &out))) CHECK_JSON(out, "\"<s>\"");
  af_value_free(out);
  af_value_free(s);
}

/* ---- static inputs ---------------------------------------------------- */

struct static_seen {
  int32_t kind0, kind1;
  char tmpl[64];
};

/* f(style, name): style is read at trace time (static) to pick a template. */
static af_error_t* styled_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                             af_value_t** out) {
  struct static_seen* seen = (struct static_seen*)ud;
  const char* style = NULL;
  size_t len = 0;
  const char* tmpl;
  af_error_t* e;
  (void)n;
  seen->kind0 = af_value_kind(in[0]);
  seen->kind1 = af_value_kind(in[1]);
  e = af_value_get_str(in[0], &style, &len);
  if (e) return e;
  tmpl = (len == 6 && memcmp(style, "formal", 6) == 0) ? "Dear {}," : "Hi {}!";
  strcpy(seen->tmpl, tmpl);
  return af_format(c, tmpl, strlen(tmpl), in + 1, 1, NULL, out);
}

static void static_leaves_are_baked_in(void) {
  struct static_seen seen = {-1, -1, ""};
  af_ir_t* ir = TRACE(styled_fn, &seen, "[\"formal\", \"x\"]", "[true, false]");
  af_value_t* out = (af_value_t*)&out;
  char* text;
  if (!ir) return;
  CHECK_INT_EQ(seen.kind0, AF_KIND_STR);
  CHECK_INT_EQ(seen.kind1, AF_KIND_PLACEHOLDER);
  CHECK_STR_EQ(seen.tmpl, "Dear {},");
  CHECK_INT_EQ(af_ir_input_count(ir), 2);
  text = ir_text(ir);
  if (text) CHECK_CONTAINS(text, "Dear {},");
  free(text);
  CHECK_CALL(ir, "[\"formal\", \"Bo\"]", "\"Dear Bo,\"");
  CHECK_ERR(call_json(ir, "[\"casual\", \"Bo\"]", &out), AF_ERR_INVALID_ARGUMENT, "static",
            "formal", "casual");
  CHECK_NULLED(out, af_value_free);
  out = (af_value_t*)&out;
  CHECK_ERR(call_json(ir, "[1, \"Bo\"]", &out), AF_ERR_INVALID_ARGUMENT, "static|str");
  CHECK_NULLED(out, af_value_free);
  af_ir_free(ir);

  /* The same function traced with another static value is another program. */
  ir = TRACE(styled_fn, &seen, "[\"casual\", \"x\"]", "[true, false]");
  if (!ir) return;
  CHECK_STR_EQ(seen.tmpl, "Hi {}!");
  CHECK_CALL(ir, "[\"casual\", \"Bo\"]", "\"Hi Bo!\"");
  af_ir_free(ir);
}

/* f(cfg, x) = format(cfg["t"], x) with cfg static as a whole subtree. */
static af_error_t* cfg_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                          af_value_t** out) {
  af_value_t* t = NULL;
  const char* s = NULL;
  size_t len = 0;
  af_error_t* e;
  (void)ud;
  (void)n;
  e = af_value_key(in[0], "t", 1, &t);
  if (!e) e = af_value_get_str(t, &s, &len);
  if (!e) e = af_format(c, s, len, in + 1, 1, NULL, out);
  af_value_free(t);
  return e;
}

static void static_subtree_by_mask_prefix(void) {
  af_ir_t* ir = TRACE(cfg_fn, NULL, "[{\"t\":\"<{}>\",\"n\":1}, \"x\"]", "[true, false]");
  af_value_t* out = (af_value_t*)&out;
  if (!ir) return;
  CHECK_CALL(ir, "[{\"t\":\"<{}>\",\"n\":1}, \"v\"]", "\"<v>\"");
  CHECK_ERR(call_json(ir, "[{\"t\":\"<{}>\",\"n\":2}, \"v\"]", &out), AF_ERR_INVALID_ARGUMENT,
            "static");
  CHECK_NULLED(out, af_value_free);
  af_ir_free(ir);
  /* A nested mask: only cfg.t is static. */
  ir = TRACE(cfg_fn, NULL, "[{\"t\":\"[{}]\",\"n\":1}, \"x\"]",
             "[{\"t\":true,\"n\":false}, false]");
  if (!ir) return;
  CHECK_CALL(ir, "[{\"t\":\"[{}]\",\"n\":5}, \"v\"]", "\"[v]\"");
  out = (af_value_t*)&out;
  CHECK_ERR(call_json(ir, "[{\"t\":\"({})\",\"n\":5}, \"v\"]", &out), AF_ERR_INVALID_ARGUMENT,
            "static");
  CHECK_NULLED(out, af_value_free);
  af_ir_free(ir);
}

static void masks_that_are_not_a_prefix(void) {
  static const struct {
    const char* examples;
    const char* mask;
  } table[] = {
      {"[\"a\", \"b\"]", "[true, false, true]"},
      {"[\"a\", \"b\"]", "{\"a\": true}"},
      {"[\"a\", \"b\"]", "[[true], false]"},
      {"[\"a\", \"b\"]", "[\"yes\", false]"},
      {"[\"a\", \"b\"]", "[1, 0]"},
      {"[{\"a\":\"s\"}, \"b\"]", "[{\"b\":true}, false]"},
      {"[[\"s\"], \"b\"]", "[[true, true], false]"},
  };
  size_t i;
  for (i = 0; i < sizeof table / sizeof table[0]; i++) {
    af_ir_t* ir = (af_ir_t*)&ir;
    if (!CHECK_ERR(trace_json(identity_fn, NULL, table[i].examples, table[i].mask, &ir),
                   AF_ERR_INVALID_ARGUMENT, "mask"))
      printf("    examples %s, mask %s\n", table[i].examples, table[i].mask);
    CHECK_NULLED(ir, af_ir_free);
  }
}

/* ---- calling with wrong inputs ---------------------------------------- */

static void wrong_inputs_at_call(void) {
  af_ir_t* ir = TRACE(hello_fn, NULL, "[\"World\"]", NULL);
  af_ir_t* nested = TRACE(identity_fn, NULL, "[{\"greeting\":\"s\",\"n\":[1.5]}]", NULL);
  af_value_t* out = (af_value_t*)&out;
  af_value_t* one = NULL;
  const af_value_t* null_input = NULL;
  if (!ir || !nested) {
    af_ir_free(ir);
    af_ir_free(nested);
    return;
  }
  CHECK_ERR(call_json(ir, "[]", &out), AF_ERR_INVALID_ARGUMENT, "input", "1");
  CHECK_NULLED(out, af_value_free);
  out = (af_value_t*)&out;
  CHECK_ERR(call_json(ir, "[\"a\", \"b\"]", &out), AF_ERR_INVALID_ARGUMENT, "input", "2");
  CHECK_NULLED(out, af_value_free);
  out = (af_value_t*)&out;
  CHECK_ERR(call_json(ir, "[5]", &out), AF_ERR_INVALID_ARGUMENT, "str", "int");
  CHECK_NULLED(out, af_value_free);
  out = (af_value_t*)&out;
  CHECK_ERR(call_json(ir, "[[\"World\"]]", &out), AF_ERR_INVALID_ARGUMENT, "str", "list");
  CHECK_NULLED(out, af_value_free);
  out = (af_value_t*)&out;
  CHECK_ERR(af_ir_call(ctx, ir, &null_input, 1, &out), AF_ERR_INVALID_ARGUMENT, "null|input");
  CHECK_NULLED(out, af_value_free);
  out = (af_value_t*)&out;
  CHECK_ERR(af_ir_call(ctx, ir, NULL, 1, &out), AF_ERR_INVALID_ARGUMENT, "null|input");
  CHECK_NULLED(out, af_value_free);

  /* Nested paths are named. */
  out = (af_value_t*)&out;
  CHECK_ERR(call_json(nested, "[{\"greeting\":5,\"n\":[1.5]}]", &out), AF_ERR_INVALID_ARGUMENT,
            "greeting", "str", "int");
  CHECK_NULLED(out, af_value_free);
  out = (af_value_t*)&out;
  CHECK_ERR(call_json(nested, "[{\"greeting\":\"s\",\"n\":[1]}]", &out), AF_ERR_INVALID_ARGUMENT,
            "n", "float", "int");
  CHECK_NULLED(out, af_value_free);
  out = (af_value_t*)&out;
  CHECK_ERR(call_json(nested, "[{\"greeting\":\"s\",\"n\":[1.5, 2.5]}]", &out),
            AF_ERR_INVALID_ARGUMENT, "n", "1|length|size");
  CHECK_NULLED(out, af_value_free);
  out = (af_value_t*)&out;
  CHECK_ERR(call_json(nested, "[{\"other\":\"s\",\"n\":[1.5]}]", &out), AF_ERR_INVALID_ARGUMENT,
            "greeting|other");
  CHECK_NULLED(out, af_value_free);
  out = (af_value_t*)&out;
  CHECK_ERR(call_json(nested, "[{\"greeting\":\"s\"}]", &out), AF_ERR_INVALID_ARGUMENT, "n");
  CHECK_NULLED(out, af_value_free);

  /* NULL handles. */
  one = mk_str("x");
  out = (af_value_t*)&out;
  CHECK_ERR(af_ir_call(NULL, ir, AS_ARGS(&one), 1, &out), AF_ERR_INVALID_ARGUMENT, "context|ctx");
  CHECK_NULLED(out, af_value_free);
  out = (af_value_t*)&out;
  CHECK_ERR(af_ir_call(ctx, NULL, AS_ARGS(&one), 1, &out), AF_ERR_INVALID_ARGUMENT, "null|ir");
  CHECK_NULLED(out, af_value_free);
  CHECK_ERR(af_ir_call(ctx, ir, AS_ARGS(&one), 1, NULL), AF_ERR_INVALID_ARGUMENT, "out");
  af_value_free(one);
  af_ir_free(ir);
  af_ir_free(nested);
}

/* ---- placeholders ----------------------------------------------------- */

struct reads {
  int32_t kind;
  int32_t list_kind;
  int n_checked;
};

/* Reads its placeholder input every way a host might, then returns it. */
static af_error_t* reader_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                             af_value_t** out) {
  struct reads* r = (struct reads*)ud;
  af_bytes_t b = {NULL, 0};
  const char* s = (const char*)&b;
  size_t len = 5;
  int64_t i = 5;
  af_value_t* list = NULL;
  (void)n;
  r->kind = af_value_kind(in[0]);
  CHECK_ERR(af_value_to_json(in[0], &b), AF_ERR_INVALID_ARGUMENT, "switch", "while_loop");
  CHECK(b.data == NULL && b.len == 0);
  CHECK_ERR(af_value_get_str(in[0], &s, &len), AF_ERR_INVALID_ARGUMENT, "switch", "while_loop");
  CHECK(s == NULL);
  CHECK_INT_EQ(len, 0);
  CHECK_ERR(af_value_get_int(in[1], &i), AF_ERR_INVALID_ARGUMENT, "switch", "while_loop");
  CHECK_INT_EQ(i, 0);
  if (CHECK_OK(af_value_list(c, in, 2, &list))) {
    r->list_kind = af_value_kind(list);
    CHECK_ERR(af_value_to_json(list, &b), AF_ERR_INVALID_ARGUMENT, "switch", "while_loop");
    CHECK(b.data == NULL);
  }
  af_value_free(list);
  r->n_checked = 1;
  *out = af_value_clone(in[0]);
  return NULL;
}

static void reading_a_placeholder_names_the_fix(void) {
  struct reads r = {-1, -1, 0};
  af_ir_t* ir = TRACE(reader_fn, &r, "[\"s\", 1]", NULL);
  CHECK_INT_EQ(r.n_checked, 1);
  CHECK_INT_EQ(r.kind, AF_KIND_PLACEHOLDER);
  CHECK_INT_EQ(r.list_kind, AF_KIND_LIST);
  if (ir) CHECK_CALL(ir, "[\"t\", 2]", "\"t\"");
  af_ir_free(ir);
}

/* Keeps a reference to its placeholder input after the trace ends. */
static af_error_t* leak_placeholder_fn(void* ud, af_context_t* c, const af_value_t* const* in,
                                       size_t n, af_value_t** out) {
  af_value_t** keep = (af_value_t**)ud;
  (void)n;
  *keep = af_value_clone(in[0]);
  return af_concat(c, in, 1, out);
}

/* Returns (or uses) a placeholder of another, finished trace. */
static af_error_t* return_stale_fn(void* ud, af_context_t* c, const af_value_t* const* in,
                                   size_t n, af_value_t** out) {
  (void)c;
  (void)in;
  (void)n;
  *out = af_value_clone((const af_value_t*)ud);
  return NULL;
}
static af_error_t* use_stale_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                                af_value_t** out) {
  const af_value_t* args[2];
  (void)n;
  args[0] = in[0];
  args[1] = (const af_value_t*)ud;
  return af_concat(c, args, 2, out);
}

static void placeholders_that_escape_their_trace(void) {
  af_value_t* stale = NULL;
  af_ir_t* ir = TRACE(leak_placeholder_fn, &stale, "[\"s\"]", NULL);
  af_value_t* out = (af_value_t*)&out;
  af_bytes_t b = {NULL, 0};
  af_ir_t* ir2 = (af_ir_t*)&ir2;
  af_ir_free(ir);
  if (!stale) return;
  CHECK_INT_EQ(af_value_kind(stale), AF_KIND_PLACEHOLDER);
  CHECK_ERR(af_value_to_json(stale, &b), AF_ERR_INVALID_ARGUMENT, "switch", "while_loop");
  /* Outside any trace. */
  CHECK_ERR(af_concat(ctx, AS_ARGS(&stale), 1, &out), AF_ERR_INVALID_ARGUMENT,
            "placeholder|trace");
  CHECK_NULLED(out, af_value_free);
  /* Inside another trace: as an output, and as an operation input. */
  CHECK_ERR(trace_json(return_stale_fn, stale, "[\"s\"]", NULL, &ir2), AF_ERR_INVALID_ARGUMENT,
            "placeholder|trace|output");
  CHECK_NULLED(ir2, af_ir_free);
  ir2 = (af_ir_t*)&ir2;
  CHECK_ERR(trace_json(use_stale_fn, stale, "[\"s\"]", NULL, &ir2), AF_ERR_INVALID_ARGUMENT,
            "placeholder|trace");
  CHECK_NULLED(ir2, af_ir_free);
  af_value_free(stale);
}

/* ---- callback contract ------------------------------------------------ */

static af_error_t* failing_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                              af_value_t** out) {
  (void)ud;
  (void)c;
  (void)in;
  (void)n;
  (void)out;
  return af_error_new(AF_ERR_NOT_FOUND, "my callback broke: no such thing", 32);
}

static af_error_t* no_output_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                                af_value_t** out) {
  (void)ud;
  (void)c;
  (void)in;
  (void)n;
  (void)out;
  return NULL;
}

static void callback_errors_are_chained(void) {
  af_ir_t* ir = (af_ir_t*)&ir;
  af_error_t* e = trace_json(failing_fn, NULL, "[\"s\"]", NULL, &ir);
  const af_error_t* cause;
  CHECK_ERR_KEEP(e, AF_ERR_CALLBACK, "callback|trace");
  CHECK_NULLED(ir, af_ir_free);
  cause = af_error_cause(e);
  CHECK(cause != NULL);
  if (cause) {
    CHECK_INT_EQ(af_error_code(cause), AF_ERR_NOT_FOUND);
    CHECK_STR_EQ(af_error_message(cause), "my callback broke: no such thing");
    CHECK(af_error_cause(cause) == NULL);
  }
  af_error_free(e);
  /* Returning success without an output is the callback's mistake. */
  ir = (af_ir_t*)&ir;
  CHECK_ERR(trace_json(no_output_fn, NULL, "[\"s\"]", NULL, &ir), AF_ERR_INVALID_ARGUMENT,
            "output");
  CHECK_NULLED(ir, af_ir_free);
}

static void trace_argument_errors(void) {
  af_ir_t* ir = (af_ir_t*)&ir;
  af_value_t* ex = mk_str("s");
  const af_value_t* null_ex = NULL;
  CHECK_ERR(af_trace(ctx, NULL, NULL, AS_ARGS(&ex), 1, NULL, &ir), AF_ERR_INVALID_ARGUMENT,
            "fn|function|callback");
  CHECK_NULLED(ir, af_ir_free);
  ir = (af_ir_t*)&ir;
  CHECK_ERR(af_trace(NULL, hello_fn, NULL, AS_ARGS(&ex), 1, NULL, &ir), AF_ERR_INVALID_ARGUMENT,
            "context|ctx");
  CHECK_NULLED(ir, af_ir_free);
  CHECK_ERR(af_trace(ctx, hello_fn, NULL, AS_ARGS(&ex), 1, NULL, NULL), AF_ERR_INVALID_ARGUMENT,
            "out");
  ir = (af_ir_t*)&ir;
  CHECK_ERR(af_trace(ctx, hello_fn, NULL, NULL, 1, NULL, &ir), AF_ERR_INVALID_ARGUMENT,
            "null|example");
  CHECK_NULLED(ir, af_ir_free);
  ir = (af_ir_t*)&ir;
  CHECK_ERR(af_trace(ctx, hello_fn, NULL, &null_ex, 1, NULL, &ir), AF_ERR_INVALID_ARGUMENT,
            "null|example");
  CHECK_NULLED(ir, af_ir_free);
  af_value_free(ex);
}

/* ---- operations outside a trace --------------------------------------- */

static void operations_evaluate_outside_a_trace(void) {
  af_value_t* args[3];
  af_value_t* out = NULL;
  int32_t b = -1;
  size_t n = split_list("[\"a\", \"b\\u00e9\", \"\"]", args);
  if (n != 3) return;
  CHECK_OK(af_concat(ctx, AS_ARGS(args), 3, &out));
  CHECK_INT_EQ(af_value_kind(out), AF_KIND_STR);
  CHECK_JSON(out, "\"ab\xc3\xa9\"");
  af_value_free(out);
  out = NULL;
  CHECK_OK(af_concat(ctx, NULL, 0, &out));
  CHECK_JSON(out, "\"\"");
  af_value_free(out);
  out = NULL;
  CHECK_OK(af_format(ctx, "Hello, {}!", 10, AS_ARGS(args), 1, NULL, &out));
  CHECK_JSON(out, "\"Hello, a!\"");
  af_value_free(out);
  out = NULL;
  CHECK_OK(af_match(ctx, args[0], args[0], &out));
  CHECK_INT_EQ(af_value_kind(out), AF_KIND_BOOL);
  CHECK_OK(af_value_get_bool(out, &b));
  CHECK_INT_EQ(b, 1);
  af_value_free(out);
  out = NULL;
  CHECK_OK(af_match(ctx, args[0], args[1], &out));
  CHECK_OK(af_value_get_bool(out, &b));
  CHECK_INT_EQ(b, 0);
  CHECK_JSON(out, "false");
  af_value_free(out);
  free_items(args, n);
}

static void concat_and_match_need_strings(void) {
  af_value_t* args[2];
  af_value_t* out = (af_value_t*)&out;
  const af_value_t* with_null[2];
  af_ir_t* ir = (af_ir_t*)&ir;
  size_t n = split_list("[\"a\", 3]", args);
  if (n != 2) return;
  CHECK_ERR(af_concat(ctx, AS_ARGS(args), 2, &out), AF_ERR_INVALID_ARGUMENT, "concat", "str",
            "int");
  CHECK_NULLED(out, af_value_free);
  out = (af_value_t*)&out;
  /* match takes leaves of any kind: "a" vs 3 is false, 3 vs 3 true. */
  out = NULL;
  if (CHECK_OK(af_match(ctx, args[0], args[1], &out))) CHECK_JSON(out, "false");
  af_value_free(out);
  out = NULL;
  if (CHECK_OK(af_match(ctx, args[1], args[1], &out))) CHECK_JSON(out, "true");
  af_value_free(out);
  out = (af_value_t*)&out;
  with_null[0] = args[0];
  with_null[1] = NULL;
  CHECK_ERR(af_concat(ctx, with_null, 2, &out), AF_ERR_INVALID_ARGUMENT, "null|argument");
  CHECK_NULLED(out, af_value_free);
  out = (af_value_t*)&out;
  CHECK_ERR(af_concat(ctx, NULL, 2, &out), AF_ERR_INVALID_ARGUMENT, "null|argument");
  CHECK_NULLED(out, af_value_free);
  out = (af_value_t*)&out;
  CHECK_ERR(af_match(ctx, args[0], NULL, &out), AF_ERR_INVALID_ARGUMENT, "null|argument");
  CHECK_NULLED(out, af_value_free);
  free_items(args, n);
  /* Checked at trace time on placeholder kinds too. */
  CHECK_ERR(trace_json(two_outputs_fn, NULL, "[\"a\", 1]", NULL, &ir), AF_ERR_INVALID_ARGUMENT,
            "concat", "str", "int");
  CHECK_NULLED(ir, af_ir_free);
}

/* f(a, b) = match(a, b) */
static af_error_t* match_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                            af_value_t** out) {
  (void)ud;
  (void)n;
  return af_match(c, in[0], in[1], out);
}

static void match_traced(void) {
  af_ir_t* ir = TRACE(match_fn, NULL, "[\"a\", \"b\"]", NULL);
  if (!ir) return;
  CHECK_INT_EQ(af_ir_eqn_count(ir), 1);
  CHECK_STR_EQ(af_ir_eqn_prim(ir, 0), "match");
  CHECK_CALL(ir, "[\"x\", \"x\"]", "true");
  CHECK_CALL(ir, "[\"x\", \"X\"]", "false");
  CHECK_CALL(ir, "[\"\", \"\"]", "true");
  af_ir_free(ir);
  /* Traced on a str and an int, as eagerly: false, never an error. */
  ir = TRACE(match_fn, NULL, "[\"1\", 1]", NULL);
  if (!ir) return;
  CHECK_CALL(ir, "[\"1\", 1]", "false");
  af_ir_free(ir);
  ir = TRACE(match_fn, NULL, "[2, 2]", NULL);
  if (!ir) return;
  CHECK_CALL(ir, "[2, 2]", "true");
  CHECK_CALL(ir, "[2, 3]", "false");
  af_ir_free(ir);
}

/* ---- hashing and equality --------------------------------------------- */

static void hash_and_equality(void) {
  struct greet hi = {"Hi, {}!", NULL, 0, NULL, 0};
  struct greet bang = {NULL, "!", 0, NULL, 0};
  af_ir_t* a = TRACE(hello_fn, NULL, "[\"World\"]", NULL);
  af_ir_t* b = TRACE(hello_fn, NULL, "[\"Other example\"]", NULL);
  af_ir_t* c = TRACE(hello_fn, &hi, "[\"World\"]", NULL);
  af_ir_t* d = TRACE(hello_fn, &bang, "[\"World\"]", NULL);
  af_ir_t* e = TRACE(two_outputs_fn, NULL, "[\"a\", \"b\"]", NULL);
  if (a && b && c && d && e) {
    CHECK_INT_EQ(af_ir_equal(a, b), 1);
    CHECK(af_ir_hash(a) == af_ir_hash(b));
    CHECK_INT_EQ(af_ir_equal(a, a), 1);
    CHECK_INT_EQ(af_ir_equal(a, c), 0);
    CHECK(af_ir_hash(a) != af_ir_hash(c));
    CHECK_INT_EQ(af_ir_equal(a, d), 0);
    CHECK(af_ir_hash(a) != af_ir_hash(d));
    CHECK_INT_EQ(af_ir_equal(a, e), 0);
    CHECK(af_ir_hash(a) != af_ir_hash(e));
    CHECK_INT_EQ(af_ir_equal(a, NULL), 0);
    CHECK_INT_EQ(af_ir_equal(NULL, a), 0);
  }
  af_ir_free(a);
  af_ir_free(b);
  af_ir_free(c);
  af_ir_free(d);
  af_ir_free(e);
}

/* ---- calling an IR inside a trace ------------------------------------- */

/* outer(x) = concat(inner(x), "!"), inner called through af_ir_call. */
static af_error_t* outer_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                            af_value_t** out) {
  const af_ir_t* inner = (const af_ir_t*)ud;
  af_value_t* parts[2] = {NULL, NULL};
  af_error_t* e;
  (void)n;
  e = af_ir_call(c, inner, in, 1, &parts[0]);
  if (e) return e;
  e = str_in(c, "!", &parts[1]);
  if (!e) e = af_concat(c, AS_ARGS(parts), 2, out);
  af_value_free(parts[0]);
  af_value_free(parts[1]);
  return e;
}

/* just_call(x) = inner(x) */
static af_error_t* just_call_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                                af_value_t** out) {
  (void)n;
  return af_ir_call(c, (const af_ir_t*)ud, in, 1, out);
}

static void calling_an_ir_inside_a_trace_inlines_it(void) {
  af_ir_t* hello = TRACE(hello_fn, NULL, "[\"World\"]", NULL);
  af_ir_t* outer;
  af_ir_t* same;
  af_ir_t* bad = (af_ir_t*)&bad;
  if (!hello) return;
  outer = TRACE(outer_fn, hello, "[\"x\"]", NULL);
  if (outer) {
    CHECK_INT_EQ(af_ir_eqn_count(outer), 3);
    CHECK_STR_EQ(af_ir_eqn_prim(outer, 0), "format");
    CHECK_STR_EQ(af_ir_eqn_prim(outer, 1), "concat");
    CHECK_STR_EQ(af_ir_eqn_prim(outer, 2), "concat");
    CHECK_CALL(outer, "[\"W\"]", "\"Hello, W!?!\"");
  }
  /* Inlining leaves no trace of the call: the result equals the inner IR. */
  same = TRACE(just_call_fn, hello, "[\"x\"]", NULL);
  if (same) {
    CHECK_INT_EQ(af_ir_equal(same, hello), 1);
    CHECK(af_ir_hash(same) == af_ir_hash(hello));
  }
  /* Inputs are checked when inlining too. */
  CHECK_ERR(trace_json(just_call_fn, hello, "[5]", NULL, &bad), AF_ERR_INVALID_ARGUMENT, "str",
            "int");
  CHECK_NULLED(bad, af_ir_free);
  af_ir_free(outer);
  af_ir_free(same);
  af_ir_free(hello);
}

struct nested_state {
  int32_t tracing_after_inner;
  size_t inner_eqns;
};

/* Traces hello inside this trace, then calls it on this trace's input. */
static af_error_t* nested_trace_fn(void* ud, af_context_t* c, const af_value_t* const* in,
                                   size_t n, af_value_t** out) {
  struct nested_state* st = (struct nested_state*)ud;
  af_value_t* ex = NULL;
  af_ir_t* inner = NULL;
  af_error_t* e;
  (void)n;
  e = str_in(c, "example", &ex);
  if (!e) e = af_trace(c, hello_fn, NULL, AS_ARGS(&ex), 1, NULL, &inner);
  af_value_free(ex);
  if (e) return e;
  st->tracing_after_inner = af_is_tracing();
  st->inner_eqns = af_ir_eqn_count(inner);
  e = af_ir_call(c, inner, in, 1, out);
  af_ir_free(inner);
  return e;
}

static void traces_nest(void) {
  struct nested_state st = {0, 0};
  af_ir_t* ir = TRACE(nested_trace_fn, &st, "[\"x\"]", NULL);
  if (!ir) return;
  CHECK_INT_EQ(st.tracing_after_inner, 1);
  CHECK_INT_EQ(st.inner_eqns, 2);
  CHECK_INT_EQ(af_ir_eqn_count(ir), 2);
  CHECK_CALL(ir, "[\"N\"]", "\"Hello, N!?\"");
  af_ir_free(ir);
}

static void calling_an_ir_outside_a_trace_runs_it(void) {
  af_ir_t* hello = TRACE(hello_fn, NULL, "[\"World\"]", NULL);
  af_ir_t* outer = hello ? TRACE(outer_fn, hello, "[\"x\"]", NULL) : NULL;
  af_value_t* in = mk_str("Q");
  af_value_t* out = NULL;
  if (outer && CHECK_OK(outer_fn(hello, ctx, AS_ARGS(&in), 1, &out)))
    CHECK_JSON(out, "\"Hello, Q!?!\"");
  af_value_free(out);
  af_value_free(in);
  af_ir_free(outer);
  af_ir_free(hello);
}

/* ---- tags ------------------------------------------------------------- */

struct tag_state {
  int bad_pop_checked;
};

/* hello with format tagged "outer_tag"+"greeting_tag" and concat "outer_tag". */
static af_error_t* tagged_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                             af_value_t** out) {
  struct tag_state* st = (struct tag_state*)ud;
  af_value_t* parts[2] = {NULL, NULL};
  af_error_t* e;
  (void)n;
  if ((e = af_tag_push(c, "outer_tag", 9)) != NULL) return e;
  if ((e = af_tag_push(c, "greeting_tagXX", 12)) != NULL) return e;
  e = af_format(c, "Hello, {}!", 10, in, 1, NULL, &parts[0]);
  if (e) return e;
  if ((e = af_tag_pop(c)) != NULL) return e;
  e = str_in(c, "?", &parts[1]);
  if (!e) e = af_concat(c, AS_ARGS(parts), 2, out);
  af_value_free(parts[0]);
  af_value_free(parts[1]);
  if (e) return e;
  if ((e = af_tag_pop(c)) != NULL) return e;
  CHECK_ERR(af_tag_pop(c), AF_ERR_INVALID_ARGUMENT, "tag");
  CHECK_ERR(af_tag_push(c, "\xff", 1), AF_ERR_INVALID_ARGUMENT, "utf-8|utf8");
  CHECK_ERR(af_tag_push(NULL, "t", 1), AF_ERR_INVALID_ARGUMENT, "context|ctx");
  st->bad_pop_checked = 1;
  return NULL;
}

static void tags(void) {
  struct tag_state st = {0};
  af_ir_t* ir = TRACE(tagged_fn, &st, "[\"World\"]", NULL);
  af_ir_t* plain = TRACE(hello_fn, NULL, "[\"World\"]", NULL);
  char* text;
  CHECK_INT_EQ(st.bad_pop_checked, 1);
  if (ir) {
    text = ir_text(ir);
    if (text) {
      CHECK_CONTAINS(text, "outer_tag");
      CHECK_CONTAINS(text, "greeting_tag");
      CHECK_NOT_CONTAINS(text, "greeting_tagXX");
    }
    free(text);
    CHECK_CALL(ir, "[\"W\"]", "\"Hello, W!?\"");
    if (plain) {
      /* Tags are part of the structure. */
      CHECK_INT_EQ(af_ir_equal(ir, plain), 0);
      CHECK(af_ir_hash(ir) != af_ir_hash(plain));
    }
  }
  af_ir_free(ir);
  af_ir_free(plain);
  /* Outside a trace. */
  CHECK_ERR(af_tag_push(ctx, "t", 1), AF_ERR_INVALID_ARGUMENT, "trace");
  CHECK_ERR(af_tag_pop(ctx), AF_ERR_INVALID_ARGUMENT, "trace|tag");
}

/* ---- fold ------------------------------------------------------------- */

struct fold_state {
  int checked;
  char folded[16];
};

/* f(x) = concat(x, fold{concat("a", "b")}); a folded op on x fails. */
static af_error_t* fold_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                           af_value_t** out) {
  struct fold_state* st = (struct fold_state*)ud;
  af_value_t* lits[2] = {NULL, NULL};
  af_value_t* parts[2] = {NULL, NULL};
  af_value_t* bad = (af_value_t*)&bad;
  af_error_t* e;
  (void)n;
  if ((e = af_fold_push(c)) != NULL) return e;
  e = str_in(c, "a", &lits[0]);
  if (!e) e = str_in(c, "b", &lits[1]);
  if (!e) e = af_concat(c, AS_ARGS(lits), 2, &parts[1]);
  af_value_free(lits[0]);
  af_value_free(lits[1]);
  if (e) return e;
  /* The folded result is a literal: readable at trace time. */
  CHECK_INT_EQ(af_value_kind(parts[1]), AF_KIND_STR);
  str_of(parts[1], st->folded);
  CHECK_ERR(af_concat(c, in, 1, &bad), AF_ERR_INVALID_ARGUMENT, "fold", "concat");
  CHECK_NULLED(bad, af_value_free);
  if ((e = af_fold_pop(c)) != NULL) return e;
  CHECK_ERR(af_fold_pop(c), AF_ERR_INVALID_ARGUMENT, "fold");
  st->checked = 1;
  parts[0] = af_value_clone(in[0]);
  e = af_concat(c, AS_ARGS(parts), 2, out);
  af_value_free(parts[0]);
  af_value_free(parts[1]);
  return e;
}

static void fold(void) {
  struct fold_state st = {0, ""};
  af_ir_t* ir = TRACE(fold_fn, &st, "[\"x\"]", NULL);
  CHECK_INT_EQ(st.checked, 1);
  CHECK_STR_EQ(st.folded, "ab");
  if (ir) {
    CHECK_INT_EQ(af_ir_eqn_count(ir), 1);
    CHECK_STR_EQ(af_ir_eqn_prim(ir, 0), "concat");
    CHECK_CALL(ir, "[\"W\"]", "\"Wab\"");
  }
  af_ir_free(ir);
  /* Outside a trace, operations run at once: fold is a no-op there. */
  CHECK_OK(af_fold_push(ctx));
  CHECK_OK(af_fold_pop(ctx));
  CHECK_OK(af_fold_pop(ctx));
}

/* f(x) = concat(concat("a", "b"), x): no implicit folding. */
static af_error_t* literal_ops_fn(void* ud, af_context_t* c, const af_value_t* const* in,
                                  size_t n, af_value_t** out) {
  af_value_t* lits[2] = {NULL, NULL};
  af_value_t* parts[2] = {NULL, NULL};
  af_error_t* e;
  (void)ud;
  (void)n;
  e = str_in(c, "a", &lits[0]);
  if (!e) e = str_in(c, "b", &lits[1]);
  if (!e) e = af_concat(c, AS_ARGS(lits), 2, &parts[0]);
  af_value_free(lits[0]);
  af_value_free(lits[1]);
  if (e) return e;
  parts[1] = af_value_clone(in[0]);
  e = af_concat(c, AS_ARGS(parts), 2, out);
  af_value_free(parts[0]);
  af_value_free(parts[1]);
  return e;
}

static void literal_operations_are_recorded(void) {
  af_ir_t* ir = TRACE(literal_ops_fn, NULL, "[\"x\"]", NULL);
  if (!ir) return;
  CHECK_INT_EQ(af_ir_eqn_count(ir), 2);
  CHECK_CALL(ir, "[\"W\"]", "\"abW\"");
  af_ir_free(ir);
}

/* ---- stop_gradient, depends, checkpoint ------------------------------- */

/* f(x) = checkpoint(depends(stop_gradient(x), [format("<{}>", x)]), "k1", "coll")
 *        and stop_gradient([x, "lit"]) as a second output. */
static af_error_t* identities_fn(void* ud, af_context_t* c, const af_value_t* const* in,
                                 size_t n, af_value_t** out) {
  af_value_t* sg = NULL;
  af_value_t* dep = NULL;
  af_value_t* dv = NULL;
  af_value_t* outs[2] = {NULL, NULL};
  af_value_t* pair_items[2] = {NULL, NULL};
  af_value_t* pair = NULL;
  af_error_t* e;
  (void)ud;
  (void)n;
  e = af_stop_gradient(c, in[0], &sg);
  if (!e) e = af_format(c, "<{}>", 4, in, 1, NULL, &dep);
  if (!e) e = af_depends(c, sg, AS_ARGS(&dep), 1, &dv);
  if (!e) e = af_checkpoint(c, dv, "k1", 2, "coll", 4, &outs[0]);
  if (!e) {
    pair_items[0] = af_value_clone(in[0]);
    e = str_in(c, "lit", &pair_items[1]);
  }
  if (!e) e = af_value_list(c, AS_ARGS(pair_items), 2, &pair);
  if (!e) e = af_stop_gradient(c, pair, &outs[1]);
  if (!e) e = af_value_list(c, AS_ARGS(outs), 2, out);
  af_value_free(sg);
  af_value_free(dep);
  af_value_free(dv);
  af_value_free(outs[0]);
  af_value_free(outs[1]);
  af_value_free(pair_items[0]);
  af_value_free(pair_items[1]);
  af_value_free(pair);
  return e;
}

static void identities_traced(void) {
  af_ir_t* ir = TRACE(identities_fn, NULL, "[\"x\"]", NULL);
  char* text;
  size_t i, n;
  int seen_sg = 0, seen_dep = 0, seen_cp = 0, seen_fmt = 0;
  if (!ir) return;
  n = af_ir_eqn_count(ir);
  CHECK_INT_EQ(n, 5);
  for (i = 0; i < n; i++) {
    const char* p = af_ir_eqn_prim(ir, i);
    if (!p) continue;
    seen_sg += strcmp(p, "stop_gradient") == 0;
    seen_dep += strcmp(p, "depends") == 0;
    seen_cp += strcmp(p, "checkpoint") == 0;
    seen_fmt += strcmp(p, "format") == 0;
  }
  CHECK_INT_EQ(seen_sg, 2);
  CHECK_INT_EQ(seen_dep, 1);
  CHECK_INT_EQ(seen_cp, 1);
  CHECK_INT_EQ(seen_fmt, 1);
  text = ir_text(ir);
  if (text) {
    CHECK_CONTAINS(text, "k1");
    CHECK_CONTAINS(text, "coll");
  }
  free(text);
  CHECK_CALL(ir, "[\"v\"]", "[\"v\",[\"v\",\"lit\"]]");
  af_ir_free(ir);
}

static void identities_outside_a_trace(void) {
  af_value_t* v = mk_json("{\"a\":[1,2.0,\"s\"]}");
  af_value_t* dep = mk_str("dep");
  af_value_t* out = NULL;
  if (!v || !dep) return;
  if (CHECK_OK(af_stop_gradient(ctx, v, &out))) CHECK_JSON(out, "{\"a\":[1,2.0,\"s\"]}");
  af_value_free(out);
  out = NULL;
  if (CHECK_OK(af_depends(ctx, v, AS_ARGS(&dep), 1, &out)))
    CHECK_JSON(out, "{\"a\":[1,2.0,\"s\"]}");
  af_value_free(out);
  out = NULL;
  if (CHECK_OK(af_depends(ctx, dep, NULL, 0, &out))) CHECK_JSON(out, "\"dep\"");
  af_value_free(out);
  out = NULL;
  if (CHECK_OK(af_checkpoint(ctx, v, "k", 1, "c", 1, &out)))
    CHECK_JSON(out, "{\"a\":[1,2.0,\"s\"]}");
  af_value_free(out);
  out = (af_value_t*)&out;
  CHECK_ERR(af_depends(ctx, v, NULL, 2, &out), AF_ERR_INVALID_ARGUMENT, "null|dep");
  CHECK_NULLED(out, af_value_free);
  out = (af_value_t*)&out;
  CHECK_ERR(af_checkpoint(ctx, v, "\xff", 1, "c", 1, &out), AF_ERR_INVALID_ARGUMENT,
            "utf-8|utf8");
  CHECK_NULLED(out, af_value_free);
  out = (af_value_t*)&out;
  CHECK_ERR(af_stop_gradient(ctx, NULL, &out), AF_ERR_INVALID_ARGUMENT, "null|value");
  CHECK_NULLED(out, af_value_free);
  af_value_free(v);
  af_value_free(dep);
}

/* ---- scopes do not outlive their trace -------------------------------- */

/* Pushes a tag and a fold and never pops them. */
static af_error_t* unbalanced_fn(void* ud, af_context_t* c, const af_value_t* const* in,
                                 size_t n, af_value_t** out) {
  af_error_t* e;
  (void)ud;
  (void)n;
  if ((e = af_tag_push(c, "leaky_tag", 9)) != NULL) return e;
  if ((e = af_fold_push(c)) != NULL) return e;
  *out = af_value_clone(in[0]);
  return NULL;
}

static void scopes_end_with_their_trace(void) {
  af_ir_t* leaky = NULL;
  af_ir_t* ir;
  af_ir_t* fresh;
  char* text;
  /* Either outcome is acceptable for the unbalanced trace itself. */
  af_error_free(trace_json(unbalanced_fn, NULL, "[\"s\"]", NULL, &leaky));
  af_ir_free(leaky);
  CHECK_INT_EQ(af_is_tracing(), 0);
  ir = TRACE(hello_fn, NULL, "[\"World\"]", NULL);
  fresh = TRACE(hello_fn, NULL, "[\"World\"]", NULL);
  if (ir) {
    CHECK_INT_EQ(af_ir_eqn_count(ir), 2); /* not folded */
    text = ir_text(ir);
    if (text) CHECK_NOT_CONTAINS(text, "leaky_tag");
    free(text);
    CHECK_CALL(ir, "[\"W\"]", "\"Hello, W!?\"");
  }
  CHECK_ERR(af_tag_pop(ctx), AF_ERR_INVALID_ARGUMENT, "trace|tag");
  if (ir && fresh) CHECK_INT_EQ(af_ir_equal(ir, fresh), 1);
  af_ir_free(ir);
  af_ir_free(fresh);
}

/* ---- threads ---------------------------------------------------------- */

struct probe {
  int32_t tracing;
  int failures;
  char result[32];
};

/* Runs on another thread while the main thread is tracing. */
static void* probe_thread(void* arg) {
  struct probe* p = (struct probe*)arg;
  af_value_t* x = NULL;
  af_value_t* out = NULL;
  const char* s = NULL;
  size_t n = 0;
  af_error_t* e;
  p->tracing = af_is_tracing();
  e = af_value_str(ctx, "T", 1, &x);
  if (!e) e = af_format(ctx, "Hello, {}!", 10, AS_ARGS(&x), 1, NULL, &out);
  if (!e) e = af_value_get_str(out, &s, &n);
  if (!e && n < sizeof p->result) {
    memcpy(p->result, s, n);
    p->result[n] = 0;
  }
  if (e) p->failures++;
  af_error_free(e);
  af_value_free(x);
  af_value_free(out);
  return NULL;
}

/* hello, after running probe_thread to completion. */
static af_error_t* probing_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                              af_value_t** out) {
  pthread_t t;
  if (pthread_create(&t, NULL, probe_thread, ud) != 0)
    return af_error_new(AF_ERR_INTERNAL, "pthread_create", 14);
  pthread_join(t, NULL);
  return hello_fn(NULL, c, in, n, out);
}

static void tracing_is_per_thread(void) {
  struct probe p = {-1, 0, ""};
  af_ir_t* ir = TRACE(probing_fn, &p, "[\"World\"]", NULL);
  CHECK_INT_EQ(p.tracing, 0);
  CHECK_INT_EQ(p.failures, 0);
  CHECK_STR_EQ(p.result, "Hello, T!"); /* evaluated at once, not recorded */
  if (ir) {
    CHECK_INT_EQ(af_ir_eqn_count(ir), 2);
    CHECK_CALL(ir, "[\"W\"]", "\"Hello, W!?\"");
  }
  af_ir_free(ir);
}

struct caller {
  const af_ir_t* ir;
  int id;
  int failures;
};

/* Calls one shared IR many times with its own inputs. */
static void* caller_thread(void* arg) {
  struct caller* c = (struct caller*)arg;
  char name[32], expected[64];
  int i;
  for (i = 0; i < 100; i++) {
    af_value_t* x = NULL;
    af_value_t* out = NULL;
    const char* s = NULL;
    size_t n = 0;
    af_error_t* e;
    sprintf(name, "t%d-%d", c->id, i);
    sprintf(expected, "Hello, %s!?", name);
    e = af_value_str(ctx, name, strlen(name), &x);
    if (!e) e = af_ir_call(ctx, c->ir, AS_ARGS(&x), 1, &out);
    if (!e) e = af_value_get_str(out, &s, &n);
    if (e || n != strlen(expected) || memcmp(s, expected, n) != 0) c->failures++;
    af_error_free(e);
    af_value_free(x);
    af_value_free(out);
  }
  return NULL;
}

static void one_ir_called_from_many_threads(void) {
  enum { n_threads = 4 };
  pthread_t t[n_threads];
  struct caller callers[n_threads];
  int i;
  af_ir_t* ir = TRACE(hello_fn, NULL, "[\"World\"]", NULL);
  if (!ir) return;
  for (i = 0; i < n_threads; i++) {
    callers[i].ir = ir;
    callers[i].id = i;
    callers[i].failures = 0;
    CHECK_INT_EQ(pthread_create(&t[i], NULL, caller_thread, &callers[i]), 0);
  }
  for (i = 0; i < n_threads; i++) {
    pthread_join(t[i], NULL);
    CHECK_INT_EQ(callers[i].failures, 0);
  }
  af_ir_free(ir);
}

int main(int argc, char** argv) {
  static const struct test_case cases[] = {
      CASE(hello_traces_and_calls),
      CASE(ir_text_and_dot),
      CASE(ir_handles),
      CASE(multiple_outputs_are_a_list),
      CASE(dict_output_with_literal_leaves),
      CASE(identity_on_nested_inputs),
      CASE(program_without_inputs),
      CASE(format_fields_traced),
      CASE(template_errors_at_trace_time),
      CASE(template_errors_outside_a_trace),
      CASE(format_stringifies_non_strings),
      CASE(format_stringifies_traced_non_strings),
      CASE(format_argument_errors),
      CASE(static_leaves_are_baked_in),
      CASE(static_subtree_by_mask_prefix),
      CASE(masks_that_are_not_a_prefix),
      CASE(wrong_inputs_at_call),
      CASE(reading_a_placeholder_names_the_fix),
      CASE(placeholders_that_escape_their_trace),
      CASE(callback_errors_are_chained),
      CASE(trace_argument_errors),
      CASE(operations_evaluate_outside_a_trace),
      CASE(concat_and_match_need_strings),
      CASE(match_traced),
      CASE(hash_and_equality),
      CASE(calling_an_ir_inside_a_trace_inlines_it),
      CASE(traces_nest),
      CASE(calling_an_ir_outside_a_trace_runs_it),
      CASE(tags),
      CASE(fold),
      CASE(literal_operations_are_recorded),
      CASE(identities_traced),
      CASE(identities_outside_a_trace),
      CASE(scopes_end_with_their_trace),
      CASE(tracing_is_per_thread),
      CASE(one_ir_called_from_many_threads),
  };
  return run_cases(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
