/* What runs report about themselves through the C API: run summaries (per
 * model calls, tokens, retries, time queued and in flight) for synchronous
 * and asynchronous runs, checked against the usage echo and the local test
 * server report per request; profile events carrying model, tokens, tags
 * and name paths, also for LM calls inside a switch branch. */
#include "check.h"
#include "lm_server.h"

/* ---- helpers ---------------------------------------------------------- */

/* The number at `path` ("total/prompt_tokens", segments joined by '/') of a
 * JSON document; -1 when absent. */
static double field(const char* json, const char* path) {
  af_value_t* doc = json ? mk_json(json) : NULL;
  af_value_t* v = af_value_clone(doc);
  double out = -1;
  char seg[128];
  const char* p = path;
  while (v && *p) {
    size_t n = strcspn(p, "/");
    af_value_t* next = NULL;
    af_error_t* e;
    snprintf(seg, sizeof seg, "%.*s", (int)n, p);
    e = af_value_key(v, seg, strlen(seg), &next);
    af_error_free(e);
    af_value_free(v);
    v = next;
    p += n + (p[n] == '/');
  }
  if (af_value_kind(v) == AF_KIND_INT) {
    int64_t i = 0;
    CHECK_OK(af_value_get_int(v, &i));
    out = (double)i;
  } else if (af_value_kind(v) == AF_KIND_FLOAT) {
    CHECK_OK(af_value_get_float(v, &out));
  }
  af_value_free(v);
  af_value_free(doc);
  return out;
}

static af_error_t* ask(af_context_t* c, const af_value_t* content, const char* model,
                       af_value_t** out) {
  const char* keys[2] = {"role", "content"};
  const size_t lens[2] = {4, 7};
  const af_value_t* vals[2];
  af_value_t *role = NULL, *msg = NULL, *msgs = NULL, *m = NULL;
  af_error_t* err = af_value_str(c, "user", 4, &role);
  vals[0] = role;
  vals[1] = content;
  if (!err) err = af_value_dict(c, keys, lens, vals, 2, &msg);
  if (!err) err = af_value_list(c, (const af_value_t* const*)&msg, 1, &msgs);
  if (!err) err = af_value_str(c, model, strlen(model), &m);
  if (!err) err = af_lm_call(c, msgs, m, out);
  af_value_free(m);
  af_value_free(msgs);
  af_value_free(msg);
  af_value_free(role);
  return err;
}

/* A counter of af_provider_stats. */
static double provider_stat(const af_provider_t* p, const char* key) {
  af_bytes_t b = {NULL, 0};
  char* stats =
      bytes_to_cstr_at(af_provider_stats(p, &b), &b, "af_provider_stats", __FILE__, __LINE__);
  double v = field(stats, key);
  free(stats);
  return v;
}

static char* summary_of(af_future_t* f) {
  af_bytes_t b = {NULL, 0};
  return bytes_to_cstr_at(af_future_summary_json(f, &b), &b, "af_future_summary_json", __FILE__,
                          __LINE__);
}

static af_program_t* compile_traced(af_trace_fn fn, void* ud, const char* examples) {
  af_ir_t* ir = TRACE(fn, ud, examples, NULL);
  af_program_t* p = NULL;
  if (ir) CHECK_OK(af_compile(ctx, ir, &p));
  af_ir_free(ir);
  return p;
}

/* ---- echo: a named, tagged program with a call inside a switch branch -- */

/* billing(x) = lm_call(x, "m2") under the name "billing". */
static af_error_t* billing_fn(void* u, af_context_t* c, const af_value_t* const* in, size_t n,
                              af_value_t** out) {
  af_error_t* err = af_name_push(c, "billing", 7);
  (void)u;
  (void)n;
  if (!err) err = ask(c, in[0], "m2", out);
  if (!err) err = af_name_pop(c);
  return err;
}

