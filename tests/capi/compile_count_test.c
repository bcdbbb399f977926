/* compile_count_test.c — a compiled program is the whole plan: loading a
 * saved program compiles nothing, and running it compiles only what its
 * first run needs (a scan unrolled for a count its data gives), never again
 * (af_context_stats' "compiles"). Covered: the triage example batched over
 * three tickets (a batched switch whose branches make LM calls, a sliced
 * form), and one program with a scan around an LM call, a batched switch
 * and a while_loop, all inside a batch. Also: control flow outside any
 * program compiles its sub-IRs once, through the plan cache. */
#include "lazy_common.h"

#include <unistd.h>

#include "../../examples/triage/triage_program.h"

static long compiles_of(const af_context_t* c) { return stat_of(c, "programs", "compiles"); }

/* branch(s) = lm("<tag>: s"), tag given as user data */
static af_error_t* branch_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                             af_value_t** out) {
  const char* tmpl = (const char*)ud;
  af_value_t* q = NULL;
  af_error_t* e = af_format(c, tmpl, strlen(tmpl), in, 1, NULL, &q);
  (void)n;
  if (!e && !(*out = ask(c, q))) e = af_error_new(AF_ERR_INTERNAL, "ask failed", 10);
  af_value_free(q);
  return e;
}

/* cond(s) = match(s, s): always true (the loop stops at max_iters) */
static af_error_t* cond_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                           af_value_t** out) {
  (void)ud;
  (void)n;
  return af_match(c, in[0], in[0], out);
}

/* body(s) = concat(s, "+") */
static af_error_t* plus_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                           af_value_t** out) {
  af_value_t* parts[2] = {af_value_clone(in[0]), NULL};
  af_error_t* e = af_value_str(c, "+", 1, &parts[1]);
  (void)ud;
  (void)n;
  if (!e) e = af_concat(c, AS_ARGS(parts), 2, out);
  free_items(parts, 2);
  return e;
}

/* step(carry, x) = [r, r] with r = lm("carry / x") */
static af_error_t* step_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                           af_value_t** out) {
  af_value_t *q = NULL, *r = NULL;
  const af_value_t* pair[2];
  af_error_t* e = af_format(c, "{} / {}", 7, in, 2, NULL, &q);
  (void)ud;
  (void)n;
  if (!e && !(r = ask(c, q))) e = af_error_new(AF_ERR_INTERNAL, "ask failed", 10);
  pair[0] = r;
  pair[1] = r;
  if (!e) e = af_value_list(c, pair, 2, out);
  af_value_free(q);
  af_value_free(r);
  return e;
}

struct mixed {
  af_ir_t *a, *b, *cond, *body, *step;
};

/* mixed(key, s, xs) = scan(step, while_loop(cond, body, switch(key, {a, b}, s), 2), xs) */
static af_error_t* mixed_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                            af_value_t** out) {
  struct mixed* m = (struct mixed*)ud;
  const char* names[2] = {"a", "b"};
  size_t lens[2] = {1, 1};
  const af_ir_t* branches[2];
  af_value_t *reply = NULL, *looped = NULL;
  af_error_t* e;
  (void)n;
  branches[0] = m->a;
  branches[1] = m->b;
  e = af_switch(c, in[0], names, lens, branches, 2, &in[1], 1, &reply);
  if (!e) e = af_while_loop(c, m->cond, m->body, reply, 2, &looped);
  if (!e) e = af_scan(c, m->step, looped, in[2], 0, out);
  af_value_free(reply);
  af_value_free(looped);
  return e;
}

/* Compiles ir on ctx, saves the program, loads it on a fresh context
 * (every model echoed) and calls it `runs` times on `inputs_json`.
 * Returns that context's compiles after the load, after the first run and
 * after the last; the last output's JSON goes to `last` (malloc'd). */
struct counts {
  long loaded, first, all;
  char* last;
};
static struct counts saved_runs(const af_ir_t* ir, const char* inputs_json, int runs) {
  struct counts k = {-1, -1, -1, NULL};
  char path[128];
  af_program_t *prog = NULL, *loaded = NULL;
  af_context_t* c = NULL;
  af_provider_t* echo = NULL;
  af_value_t* in[MAX_INPUTS];
  size_t n = split_list(inputs_json, in);
  int i;
  snprintf(path, sizeof path, "/tmp/af_compile_count_%ld.afg", (long)getpid());
  if (!CHECK_OK(af_compile(ctx, ir, &prog)) || !CHECK_OK(af_program_save(prog, path, strlen(path)))) goto done;
  if (!CHECK_OK(af_context_new(&c)) || !(echo = route_echo(c, "{}"))) goto done;
  if (!CHECK_OK(af_program_load(c, path, strlen(path), &loaded))) goto done;
  k.loaded = compiles_of(c);
  for (i = 0; i < runs; ++i) {
    af_value_t* out = NULL;
    if (!CHECK_OK(af_program_call(c, loaded, AS_ARGS(in), n, &out))) break;
    if (i == 0) k.first = compiles_of(c);
    if (i == runs - 1) k.last = json_of(out);
    af_value_free(out);
  }
  k.all = compiles_of(c);
done:
  unlink(path);
  free_items(in, n);
  af_program_free(prog);
  af_program_free(loaded);
  af_provider_free(echo);
  af_context_free(c);
  return k;
}

