/* walk_test.c — stepping through an IR one equation at a time. */
#include "check.h"

/* hello(x) = concat(format("Hello, {}!", x), "?") */
static af_error_t* hello_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                            af_value_t** out) {
  af_value_t* parts[2] = {NULL, NULL};
  af_error_t* e;
  (void)ud;
  (void)n;
  e = af_format(c, "Hello, {}!", 10, in, 1, NULL, &parts[0]);
  if (e) return e;
  e = af_value_str(c, "?", 1, &parts[1]);
  if (!e) e = af_concat(c, AS_ARGS(parts), 2, out);
  af_value_free(parts[0]);
  af_value_free(parts[1]);
  return e;
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

/* f(a, b) = [match(a, b), a] */
static af_error_t* match_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                            af_value_t** out) {
  af_value_t* outs[2] = {NULL, NULL};
  af_error_t* e;
  (void)ud;
  (void)n;
  e = af_match(c, in[0], in[1], &outs[0]);
  outs[1] = af_value_clone(in[0]);
  if (!e) e = af_value_list(c, AS_ARGS(outs), 2, out);
  af_value_free(outs[0]);
  af_value_free(outs[1]);
  return e;
}

/* f(greeting static, name) = format("{}, {}", greeting, name) */
static af_error_t* static_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                             af_value_t** out) {
  (void)ud;
  (void)n;
  return af_format(c, "{}, {}", 6, in, 2, NULL, out);
}

/* Starts a walk on the items of a JSON list. */
static af_error_t* walk_json(const af_ir_t* ir, const char* inputs_json, af_walk_t** out) {
  af_value_t* in[MAX_INPUTS];
  size_t n = split_list(inputs_json, in);
  af_error_t* e = af_walk_new(ctx, ir, AS_ARGS(in), n, out);
  free_items(in, n);
  return e;
}

/* af_walk_next expecting equation `expected` (AF_WALK_DONE for the end);
 * returns the JSON of its inputs (malloc'd; NULL at the end or on failure). */
#define NEXT(w, expected) next_at((w), (expected), __FILE__, __LINE__)
static char* next_at(af_walk_t* w, size_t expected, const char* file, int line) {
  size_t idx = 12345;
  af_value_t* inputs = (af_value_t*)&idx; /* sentinel */
  char* json = NULL;
  if (!check_ok_impl(af_walk_next(w, &idx, &inputs), "af_walk_next", file, line)) return NULL;
  if (idx != expected) {
    check_fail(file, line, "af_walk_next gave equation %lld, expected %lld", (long long)idx,
               (long long)expected);
  }
  if (expected == AF_WALK_DONE) {
    if (inputs != NULL) check_fail(file, line, "inputs not NULL when the walk is done");
    if (inputs && inputs != (af_value_t*)&idx) af_value_free(inputs);
    return NULL;
  }
  if (!inputs || inputs == (af_value_t*)&idx) {
    check_fail(file, line, "af_walk_next gave no inputs for equation %lld", (long long)idx);
    return NULL;
  }
  json = json_of_at(inputs, file, line);
  af_value_free(inputs);
  return json;
}

static void walk_evaluates_step_by_step(void) {
  af_ir_t* ir = TRACE(hello_fn, NULL, "[\"x\"]", NULL);
  af_walk_t* w = NULL;
  af_value_t* out = NULL;
  char* json;
  if (!ir || !CHECK_OK(walk_json(ir, "[\"World\"]", &w))) {
    af_ir_free(ir);
    return;
  }
  CHECK(w != NULL);
  json = NEXT(w, 0);
  if (json) CHECK_CONTAINS(json, "\"World\"");
  free(json);
  CHECK_STR_EQ(af_ir_eqn_prim(ir, 0), "format");
  /* Asking again before eval/send gives the same equation. */
  json = NEXT(w, 0);
  if (json) CHECK_CONTAINS(json, "\"World\"");
  free(json);
  CHECK_OK(af_walk_eval(w));
  json = NEXT(w, 1);
  if (json) {
    CHECK_CONTAINS(json, "\"Hello, World!\"");
    CHECK_CONTAINS(json, "\"?\"");
  }
  free(json);
  CHECK_OK(af_walk_eval(w));
  NEXT(w, AF_WALK_DONE);
  if (CHECK_OK(af_walk_outputs(w, &out))) CHECK_JSON(out, "\"Hello, World!?\"");
  af_value_free(out);
  /* Done stays done; outputs can be asked again. */
  NEXT(w, AF_WALK_DONE);
  out = NULL;
  if (CHECK_OK(af_walk_outputs(w, &out))) CHECK_JSON(out, "\"Hello, World!?\"");
  af_value_free(out);
  af_walk_free(w);
  af_ir_free(ir);
}

