/* tool_call_test.c — af_lm_tool_call and af_tool_results through the C API:
 * echo's tool mode step by step (each tool once, then the answer), the
 * history as af_tool_results builds it, a host provider seeing the tools
 * and being re-asked after an unknown tool or arguments that do not match,
 * the SCHEMA error after the re-asks, lazy contexts, per-item errors of a
 * batched call, and the INVALID_ARGUMENT of every malformed input. (The
 * traced agent loop — while_loop, scan, switch, batch, save and reload —
 * is examples/agent, run as example.agent, and tests/cpp/af_hpp_test.cpp.) */
#include "lazy_common.h"

#include <pthread.h>

static const char* kTools =
    "[{\"name\":\"add\",\"description\":\"Adds.\",\"parameters\":{\"a\":{\"type\":\"int\"},\"b\":{\"type\":\"int\"}}},"
    "{\"name\":\"lookup\",\"parameters\":{\"city\":{\"type\":\"str\",\"min\":1}}},"
    "{\"name\":\"now\"}]";

static const char* kMessages = "[{\"role\":\"system\",\"content\":\"Use the tools.\"},"
                               "{\"role\":\"user\",\"content\":\"What is 2 + 3?\"}]";

/* lm_tool_call(kMessages, history, "m", tools) on context c. */
static af_error_t* tool_call(af_context_t* c, const af_value_t* history, const char* tools, af_value_t** out) {
  af_value_t *msgs = NULL, *model = NULL, *t = NULL;
  af_error_t* e = af_value_from_json(c, kMessages, strlen(kMessages), &msgs);
  if (!e) e = af_value_str(c, "m", 1, &model);
  if (!e) e = af_value_from_json(c, tools, strlen(tools), &t);
  if (!e) e = af_lm_tool_call(c, msgs, history, model, t, NULL, out);
  af_value_free(msgs);
  af_value_free(model);
  af_value_free(t);
  return e;
}

/* The value at key of a dict, as JSON in buf. */
static const char* field_json(const af_value_t* v, const char* key, char* buf, size_t cap) {
  af_value_t* f = NULL;
  af_bytes_t b = {NULL, 0};
  buf[0] = 0;
  if (CHECK_OK(af_value_key(v, key, strlen(key), &f)) && CHECK_OK(af_value_to_json(f, &b)))
    snprintf(buf, cap, "%.*s", (int)b.len, (const char*)b.data);
  af_bytes_free(&b);
  af_value_free(f);
  return buf;
}
#define FIELD(v, key) field_json((v), (key), buf, sizeof buf)

/* history' = tool_results(history, out["turn"], results) */
static af_value_t* next_history(const af_value_t* history, const af_value_t* out, const char* results) {
  af_value_t *turn = NULL, *r = mk_json(results), *h = NULL;
  if (CHECK_OK(af_value_key(out, "turn", 4, &turn))) CHECK_OK(af_tool_results(ctx, history, turn, r, &h));
  af_value_free(turn);
  af_value_free(r);
  return h;
}

