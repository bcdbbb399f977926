/* LM layer through the C API: providers (echo, replay, host, openai against
 * a local fault-injecting server), routes, lm_call and lm_schema_call
 * (eager and traced), schemas and their errors. */
#include "check.h"
#include "lm_helpers.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>

/* ---- echo, routes, eager calls ----------------------------------------- */

static void echo_answers_model_and_last_message(void) {
  af_provider_t* echo = echo_with(NULL);
  af_value_t* msgs = mk_json("[{\"role\":\"system\",\"content\":\"be brief\"},{\"role\":\"user\",\"content\":\"hi there\"}]");
  af_value_t* model = mk_str("m1");
  af_value_t* out = NULL;
  route("*", echo);
  if (CHECK_OK(af_lm_call(ctx, msgs, model, &out))) CHECK_JSON(out, "\"m1|hi there\"");
  af_value_free(out);
  af_value_free(msgs);
  af_value_free(model);
  af_provider_free(echo);
}

static void no_route_is_not_found_naming_the_model(void) {
  af_value_t* msgs = user_msg("x");
  af_value_t* model = mk_str("gpt-unrouted");
  af_value_t* out = (af_value_t*)&out;
  af_provider_t* echo = echo_with(NULL);
  CHECK_ERR(af_lm_call(ctx, msgs, model, &out), AF_ERR_NOT_FOUND, "gpt-unrouted", "af_context_route");
  CHECK_NULLED(out, af_value_free);
  route("claude-*", echo);
  out = NULL;
  CHECK_ERR(af_lm_call(ctx, msgs, model, &out), AF_ERR_NOT_FOUND, "gpt-unrouted", "claude-*");
  af_value_free(msgs);
  af_value_free(model);
  af_provider_free(echo);
}

static void routes_prefer_exact_then_longest_pattern(void) {
  af_provider_t* any = echo_with("{\"name\":\"any\"}");
  af_provider_t* gpt = echo_with("{\"name\":\"gpt\"}");
  af_provider_t* exact = echo_with("{\"name\":\"exact\"}");
  af_value_t* msgs = user_msg("q");
  const char* models[] = {"gpt-4o", "llama", "gpt-exact"};
  size_t i;
  route("gpt-*", gpt);
  route("*", any); /* added later but less specific */
  route("gpt-exact", exact);
  for (i = 0; i < 3; i++) {
    af_value_t* model = mk_str(models[i]);
    af_value_t* out = NULL;
    CHECK_OK(af_lm_call(ctx, msgs, model, &out));
    af_value_free(out);
    af_value_free(model);
  }
  CHECK_INT_EQ(stat_field(gpt, "submitted"), 1);
  CHECK_INT_EQ(stat_field(any, "submitted"), 1);
  CHECK_INT_EQ(stat_field(exact, "submitted"), 1);
  af_value_free(msgs);
  af_provider_free(any);
  af_provider_free(gpt);
  af_provider_free(exact);
}

static void bad_messages_are_invalid_argument(void) {
  static const struct {
    const char* json;
    const char* frag;
  } cases[] = {
      {"\"hello\"", "list"},
      {"[]", "empty"},
      {"[{\"role\":\"user\"}]", "content"},
      {"[{\"role\":\"\",\"content\":\"x\"}]", "role"},
      {"[{\"role\":\"user\",\"content\":3}]", "content must be str"},
      {"[{\"role\":\"user\",\"content\":\"x\",\"name\":\"n\"}]", "unknown key"},
      {"[\"x\"]", "messages[0]"},
  };
  size_t i;
  af_provider_t* echo = echo_with(NULL);
  af_value_t* model = mk_str("m");
  route("*", echo);
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    af_value_t* msgs = mk_json(cases[i].json);
    af_value_t* out = NULL;
    CHECK_ERR(af_lm_call(ctx, msgs, model, &out), AF_ERR_INVALID_ARGUMENT, cases[i].frag);
    af_value_free(msgs);
  }
  {
    af_value_t* msgs = user_msg("x");
    af_value_t* num = mk_int(3);
    af_value_t* out = NULL;
    CHECK_ERR(af_lm_call(ctx, msgs, num, &out), AF_ERR_INVALID_ARGUMENT, "model");
    CHECK_ERR(af_lm_call(ctx, NULL, model, &out), AF_ERR_INVALID_ARGUMENT, "messages");
    af_value_free(num);
    af_value_free(msgs);
  }
  af_value_free(model);
  af_provider_free(echo);
}

static void provider_options_are_checked(void) {
  af_provider_t* p = (af_provider_t*)&p;
  CHECK_ERR(af_provider_echo_new("{\"latency\":5}", 13, &p), AF_ERR_INVALID_ARGUMENT, "unknown option", "latency");
  CHECK_NULLED(p, af_provider_free);
  CHECK_ERR(af_provider_echo_new("{\"latency_ms\":\"5\"}", 18, &p), AF_ERR_INVALID_ARGUMENT, "latency_ms", "number");
  CHECK_ERR(af_provider_echo_new("{nope", 5, &p), AF_ERR_INVALID_ARGUMENT, "JSON");
  CHECK_ERR(af_provider_openai_new("{}", 2, &p), AF_ERR_INVALID_ARGUMENT, "base_url");
  CHECK_ERR(af_provider_openai_new("{\"base_url\":\"ftp://x\"}", 22, &p), AF_ERR_INVALID_ARGUMENT, "http");
  CHECK_ERR(af_provider_openai_new("{\"base_url\":\"http://x\",\"api_key_env\":\"AF_TEST_SURELY_UNSET_VAR\"}", 64, &p),
            AF_ERR_INVALID_ARGUMENT, "AF_TEST_SURELY_UNSET_VAR", "not set");
  CHECK_ERR(af_provider_replay_new("{}", 2, &p), AF_ERR_INVALID_ARGUMENT, "path");
  CHECK_ERR(af_provider_replay_new("{\"path\":\"/nonexistent/x.jsonl\"}", 31, &p), AF_ERR_IO, "/nonexistent/x.jsonl");
  CHECK_ERR(af_provider_replay_new("{\"path\":\"/tmp/x\",\"mode\":\"record\"}", 33, &p), AF_ERR_INVALID_ARGUMENT, "upstream");
}

/* ---- schemas ------------------------------------------------------------ */

static void echo_answers_smallest_valid_instance(void) {
  af_provider_t* echo = echo_with(NULL);
  af_value_t* msgs = user_msg("rate this");
  af_value_t* model = mk_str("m");
  af_value_t* schema = mk_json(
      "{\"answer\":{\"type\":\"str\",\"min\":3,\"doc\":\"one line\"},"
      "\"score\":{\"type\":\"int\",\"min\":1,\"max\":10},\"ok\":{\"type\":\"bool\"},"
      "\"tone\":{\"type\":\"enum\",\"values\":[\"warm\",\"cold\"]},\"p\":{\"type\":\"float\",\"min\":0.5},"
      "\"pair\":[{\"type\":\"int\",\"max\":-2},{\"type\":\"str\",\"pattern\":\"^[0-9]+$\",\"min\":2}]}");
  af_value_t* out = NULL;
  route("*", echo);
  if (CHECK_OK(af_lm_schema_call(ctx, msgs, model, schema, &out)))
    CHECK_JSON(out, "{\"answer\":\"aaa\",\"score\":1,\"ok\":false,\"tone\":\"warm\",\"p\":0.5,\"pair\":[-2,\"00\"]}");
  af_value_free(out);
  /* A single-node schema returns a single leaf. */
  af_value_free(schema);
  schema = mk_json("{\"type\":\"int\",\"min\":4}");
  out = NULL;
  if (CHECK_OK(af_lm_schema_call(ctx, msgs, model, schema, &out))) CHECK_JSON(out, "4");
  af_value_free(out);
  af_value_free(schema);
  af_value_free(msgs);
  af_value_free(model);
  af_provider_free(echo);
}