/* #t1 triage: { ask: a = lm_call(q, "m1"); route: switch "billing" { billing(a) } } */
static af_error_t* observed_fn(void* u, af_context_t* c, const af_value_t* const* in, size_t n,
                               af_value_t** out) {
  af_ir_t* billing = u;
  af_value_t *a = NULL, *key = NULL, *r = NULL;
  const char* names[1] = {"billing"};
  const size_t name_lens[1] = {7};
  af_value_t* both[2];
  af_error_t* err = af_tag_push(c, "t1", 2);
  (void)n;
  if (!err) err = af_name_push(c, "triage", 6);
  if (!err) err = af_name_push(c, "ask", 3);
  if (!err) err = ask(c, in[0], "m1", &a);
  if (!err) err = af_name_pop(c);
  if (!err) err = af_name_push(c, "route", 5);
  if (!err) err = af_value_str(c, "billing", 7, &key);
  if (!err)
    err = af_switch(c, key, names, name_lens, (const af_ir_t* const*)&billing, 1,
                    (const af_value_t* const*)&a, 1, &r);
  if (!err) err = af_name_pop(c);
  if (!err) err = af_name_pop(c);
  if (!err) err = af_tag_pop(c);
  both[0] = a;
  both[1] = r;
  if (!err) err = af_value_list(c, (const af_value_t* const*)both, 2, out);
  af_value_free(a);
  af_value_free(key);
  af_value_free(r);
  return err;
}

static af_program_t* observed_program(void) {
  af_ir_t* billing = TRACE(billing_fn, NULL, "[\"x\"]", NULL);
  af_program_t* p = billing ? compile_traced(observed_fn, billing, "[\"q\"]") : NULL;
  af_ir_free(billing);
  return p;
}

/* echo counts words: m1 gets "hello world" (2) and answers "m1|hello
 * world" (2); m2 gets that (2) and answers "m2|m1|hello world" (2). */
static void async_summary_and_profile_from_echo(void) {
  af_provider_t* echo = NULL;
  af_program_t* p = observed_program();
  af_value_t* q = mk_str("hello world");
  af_value_t* out = NULL;
  af_future_t* f = NULL;
  af_run_options_t o;
  af_bytes_t prof = {NULL, 0};
  char *summary, *profile;
  CHECK_OK(af_provider_echo_new(NULL, 0, &echo));
  CHECK_OK(af_context_route(ctx, "*", 1, echo));
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.flags = AF_RUN_SUMMARY | AF_RUN_PROFILE;
  if (!p || !CHECK_OK(af_program_call_async_with(ctx, p, (const af_value_t* const*)&q, 1, &o, &f)))
    goto done;
  if (CHECK_OK(af_future_wait(f, &out)))
    CHECK_JSON(out, "[\"m1|hello world\",\"m2|m1|hello world\"]");
  summary = summary_of(f);
  if (summary) {
    CHECK_INT_EQ(field(summary, "total/calls"), 2);
    CHECK_INT_EQ(field(summary, "total/failed"), 0);
    CHECK_INT_EQ(field(summary, "total/prompt_tokens"), 4);
    CHECK_INT_EQ(field(summary, "total/completion_tokens"), 4);
    CHECK_INT_EQ(field(summary, "total/retries"), 0);
    CHECK_INT_EQ(field(summary, "models/m1/calls"), 1);
    CHECK_INT_EQ(field(summary, "models/m2/calls"), 1); /* made inside the switch's sub-run */
    CHECK_INT_EQ(field(summary, "models/m2/prompt_tokens"), 2);
    CHECK(field(summary, "wall_ms") >= 0);
    CHECK(field(summary, "total/queued_ms") >= 0);
    CHECK(field(summary, "total/in_flight_ms") >= 0);
    /* The totals are what the provider counted for these requests. */
    CHECK_INT_EQ(provider_stat(echo, "prompt_tokens"), 4);
    CHECK_INT_EQ(provider_stat(echo, "completion_tokens"), 4);
  }
  free(summary);
  profile =
      bytes_to_cstr_at(af_future_profile(f, &prof), &prof, "af_future_profile", __FILE__, __LINE__);
  if (profile) {
    /* The request events: model, tokens, the tags and the joined name path
     * of the equations they came through. */
    CHECK_CONTAINS(profile, "\"model\":\"m1\",");
    CHECK_CONTAINS(profile,
                   "\"prompt_tokens\":2,\"completion_tokens\":2,\"tags\":[\"t1\"],"
                   "\"name_path\":[\"triage\",\"ask\"]}");
    CHECK_CONTAINS(profile, "\"tags\":[\"t1\"],\"name_path\":[\"triage\",\"route\",\"billing\"]}");
    CHECK_CONTAINS(profile, " triage/route/billing\",\"cat\":\"lm\"");
    /* The equation events: their own tags and name path. */
    CHECK_CONTAINS(profile, "\"tags\":[\"t1\"],\"name_path\":[\"triage\",\"route\"]}");
    CHECK_CONTAINS(profile, "\"name\":\"switch #");
  }
  free(profile);
done:
  af_future_free(f);
  af_value_free(out);
  af_value_free(q);
  af_program_free(p);
  af_provider_free(echo);
}

