/* What a production user configures around LM calls, through the C API:
 * per-call sampling params (recorded in the IR: printed, hashed, saved;
 * merged over the provider's defaults on the wire), rate limits (requests
 * and tokens per minute; a 429 pauses the whole provider), fallback routes,
 * the json_object dialect of structured output, and schema re-asks. */
#include "check.h"
#include "lm_helpers.h"

/* ---- helpers --------------------------------------------------------- */

/* af_provider_set_options with a NUL-terminated JSON text. */
static af_error_t* set_options(af_provider_t* p, const char* json) {
  return af_provider_set_options(p, json, strlen(json));
}

static size_t count_of(const char* hay, const char* needle) {
  size_t n = 0;
  for (const char* at = strstr(hay, needle); at; at = strstr(at + 1, needle)) n++;
  return n;
}

static const char* kRateSchema =
    "{\"answer\":{\"type\":\"str\"},\"score\":{\"type\":\"int\",\"min\":1,\"max\":10}}";

/* ---- sampling params ---------------------------------------------------- */

static void sampling_params_are_part_of_the_ir(void) {
  af_ir_t *plain = NULL, *sampled = NULL, *loaded = NULL;
  af_bytes_t bytes = {NULL, 0};
  char *text = NULL, *text2 = NULL;
  g_params = NULL;
  plain = TRACE(lm_ask, NULL, "[\"q\", \"m\"]", NULL);
  g_params =
      "{\"temperature\": 0, \"max_tokens\": 64, \"stop\": [\"\\n\\n\"], \"seed\": 7, \"top_p\": "
      "0.5}";
  sampled = TRACE(lm_ask, NULL, "[\"q\", \"m\"]", NULL);
  g_params = NULL;
  if (!plain || !sampled) goto done;
  text = ir_text(sampled);
  CHECK_CONTAINS(text, "temperature=0.0");
  CHECK_CONTAINS(text, "max_tokens=64");
  CHECK_CONTAINS(text, "stop=[\"\\n\\n\"]");
  CHECK_CONTAINS(text, "seed=7");
  CHECK_CONTAINS(text, "top_p=0.5");
  CHECK(af_ir_hash(plain) != af_ir_hash(sampled));
  /* Saved and loaded, the params are the same (same text, same hash). */
  if (CHECK_OK(af_ir_to_bytes(sampled, &bytes)) &&
      CHECK_OK(af_ir_from_bytes(ctx, bytes.data, bytes.len, &loaded))) {
    text2 = ir_text(loaded);
    CHECK_STR_EQ(text2, text);
    CHECK(af_ir_hash(loaded) == af_ir_hash(sampled));
  }
done:
  free(text);
  free(text2);
  af_bytes_free(&bytes);
  af_ir_free(plain);
  af_ir_free(sampled);
  af_ir_free(loaded);
}

static void bad_sampling_params_are_refused(void) {
  static const struct {
    const char* params;
    const char* frag1;
    const char* frag2;
  } cases[] = {
      {"{\"temperature\": 3}", "temperature", "between 0 and 2"},
      {"{\"temperature\": \"hot\"}", "temperature", "float"},
      {"{\"top_p\": 0}", "top_p", "(0, 1]"},
      {"{\"max_tokens\": 0}", "max_tokens", "at least 1"},
      {"{\"max_tokens\": 1.5}", "max_tokens", "int"},
      {"{\"seed\": \"x\"}", "seed", "int"},
      {"{\"stop\": []}", "stop", "1 to 16"},
      {"{\"stop\": [\"\"]}", "stop", "non-empty"},
      {"{\"stop\": [1]}", "stop", "non-empty strings"},
      {"{\"temprature\": 0}", "unknown param \"temprature\"", "known: temperature"},
      {"[1]", "params must be a dict", "list"},
  };
  size_t i;
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    af_ir_t* ir = NULL;
    g_params = cases[i].params;
    CHECK_ERR(trace_json(lm_ask, NULL, "[\"q\", \"m\"]", NULL, &ir), AF_ERR_INVALID_ARGUMENT,
              cases[i].frag1, cases[i].frag2);
    CHECK(ir == NULL);
  }
  g_params = NULL;
}