static void bad_schemas_name_the_path(void) {
  static const struct {
    const char* json;
    const char* frag1;
    const char* frag2;
  } cases[] = {
      {"{\"a\":{\"type\":\"strr\"}}", "$.a", "unknown node type"},
      {"{\"a\":{\"type\":\"int\",\"min\":5,\"max\":1}}", "$.a", "min"},
      {"{\"a\":{\"type\":\"str\",\"mx\":3}}", "$.a", "unknown key \"mx\""},
      {"{\"a\":{\"b\":[{\"type\":\"enum\",\"values\":[]}]}}", "$.a.b[0]", "values"},
      {"{\"a\":{\"type\":\"str\",\"pattern\":\"(\"}}", "$.a", "pattern"},
      {"{\"a\":{\"type\":\"str\",\"max\":-1}}", "$.a", "\"max\" must be >= 0"},
      {"{\"a\":{\"type\":\"str\",\"min\":1000000000000}}", "$.a", "no reply can be longer"},
      {"{\"a\":{\"type\":\"float\",\"min\":1,\"max\":0}}", "$.a", "min"},
      {"{\"a\":{\"type\":\"enum\",\"values\":[true,\"x\"]}}", "$.a", "one kind"},
      {"{\"a\":3}", "$.a", "expected a node"},
      {"{}", "$", "empty"},
  };
  size_t i;
  af_provider_t* echo = echo_with(NULL);
  af_value_t* msgs = user_msg("x");
  af_value_t* model = mk_str("m");
  route("*", echo);
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    af_value_t* schema = mk_json(cases[i].json);
    af_value_t* out = NULL;
    CHECK_ERR(af_lm_schema_call(ctx, msgs, model, schema, &out), AF_ERR_INVALID_ARGUMENT, cases[i].frag1,
              cases[i].frag2);
    af_value_free(schema);
  }
  af_value_free(msgs);
  af_value_free(model);
  af_provider_free(echo);
}

/* ---- host provider ------------------------------------------------------ */

#define MAX_REQS 64
struct host_queue {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  af_lm_request_t* reqs[MAX_REQS];
  size_t n, taken;
  int stop;
  int destroyed;
  const char* reply;  /* NULL: answer "host:<model>" */
  int fail;
};

static void host_submit(void* ud, af_lm_request_t* req) {
  struct host_queue* q = (struct host_queue*)ud;
  pthread_mutex_lock(&q->mu);
  if (q->n < MAX_REQS) q->reqs[q->n++] = req;
  pthread_cond_broadcast(&q->cv);
  pthread_mutex_unlock(&q->mu);
}

static void host_destroy(void* ud) { ((struct host_queue*)ud)->destroyed++; }

/* The number of requests queued, read under the lock; waits (up to 5 s) for
 * `want` of them. */
static size_t host_queue_wait(struct host_queue* q, size_t want) {
  double t0 = now_ms();
  size_t n;
  for (;;) {
    pthread_mutex_lock(&q->mu);
    n = q->n;
    pthread_mutex_unlock(&q->mu);
    if (n >= want || now_ms() - t0 >= 5000) return n;
    sleep_ms(5);
  }
}

/* Answers every request from another thread after a short delay. */
static void* host_worker(void* arg) {
  struct host_queue* q = (struct host_queue*)arg;
  for (;;) {
    af_lm_request_t* req;
    pthread_mutex_lock(&q->mu);
    while (q->taken == q->n && !q->stop) pthread_cond_wait(&q->cv, &q->mu);
    if (q->taken == q->n && q->stop) {
      pthread_mutex_unlock(&q->mu);
      return NULL;
    }
    req = q->reqs[q->taken++];
    pthread_mutex_unlock(&q->mu);
    sleep_ms(5);
    if (q->fail) {
      af_error_t* e = af_error_new(AF_ERR_PROVIDER, "upstream said no", 16);
      CHECK_OK(af_lm_request_fail(req, e));
    } else if (q->reply) {
      CHECK_OK(af_lm_request_complete(req, q->reply, strlen(q->reply)));
    } else {
      af_bytes_t b = {NULL, 0};
      char reply[600];
      CHECK_OK(af_lm_request_json(req, &b));
      snprintf(reply, sizeof reply, "host:%.*s", (int)b.len, (const char*)b.data);
      af_bytes_free(&b);
      CHECK_OK(af_lm_request_complete(req, reply, strlen(reply)));
    }
  }
}

static void host_queue_init(struct host_queue* q) {
  memset(q, 0, sizeof *q);
  pthread_mutex_init(&q->mu, NULL);
  pthread_cond_init(&q->cv, NULL);
}

static void host_queue_stop(struct host_queue* q, pthread_t th) {
  pthread_mutex_lock(&q->mu);
  q->stop = 1;
  pthread_cond_broadcast(&q->cv);
  pthread_mutex_unlock(&q->mu);
  pthread_join(th, NULL);
}

static void host_provider_completes_from_another_thread(void) {
  struct host_queue q;
  pthread_t th;
  af_provider_t* host = NULL;
  af_value_t* msgs = mk_json("[{\"role\":\"system\",\"content\":\"S\"},{\"role\":\"user\",\"content\":\"U\"}]");
  af_value_t* model = mk_str("local");
  af_value_t* out = NULL;
  host_queue_init(&q);
  pthread_create(&th, NULL, host_worker, &q);
  CHECK_OK(af_provider_host_new(host_submit, &q, host_destroy, &host));
  route("*", host);
  if (CHECK_OK(af_lm_call(ctx, msgs, model, &out)))
    CHECK_JSON(out, "\"host:{\\\"model\\\":\\\"local\\\",\\\"messages\\\":[{\\\"role\\\":\\\"system\\\",\\\"content\\\":"
                    "\\\"S\\\"},{\\\"role\\\":\\\"user\\\",\\\"content\\\":\\\"U\\\"}]}\"");
  af_value_free(out);
  /* A failure keeps the host's code and chains its error. */
  q.fail = 1;
  out = NULL;
  CHECK_ERR(af_lm_call(ctx, msgs, model, &out), AF_ERR_PROVIDER, "upstream said no", "local");
  host_queue_stop(&q, th);
  af_provider_free(host);
  CHECK_INT_EQ(q.destroyed, 0); /* still routed in the context */
  af_context_free(ctx);
  ctx = NULL;
  CHECK_INT_EQ(q.destroyed, 1);
  af_context_new(&ctx);
  af_value_free(msgs);
  af_value_free(model);
}

static af_error_t* ask_program(void* ud, af_context_t* c, const af_value_t* const* in, size_t n, af_value_t** out);

/* Starts ir (batched over q) on ["a", "b"] with model "m". */
static af_future_t* start_two_asks(af_program_t** prog) {
  af_ir_t* ir = TRACE(ask_program, NULL, "[\"q\", \"m\"]", NULL);
  af_ir_t* batched = NULL;
  af_value_t* axes = mk_json("[true, false]");
  af_future_t* f = NULL;
  af_value_t* in[2];
  in[0] = mk_json("[\"a\", \"b\"]");
  in[1] = mk_str("m");
  if (ir && CHECK_OK(af_batch(ctx, ir, axes, &batched)) && CHECK_OK(af_compile(ctx, batched, prog)))
    CHECK_OK(af_program_call_async(ctx, *prog, (const af_value_t* const*)in, 2, &f));
  af_value_free(in[0]);
  af_value_free(in[1]);
  af_value_free(axes);
  af_ir_free(batched);
  af_ir_free(ir);
  return f;
}

