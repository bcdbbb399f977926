/* Checkpoints in program order (docs/SEMANTICS.md §4 collect / inject):
 * independent checkpoints whose inputs finish in reverse order (a slow and
 * a fast echo provider) are collected, and injected values consumed, in the
 * order of the program that runs — also under pushforward, pullback and
 * batch — however the dataflow executor completes them. */
#include "check.h"

static af_value_t* cstr(af_context_t* c, const char* s) {
  af_value_t* v = NULL;
  af_value_str(c, s, strlen(s), &v);
  return v;
}

/* checkpoint(lm_call(model, [user: q]), key "k", collection "c"). */
static af_error_t* ask_and_checkpoint(af_context_t* c, const af_value_t* q, const char* model,
                                      af_value_t** out) {
  af_value_t *role = cstr(c, "user"), *m = cstr(c, model), *msg = NULL, *msgs = NULL,
             *answer = NULL;
  const char* keys[] = {"role", "content"};
  size_t lens[] = {4, 7};
  const af_value_t* vals[2];
  af_error_t* e;
  vals[0] = role;
  vals[1] = q;
  e = af_value_dict(c, keys, lens, vals, 2, &msg);
  if (!e) e = af_value_list(c, (const af_value_t* const*)&msg, 1, &msgs);
  if (!e) e = af_lm_call(c, msgs, m, &answer);
  if (!e) e = af_checkpoint(c, answer, "k", 1, "c", 1, out);
  af_value_free(role);
  af_value_free(m);
  af_value_free(msg);
  af_value_free(msgs);
  af_value_free(answer);
  return e;
}

/* [checkpoint(slow answer), checkpoint(fast answer)]: independent; the
 * second finishes first. */
static af_error_t* slow_then_fast(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                                  af_value_t** out) {
  af_value_t* parts[2] = {NULL, NULL};
  af_error_t* e;
  (void)ud;
  (void)n;
  e = ask_and_checkpoint(c, in[0], "slow", &parts[0]);
  if (!e) e = ask_and_checkpoint(c, in[0], "fast", &parts[1]);
  if (!e) e = af_value_list(c, AS_ARGS(parts), 2, out);
  free_items(parts, 2);
  return e;
}

/* switch(model) { slow: ..., fast: ... }: batched over the model, each item
 * runs its own branch, the first item's the slow one. */
static af_error_t* branch_slow(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                               af_value_t** out) {
  (void)ud;
  (void)n;
  return ask_and_checkpoint(c, in[0], "slow", out);
}
static af_error_t* branch_fast(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                               af_value_t** out) {
  (void)ud;
  (void)n;
  return ask_and_checkpoint(c, in[0], "fast", out);
}
static af_error_t* by_model(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                            af_value_t** out) {
  af_ir_t* const* branches = (af_ir_t* const*)ud;
  const char* names[] = {"slow", "fast"};
  size_t lens[] = {4, 4};
  (void)n;
  return af_switch(c, in[1], names, lens, (const af_ir_t* const*)branches, 2, in, 1, out);
}

/* A loop of 3 passes whose body asks the fast model and checkpoints the
 * answer; cond is always true. */
static af_error_t* loop_body(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                             af_value_t** out) {
  (void)ud;
  (void)n;
  return ask_and_checkpoint(c, in[0], "fast", out);
}
static af_error_t* always(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                          af_value_t** out) {
  (void)ud;
  (void)n;
  return af_match(c, in[0], in[0], out);
}
static af_error_t* three_passes(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                                af_value_t** out) {
  af_ir_t* const* irs = (af_ir_t* const*)ud;
  (void)n;
  return af_while_loop(c, irs[0], irs[1], in[0], 3, out);
}

static void route_slow_and_fast(void) {
  af_provider_t *slow = NULL, *fast = NULL;
  const char* s = "{\"latency_ms\":150,\"name\":\"slow\"}";
  CHECK_OK(af_provider_echo_new(s, strlen(s), &slow));
  CHECK_OK(af_provider_echo_new(NULL, 0, &fast));
  CHECK_OK(af_context_route(ctx, "slow", 4, slow));
  CHECK_OK(af_context_route(ctx, "fast", 4, fast));
  af_provider_free(slow);
  af_provider_free(fast);
}

/* Calls ir on inputs_json inside a collect scope on "c" (and an inject scope
 * when queue_json is given); checks the output and what was collected. */
#define CHECK_ORDER(ir, inputs_json, queue_json, out_json, collected_json)                  \
  check_order_at((ir), (inputs_json), (queue_json), (out_json), (collected_json), __FILE__, \
                 __LINE__)
