/* control_test.c — switch, while_loop, host functions and the run-time
 * scopes (collect, inject, memoize) through the C API, inside and outside
 * traces, with the errors of bad input. */
#include "check.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

static af_error_t* lit(af_context_t* c, const char* s, af_value_t** out) {
  return af_value_str(c, s, strlen(s), out);
}

/* ---- branches and loop parts ------------------------------------------ */

static af_error_t* greet_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                            af_value_t** out) {
  (void)ud;
  (void)n;
  return af_format(c, "Hello, {}!", 10, in, 1, NULL, out);
}

static af_error_t* shout_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                            af_value_t** out) {
  af_value_t* parts[2] = {NULL, NULL};
  af_error_t* e = lit(c, "!!", &parts[1]);
  (void)ud;
  (void)n;
  parts[0] = af_value_clone(in[0]);
  if (!e) e = af_concat(c, AS_ARGS(parts), 2, out);
  af_value_free(parts[0]);
  af_value_free(parts[1]);
  return e;
}

/* Returns [x, x]: a structure different from the others. */
static af_error_t* pair_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                           af_value_t** out) {
  const af_value_t* two[2];
  (void)ud;
  (void)n;
  two[0] = in[0];
  two[1] = in[0];
  return af_value_list(c, two, 2, out);
}

/* Returns match(x, x): a bool where the others return a str. */
static af_error_t* bool_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                           af_value_t** out) {
  (void)ud;
  (void)n;
  return af_match(c, in[0], in[0], out);
}

struct sw {
  const char* names[2];
  size_t lens[2];
  af_ir_t* irs[2];
};

static int make_switch(struct sw* s, af_trace_fn b) {
  s->names[0] = "greet";
  s->names[1] = "shout";
  s->lens[0] = 5;
  s->lens[1] = 5;
  s->irs[0] = TRACE(greet_fn, NULL, "[\"x\"]", NULL);
  s->irs[1] = TRACE(b ? b : shout_fn, NULL, "[\"x\"]", NULL);
  return s->irs[0] && s->irs[1];
}

static void free_switch(struct sw* s) {
  af_ir_free(s->irs[0]);
  af_ir_free(s->irs[1]);
}

static af_error_t* switch_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                             af_value_t** out) {
  struct sw* s = (struct sw*)ud;
  (void)n;
  return af_switch(c, in[0], s->names, s->lens, (const af_ir_t* const*)s->irs, 2, &in[1], 1, out);
}

/* cond([s, t]) = match(s, t) is false ... we have no "not": loop while the
 * state's flag is "go" instead: cond([s, flag]) = match(flag, "go"). */
static af_error_t* cond_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                           af_value_t** out) {
  af_value_t* flag = NULL;
  af_value_t* go = NULL;
  af_error_t* e = af_value_index(in[0], 1, &flag);
  (void)ud;
  (void)n;
  if (!e) e = lit(c, "go", &go);
  if (!e) e = af_match(c, flag, go, out);
  af_value_free(flag);
  af_value_free(go);
  return e;
}

/* body([s, flag]) = [concat(s, "+"), flag] */
static af_error_t* body_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                           af_value_t** out) {
  af_value_t* s = NULL;
  af_value_t* flag = NULL;
  af_value_t* parts[2] = {NULL, NULL};
  af_value_t* items[2] = {NULL, NULL};
  af_error_t* e = af_value_index(in[0], 0, &s);
  (void)ud;
  (void)n;
  if (!e) e = af_value_index(in[0], 1, &flag);
  if (!e) e = lit(c, "+", &parts[1]);
  parts[0] = af_value_clone(s);
  if (!e) e = af_concat(c, AS_ARGS(parts), 2, &items[0]);
  items[1] = af_value_clone(flag);
  if (!e) e = af_value_list(c, AS_ARGS(items), 2, out);
  af_value_free(s);
  af_value_free(flag);
  free_items(parts, 2);
  free_items(items, 2);
  return e;
}

/* A body that returns only s: it changes the state structure. */
static af_error_t* shrink_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                             af_value_t** out) {
  (void)ud;
  (void)c;
  (void)n;
  return af_value_index(in[0], 0, out);
}

struct loop {
  af_ir_t* cond;
  af_ir_t* body;
  uint64_t max;
};

static af_error_t* loop_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                           af_value_t** out) {
  struct loop* l = (struct loop*)ud;
  af_value_t* init = NULL;
  af_error_t* e = af_value_list(c, in, n, &init);
  if (!e) e = af_while_loop(c, l->cond, l->body, init, l->max, out);
  af_value_free(init);
  return e;
}

/* ---- switch ----------------------------------------------------------- */

static void switch_outside_and_inside_a_trace(void) {
  struct sw s;
  af_value_t* key = mk_str("shout");
  af_value_t* x = mk_str("hi");
  af_value_t* out = NULL;
  af_ir_t* ir;
  const af_value_t* ops[1];
  if (!make_switch(&s, NULL)) return;
  ops[0] = x;
  if (CHECK_OK(af_switch(ctx, key, s.names, s.lens, (const af_ir_t* const*)s.irs, 2, ops, 1, &out)))
    CHECK_JSON(out, "\"hi!!\"");
  af_value_free(out);
  ir = TRACE(switch_fn, &s, "[\"greet\",\"x\"]", NULL);
  if (ir) {
    CHECK_INT_EQ(af_ir_eqn_count(ir), 1);
    CHECK_STR_EQ(af_ir_eqn_prim(ir, 0), "switch");
    CHECK_CALL(ir, "[\"greet\",\"Ada\"]", "\"Hello, Ada!\"");
    CHECK_CALL(ir, "[\"shout\",\"Ada\"]", "\"Ada!!\"");
  }
  af_ir_free(ir);
  af_value_free(key);
  af_value_free(x);
  free_switch(&s);
}