/* A graph file whose params are out of range is refused when loaded. */
static void loaded_sampling_params_are_checked(void) {
  const char* json =
      "{\"afg\": 1, \"producer\": \"t\", \"host_functions\": [], \"irs\": [{\"vars\": "
      "[\"str\",\"str\"], \"in\": "
      "[\"%0\"], \"eqns\": "
      "[{\"prim\":\"lm_call\",\"out\":\"%1\",\"in\":[\"%0\",{\"lit\":\"m\"}],\"params\":{"
      "\"roles\":{\"value\":[\"user\"]},\"temperature\":{\"value\":9.0}}}], \"out\": \"%1\"}]}";
  af_bytes_t b = {NULL, 0};
  CHECK_ERR(af_graph_from_json(ctx, json, strlen(json), &b), AF_ERR_FORMAT, "temperature",
            "between 0 and 2");
  af_bytes_free(&b);
}

/* On the wire: the call's params win over the provider's "extra" defaults,
 * which still apply where the call sets nothing; host providers see them. */
static void sampling_params_reach_the_request(void) {
  struct server s = server_start();
  af_provider_t* p = openai_for(&s, "\"extra\":{\"temperature\":1.5,\"top_k\":5}");
  af_ir_t* ir;
  af_value_t* out = NULL;
  g_params = "{\"temperature\": 0.25, \"max_tokens\": 9, \"stop\": [\"END\"]}";
  ir = TRACE(lm_ask, NULL, "[\"q\", \"m\"]", NULL);
  g_params = NULL;
  if (!p || !ir) goto done;
  route("*", p);
  if (CHECK_OK(call_json(ir, "[\"x\", \"show-request\"]", &out))) {
    char buf[4096];
    str_of(out, buf);
    CHECK_CONTAINS(buf, "\"temperature\":0.25");
    CHECK_NOT_CONTAINS(buf, "1.5");
    CHECK_CONTAINS(buf, "\"top_k\":5");
    CHECK_CONTAINS(buf, "\"max_tokens\":9");
    CHECK_CONTAINS(buf, "\"stop\":[\"END\"]");
  }
done:
  af_value_free(out);
  af_ir_free(ir);
  af_provider_free(p);
  server_stop(&s);
}

/* A host provider sees the params in the request JSON. */
static void record_json(void* ud, af_lm_request_t* req) {
  af_bytes_t b = {NULL, 0};
  if (!af_lm_request_json(req, &b)) {
    snprintf((char*)ud, 1024, "%.*s", (int)b.len, (const char*)b.data);
    af_bytes_free(&b);
  }
  af_error_free(af_lm_request_complete(req, "ok", 2));
}

static void host_providers_see_the_params(void) {
  char seen[1024] = "";
  af_provider_t* host = NULL;
  af_ir_t* ir;
  af_value_t* out = NULL;
  g_params = "{\"seed\": 7, \"stop\": [\"END\"]}";
  ir = TRACE(lm_ask, NULL, "[\"q\", \"m\"]", NULL);
  g_params = NULL;
  if (!ir || !CHECK_OK(af_provider_host_new(record_json, seen, NULL, &host))) goto done;
  route("*", host);
  if (CHECK_OK(call_json(ir, "[\"x\", \"m\"]", &out)))
    CHECK_CONTAINS(seen, "\"params\":{\"seed\":7,\"stop\":[\"END\"]}");
done:
  af_value_free(out);
  af_ir_free(ir);
  af_provider_free(host);
}

/* A large batch asking two models, one per item in turn: each item goes to
 * its model's provider, and its reply names its model (a large batch
 * shares a copy of a model's name among its requests: the other model's
 * requests keep their own). */