static void check_order_at(const af_ir_t* ir, const char* inputs_json, const char* queue_json,
                           const char* out_json, const char* collected_json, const char* file,
                           int line) {
  af_value_t* queue = queue_json ? mk_json(queue_json) : NULL;
  af_value_t* got = NULL;
  if (!ir) return;
  CHECK_OK(af_collect_push(ctx, "c", 1));
  if (queue) CHECK_OK(af_inject_push(ctx, "c", 1, queue));
  check_call_at(ir, inputs_json, out_json, file, line);
  if (queue) CHECK_OK(af_inject_pop(ctx));
  if (CHECK_OK(af_collect_pop(ctx, &got)))
    check_json_impl(got, collected_json, "collected", file, line);
  af_value_free(got);
  af_value_free(queue);
}

/* ---- cases ------------------------------------------------------------- */

static void independent_checkpoints_come_in_program_order(void) {
  af_ir_t* ir = TRACE(slow_then_fast, NULL, "[\"q\"]", NULL);
  route_slow_and_fast();
  CHECK_ORDER(ir, "[\"q\"]", NULL, "[\"slow|q\",\"fast|q\"]", "{\"k\":[\"slow|q\",\"fast|q\"]}");
  /* The first queued value goes to the first checkpoint in program order,
   * though the second one is ready long before it. */
  CHECK_ORDER(ir, "[\"q\"]", "{\"k\":[\"A\",\"B\"]}", "[\"A\",\"B\"]", "{\"k\":[\"A\",\"B\"]}");
  /* A queue shorter than the hits: the later checkpoint runs normally. */
  CHECK_ORDER(ir, "[\"q\"]", "{\"k\":[\"A\"]}", "[\"A\",\"fast|q\"]", "{\"k\":[\"A\",\"fast|q\"]}");
  af_ir_free(ir);
}

static void runs_come_in_the_order_they_started(void) {
  af_ir_t* ir = TRACE(slow_then_fast, NULL, "[\"q\"]", NULL);
  af_value_t* got = NULL;
  route_slow_and_fast();
  CHECK_OK(af_collect_push(ctx, "c", 1));
  CHECK_CALL(ir, "[\"1\"]", "[\"slow|1\",\"fast|1\"]");
  CHECK_CALL(ir, "[\"2\"]", "[\"slow|2\",\"fast|2\"]");
  if (CHECK_OK(af_collect_pop(ctx, &got)))
    CHECK_JSON(got, "{\"k\":[\"slow|1\",\"fast|1\",\"slow|2\",\"fast|2\"]}");
  af_value_free(got);
  af_ir_free(ir);
}

static void pushforward_hits_in_program_order(void) {
  af_ir_t* ir = TRACE(slow_then_fast, NULL, "[\"q\"]", NULL);
  af_ir_t* pf = NULL;
  route_slow_and_fast();
  if (ir) CHECK_OK(af_pushforward(ctx, ir, &pf));
  /* Each checkpoint's primal hit, then its tangent hit (the order the
   * transformed program holds them), whichever call finishes first. */
  CHECK_ORDER(pf, "[[\"q\"],[\"t\"]]", NULL, "[[\"slow|q\",\"fast|q\"],[\"slow|t\",\"fast|t\"]]",
              "{\"k\":[\"slow|q\",\"slow|t\",\"fast|q\",\"fast|t\"]}");
  CHECK_ORDER(pf, "[[\"q\"],[\"t\"]]", "{\"k\":[\"A\",\"B\",\"C\",\"D\"]}",
              "[[\"A\",\"C\"],[\"B\",\"D\"]]", "{\"k\":[\"A\",\"B\",\"C\",\"D\"]}");
  af_ir_free(pf);
  af_ir_free(ir);
}

static void pullback_hits_primals_then_the_backward_pass(void) {
  af_ir_t* ir = TRACE(slow_then_fast, NULL, "[\"q\"]", NULL);
  af_ir_t* pb = NULL;
  af_value_t* out = NULL;
  af_value_t* queue = mk_json("{\"k\":[\"A\",\"B\",\"C\",\"D\"]}");
  af_value_t* got = NULL;
  route_slow_and_fast();
  if (ir) CHECK_OK(af_pullback(ctx, ir, &pb));
  /* The cotangent checkpoints' inputs are given, so they are ready first;
   * they still come after the primal ones, in backward order (the last
   * checkpoint's feedback first). */
  if (pb) {
    CHECK_OK(af_collect_push(ctx, "c", 1));
    if (CHECK_OK(call_json(pb, "[[\"q\"],[\"ga\",\"gb\"]]", &out))) {
      char* s = json_of(out);
      if (s) CHECK_CONTAINS(s, "[[\"slow|q\",\"fast|q\"],");
      free(s);
    }
    af_value_free(out);
    out = NULL;
    if (CHECK_OK(af_collect_pop(ctx, &got)))
      CHECK_JSON(got, "{\"k\":[\"slow|q\",\"fast|q\",\"gb\",\"ga\"]}");
    af_value_free(got);
    got = NULL;
    /* Injected: A, B to the primal hits, C to gb's and D to ga's. */
    CHECK_OK(af_collect_push(ctx, "c", 1));
    CHECK_OK(af_inject_push(ctx, "c", 1, queue));
    if (CHECK_OK(call_json(pb, "[[\"q\"],[\"ga\",\"gb\"]]", &out))) {
      char* s = json_of(out);
      if (s) CHECK_CONTAINS(s, "[[\"A\",\"B\"],");
      free(s);
    }
    CHECK_OK(af_inject_pop(ctx));
    if (CHECK_OK(af_collect_pop(ctx, &got))) CHECK_JSON(got, "{\"k\":[\"A\",\"B\",\"C\",\"D\"]}");
  }
  af_value_free(got);
  af_value_free(out);
  af_value_free(queue);
  af_ir_free(pb);
  af_ir_free(ir);
}