static void switch_unknown_key_lists_the_keys(void) {
  struct sw s;
  af_ir_t* ir;
  af_value_t* out = NULL;
  if (!make_switch(&s, NULL)) return;
  ir = TRACE(switch_fn, &s, "[\"greet\",\"x\"]", NULL);
  if (ir) {
    CHECK_ERR(call_json(ir, "[\"whisper\",\"Ada\"]", &out), AF_ERR_NOT_FOUND, "\"whisper\"", "\"greet\"",
              "\"shout\"");
    CHECK_NULLED(out, af_value_free);
  }
  af_ir_free(ir);
  free_switch(&s);
}

static void switch_branch_structures_must_match(void) {
  struct sw s;
  af_ir_t* ir = NULL;
  af_value_t* key = mk_str("greet");
  af_value_t* x = mk_str("hi");
  af_value_t* n = mk_int(3);
  af_value_t* out = NULL;
  const af_value_t* ops[1];
  /* Different output structures: caught when tracing. */
  if (make_switch(&s, pair_fn)) {
    CHECK_ERR(trace_json(switch_fn, &s, "[\"greet\",\"x\"]", NULL, &ir), AF_ERR_INVALID_ARGUMENT,
              "different structures");
    CHECK_NULLED(ir, af_ir_free);
  }
  free_switch(&s);
  /* Different output kinds. */
  if (make_switch(&s, bool_fn)) {
    CHECK_ERR(trace_json(switch_fn, &s, "[\"greet\",\"x\"]", NULL, &ir), AF_ERR_INVALID_ARGUMENT, "str",
              "bool");
    CHECK_NULLED(ir, af_ir_free);
    /* Operands the branches do not take. */
    ops[0] = n;
    CHECK_ERR(af_switch(ctx, key, s.names, s.lens, (const af_ir_t* const*)s.irs, 2, ops, 1, &out),
              AF_ERR_INVALID_ARGUMENT, "expected str, found int");
    CHECK_ERR(af_switch(ctx, key, s.names, s.lens, (const af_ir_t* const*)s.irs, 2, ops, 0, &out),
              AF_ERR_INVALID_ARGUMENT, "takes 1 input");
    /* A key that is not a str; no branches; duplicate names. */
    ops[0] = x;
    CHECK_ERR(af_switch(ctx, n, s.names, s.lens, (const af_ir_t* const*)s.irs, 2, ops, 1, &out),
              AF_ERR_INVALID_ARGUMENT, "key must be a str");
    CHECK_ERR(af_switch(ctx, key, s.names, s.lens, (const af_ir_t* const*)s.irs, 0, ops, 1, &out),
              AF_ERR_INVALID_ARGUMENT, "no branches");
    s.names[1] = "greet";
    CHECK_ERR(af_switch(ctx, key, s.names, s.lens, (const af_ir_t* const*)s.irs, 2, ops, 1, &out),
              AF_ERR_INVALID_ARGUMENT, "two branches are named");
    CHECK_NULLED(out, af_value_free);
  }
  free_switch(&s);
  af_value_free(key);
  af_value_free(x);
  af_value_free(n);
}

/* level(x) = switch("a") {"a": below}(x): each level traced around the last. */
struct nest {
  const char* name;
  size_t len;
  af_ir_t* below;
};

static af_error_t* nest_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                           af_value_t** out) {
  struct nest* s = (struct nest*)ud;
  af_value_t* key = NULL;
  af_error_t* e = lit(c, "a", &key);
  (void)n;
  if (!e) e = af_switch(c, key, &s->name, &s->len, (const af_ir_t* const*)&s->below, 1, in, 1, out);
  af_value_free(key);
  return e;
}

static void switches_nest_at_most_64_deep(void) {
  struct nest s;
  af_ir_t* deeper = NULL;
  int level;
  s.name = "a";
  s.len = 1;
  s.below = TRACE(greet_fn, NULL, "[\"x\"]", NULL);
  for (level = 1; level <= 64 && s.below; level++) {
    af_ir_t* next = TRACE(nest_fn, &s, "[\"x\"]", NULL);
    af_ir_free(s.below);
    s.below = next;
  }
  if (!s.below) return;
  /* The limit itself traces and runs; one level more is refused while
   * tracing, naming the limit (a deeper graph could not be saved or loaded). */
  CHECK_CALL(s.below, "[\"x\"]", "\"Hello, x!\"");
  CHECK_ERR(trace_json(nest_fn, &s, "[\"x\"]", NULL, &deeper), AF_ERR_INVALID_ARGUMENT,
            "switch: its sub-IRs would nest 65 levels deep", "limit of 64");
  CHECK_NULLED(deeper, af_ir_free);
  af_ir_free(s.below);
}

/* ---- while_loop -------------------------------------------------------- */