static void a_large_batch_asks_each_items_model(void) {
  af_provider_t *a = echo_with("{\"name\":\"echo-a\"}"), *b = echo_with("{\"name\":\"echo-b\"}");
  af_ir_t *ir = TRACE(lm_ask, NULL, "[\"q\", \"m\"]", NULL), *batched = NULL;
  af_value_t* axes = mk_json("[true, true]");
  af_value_t* out = NULL;
  static char json[8192];
  char want[64];
  int i, n = 0, ok = 1;
  route("model-a", a);
  route("model-b", b);
  if (!ir || !CHECK_OK(af_batch(ctx, ir, axes, &batched))) goto done;
  n += snprintf(json + n, sizeof json - n, "[[");
  for (i = 0; i < 100; i++) n += snprintf(json + n, sizeof json - n, "%s\"q%d\"", i ? "," : "", i);
  n += snprintf(json + n, sizeof json - n, "], [");
  for (i = 0; i < 100; i++) n += snprintf(json + n, sizeof json - n, "%s\"model-%c\"", i ? "," : "", i % 2 ? 'b' : 'a');
  snprintf(json + n, sizeof json - n, "]]");
  if (!CHECK_OK(call_json(batched, json, &out))) goto done;
  for (i = 0; i < 100 && ok; i++) {
    af_value_t* item = NULL;
    ok = CHECK_OK(af_value_index(out, (size_t)i, &item));
    snprintf(want, sizeof want, "\"model-%c|q%d\"", i % 2 ? 'b' : 'a', i);
    if (ok) ok = CHECK_JSON(item, want);
    af_value_free(item);
  }
  CHECK_INT_EQ(stat_field(a, "finished"), 50);
  CHECK_INT_EQ(stat_field(b, "finished"), 50);
done:
  af_value_free(out);
  af_value_free(axes);
  af_ir_free(batched);
  af_ir_free(ir);
  af_provider_free(a);
  af_provider_free(b);
}

/* ---- rate limits ---------------------------------------------------------- */

/* 25 calls at 600 requests per minute: 10 start at once (a second's worth),
 * the others wait their turn at 10 per second; none fails. */
static void requests_per_minute_spreads_the_calls(void) {
  af_provider_t* echo = echo_with("{\"requests_per_minute\":600}");
  af_ir_t *ir = TRACE(lm_ask, NULL, "[\"q\", \"m\"]", NULL), *batched = NULL;
  af_value_t* axes = mk_json("[true, false]");
  af_value_t* out = NULL;
  double t0;
  char in[512];
  int i, n = 0;
  route("*", echo);
  if (!ir || !CHECK_OK(af_batch(ctx, ir, axes, &batched))) goto done;
  n += snprintf(in + n, sizeof in - n, "[[");
  for (i = 0; i < 25; i++) n += snprintf(in + n, sizeof in - n, "%s\"q%d\"", i ? "," : "", i);
  snprintf(in + n, sizeof in - n, "], \"m\"]");
  t0 = now_ms();
  if (CHECK_OK(call_json(batched, in, &out))) {
    size_t len = 0;
    CHECK_OK(af_value_len(out, &len));
    CHECK_INT_EQ(len, 25);
  }
  CHECK(now_ms() - t0 >= 1200); /* 15 waited at 10 per second */
  CHECK_INT_EQ(stat_field(echo, "rate_waits"), 15);
  CHECK_INT_EQ(stat_field(echo, "requests_per_minute"), 600);
done:
  af_value_free(out);
  af_value_free(axes);
  af_ir_free(batched);
  af_ir_free(ir);
  af_provider_free(echo);
}

/* Tokens per minute, estimated from the request (a token per 4 bytes + 4
 * per message + max_tokens) and corrected by the reply's usage (echo counts
 * words): 30 requests of ~103 estimated tokens at 6000 per minute would take
 * 30 s, but each really uses 2, so the refunds let them through at once. */
static void tokens_per_minute_uses_the_replys_usage(void) {
  af_provider_t* echo = echo_with("{\"tokens_per_minute\":6000}");
  af_ir_t *ir = TRACE(lm_ask, NULL, "[\"q\", \"m\"]", NULL), *batched = NULL;
  af_value_t* axes = mk_json("[true, false]");
  af_value_t* out = NULL;
  static char in[16384];
  char word[400];
  double t0;
  int i, n = 0;
  memset(word, 'w', 396);
  word[396] = 0;
  route("*", echo);
  if (!ir || !CHECK_OK(af_batch(ctx, ir, axes, &batched))) goto done;
  n += snprintf(in + n, sizeof in - n, "[[");
  for (i = 0; i < 30; i++) n += snprintf(in + n, sizeof in - n, "%s\"%s\"", i ? "," : "", word);
  snprintf(in + n, sizeof in - n, "], \"m\"]");
  t0 = now_ms();
  CHECK_OK(call_json(batched, in, &out));
  CHECK(now_ms() - t0 < 15000);
  CHECK(stat_field(echo, "rate_waits") >= 1); /* the bucket did hold some back */
  CHECK_INT_EQ(stat_field(echo, "finished"), 30);
done:
  af_value_free(out);
  af_value_free(axes);
  af_ir_free(batched);
  af_ir_free(ir);
  af_provider_free(echo);
}