/* af_profile_event: host functions mark the profile of the run calling
 * them — sync and blocking ones, also inside a switch branch (a sub-run
 * hands the event to the run that records the profile) — and the call does
 * nothing outside a profiled run. */
static af_error_t* marking(void* u, const af_value_t* const* in, size_t n, af_value_t** out) {
  const char* name = (const char*)u;
  af_error_t* e = af_profile_event(name, strlen(name), "{\"k\":1}", 7);
  (void)n;
  if (e) return e;
  *out = af_value_clone(in[0]);
  return NULL;
}

static af_error_t* mark_branch(void* u, af_context_t* c, const af_value_t* const* in, size_t n,
                               af_value_t** out) {
  (void)u;
  return af_host_call(c, "mark_sync", 9, in, n, out);
}

static af_error_t* marked_program(void* u, af_context_t* c, const af_value_t* const* in, size_t n,
                                  af_value_t** out) {
  const af_ir_t* branch = (const af_ir_t*)u;
  const char* names[1] = {"go"};
  size_t lens[1] = {2};
  af_value_t *a = NULL, *b = NULL, *key = NULL;
  af_error_t* e = af_host_call(c, "mark_sync", 9, in, 1, &a);
  (void)n;
  if (!e) e = af_host_call(c, "mark_blocking", 13, (const af_value_t* const*)&a, 1, &b);
  if (!e) e = af_value_str(c, "go", 2, &key);
  if (!e) e = af_switch(c, key, names, lens, &branch, 1, (const af_value_t* const*)&b, 1, out);
  af_value_free(a);
  af_value_free(b);
  af_value_free(key);
  return e;
}