/* When a provider's last reference goes (its handle freed, then its route
 * replaced) with requests still queued or in flight, they fail with
 * CANCELLED at once: not an answer from a provider that is gone, nor a
 * wait for one. */
static void freeing_a_provider_cancels_its_requests(void) {
  af_provider_t* slow = echo_with("{\"latency_ms\":5000,\"max_in_flight\":1}");
  af_provider_t* other = echo_with(NULL);
  af_program_t* prog = NULL;
  af_future_t* f;
  af_value_t* out = NULL;
  double t0;
  route("*", slow);
  f = start_two_asks(&prog);
  t0 = now_ms();
  while (f && stat_field(slow, "in_flight") + stat_field(slow, "queued") < 2 && now_ms() - t0 < 5000) sleep_ms(5);
  CHECK_INT_EQ(stat_field(slow, "in_flight"), 1);
  CHECK_INT_EQ(stat_field(slow, "queued"), 1);
  af_provider_free(slow);
  t0 = now_ms();
  route("*", other);
  if (f) CHECK_ERR(af_future_wait(f, &out), AF_ERR_CANCELLED, "provider echo was freed");
  CHECK(now_ms() - t0 < 2000);
  af_future_free(f);
  af_program_free(prog);
  af_provider_free(other);
}

/* The same for a host provider: its requests in flight report cancelled,
 * and answering one then is ignored. */
static void freeing_a_host_provider_cancels_its_requests(void) {
  struct host_queue q;
  af_provider_t* host = NULL;
  af_provider_t* other = echo_with(NULL);
  af_program_t* prog = NULL;
  af_future_t* f = NULL;
  af_value_t* out = NULL;
  size_t i;
  host_queue_init(&q);
  CHECK_OK(af_provider_host_new(host_submit, &q, host_destroy, &host));
  route("*", host);
  af_provider_free(host);
  f = start_two_asks(&prog);
  CHECK_INT_EQ(f ? host_queue_wait(&q, 2) : 0, 2);
  CHECK_INT_EQ(af_lm_request_cancelled(q.reqs[0]), 0);
  route("*", other);
  CHECK_INT_EQ(q.destroyed, 1);
  if (f) CHECK_ERR(af_future_wait(f, &out), AF_ERR_CANCELLED, "provider host was freed");
  for (i = 0; i < q.n; i++) {
    CHECK_INT_EQ(af_lm_request_cancelled(q.reqs[i]), 1);
    CHECK_OK(af_lm_request_complete(q.reqs[i], "late", 4));
  }
  af_future_free(f);
  af_program_free(prog);
  af_provider_free(other);
}

static void schema_replies_are_validated(void) {
  static const struct {
    const char* reply;
    int code;
    const char* frag1;
    const char* frag2;
  } cases[] = {
      {"{\"answer\":\"ok\",\"score\":12}", AF_ERR_SCHEMA, "$.score", "<= 10"},
      {"{\"answer\":\"ok\"}", AF_ERR_SCHEMA, "$.score", "missing"},
      {"{\"answer\":\"ok\",\"score\":3,\"x\":1}", AF_ERR_SCHEMA, "$.x", "unexpected"},
      {"{\"answer\":5,\"score\":3}", AF_ERR_SCHEMA, "$.answer", "string"},
      {"not json at all", AF_ERR_SCHEMA, "not valid JSON", "not json"},
      {"[1,2]", AF_ERR_SCHEMA, "$", "object"},
  };
  size_t i;
  struct host_queue q;
  pthread_t th;
  af_provider_t* host = NULL;
  af_value_t* msgs = user_msg("x");
  af_value_t* model = mk_str("m");
  af_value_t* schema = mk_json("{\"answer\":{\"type\":\"str\"},\"score\":{\"type\":\"int\",\"min\":1,\"max\":10}}");
  host_queue_init(&q);
  pthread_create(&th, NULL, host_worker, &q);
  CHECK_OK(af_provider_host_new(host_submit, &q, NULL, &host));
  route("*", host);
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    af_value_t* out = NULL;
    q.reply = cases[i].reply;
    CHECK_ERR(af_lm_schema_call(ctx, msgs, model, schema, &out), cases[i].code, cases[i].frag1, cases[i].frag2);
  }
  {
    af_value_t* out = NULL;
    q.reply = "```json\n{\"score\": 2.0, \"answer\": \"fenced\"}\n```";
    if (CHECK_OK(af_lm_schema_call(ctx, msgs, model, schema, &out))) CHECK_JSON(out, "{\"answer\":\"fenced\",\"score\":2}");
    af_value_free(out);
  }
  host_queue_stop(&q, th);
  af_provider_free(host);
  af_value_free(schema);
  af_value_free(msgs);
  af_value_free(model);
}

/* ---- tracing ------------------------------------------------------------- */

/* (question, model) -> {"a": lm_call(...), "b": lm_schema_call(...)} */
static af_error_t* lm_program(void* ud, af_context_t* c, const af_value_t* const* in, size_t n, af_value_t** out) {
  af_value_t *sys = NULL, *role_sys = NULL, *role_user = NULL, *msgs = NULL, *m1 = NULL, *m2 = NULL;
  af_value_t *a = NULL, *b = NULL, *schema = NULL;
  af_error_t* e;
  const char* keys[] = {"role", "content"};
  size_t lens[] = {4, 7};
  const char* out_keys[] = {"a", "b"};
  size_t out_lens[] = {1, 1};
  (void)ud;
  (void)n;
  af_value_str(c, "be brief", 8, &sys);
  af_value_str(c, "system", 6, &role_sys);
  af_value_str(c, "user", 4, &role_user);
  {
    const af_value_t* v1[] = {role_sys, sys};
    const af_value_t* v2[] = {role_user, in[0]};
    af_value_dict(c, keys, lens, v1, 2, &m1);
    af_value_dict(c, keys, lens, v2, 2, &m2);
  }
  {
    const af_value_t* items[] = {m1, m2};
    af_value_list(c, items, 2, &msgs);
  }
  e = af_lm_call(c, msgs, in[1], &a);
  if (!e) {
    af_value_from_json(c, "{\"n\":{\"type\":\"int\",\"min\":2}}", 28, &schema);
    e = af_lm_schema_call(c, msgs, in[1], schema, &b);
  }
  if (!e) {
    const af_value_t* vals[] = {a, b};
    e = af_value_dict(c, out_keys, out_lens, vals, 2, out);
  }
  af_value_free(sys);
  af_value_free(role_sys);
  af_value_free(role_user);
  af_value_free(m1);
  af_value_free(m2);
  af_value_free(msgs);
  af_value_free(a);
  af_value_free(b);
  af_value_free(schema);
  return e;
}

static void traced_lm_calls_record_and_run(void) {
  af_provider_t* echo = echo_with(NULL);
  af_ir_t* ir;
  char* text;
  route("*", echo);
  ir = TRACE(lm_program, NULL, "[\"q\", \"m\"]", NULL);
  if (!ir) return;
  text = ir_text(ir);
  CHECK_CONTAINS(text, "lm_call");
  CHECK_CONTAINS(text, "lm_schema_call");
  CHECK_CONTAINS(text, "roles");
  free(text);
  CHECK_INT_EQ(stat_field(echo, "submitted"), 0); /* nothing ran while tracing */
  CHECK_CALL(ir, "[\"why?\", \"small\"]", "{\"a\":\"small|why?\",\"b\":{\"n\":2}}");
  CHECK_INT_EQ(stat_field(echo, "submitted"), 2);
  af_ir_free(ir);
  af_provider_free(echo);
}

