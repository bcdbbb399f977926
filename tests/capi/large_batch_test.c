/* Large batches (docs/SEMANTICS.md §4 batch, "Large batches"): a program
 * af_batch made, run on more items than a slice holds, runs in slices whose
 * LM stages overlap, and returns what the run as written returns, through
 * af_program_call, af_program_call_async and a saved graph; a failing item
 * is named by its place in the whole batch. */
#include "check.h"
#include "lm_helpers.h"

#define N_ITEMS 2500 /* three slices of about 1 024 */

/* Routes pattern to a new echo provider (the context keeps it). */
static void route_echo(const char* pattern) {
  af_provider_t* echo = echo_with(NULL);
  if (echo) route(pattern, echo);
  af_provider_free(echo);
}

/* The equations a run's progress counted. */
static void count_total(void* ud, uint64_t done, uint64_t total) {
  (void)done;
  *(uint64_t*)ud = total;
}

/* (q, model) -> two LM stages: lm_call([user: lm_call([user: "Q: " + q],
 * model)], model). */
static af_error_t* ask_formatted(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                                 af_value_t** out) {
  af_value_t *prompt = NULL, *msgs = NULL, *draft = NULL, *msgs2 = NULL;
  af_error_t* e = af_format(c, "Q: {}", 5, in, 1, NULL, &prompt);
  (void)ud;
  (void)n;
  if (!e) {
    msgs = user_turn(c, prompt);
    e = af_lm_call(c, msgs, in[1], &draft);
  }
  if (!e) {
    msgs2 = user_turn(c, draft);
    e = af_lm_call(c, msgs2, in[1], out);
  }
  af_value_free(prompt);
  af_value_free(msgs);
  af_value_free(draft);
  af_value_free(msgs2);
  return e;
}

/* af_batch of ask_formatted, batched as in_axes says. */
static af_ir_t* batched_ask(const char* in_axes) {
  af_ir_t *one = NULL, *b = NULL;
  af_value_t* axes = mk_json(in_axes);
  if (CHECK_OK(trace_json(ask_formatted, NULL, "[\"q\", \"m\"]", NULL, &one))) CHECK_OK(af_batch(ctx, one, axes, &b));
  af_value_free(axes);
  af_ir_free(one);
  return b;
}

/* ["<prefix>0", "<prefix>1", ...] (n items). */
static af_value_t* items(const char* prefix, size_t n) {
  af_value_t** v = (af_value_t**)calloc(n, sizeof *v);
  af_value_t* list = NULL;
  size_t i;
  char buf[64];
  for (i = 0; i < n; i++) {
    snprintf(buf, sizeof buf, "%s%zu", prefix, i);
    v[i] = mk_str(buf);
  }
  CHECK_OK(af_value_list(ctx, AS_ARGS(v), n, &list));
  for (i = 0; i < n; i++) af_value_free(v[i]);
  free(v);
  return list;
}

/* Runs p on (qs, model) with `flags`; its output JSON (owned) and the
 * equations its progress counted. */
static char* run_counted(const af_program_t* p, const af_value_t* qs, const af_value_t* model, uint32_t flags,
                         uint64_t* total) {
  const af_value_t* in[2];
  af_run_options_t o;
  af_value_t* out = NULL;
  char* json = NULL;
  in[0] = qs;
  in[1] = model;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.flags = flags;
  o.progress = count_total;
  o.progress_user_data = total;
  if (CHECK_OK(af_program_call_with(ctx, p, in, 2, &o, &out))) json = json_of(out);
  af_value_free(out);
  return json;
}

static void a_large_batch_runs_in_slices_with_the_result_as_written(void) {
  af_ir_t* b = batched_ask("[true, false]");
  af_program_t* p = NULL;
  af_value_t *qs = items("q", N_ITEMS), *few = items("q", 10), *model = mk_str("m");
  uint64_t sliced_total = 0, whole_total = 0, few_total = 0;
  char *sliced = NULL, *whole = NULL, *few_out = NULL, *text = NULL;
  route_echo("*");
  if (!b || !CHECK_OK(af_compile(ctx, b, &p))) goto done;
  text = ir_text(b);
  if (text) CHECK_CONTAINS(text, ") @slices=1024 {"); /* batch's mark */
  sliced = run_counted(p, qs, model, 0, &sliced_total);
  /* keep-going runs the program as written (what does not depend on a
   * failure must come back): the reference. */
  whole = run_counted(p, qs, model, AF_RUN_KEEP_GOING, &whole_total);
  few_out = run_counted(p, few, model, 0, &few_total);
  if (sliced && whole) {
    CHECK_STR_EQ(sliced, whole);
    CHECK_CONTAINS(sliced, "\"m|m|Q: q0\",\"m|m|Q: q1\",");
    CHECK_CONTAINS(sliced, "\"m|m|Q: q1023\",\"m|m|Q: q1024\",\"m|m|Q: q1025\",");
    CHECK_CONTAINS(sliced, "\"m|m|Q: q2499\"]");
  }
  /* batch_check and the pipeline, against batch_check, format and the calls. */
  CHECK_INT_EQ(sliced_total, 2);
  CHECK(whole_total > sliced_total);
  CHECK_INT_EQ(few_total, whole_total); /* ten items: one slice, as written */
  {
    /* The same through the scheduler's workers. */
    af_future_t* f = NULL;
    af_value_t* out = NULL;
    const af_value_t* in[2];
    in[0] = qs;
    in[1] = model;
    if (CHECK_OK(af_program_call_async(ctx, p, in, 2, &f)) && CHECK_OK(af_future_wait(f, &out)) && whole) {
      char* async = json_of(out);
      if (async) CHECK_STR_EQ(async, whole);
      free(async);
    }
    af_value_free(out);
    af_future_free(f);
  }
done:
  free(sliced);
  free(whole);
  free(few_out);
  free(text);
  af_value_free(qs);
  af_value_free(few);
  af_value_free(model);
  af_program_free(p);
  af_ir_free(b);
}