static void host_functions_mark_the_profile(void) {
  af_value_t* kinds = mk_str("str");
  af_ir_t* branch = NULL;
  af_program_t* p = NULL;
  af_value_t *q = mk_str("x"), *out = NULL;
  af_future_t* f = NULL;
  af_run_options_t o;
  af_bytes_t prof = {NULL, 0};
  char* profile;
  CHECK_OK(af_register_function(ctx, "mark_sync", 9, marking, (void*)"sync-marker", NULL, kinds));
  CHECK_OK(af_register_function_blocking(ctx, "mark_blocking", 13, marking, (void*)"blocking-marker", NULL, kinds));
  branch = TRACE(mark_branch, NULL, "[\"s\"]", NULL);
  if (branch) p = compile_traced(marked_program, branch, "[\"s\"]");
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.flags = AF_RUN_PROFILE;
  if (!p || !CHECK_OK(af_program_call_async_with(ctx, p, (const af_value_t* const*)&q, 1, &o, &f))) goto done;
  if (CHECK_OK(af_future_wait(f, &out))) CHECK_JSON(out, "\"x\"");
  profile = bytes_to_cstr_at(af_future_profile(f, &prof), &prof, "af_future_profile", __FILE__, __LINE__);
  if (profile) {
    CHECK_CONTAINS(profile, "{\"ph\":\"i\",\"s\":\"t\",\"name\":\"sync-marker\",\"cat\":\"host\"");
    CHECK_CONTAINS(profile, "\"name\":\"blocking-marker\",\"cat\":\"host\"");
    CHECK_CONTAINS(profile, "\"args\":{\"eqn\":0,\"args\":{\"k\":1}}}");
    CHECK_CONTAINS(profile, "\"args\":{\"eqn\":2,\"args\":{\"k\":1}}}"); /* from the branch: the switch */
  }
  free(profile);
  /* Outside a profiled run (an eager call, a run without a profile, no run): nothing, no error. */
  af_value_free(out);
  out = NULL;
  if (CHECK_OK(af_host_call(ctx, "mark_sync", 9, (const af_value_t* const*)&q, 1, &out))) CHECK_JSON(out, "\"x\"");
  af_value_free(out);
  out = NULL;
  if (CHECK_OK(af_program_call(ctx, p, (const af_value_t* const*)&q, 1, &out))) CHECK_JSON(out, "\"x\"");
  CHECK_OK(af_profile_event("m", 1, NULL, 0));
  CHECK_ERR(af_profile_event("", 0, NULL, 0), AF_ERR_INVALID_ARGUMENT, "`name` is empty");
  CHECK_ERR(af_profile_event(NULL, 0, NULL, 0), AF_ERR_INVALID_ARGUMENT, "name");
  CHECK_ERR(af_profile_event("\xff", 1, NULL, 0), AF_ERR_INVALID_ARGUMENT, "UTF-8");
  CHECK_ERR(af_profile_event("m", 1, "[1]", 3), AF_ERR_INVALID_ARGUMENT, "JSON object");
  CHECK_ERR(af_profile_event("m", 1, "{", 1), AF_ERR_INVALID_ARGUMENT, "JSON");
done:
  af_future_free(f);
  af_value_free(out);
  af_value_free(q);
  af_value_free(kinds);
  af_program_free(p);
  af_ir_free(branch);
}

/* A run whose equations make no request has an empty summary; misuse of
 * the summary options is INVALID_ARGUMENT. */
static af_error_t* shout(void* u, af_context_t* c, const af_value_t* const* in, size_t n,
                         af_value_t** out) {
  (void)u;
  return af_concat(c, in, n, out);
}

static void summary_options_and_their_misuse(void) {
  af_program_t* p = compile_traced(shout, NULL, "[\"a\",\"b\"]");
  af_value_t* in[2] = {mk_str("a"), mk_str("b")};
  af_value_t* out = NULL;
  af_future_t* f = NULL;
  af_bytes_t summary = {(uint8_t*)"stale", 5};
  af_run_options_t o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.summary = &summary;
  if (!p) goto done;
  if (CHECK_OK(af_program_call_with(ctx, p, (const af_value_t* const*)in, 2, &o, &out))) {
    CHECK_JSON(out, "\"ab\"");
    CHECK_INT_EQ(field((const char*)summary.data, "total/calls"), 0);
    CHECK_CONTAINS((const char*)summary.data, "\"models\":{}");
  }
  af_bytes_free(&summary);
  af_value_free(out);
  out = NULL;
  /* Nothing ran (the inputs are wrong): no summary. */
  CHECK_ERR(af_program_call_with(ctx, p, (const af_value_t* const*)in, 1, &o, &out),
            AF_ERR_INVALID_ARGUMENT, "");
  CHECK(summary.data == NULL && summary.len == 0);
  CHECK_ERR(af_program_call_async_with(ctx, p, (const af_value_t* const*)in, 2, &o, &f),
            AF_ERR_INVALID_ARGUMENT, "options.summary", "af_future_summary_json", "AF_RUN_SUMMARY");
  CHECK(f == NULL);
  o.summary = NULL;
  o.flags = AF_RUN_SUMMARY;
  CHECK_ERR(af_program_call_with(ctx, p, (const af_value_t* const*)in, 2, &o, &out),
            AF_ERR_INVALID_ARGUMENT, "AF_RUN_SUMMARY needs options.summary");
  o.flags = 0;
  if (CHECK_OK(af_program_call_async_with(ctx, p, (const af_value_t* const*)in, 2, &o, &f))) {
    CHECK_OK(af_future_wait(f, &out));
    CHECK_ERR(af_future_summary_json(f, &summary), AF_ERR_INVALID_ARGUMENT, "AF_RUN_SUMMARY");
  }
  CHECK_ERR(af_future_summary_json(NULL, &summary), AF_ERR_INVALID_ARGUMENT, "`f` is NULL");
  CHECK_ERR(af_future_summary_json(f, NULL), AF_ERR_INVALID_ARGUMENT, "`out` is NULL");
done:
  af_future_free(f);
  af_value_free(out);
  af_value_free(in[0]);
  af_value_free(in[1]);
  af_program_free(p);
}