static af_error_t* role_from_input(void* ud, af_context_t* c, const af_value_t* const* in, size_t n, af_value_t** out) {
  af_value_t *m = NULL, *msgs = NULL, *model = NULL;
  const char* keys[] = {"role", "content"};
  size_t lens[] = {4, 7};
  const af_value_t* vals[] = {in[0], in[0]};
  af_error_t* e;
  (void)ud;
  (void)n;
  af_value_dict(c, keys, lens, vals, 2, &m);
  af_value_list(c, (const af_value_t* const*)&m, 1, &msgs);
  af_value_str(c, "m", 1, &model);
  e = af_lm_call(c, msgs, model, out);
  af_value_free(m);
  af_value_free(msgs);
  af_value_free(model);
  return e;
}

static void traced_roles_must_be_static(void) {
  af_ir_t* ir = NULL;
  CHECK_ERR(trace_json(role_from_input, NULL, "[\"user\"]", NULL, &ir), AF_ERR_INVALID_ARGUMENT, "role", "static");
  CHECK(ir == NULL);
}

/* ---- limits --------------------------------------------------------------- */

static af_error_t* four_calls(void* ud, af_context_t* c, const af_value_t* const* in, size_t n, af_value_t** out) {
  af_value_t* results[4] = {NULL, NULL, NULL, NULL};
  af_error_t* e = NULL;
  size_t i;
  (void)ud;
  (void)n;
  for (i = 0; i < 4 && !e; i++) {
    af_value_t *msgs = NULL, *content = NULL, *m = NULL, *role = NULL;
    char num[2] = {(char)('0' + i), 0};
    const char* keys[] = {"role", "content"};
    size_t lens[] = {4, 7};
    const af_value_t* parts[2];
    af_value_str(c, num, 1, &content);
    parts[0] = in[0];
    parts[1] = content;
    e = af_concat(c, parts, 2, &m);
    if (!e) {
      const af_value_t* vals[2];
      af_value_str(c, "user", 4, &role);
      vals[0] = role;
      vals[1] = m;
      af_value_dict(c, keys, lens, vals, 2, &msgs);
      {
        af_value_t* list = NULL;
        af_value_list(c, (const af_value_t* const*)&msgs, 1, &list);
        e = af_lm_call(c, list, in[1], &results[i]);
        af_value_free(list);
      }
    }
    af_value_free(msgs);
    af_value_free(content);
    af_value_free(m);
    af_value_free(role);
  }
  if (!e) e = af_value_list(c, (const af_value_t* const*)results, 4, out);
  for (i = 0; i < 4; i++) af_value_free(results[i]);
  return e;
}

static void max_in_flight_is_respected_and_calls_overlap(void) {
  af_provider_t* echo = echo_with("{\"latency_ms\":40,\"max_in_flight\":2}");
  af_ir_t* ir;
  route("*", echo);
  ir = TRACE(four_calls, NULL, "[\"q\", \"m\"]", NULL);
  if (!ir) return;
  CHECK_CALL(ir, "[\"x\", \"m\"]", "[\"m|x0\",\"m|x1\",\"m|x2\",\"m|x3\"]");
  CHECK_INT_EQ(stat_field(echo, "peak_in_flight"), 2);
  CHECK_INT_EQ(stat_field(echo, "finished"), 4);
  CHECK_OK(af_provider_set_max_in_flight(echo, 0));
  CHECK_CALL(ir, "[\"y\", \"m\"]", "[\"m|y0\",\"m|y1\",\"m|y2\",\"m|y3\"]");
  CHECK_INT_EQ(stat_field(echo, "peak_in_flight"), 4);
  af_ir_free(ir);
  af_provider_free(echo);
}

/* ---- replay --------------------------------------------------------------- */

static void replay_records_then_answers(void) {
  char dir[96], path[128], opts[512];
  af_provider_t *rec = NULL, *rep = NULL;
  af_value_t* msgs = user_msg("remember me");
  af_value_t* model = mk_str("m");
  af_value_t* out = NULL;
  /* The record file's missing directories are created. */
  snprintf(dir, sizeof dir, "/tmp/af_replay_%d", (int)getpid());
  snprintf(path, sizeof path, "%s/runs/rec.jsonl", dir);
  snprintf(opts, sizeof opts, "{\"path\":\"%s\",\"mode\":\"record\",\"upstream\":{\"type\":\"echo\",\"name\":\"up\"}}", path);
  if (!CHECK_OK(af_provider_replay_new(opts, strlen(opts), &rec))) return;
  route("*", rec);
  if (CHECK_OK(af_lm_call(ctx, msgs, model, &out))) CHECK_JSON(out, "\"m|remember me\"");
  af_value_free(out);
  af_provider_free(rec);
  af_context_free(ctx);
  af_context_new(&ctx);

  snprintf(opts, sizeof opts, "{\"path\":\"%s\"}", path);
  if (!CHECK_OK(af_provider_replay_new(opts, strlen(opts), &rep))) return;
  route("*", rep);
  out = NULL;
  if (CHECK_OK(af_lm_call(ctx, msgs, model, &out))) CHECK_JSON(out, "\"m|remember me\"");
  af_value_free(out);
  af_value_free(msgs);
  msgs = user_msg("never recorded");
  out = NULL;
  CHECK_ERR(af_lm_call(ctx, msgs, model, &out), AF_ERR_NOT_FOUND, "no recorded answer", "never recorded");
  af_value_free(msgs);
  af_value_free(model);
  af_provider_free(rep);
  /* A directory that cannot be made (a file is in the way): IO naming it. */
  {
    char in_the_way[160];
    snprintf(in_the_way, sizeof in_the_way, "%s/runs/rec.jsonl", dir);
    snprintf(opts, sizeof opts, "{\"path\":\"%s/x.jsonl\",\"mode\":\"record\",\"upstream\":{\"type\":\"echo\"}}", in_the_way);
    rec = NULL;
    CHECK_ERR(af_provider_replay_new(opts, strlen(opts), &rec), AF_ERR_IO, "directory", "rec.jsonl");
    af_provider_free(rec);
  }
  remove(path);
  snprintf(path, sizeof path, "%s/runs", dir);
  rmdir(path);
  rmdir(dir);
}

/* ---- openai against the local fault-injecting server ------------------- */


static void openai_answers_and_sends_the_key(void) {
  struct server s = server_start();
  af_provider_t* p;
  af_value_t* out = NULL;
  setenv("AF_TEST_KEY", "sk-test-123", 1);
  p = openai_for(&s, "\"api_key_env\":\"AF_TEST_KEY\",\"extra\":{\"temperature\":0}");
  if (!p) goto done;
  route("*", p);
  if (CHECK_OK(call_model("ok", "hello", &out))) CHECK_JSON(out, "\"ok|hello\"");
  af_value_free(out);
  out = NULL;
  if (CHECK_OK(call_model("show-auth", "a", &out))) CHECK_JSON(out, "\"Bearer sk-test-123\"");
  af_value_free(out);
  out = NULL;
  if (CHECK_OK(call_model("show-request", "b", &out))) {
    char* body = json_of(out);
    CHECK_CONTAINS(body, "temperature");
    CHECK_NOT_CONTAINS(body, "sk-test");
    free(body);
  }
  af_value_free(out);
  af_provider_free(p);
done:
  server_stop(&s);
}

/* ---- the priority hint ------------------------------------------------ */

/* A host provider that answers at once and records the order models arrive. */
struct arrivals {
  char models[4][32];
  int n;
};