static void echo_calls_each_tool_in_turn_then_answers(void) {
  af_provider_t* echo = route_echo(ctx, "{}");
  af_value_t *h0 = mk_str(""), *h1 = NULL, *h2 = NULL, *h3 = NULL, *out = NULL;
  char buf[2048];
  if (!CHECK_OK(tool_call(ctx, h0, kTools, &out))) goto done;
  CHECK_STR_EQ(FIELD(out, "called"), "true");
  CHECK_STR_EQ(FIELD(out, "names"), "[\"add\"]");
  CHECK_STR_EQ(FIELD(out, "arguments"), "[\"{\\\"a\\\":0,\\\"b\\\":0}\"]");
  CHECK_STR_EQ(FIELD(out, "text"), "\"\"");
  CHECK_STR_EQ(FIELD(out, "turn"),
               "\"{\\\"role\\\":\\\"assistant\\\",\\\"content\\\":\\\"\\\",\\\"tool_calls\\\":[{\\\"id\\\":"
               "\\\"call_0\\\",\\\"name\\\":\\\"add\\\",\\\"arguments\\\":\\\"{\\\\\\\"a\\\\\\\":0,\\\\\\\"b\\\\\\\":"
               "0}\\\"}]}\"");
  h1 = next_history(h0, out, "[\"0\"]");
  af_value_free(out);
  out = NULL;
  /* The second step sees the first call and its result: echo calls tool 1,
   * with the smallest city its schema allows (min 1). */
  if (!h1 || !CHECK_OK(tool_call(ctx, h1, kTools, &out))) goto done;
  CHECK_STR_EQ(FIELD(out, "names"), "[\"lookup\"]");
  CHECK_STR_EQ(FIELD(out, "arguments"), "[\"{\\\"city\\\":\\\"a\\\"}\"]");
  h2 = next_history(h1, out, "[\"no entry\"]");
  af_value_free(out);
  out = NULL;
  if (!h2 || !CHECK_OK(tool_call(ctx, h2, kTools, &out))) goto done;
  CHECK_STR_EQ(FIELD(out, "arguments"), "[\"{}\"]");  /* "now" takes no arguments */
  h3 = next_history(h2, out, "[\"noon\"]");
  af_value_free(out);
  out = NULL;
  /* Every tool called: the answer, echoing the last message (the last result). */
  if (!h3 || !CHECK_OK(tool_call(ctx, h3, kTools, &out))) goto done;
  CHECK_STR_EQ(FIELD(out, "called"), "false");
  CHECK_STR_EQ(FIELD(out, "names"), "[]");
  CHECK_STR_EQ(FIELD(out, "text"), "\"m|noon\"");
  CHECK_JSON(h3,
             "\"[{\\\"role\\\":\\\"assistant\\\",\\\"content\\\":\\\"\\\",\\\"tool_calls\\\":[{\\\"id\\\":\\\"call_0\\\","
             "\\\"name\\\":\\\"add\\\",\\\"arguments\\\":\\\"{\\\\\\\"a\\\\\\\":0,\\\\\\\"b\\\\\\\":0}\\\"}]},{\\\"role\\\":"
             "\\\"tool\\\",\\\"tool_call_id\\\":\\\"call_0\\\",\\\"name\\\":\\\"add\\\",\\\"content\\\":\\\"0\\\"},{\\\"role\\\":"
             "\\\"assistant\\\",\\\"content\\\":\\\"\\\",\\\"tool_calls\\\":[{\\\"id\\\":\\\"call_1\\\",\\\"name\\\":"
             "\\\"lookup\\\",\\\"arguments\\\":\\\"{\\\\\\\"city\\\\\\\":\\\\\\\"a\\\\\\\"}\\\"}]},{\\\"role\\\":\\\"tool\\\","
             "\\\"tool_call_id\\\":\\\"call_1\\\",\\\"name\\\":\\\"lookup\\\",\\\"content\\\":\\\"no entry\\\"},{\\\"role\\\":"
             "\\\"assistant\\\",\\\"content\\\":\\\"\\\",\\\"tool_calls\\\":[{\\\"id\\\":\\\"call_2\\\",\\\"name\\\":"
             "\\\"now\\\",\\\"arguments\\\":\\\"{}\\\"}]},{\\\"role\\\":\\\"tool\\\",\\\"tool_call_id\\\":\\\"call_2\\\","
             "\\\"name\\\":\\\"now\\\",\\\"content\\\":\\\"noon\\\"}]\"");
  {
    /* A final turn (no calls) with no results appends the turn alone. */
    af_value_t* h4 = next_history(h3, out, "[]");
    af_value_t* last = NULL;
    size_t n = 0;
    af_value_t* parsed = NULL;
    const char* s = NULL;
    if (h4 && CHECK_OK(af_value_get_str(h4, &s, &n)) && CHECK_OK(af_value_from_json(ctx, s, n, &parsed)) &&
        CHECK_OK(af_value_len(parsed, &n)) && CHECK_OK(af_value_index(parsed, n - 1, &last)))
      CHECK_JSON(last, "{\"role\":\"assistant\",\"content\":\"m|noon\"}");
    af_value_free(last);
    af_value_free(parsed);
    af_value_free(h4);
  }
done:
  af_value_free(out);
  af_value_free(h0);
  af_value_free(h1);
  af_value_free(h2);
  af_value_free(h3);
  af_provider_free(echo);
}

/* A host provider: records each request's JSON and answers from a script. */
struct script {
  pthread_mutex_t mu;
  const char* replies[4];
  int n_replies;
  int asked;
  char first[4096], last[4096];
};

static void scripted(void* ud, af_lm_request_t* req) {
  struct script* s = (struct script*)ud;
  af_bytes_t b = {NULL, 0};
  const char* reply;
  pthread_mutex_lock(&s->mu);
  if (!af_lm_request_json(req, &b)) {
    snprintf(s->asked ? s->last : s->first, sizeof s->first, "%.*s", (int)b.len, (const char*)b.data);
    af_bytes_free(&b);
  }
  reply = s->replies[s->asked < s->n_replies ? s->asked : s->n_replies - 1];
  s->asked++;
  pthread_mutex_unlock(&s->mu);
  af_error_free(af_lm_request_complete(req, reply, strlen(reply)));
}

