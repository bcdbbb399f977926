/* The integration suite against a real model: SmolLM2-135M-Instruct served
 * by llama-cpp-python (tools/local_model.sh), reached through the openai
 * provider at AF_LOCAL_MODEL_URL. The model is tiny: the checks are shapes,
 * kinds, bounds and schema validity, never content. Each case prints how
 * long its calls took. Run by tests/local_model/run.sh.
 *
 * Slow is not wrong: a loaded machine may run the model far slower than
 * usual, and that must not fail the suite, while libaf being wrong must.
 * Each case gets CASE_SECONDS, and none past the suite's deadline
 * (AF_LOCAL_MODEL_DEADLINE, epoch seconds, set by run.sh). Then a watchdog
 * decides: requests of libaf in flight at the model while the model server
 * is busy computing (tools/local_model.sh busy) is slowness, and the case is
 * skipped; anything else (nothing in flight, or libaf waiting on an idle
 * server) is a hang of libaf's, and the case fails. A case that would start
 * past the deadline is skipped. */
#define CHECK_CASE_SECONDS 900 /* the last resort; the watchdog decides first */
#include "check.h"
#include "lm_helpers.h"

#include <pthread.h>

#include "../../examples/triage/triage_program.h"

/* ---- slow or hung: the watchdog ------------------------------------------ */

#define CASE_SECONDS 300

static af_provider_t* g_watched; /* the case's provider, once made */

/* Whether the model server is computing (its CPU time grows). */
static int model_busy(void) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "bash '%s/../tools/local_model.sh' busy", AF_TESTS_DIR);
  fflush(stdout);
  return system(cmd) == 0;
}

static void* watchdog(void* arg) {
  long in_flight = 0;
  int i;
  sleep_ms(*(const long*)arg * 1000L);
  /* Sampled for up to 2 s: the moment between two calls of a case has none. */
  for (i = 0; i < 20 && in_flight <= 0 && g_watched; i++) {
    in_flight = stat_field(g_watched, "in_flight");
    if (in_flight <= 0) sleep_ms(100);
  }
  if (in_flight > 0 && model_busy()) {
    char why[160];
    snprintf(why, sizeof why,
             "slow, not wrong: %ld request(s) still at the model, which is computing, after "
             "%ld s",
             in_flight, *(const long*)arg);
    check_skip(why);
  }
  printf("  HUNG: after %ld s libaf waits with %ld request(s) in flight at %s model server\n",
         *(const long*)arg, in_flight, in_flight > 0 ? "an idle" : "the");
  fflush(stdout);
  _exit(1);
  return NULL;
}

/* Every case starts here: skipped past the suite's deadline, else watched. */
static void case_start(void) {
  static long seconds;
  const char* d = getenv("AF_LOCAL_MODEL_DEADLINE");
  long left = d && *d ? atol(d) - (long)time(NULL) : CASE_SECONDS;
  pthread_t t;
  if (left <= 0) check_skip("slow, not wrong: the suite's time budget is spent");
  seconds = left < CASE_SECONDS ? left : CASE_SECONDS;
  if (pthread_create(&t, NULL, watchdog, &seconds) == 0) pthread_detach(t);
}

/* ---- the provider ------------------------------------------------------ */

/* The openai provider for the local server: json_object structured output
 * (what llama-cpp-python's server takes), plus the options in extra. Its
 * timeout is past the watchdog's: slowness is judged there. */
static af_provider_t* local_model(const char* extra) {
  const char* url = getenv("AF_LOCAL_MODEL_URL");
  char opts[1024];
  af_provider_t* p = NULL;
  case_start();
  if (!url || !*url) {
    check_fail(__FILE__, __LINE__,
               "AF_LOCAL_MODEL_URL is not set: run through tools/local_model.sh run");
    return NULL;
  }
  snprintf(opts, sizeof opts,
           "{\"base_url\":\"%s\",\"structured_output\":\"json_object\",\"timeout_ms\":600000,\"max_"
           "retries\":1%s%s}",
           url, extra ? "," : "", extra ? extra : "");
  if (!CHECK_OK(af_provider_openai_new(opts, strlen(opts), &p))) return NULL;
  route("*", p);
  g_watched = af_provider_clone(p); /* never freed: the watchdog may read it to the end */
  return p;
}