static void while_loop_runs_and_stops(void) {
  struct loop l;
  af_ir_t* ir;
  af_value_t* init = mk_json("[\"a\",\"go\"]");
  af_value_t* out = NULL;
  l.cond = TRACE(cond_fn, NULL, "[[\"s\",\"go\"]]", NULL);
  l.body = TRACE(body_fn, NULL, "[[\"s\",\"go\"]]", NULL);
  l.max = 3;
  if (!l.cond || !l.body) goto done;
  /* Outside a trace: evaluated at once. max_iters bounds the loop. */
  if (CHECK_OK(af_while_loop(ctx, l.cond, l.body, init, 3, &out))) CHECK_JSON(out, "[\"a+++\",\"go\"]");
  af_value_free(out);
  out = NULL;
  if (CHECK_OK(af_while_loop(ctx, l.cond, l.body, init, 0, &out))) CHECK_JSON(out, "[\"a\",\"go\"]");
  af_value_free(out);
  ir = TRACE(loop_fn, &l, "[\"s\",\"go\"]", NULL);
  if (ir) {
    CHECK_STR_EQ(af_ir_eqn_prim(ir, 0), "while_loop");
    CHECK_CALL(ir, "[\"x\",\"go\"]", "[\"x+++\",\"go\"]");
    /* cond false at once: the state comes back unchanged. */
    CHECK_CALL(ir, "[\"x\",\"stop\"]", "[\"x\",\"stop\"]");
  }
  af_ir_free(ir);
done:
  af_value_free(init);
  af_ir_free(l.cond);
  af_ir_free(l.body);
}

static void while_loop_body_must_keep_the_state(void) {
  af_ir_t* cond = TRACE(cond_fn, NULL, "[[\"s\",\"go\"]]", NULL);
  af_ir_t* shrink = TRACE(shrink_fn, NULL, "[[\"s\",\"go\"]]", NULL);
  af_ir_t* greet = TRACE(greet_fn, NULL, "[\"x\"]", NULL);
  af_value_t* init = mk_json("[\"a\",\"go\"]");
  af_value_t* bad = mk_json("[\"a\",1]");
  af_value_t* out = NULL;
  CHECK_ERR(af_while_loop(ctx, cond, shrink, init, 3, &out), AF_ERR_INVALID_ARGUMENT,
            "changes the state structure");
  CHECK_NULLED(out, af_value_free);
  /* cond returning a str. */
  CHECK_ERR(af_while_loop(ctx, greet, greet, init, 3, &out), AF_ERR_INVALID_ARGUMENT, "does not take the initial state");
  /* init the cond / body do not take. */
  CHECK_ERR(af_while_loop(ctx, cond, cond, bad, 3, &out), AF_ERR_INVALID_ARGUMENT, "expected str, found int");
  CHECK_ERR(af_while_loop(ctx, cond, NULL, init, 3, &out), AF_ERR_INVALID_ARGUMENT, "body");
  af_value_free(init);
  af_value_free(bad);
  af_ir_free(cond);
  af_ir_free(shrink);
  af_ir_free(greet);
}

/* ---- every loop can be stopped ---------------------------------------- */

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The state unchanged: a loop around it never ends by itself. */
static af_error_t* same_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                           af_value_t** out) {
  (void)ud;
  (void)c;
  (void)n;
  *out = af_value_clone(in[0]);
  return NULL;
}

/* scan over the state with a literal count no memory could hold (af.h has
 * no scan constructor: pullbacks make it; here a hand-written graph). */
static const char kEndlessScan[] =
    "{\"afg\":1,\"producer\":\"test\",\"host_functions\":[],\"irs\":["
    "{\"vars\":[\"str\"],\"in\":[\"%0\"],\"eqns\":[],\"out\":[\"%0\"]},"
    "{\"vars\":[\"str\",\"str\"],\"in\":[\"%0\"],\"eqns\":[{\"prim\":\"scan\",\"out\":[\"%1\"],"
    "\"in\":[{\"lit\":9223372036854775807},\"%0\"],\"params\":{\"body\":{\"ir\":0},"
    "\"n_xs\":{\"value\":0},\"reverse\":{\"value\":false}}}],\"out\":\"%1\"}]}";

struct endless {
  const char* name;
  af_ir_t* ir;
  const char* inputs; /* JSON list */
};

static void* trigger_after_50ms(void* token) {
  struct timespec ts = {0, 50 * 1000000L};
  nanosleep(&ts, NULL);
  af_cancel_trigger((af_cancel_t*)token);
  return NULL;
}

/* One program that never finishes: a blocking call ends with TIMEOUT at its
 * deadline and with CANCELLED when its token is triggered; an asynchronous
 * one that timed out, and one still looping, let their context be freed. */
static void endless_run_stops(const struct endless* c) {
  /* Generous: the loops stop within microseconds, a loaded machine delays
   * the timer thread. */
  const double slack_ms = 2000;
  af_program_t* p = NULL;
  af_context_t* own = NULL;
  af_future_t* f = NULL;
  af_cancel_t* token = NULL;
  af_value_t* in[2] = {NULL, NULL};
  af_value_t* list = mk_json(c->inputs);
  af_value_t* out = NULL;
  af_run_options_t o;
  pthread_t th;
  size_t n = 0, i;
  double t0;
  fprintf(stderr, "  %s\n", c->name);
  if (!list || !CHECK_OK(af_value_len(list, &n)) || n > 2) goto done;
  for (i = 0; i < n; i++) CHECK_OK(af_value_index(list, i, &in[i]));
  if (!CHECK_OK(af_compile(ctx, c->ir, &p))) goto done;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.timeout_ms = 100;
  t0 = now_ms();
  CHECK_ERR(af_program_call_with(ctx, p, AS_ARGS(in), n, &o, &out), AF_ERR_TIMEOUT, "100 ms");
  CHECK(now_ms() - t0 >= 95 && now_ms() - t0 < 100 + slack_ms);
  CHECK_NULLED(out, af_value_free);

  if (!CHECK_OK(af_cancel_new(&token))) goto done;
  o.timeout_ms = 0;
  o.cancel = token;
  t0 = now_ms();
  pthread_create(&th, NULL, trigger_after_50ms, token);
  CHECK_ERR(af_program_call_with(ctx, p, AS_ARGS(in), n, &o, &out), AF_ERR_CANCELLED, "");
  pthread_join(th, NULL);
  CHECK(now_ms() - t0 < 50 + slack_ms);
  CHECK_NULLED(out, af_value_free);
  o.cancel = NULL;

  /* Asynchronous, timed out: the worker that ran the loop is free, so the
   * context's threads join at once. */
  if (!CHECK_OK(af_context_new(&own))) goto done;
  o.timeout_ms = 100;
  if (CHECK_OK(af_program_call_async_with(own, p, AS_ARGS(in), n, &o, &f))) {
    CHECK_ERR(af_future_wait(f, &out), AF_ERR_TIMEOUT, "100 ms");
    af_future_free(f);
    f = NULL;
  }
  t0 = now_ms();
  af_context_free(own);
  CHECK(now_ms() - t0 < slack_ms);

  /* Still looping when the context goes: freeing it stops the run. */
  if (!CHECK_OK(af_context_new(&own))) goto done;
  o.timeout_ms = 0;
  if (CHECK_OK(af_program_call_async_with(own, p, AS_ARGS(in), n, &o, &f))) {
    struct timespec ts = {0, 20 * 1000000L};
    nanosleep(&ts, NULL); /* let it spin */
    t0 = now_ms();
    af_context_free(own);
    CHECK(now_ms() - t0 < slack_ms);
    CHECK_INT_EQ(af_future_ready(f), 1);
    CHECK_ERR(af_future_wait(f, &out), AF_ERR_CANCELLED, "");
    af_future_free(f);
  } else {
    af_context_free(own);
  }
done:
  af_cancel_free(token);
  af_program_free(p);
  free_items(in, 2);
  af_value_free(list);
}