static void saved_triage_compiles_nothing_in_1000_runs(void) {
  af_ir_t* ir = NULL;
  struct counts k;
  if (!CHECK_OK(triage_batched_trace(ctx, &ir))) return;
  k = saved_runs(ir, "[[\"The app crashes on login\",\"Please refund my order\",\"Where is my invoice?\"]]",
                 1000);
  /* The plan holds the batched switch's branch forms' programs (compiled
   * with the program) and the sliced form's plan: nothing left to compile. */
  CHECK_INT_EQ(k.loaded, 0);
  CHECK_INT_EQ(k.first, 0);
  CHECK_INT_EQ(k.all, 0);
  CHECK(k.last && strstr(k.last, "\"team\""));
  free(k.last);
  af_ir_free(ir);
}

static void scan_switch_and_loop_in_a_batch_compile_only_in_the_first_run(void) {
  struct mixed m = {NULL, NULL, NULL, NULL, NULL};
  af_ir_t *ir = NULL, *batched = NULL;
  struct counts k = {-1, -1, -1, NULL};
  af_value_t* ex[3] = {NULL, NULL, NULL};
  af_value_t* lists = mk_json("[false, false, true]");
  af_trace_options_t o;
  af_provider_t* echo = route_echo(ctx, "{}");
  m.a = TRACE(branch_fn, "A: {}", "[\"s\"]", NULL);
  m.b = TRACE(branch_fn, "B: {}", "[\"s\"]", NULL);
  m.cond = TRACE(cond_fn, NULL, "[\"s\"]", NULL);
  m.body = TRACE(plus_fn, NULL, "[\"s\"]", NULL);
  m.step = TRACE(step_fn, NULL, "[\"c\",\"x\"]", NULL);
  if (!m.a || !m.b || !m.cond || !m.body || !m.step) goto done;
  ex[0] = mk_str("a");
  ex[1] = mk_str("s");
  ex[2] = mk_json("[\"x\"]");
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.list_mask = lists; /* xs: a list of any length */
  if (!CHECK_OK(af_trace_with(ctx, mixed_fn, &m, AS_ARGS(ex), 3, &o, &ir))) goto done;
  if (!CHECK_OK(af_batch(ctx, ir, NULL, &batched))) goto done;
  /* Three items, scans of 2, 1 and 2 items: the scan around an LM call
   * runs unrolled, compiled once per count (2 and 1) in the first run. */
  k = saved_runs(batched, "[[\"a\",\"b\",\"a\"],[\"x\",\"y\",\"z\"],[[\"1\",\"2\"],[\"3\"],[\"4\",\"5\"]]]", 1000);
  CHECK_INT_EQ(k.loaded, 0);
  CHECK_INT_EQ(k.first, 2);
  CHECK_INT_EQ(k.all, 2);
  CHECK_STR_EQ(k.last,
               "[[\"m|m|m|A: x++ / 1 / 2\",\"m|m|B: y++ / 3\",\"m|m|m|A: z++ / 4 / 5\"],"
               "[[\"m|m|A: x++ / 1\",\"m|m|m|A: x++ / 1 / 2\"],[\"m|m|B: y++ / 3\"],"
               "[\"m|m|A: z++ / 4\",\"m|m|m|A: z++ / 4 / 5\"]]]");
done:
  free(k.last);
  free_items(ex, 3);
  af_value_free(lists);
  af_ir_free(batched);
  af_ir_free(ir);
  af_ir_free(m.a);
  af_ir_free(m.b);
  af_ir_free(m.cond);
  af_ir_free(m.body);
  af_ir_free(m.step);
  af_provider_free(echo);
}

/* An eager while_loop (a context that is not lazy) runs its cond and body
 * once per pass: they are compiled once, through the plan cache. */
static void eager_control_flow_compiles_its_sub_irs_once(void) {
  af_ir_t* cond = TRACE(cond_fn, NULL, "[\"s\"]", NULL);
  af_ir_t* body = TRACE(plus_fn, NULL, "[\"s\"]", NULL);
  af_value_t *init = str_in(ctx, "s"), *out = NULL;
  int i;
  if (!cond || !body || !init) goto done;
  for (i = 0; i < 3; ++i) {
    if (CHECK_OK(af_while_loop(ctx, cond, body, init, 50, &out)))
      CHECK_JSON(out, "\"s++++++++++++++++++++++++++++++++++++++++++++++++++\"");
    af_value_free(out);
    out = NULL;
  }
  CHECK_INT_EQ(compiles_of(ctx), 2);
  /* 50 passes of each (max_iters ends the loop before a 51st cond). */
  CHECK_INT_EQ(stat_of(ctx, "plan_cache", "hits"), 3 * 100 - 2);
done:
  af_value_free(init);
  af_ir_free(cond);
  af_ir_free(body);
}

int main(int argc, char** argv) {
  static const struct test_case cases[] = {
      CASE(saved_triage_compiles_nothing_in_1000_runs),
      CASE(scan_switch_and_loop_in_a_batch_compile_only_in_the_first_run),
      CASE(eager_control_flow_compiles_its_sub_irs_once),
  };
  return run_cases(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