static void report(const char* what, double ms, long calls) {
  printf("  %s: %ld call(s) in %.0f ms (%.0f ms per call)\n", what, calls, ms,
         calls ? ms / (double)calls : 0.0);
}

/* ---- programs ------------------------------------------------------------ */

static af_ir_t* trace_ask(const char* schema, const char* params) {
  af_ir_t* ir;
  g_params = params;
  ir = TRACE(lm_ask, (void*)schema, "[\"q\", \"m\"]", NULL);
  g_params = NULL;
  return ir;
}

static int64_t int_at(const af_value_t* v, const char* key) {
  af_value_t* x = NULL;
  int64_t n = INT64_MIN;
  if (CHECK_OK(af_value_key(v, key, strlen(key), &x))) CHECK_OK(af_value_get_int(x, &n));
  af_value_free(x);
  return n;
}

static int kind_at(const af_value_t* v, const char* key) {
  af_value_t* x = NULL;
  int k = -1;
  if (CHECK_OK(af_value_key(v, key, strlen(key), &x))) k = (int)af_value_kind(x);
  af_value_free(x);
  return k;
}

/* The code points of the str at key (-1 if it is not a str). */
static long str_len_at(const af_value_t* v, const char* key) {
  af_value_t* x = NULL;
  const char* s = NULL;
  size_t len = 0, i;
  long n = -1;
  if (CHECK_OK(af_value_key(v, key, strlen(key), &x)) && CHECK_OK(af_value_get_str(x, &s, &len)))
    for (n = 0, i = 0; i < len; i++) n += ((unsigned char)s[i] & 0xC0) != 0x80;
  af_value_free(x);
  return n;
}

/* ---- cases ---------------------------------------------------------------- */

/* A plain call answers text; its usage comes back; max_tokens reaches the
 * model (the reply's completion tokens stay near it). */
static void lm_call_answers_text(void) {
  af_provider_t* p = local_model(NULL);
  af_ir_t* ir = trace_ask(NULL, "{\"max_tokens\": 12}");
  af_value_t* out = NULL;
  double t0;
  if (!p || !ir) goto done;
  t0 = now_ms();
  if (CHECK_OK(call_json(ir, "[\"Say hello to a new colleague.\", \"any-model\"]", &out)))
    CHECK_INT_EQ(af_value_kind(out), AF_KIND_STR);
  report("lm_call, max_tokens 12", now_ms() - t0, 1);
  CHECK(stat_field(p, "prompt_tokens") > 0);
  CHECK(stat_field(p, "completion_tokens") >= 1);
  /* llama-cpp-python's usage may count a little past max_tokens (a reply cut
   * in a multi-token character); unbounded, this reply runs far longer. */
  CHECK(stat_field(p, "completion_tokens") <= 24);
done:
  af_value_free(out);
  af_ir_free(ir);
  af_provider_free(p);
}

/* Structured output of every kind: an enum, an int range, a bool, a str
 * with a maximum length; each within its bounds. */
static void schema_call_returns_every_kind(void) {
  const char* schema =
      "{\"team\": {\"type\": \"enum\", \"values\": [\"billing\", \"technical\"]},"
      " \"urgency\": {\"type\": \"int\", \"min\": 1, \"max\": 5, \"doc\": \"5 = service down\"},"
      " \"refund\": {\"type\": \"bool\", \"doc\": \"the customer asks for money back\"},"
      " \"summary\": {\"type\": \"str\", \"max\": 40}}";
  af_provider_t* p = local_model("\"schema_retries\":2");
  af_ir_t* ir = trace_ask(schema, "{\"max_tokens\": 96}");
  af_value_t* out = NULL;
  double t0;
  if (!p || !ir) goto done;
  t0 = now_ms();
  if (CHECK_OK(call_json(
          ir,
          "[\"Classify this support ticket: I was charged twice for my March invoice.\", \"m\"]",
          &out))) {
    af_value_t* team = NULL;
    const char* s = NULL;
    size_t len = 0;
    if (CHECK_OK(af_value_key(out, "team", 4, &team)) && CHECK_OK(af_value_get_str(team, &s, &len)))
      CHECK((len == 7 && !memcmp(s, "billing", 7)) || (len == 9 && !memcmp(s, "technical", 9)));
    af_value_free(team);
    CHECK(int_at(out, "urgency") >= 1 && int_at(out, "urgency") <= 5);
    CHECK_INT_EQ(kind_at(out, "refund"), AF_KIND_BOOL);
    CHECK(str_len_at(out, "summary") >= 0 && str_len_at(out, "summary") <= 40);
  }
  report("lm_schema_call", now_ms() - t0, stat_field(p, "finished"));
done:
  af_value_free(out);
  af_ir_free(ir);
  af_provider_free(p);
}