static void loops_without_lm_calls_stop(void) {
  struct loop l;
  struct endless cases[2];
  af_bytes_t bytes = {NULL, 0};
  af_ir_t* scan = NULL;
  size_t i;
  l.cond = TRACE(cond_fn, NULL, "[[\"s\",\"go\"]]", NULL);
  l.body = TRACE(same_fn, NULL, "[[\"s\",\"go\"]]", NULL);
  l.max = UINT64_MAX;
  cases[0].name = "while_loop";
  cases[0].ir = l.cond && l.body ? TRACE(loop_fn, &l, "[\"s\",\"go\"]", NULL) : NULL;
  cases[0].inputs = "[\"x\",\"go\"]";
  if (CHECK_OK(af_graph_from_json(ctx, kEndlessScan, strlen(kEndlessScan), &bytes)))
    CHECK_OK(af_ir_from_bytes(ctx, bytes.data, bytes.len, &scan));
  cases[1].name = "scan";
  cases[1].ir = scan;
  cases[1].inputs = "[\"x\"]";
  for (i = 0; i < 2; i++)
    if (cases[i].ir) endless_run_stops(&cases[i]);
  af_bytes_free(&bytes);
  af_ir_free(cases[0].ir);
  af_ir_free(scan);
  af_ir_free(l.cond);
  af_ir_free(l.body);
}

/* ---- the run's byte budget ------------------------------------------------ */

/* Two formats of 10 000 "{0}" fields each (a 425-byte graph once saved):
 * 4 KB in, 40 MB after the first, 400 GB after the second. It ran for 11 s
 * past a 1 s deadline to 2.6 GB before it was stopped. Now each format
 * checks the result's size before it allocates. */
static char* format_bomb_json(void) {
  const char* head = "{\"afg\":1,\"irs\":[{\"vars\":[\"str\",\"str\",\"str\"],\"in\":[\"%0\"],\"eqns\":[";
  const char* eqn = "{\"prim\":\"format\",\"out\":\"%%%d\",\"in\":[\"%%%d\"],\"params\":{\"names\":"
                    "{\"value\":[]},\"template\":{\"value\":\"%s\"}}}";
  char* tmpl = malloc(30001);
  char* json = malloc(61000);
  size_t n = 0, i;
  if (!tmpl || !json) {
    free(tmpl);
    free(json);
    return NULL;
  }
  for (i = 0; i < 10000; i++) memcpy(tmpl + 3 * i, "{0}", 3);
  tmpl[30000] = 0;
  n += (size_t)sprintf(json + n, "%s", head);
  n += (size_t)sprintf(json + n, eqn, 1, 0, tmpl);
  n += (size_t)sprintf(json + n, ",");
  n += (size_t)sprintf(json + n, eqn, 2, 1, tmpl);
  sprintf(json + n, "],\"out\":\"%%2\"}]}");
  free(tmpl);
  return json;
}

