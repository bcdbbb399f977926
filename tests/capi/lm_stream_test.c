/* Streaming through the C API: a run's stream callback receives the pieces
 * of its LM replies as they arrive (echo in words, a host provider's own
 * pieces, openai's server-sent events from the local fault-injecting
 * server), per equation and batch item, and the result is the same as a run
 * without streaming. Faults mid-stream: a cut stream is retried (the host
 * is told to start over) and fails with PROVIDER after the retries; garbage,
 * error events and HTML fail at once; a stream that never ends is a TIMEOUT. */
#include "check.h"
#include "lm_helpers.h"

#include <pthread.h>

#include "../../examples/triage/triage_program.h"

/* ---- what a stream callback saw --------------------------------------- */

#define MAX_EQNS 8
#define MAX_ITEMS 4

struct collected {
  pthread_mutex_t mu;
  char text[MAX_EQNS][MAX_ITEMS][1024]; /* per equation and item, since its last reset */
  size_t len[MAX_EQNS][MAX_ITEMS];
  int pieces, resets, overflow;
  int runs, destroyed;           /* runs given this callback; their destroys (mu) */
  int in_call, concurrent;       /* calls overlapping for one run */
  int eqns_seen;                 /* bit per equation index */
  af_cancel_t* trigger_on_first; /* cancelled at the first piece */
};

static void collected_init(struct collected* c) {
  memset(c, 0, sizeof *c);
  pthread_mutex_init(&c->mu, NULL);
}

/* The destroy of a run's callback data runs before the run reports
 * completion, unless the callback itself ended the run: then as it returns,
 * which may be just after the call returned. Wait for it before the data is
 * reused. */
static int collected_settled(struct collected* c) {
  double t0 = now_ms();
  int settled;
  do {
    pthread_mutex_lock(&c->mu);
    settled = c->destroyed == c->runs;
    pthread_mutex_unlock(&c->mu);
    if (!settled) sleep_ms(1);
  } while (!settled && now_ms() - t0 < 5000);
  return settled;
}

/* Clears what the callback saw for another run. */
static void collected_reuse(struct collected* c) {
  CHECK(collected_settled(c));
  pthread_mutex_lock(&c->mu);
  memset(c->text, 0, sizeof c->text);
  memset(c->len, 0, sizeof c->len);
  c->pieces = c->resets = c->overflow = c->in_call = c->concurrent = c->eqns_seen = 0;
  pthread_mutex_unlock(&c->mu);
}

static void collect(void* ud, uint32_t eqn, uint64_t item, const char* text, size_t len) {
  struct collected* c = (struct collected*)ud;
  pthread_mutex_lock(&c->mu);
  if (c->in_call) c->concurrent = 1;
  c->in_call = 1;
  pthread_mutex_unlock(&c->mu);
  if (eqn >= MAX_EQNS || item >= MAX_ITEMS) {
    c->overflow = 1;
  } else if (!text) {
    c->len[eqn][item] = 0;
    c->text[eqn][item][0] = 0;
    c->resets++;
  } else if (c->len[eqn][item] + len < sizeof c->text[eqn][item]) {
    memcpy(c->text[eqn][item] + c->len[eqn][item], text, len);
    c->len[eqn][item] += len;
    c->text[eqn][item][c->len[eqn][item]] = 0;
    c->pieces++;
  } else {
    c->overflow = 1;
  }
  if (eqn < MAX_EQNS) c->eqns_seen |= 1 << eqn;
  if (text && c->trigger_on_first) af_cancel_trigger(c->trigger_on_first);
  pthread_mutex_lock(&c->mu);
  c->in_call = 0;
  pthread_mutex_unlock(&c->mu);
}

static void collected_destroy(void* ud) {
  struct collected* c = (struct collected*)ud;
  pthread_mutex_lock(&c->mu);
  c->destroyed++;
  pthread_mutex_unlock(&c->mu);
}

static af_run_options_t stream_options(struct collected* c) {
  af_run_options_t o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.stream = collect;
  o.stream_user_data = c;
  o.stream_destroy = collected_destroy;
  c->runs++;
  return o;
}