/* A reply's usage is a server's number, clamped before it is counted or
 * charged: replies claiming 10^9 and 2^63-1 tokens neither wrap the stats
 * nor hold a rate-limited provider back for more than a second's worth of
 * tokens (they stalled every later request for days). */
static void absurd_usage_is_clamped(void) {
  struct server s = server_start();
  af_provider_t* p = openai_for(&s, "\"tokens_per_minute\":6000");
  af_ir_t* ir = TRACE(lm_ask, NULL, "[\"q\", \"m\"]", NULL);
  af_program_t* prog = NULL;
  af_value_t *out = NULL, *in[2] = {NULL, NULL};
  const char* models[] = {"usage-max", "usage-huge", "ok"};
  af_run_options_t o;
  double t0 = 0;
  int i;
  if (!p || !ir || !CHECK_OK(af_compile(ctx, ir, &prog))) goto done;
  route("*", p);
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.timeout_ms = 10000; /* a stalled provider fails the test, not hangs it */
  in[0] = mk_str("a");
  for (i = 0; i < 3; i++) {
    af_value_free(in[1]);
    in[1] = mk_str(models[i]);
    if (i == 2) t0 = now_ms();
    if (CHECK_OK(af_program_call_with(ctx, prog, (const af_value_t* const*)in, 2, &o, &out)) && i == 0) {
      CHECK_INT_EQ(stat_field(p, "prompt_tokens"), 16777216); /* 2^24: no model reads more */
      CHECK_INT_EQ(stat_field(p, "completion_tokens"), 16777216);
    }
    af_value_free(out);
    out = NULL;
  }
  CHECK(now_ms() - t0 < 5000);
  CHECK_INT_EQ(stat_field(p, "finished"), 3);
done:
  af_value_free(in[0]);
  af_value_free(in[1]);
  af_program_free(prog);
  af_ir_free(ir);
  af_provider_free(p);
  server_stop(&s);
}

/* A 429 with Retry-After: 3 pauses the whole provider: a call made while
 * the first waits for its retry starts only after the pause. */
static void a_429_pauses_the_whole_provider(void) {
  struct server s = server_start();
  af_provider_t* p = openai_for(&s, NULL);
  af_ir_t* ir = TRACE(lm_ask, NULL, "[\"q\", \"m\"]", NULL);
  af_program_t* prog = NULL;
  af_future_t* f = NULL;
  af_value_t *out = NULL, *in[2] = {NULL, NULL};
  double t0;
  if (!p || !ir || !CHECK_OK(af_compile(ctx, ir, &prog))) goto done;
  route("*", p);
  in[0] = mk_str("a");
  in[1] = mk_str("retry-after:3");
  if (!CHECK_OK(af_program_call_async(ctx, prog, (const af_value_t* const*)in, 2, &f))) goto done;
  sleep_ms(300); /* the 429 has arrived */
  t0 = now_ms();
  if (CHECK_OK(call_model("ok", "b", &out))) CHECK_JSON(out, "\"ok|b\"");
  CHECK(now_ms() - t0 >= 1500); /* held back by the pause, not answered at once */
  CHECK_INT_EQ(stat_field(p, "rate_waits"), 1);
  af_value_free(out);
  out = NULL;
  if (CHECK_OK(af_future_wait(f, &out))) CHECK_JSON(out, "\"retry-after:3|a\"");
  CHECK_INT_EQ(server_attempts(&s, "retry-after:3", "a"), 2);
done:
  af_value_free(out);
  af_value_free(in[0]);
  af_value_free(in[1]);
  af_future_free(f);
  af_program_free(prog);
  af_ir_free(ir);
  af_provider_free(p);
  server_stop(&s);
}