static af_provider_t* route_script(struct script* s) {
  af_provider_t* p = NULL;
  pthread_mutex_init(&s->mu, NULL);
  const char* retries = "{\"schema_retries\":2}";
  if (!CHECK_OK(af_provider_host_new(scripted, s, NULL, &p))) return NULL;
  CHECK_OK(af_provider_set_options(p, retries, strlen(retries)));  /* re-asks are off by default */
  CHECK_OK(af_context_route(ctx, "*", 1, p));
  return p;
}

static void a_host_provider_sees_the_tools_and_is_reasked(void) {
  struct script s;
  af_provider_t* p;
  af_value_t *h = mk_str(""), *out = NULL;
  char buf[1024];
  memset(&s, 0, sizeof s);
  s.replies[0] = "{\"content\":null,\"tool_calls\":[{\"id\":\"t1\",\"name\":\"search\",\"arguments\":\"{}\"}]}";
  s.replies[1] = "{\"content\":\"Let me add.\",\"tool_calls\":[{\"id\":\"t2\",\"name\":\"add\",\"arguments\":{\"a\":2}}]}";
  s.replies[2] = "{\"content\":\"Let me add.\",\"tool_calls\":[{\"id\":\"t3\",\"name\":\"add\",\"arguments\":{\"b\":3,\"a\":2}}]}";
  s.n_replies = 3;
  p = route_script(&s);
  if (!p) goto done;
  if (!CHECK_OK(tool_call(ctx, h, kTools, &out))) goto done;
  CHECK(s.asked == 3);
  /* The tools as JSON Schema, a tool without parameters as an empty object. */
  CHECK_CONTAINS(s.first, "\"tools\":[{\"name\":\"add\",\"description\":\"Adds.\",\"parameters\":{\"type\":\"object\"");
  CHECK_CONTAINS(s.first, "{\"name\":\"now\",\"description\":\"\",\"parameters\":{\"type\":\"object\",\"properties\":{}");
  /* The last re-ask says what was wrong with the reply before. */
  CHECK_CONTAINS(s.last, "\"reask\":2");
  CHECK_CONTAINS(s.last, "$.b");
  CHECK_STR_EQ(FIELD(out, "text"), "\"Let me add.\"");
  CHECK_STR_EQ(FIELD(out, "names"), "[\"add\"]");
  CHECK_STR_EQ(FIELD(out, "arguments"), "[\"{\\\"b\\\":3,\\\"a\\\":2}\"]");
done:
  af_value_free(out);
  af_value_free(h);
  af_provider_free(p);
}

static void the_history_reaches_the_provider(void) {
  struct script s;
  af_provider_t* p;
  af_value_t *h = NULL, *out = NULL;
  memset(&s, 0, sizeof s);
  s.replies[0] = "{\"content\":\"5\",\"tool_calls\":[]}";
  s.n_replies = 1;
  p = route_script(&s);
  h = mk_str("[{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"id\":\"c\",\"name\":\"add\","
             "\"arguments\":\"{}\"}]},{\"role\":\"tool\",\"tool_call_id\":\"c\",\"name\":\"add\",\"content\":\"5\"}]");
  if (!p || !h || !CHECK_OK(tool_call(ctx, h, kTools, &out))) goto done;
  CHECK_CONTAINS(s.first,
                 "{\"role\":\"user\",\"content\":\"What is 2 + 3?\"},{\"role\":\"assistant\",\"content\":\"\","
                 "\"tool_calls\":[{\"id\":\"c\",\"name\":\"add\",\"arguments\":\"{}\"}]},{\"role\":\"tool\","
                 "\"content\":\"5\",\"tool_call_id\":\"c\",\"name\":\"add\"}");
done:
  af_value_free(out);
  af_value_free(h);
  af_provider_free(p);
}