/* Compiles ir and runs it on inputs_json with options o. */
static af_error_t* run_ir(const af_ir_t* ir, const char* inputs_json, const af_run_options_t* o,
                          af_value_t** out) {
  af_program_t* prog = NULL;
  af_value_t* list = mk_json(inputs_json);
  af_value_t* in[4] = {NULL, NULL, NULL, NULL};
  size_t n = 0, i;
  af_error_t* e = af_compile(ctx, ir, &prog);
  if (!e) e = af_value_len(list, &n);
  for (i = 0; !e && i < n && i < 4; i++) e = af_value_index(list, i, &in[i]);
  if (!e) e = af_program_call_with(ctx, prog, (const af_value_t* const*)in, n, o, out);
  for (i = 0; i < 4; i++) af_value_free(in[i]);
  af_value_free(list);
  af_program_free(prog);
  return e;
}

/* The index of ir's first equation of primitive prim (af_ir_eqn_json). */
static size_t eqn_index_of(const af_ir_t* ir, const char* prim) {
  char want[64];
  size_t i;
  snprintf(want, sizeof want, "\"prim\":\"%s\"", prim);
  for (i = 0; i < af_ir_eqn_count(ir); i++) {
    af_bytes_t eqn = {NULL, 0};
    int found = CHECK_OK(af_ir_eqn_json(ir, i, &eqn)) && strstr((const char*)eqn.data, want);
    af_bytes_free(&eqn);
    if (found) return i;
  }
  check_fail(__FILE__, __LINE__, "no %s equation", prim);
  return 0;
}

/* (q, model) -> lm_call([user q], model), the call tagged by ud (or not). */
static af_error_t* ask(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                       af_value_t** out) {
  af_value_t* msgs = user_turn(c, in[0]);
  af_error_t* e;
  (void)n;
  e = ud ? af_tag_push(c, (const char*)ud, strlen((const char*)ud)) : NULL;
  if (!e) e = af_lm_call(c, msgs, in[1], out);
  if (ud) af_tag_pop(c);
  af_value_free(msgs);
  return e;
}

/* (q, model) -> [ask(q) tagged "live", ask(q + "!") untagged]. */
static af_error_t* two_asks(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                            af_value_t** out) {
  af_value_t *bang = NULL, *q2 = NULL, *a = NULL, *b = NULL;
  const af_value_t* args[2];
  const af_value_t* in2[2];
  af_error_t* e;
  (void)ud;
  (void)n;
  e = ask("live", c, in, 2, &a);
  af_value_str(c, "!", 1, &bang);
  args[0] = in[0];
  args[1] = bang;
  if (!e) e = af_concat(c, args, 2, &q2);
  in2[0] = q2;
  in2[1] = in[1];
  if (!e) e = ask(NULL, c, in2, 2, &b);
  if (!e) {
    const af_value_t* both[2] = {a, b};
    e = af_value_list(c, both, 2, out);
  }
  af_value_free(bang);
  af_value_free(q2);
  af_value_free(a);
  af_value_free(b);
  return e;
}

/* ---- echo -------------------------------------------------------------- */

/* A batched call streams every item in pieces; each item's pieces make up
 * its result, and the result equals the run without streaming. */
static void echo_streams_each_item_in_pieces(void) {
  af_provider_t* echo = echo_with("{\"latency_ms\":5}");
  af_ir_t* ir = TRACE(ask, NULL, "[\"q\", \"m\"]", NULL);
  af_ir_t* batched = NULL;
  af_value_t* axes = mk_json("[true, false]");
  af_value_t *plain = NULL, *streamed = NULL;
  struct collected c;
  af_run_options_t o;
  const char* in = "[[\"one two three\", \"four\", \"five six\"], \"m\"]";
  size_t k;
  collected_init(&c);
  o = stream_options(&c);
  route("*", echo);
  if (!ir || !CHECK_OK(af_batch(ctx, ir, axes, &batched))) goto done;
  k = eqn_index_of(batched, "lm_call");
  CHECK_OK(run_ir(batched, in, NULL, &plain));
  if (CHECK_OK(run_ir(batched, in, &o, &streamed))) {
    char* a = json_of(plain);
    char* b = json_of(streamed);
    CHECK_STR_EQ(b, a);
    free(a);
    free(b);
    CHECK_STR_EQ(c.text[k][0], "m|one two three");
    CHECK_STR_EQ(c.text[k][1], "m|four");
    CHECK_STR_EQ(c.text[k][2], "m|five six");
    CHECK_INT_EQ(c.pieces, 3 + 1 + 2); /* echo streams word by word */
    CHECK_INT_EQ(c.resets, 0);
    CHECK_INT_EQ(c.eqns_seen, 1 << k); /* the one LM equation */
    CHECK_INT_EQ(c.concurrent, 0);
    CHECK_INT_EQ(c.overflow, 0);
  }
  pthread_mutex_lock(&c.mu);
  CHECK_INT_EQ(c.destroyed, 1); /* released before the call returned */
  pthread_mutex_unlock(&c.mu);
done:
  /* The run's destroy may come just after it returned: c must outlive it. */
  CHECK(collected_settled(&c));
  af_value_free(plain);
  af_value_free(streamed);
  af_value_free(axes);
  af_ir_free(batched);
  af_ir_free(ir);
  af_provider_free(echo);
}