static void walk_send_supplies_outputs(void) {
  af_ir_t* ir = TRACE(hello_fn, NULL, "[\"x\"]", NULL);
  af_walk_t* w = NULL;
  af_value_t* bye = mk_str("Bye!");
  af_value_t* out = NULL;
  char* json;
  if (!ir || !CHECK_OK(walk_json(ir, "[\"World\"]", &w))) goto done;
  free(NEXT(w, 0));
  CHECK_OK(af_walk_send(w, bye));
  json = NEXT(w, 1);
  if (json) {
    CHECK_CONTAINS(json, "\"Bye!\"");
    CHECK_NOT_CONTAINS(json, "Hello");
  }
  free(json);
  CHECK_OK(af_walk_eval(w));
  NEXT(w, AF_WALK_DONE);
  if (CHECK_OK(af_walk_outputs(w, &out))) CHECK_JSON(out, "\"Bye!?\"");
  af_value_free(out);
done:
  af_walk_free(w);
  af_value_free(bye);
  af_ir_free(ir);
}

static void walk_send_checks_the_output_tree(void) {
  af_ir_t* ir = TRACE(hello_fn, NULL, "[\"x\"]", NULL);
  af_walk_t* w = NULL;
  af_value_t* five = mk_int(5);
  af_value_t* wrapped = mk_json("[\"Bye!\"]");
  af_value_t* ok = mk_str("ok");
  af_value_t* out = NULL;
  char* json;
  if (!ir || !CHECK_OK(walk_json(ir, "[\"World\"]", &w))) goto done;
  free(NEXT(w, 0));
  CHECK_ERR(af_walk_send(w, five), AF_ERR_INVALID_ARGUMENT, "str", "int");
  CHECK_ERR(af_walk_send(w, wrapped), AF_ERR_INVALID_ARGUMENT, "str|list|structure");
  CHECK_ERR(af_walk_send(w, NULL), AF_ERR_INVALID_ARGUMENT, "null|output");
  /* A rejected send leaves the walk where it was. */
  json = NEXT(w, 0);
  if (json) CHECK_CONTAINS(json, "\"World\"");
  free(json);
  CHECK_OK(af_walk_send(w, ok));
  free(NEXT(w, 1));
  CHECK_ERR(af_walk_send(w, five), AF_ERR_INVALID_ARGUMENT, "str", "int");
  CHECK_OK(af_walk_send(w, ok));
  NEXT(w, AF_WALK_DONE);
  if (CHECK_OK(af_walk_outputs(w, &out))) CHECK_JSON(out, "\"ok\"");
  af_value_free(out);
done:
  af_walk_free(w);
  af_value_free(five);
  af_value_free(wrapped);
  af_value_free(ok);
  af_ir_free(ir);
}

static void walk_send_of_a_bool(void) {
  af_ir_t* ir = TRACE(match_fn, NULL, "[\"a\", \"b\"]", NULL);
  af_walk_t* w = NULL;
  af_value_t* t = mk_bool(1);
  af_value_t* s = mk_str("true");
  af_value_t* out = NULL;
  if (!ir || !CHECK_OK(walk_json(ir, "[\"x\", \"y\"]", &w))) goto done;
  CHECK_STR_EQ(af_ir_eqn_prim(ir, 0), "match");
  free(NEXT(w, 0));
  CHECK_ERR(af_walk_send(w, s), AF_ERR_INVALID_ARGUMENT, "bool", "str");
  CHECK_OK(af_walk_send(w, t)); /* overrides the real answer (false) */
  NEXT(w, AF_WALK_DONE);
  if (CHECK_OK(af_walk_outputs(w, &out))) CHECK_JSON(out, "[true,\"x\"]");
  af_value_free(out);
done:
  af_walk_free(w);
  af_value_free(t);
  af_value_free(s);
  af_ir_free(ir);
}