static void invalid_tool_calls_fail_with_schema_after_the_reasks(void) {
  struct script s;
  af_provider_t* p;
  af_value_t *h = mk_str(""), *out = NULL;
  memset(&s, 0, sizeof s);
  s.replies[0] = "{\"content\":null,\"tool_calls\":[{\"name\":\"lookup\",\"arguments\":{\"city\":\"\"}}]}";
  s.n_replies = 1;
  p = route_script(&s);
  if (!p) goto done;
  CHECK_ERR(tool_call(ctx, h, kTools, &out), AF_ERR_SCHEMA, "lm_tool_call", "tool \"lookup\"", "$.city", "after 2 re-asks");
  CHECK(s.asked == 3);
  CHECK(out == NULL);
  /* Not a reply object at all. */
  s.replies[0] = "plain text";
  CHECK_ERR(tool_call(ctx, h, kTools, &out), AF_ERR_SCHEMA, "not JSON");
done:
  af_value_free(h);
  af_provider_free(p);
}

/* On a lazy context the call is a promise like any other. */
static void lazy_contexts_record_tool_calls(void) {
  af_context_t* lz = lazy_ctx(NULL);
  af_provider_t* echo = lz ? route_echo(lz, "{}") : NULL;
  af_value_t *h = NULL, *out = NULL, *turn = NULL, *results = NULL, *h1 = NULL;
  if (!echo) goto done;
  h = str_in(lz, "");
  if (!CHECK_OK(tool_call(lz, h, kTools, &out))) goto done;
  CHECK(!af_value_ready(out));
  CHECK_OK(af_value_key(out, "turn", 4, &turn));
  CHECK_OK(af_value_from_json(lz, "[\"5\"]", 5, &results));
  if (CHECK_OK(af_tool_results(lz, h, turn, results, &h1)))
    CHECK_JSON(h1,
               "\"[{\\\"role\\\":\\\"assistant\\\",\\\"content\\\":\\\"\\\",\\\"tool_calls\\\":[{\\\"id\\\":"
               "\\\"call_0\\\",\\\"name\\\":\\\"add\\\",\\\"arguments\\\":\\\"{\\\\\\\"a\\\\\\\":0,\\\\\\\"b\\\\\\\":0}\\\"}]},"
               "{\\\"role\\\":\\\"tool\\\",\\\"tool_call_id\\\":\\\"call_0\\\",\\\"name\\\":\\\"add\\\",\\\"content\\\":"
               "\\\"5\\\"}]\"");
done:
  af_value_free(h);
  af_value_free(out);
  af_value_free(turn);
  af_value_free(results);
  af_value_free(h1);
  af_provider_free(echo);
  af_context_free(lz);
}

/* program(history) = lm_tool_call(kMessages, history, "m", kTools) */
static af_error_t* tool_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n, af_value_t** out) {
  (void)ud;
  (void)n;
  return tool_call(c, in[0], kTools, out);
}

/* Batched with per-item errors, an item whose history is malformed becomes
 * its error value; the others are asked. */
static void a_batched_call_with_item_errors_fails_only_the_bad_item(void) {
  af_provider_t* echo = route_echo(ctx, "{}");
  af_ir_t *ir = TRACE(tool_fn, NULL, "[\"\"]", NULL), *batched = NULL;
  af_program_t* prog = NULL;
  af_value_t *in = mk_json("[\"\", \"not json\"]"), *out = NULL;
  af_run_options_t o;
  char buf[2048];
  if (!ir || !in || !CHECK_OK(af_batch(ctx, ir, NULL, &batched))) goto done;
  if (!CHECK_OK(af_compile(ctx, batched, &prog))) goto done;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.flags = AF_RUN_ITEM_ERRORS;
  if (CHECK_OK(af_program_call_with(ctx, prog, AS_ARGS(&in), 1, &o, &out))) {
    CHECK_CONTAINS(FIELD(out, "names"), "[[\"add\"],{\"error\":");
    CHECK_CONTAINS(FIELD(out, "called"), "[true,{\"error\":");
    CHECK_CONTAINS(buf, "not JSON");
    CHECK_CONTAINS(buf, "batch item 1");
  }
done:
  af_value_free(in);
  af_value_free(out);
  af_program_free(prog);
  af_ir_free(batched);
  af_ir_free(ir);
  af_provider_free(echo);
}

/* lm_tool_call(kMessages, history, "m", kTools, params) */
static af_error_t* tool_call_with(const af_value_t* history, const char* params, af_value_t** out) {
  af_value_t *msgs = mk_json(kMessages), *model = mk_str("m"), *t = mk_json(kTools), *p = mk_json(params);
  af_error_t* e = af_lm_tool_call(ctx, msgs, history, model, t, p, out);
  af_value_free(msgs);
  af_value_free(model);
  af_value_free(t);
  af_value_free(p);
  return e;
}