/* stream_tag picks the equations that stream. */
static void stream_tag_chooses_the_equations(void) {
  af_provider_t* echo = echo_with(NULL);
  af_ir_t* ir = TRACE(two_asks, NULL, "[\"q\", \"m\"]", NULL);
  af_value_t* out = NULL;
  struct collected c;
  af_run_options_t o;
  collected_init(&c);
  o = stream_options(&c);
  route("*", echo);
  if (!ir) goto done;
  o.stream_tag = "live";
  o.stream_tag_len = 4;
  if (CHECK_OK(run_ir(ir, "[\"hi\", \"m\"]", &o, &out))) {
    CHECK_JSON(out, "[\"m|hi\",\"m|hi!\"]");
    CHECK_INT_EQ(c.pieces, 1);
    CHECK_INT_EQ(c.eqns_seen & (c.eqns_seen - 1), 0); /* one equation */
  }
  af_value_free(out);
  out = NULL;
  /* Without a tag every LM equation streams: two equations seen. */
  collected_reuse(&c);
  o = stream_options(&c);
  if (CHECK_OK(run_ir(ir, "[\"hi\", \"m\"]", &o, &out))) CHECK_INT_EQ(c.pieces, 2);
  CHECK(c.eqns_seen != 0 && (c.eqns_seen & (c.eqns_seen - 1)) != 0); /* two distinct indices */
  /* A tag without a callback is a mistake. */
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.stream_tag = "live";
  o.stream_tag_len = 4;
  af_value_free(out);
  out = NULL;
  CHECK_ERR(run_ir(ir, "[\"hi\", \"m\"]", &o, &out), AF_ERR_INVALID_ARGUMENT, "stream_tag",
            "stream is NULL");
  CHECK(out == NULL);
done:
  /* The run's destroy may come just after it returned: c must outlive it. */
  CHECK(collected_settled(&c));
  af_value_free(out);
  af_ir_free(ir);
  af_provider_free(echo);
}

/* In the batched triage program the drafts run inside a map over the
 * tickets: their pieces report the map equation and the ticket's index, and
 * make up each ticket's reply. */
static void calls_inside_a_map_report_the_item(void) {
  af_provider_t* echo = echo_with("{\"latency_ms\":5}");
  af_ir_t* ir = NULL;
  af_value_t *out = NULL, *replies = NULL;
  struct collected c;
  af_run_options_t o;
  size_t e;
  int found = 0;
  collected_init(&c);
  o = stream_options(&c);
  o.stream_tag = "draft"; /* no equation carries it: no piece at all */
  o.stream_tag_len = 5;
  route("*", echo);
  if (!CHECK_OK(triage_batched_trace(ctx, &ir))) goto done;
  if (CHECK_OK(run_ir(ir, "[[\"a b\", \"c\"]]", &o, &out))) CHECK_INT_EQ(c.pieces, 0);
  af_value_free(out);
  out = NULL;
  collected_reuse(&c);
  o = stream_options(&c);
  if (!CHECK_OK(run_ir(ir, "[[\"a b\", \"c\"]]", &o, &out)) ||
      !CHECK_OK(af_value_key(out, "reply", 5, &replies)))
    goto done;
  CHECK_INT_EQ(c.overflow, 0);
  for (e = 0; e < MAX_EQNS; e++) {
    af_value_t *r0 = NULL, *r1 = NULL;
    char b0[512], b1[512];
    if (strncmp(c.text[e][0], "billing-drafter|", 16) != 0) continue;
    found = 1;
    CHECK_OK(af_value_index(replies, 0, &r0));
    CHECK_OK(af_value_index(replies, 1, &r1));
    CHECK_STR_EQ(c.text[e][0], str_of(r0, b0));
    CHECK_STR_EQ(c.text[e][1], str_of(r1, b1));
    {
      af_bytes_t eqn = {NULL, 0};
      if (CHECK_OK(af_ir_eqn_json(ir, e, &eqn)))
        CHECK_CONTAINS((const char*)eqn.data, "\"prim\":\"map\"");
      af_bytes_free(&eqn);
    }
    af_value_free(r0);
    af_value_free(r1);
  }
  CHECK(found);
done:
  /* The run's destroy may come just after it returned: c must outlive it. */
  CHECK(collected_settled(&c));
  af_value_free(replies);
  af_value_free(out);
  af_ir_free(ir);
  af_provider_free(echo);
}