static void walk_outputs_before_done_and_steps_after_done(void) {
  af_ir_t* ir = TRACE(hello_fn, NULL, "[\"x\"]", NULL);
  af_walk_t* w = NULL;
  af_value_t* out = (af_value_t*)&out;
  af_value_t* s = mk_str("late");
  if (!ir || !CHECK_OK(walk_json(ir, "[\"World\"]", &w))) goto done;
  /* Before the first step, and in the middle. */
  CHECK_ERR(af_walk_outputs(w, &out), AF_ERR_INVALID_ARGUMENT, "equation|remain|done|finish");
  CHECK_NULLED(out, af_value_free);
  free(NEXT(w, 0));
  CHECK_OK(af_walk_eval(w));
  out = (af_value_t*)&out;
  CHECK_ERR(af_walk_outputs(w, &out), AF_ERR_INVALID_ARGUMENT, "equation|remain|done|finish");
  CHECK_NULLED(out, af_value_free);
  free(NEXT(w, 1));
  CHECK_OK(af_walk_eval(w));
  NEXT(w, AF_WALK_DONE);
  NEXT(w, AF_WALK_DONE);
  /* Nothing left to evaluate or to send to. */
  CHECK_ERR(af_walk_eval(w), AF_ERR_INVALID_ARGUMENT, "done|finish|no equation|remain");
  CHECK_ERR(af_walk_send(w, s), AF_ERR_INVALID_ARGUMENT, "done|finish|no equation|remain");
  NEXT(w, AF_WALK_DONE);
  out = NULL;
  if (CHECK_OK(af_walk_outputs(w, &out))) CHECK_JSON(out, "\"Hello, World!?\"");
  af_value_free(out);
  CHECK_ERR(af_walk_outputs(w, NULL), AF_ERR_INVALID_ARGUMENT, "out");
done:
  af_walk_free(w);
  af_value_free(s);
  af_ir_free(ir);
}

static void walk_without_equations(void) {
  af_ir_t* ir = TRACE(identity_fn, NULL, "[{\"k\":[1,\"s\"]}]", NULL);
  af_walk_t* w = NULL;
  af_value_t* out = NULL;
  if (!ir || !CHECK_OK(walk_json(ir, "[{\"k\":[2,\"t\"]}]", &w))) goto done;
  NEXT(w, AF_WALK_DONE);
  if (CHECK_OK(af_walk_outputs(w, &out))) CHECK_JSON(out, "{\"k\":[2,\"t\"]}");
  af_value_free(out);
done:
  af_walk_free(w);
  af_ir_free(ir);
}

static void walk_keeps_its_ir_alive(void) {
  af_ir_t* ir = TRACE(hello_fn, NULL, "[\"x\"]", NULL);
  af_walk_t* w = NULL;
  af_value_t* out = NULL;
  if (!ir) return;
  if (!CHECK_OK(walk_json(ir, "[\"A\"]", &w))) {
    af_ir_free(ir);
    return;
  }
  af_ir_free(ir);
  free(NEXT(w, 0));
  CHECK_OK(af_walk_eval(w));
  free(NEXT(w, 1));
  CHECK_OK(af_walk_eval(w));
  NEXT(w, AF_WALK_DONE);
  if (CHECK_OK(af_walk_outputs(w, &out))) CHECK_JSON(out, "\"Hello, A!?\"");
  af_value_free(out);
  af_walk_free(w);
}