static void a_saved_batched_graph_runs_in_slices(void) {
  af_ir_t *b = batched_ask("[true, false]"), *loaded = NULL;
  af_program_t* p = NULL;
  af_value_t *qs = items("q", N_ITEMS), *model = mk_str("m");
  uint64_t total = 0;
  char path[] = "/tmp/af_large_batch_XXXXXX";
  char* out = NULL;
  int fd = mkstemp(path);
  route_echo("*");
  if (fd >= 0) close(fd);
  if (!b || fd < 0 || !CHECK_OK(af_ir_save(b, path, strlen(path))) ||
      !CHECK_OK(af_ir_load(ctx, path, strlen(path), &loaded)) || !CHECK_OK(af_compile(ctx, loaded, &p)))
    goto done;
  out = run_counted(p, qs, model, 0, &total);
  CHECK_INT_EQ(total, 2);
  if (out) CHECK_CONTAINS(out, "\"m|m|Q: q1024\",");
done:
  if (fd >= 0) unlink(path);
  free(out);
  af_value_free(qs);
  af_value_free(model);
  af_program_free(p);
  af_ir_free(loaded);
  af_ir_free(b);
}

static void a_failing_item_is_named_by_its_place_in_the_whole_batch(void) {
  af_ir_t* b = batched_ask("[true, true]");
  af_program_t* p = NULL;
  af_value_t *qs = items("q", N_ITEMS), *models = NULL, *out = NULL, *bad = NULL;
  af_value_t** m = (af_value_t**)calloc(N_ITEMS, sizeof *m);
  const af_value_t* in[2];
  af_run_options_t o;
  size_t i;
  for (i = 0; i < N_ITEMS; i++) m[i] = mk_str(i == 1500 ? "nowhere" : "m");
  CHECK_OK(af_value_list(ctx, AS_ARGS(m), N_ITEMS, &models));
  route_echo("m"); /* "nowhere" has no route */
  if (!b || !CHECK_OK(af_compile(ctx, b, &p))) goto done;
  in[0] = qs;
  in[1] = models;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.flags = AF_RUN_ITEM_ERRORS;
  if (CHECK_OK(af_program_call_with(ctx, p, in, 2, &o, &out)) && CHECK_OK(af_value_index(out, 1500, &bad))) {
    char* err = json_of(bad);
    if (err) {
      CHECK_CONTAINS(err, "\"error\"");
      CHECK_CONTAINS(err, "(batch item 1500)");
      CHECK_CONTAINS(err, "nowhere");
    }
    free(err);
  }
  /* Without per-item errors the run fails, naming the model. */
  af_value_free(out);
  out = NULL;
  CHECK_ERR(af_program_call(ctx, p, in, 2, &out), AF_ERR_NOT_FOUND, "nowhere");
done:
  for (i = 0; i < N_ITEMS; i++) af_value_free(m[i]);
  free(m);
  af_value_free(bad);
  af_value_free(out);
  af_value_free(qs);
  af_value_free(models);
  af_program_free(p);
  af_ir_free(b);
}

static void a_sliced_run_times_out_and_cancels_its_slices(void) {
  af_ir_t* b = batched_ask("[true, false]");
  af_program_t* p = NULL;
  af_value_t *qs = items("q", N_ITEMS), *model = mk_str("m"), *out = NULL;
  af_provider_t* slow = echo_with("{\"latency_ms\": 5000}");
  const af_value_t* in[2];
  af_run_options_t o;
  double t0;
  if (slow) route("*", slow);
  if (!b || !slow || !CHECK_OK(af_compile(ctx, b, &p))) goto done;
  in[0] = qs;
  in[1] = model;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.timeout_ms = 100;
  t0 = now_ms();
  CHECK_ERR(af_program_call_with(ctx, p, in, 2, &o, &out), AF_ERR_TIMEOUT, "");
  CHECK(now_ms() - t0 < 2000);
  /* Every slice's requests were cancelled, none is left in flight. */
  {
    int waited = 0;
    while (stat_field(slow, "in_flight") != 0 && waited++ < 200) sleep_ms(10);
    CHECK_INT_EQ(stat_field(slow, "in_flight"), 0);
    CHECK(stat_field(slow, "submitted") > 0);
  }
done:
  af_value_free(out);
  af_value_free(qs);
  af_value_free(model);
  af_program_free(p);
  af_ir_free(b);
  af_provider_free(slow);
}

int main(int argc, char** argv) {
  static const struct test_case cases[] = {
      CASE(a_large_batch_runs_in_slices_with_the_result_as_written),
      CASE(a_saved_batched_graph_runs_in_slices),
      CASE(a_failing_item_is_named_by_its_place_in_the_whole_batch),
      CASE(a_sliced_run_times_out_and_cancels_its_slices),
  };
  return run_cases(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