static void record_and_answer(void* ud, af_lm_request_t* req) {
  struct arrivals* a = ud;
  af_bytes_t b = {NULL, 0};
  const char* at;
  CHECK_OK(af_lm_request_json(req, &b));
  at = b.data ? strstr((const char*)b.data, "\"model\":\"") : NULL;
  if (at && a->n < 4) sscanf(at + 9, "%31[^\"]", a->models[a->n++]);
  af_bytes_free(&b);
  CHECK_OK(af_lm_request_complete(req, "ok", 2));
}

/* [lm(q, "first"), lm(q, "second")], the first tagged "urgent" when
 * user_data is non-NULL. */
static af_error_t* two_calls(void* u, af_context_t* c, const af_value_t* const* in, size_t n, af_value_t** out) {
  af_value_t* msgs = NULL;
  af_value_t *m1 = NULL, *m2 = NULL;
  af_value_t* r[2] = {NULL, NULL};
  const char* keys[2] = {"role", "content"};
  const size_t lens[2] = {4, 7};
  const af_value_t* vals[2];
  af_value_t *role = NULL, *msg = NULL;
  af_error_t* err = af_value_str(c, "user", 4, &role);
  (void)n;
  vals[0] = role;
  vals[1] = in[0];
  if (!err) err = af_value_dict(c, keys, lens, vals, 2, &msg);
  if (!err) err = af_value_list(c, (const af_value_t* const*)&msg, 1, &msgs);
  if (!err) err = af_value_str(c, "first", 5, &m1);
  if (!err) err = af_value_str(c, "second", 6, &m2);
  if (!err && u) err = af_tag_push(c, "urgent", 6);
  if (!err) err = af_lm_call(c, msgs, m1, &r[0]);
  if (!err && u) err = af_tag_pop(c);
  if (!err) err = af_lm_call(c, msgs, m2, &r[1]);
  if (!err) err = af_value_list(c, (const af_value_t* const*)r, 2, out);
  af_value_free(r[0]);
  af_value_free(r[1]);
  af_value_free(m1);
  af_value_free(m2);
  af_value_free(msgs);
  af_value_free(msg);
  af_value_free(role);
  return err;
}

/* With one request in flight, the call tagged "urgent" starts first; the
 * same program untagged starts "second" first (the executor takes the later
 * of equal-priority roots first), so the hint is what changes the order. */
static void urgent_tag_starts_first(void) {
  int urgent;
  for (urgent = 0; urgent < 2; urgent++) {
    struct arrivals a;
    af_provider_t* p = NULL;
    af_ir_t* ir = NULL;
    af_value_t* q = mk_str("q");
    af_value_t* out = NULL;
    memset(&a, 0, sizeof a);
    CHECK_OK(af_provider_host_new(record_and_answer, &a, NULL, &p));
    CHECK_OK(af_provider_set_max_in_flight(p, 1));
    route("*", p);
    CHECK_OK(af_trace(ctx, two_calls, urgent ? &a : NULL, (const af_value_t* const*)&q, 1, NULL, &ir));
    CHECK_OK(af_ir_call(ctx, ir, (const af_value_t* const*)&q, 1, &out));
    CHECK_INT_EQ(a.n, 2);
    CHECK_STR_EQ(a.models[0], urgent ? "first" : "second");
    af_value_free(out);
    af_value_free(q);
    af_ir_free(ir);
    af_provider_free(p);
  }
}

/* Provider stats add up the usage block of every completed response (the
 * test server reports len(model) prompt and len(reply) completion tokens);
 * a failed request adds nothing. */
static void openai_usage_adds_up_in_stats(void) {
  struct server s = server_start();
  af_provider_t* p = openai_for(&s, NULL);
  af_value_t* out = NULL;
  if (!p) goto done;
  route("*", p);
  CHECK_INT_EQ(stat_field(p, "prompt_tokens"), 0);
  if (CHECK_OK(call_model("ok", "hello", &out))) CHECK_JSON(out, "\"ok|hello\"");
  af_value_free(out);
  out = NULL;
  if (CHECK_OK(call_model("ok", "hi there", &out))) CHECK_JSON(out, "\"ok|hi there\"");
  af_value_free(out);
  out = NULL;
  CHECK_ERR(call_model("nocontent", "x", &out), AF_ERR_PROVIDER, "content");
  CHECK_INT_EQ(stat_field(p, "prompt_tokens"), 2 + 2);
  CHECK_INT_EQ(stat_field(p, "completion_tokens"), 8 + 11);
  af_provider_free(p);
done:
  server_stop(&s);
}

/* Echo counts words: of every message sent, and of its reply. */
static void echo_counts_words_as_tokens(void) {
  af_provider_t* echo = echo_with(NULL);
  af_value_t* msgs = mk_json("[{\"role\":\"system\",\"content\":\"be brief\"},{\"role\":\"user\",\"content\":\" hi  there\\n\"}]");
  af_value_t* model = mk_str("m1");
  af_value_t* out = NULL;
  int k;
  route("*", echo);
  for (k = 0; k < 2; k++) {
    CHECK_OK(af_lm_call(ctx, msgs, model, &out)); /* "m1| hi  there\n": 3 words */
    af_value_free(out);
    out = NULL;
  }
  CHECK_INT_EQ(stat_field(echo, "prompt_tokens"), 2 * 4);
  CHECK_INT_EQ(stat_field(echo, "completion_tokens"), 2 * 3);
  af_value_free(msgs);
  af_value_free(model);
  af_provider_free(echo);
}

static void openai_schema_calls_send_json_schema(void) {
  struct server s = server_start();
  af_provider_t* p = openai_for(&s, NULL);
  af_value_t* msgs = user_msg("rate");
  af_value_t* schema = mk_json("{\"answer\":{\"type\":\"str\"},\"score\":{\"type\":\"int\",\"min\":1,\"max\":10}}");
  af_value_t *m = NULL, *out = NULL;
  if (!p) goto done;
  route("*", p);
  m = mk_str("schema-ok");
  if (CHECK_OK(af_lm_schema_call(ctx, msgs, m, schema, &out))) CHECK_JSON(out, "{\"answer\":\"fine\",\"score\":7}");
  af_value_free(out);
  af_value_free(m);
  m = mk_str("schema-bad");
  out = NULL;
  CHECK_ERR(af_lm_schema_call(ctx, msgs, m, schema, &out), AF_ERR_SCHEMA, "$.score", "99");
  CHECK_INT_EQ(server_attempts(&s, "schema-bad", "rate"), 1); /* a bad reply is not retried */
  af_value_free(m);
  m = mk_str("show-format");
  out = NULL;
  if (CHECK_OK(af_lm_schema_call(ctx, msgs, m, schema, &out))) {
    af_value_t* answer = NULL;
    char* fmt;
    CHECK_OK(af_value_key(out, "answer", 6, &answer));
    fmt = json_of(answer);
    CHECK_CONTAINS(fmt, "json_schema");
    CHECK_CONTAINS(fmt, "additionalProperties");
    CHECK_CONTAINS(fmt, "strict");
    CHECK_CONTAINS(fmt, "maximum");
    free(fmt);
    af_value_free(answer);
  }
  af_value_free(out);
  af_value_free(m);
  af_provider_free(p);
done:
  af_value_free(msgs);
  af_value_free(schema);
  server_stop(&s);
}