/* A batch of 8 prompts: all 8 requests are in flight together (the server
 * queues them), 8 answers come back. */
static void a_batch_of_eight_is_in_flight_together(void) {
  af_provider_t* p = local_model(NULL);
  af_ir_t *ir = trace_ask(NULL, "{\"max_tokens\": 8}"), *batched = NULL;
  af_value_t* axes = mk_json("[true, false]");
  af_value_t* out = NULL;
  double t0;
  if (!p || !ir || !CHECK_OK(af_batch(ctx, ir, axes, &batched))) goto done;
  t0 = now_ms();
  if (CHECK_OK(call_json(batched,
                         "[[\"Name a color.\", \"Name a fruit.\", \"Name a city.\", \"Name a "
                         "tree.\", \"Name a bird.\","
                         " \"Name a tool.\", \"Name a sport.\", \"Name a planet.\"], \"m\"]",
                         &out))) {
    size_t n = 0, i;
    CHECK_OK(af_value_len(out, &n));
    CHECK_INT_EQ(n, 8);
    for (i = 0; i < n; i++) {
      af_value_t* x = NULL;
      if (CHECK_OK(af_value_index(out, i, &x))) CHECK_INT_EQ(af_value_kind(x), AF_KIND_STR);
      af_value_free(x);
    }
  }
  report("a batch of 8, max_tokens 8", now_ms() - t0, 8);
  CHECK_INT_EQ(stat_field(p, "peak_in_flight"), 8);
done:
  af_value_free(out);
  af_value_free(axes);
  af_ir_free(batched);
  af_ir_free(ir);
  af_provider_free(p);
}

/* The triage program: a switch routed on the model's own classification;
 * the branch that ran is the one the team names (its drafter's model is in
 * the profile, the other's is not). */
static void a_switch_routes_on_a_real_answer(void) {
  af_provider_t* p = local_model("\"schema_retries\":2,\"extra\":{\"max_tokens\":64}");
  af_ir_t* ir = NULL;
  af_program_t* prog = NULL;
  af_future_t* f = NULL;
  af_value_t *in = NULL, *out = NULL, *review = NULL;
  af_run_options_t o;
  double t0;
  if (!p || !CHECK_OK(triage_trace(ctx, &ir)) || !CHECK_OK(af_compile(ctx, ir, &prog))) goto done;
  in = mk_str("The app crashes when I upload a photo.");
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.flags = AF_RUN_PROFILE;
  t0 = now_ms();
  if (CHECK_OK(af_program_call_async_with(ctx, prog, (const af_value_t* const*)&in, 1, &o, &f)) &&
      CHECK_OK(af_future_wait(f, &out))) {
    af_value_t* team = NULL;
    af_bytes_t prof = {NULL, 0};
    const char* s = NULL;
    size_t len = 0;
    int billing = 0;
    if (CHECK_OK(af_value_key(out, "team", 4, &team)) && CHECK_OK(af_value_get_str(team, &s, &len)))
      billing = len == 7 && !memcmp(s, "billing", 7);
    af_value_free(team);
    CHECK(int_at(out, "urgency") >= 1 && int_at(out, "urgency") <= 5);
    CHECK_INT_EQ(kind_at(out, "reply"), AF_KIND_STR);
    if (CHECK_OK(af_value_key(out, "review", 6, &review))) {
      CHECK_INT_EQ(kind_at(review, "ok"), AF_KIND_BOOL);
      CHECK(str_len_at(review, "note") >= 0 && str_len_at(review, "note") <= 80);
    }
    if (CHECK_OK(af_future_profile(f, &prof))) {
      const char* j = (const char*)prof.data;
      CHECK(strstr(j, billing ? "billing-drafter" : "tech-drafter") != NULL);
      CHECK(strstr(j, billing ? "tech-drafter" : "billing-drafter") == NULL);
    }
    af_bytes_free(&prof);
  }
  report("triage (classify, draft, review)", now_ms() - t0, stat_field(p, "finished"));
done:
  af_value_free(review);
  af_value_free(out);
  af_value_free(in);
  af_future_free(f);
  af_program_free(prog);
  af_ir_free(ir);
  af_provider_free(p);
}