static void tool_choice_is_sent_obeyed_and_checked(void) {
  af_provider_t* echo = route_echo(ctx, "{}");
  af_value_t *h = mk_str(""), *out = NULL;
  char buf[1024];
  struct script s;
  af_provider_t* host = NULL;
  if (CHECK_OK(tool_call_with(h, "{\"tool_choice\":\"lookup\"}", &out)))
    CHECK_STR_EQ(FIELD(out, "names"), "[\"lookup\"]");
  af_value_free(out);
  out = NULL;
  if (CHECK_OK(tool_call_with(h, "{\"tool_choice\":\"none\",\"temperature\":0}", &out))) {
    CHECK_STR_EQ(FIELD(out, "called"), "false");
    CHECK_STR_EQ(FIELD(out, "text"), "\"m|What is 2 + 3?\"");
  }
  af_value_free(out);
  out = NULL;
  CHECK_ERR(tool_call_with(h, "{\"tool_choice\":\"search\"}", &out), AF_ERR_INVALID_ARGUMENT,
            "tool_choice must be", "\"add\", \"lookup\", \"now\"");
  CHECK_ERR(tool_call_with(h, "{\"tool_choice\":1}", &out), AF_ERR_INVALID_ARGUMENT, "tool_choice");
  CHECK_ERR(tool_call_with(h, "{\"tools\":1}", &out), AF_ERR_INVALID_ARGUMENT, "unknown param", "tool_choice)");
  /* A host provider sees the choice; a reply that ignores it is re-asked, then SCHEMA. */
  memset(&s, 0, sizeof s);
  s.replies[0] = "{\"content\":\"5\",\"tool_calls\":[]}";
  s.n_replies = 1;
  host = route_script(&s);
  if (host) {
    CHECK_ERR(tool_call_with(h, "{\"tool_choice\":\"add\"}", &out), AF_ERR_SCHEMA, "without calling tool \"add\"");
    CHECK_CONTAINS(s.first, "\"tool_choice\":\"add\"");
    s.replies[0] = "{\"content\":null,\"tool_calls\":[{\"name\":\"now\",\"arguments\":{}}]}";
    CHECK_ERR(tool_call_with(h, "{\"tool_choice\":\"none\"}", &out), AF_ERR_SCHEMA, "though tool_choice is \"none\"");
  }
  af_value_free(h);
  af_provider_free(host);
  af_provider_free(echo);
}

/* A traced call: one LM call in the cost, the same after a save and load;
 * not differentiable. */
static void a_traced_call_is_costed_saved_and_not_differentiated(void) {
  af_provider_t* echo = route_echo(ctx, "{}");
  af_ir_t *ir = TRACE(tool_fn, NULL, "[\"\"]", NULL), *loaded = NULL, *pushed = NULL;
  af_bytes_t cost = {NULL, 0}, bytes = {NULL, 0};
  if (!ir) goto done;
  if (CHECK_OK(af_ir_cost_json(ir, 1, &cost))) CHECK_CONTAINS((const char*)cost.data, "\"total\":{\"calls\":1");
  if (CHECK_OK(af_ir_to_bytes(ir, &bytes)) && CHECK_OK(af_ir_from_bytes(ctx, bytes.data, bytes.len, &loaded))) {
    CHECK(af_ir_equal(ir, loaded));
    CHECK_CALL(loaded, "[\"\"]",
               "{\"called\":true,\"text\":\"\",\"names\":[\"add\"],\"arguments\":[\"{\\\"a\\\":0,\\\"b\\\":0}\"],"
               "\"turn\":\"{\\\"role\\\":\\\"assistant\\\",\\\"content\\\":\\\"\\\",\\\"tool_calls\\\":"
               "[{\\\"id\\\":\\\"call_0\\\",\\\"name\\\":\\\"add\\\",\\\"arguments\\\":\\\"{\\\\\\\"a\\\\\\\":0,"
               "\\\\\\\"b\\\\\\\":0}\\\"}]}\"}");
  }
  /* A tangent reaching the call (through its history) has no rule. */
  CHECK_ERR(af_pushforward(ctx, ir, &pushed), AF_ERR_INVALID_ARGUMENT, "lm_tool_call has no pushforward rule");
done:
  af_bytes_free(&cost);
  af_bytes_free(&bytes);
  af_ir_free(ir);
  af_ir_free(loaded);
  af_ir_free(pushed);
  af_provider_free(echo);
}

