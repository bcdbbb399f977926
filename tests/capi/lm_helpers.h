/* Helpers of the LM suites: providers, routes, messages, provider stats,
 * time; with lm_server.h, the local fault-injecting chat-completions server
 * (tests/lm_server/server.py). Include after check.h. */
#ifndef AF_TESTS_CAPI_LM_HELPERS_H
#define AF_TESTS_CAPI_LM_HELPERS_H

#include <pthread.h>
#include <time.h>

#include "lm_server.h"

static CHECK_MAYBE_UNUSED af_provider_t* echo_with(const char* options) {
  af_provider_t* p = NULL;
  if (!CHECK_OK(af_provider_echo_new(options, options ? strlen(options) : 0, &p))) return NULL;
  return p;
}

static CHECK_MAYBE_UNUSED void route(const char* pattern, af_provider_t* p) {
  CHECK_OK(af_context_route(ctx, pattern, strlen(pattern), p));
}

/* One-message conversation with a user turn. */
static CHECK_MAYBE_UNUSED af_value_t* user_msg(const char* content) {
  char buf[512];
  snprintf(buf, sizeof buf, "[{\"role\":\"user\",\"content\":\"%s\"}]", content);
  return mk_json(buf);
}

/* [{"role": "user", "content": content}] in context c; content may be a
 * traced value. NULL if a value could not be made. */
static CHECK_MAYBE_UNUSED af_value_t* user_turn(af_context_t* c, const af_value_t* content) {
  af_value_t *role = NULL, *m = NULL, *msgs = NULL;
  const char* keys[] = {"role", "content"};
  size_t lens[] = {4, 7};
  const af_value_t* v[2];
  af_value_str(c, "user", 4, &role);
  v[0] = role;
  v[1] = content;
  af_value_dict(c, keys, lens, v, 2, &m);
  af_value_list(c, (const af_value_t* const*)&m, 1, &msgs);
  af_value_free(role);
  af_value_free(m);
  return msgs;
}

static CHECK_MAYBE_UNUSED char* stats_of(const af_provider_t* p) {
  af_bytes_t b = {NULL, 0};
  return bytes_to_cstr_at(af_provider_stats(p, &b), &b, "af_provider_stats", __FILE__, __LINE__);
}

static CHECK_MAYBE_UNUSED long stat_field(const af_provider_t* p, const char* field) {
  char* s = stats_of(p);
  char key[64];
  const char* at;
  long v = -1;
  snprintf(key, sizeof key, "\"%s\":", field);
  at = s ? strstr(s, key) : NULL;
  if (at) v = strtol(at + strlen(key), NULL, 10);
  free(s);
  return v;
}

static CHECK_MAYBE_UNUSED void sleep_ms(long ms) {
  struct timespec ts;
  ts.tv_sec = ms / 1000;
  ts.tv_nsec = (ms % 1000) * 1000000L;
  nanosleep(&ts, NULL);
}

static CHECK_MAYBE_UNUSED double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* One user message to model through the context's routes. */
static CHECK_MAYBE_UNUSED af_error_t* call_model(const char* model, const char* content,
                                                 af_value_t** out) {
  af_value_t* msgs = user_msg(content);
  af_value_t* m = mk_str(model);
  af_error_t* e = af_lm_call(ctx, msgs, m, out);
  af_value_free(msgs);
  af_value_free(m);
  return e;
}

/* Sampling params (JSON) that lm_ask passes, or NULL. */
static CHECK_MAYBE_UNUSED const char* g_params;

/* A traced function: (q, model) -> lm_call([user q], model, g_params) or,
 * when ud is a schema (JSON), lm_schema_call with it. */
static CHECK_MAYBE_UNUSED af_error_t* lm_ask(void* ud, af_context_t* c,
                                             const af_value_t* const* in, size_t n,
                                             af_value_t** out) {
  af_value_t *msgs = user_turn(c, in[0]), *params = NULL, *schema = NULL;
  af_error_t* e = NULL;
  (void)n;
  if (g_params) e = af_value_from_json(c, g_params, strlen(g_params), &params);
  if (!e && ud) e = af_value_from_json(c, (const char*)ud, strlen((const char*)ud), &schema);
  if (!e)
    e = schema ? af_lm_schema_call_ex(c, msgs, in[1], schema, params, out)
               : af_lm_call_ex(c, msgs, in[1], params, out);
  af_value_free(msgs);
  af_value_free(params);
  af_value_free(schema);
  return e;
}


/* A run's streamed text (af_run_options_t.stream = stream_into, stream_destroy =
 * streamed_destroy, stream_user_data = a struct streamed with mu
 * initialized): the pieces since the last reset, counted. */
struct streamed {
  pthread_mutex_t mu;
  char text[4096];
  size_t len;
  int pieces, resets, runs, destroyed;
};

static CHECK_MAYBE_UNUSED void stream_into(void* ud, uint32_t eqn, uint64_t item, const char* text, size_t len) {
  struct streamed* c = (struct streamed*)ud;
  (void)eqn;
  (void)item;
  pthread_mutex_lock(&c->mu);
  if (!text) {
    c->len = 0;
    c->resets++;
  } else if (c->len + len < sizeof c->text) {
    memcpy(c->text + c->len, text, len);
    c->len += len;
    c->pieces++;
  }
  c->text[c->len] = 0;
  pthread_mutex_unlock(&c->mu);
}

static CHECK_MAYBE_UNUSED void streamed_destroy(void* ud) {
  struct streamed* c = (struct streamed*)ud;
  pthread_mutex_lock(&c->mu);
  c->destroyed++;
  pthread_mutex_unlock(&c->mu);
}

/* Run options streaming into c for one more run: waits (up to 5 s) for the
 * last run's destroy, which may come just after its call returned, then
 * clears c's text and counts. */
static CHECK_MAYBE_UNUSED af_run_options_t streaming_into(struct streamed* c) {
  af_run_options_t o;
  double t0 = now_ms();
  for (;;) {
    int settled;
    pthread_mutex_lock(&c->mu);
    settled = c->destroyed == c->runs;
    pthread_mutex_unlock(&c->mu);
    if (settled || now_ms() - t0 > 5000) break;
    sleep_ms(1);
  }
  c->len = 0;
  c->text[0] = 0;
  c->pieces = c->resets = 0;
  c->runs++;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.stream = stream_into;
  o.stream_user_data = c;
  o.stream_destroy = streamed_destroy;
  return o;
}

#endif