static void openai_faults_end_in_the_right_code(void) {
  static const struct {
    const char* model;
    int code; /* 0 = success */
    long attempts;
    const char* frag;
  } cases[] = {
      {"500x1", 0, 2, NULL},
      {"500always", AF_ERR_PROVIDER, 3, "HTTP 500"},
      {"slow", AF_ERR_TIMEOUT, 3, "400 ms"},
      {"malformed", AF_ERR_PROVIDER, 1, "not valid JSON"},
      {"nocontent", AF_ERR_PROVIDER, 1, "choices"},
      {"refusal", AF_ERR_PROVIDER, 1, "the model refused: not this one"},
  };
  struct server s = server_start();
  af_provider_t* p = openai_for(&s, NULL);
  size_t i;
  if (!p) goto done;
  route("*", p);
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    af_value_t* out = NULL;
    af_error_t* e = call_model(cases[i].model, "x", &out);
    if (cases[i].code == 0) {
      if (CHECK_OK(e)) CHECK(out != NULL);
    } else {
      CHECK_ERR(e, cases[i].code, cases[i].frag, cases[i].model);
    }
    af_value_free(out);
    if (server_attempts(&s, cases[i].model, "x") != cases[i].attempts)
      check_fail(__FILE__, __LINE__, "%s: %ld attempts, expected %ld", cases[i].model,
                 server_attempts(&s, cases[i].model, "x"), cases[i].attempts);
  }
  af_provider_free(p);
done:
  server_stop(&s);
}

static void openai_honors_retry_after(void) {
  struct server s = server_start();
  af_provider_t* p = openai_for(&s, NULL);
  af_value_t* out = NULL;
  double t0;
  if (!p) goto done;
  route("*", p);
  t0 = now_ms();
  if (CHECK_OK(call_model("429x1", "r", &out))) CHECK_JSON(out, "\"429x1|r\"");
  CHECK(now_ms() - t0 >= 950); /* Retry-After: 1, not backoff_ms (10) */
  CHECK_INT_EQ(server_attempts(&s, "429x1", "r"), 2);
  af_value_free(out);
  out = NULL;
  /* 429 more often than max_retries: PROVIDER naming the status. */
  CHECK_ERR(call_model("429x5", "r", &out), AF_ERR_PROVIDER, "HTTP 429", "attempt 3 of 3");
  af_provider_free(p);
done:
  server_stop(&s);
}

/* A server's Retry-After is clamped to backoff_max_ms: huge, overflowing,
 * non-finite, negative and far-future dates all retry within the cap. */
static void openai_clamps_retry_after(void) {
  static const char* values[] = {"99999999999999", "1e300", "inf", "-inf", "nan", "86400",
                                 "-5", "0.0001", "Fri, 31 Dec 9999 23:59:59 GMT", "garbage"};
  struct server s = server_start();
  af_provider_t* p = openai_for(&s, "\"backoff_max_ms\":200");
  size_t i;
  if (!p) goto done;
  route("*", p);
  for (i = 0; i < sizeof values / sizeof values[0]; i++) {
    char model[96];
    af_value_t* out = NULL;
    double t0 = now_ms();
    snprintf(model, sizeof model, "retry-after:%s", values[i]);
    if (CHECK_OK(call_model(model, "r", &out))) CHECK(out != NULL);
    if (now_ms() - t0 > 1500) check_fail(__FILE__, __LINE__, "Retry-After %s: %.0f ms", values[i], now_ms() - t0);
    CHECK_INT_EQ(server_attempts(&s, model, "r"), 2);
    af_value_free(out);
  }
  af_provider_free(p);
done:
  server_stop(&s);
}

static af_error_t* ask_program(void* ud, af_context_t* c, const af_value_t* const* in, size_t n, af_value_t** out);

/* A waiting retry never outlives the run: Retry-After: 86400 with a large
 * backoff_max_ms still ends at the run's deadline with TIMEOUT. */
static void openai_retry_wait_ends_at_the_run_deadline(void) {
  struct server s = server_start();
  af_provider_t* p = openai_for(&s, "\"backoff_max_ms\":3600000");
  af_ir_t* ir = NULL;
  af_program_t* prog = NULL;
  af_value_t* in[2] = {NULL, NULL};
  af_value_t* out = NULL;
  af_run_options_t o;
  double t0;
  if (!p) goto done;
  route("*", p);
  ir = TRACE(ask_program, NULL, "[\"q\", \"m\"]", NULL);
  if (!ir || !CHECK_OK(af_compile(ctx, ir, &prog))) goto done;
  in[0] = mk_str("d");
  in[1] = mk_str("retry-after:86400");
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.timeout_ms = 300;
  t0 = now_ms();
  CHECK_ERR(af_program_call_with(ctx, prog, (const af_value_t* const*)in, 2, &o, &out), AF_ERR_TIMEOUT, "");
  CHECK(now_ms() - t0 < 1300);
done:
  af_value_free(in[0]);
  af_value_free(in[1]);
  af_program_free(prog);
  af_ir_free(ir);
  af_provider_free(p);
  server_stop(&s);
}

/* The key goes over plain http only to loopback hosts, or when allowed. */
static void openai_refuses_a_key_over_plain_http(void) {
  static const struct {
    const char* url;
    int ok;
  } cases[] = {
      {"http://api.example.com/v1", 0},
      {"http://127.0.0.1.example.com/v1", 0},
      {"http://localhost.example.com:8080/v1", 0},
      {"http://10.0.0.1/v1", 0},
      {"http://127.0.0.1@example.com/v1", 0},
      {"http://example.com/127.0.0.1", 0},
      {"http://127.0.0.1:8080/v1", 1},
      {"http://127.1.2.3/v1", 1},
      {"http://LOCALHOST:9/v1", 1},
      {"http://[::1]:9/v1", 1},
      {"http://user:pw@localhost/v1", 1},
      {"https://api.example.com/v1", 1},
  };
  size_t i;
  setenv("AF_TEST_KEY", "sk-test-123", 1);
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char opts[256];
    af_provider_t* p = NULL;
    af_error_t* e;
    snprintf(opts, sizeof opts, "{\"base_url\":\"%s\",\"api_key_env\":\"AF_TEST_KEY\"}", cases[i].url);
    e = af_provider_openai_new(opts, strlen(opts), &p);
    if (cases[i].ok) {
      if (!CHECK_OK(e)) printf("    for %s\n", cases[i].url);
    } else if (!CHECK_ERR(e, AF_ERR_INVALID_ARGUMENT, "plain http", "allow_insecure_http", "AF_TEST_KEY")) {
      printf("    for %s\n", cases[i].url);
    }
    af_provider_free(p);
    p = NULL;
    /* The explicit option allows it. */
    snprintf(opts, sizeof opts, "{\"base_url\":\"%s\",\"api_key_env\":\"AF_TEST_KEY\",\"allow_insecure_http\":true}",
             cases[i].url);
    CHECK_OK(af_provider_openai_new(opts, strlen(opts), &p));
    af_provider_free(p);
  }
}

/* A server that echoes the request cannot put the key into a message, and
 * its control characters (terminal escapes) arrive escaped. */
static void openai_messages_hide_the_key_and_escape_controls(void) {
  struct server s = server_start();
  af_provider_t* p;
  af_value_t* out = NULL;
  af_error_t* e;
  setenv("AF_TEST_KEY", "sk-test-secret-456", 1);
  p = openai_for(&s, "\"api_key_env\":\"AF_TEST_KEY\"");
  if (!p) goto done;
  route("*", p);
  e = call_model("echo-auth-error", "x", &out);
  if (CHECK_ERR_KEEP(e, AF_ERR_PROVIDER, "HTTP 400", "Bearer [redacted]", "\\x1b[31m", "\\x07", "\\u009b")) {
    const char* msg = af_error_message(e);
    size_t i;
    CHECK_NOT_CONTAINS(msg, "sk-test");
    for (i = 0; msg[i]; i++)
      if ((unsigned char)msg[i] < 0x20 || (unsigned char)msg[i] == 0x7f ||
          ((unsigned char)msg[i] == 0xc2 && (unsigned char)msg[i + 1] >= 0x80 && (unsigned char)msg[i + 1] < 0xa0)) {
        check_fail(__FILE__, __LINE__, "a control character at byte %zu of the message", i);
        break;
      }
  }
  af_error_free(e);
  af_provider_free(p);
done:
  server_stop(&s);
}