static void values_past_the_byte_budget_fail_out_of_memory(void) {
  char* json = format_bomb_json();
  char* big = malloc(4097);
  af_bytes_t bytes = {NULL, 0};
  af_ir_t* ir = NULL;
  af_program_t* p = NULL;
  af_value_t *in = NULL, *out = NULL;
  af_run_options_t o;
  size_t len = 0;
  if (!json || !big || !CHECK_OK(af_graph_from_json(ctx, json, strlen(json), &bytes)) ||
      !CHECK_OK(af_ir_from_bytes(ctx, bytes.data, bytes.len, &ir)) || !CHECK_OK(af_compile(ctx, ir, &p)))
    goto done;
  memset(big, 'a', 4096);
  big[4096] = 0;
  in = mk_str(big);
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.timeout_ms = 1000;
  /* The default budget, 1 GiB: the second format fails before allocating. */
  CHECK_ERR(af_program_call_with(ctx, p, (const af_value_t* const*)&in, 1, &o, &out), AF_ERR_OUT_OF_MEMORY,
            "format: the result would be 409600000000 bytes, over the run's max_value_bytes of 1073741824");
  CHECK_NULLED(out, af_value_free);
  /* A smaller budget stops the first. */
  o.max_value_bytes = 1000000;
  CHECK_ERR(af_program_call_with(ctx, p, (const af_value_t* const*)&in, 1, &o, &out), AF_ERR_OUT_OF_MEMORY,
            "40960000 bytes, over the run's max_value_bytes of 1000000");
  /* Within it, the program runs: 1 byte -> 10 000 -> 10^8. */
  af_value_free(in);
  in = mk_str("a");
  o.max_value_bytes = 100000000;
  if (CHECK_OK(af_program_call_with(ctx, p, (const af_value_t* const*)&in, 1, &o, &out))) {
    const char* s = NULL;
    CHECK_OK(af_value_get_str(out, &s, &len));
    CHECK_INT_EQ((long)len, 100000000L);
  }
  af_value_free(out);
  out = NULL;
  /* One byte less is refused; and an older caller's shorter struct (no
   * max_value_bytes field) gets the default. */
  o.max_value_bytes = 99999999;
  CHECK_ERR(af_program_call_with(ctx, p, (const af_value_t* const*)&in, 1, &o, &out), AF_ERR_OUT_OF_MEMORY,
            "100000000 bytes");
  o.struct_size = offsetof(af_run_options_t, max_value_bytes);
  CHECK_OK(af_program_call_with(ctx, p, (const af_value_t* const*)&in, 1, &o, &out));
done:
  af_value_free(out);
  af_value_free(in);
  af_program_free(p);
  af_ir_free(ir);
  af_bytes_free(&bytes);
  free(big);
  free(json);
}

/* ---- host functions ---------------------------------------------------- */

struct counter {
  int calls;
  int destroyed;
};

static af_error_t* upper(void* ud, const af_value_t* const* args, size_t n, af_value_t** out) {
  struct counter* k = (struct counter*)ud;
  const char* s = NULL;
  size_t len = 0, i;
  char buf[128];
  af_error_t* e;
  if (k) k->calls++;
  if (n != 1) return af_error_new(AF_ERR_INVALID_ARGUMENT, "upper takes one argument", 24);
  e = af_value_get_str(args[0], &s, &len);
  if (e) return e;
  if (len > sizeof buf) len = sizeof buf;
  for (i = 0; i < len; i++) buf[i] = (char)((s[i] >= 'a' && s[i] <= 'z') ? s[i] - 32 : s[i]);
  return af_value_str(ctx, buf, len, out);
}

static void destroy_counter(void* ud) { ((struct counter*)ud)->destroyed++; }

static af_error_t* failing(void* ud, const af_value_t* const* args, size_t n, af_value_t** out) {
  (void)ud;
  (void)args;
  (void)n;
  (void)out;
  return af_error_new(AF_ERR_PROVIDER, "search backend down", 19);
}

static af_error_t* wrong_kind(void* ud, const af_value_t* const* args, size_t n, af_value_t** out) {
  (void)ud;
  (void)args;
  (void)n;
  return af_value_int(ctx, 42, out);
}

/* Echoes its arguments as a list: shows what the host receives. */
static af_error_t* echo_args(void* ud, const af_value_t* const* args, size_t n, af_value_t** out) {
  af_value_t* list = NULL;
  af_value_t* str = NULL;
  af_error_t* e;
  af_bytes_t b = {NULL, 0};
  (void)ud;
  e = af_value_list(ctx, args, n, &list);
  if (!e) e = af_value_to_json(list, &b);
  if (!e) e = af_value_str(ctx, (const char*)b.data, b.len, &str);
  af_bytes_free(&b);
  af_value_free(list);
  *out = str;
  return e;
}

static af_error_t* host_trace_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                                 af_value_t** out) {
  (void)ud;
  return af_host_call(c, "upper", 5, in, n, out);
}

static void host_function_in_and_out_of_traces(void) {
  struct counter k = {0, 0};
  af_value_t* kinds = mk_json("\"str\"");
  af_value_t* x = mk_str("abc");
  af_value_t* out = NULL;
  af_ir_t* ir;
  const af_value_t* args[1];
  args[0] = x;
  if (!CHECK_OK(af_register_function(ctx, "upper", 5, upper, &k, destroy_counter, kinds))) goto done;
  if (CHECK_OK(af_host_call(ctx, "upper", 5, args, 1, &out))) CHECK_JSON(out, "\"ABC\"");
  af_value_free(out);
  CHECK_INT_EQ(k.calls, 1);
  ir = TRACE(host_trace_fn, NULL, "[\"x\"]", NULL);
  CHECK_INT_EQ(k.calls, 1); /* tracing does not call it */
  if (ir) {
    char* text = ir_text(ir);
    if (text) CHECK_CONTAINS(text, "host_call[name=\"upper\", result=\"str\"]");
    free(text);
    CHECK_CALL(ir, "[\"hey\"]", "\"HEY\"");
    CHECK_INT_EQ(k.calls, 2);
  }
  af_ir_free(ir);
  /* Re-registering releases the old function exactly once. */
  CHECK_INT_EQ(k.destroyed, 0);
  CHECK_OK(af_register_function(ctx, "upper", 5, upper, NULL, NULL, kinds));
  CHECK_INT_EQ(k.destroyed, 1);
done:
  af_value_free(kinds);
  af_value_free(x);
}