/* pullback: the backward pass's feedback call is an ordinary lm_call that
 * reaches the model; the input's cotangent is its advice (a str). */
static void pullback_feedback_reaches_the_model(void) {
  af_provider_t* p = local_model("\"extra\":{\"max_tokens\":32}");
  af_ir_t *ir = trace_ask(NULL, NULL), *pulled = NULL;
  af_value_t* out = NULL;
  double t0;
  if (!p || !ir || !CHECK_OK(af_pullback(ctx, ir, &pulled))) goto done;
  t0 = now_ms();
  if (CHECK_OK(call_json(
          pulled, "[[\"Describe the sea.\", \"m\"], \"Too long; use one sentence.\"]", &out))) {
    af_value_t *fwd = NULL, *cts = NULL, *cq = NULL;
    CHECK_OK(af_value_index(out, 0, &fwd));
    CHECK_INT_EQ(af_value_kind(fwd), AF_KIND_STR);
    CHECK_OK(af_value_index(out, 1, &cts));
    if (cts && CHECK_OK(af_value_index(cts, 0, &cq))) CHECK_INT_EQ(af_value_kind(cq), AF_KIND_STR);
    af_value_free(fwd);
    af_value_free(cts);
    af_value_free(cq);
  }
  report("pullback (forward + feedback)", now_ms() - t0, 2);
  CHECK_INT_EQ(stat_field(p, "finished"), 2);
done:
  af_value_free(out);
  af_ir_free(pulled);
  af_ir_free(ir);
  af_provider_free(p);
}

/* Streaming: the pieces make up the reply, and with greedy decoding the
 * streamed run's result is the plain run's. */
struct pieces {
  char text[4096];
  size_t len;
  int n, resets;
  af_cancel_t* cancel_at_first;
};

static void on_piece(void* ud, uint32_t eqn, uint64_t item, const char* text, size_t len) {
  struct pieces* p = (struct pieces*)ud;
  (void)eqn;
  (void)item;
  if (!text) {
    p->len = 0;
    p->resets++;
    return;
  }
  if (p->len + len < sizeof p->text) {
    memcpy(p->text + p->len, text, len);
    p->len += len;
    p->text[p->len] = 0;
  }
  p->n++;
  if (p->cancel_at_first) af_cancel_trigger(p->cancel_at_first);
}

static af_error_t* run_with(const af_ir_t* ir, const char* inputs_json, const af_run_options_t* o,
                            af_value_t** out) {
  af_program_t* prog = NULL;
  af_value_t* in[2] = {NULL, NULL};
  af_value_t* list = mk_json(inputs_json);
  af_error_t* e = af_compile(ctx, ir, &prog);
  if (!e) e = af_value_index(list, 0, &in[0]);
  if (!e) e = af_value_index(list, 1, &in[1]);
  if (!e) e = af_program_call_with(ctx, prog, (const af_value_t* const*)in, 2, o, out);
  af_value_free(in[0]);
  af_value_free(in[1]);
  af_value_free(list);
  af_program_free(prog);
  return e;
}

static void a_streamed_run_equals_a_plain_one(void) {
  af_provider_t* p = local_model(NULL);
  af_ir_t* ir = trace_ask(NULL, "{\"max_tokens\": 24, \"temperature\": 0, \"seed\": 1}");
  af_value_t *plain = NULL, *streamed = NULL;
  struct pieces got;
  af_run_options_t o;
  const char* in = "[\"Write one sentence about rivers.\", \"m\"]";
  double t0;
  memset(&got, 0, sizeof got);
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.stream = on_piece;
  o.stream_user_data = &got;
  if (!p || !ir) goto done;
  t0 = now_ms();
  CHECK_OK(run_with(ir, in, NULL, &plain));
  report("plain, max_tokens 24", now_ms() - t0, 1);
  t0 = now_ms();
  if (CHECK_OK(run_with(ir, in, &o, &streamed))) {
    char a[4096], b[4096];
    CHECK_STR_EQ(str_of(streamed, b), str_of(plain, a));
    CHECK_STR_EQ(got.text, b);
    CHECK(got.n >= 2); /* it came in pieces */
  }
  report("streamed, max_tokens 24", now_ms() - t0, 1);
done:
  af_value_free(plain);
  af_value_free(streamed);
  af_ir_free(ir);
  af_provider_free(p);
}