/* With one request in flight, two concurrent 60 ms calls: one waits for
 * the other, so time queued shows in the summary (bounds are generous). */
static af_error_t* two_asks(void* u, af_context_t* c, const af_value_t* const* in, size_t n,
                            af_value_t** out) {
  af_value_t* r[2] = {NULL, NULL};
  af_error_t* err = ask(c, in[0], "slow-a", &r[0]);
  (void)u;
  (void)n;
  if (!err) err = ask(c, in[0], "slow-b", &r[1]);
  if (!err) err = af_value_list(c, (const af_value_t* const*)r, 2, out);
  af_value_free(r[0]);
  af_value_free(r[1]);
  return err;
}

static void summary_times_queued_and_in_flight(void) {
  af_provider_t* echo = NULL;
  af_program_t* p = compile_traced(two_asks, NULL, "[\"q\"]");
  af_value_t* q = mk_str("q");
  af_value_t* out = NULL;
  af_bytes_t summary = {NULL, 0};
  af_run_options_t o;
  const char* opts = "{\"latency_ms\":60,\"max_in_flight\":1}";
  CHECK_OK(af_provider_echo_new(opts, strlen(opts), &echo));
  CHECK_OK(af_context_route(ctx, "*", 1, echo));
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.summary = &summary;
  if (p && CHECK_OK(af_program_call_with(ctx, p, (const af_value_t* const*)&q, 1, &o, &out))) {
    const char* s = (const char*)summary.data;
    CHECK_INT_EQ(field(s, "total/calls"), 2);
    CHECK(field(s, "total/in_flight_ms") >= 100);
    CHECK(field(s, "total/queued_ms") >= 40);
    CHECK(field(s, "wall_ms") >= 100);
    CHECK(field(s, "wall_ms") >= field(s, "models/slow-a/in_flight_ms"));
  }
  af_bytes_free(&summary);
  af_value_free(out);
  af_value_free(q);
  af_program_free(p);
  af_provider_free(echo);
}

/* ---- the local test server: per-request usage, retries, failures ------- */

struct calls {
  const char* model[3];
  const char* content[3];
};

static af_error_t* three_calls(void* u, af_context_t* c, const af_value_t* const* in, size_t n,
                               af_value_t** out) {
  const struct calls* cs = u;
  af_value_t* r[3] = {NULL, NULL, NULL};
  af_error_t* err = NULL;
  size_t k;
  (void)in;
  (void)n;
  for (k = 0; k < 3 && !err; ++k) {
    af_value_t* content = NULL;
    err = af_value_str(c, cs->content[k], strlen(cs->content[k]), &content);
    if (!err) err = ask(c, content, cs->model[k], &r[k]);
    af_value_free(content);
  }
  if (!err) err = af_value_list(c, (const af_value_t* const*)r, 3, out);
  for (k = 0; k < 3; ++k) af_value_free(r[k]);
  return err;
}

/* The server reports len(model) prompt and len(reply) completion tokens
 * per request; "500x2" fails twice before answering (two retries). */