static void provider_options_can_be_changed(void) {
  af_provider_t* echo = echo_with(NULL);
  af_provider_t* host = NULL;
  CHECK_OK(set_options(echo, "{\"requests_per_minute\":120,\"tokens_per_minute\":9000}"));
  CHECK_INT_EQ(stat_field(echo, "requests_per_minute"), 120);
  CHECK_INT_EQ(stat_field(echo, "tokens_per_minute"), 9000);
  CHECK_OK(set_options(echo, "{\"max_in_flight\":3,\"schema_retries\":2}"));
  CHECK_INT_EQ(stat_field(echo, "max_in_flight"), 3);
  CHECK_INT_EQ(stat_field(echo, "schema_retries"), 2);
  CHECK_INT_EQ(stat_field(echo, "requests_per_minute"), 120); /* kept */
  /* Bad options change nothing. */
  CHECK_ERR(set_options(echo, "{\"requests_per_minute\":-1,\"max_in_flight\":9}"),
            AF_ERR_INVALID_ARGUMENT, "requests_per_minute", "between 0");
  CHECK_INT_EQ(stat_field(echo, "max_in_flight"), 3);
  CHECK_ERR(set_options(echo, "{\"rpm\":1}"), AF_ERR_INVALID_ARGUMENT, "unknown option \"rpm\"",
            "requests_per_minute");
  CHECK_ERR(set_options(echo, "{\"schema_retries\":11}"), AF_ERR_INVALID_ARGUMENT,
            "schema_retries");
  CHECK_ERR(set_options(echo, "{"), AF_ERR_INVALID_ARGUMENT, "not valid JSON");
  CHECK_ERR(set_options(NULL, "{}"), AF_ERR_INVALID_ARGUMENT, "`p`");
  /* The same options at creation. */
  af_provider_free(echo);
  echo = echo_with("{\"requests_per_minute\":60,\"schema_retries\":1}");
  CHECK_INT_EQ(stat_field(echo, "requests_per_minute"), 60);
  CHECK_INT_EQ(stat_field(echo, "schema_retries"), 1);
  (void)host;
  af_provider_free(echo);
}

/* ---- fallback routes ------------------------------------------------------ */

static void fallback_routes_try_the_next_provider(void) {
  struct server s = server_start();
  af_provider_t* failing = openai_for(&s, "\"name\":\"primary\"");
  af_provider_t* backup = echo_with("{\"name\":\"backup\"}");
  af_provider_t* list[2];
  af_ir_t* ir = TRACE(lm_ask, NULL, "[\"q\", \"m\"]", NULL);
  af_program_t* prog = NULL;
  af_future_t* f = NULL;
  af_value_t *out = NULL, *in[2] = {NULL, NULL};
  af_run_options_t o;
  list[0] = failing;
  list[1] = backup;
  if (!failing || !backup || !ir || !CHECK_OK(af_compile(ctx, ir, &prog))) goto done;
  CHECK_OK(af_context_route_fallback(ctx, "*", 1, list, 2));
  /* The primary fails (HTTP 500): the backup answers; the profile shows
   * both attempts on their providers' tracks. */
  in[0] = mk_str("q");
  in[1] = mk_str("500always");
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.flags = AF_RUN_PROFILE;
  if (CHECK_OK(af_program_call_async_with(ctx, prog, (const af_value_t* const*)in, 2, &o, &f)) &&
      CHECK_OK(af_future_wait(f, &out))) {
    af_bytes_t prof = {NULL, 0};
    CHECK_JSON(out, "\"500always|q\"");
    if (CHECK_OK(af_future_profile(f, &prof))) {
      CHECK_CONTAINS((const char*)prof.data, "provider primary");
      CHECK_CONTAINS((const char*)prof.data, "provider backup");
      CHECK_CONTAINS((const char*)prof.data, "\"code\":6"); /* the primary's PROVIDER */
    }
    af_bytes_free(&prof);
  }
  CHECK_INT_EQ(server_attempts(&s, "500always", "q"), 3); /* after the primary's own retries */
  CHECK_INT_EQ(stat_field(backup, "finished"), 1);
  af_value_free(out);
  out = NULL;
  /* A failure that is not the provider's (an invalid reply) is not retried
   * elsewhere. */
  {
    af_ir_t* sir = TRACE(lm_ask, (void*)kRateSchema, "[\"q\", \"m\"]", NULL);
    if (sir) CHECK_ERR(call_json(sir, "[\"q\", \"schema-bad\"]", &out), AF_ERR_SCHEMA, "$.score");
    CHECK_INT_EQ(stat_field(backup, "finished"), 1);
    af_ir_free(sir);
  }
  /* Every provider failing: the last error, the earlier ones as causes. */
  list[1] = failing;
  CHECK_OK(af_context_route_fallback(ctx, "*", 1, list, 2));
  {
    af_error_t* e = call_json(ir, "[\"q\", \"500always\"]", &out);
    if (CHECK_ERR_KEEP(e, AF_ERR_PROVIDER, "HTTP 500", "1 earlier provider(s) failed too")) {
      CHECK(af_error_cause(e) != NULL);
      if (af_error_cause(e)) CHECK_CONTAINS(af_error_message(af_error_cause(e)), "HTTP 500");
    }
    af_error_free(e);
  }
  CHECK(out == NULL);
  /* Misuse. */
  CHECK_ERR(af_context_route_fallback(ctx, "*", 1, list, 0), AF_ERR_INVALID_ARGUMENT,
            "at least one provider");
  list[1] = NULL;
  CHECK_ERR(af_context_route_fallback(ctx, "*", 1, list, 2), AF_ERR_INVALID_ARGUMENT,
            "providers[1] is NULL");
  CHECK_ERR(af_context_route_fallback(ctx, "", 0, list, 1), AF_ERR_INVALID_ARGUMENT, "empty");
  CHECK_ERR(af_context_route_fallback(NULL, "*", 1, list, 1), AF_ERR_INVALID_ARGUMENT, "`ctx`");
done:
  af_value_free(out);
  af_value_free(in[0]);
  af_value_free(in[1]);
  af_future_free(f);
  af_program_free(prog);
  af_ir_free(ir);
  af_provider_free(failing);
  af_provider_free(backup);
  server_stop(&s);
}