/* Cancelled at its first piece, a long generation ends at once (CANCELLED)
 * and its request leaves the provider. */
static void cancel_stops_a_generation(void) {
  af_provider_t* p = local_model(NULL);
  af_ir_t* ir = trace_ask(NULL, "{\"max_tokens\": 2000}");
  af_value_t* out = NULL;
  af_cancel_t* cancel = NULL;
  struct pieces got;
  af_run_options_t o;
  double t0;
  memset(&got, 0, sizeof got);
  if (!p || !ir || !CHECK_OK(af_cancel_new(&cancel))) goto done;
  got.cancel_at_first = cancel;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.stream = on_piece;
  o.stream_user_data = &got;
  o.cancel = cancel;
  t0 = now_ms();
  CHECK_ERR(
      run_with(ir, "[\"Write a very long story about a lighthouse keeper.\", \"m\"]", &o, &out),
      AF_ERR_CANCELLED, "");
  CHECK(out == NULL);
  CHECK(got.n >= 1);
  report("cancelled at the first piece", now_ms() - t0, 1);
  t0 = now_ms();
  while (stat_field(p, "in_flight") > 0 && now_ms() - t0 < 5000) sleep_ms(10);
  CHECK_INT_EQ(stat_field(p, "in_flight"), 0);
done:
  af_cancel_free(cancel);
  af_value_free(out);
  af_ir_free(ir);
  af_provider_free(p);
}

/* A reply out of the schema's bounds goes back to the model as a
 * correction turn, which the server takes (an assistant turn mid-chat): the
 * grammar lets any integer through for a range too wide to enumerate, and
 * the prompt asks for one out of range. The end is a valid reply or the
 * SCHEMA error after the re-asks; either way the re-asks reached the model. */
static void reasks_reach_the_model(void) {
  af_provider_t* p = local_model("\"schema_retries\":2");
  af_ir_t* ir = trace_ask("{\"percent\": {\"type\": \"int\", \"min\": 0, \"max\": 100}}",
                          "{\"max_tokens\": 24, \"temperature\": 0, \"seed\": 3}");
  af_value_t* out = NULL;
  af_error_t* e;
  double t0;
  if (!p || !ir) goto done;
  t0 = now_ms();
  e = call_json(ir, "[\"Reply with exactly this JSON: {\\\"percent\\\": 1000}\", \"m\"]", &out);
  if (e) {
    CHECK_ERR(e, AF_ERR_SCHEMA, "$.percent", "after 2 re-asks");
  } else {
    CHECK(int_at(out, "percent") >= 0 && int_at(out, "percent") <= 100);
  }
  report("a schema call with re-asks", now_ms() - t0, stat_field(p, "finished"));
  CHECK(stat_field(p, "finished") >= 2); /* the first reply was out of bounds */
done:
  af_value_free(out);
  af_ir_free(ir);
  af_provider_free(p);
}

/* Tool calling on the real server (llama-cpp-python's default chat handler
 * makes a tool call when the call names the tool; "auto" answers text):
 * a forced "add" call comes back as a call with arguments its schema
 * accepts (libaf checked them), and with the result appended, the next
 * step (tool_choice "none") answers text. Shapes only. */