static void sync_summary_adds_up_server_usage_and_retries(void) {
  struct server s = server_start();
  af_provider_t* api = openai_for(&s, NULL);
  struct calls cs = {{"ok", "ok", "500x2"}, {"a", "bb cc", "r"}};
  af_program_t* p = api ? compile_traced(three_calls, &cs, "[\"x\"]") : NULL;
  af_value_t* x = mk_str("x");
  af_value_t* out = NULL;
  af_bytes_t summary = {NULL, 0};
  af_run_options_t o;
  if (!p) goto done;
  CHECK_OK(af_context_route(ctx, "*", 1, api));
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.summary = &summary;
  if (CHECK_OK(af_program_call_with(ctx, p, (const af_value_t* const*)&x, 1, &o, &out))) {
    const char* j = (const char*)summary.data;
    CHECK_JSON(out, "[\"ok|a\",\"ok|bb cc\",\"500x2|r\"]");
    CHECK_INT_EQ(field(j, "total/calls"), 3);
    CHECK_INT_EQ(field(j, "total/failed"), 0);
    CHECK_INT_EQ(field(j, "total/prompt_tokens"), 2 + 2 + 5);
    CHECK_INT_EQ(field(j, "total/completion_tokens"), 4 + 8 + 7);
    CHECK_INT_EQ(field(j, "total/retries"), 2);
    CHECK_INT_EQ(field(j, "models/ok/calls"), 2);
    CHECK_INT_EQ(field(j, "models/ok/completion_tokens"), 4 + 8);
    CHECK_INT_EQ(field(j, "models/500x2/retries"), 2);
    CHECK_INT_EQ(server_attempts(&s, "500x2", "r"), 3);
    CHECK_INT_EQ(provider_stat(api, "prompt_tokens"), 2 + 2 + 5);
    CHECK_INT_EQ(provider_stat(api, "completion_tokens"), 4 + 8 + 7);
  }
done:
  af_bytes_free(&summary);
  af_value_free(out);
  af_value_free(x);
  af_program_free(p);
  af_provider_free(api);
  server_stop(&s);
}

/* A failed run still writes its summary: the failed request, its retries. */
static void failed_run_still_summarizes(void) {
  struct server s = server_start();
  af_provider_t* api = openai_for(&s, NULL);
  struct calls cs = {{"ok", "500always", "ok"}, {"a", "b", "c"}};
  af_program_t* p = api ? compile_traced(three_calls, &cs, "[\"x\"]") : NULL;
  af_value_t* x = mk_str("x");
  af_value_t* out = NULL;
  af_bytes_t summary = {NULL, 0};
  af_run_options_t o;
  if (!p) goto done;
  CHECK_OK(af_context_route(ctx, "*", 1, api));
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.summary = &summary;
  CHECK_ERR(af_program_call_with(ctx, p, (const af_value_t* const*)&x, 1, &o, &out),
            AF_ERR_PROVIDER, "500");
  CHECK(out == NULL);
  CHECK(summary.data != NULL);
  if (summary.data) {
    const char* j = (const char*)summary.data;
    CHECK_INT_EQ(field(j, "models/500always/calls"), 1);
    CHECK_INT_EQ(field(j, "models/500always/failed"), 1);
    CHECK_INT_EQ(field(j, "models/500always/retries"), 2);
    CHECK_INT_EQ(field(j, "models/500always/prompt_tokens"), 0);
  }
done:
  af_bytes_free(&summary);
  af_value_free(x);
  af_program_free(p);
  af_provider_free(api);
  server_stop(&s);
}

int main(int argc, char** argv) {
  static const struct test_case cases[] = {
      CASE(async_summary_and_profile_from_echo), CASE(summary_options_and_their_misuse),
      CASE(summary_times_queued_and_in_flight), CASE(sync_summary_adds_up_server_usage_and_retries),
      CASE(failed_run_still_summarizes), CASE(host_functions_mark_the_profile)};
  return run_cases(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