static void walk_new_checks_inputs(void) {
  af_ir_t* ir = TRACE(hello_fn, NULL, "[\"x\"]", NULL);
  af_ir_t* st = TRACE(static_fn, NULL, "[\"Hi\", \"x\"]", "[true, false]");
  af_walk_t* w = (af_walk_t*)&w;
  af_value_t* one = mk_str("x");
  af_value_t* out = NULL;
  if (!ir || !st) goto done;
  CHECK_ERR(walk_json(ir, "[]", &w), AF_ERR_INVALID_ARGUMENT, "input");
  CHECK_NULLED(w, af_walk_free);
  w = (af_walk_t*)&w;
  CHECK_ERR(walk_json(ir, "[\"a\", \"b\"]", &w), AF_ERR_INVALID_ARGUMENT, "input");
  CHECK_NULLED(w, af_walk_free);
  w = (af_walk_t*)&w;
  CHECK_ERR(walk_json(ir, "[5]", &w), AF_ERR_INVALID_ARGUMENT, "str", "int");
  CHECK_NULLED(w, af_walk_free);
  w = (af_walk_t*)&w;
  CHECK_ERR(walk_json(st, "[\"Bye\", \"Bo\"]", &w), AF_ERR_INVALID_ARGUMENT, "static");
  CHECK_NULLED(w, af_walk_free);
  w = (af_walk_t*)&w;
  CHECK_ERR(af_walk_new(NULL, ir, AS_ARGS(&one), 1, &w), AF_ERR_INVALID_ARGUMENT, "context|ctx");
  CHECK_NULLED(w, af_walk_free);
  w = (af_walk_t*)&w;
  CHECK_ERR(af_walk_new(ctx, NULL, AS_ARGS(&one), 1, &w), AF_ERR_INVALID_ARGUMENT, "null|ir");
  CHECK_NULLED(w, af_walk_free);
  CHECK_ERR(af_walk_new(ctx, ir, AS_ARGS(&one), 1, NULL), AF_ERR_INVALID_ARGUMENT, "out");
  /* A static walk with the right value runs. */
  w = NULL;
  if (CHECK_OK(walk_json(st, "[\"Hi\", \"Bo\"]", &w))) {
    free(NEXT(w, 0));
    CHECK_OK(af_walk_eval(w));
    NEXT(w, AF_WALK_DONE);
    if (CHECK_OK(af_walk_outputs(w, &out))) CHECK_JSON(out, "\"Hi, Bo\"");
    af_value_free(out);
    af_walk_free(w);
  }
done:
  af_value_free(one);
  af_ir_free(ir);
  af_ir_free(st);
}

static void walk_null_handles(void) {
  size_t idx = 7;
  af_value_t* v = (af_value_t*)&v;
  af_value_t* s = mk_str("s");
  af_ir_t* ir = TRACE(hello_fn, NULL, "[\"x\"]", NULL);
  af_walk_t* w = NULL;
  CHECK_ERR(af_walk_next(NULL, &idx, &v), AF_ERR_INVALID_ARGUMENT, "null|walk");
  CHECK_NULLED(v, af_value_free);
  CHECK_ERR(af_walk_eval(NULL), AF_ERR_INVALID_ARGUMENT, "null|walk");
  CHECK_ERR(af_walk_send(NULL, s), AF_ERR_INVALID_ARGUMENT, "null|walk");
  v = (af_value_t*)&v;
  CHECK_ERR(af_walk_outputs(NULL, &v), AF_ERR_INVALID_ARGUMENT, "null|walk");
  CHECK_NULLED(v, af_value_free);
  af_walk_free(NULL);
  if (ir && CHECK_OK(walk_json(ir, "[\"W\"]", &w))) {
    CHECK_ERR(af_walk_next(w, NULL, &v), AF_ERR_INVALID_ARGUMENT, "index|out|null");
    CHECK_ERR(af_walk_next(w, &idx, NULL), AF_ERR_INVALID_ARGUMENT, "input|out|null");
    /* The walk is still usable. */
    free(NEXT(w, 0));
  }
  af_walk_free(w);
  af_ir_free(ir);
  af_value_free(s);
}

int main(int argc, char** argv) {
  static const struct test_case cases[] = {
      CASE(walk_evaluates_step_by_step),
      CASE(walk_send_supplies_outputs),
      CASE(walk_send_checks_the_output_tree),
      CASE(walk_send_of_a_bool),
      CASE(walk_outputs_before_done_and_steps_after_done),
      CASE(walk_without_equations),
      CASE(walk_keeps_its_ir_alive),
      CASE(walk_new_checks_inputs),
      CASE(walk_null_handles),
  };
  return run_cases(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