static void a_tool_call_and_its_answer(void) {
  const char* tools =
      "[{\"name\":\"add\",\"description\":\"Adds two integers.\",\"parameters\":{\"a\":{\"type\":\"int\"},"
      "\"b\":{\"type\":\"int\"}}}]";
  const char* msgs = "[{\"role\":\"user\",\"content\":\"What is 17 + 25? Use the add tool.\"}]";
  af_provider_t* p = local_model("\"schema_retries\":2");
  af_value_t *m = mk_json(msgs), *t = mk_json(tools), *model = mk_str("m"), *h0 = mk_str(""), *out = NULL;
  af_value_t *forced = mk_json("{\"tool_choice\":\"add\",\"max_tokens\":48}"),
             *none = mk_json("{\"tool_choice\":\"none\",\"max_tokens\":48}");
  af_value_t *names = NULL, *args = NULL, *arg = NULL, *parsed = NULL, *turn = NULL, *results = NULL, *h1 = NULL,
             *answer = NULL, *called = NULL;
  size_t n = 0;
  const char* a = NULL;
  double t0 = now_ms();
  if (!p || !m || !t) goto done;
  if (!CHECK_OK(af_lm_tool_call(ctx, m, h0, model, t, forced, &out))) goto done;
  CHECK_OK(af_value_key(out, "names", 5, &names));
  CHECK_JSON(names, "[\"add\"]");
  if (CHECK_OK(af_value_key(out, "arguments", 9, &args)) && CHECK_OK(af_value_index(args, 0, &arg)) &&
      CHECK_OK(af_value_get_str(arg, &a, &n)) && CHECK_OK(af_value_from_json(ctx, a, n, &parsed))) {
    CHECK_INT_EQ(kind_at(parsed, "a"), AF_KIND_INT);
    CHECK_INT_EQ(kind_at(parsed, "b"), AF_KIND_INT);
    printf("  the model called add(%.*s)\n", (int)n, a);
  }
  results = mk_json("[\"42\"]");
  if (!CHECK_OK(af_value_key(out, "turn", 4, &turn)) || !CHECK_OK(af_tool_results(ctx, h0, turn, results, &h1)))
    goto done;
  if (CHECK_OK(af_lm_tool_call(ctx, m, h1, model, t, none, &answer))) {
    CHECK_OK(af_value_key(answer, "called", 6, &called));
    CHECK_JSON(called, "false");
    CHECK_INT_EQ(kind_at(answer, "text"), AF_KIND_STR);
  }
  report("lm_tool_call, a call and the answer", now_ms() - t0, 2);
done:
  af_value_free(m);
  af_value_free(t);
  af_value_free(model);
  af_value_free(h0);
  af_value_free(out);
  af_value_free(forced);
  af_value_free(none);
  af_value_free(names);
  af_value_free(args);
  af_value_free(arg);
  af_value_free(parsed);
  af_value_free(turn);
  af_value_free(results);
  af_value_free(h1);
  af_value_free(answer);
  af_value_free(called);
  af_provider_free(p);
}

/* This server refuses the default structured-output dialect (json_schema)
 * with HTTP 500: a clear PROVIDER error naming the endpoint and the status. */
static void the_json_schema_dialect_fails_clearly_here(void) {
  const char* url = getenv("AF_LOCAL_MODEL_URL");
  char opts[512];
  af_provider_t* p = NULL;
  af_ir_t* ir = trace_ask("{\"n\": {\"type\": \"int\"}}", "{\"max_tokens\": 8}");
  af_value_t* out = NULL;
  case_start();
  if (!url || !ir) goto done;
  snprintf(opts, sizeof opts, "{\"base_url\":\"%s\",\"max_retries\":0}", url);
  if (!CHECK_OK(af_provider_openai_new(opts, strlen(opts), &p))) goto done;
  route("*", p);
  g_watched = af_provider_clone(p); /* never freed: the watchdog may read it to the end */
  CHECK_ERR(call_json(ir, "[\"Pick a number.\", \"m\"]", &out), AF_ERR_PROVIDER, "HTTP 500", url,
            "json_object");
done:
  af_value_free(out);
  af_ir_free(ir);
  af_provider_free(p);
}

int main(int argc, char** argv) {
  static const struct test_case cases[] = {
      CASE(lm_call_answers_text),
      CASE(schema_call_returns_every_kind),
      CASE(a_batch_of_eight_is_in_flight_together),
      CASE(a_switch_routes_on_a_real_answer),
      CASE(pullback_feedback_reaches_the_model),
      CASE(a_streamed_run_equals_a_plain_one),
      CASE(cancel_stops_a_generation),
      CASE(reasks_reach_the_model),
      CASE(the_json_schema_dialect_fails_clearly_here),
      CASE(a_tool_call_and_its_answer),
  };
  return run_cases(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