/* ---- structured output: the json_object dialect and re-asks --------------- */

/* json_object mode: the schema goes in response_format (small int ranges
 * also as enums: these servers' grammars ignore bounds) and, since that
 * mode tells the model nothing of it, in a system instruction too. */
static void json_object_dialect_sends_the_schema_inline(void) {
  struct server s = server_start();
  af_provider_t* p = openai_for(&s, "\"structured_output\":\"json_object\"");
  af_ir_t* ir = TRACE(lm_ask, (void*)kRateSchema, "[\"q\", \"m\"]", NULL);
  af_value_t* out = NULL;
  af_provider_t* bad = NULL;
  const char* opts = "{\"base_url\":\"http://x/v1\",\"structured_output\":\"xml\"}";
  if (!p || !ir) goto done;
  route("*", p);
  if (CHECK_OK(call_json(ir, "[\"q\", \"show-format\"]", &out))) {
    af_value_t* answer = NULL;
    char buf[2048];
    CHECK_OK(af_value_key(out, "answer", 6, &answer));
    str_of(answer, buf);
    CHECK_CONTAINS(buf, "{\"type\": \"json_object\", \"schema\": {");
    CHECK_CONTAINS(buf, "\"maximum\": 10");
    CHECK_CONTAINS(buf,
                   "\"enum\": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"); /* a small int range, enumerated */
    CHECK_NOT_CONTAINS(buf, "json_schema");
    af_value_free(answer);
  }
  af_value_free(out);
  out = NULL;
  /* The schema also reaches the model as a system instruction. */
  if (CHECK_OK(call_json(ir, "[\"q\", \"show-messages\"]", &out))) {
    af_value_t* answer = NULL;
    char buf[2048];
    CHECK_OK(af_value_key(out, "answer", 6, &answer));
    str_of(answer, buf);
    CHECK_CONTAINS(buf,
                   "[{\"role\": \"system\", \"content\": \"Reply with only a JSON value that "
                   "matches this JSON Schema:");
    CHECK_CONTAINS(buf, "{\"role\": \"user\", \"content\": \"q\"}]");
    af_value_free(answer);
  }
  CHECK_ERR(af_provider_openai_new(opts, strlen(opts), &bad), AF_ERR_INVALID_ARGUMENT,
            "structured_output", "json_object");
  CHECK(bad == NULL);
done:
  af_value_free(out);
  af_ir_free(ir);
  af_provider_free(p);
  server_stop(&s);
}