/* ---- host provider ------------------------------------------------------ */

/* Streams "Hel", "lo" and completes with ud's reply ("Hello" or another). */
static void host_streams(void* ud, af_lm_request_t* req) {
  const char* reply = (const char*)ud;
  af_bytes_t json = {NULL, 0};
  af_error_t* e = af_lm_request_json(req, &json);
  int streaming = !e && strstr((const char*)json.data, "\"stream\":true") != NULL;
  af_error_free(e);
  af_bytes_free(&json);
  if (streaming) {
    af_error_free(af_lm_request_stream(req, "Hel", 3));
    af_error_free(af_lm_request_stream(req, "lo", 2));
  }
  af_error_free(af_lm_request_complete(req, reply, strlen(reply)));
}

static void host_provider_streams_its_pieces(void) {
  af_provider_t* host = NULL;
  af_ir_t* ir = TRACE(ask, NULL, "[\"q\", \"m\"]", NULL);
  af_value_t* out = NULL;
  struct collected c;
  af_run_options_t o;
  collected_init(&c);
  o = stream_options(&c);
  if (!ir || !CHECK_OK(af_provider_host_new(host_streams, (void*)"Hello", NULL, &host))) goto done;
  route("*", host);
  if (CHECK_OK(run_ir(ir, "[\"q\", \"m\"]", &o, &out))) {
    CHECK_JSON(out, "\"Hello\"");
    CHECK_STR_EQ(c.text[0][0], "Hello");
    CHECK_INT_EQ(c.pieces, 2);
    CHECK_INT_EQ(c.resets, 0);
  }
  af_value_free(out);
  out = NULL;
  af_provider_free(host);
  host = NULL;
  /* The completed text is the result: a stream that said otherwise is
   * reset to it. */
  collected_reuse(&c);
  o = stream_options(&c);
  if (!CHECK_OK(af_provider_host_new(host_streams, (void*)"Goodbye", NULL, &host))) goto done;
  route("*", host);
  if (CHECK_OK(run_ir(ir, "[\"q\", \"m\"]", &o, &out))) {
    CHECK_JSON(out, "\"Goodbye\"");
    CHECK_STR_EQ(c.text[0][0], "Goodbye");
    CHECK_INT_EQ(c.resets, 1);
  }
  /* Without streaming the host sees no "stream" and nothing is sent. */
  af_value_free(out);
  out = NULL;
  collected_reuse(&c);
  if (CHECK_OK(run_ir(ir, "[\"q\", \"m\"]", NULL, &out))) CHECK_JSON(out, "\"Goodbye\"");
  CHECK_INT_EQ(c.pieces, 0);
done:
  /* The run's destroy may come just after it returned: c must outlive it. */
  CHECK(collected_settled(&c));
  af_value_free(out);
  af_ir_free(ir);
  af_provider_free(host);
}

static void host_stream_misuse_is_refused(void) {
  CHECK_ERR(af_lm_request_stream(NULL, "x", 1), AF_ERR_INVALID_ARGUMENT, "req");
}

/* Invalid UTF-8 in a piece is refused, and the request still completes. */
static void host_bad_utf8(void* ud, af_lm_request_t* req) {
  int* refused = (int*)ud;
  af_error_t* e = af_lm_request_stream(req, "\xff\xfe", 2);
  *refused = e && af_error_code(e) == AF_ERR_INVALID_ARGUMENT;
  af_error_free(e);
  af_error_free(af_lm_request_complete(req, "ok", 2));
}