/* A body over the 64 MiB reply cap fails at once: aborted, not retried
 * (the same server would send it again). */
static void openai_oversized_reply_is_not_retried(void) {
  struct server s = server_start();
  af_provider_t* p = NULL;
  af_value_t* out = NULL;
  char opts[256];
  snprintf(opts, sizeof opts,
           "{\"base_url\":\"http://127.0.0.1:%d/v1\",\"timeout_ms\":30000,\"max_retries\":2,\"backoff_ms\":10}",
           s.port);
  if (!CHECK_OK(af_provider_openai_new(opts, strlen(opts), &p))) goto done;
  route("*", p);
  CHECK_ERR(call_model("huge-body", "x", &out), AF_ERR_PROVIDER, "larger than 64 MiB", "attempt 1 of 3");
  CHECK_INT_EQ(server_attempts(&s, "huge-body", "x"), 1);
done:
  af_provider_free(p);
  server_stop(&s);
}

static void openai_connection_refused_is_provider(void) {
  struct server s = server_start();
  af_provider_t* p;
  af_value_t* out = NULL;
  server_stop(&s); /* the port is now closed */
  p = openai_for(&s, NULL);
  if (!p) return;
  route("*", p);
  CHECK_ERR(call_model("ok", "x", &out), AF_ERR_PROVIDER, "attempt 3 of 3", "127.0.0.1");
  af_provider_free(p);
}

static void openai_cancel_aborts_the_transfer(void) {
  struct server s = server_start();
  af_provider_t* p = NULL;
  af_ir_t* ir = NULL;
  af_program_t* prog = NULL;
  af_future_t* f = NULL;
  af_value_t* out = NULL;
  double t0;
  char opts[256];
  snprintf(opts, sizeof opts, "{\"base_url\":\"http://127.0.0.1:%d/v1\",\"timeout_ms\":60000}", s.port);
  if (!CHECK_OK(af_provider_openai_new(opts, strlen(opts), &p))) goto done;
  route("*", p);
  ir = TRACE(lm_program, NULL, "[\"q\", \"m\"]", NULL);
  if (!ir || !CHECK_OK(af_compile(ctx, ir, &prog))) goto done;
  {
    af_value_t* in[2];
    in[0] = mk_str("c");
    in[1] = mk_str("hang");
    CHECK_OK(af_program_call_async(ctx, prog, (const af_value_t* const*)in, 2, &f));
    af_value_free(in[0]);
    af_value_free(in[1]);
  }
  if (!f) goto done;
  t0 = now_ms();
  while (stat_field(p, "in_flight") < 2 && now_ms() - t0 < 5000) sleep_ms(5);
  sleep_ms(100); /* let the transfers reach the server */
  t0 = now_ms();
  af_future_cancel(f);
  CHECK_ERR(af_future_wait(f, &out), AF_ERR_CANCELLED, "cancelled");
  CHECK(now_ms() - t0 < 1000);
  t0 = now_ms();
  while (stat_field(p, "in_flight") > 0 && now_ms() - t0 < 2000) sleep_ms(5);
  CHECK_INT_EQ(stat_field(p, "in_flight"), 0);
  /* The server sees both connections go away. */
  {
    long aborted = -1;
    char cmd[400];
    FILE* pp;
    t0 = now_ms();
    do {
      snprintf(cmd, sizeof cmd,
               "python3 -c \"import urllib.request,json;"
               "print(json.load(urllib.request.urlopen('http://127.0.0.1:%d/stats?key=hang%%7Cc'))['aborted'])\"",
               s.port);
      pp = popen(cmd, "r");
      if (pp) {
        if (fscanf(pp, "%ld", &aborted) != 1) aborted = -1;
        pclose(pp);
      }
    } while (aborted < 2 && now_ms() - t0 < 3000);
    CHECK_INT_EQ(aborted, 2);
  }
done:
  af_future_free(f);
  af_program_free(prog);
  af_ir_free(ir);
  af_provider_free(p);
  server_stop(&s);
}

/* ---- transforms ------------------------------------------------------------ */

/* (q, model) -> lm_call([system "Answer briefly.", user q], model) */
static af_error_t* ask_program(void* ud, af_context_t* c, const af_value_t* const* in, size_t n, af_value_t** out) {
  af_value_t *sys = NULL, *rs = NULL, *ru = NULL, *m1 = NULL, *m2 = NULL, *msgs = NULL;
  const char* keys[] = {"role", "content"};
  size_t lens[] = {4, 7};
  af_error_t* e;
  (void)ud;
  (void)n;
  af_value_str(c, "Answer briefly.", 15, &sys);
  af_value_str(c, "system", 6, &rs);
  af_value_str(c, "user", 4, &ru);
  {
    const af_value_t* v1[] = {rs, sys};
    const af_value_t* v2[] = {ru, in[0]};
    af_value_dict(c, keys, lens, v1, 2, &m1);
    af_value_dict(c, keys, lens, v2, 2, &m2);
  }
  {
    const af_value_t* items[] = {m1, m2};
    af_value_list(c, items, 2, &msgs);
  }
  e = af_lm_call(c, msgs, in[1], out);
  af_value_free(sys);
  af_value_free(rs);
  af_value_free(ru);
  af_value_free(m1);
  af_value_free(m2);
  af_value_free(msgs);
  return e;
}

static size_t count_occurrences(const char* hay, const char* needle) {
  size_t n = 0;
  const char* p = hay;
  while (p && (p = strstr(p, needle)) != NULL) {
    n++;
    p += strlen(needle);
  }
  return n;
}

static void batched_calls_are_issued_concurrently(void) {
  af_provider_t* echo = echo_with("{\"latency_ms\":50}");
  af_ir_t* ir = TRACE(ask_program, NULL, "[\"q\", \"m\"]", NULL);
  af_ir_t* batched = NULL;
  af_value_t* axes = mk_json("[true, false]");
  route("*", echo);
  if (!ir || !CHECK_OK(af_batch(ctx, ir, axes, &batched))) goto done;
  {
    char* text = ir_text(batched);
    CHECK_INT_EQ(count_occurrences(text, "lm_call"), 1); /* one batched equation */
    CHECK_CONTAINS(text, "list<str>");
    free(text);
  }
  CHECK_CALL(batched, "[[\"a\",\"b\",\"c\",\"d\",\"e\"], \"m\"]", "[\"m|a\",\"m|b\",\"m|c\",\"m|d\",\"m|e\"]");
  CHECK_INT_EQ(stat_field(echo, "peak_in_flight"), 5);
  /* The model may be batched too. */
  af_value_free(axes);
  axes = mk_json("[true, true]");
  af_ir_free(batched);
  batched = NULL;
  if (CHECK_OK(af_batch(ctx, ir, axes, &batched)))
    CHECK_CALL(batched, "[[\"a\",\"b\"], [\"m1\",\"m2\"]]", "[\"m1|a\",\"m2|b\"]");
done:
  af_value_free(axes);
  af_ir_free(batched);
  af_ir_free(ir);
  af_provider_free(echo);
}