/* A conversation that starts with a system message gets the schema
 * instruction joined to it (one system message, first). */
static void json_object_joins_the_system_message(void) {
  struct server s = server_start();
  af_provider_t* p = openai_for(&s, "\"structured_output\":\"json_object\"");
  af_value_t* msgs = mk_json(
      "[{\"role\":\"system\",\"content\":\"Be terse.\"},{\"role\":\"user\",\"content\":\"q\"}]");
  af_value_t* model = mk_str("show-messages");
  af_value_t* schema = mk_json(kRateSchema);
  af_value_t *out = NULL, *answer = NULL;
  if (!p) goto done;
  route("*", p);
  if (CHECK_OK(af_lm_schema_call(ctx, msgs, model, schema, &out)) &&
      CHECK_OK(af_value_key(out, "answer", 6, &answer))) {
    char buf[2048];
    str_of(answer, buf);
    CHECK_CONTAINS(
        buf, "[{\"role\": \"system\", \"content\": \"Be terse.\\n\\nReply with only a JSON value");
    CHECK_INT_EQ(count_of(buf, "\"system\""), 1);
  }
done:
  af_value_free(answer);
  af_value_free(out);
  af_value_free(msgs);
  af_value_free(model);
  af_value_free(schema);
  af_provider_free(p);
  server_stop(&s);
}

/* An invalid reply goes back to the model with the error as a correction
 * turn; the corrected reply is the result. Every attempt is in the profile.
 * Without re-asks (the default) the first error stands; with re-asks that
 * all fail, the last error says how many there were. */
static void schema_reasks_correct_an_invalid_reply(void) {
  struct server s = server_start();
  af_provider_t* p = openai_for(&s, "\"schema_retries\":2");
  af_ir_t* ir = TRACE(lm_ask, (void*)kRateSchema, "[\"q\", \"m\"]", NULL);
  af_program_t* prog = NULL;
  af_future_t* f = NULL;
  af_value_t *out = NULL, *in[2] = {NULL, NULL};
  af_run_options_t o;
  if (!p || !ir || !CHECK_OK(af_compile(ctx, ir, &prog))) goto done;
  route("*", p);
  in[0] = mk_str("rate");
  in[1] = mk_str("schema-fix");
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.flags = AF_RUN_PROFILE | AF_RUN_SUMMARY;
  if (CHECK_OK(af_program_call_async_with(ctx, prog, (const af_value_t* const*)in, 2, &o, &f)) &&
      CHECK_OK(af_future_wait(f, &out))) {
    af_bytes_t prof = {NULL, 0}, summary = {NULL, 0};
    CHECK_JSON(out, "{\"answer\":\"fine\",\"score\":7}");
    if (CHECK_OK(af_future_profile(f, &prof))) {
      CHECK_CONTAINS((const char*)prof.data, "\"code\":3"); /* the first attempt's SCHEMA */
      CHECK_CONTAINS((const char*)prof.data, "\"code\":0");
    }
    /* The run summary counts both attempts, the refused one as failed. */
    if (CHECK_OK(af_future_summary_json(f, &summary)))
      CHECK_CONTAINS((const char*)summary.data, "\"calls\":2,\"failed\":1");
    af_bytes_free(&prof);
    af_bytes_free(&summary);
  }
  CHECK_INT_EQ(server_attempts(&s, "schema-fix", "rate"), 1);
  CHECK_INT_EQ(stat_field(p, "finished"), 2);
  af_value_free(out);
  out = NULL;
  /* Always invalid: 1 + 2 attempts, the last error. */
  CHECK_ERR(call_json(ir, "[\"rate\", \"schema-bad\"]", &out), AF_ERR_SCHEMA, "$.score", "99",
            "after 2 re-asks");
  CHECK_INT_EQ(stat_field(p, "finished"), 5);
  /* A greedy model repeats its reply whatever the correction says: a re-ask
   * also steps the sampling (temperature 0 -> 0.3, seed 7 -> 8), so it can
   * answer otherwise. */
  af_provider_free(p);
  p = openai_for(&s, "\"schema_retries\":1,\"extra\":{\"temperature\":0,\"seed\":7}");
  if (!p) goto done;
  route("*", p);
  CHECK_OK(call_json(ir, "[\"rate\", \"schema-greedy\"]", &out));
  CHECK_JSON(out, "{\"answer\":\"fine\",\"score\":7}");
  CHECK_INT_EQ(server_attempts(&s, "schema-greedy", "rate"), 1);
  CHECK_INT_EQ(stat_field(p, "finished"), 2);
  af_value_free(out);
  out = NULL;
  /* A server answering 1 MiB of invalid JSON every time: each re-ask sends
   * the original conversation, the last reply cut to 16 KiB and the
   * correction — not every earlier reply again. */
  CHECK_OK(set_options(p, "{\"schema_retries\":3}"));
  CHECK_ERR(call_json(ir, "[\"rate\", \"schema-huge-bad\"]", &out), AF_ERR_SCHEMA, "$.score", "after 3 re-asks");
  CHECK_INT_EQ(stat_field(p, "finished"), 6);
  {
    long max_body = server_stat(&s, "schema-huge-bad", "rate", "max_body");
    CHECK(max_body > 16384 && max_body < 24576);
    if (!(max_body > 16384 && max_body < 24576)) fprintf(stderr, "  the largest re-ask was %ld bytes\n", max_body);
  }
  /* Off: one attempt. */
  CHECK_OK(set_options(p, "{\"schema_retries\":0}"));
  CHECK_ERR(call_json(ir, "[\"again\", \"schema-fix\"]", &out), AF_ERR_SCHEMA, "$.score");
  CHECK_INT_EQ(stat_field(p, "finished"), 7);
done:
  af_value_free(out);
  af_value_free(in[0]);
  af_value_free(in[1]);
  af_future_free(f);
  af_program_free(prog);
  af_ir_free(ir);
  af_provider_free(p);
  server_stop(&s);
}