static void host_function_destroy_runs_on_context_free(void) {
  struct counter k = {0, 0};
  af_context_t* c2 = NULL;
  af_value_t* kinds = mk_json("{\"a\":\"str\",\"n\":\"int\"}");
  if (!CHECK_OK(af_context_new(&c2))) return;
  CHECK_OK(af_register_function(c2, "f", 1, upper, &k, destroy_counter, kinds));
  CHECK_INT_EQ(k.destroyed, 0);
  af_context_free(c2);
  CHECK_INT_EQ(k.destroyed, 1);
  /* A failed registration still releases user_data. */
  CHECK_ERR(af_register_function(ctx, "", 0, upper, &k, destroy_counter, kinds), AF_ERR_INVALID_ARGUMENT,
            "empty");
  CHECK_INT_EQ(k.destroyed, 2);
  af_value_free(kinds);
  kinds = mk_json("\"string\"");
  CHECK_ERR(af_register_function(ctx, "g", 1, upper, &k, destroy_counter, kinds), AF_ERR_INVALID_ARGUMENT,
            "not a kind");
  CHECK_INT_EQ(k.destroyed, 3);
  af_value_free(kinds);
}

static void host_function_errors(void) {
  af_value_t* kinds = mk_json("\"str\"");
  af_value_t* x = mk_str("abc");
  af_value_t* out = NULL;
  af_error_t* e;
  const af_value_t* args[1];
  af_ir_t* ir = NULL;
  args[0] = x;
  /* Unregistered: NOT_FOUND, also at trace time. */
  CHECK_ERR(af_host_call(ctx, "nope", 4, args, 1, &out), AF_ERR_NOT_FOUND, "\"nope\"", "not registered");
  CHECK_NULLED(out, af_value_free);
  CHECK_ERR(trace_json(host_trace_fn, NULL, "[\"x\"]", NULL, &ir), AF_ERR_NOT_FOUND, "\"upper\"");
  CHECK_NULLED(ir, af_ir_free);
  /* An error from the function: CALLBACK with it as the cause. */
  CHECK_OK(af_register_function(ctx, "search", 6, failing, NULL, NULL, kinds));
  e = af_host_call(ctx, "search", 6, args, 1, &out);
  if (CHECK_ERR_KEEP(e, AF_ERR_CALLBACK, "search")) {
    const af_error_t* cause = af_error_cause(e);
    CHECK(cause != NULL);
    CHECK_INT_EQ(af_error_code(cause), AF_ERR_PROVIDER);
    CHECK_STR_EQ(af_error_message(cause), "search backend down");
  }
  af_error_free(e);
  CHECK_NULLED(out, af_value_free);
  /* Wrong result kinds. */
  CHECK_OK(af_register_function(ctx, "liar", 4, wrong_kind, NULL, NULL, kinds));
  CHECK_ERR(af_host_call(ctx, "liar", 4, args, 1, &out), AF_ERR_INVALID_ARGUMENT, "liar",
            "declared result kinds", "expected str, found int");
  CHECK_NULLED(out, af_value_free);
  /* A result of the wrong structure. */
  {
    af_value_t* dict_kinds = mk_json("{\"title\":\"str\"}");
    CHECK_OK(af_register_function(ctx, "titled", 6, upper, NULL, NULL, dict_kinds));
    CHECK_ERR(af_host_call(ctx, "titled", 6, args, 1, &out), AF_ERR_INVALID_ARGUMENT, "titled",
              "declared result kinds");
    CHECK_NULLED(out, af_value_free);
    af_value_free(dict_kinds);
  }
  /* The same errors from a traced program when it runs. */
  CHECK_OK(af_register_function(ctx, "upper", 5, failing, NULL, NULL, kinds));
  ir = TRACE(host_trace_fn, NULL, "[\"x\"]", NULL);
  if (ir) {
    e = call_json(ir, "[\"a\"]", &out);
    if (CHECK_ERR_KEEP(e, AF_ERR_CALLBACK, "upper")) {
      const af_error_t* cause = af_error_cause(e);
      CHECK(cause != NULL);
      if (cause) CHECK_STR_EQ(af_error_message(cause), "search backend down");
    }
    af_error_free(e);
    CHECK_NULLED(out, af_value_free);
    CHECK_OK(af_register_function(ctx, "upper", 5, wrong_kind, NULL, NULL, kinds));
    CHECK_ERR(call_json(ir, "[\"a\"]", &out), AF_ERR_INVALID_ARGUMENT, "upper", "expected str, found int");
    /* A context where the name is not registered (a graph run elsewhere). */
    {
      af_context_t* other = NULL;
      if (CHECK_OK(af_context_new(&other))) {
        CHECK_ERR(af_ir_call(other, ir, args, 1, &out), AF_ERR_NOT_FOUND, "\"upper\"", "not registered",
                  "af_register_function");
        CHECK_NULLED(out, af_value_free);
      }
      af_context_free(other);
    }
  }
  af_ir_free(ir);
  af_value_free(kinds);
  af_value_free(x);
}

static void host_function_sees_null_for_zero(void) {
  af_value_t* kinds = mk_json("\"str\"");
  af_value_t* args[2];
  af_value_t* out = NULL;
  args[0] = mk_str("a");
  args[1] = mk_json("null");
  CHECK_OK(af_register_function(ctx, "echo", 4, echo_args, NULL, NULL, kinds));
  if (CHECK_OK(af_host_call(ctx, "echo", 4, AS_ARGS(args), 2, &out))) CHECK_JSON(out, "\"[\\\"a\\\",null]\"");
  af_value_free(out);
  free_items(args, 2);
  af_value_free(kinds);
}

/* ---- run-time scopes ----------------------------------------------------- */

static af_error_t* ckpt_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                           af_value_t** out) {
  af_value_t* p = NULL;
  af_value_t* parts[2] = {NULL, NULL};
  af_error_t* e = af_format(c, "Explain {}", 10, in, 1, NULL, &p);
  (void)ud;
  (void)n;
  if (!e) e = af_checkpoint(c, p, "prompt", 6, "debug", 5, &parts[0]);
  if (!e) e = lit(c, ".", &parts[1]);
  if (!e) e = af_concat(c, AS_ARGS(parts), 2, out);
  af_value_free(p);
  free_items(parts, 2);
  return e;
}