static void batch_items_come_in_item_order(void) {
  af_ir_t* branches[2] = {TRACE(branch_slow, NULL, "[\"q\"]", NULL),
                          TRACE(branch_fast, NULL, "[\"q\"]", NULL)};
  af_ir_t* ir = NULL;
  af_ir_t* b = NULL;
  route_slow_and_fast();
  if (branches[0] && branches[1]) ir = TRACE(by_model, branches, "[\"q\",\"slow\"]", NULL);
  if (ir) CHECK_OK(af_batch(ctx, ir, NULL, &b));
  /* Item 0 takes the slow branch, item 1 the fast one: item 1's checkpoint
   * runs first. */
  CHECK_ORDER(b, "[[\"a\",\"b\",\"c\"],[\"slow\",\"fast\",\"fast\"]]", NULL,
              "[\"slow|a\",\"fast|b\",\"fast|c\"]", "{\"k\":[\"slow|a\",\"fast|b\",\"fast|c\"]}");
  CHECK_ORDER(b, "[[\"a\",\"b\",\"c\"],[\"slow\",\"fast\",\"fast\"]]", "{\"k\":[\"X\",\"Y\"]}",
              "[\"X\",\"Y\",\"fast|c\"]", "{\"k\":[\"X\",\"Y\",\"fast|c\"]}");
  af_ir_free(b);
  af_ir_free(ir);
  af_ir_free(branches[0]);
  af_ir_free(branches[1]);
}

static void loop_passes_come_in_iteration_order(void) {
  af_ir_t* irs[2] = {TRACE(always, NULL, "[\"q\"]", NULL), TRACE(loop_body, NULL, "[\"q\"]", NULL)};
  af_ir_t *ir = NULL, *pf = NULL;
  route_slow_and_fast();
  if (irs[0] && irs[1]) ir = TRACE(three_passes, irs, "[\"q\"]", NULL);
  CHECK_ORDER(ir, "[\"q\"]", NULL, "\"fast|fast|fast|q\"",
              "{\"k\":[\"fast|q\",\"fast|fast|q\",\"fast|fast|fast|q\"]}");
  if (ir) CHECK_OK(af_pushforward(ctx, ir, &pf));
  /* One loop carries primal and tangent: each pass hits the primal, then
   * the tangent checkpoint. Injecting follows that order (a phase-first
   * order could not: pass 0's tangent would wait for later passes). */
  CHECK_ORDER(pf, "[[\"q\"],[\"t\"]]", NULL, "[\"fast|fast|fast|q\",\"fast|fast|fast|t\"]",
              "{\"k\":[\"fast|q\",\"fast|t\",\"fast|fast|q\",\"fast|fast|t\",\"fast|fast|fast|q\","
              "\"fast|fast|fast|t\"]}");
  CHECK_ORDER(pf, "[[\"q\"],[\"t\"]]", "{\"k\":[\"A\",\"B\",\"C\",\"D\",\"E\",\"F\"]}",
              "[\"E\",\"F\"]", "{\"k\":[\"A\",\"B\",\"C\",\"D\",\"E\",\"F\"]}");
  af_ir_free(pf);
  af_ir_free(ir);
  af_ir_free(irs[0]);
  af_ir_free(irs[1]);
}

int main(int argc, char** argv) {
  static const struct test_case cases[] = {
      CASE(independent_checkpoints_come_in_program_order),
      CASE(runs_come_in_the_order_they_started),
      CASE(pushforward_hits_in_program_order),
      CASE(pullback_hits_primals_then_the_backward_pass),
      CASE(batch_items_come_in_item_order),
      CASE(loop_passes_come_in_iteration_order),
  };
  return run_cases(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