static void malformed_inputs_are_invalid_argument(void) {
  af_provider_t* echo = route_echo(ctx, "{}");
  af_value_t *h = mk_str(""), *out = NULL, *n = mk_int(3), *turn = NULL, *r = NULL;
  size_t i;
  static const struct {
    const char* tools;
    const char* fragment;
  } kBadTools[] = {
      {"[]", "non-empty list"},
      {"[{\"name\":\"a b\"}]", "\"name\" must be"},
      {"[{\"name\":\"a\"},{\"name\":\"a\"}]", "taken by an earlier tool"},
      {"[{\"name\":\"a\",\"params\":{}}]", "unknown key \"params\""},
      {"[{\"name\":\"a\",\"parameters\":{\"type\":\"int\"}}]", "root is a dict of fields"},
      {"[{\"name\":\"a\",\"parameters\":{\"x\":{\"type\":\"int\",\"min\":3,\"max\":1}}}]", "tools[0].parameters"},
  };
  for (i = 0; i < sizeof kBadTools / sizeof kBadTools[0]; ++i)
    CHECK_ERR(tool_call(ctx, h, kBadTools[i].tools, &out), AF_ERR_INVALID_ARGUMENT, kBadTools[i].fragment);
  /* Histories are checked when given. */
  {
    static const struct {
      const char* history;
      const char* fragment;
    } kBad[] = {
        {"{", "not JSON"},
        {"{}", "JSON array of messages"},
        {"[{\"role\":\"robot\",\"content\":\"x\"}]", "history[0]: the role is \"robot\""},
        {"[{\"role\":\"tool\",\"content\":\"x\"}]", "tool_call_id"},
        {"[{\"role\":\"user\",\"content\":\"x\",\"tool_calls\":[]}]", "only an assistant"},
        {"[{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"name\":\"a\"}]}]", "tool_calls[0]"},
    };
    for (i = 0; i < sizeof kBad / sizeof kBad[0]; ++i) {
      af_value_t* bad = mk_str(kBad[i].history);
      CHECK_ERR(tool_call(ctx, bad, kTools, &out), AF_ERR_INVALID_ARGUMENT, "lm_tool_call", kBad[i].fragment);
      af_value_free(bad);
    }
  }
  CHECK_ERR(tool_call(ctx, n, kTools, &out), AF_ERR_INVALID_ARGUMENT, "history must be a str");
  CHECK_ERR(af_lm_tool_call(ctx, NULL, h, h, h, NULL, &out), AF_ERR_INVALID_ARGUMENT, "messages");
  /* tool_results: one result per call, strs, a real turn. */
  turn = mk_str("{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"id\":\"c\",\"name\":\"a\","
                "\"arguments\":\"{}\"}]}");
  r = mk_json("[]");
  CHECK_ERR(af_tool_results(ctx, h, turn, r, &out), AF_ERR_INVALID_ARGUMENT, "1 tool call(s) but 0 result(s)");
  af_value_free(r);
  r = mk_json("[7]");
  CHECK_ERR(af_tool_results(ctx, h, turn, r, &out), AF_ERR_INVALID_ARGUMENT, "result 0 is int");
  af_value_free(r);
  r = mk_json("[\"ok\"]");
  CHECK_ERR(af_tool_results(ctx, h, h, r, &out), AF_ERR_INVALID_ARGUMENT, "turn is not JSON");
  CHECK_ERR(af_tool_results(ctx, n, turn, r, &out), AF_ERR_INVALID_ARGUMENT, "history must be a str");
  CHECK_ERR(af_tool_results(ctx, h, turn, NULL, &out), AF_ERR_INVALID_ARGUMENT, "results");
  CHECK(out == NULL);
  af_value_free(h);
  af_value_free(n);
  af_value_free(turn);
  af_value_free(r);
  af_provider_free(echo);
}

int main(int argc, char** argv) {
  static const struct test_case cases[] = {
      CASE(echo_calls_each_tool_in_turn_then_answers),
      CASE(a_host_provider_sees_the_tools_and_is_reasked),
      CASE(the_history_reaches_the_provider),
      CASE(invalid_tool_calls_fail_with_schema_after_the_reasks),
      CASE(lazy_contexts_record_tool_calls),
      CASE(a_batched_call_with_item_errors_fails_only_the_bad_item),
      CASE(tool_choice_is_sent_obeyed_and_checked),
      CASE(a_traced_call_is_costed_saved_and_not_differentiated),
      CASE(malformed_inputs_are_invalid_argument),
  };
  return run_cases(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