static void collect_and_inject(void) {
  af_ir_t* ir = TRACE(ckpt_fn, NULL, "[\"x\"]", NULL);
  af_ir_t* b = NULL;
  af_value_t* got = NULL;
  af_value_t* queue;
  if (!ir) return;
  CHECK_OK(af_collect_push(ctx, "debug", 5));
  CHECK_CALL(ir, "[\"recursion\"]", "\"Explain recursion.\"");
  CHECK_CALL(ir, "[\"DNA\"]", "\"Explain DNA.\"");
  if (CHECK_OK(af_collect_pop(ctx, &got))) CHECK_JSON(got, "{\"prompt\":[\"Explain recursion\",\"Explain DNA\"]}");
  af_value_free(got);
  got = NULL;
  /* Under batch the checkpoint runs once per item. */
  CHECK_OK(af_batch(ctx, ir, NULL, &b));
  CHECK_OK(af_collect_push(ctx, "debug", 5));
  CHECK_OK(af_collect_push(ctx, "other", 5));
  CHECK_CALL(b, "[[\"a\",\"b\"]]", "[\"Explain a.\",\"Explain b.\"]");
  if (CHECK_OK(af_collect_pop(ctx, &got))) CHECK_JSON(got, "{}");
  af_value_free(got);
  got = NULL;
  if (CHECK_OK(af_collect_pop(ctx, &got))) CHECK_JSON(got, "{\"prompt\":[\"Explain a\",\"Explain b\"]}");
  af_value_free(got);
  got = NULL;
  /* inject: one queued value per hit, then the checkpoint runs normally. */
  queue = mk_json("{\"prompt\":[\"X\"]}");
  CHECK_OK(af_inject_push(ctx, "debug", 5, queue));
  CHECK_CALL(ir, "[\"a\"]", "\"X.\"");
  CHECK_CALL(ir, "[\"b\"]", "\"Explain b.\"");
  CHECK_OK(af_inject_pop(ctx));
  af_value_free(queue);
  /* Injecting a value of the wrong kind. */
  queue = mk_json("{\"prompt\":[3]}");
  CHECK_OK(af_inject_push(ctx, "debug", 5, queue));
  CHECK_ERR(call_json(ir, "[\"a\"]", &got), AF_ERR_INVALID_ARGUMENT, "expected str, found int");
  CHECK_OK(af_inject_pop(ctx));
  af_value_free(queue);
  /* Unbalanced pops and bad queues. */
  CHECK_ERR(af_collect_pop(ctx, &got), AF_ERR_INVALID_ARGUMENT, "without a matching push");
  CHECK_ERR(af_inject_pop(ctx), AF_ERR_INVALID_ARGUMENT, "without a matching push");
  queue = mk_json("{\"prompt\":\"X\"}");
  CHECK_ERR(af_inject_push(ctx, "debug", 5, queue), AF_ERR_INVALID_ARGUMENT, "must be a list");
  af_value_free(queue);
  af_ir_free(b);
  af_ir_free(ir);
}

static void inject_while_tracing_makes_a_literal(void) {
  af_value_t* queue = mk_json("{\"prompt\":[\"fixed\"]}");
  af_ir_t* ir;
  CHECK_OK(af_inject_push(ctx, "debug", 5, queue));
  ir = TRACE(ckpt_fn, NULL, "[\"x\"]", NULL);
  CHECK_OK(af_inject_pop(ctx));
  if (ir) {
    char* text = ir_text(ir);
    if (text) CHECK_NOT_CONTAINS(text, "checkpoint");
    free(text);
    CHECK_CALL(ir, "[\"anything\"]", "\"fixed.\"");
  }
  af_ir_free(ir);
  af_value_free(queue);
}

static void memoize_runs_identical_calls_once(void) {
  struct counter k = {0, 0};
  af_value_t* kinds = mk_json("\"str\"");
  af_ir_t* ir;
  af_ir_t* b = NULL;
  af_function_options_t o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.flags = AF_FUNCTION_PURE; /* memoize answers only pure functions (effects_test.c) */
  o.fn = upper;
  o.user_data = &k;
  o.result_kinds = kinds;
  CHECK_OK(af_register_function_with(ctx, "upper", 5, &o));
  ir = TRACE(host_trace_fn, NULL, "[\"x\"]", NULL);
  if (!ir) goto done;
  CHECK_OK(af_memoize_push(ctx));
  CHECK_CALL(ir, "[\"a\"]", "\"A\"");
  CHECK_CALL(ir, "[\"a\"]", "\"A\"");
  CHECK_CALL(ir, "[\"b\"]", "\"B\"");
  CHECK_INT_EQ(k.calls, 2);
  /* Inside a batch too: items whose call already ran are answered from the
   * scope (equal items in flight at the same moment may each run: af.h). */
  CHECK_OK(af_batch(ctx, ir, NULL, &b));
  if (b) CHECK_CALL(b, "[[\"a\",\"c\"]]", "[\"A\",\"C\"]");
  CHECK_INT_EQ(k.calls, 3);
  if (b) CHECK_CALL(b, "[[\"c\",\"d\"]]", "[\"C\",\"D\"]");
  CHECK_INT_EQ(k.calls, 4);
  CHECK_OK(af_memoize_pop(ctx));
  CHECK_CALL(ir, "[\"a\"]", "\"A\"");
  CHECK_INT_EQ(k.calls, 5);
  CHECK_ERR(af_memoize_pop(ctx), AF_ERR_INVALID_ARGUMENT, "without a matching push");
done:
  af_ir_free(b);
  af_ir_free(ir);
  af_value_free(kinds);
}