static void host_stream_refuses_invalid_utf8(void) {
  af_provider_t* host = NULL;
  af_ir_t* ir = TRACE(ask, NULL, "[\"q\", \"m\"]", NULL);
  af_value_t* out = NULL;
  int refused = 0;
  struct collected c;
  af_run_options_t o;
  collected_init(&c);
  o = stream_options(&c);
  if (!ir || !CHECK_OK(af_provider_host_new(host_bad_utf8, &refused, NULL, &host))) goto done;
  route("*", host);
  if (CHECK_OK(run_ir(ir, "[\"q\", \"m\"]", &o, &out))) CHECK_JSON(out, "\"ok\"");
  CHECK_INT_EQ(refused, 1);
  CHECK_STR_EQ(c.text[0][0], "ok");
done:
  /* The run's destroy may come just after it returned: c must outlive it. */
  CHECK(collected_settled(&c));
  af_value_free(out);
  af_ir_free(ir);
  af_provider_free(host);
}

/* ---- openai: server-sent events ----------------------------------------- */

static void openai_streams_server_sent_events(void) {
  struct server s = server_start();
  af_provider_t* p = openai_for(&s, NULL);
  af_ir_t* ir = TRACE(ask, NULL, "[\"q\", \"m\"]", NULL);
  af_value_t *out = NULL, *plain = NULL;
  struct collected c;
  af_run_options_t o;
  collected_init(&c);
  o = stream_options(&c);
  if (!p || !ir) goto done;
  route("*", p);
  CHECK_OK(run_ir(ir, "[\"hello there\", \"ok\"]", NULL, &plain));
  if (CHECK_OK(run_ir(ir, "[\"hello there\", \"ok\"]", &o, &out))) {
    CHECK_JSON(out, "\"ok|hello there\"");
    CHECK_JSON(plain, "\"ok|hello there\"");
    CHECK_STR_EQ(c.text[0][0], "ok|hello there");
    CHECK_INT_EQ(c.pieces, 4); /* the server sends 4 characters per event */
  }
  /* The stream's usage chunk counts like a usage block (2 + 14, twice). */
  CHECK_INT_EQ(stat_field(p, "prompt_tokens"), 4);
  CHECK_INT_EQ(stat_field(p, "completion_tokens"), 28);
done:
  /* The run's destroy may come just after it returned: c must outlive it. */
  CHECK(collected_settled(&c));
  af_value_free(out);
  af_value_free(plain);
  af_ir_free(ir);
  af_provider_free(p);
  server_stop(&s);
}

/* A stream cut off mid-way is retried: the host is told to start over and
 * the result is the whole reply; cut more often than the retries allow, the
 * call fails with PROVIDER and no result. */
static void cut_streams_are_retried_then_fail(void) {
  struct server s = server_start();
  af_provider_t* p = openai_for(&s, NULL);
  af_ir_t* ir = TRACE(ask, NULL, "[\"q\", \"m\"]", NULL);
  af_value_t* out = NULL;
  struct collected c;
  af_run_options_t o;
  collected_init(&c);
  o = stream_options(&c);
  if (!p || !ir) goto done;
  route("*", p);
  if (CHECK_OK(run_ir(ir, "[\"x\", \"stream-cutx1\"]", &o, &out))) {
    CHECK_JSON(out, "\"stream-cutx1|x\"");
    CHECK_STR_EQ(c.text[0][0], "stream-cutx1|x");
    CHECK_INT_EQ(c.resets, 1);
  }
  CHECK_INT_EQ(server_attempts(&s, "stream-cutx1", "x"), 2);
  af_value_free(out);
  out = NULL;
  collected_reuse(&c);
  o = stream_options(&c);
  CHECK_ERR(run_ir(ir, "[\"x\", \"stream-cutx9\"]", &o, &out), AF_ERR_PROVIDER,
            "stream ended before the reply", "attempt 3 of 3", "127.0.0.1");
  CHECK(out == NULL);
  CHECK_INT_EQ(server_attempts(&s, "stream-cutx9", "x"), 3);
  CHECK_INT_EQ(c.resets, 2); /* before each retry */
done:
  /* The run's destroy may come just after it returned: c must outlive it. */
  CHECK(collected_settled(&c));
  af_value_free(out);
  af_ir_free(ir);
  af_provider_free(p);
  server_stop(&s);
}

/* Garbage, an error event or an HTML page fail at once (not retried: the
 * server would say the same again), naming the endpoint and never the key;
 * a stream that never ends is a TIMEOUT after each attempt's limit. */