static void pushforward_calls_primal_and_tangent(void) {
  af_provider_t* echo = echo_with("{\"latency_ms\":30}");
  af_ir_t* ir = TRACE(ask_program, NULL, "[\"q\", \"m\"]", NULL);
  af_ir_t* pushed = NULL;
  route("*", echo);
  if (!ir || !CHECK_OK(af_pushforward(ctx, ir, &pushed))) goto done;
  CHECK_CALL(pushed, "[[\"Q\",\"m\"], [\"T\",\"\"]]", "[\"m|Q\",\"m|T\"]");
  CHECK_INT_EQ(stat_field(echo, "peak_in_flight"), 2); /* the two calls overlapped */
done:
  af_ir_free(pushed);
  af_ir_free(ir);
  af_provider_free(echo);
}

static void pullback_asks_for_feedback_on_inputs_only(void) {
  af_provider_t* echo = echo_with(NULL);
  af_ir_t* ir = TRACE(ask_program, NULL, "[\"q\", \"m\"]", NULL);
  af_ir_t* pulled = NULL;
  af_value_t* out = NULL;
  route("*", echo);
  if (!ir || !CHECK_OK(af_pullback(ctx, ir, &pulled))) goto done;
  {
    char* text = ir_text(pulled);
    /* forward call + one feedback call (none for the literal system message) */
    CHECK_INT_EQ(count_occurrences(text, "lm_call"), 2);
    free(text);
  }
  if (CHECK_OK(call_json(pulled, "[[\"Q\",\"m\"], \"too long\"]", &out))) {
    af_value_t *fwd = NULL, *cts = NULL, *cq = NULL, *cm = NULL;
    char buf[2048];
    CHECK_OK(af_value_index(out, 0, &fwd));
    CHECK_JSON(fwd, "\"m|Q\"");
    CHECK_OK(af_value_index(out, 1, &cts));
    CHECK_OK(af_value_index(cts, 0, &cq));
    CHECK_OK(af_value_index(cts, 1, &cm));
    str_of(cq, buf);
    CHECK_CONTAINS(buf, "m|The input (the user message):\nQ");
    CHECK_CONTAINS(buf, "The output:\nm|Q");
    CHECK_CONTAINS(buf, "Feedback on the output:\ntoo long");
    CHECK_INT_EQ(af_value_kind(cm), AF_KIND_NULL); /* no feedback for the model */
    af_value_free(fwd);
    af_value_free(cts);
    af_value_free(cq);
    af_value_free(cm);
  }
  af_value_free(out);
done:
  af_ir_free(pulled);
  af_ir_free(ir);
  af_provider_free(echo);
}

static af_error_t* schema_program(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                                  af_value_t** out) {
  af_value_t *msgs = user_turn(c, in[0]), *schema = NULL;
  af_error_t* e;
  (void)ud;
  (void)n;
  {
    const char* js =
        "{\"title\":{\"type\":\"str\",\"min\":1},\"score\":{\"type\":\"int\"},"
        "\"p\":{\"type\":\"float\"},\"ok\":{\"type\":\"bool\"}}";
    af_value_from_json(c, js, strlen(js), &schema);
  }
  e = af_lm_schema_call(c, msgs, in[1], schema, out);
  af_value_free(msgs);
  af_value_free(schema);
  return e;
}

/* Feedback is text whatever the field's kind: the prompt lists every field
 * with its value and its feedback. */
static void schema_pullback_lists_every_field(void) {
  af_provider_t* echo = echo_with(NULL);
  af_ir_t* ir = TRACE(schema_program, NULL, "[\"q\", \"m\"]", NULL);
  af_ir_t* pulled = NULL;
  af_value_t* out = NULL;
  route("*", echo);
  if (!ir || !CHECK_OK(af_pullback(ctx, ir, &pulled))) goto done;
  if (CHECK_OK(call_json(pulled,
                         "[[\"Q\",\"m\"], {\"title\":\"be catchier\",\"score\":\"too low for this ticket\","
                         "\"p\":\"too confident\",\"ok\":\"should be true: the ticket mentions a refund\"}]",
                         &out))) {
    af_value_t *cts = NULL, *cq = NULL;
    char buf[2048];
    CHECK_OK(af_value_index(out, 1, &cts));
    CHECK_OK(af_value_index(cts, 0, &cq));
    str_of(cq, buf);
    CHECK_CONTAINS(buf, "- $.ok = false\n  feedback: should be true: the ticket mentions a refund");
    CHECK_CONTAINS(buf, "- $.p = 0.0\n  feedback: too confident");
    CHECK_CONTAINS(buf, "- $.score = 0\n  feedback: too low for this ticket");
    CHECK_CONTAINS(buf, "- $.title = a\n  feedback: be catchier");
    af_value_free(cts);
    af_value_free(cq);
  }
done:
  af_value_free(out);
  af_ir_free(pulled);
  af_ir_free(ir);
  af_provider_free(echo);
}

/* A number or bool given as feedback is refused, naming the path. */
static void schema_feedback_must_be_text(void) {
  af_ir_t* ir = TRACE(schema_program, NULL, "[\"q\", \"m\"]", NULL);
  af_ir_t* pulled = NULL;
  af_value_t* out = NULL;
  if (!ir || !CHECK_OK(af_pullback(ctx, ir, &pulled))) goto done;
  CHECK_ERR(call_json(pulled, "[[\"Q\",\"m\"], {\"title\":\"t\",\"score\":3,\"p\":\"\",\"ok\":\"\"}]", &out),
            AF_ERR_INVALID_ARGUMENT, "input[1][\"score\"]", "feedback must be text");
  CHECK(out == NULL);
  CHECK_ERR(call_json(pulled, "[[\"Q\",\"m\"], {\"title\":\"t\",\"score\":\"\",\"p\":\"\",\"ok\":true}]", &out),
            AF_ERR_INVALID_ARGUMENT, "input[1][\"ok\"]", "feedback must be text");
  CHECK(out == NULL);
done:
  af_ir_free(pulled);
  af_ir_free(ir);
}

int main(int argc, char** argv) {
  static const struct test_case cases[] = {
      CASE(echo_answers_model_and_last_message),
      CASE(no_route_is_not_found_naming_the_model),
      CASE(routes_prefer_exact_then_longest_pattern),
      CASE(bad_messages_are_invalid_argument),
      CASE(provider_options_are_checked),
      CASE(echo_answers_smallest_valid_instance),
      CASE(bad_schemas_name_the_path),
      CASE(host_provider_completes_from_another_thread),
      CASE(freeing_a_provider_cancels_its_requests),
      CASE(freeing_a_host_provider_cancels_its_requests),
      CASE(schema_replies_are_validated),
      CASE(traced_lm_calls_record_and_run),
      CASE(traced_roles_must_be_static),
      CASE(max_in_flight_is_respected_and_calls_overlap),
      CASE(replay_records_then_answers),
      CASE(batched_calls_are_issued_concurrently),
      CASE(pushforward_calls_primal_and_tangent),
      CASE(pullback_asks_for_feedback_on_inputs_only),
      CASE(schema_pullback_lists_every_field),
      CASE(schema_feedback_must_be_text),
      CASE(urgent_tag_starts_first), CASE(openai_usage_adds_up_in_stats), CASE(echo_counts_words_as_tokens), CASE(openai_answers_and_sends_the_key),
      CASE(openai_schema_calls_send_json_schema),
      CASE(openai_faults_end_in_the_right_code),
      CASE(openai_honors_retry_after),
      CASE(openai_clamps_retry_after),
      CASE(openai_retry_wait_ends_at_the_run_deadline),
      CASE(openai_refuses_a_key_over_plain_http),
      CASE(openai_messages_hide_the_key_and_escape_controls),
      CASE(openai_oversized_reply_is_not_retried),
      CASE(openai_connection_refused_is_provider),
      CASE(openai_cancel_aborts_the_transfer),
  };
  return run_cases(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