static void memoize_bypasses_checkpoints(void) {
  af_ir_t* ir = TRACE(ckpt_fn, NULL, "[\"x\"]", NULL);
  af_value_t* got = NULL;
  if (!ir) return;
  CHECK_OK(af_memoize_push(ctx));
  CHECK_OK(af_collect_push(ctx, "debug", 5));
  CHECK_CALL(ir, "[\"a\"]", "\"Explain a.\"");
  CHECK_CALL(ir, "[\"a\"]", "\"Explain a.\"");
  if (CHECK_OK(af_collect_pop(ctx, &got))) CHECK_JSON(got, "{\"prompt\":[\"Explain a\",\"Explain a\"]}");
  CHECK_OK(af_memoize_pop(ctx));
  af_value_free(got);
  af_ir_free(ir);
}

/* Scopes belong to the thread that pushed them: two threads run the same
 * program on one context at the same time; each sees its own scopes only. */
#define SCOPE_RUNS 40
struct scope_thread {
  const af_ir_t* ir;
  pthread_barrier_t* barrier;
  const char* input;      /* JSON list of inputs */
  const char* expected;   /* JSON of each run's output */
  const char* queue;      /* an inject queue, or NULL */
  int collect;            /* pushes a collect scope on "debug" */
  int failures;
  af_value_t* collected;
};

static void* scope_thread_main(void* arg) {
  struct scope_thread* t = (struct scope_thread*)arg;
  af_value_t* queue = t->queue ? mk_json(t->queue) : NULL;
  int i;
  if (t->collect && af_collect_push(ctx, "debug", 5)) t->failures++;
  if (queue && af_inject_push(ctx, "debug", 5, queue)) t->failures++;
  pthread_barrier_wait(t->barrier); /* both scopes are open from here */
  for (i = 0; i < SCOPE_RUNS; i++) {
    af_value_t* out = NULL;
    af_bytes_t json = {NULL, 0};
    af_error_t* e = call_json(t->ir, t->input, &out);
    if (!e) e = af_value_to_json(out, &json);
    if (e || strcmp((const char*)json.data, t->expected) != 0) t->failures++;
    af_error_free(e);
    af_bytes_free(&json);
    af_value_free(out);
  }
  pthread_barrier_wait(t->barrier); /* both threads ran everything */
  if (queue && af_inject_pop(ctx)) t->failures++;
  if (t->collect && af_collect_pop(ctx, &t->collected)) t->failures++;
  af_value_free(queue);
  return NULL;
}

static void scopes_belong_to_the_thread_that_pushed_them(void) {
  af_ir_t* ir = TRACE(ckpt_fn, NULL, "[\"x\"]", NULL);
  pthread_barrier_t barrier;
  pthread_t ta, tb;
  struct scope_thread a = {NULL, NULL, "[\"a\"]", "\"Explain a.\"", NULL, 1, 0, NULL};
  struct scope_thread b = {NULL, NULL, "[\"b\"]", "\"X.\"", NULL, 0, 0, NULL};
  char expected[64 * SCOPE_RUNS];
  char queue[64 * SCOPE_RUNS];
  size_t at = 0, qat = 0;
  int i;
  if (!ir) return;
  /* B injects "X" into every one of its hits and collects nothing; A collects. */
  at += (size_t)sprintf(expected + at, "{\"prompt\":[");
  qat += (size_t)sprintf(queue + qat, "{\"prompt\":[");
  for (i = 0; i < SCOPE_RUNS; i++) {
    at += (size_t)sprintf(expected + at, "%s\"Explain a\"", i ? "," : "");
    qat += (size_t)sprintf(queue + qat, "%s\"X\"", i ? "," : "");
  }
  sprintf(expected + at, "]}");
  sprintf(queue + qat, "]}");
  b.queue = queue;
  a.ir = b.ir = ir;
  a.barrier = b.barrier = &barrier;
  pthread_barrier_init(&barrier, NULL, 2);
  pthread_create(&ta, NULL, scope_thread_main, &a);
  pthread_create(&tb, NULL, scope_thread_main, &b);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  pthread_barrier_destroy(&barrier);
  CHECK_INT_EQ(a.failures, 0);
  CHECK_INT_EQ(b.failures, 0);
  if (a.collected) CHECK_JSON(a.collected, expected);
  af_value_free(a.collected);
  /* Scopes of a thread that ended are gone: this thread sees none. */
  CHECK_CALL(ir, "[\"c\"]", "\"Explain c.\"");
  af_ir_free(ir);
}

int main(int argc, char** argv) {
  static const struct test_case cases[] = {
      CASE(switch_outside_and_inside_a_trace),
      CASE(switch_unknown_key_lists_the_keys),
      CASE(switch_branch_structures_must_match),
      CASE(switches_nest_at_most_64_deep),
      CASE(while_loop_runs_and_stops),
      CASE(while_loop_body_must_keep_the_state),
      CASE(loops_without_lm_calls_stop),
      CASE(values_past_the_byte_budget_fail_out_of_memory),
      CASE(host_function_in_and_out_of_traces),
      CASE(host_function_destroy_runs_on_context_free),
      CASE(host_function_errors),
      CASE(host_function_sees_null_for_zero),
      CASE(collect_and_inject),
      CASE(inject_while_tracing_makes_a_literal),
      CASE(memoize_runs_identical_calls_once),
      CASE(memoize_bypasses_checkpoints),
      CASE(scopes_belong_to_the_thread_that_pushed_them),
  };
  return run_cases(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