static void bad_streams_fail_clearly(void) {
  static const struct {
    const char* model;
    int code;
    long attempts;
    const char* frag1;
    const char* frag2;
  } cases[] = {
      {"stream-garbage", AF_ERR_PROVIDER, 1, "bad stream", "not valid JSON"},
      {"stream-error", AF_ERR_PROVIDER, 1, "bad stream", "the model crashed"},
      {"stream-html", AF_ERR_PROVIDER, 1, "not valid JSON", "Gateway says hello"},
      {"stream-forever", AF_ERR_TIMEOUT, 3, "no reply within 400 ms", "attempt 3 of 3"},
  };
  struct server s = server_start();
  af_provider_t* p;
  af_ir_t* ir = TRACE(ask, NULL, "[\"q\", \"m\"]", NULL);
  size_t i;
  struct collected c;
  setenv("AF_TEST_STREAM_KEY", "sk-stream-secret", 1);
  p = openai_for(&s, "\"api_key_env\":\"AF_TEST_STREAM_KEY\"");
  if (!p || !ir) goto done;
  route("*", p);
  collected_init(&c);
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    af_run_options_t o;
    af_value_t* out = NULL;
    char in[128];
    af_error_t* e;
    double t0 = now_ms();
    collected_reuse(&c);
    o = stream_options(&c);
    snprintf(in, sizeof in, "[\"x\", \"%s\"]", cases[i].model);
    e = run_ir(ir, in, &o, &out);
    if (e) CHECK_NOT_CONTAINS(af_error_message(e), "sk-stream-secret");
    CHECK_ERR(e, cases[i].code, cases[i].frag1, cases[i].frag2, "127.0.0.1");
    CHECK(out == NULL);
    af_value_free(out);
    CHECK(now_ms() - t0 < 5000); /* nothing hangs past its timeouts */
    if (server_attempts(&s, cases[i].model, "x") != cases[i].attempts)
      check_fail(__FILE__, __LINE__, "%s: %ld attempts, expected %ld", cases[i].model,
                 server_attempts(&s, cases[i].model, "x"), cases[i].attempts);
  }
done:
  /* The run's destroy may come just after it returned: c must outlive it. */
  CHECK(collected_settled(&c));
  af_ir_free(ir);
  af_provider_free(p);
  server_stop(&s);
}

/* The callback may end the run: it is cancelled at the first piece of a
 * stream that would go on for 30 s, and the transfer is aborted. */
static void the_callback_may_cancel_the_run(void) {
  struct server s = server_start();
  af_provider_t* p = NULL;
  af_ir_t* ir = TRACE(ask, NULL, "[\"q\", \"m\"]", NULL);
  af_value_t* out = NULL;
  af_cancel_t* cancel = NULL;
  struct collected c;
  af_run_options_t o;
  char opts[256];
  double t0;
  long aborted = 0;
  collected_init(&c);
  o = stream_options(&c);
  snprintf(opts, sizeof opts, "{\"base_url\":\"http://127.0.0.1:%d/v1\",\"timeout_ms\":60000}",
           s.port);
  if (!ir || !CHECK_OK(af_provider_openai_new(opts, strlen(opts), &p)) ||
      !CHECK_OK(af_cancel_new(&cancel)))
    goto done;
  route("*", p);
  c.trigger_on_first = cancel;
  o.cancel = cancel;
  t0 = now_ms();
  CHECK_ERR(run_ir(ir, "[\"x\", \"stream-forever\"]", &o, &out), AF_ERR_CANCELLED, "");
  CHECK(now_ms() - t0 < 5000);
  CHECK(c.pieces >= 1);
  t0 = now_ms();
  do {
    aborted = server_stat(&s, "stream-forever", "x", "aborted");
    if (aborted < 1) sleep_ms(50);
  } while (aborted < 1 && now_ms() - t0 < 3000);
  CHECK_INT_EQ(aborted, 1);
done:
  /* The run's destroy may come just after it returned: c must outlive it. */
  CHECK(collected_settled(&c));
  af_cancel_free(cancel);
  af_ir_free(ir);
  af_provider_free(p);
  server_stop(&s);
}

int main(int argc, char** argv) {
  static const struct test_case cases[] = {
      CASE(echo_streams_each_item_in_pieces),   CASE(stream_tag_chooses_the_equations),
      CASE(calls_inside_a_map_report_the_item), CASE(host_provider_streams_its_pieces),
      CASE(host_stream_misuse_is_refused),      CASE(host_stream_refuses_invalid_utf8),
      CASE(openai_streams_server_sent_events),  CASE(cut_streams_are_retried_then_fail),
      CASE(bad_streams_fail_clearly),           CASE(the_callback_may_cancel_the_run),
  };
  return run_cases(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