/* ---- bad servers ----------------------------------------------------------- */

/* A server that is down or answers HTML: PROVIDER naming the endpoint,
 * never the key. */
static void down_and_html_servers_fail_clearly(void) {
  struct server s = server_start();
  af_provider_t* p;
  af_value_t* out = NULL;
  af_error_t* e;
  setenv("AF_TEST_ROUTING_KEY", "sk-routing-secret", 1);
  p = openai_for(&s, "\"api_key_env\":\"AF_TEST_ROUTING_KEY\"");
  if (!p) goto done;
  route("*", p);
  e = call_model("html", "x", &out);
  if (e) CHECK_NOT_CONTAINS(af_error_message(e), "sk-routing-secret");
  CHECK_ERR(e, AF_ERR_PROVIDER, "not valid JSON", "Gateway says hello", "127.0.0.1");
  server_stop(&s);
  e = call_model("ok", "x", &out);
  if (e) CHECK_NOT_CONTAINS(af_error_message(e), "sk-routing-secret");
  CHECK_ERR(e, AF_ERR_PROVIDER, "127.0.0.1", "attempt 3 of 3");
done:
  af_provider_free(p);
  server_stop(&s);
}

int main(int argc, char** argv) {
  static const struct test_case cases[] = {
      CASE(sampling_params_are_part_of_the_ir),
      CASE(bad_sampling_params_are_refused),
      CASE(loaded_sampling_params_are_checked),
      CASE(sampling_params_reach_the_request),
      CASE(host_providers_see_the_params),
      CASE(a_large_batch_asks_each_items_model),
      CASE(requests_per_minute_spreads_the_calls),
      CASE(tokens_per_minute_uses_the_replys_usage),
      CASE(absurd_usage_is_clamped),
      CASE(a_429_pauses_the_whole_provider),
      CASE(provider_options_can_be_changed),
      CASE(fallback_routes_try_the_next_provider),
      CASE(json_object_dialect_sends_the_schema_inline),
      CASE(json_object_joins_the_system_message),
      CASE(schema_reasks_correct_an_invalid_reply),
      CASE(down_and_html_servers_fail_clearly),
  };
  return run_cases(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
