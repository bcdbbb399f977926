/* Compiled programs through the C API: af_compile, af_program_call(_with),
 * async runs and futures, cancellation, timeouts, progress, profiles,
 * keep-going, and the dataflow property (independent LM calls overlap,
 * across levels). */
#include "check.h"

#include <pthread.h>
#include <time.h>

static void sleep_ms(long ms) {
  struct timespec ts;
  ts.tv_sec = ms / 1000;
  ts.tv_nsec = (ms % 1000) * 1000000L;
  nanosleep(&ts, NULL);
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static af_provider_t* echo_with(const char* options) {
  af_provider_t* p = NULL;
  if (!CHECK_OK(af_provider_echo_new(options, options ? strlen(options) : 0, &p))) return NULL;
  return p;
}

static void route(const char* pattern, af_provider_t* p) {
  CHECK_OK(af_context_route(ctx, pattern, strlen(pattern), p));
}

static long stat_field(const af_provider_t* p, const char* field) {
  af_bytes_t b = {NULL, 0};
  char key[64];
  const char* at;
  long v = -1;
  if (!CHECK_OK(af_provider_stats(p, &b))) return -1;
  snprintf(key, sizeof key, "\"%s\":", field);
  at = strstr((const char*)b.data, key);
  if (at) v = strtol(at + strlen(key), NULL, 10);
  af_bytes_free(&b);
  return v;
}

/* lm_call(model, [user: content]) inside a trace. */
static af_error_t* ask(af_context_t* c, const af_value_t* content, const af_value_t* model, af_value_t** out) {
  af_value_t *role = NULL, *m = NULL, *msgs = NULL;
  const char* keys[] = {"role", "content"};
  size_t lens[] = {4, 7};
  const af_value_t* vals[2];
  af_error_t* e;
  af_value_str(c, "user", 4, &role);
  vals[0] = role;
  vals[1] = content;
  af_value_dict(c, keys, lens, vals, 2, &m);
  af_value_list(c, (const af_value_t* const*)&m, 1, &msgs);
  e = af_lm_call(c, msgs, model, out);
  af_value_free(role);
  af_value_free(m);
  af_value_free(msgs);
  return e;
}

static af_value_t* cstr(af_context_t* c, const char* s) {
  af_value_t* v = NULL;
  af_value_str(c, s, strlen(s), &v);
  return v;
}

/* A two-level DAG over input (q, slow_model, fast_model):
 *   s  = lm(slow, q)          level 0, slow
 *   f1 = lm(fast, q + "1")    level 0, fast
 *   f2 = lm(fast, f1)         level 1, fast: can start long before s ends
 *   out = [s, f2]                                                       */
static af_error_t* two_level(void* ud, af_context_t* c, const af_value_t* const* in, size_t n, af_value_t** out) {
  af_value_t *s = NULL, *f1 = NULL, *f2 = NULL, *one = cstr(c, "1"), *q1 = NULL;
  const af_value_t* parts[2];
  af_error_t* e;
  (void)ud;
  (void)n;
  parts[0] = in[0];
  parts[1] = one;
  e = ask(c, in[0], in[1], &s);
  if (!e) e = af_concat(c, parts, 2, &q1);
  if (!e) e = ask(c, q1, in[2], &f1);
  if (!e) e = ask(c, f1, in[2], &f2);
  if (!e) {
    const af_value_t* items[] = {s, f2};
    e = af_value_list(c, items, 2, out);
  }
  af_value_free(s);
  af_value_free(f1);
  af_value_free(f2);
  af_value_free(one);
  af_value_free(q1);
  return e;
}

/* n independent calls (n = *(int*)ud) on q + "<i>", model in[1]. */
static af_error_t* fan_out(void* ud, af_context_t* c, const af_value_t* const* in, size_t n_in, af_value_t** out) {
  int n = *(int*)ud, i;
  af_value_t* results[64] = {NULL};
  af_error_t* e = NULL;
  (void)n_in;
  for (i = 0; i < n && !e; i++) {
    char num[8];
    af_value_t *suffix, *q = NULL;
    const af_value_t* parts[2];
    snprintf(num, sizeof num, "%d", i);
    suffix = cstr(c, num);
    parts[0] = in[0];
    parts[1] = suffix;
    e = af_concat(c, parts, 2, &q);
    results[i] = NULL;
    if (!e) e = ask(c, q, in[1], &results[i]);
    af_value_free(suffix);
    af_value_free(q);
  }
  if (!e) e = af_value_list(c, (const af_value_t* const*)results, (size_t)n, out);
  for (i = 0; i < n; i++) af_value_free(results[i]);
  return e;
}

static af_program_t* compile_ir(af_ir_t* ir) {
  af_program_t* p = NULL;
  if (!ir) return NULL;
  CHECK_OK(af_compile(ctx, ir, &p));
  return p;
}

static af_error_t* call_program(const af_program_t* p, const char* inputs_json, const af_run_options_t* o,
                                af_value_t** out) {
  af_value_t* in[MAX_INPUTS];
  size_t n = split_list(inputs_json, in);
  af_error_t* e = af_program_call_with(ctx, p, (const af_value_t* const*)in, n, o, out);
  free_items(in, n);
  return e;
}

static af_error_t* start_program(const af_program_t* p, const char* inputs_json, const af_run_options_t* o,
                                 af_future_t** out) {
  af_value_t* in[MAX_INPUTS];
  size_t n = split_list(inputs_json, in);
  af_error_t* e = af_program_call_async_with(ctx, p, (const af_value_t* const*)in, n, o, out);
  free_items(in, n);
  return e;
}

/* ---- cases ------------------------------------------------------------ */

static af_error_t* greet(void* ud, af_context_t* c, const af_value_t* const* in, size_t n, af_value_t** out) {
  af_value_t* unused = NULL;
  af_error_t* e;
  const af_value_t* args[] = {in[0]};
  (void)ud;
  (void)n;
  e = af_format(c, "dead {}", 7, args, 1, NULL, &unused); /* removed by DCE */
  af_value_free(unused);
  if (e) return e;
  return af_format(c, "Hello, {}!", 10, args, 1, NULL, out);
}

static void compiled_program_matches_ir_call(void) {
  af_ir_t* ir = TRACE(greet, NULL, "[\"x\"]", NULL);
  af_program_t* p = compile_ir(ir);
  af_value_t* out = NULL;
  if (!p) return;
  if (CHECK_OK(call_program(p, "[\"Ada\"]", NULL, &out))) CHECK_JSON(out, "\"Hello, Ada!\"");
  af_value_free(out);
  CHECK_CALL(ir, "[\"Ada\"]", "\"Hello, Ada!\"");
  out = (af_value_t*)&out;
  CHECK_ERR(call_program(p, "[3]", NULL, &out), AF_ERR_INVALID_ARGUMENT, "input[0]", "expected str");
  CHECK_NULLED(out, af_value_free);
  {
    af_program_t* none = NULL;
    CHECK_ERR(af_compile(ctx, NULL, &none), AF_ERR_INVALID_ARGUMENT, "ir");
    CHECK_NULLED(none, af_program_free);
  }
  {
    af_program_t* q = af_program_clone(p);
    CHECK(q == p);
    af_program_free(q);
  }
  af_program_free(p);
  af_ir_free(ir);
}

static void dataflow_starts_work_across_levels(void) {
  /* slow = 300 ms, fast = 20 ms: f2 (level 1) must finish while s (level
   * 0) is still in flight, which a level-by-level schedule cannot do. */
  af_provider_t* slow = echo_with("{\"latency_ms\":300,\"name\":\"slow\"}");
  af_provider_t* fast = echo_with("{\"latency_ms\":20,\"name\":\"fast\"}");
  af_ir_t* ir = TRACE(two_level, NULL, "[\"q\",\"s\",\"f\"]", NULL);
  af_program_t* p = compile_ir(ir);
  af_future_t* f = NULL;
  af_value_t* out = NULL;
  if (!p) return;
  route("slow", slow);
  route("fast", fast);
  if (!CHECK_OK(start_program(p, "[\"q\",\"slow\",\"fast\"]", NULL, &f))) return;
  /* Wait until both fast calls are done; the slow one must still be open. */
  {
    double t0 = now_ms();
    while (stat_field(fast, "finished") < 2 && now_ms() - t0 < 5000) sleep_ms(2);
  }
  CHECK_INT_EQ(stat_field(fast, "finished"), 2);
  CHECK_INT_EQ(stat_field(slow, "in_flight"), 1);
  CHECK(!af_future_ready(f));
  if (CHECK_OK(af_future_wait(f, &out))) CHECK_JSON(out, "[\"slow|q\",\"fast|fast|q1\"]");
  CHECK(af_future_ready(f));
  af_value_free(out);
  af_future_free(f);
  af_program_free(p);
  af_ir_free(ir);
  af_provider_free(slow);
  af_provider_free(fast);
}

static void independent_calls_are_all_in_flight_at_once(void) {
  int n = 32;
  af_provider_t* echo = echo_with("{\"latency_ms\":50}");
  af_ir_t* ir = TRACE(fan_out, &n, "[\"q\",\"m\"]", NULL);
  af_program_t* p = compile_ir(ir);
  af_value_t* out = NULL;
  if (!p) return;
  route("*", echo);
  if (CHECK_OK(call_program(p, "[\"x\",\"m\"]", NULL, &out))) {
    af_value_t* item = NULL;
    CHECK_OK(af_value_index(out, 31, &item));
    CHECK_JSON(item, "\"m|x31\"");
    af_value_free(item);
  }
  CHECK_INT_EQ(stat_field(echo, "peak_in_flight"), 32);
  af_value_free(out);
  /* af_ir_call goes through the same executor. */
  out = NULL;
  CHECK_OK(call_json(ir, "[\"y\",\"m\"]", &out));
  CHECK_INT_EQ(stat_field(echo, "finished"), 64);
  CHECK_INT_EQ(stat_field(echo, "peak_in_flight"), 32);
  af_value_free(out);
  af_program_free(p);
  af_ir_free(ir);
  af_provider_free(echo);
}

struct done_flag {
  pthread_mutex_t mu;
  int calls, destroyed;
};
static void on_done(void* ud) {
  struct done_flag* d = (struct done_flag*)ud;
  pthread_mutex_lock(&d->mu);
  d->calls++;
  pthread_mutex_unlock(&d->mu);
}
static void on_done_destroy(void* ud) {
  struct done_flag* d = (struct done_flag*)ud;
  pthread_mutex_lock(&d->mu);
  d->destroyed++;
  pthread_mutex_unlock(&d->mu);
}
static int done_count(struct done_flag* d, int destroyed) {
  int n;
  pthread_mutex_lock(&d->mu);
  n = destroyed ? d->destroyed : d->calls;
  pthread_mutex_unlock(&d->mu);
  return n;
}

static void futures_wait_poll_and_call_back(void) {
  int n = 4;
  af_provider_t* echo = echo_with("{\"latency_ms\":30}");
  af_ir_t* ir = TRACE(fan_out, &n, "[\"q\",\"m\"]", NULL);
  af_program_t* p = compile_ir(ir);
  af_future_t* f = NULL;
  af_value_t *out = NULL, *again = NULL;
  struct done_flag d;
  if (!p) return;
  memset(&d, 0, sizeof d);
  pthread_mutex_init(&d.mu, NULL);
  route("*", echo);
  if (!CHECK_OK(start_program(p, "[\"a\",\"m\"]", NULL, &f))) return;
  CHECK_OK(af_future_on_done(f, on_done, &d, on_done_destroy));
  if (CHECK_OK(af_future_wait(f, &out))) CHECK_JSON(out, "[\"m|a0\",\"m|a1\",\"m|a2\",\"m|a3\"]");
  if (CHECK_OK(af_future_wait(f, &again))) CHECK_JSON(again, "[\"m|a0\",\"m|a1\",\"m|a2\",\"m|a3\"]");
  {
    double t0 = now_ms();
    while (done_count(&d, 1) == 0 && now_ms() - t0 < 2000) sleep_ms(1);
  }
  CHECK_INT_EQ(done_count(&d, 0), 1);
  CHECK_INT_EQ(done_count(&d, 1), 1);
  /* Registered after completion: runs at once, here. */
  CHECK_OK(af_future_on_done(f, on_done, &d, on_done_destroy));
  CHECK_INT_EQ(done_count(&d, 0), 2);
  CHECK_INT_EQ(done_count(&d, 1), 2);
  CHECK_ERR(af_future_profile(f, &(af_bytes_t){NULL, 0}), AF_ERR_INVALID_ARGUMENT, "AF_RUN_PROFILE");
  af_value_free(out);
  af_value_free(again);
  af_future_free(f);
  af_program_free(p);
  af_ir_free(ir);
  af_provider_free(echo);
}

/* Host provider that never answers: a request stays in flight. */
struct parked {
  pthread_mutex_t mu;
  af_lm_request_t* reqs[16];
  int n;
};
static void park(void* ud, af_lm_request_t* req) {
  struct parked* p = (struct parked*)ud;
  pthread_mutex_lock(&p->mu);
  if (p->n < 16) p->reqs[p->n++] = req;
  pthread_mutex_unlock(&p->mu);
}
/* How many requests have been parked; waits (up to 5 s) for `want` of them.
 * A provider's in_flight count rises before its callback parks the request,
 * so tests wait on this, read under the lock. */
static int parked_wait(struct parked* p, int want) {
  double t0 = now_ms();
  int n;
  for (;;) {
    pthread_mutex_lock(&p->mu);
    n = p->n;
    pthread_mutex_unlock(&p->mu);
    if (n >= want || now_ms() - t0 >= 5000) return n;
    sleep_ms(1);
  }
}

static void cancel_stops_in_flight_requests(void) {
  int n = 3;
  struct parked parked;
  af_provider_t* host = NULL;
  af_ir_t* ir = TRACE(fan_out, &n, "[\"q\",\"m\"]", NULL);
  af_program_t* p = compile_ir(ir);
  af_future_t* f = NULL;
  af_value_t* out = (af_value_t*)&out;
  int i;
  if (!p) return;
  memset(&parked, 0, sizeof parked);
  pthread_mutex_init(&parked.mu, NULL);
  CHECK_OK(af_provider_host_new(park, &parked, NULL, &host));
  route("*", host);
  if (!CHECK_OK(start_program(p, "[\"a\",\"m\"]", NULL, &f))) return;
  CHECK_INT_EQ(parked_wait(&parked, 3), 3);
  CHECK_INT_EQ(stat_field(host, "in_flight"), 3);
  for (i = 0; i < parked.n; i++) CHECK_INT_EQ(af_lm_request_cancelled(parked.reqs[i]), 0);
  af_future_cancel(f);
  CHECK_ERR(af_future_wait(f, &out), AF_ERR_CANCELLED, "cancelled");
  CHECK_NULLED(out, af_value_free);
  CHECK_INT_EQ(stat_field(host, "in_flight"), 0);
  for (i = 0; i < parked.n; i++) {
    CHECK_INT_EQ(af_lm_request_cancelled(parked.reqs[i]), 1);
    /* Finishing a cancelled request is harmless and frees the handle. */
    CHECK_OK(af_lm_request_complete(parked.reqs[i], "late", 4));
  }
  af_future_cancel(f); /* no-op now */
  af_future_free(f);
  af_program_free(p);
  af_ir_free(ir);
  af_provider_free(host);
}

static void timeout_fails_the_run_quickly(void) {
  int n = 2;
  af_provider_t* echo = echo_with("{\"latency_ms\":10000}");
  af_ir_t* ir = TRACE(fan_out, &n, "[\"q\",\"m\"]", NULL);
  af_program_t* p = compile_ir(ir);
  af_run_options_t o;
  af_value_t* out = NULL;
  double t0;
  if (!p) return;
  route("*", echo);
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.timeout_ms = 50;
  t0 = now_ms();
  CHECK_ERR(call_program(p, "[\"a\",\"m\"]", &o, &out), AF_ERR_TIMEOUT, "50 ms");
  CHECK(now_ms() - t0 < 5000);
  CHECK_INT_EQ(stat_field(echo, "in_flight"), 0);
  af_program_free(p);
  af_ir_free(ir);
  af_provider_free(echo);
}

/* A thread that triggers a cancel token once the provider has requests in flight. */
struct trigger_arg {
  af_cancel_t* token;
  const af_provider_t* provider;
};
static void* trigger_when_in_flight(void* ud) {
  struct trigger_arg* a = (struct trigger_arg*)ud;
  double t0 = now_ms();
  while (stat_field(a->provider, "in_flight") < 2 && now_ms() - t0 < 5000) sleep_ms(1);
  af_cancel_trigger(a->token);
  return NULL;
}

static void cancel_token_stops_a_blocking_call(void) {
  int n = 2;
  af_provider_t* echo = echo_with("{\"latency_ms\":10000}");
  af_ir_t* ir = TRACE(fan_out, &n, "[\"q\",\"m\"]", NULL);
  af_program_t* p = compile_ir(ir);
  af_cancel_t* token = NULL;
  af_future_t* f = NULL;
  af_run_options_t o;
  af_value_t* out = NULL;
  struct trigger_arg arg;
  pthread_t th;
  double t0;
  if (!p || !CHECK_OK(af_cancel_new(&token))) return;
  CHECK_ERR(af_cancel_new(NULL), AF_ERR_INVALID_ARGUMENT, "out");
  route("*", echo);
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.cancel = token;
  arg.token = token;
  arg.provider = echo;
  CHECK_INT_EQ(af_cancel_triggered(token), 0);
  pthread_create(&th, NULL, trigger_when_in_flight, &arg);
  t0 = now_ms();
  CHECK_ERR(call_program(p, "[\"a\",\"m\"]", &o, &out), AF_ERR_CANCELLED, "cancel token");
  CHECK(now_ms() - t0 < 5000);
  pthread_join(th, NULL);
  CHECK_NULLED(out, af_value_free);
  CHECK_INT_EQ(af_cancel_triggered(token), 1);
  CHECK_INT_EQ(stat_field(echo, "in_flight"), 0);
  /* A triggered token ends later runs at once, sync or async. */
  CHECK_ERR(call_program(p, "[\"b\",\"m\"]", &o, &out), AF_ERR_CANCELLED, "cancel token");
  if (CHECK_OK(start_program(p, "[\"c\",\"m\"]", &o, &f))) {
    CHECK_ERR(af_future_wait(f, &out), AF_ERR_CANCELLED, "cancel token");
    af_future_free(f);
  }
  CHECK_INT_EQ(stat_field(echo, "in_flight"), 0);
  af_cancel_trigger(token); /* idempotent */
  af_cancel_trigger(NULL);
  af_cancel_free(token);
  af_cancel_free(NULL);
  af_program_free(p);
  af_ir_free(ir);
  af_provider_free(echo);
}

struct progress_log {
  uint64_t last_done, total;
  int calls, monotonic, destroyed;
};
static void on_progress(void* ud, uint64_t done, uint64_t total) {
  struct progress_log* l = (struct progress_log*)ud;
  if (done != l->last_done + 1) l->monotonic = 0;
  l->last_done = done;
  l->total = total;
  l->calls++;
}
static void on_progress_destroy(void* ud) { ((struct progress_log*)ud)->destroyed++; }

static void progress_reports_every_equation(void) {
  int n = 5;
  af_provider_t* echo = echo_with(NULL);
  af_ir_t* ir = TRACE(fan_out, &n, "[\"q\",\"m\"]", NULL);
  af_program_t* p = compile_ir(ir);
  af_run_options_t o;
  struct progress_log log;
  af_value_t* out = NULL;
  if (!p) return;
  route("*", echo);
  memset(&log, 0, sizeof log);
  log.monotonic = 1;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.progress = on_progress;
  o.progress_user_data = &log;
  o.progress_destroy = on_progress_destroy;
  CHECK_OK(call_program(p, "[\"a\",\"m\"]", &o, &out));
  CHECK_INT_EQ(log.total, 10); /* 5 concats + 5 lm_calls */
  CHECK_INT_EQ(log.last_done, 10);
  CHECK_INT_EQ(log.calls, 10);
  CHECK(log.monotonic);
  CHECK_INT_EQ(log.destroyed, 1);
  af_value_free(out);
  /* Bad options fail before running, and destroy still runs once. */
  o.struct_size = 3;
  out = NULL;
  CHECK_ERR(call_program(p, "[\"a\",\"m\"]", &o, &out), AF_ERR_INVALID_ARGUMENT, "struct_size");
  o.struct_size = sizeof o;
  o.flags = 0x80;
  CHECK_ERR(call_program(p, "[\"a\",\"m\"]", &o, &out), AF_ERR_INVALID_ARGUMENT, "flags");
  CHECK_INT_EQ(log.destroyed, 2); /* the struct_size failure could not read the fields */
  af_program_free(p);
  af_ir_free(ir);
  af_provider_free(echo);
}

/* A progress callback's destroy runs before the run reports completion:
 * once af_program_call_with returns, or af_future_wait does, the user data
 * is free to go (a binding's callable may be collected then). With latency,
 * the last equation finishes on the provider's thread, not the caller's. */
struct released_log {
  int calls, destroyed;  /* destroyed: written by libaf threads (atomics) */
  af_cancel_t* cancel_at_first; /* the callback cancels the run */
};
static void count_progress(void* ud, uint64_t done, uint64_t total) {
  struct released_log* l = (struct released_log*)ud;
  (void)done;
  (void)total;
  __atomic_add_fetch(&l->calls, 1, __ATOMIC_SEQ_CST);
  if (l->cancel_at_first) af_cancel_trigger(l->cancel_at_first);
}
static void count_destroy(void* ud) {
  __atomic_add_fetch(&((struct released_log*)ud)->destroyed, 1, __ATOMIC_SEQ_CST);
}
static int destroyed_of(struct released_log* l) { return __atomic_load_n(&l->destroyed, __ATOMIC_SEQ_CST); }

static void callbacks_are_released_before_the_run_reports_done(void) {
  int n = 4, i;
  af_provider_t* echo = echo_with("{\"latency_ms\":2}");
  af_ir_t* ir = TRACE(fan_out, &n, "[\"q\",\"m\"]", NULL);
  af_program_t* p = compile_ir(ir);
  af_run_options_t o;
  struct released_log log;
  af_value_t* out = NULL;
  double t0;
  if (!p) return;
  route("*", echo);
  memset(&log, 0, sizeof log);
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.progress = count_progress;
  o.progress_user_data = &log;
  o.progress_destroy = count_destroy;
  for (i = 0; i < 20; i++) {
    af_future_t* f = NULL;
    CHECK_OK(call_program(p, "[\"a\",\"m\"]", &o, &out));
    af_value_free(out);
    out = NULL;
    CHECK_INT_EQ(destroyed_of(&log), 2 * i + 1); /* released before the call returned */
    if (!CHECK_OK(start_program(p, "[\"a\",\"m\"]", &o, &f))) break;
    CHECK_OK(af_future_wait(f, &out));
    CHECK_INT_EQ(destroyed_of(&log), 2 * i + 2); /* released before the wait returned */
    CHECK_INT_EQ(af_future_ready(f), 1);
    af_value_free(out);
    out = NULL;
    af_future_free(f);
  }
  CHECK_INT_EQ(log.calls, 40 * 2 * n);
  /* A callback that ends the run (cancels it) is released once, when it
   * returns: after the run reported CANCELLED, possibly. */
  memset(&log, 0, sizeof log);
  if (CHECK_OK(af_cancel_new(&log.cancel_at_first))) {
    o.cancel = log.cancel_at_first;
    CHECK_ERR(call_program(p, "[\"a\",\"m\"]", &o, &out), AF_ERR_CANCELLED, "");
    t0 = now_ms();
    while (destroyed_of(&log) < 1 && now_ms() - t0 < 5000) sleep_ms(1);
    sleep_ms(20);
    CHECK_INT_EQ(destroyed_of(&log), 1);
    CHECK_INT_EQ(__atomic_load_n(&log.calls, __ATOMIC_SEQ_CST), 1); /* never called once finished */
    af_cancel_free(log.cancel_at_first);
  }
  af_program_free(p);
  af_ir_free(ir);
  af_provider_free(echo);
}

static char* read_file(const char* path) {
  FILE* f = fopen(path, "rb");
  long n;
  char* s;
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  s = (char*)malloc((size_t)n + 1);
  if (fread(s, 1, (size_t)n, f) != (size_t)n) n = 0;
  s[n] = 0;
  fclose(f);
  return s;
}

static void profile_is_chrome_trace_json(void) {
  af_provider_t* slow = echo_with("{\"latency_ms\":30,\"name\":\"slowpool\",\"max_in_flight\":1}");
  af_provider_t* fast = echo_with("{\"latency_ms\":5,\"name\":\"fastpool\"}");
  af_ir_t* ir = TRACE(two_level, NULL, "[\"q\",\"s\",\"f\"]", NULL);
  af_program_t* p = compile_ir(ir);
  af_run_options_t o;
  char path[128];
  af_value_t* out = NULL;
  char* json;
  if (!p) return;
  route("slow", slow);
  route("fast", fast);
  snprintf(path, sizeof path, "/tmp/af_profile_%d.json", (int)getpid());
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.profile_path = path;
  o.profile_path_len = strlen(path);
  CHECK_OK(call_program(p, "[\"q\",\"slow\",\"fast\"]", &o, &out));
  af_value_free(out);
  json = read_file(path);
  CHECK(json != NULL);
  if (json) {
    af_value_t* v = NULL;
    af_value_t* events = NULL;
    size_t n = 0;
    CHECK_OK(af_value_from_json(ctx, json, strlen(json), &v));
    CHECK_OK(af_value_key(v, "traceEvents", 11, &events));
    CHECK_OK(af_value_len(events, &n));
    CHECK(n > 10);
    CHECK_CONTAINS(json, "\"provider slowpool\"");
    CHECK_CONTAINS(json, "\"provider fastpool\"");
    CHECK_CONTAINS(json, "\"slot 0\"");
    CHECK_CONTAINS(json, "\"lm_call #");
    CHECK_CONTAINS(json, "\"queued\"");
    CHECK_CONTAINS(json, "\"concat #");
    CHECK_CONTAINS(json, "\"ph\":\"X\"");
    af_value_free(events);
    af_value_free(v);
    free(json);
  }
  remove(path);
  /* AF_RUN_PROFILE keeps it on the future instead. */
  {
    af_future_t* f = NULL;
    af_bytes_t b = {NULL, 0};
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.flags = AF_RUN_PROFILE;
    if (CHECK_OK(start_program(p, "[\"q\",\"slow\",\"fast\"]", &o, &f))) {
      out = NULL;
      CHECK_OK(af_future_wait(f, &out));
      af_value_free(out);
      if (CHECK_OK(af_future_profile(f, &b))) CHECK_CONTAINS((const char*)b.data, "traceEvents");
      af_bytes_free(&b);
      af_future_free(f);
    }
  }
  /* The profile's missing directories are created. */
  {
    char dir[96], nested[160];
    snprintf(dir, sizeof dir, "/tmp/af_profiles_%d", (int)getpid());
    snprintf(nested, sizeof nested, "%s/run/p.json", dir);
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.profile_path = nested;
    o.profile_path_len = strlen(nested);
    out = NULL;
    CHECK_OK(call_program(p, "[\"q\",\"slow\",\"fast\"]", &o, &out));
    af_value_free(out);
    json = read_file(nested);
    CHECK(json != NULL && strstr(json, "traceEvents") != NULL);
    free(json);
    /* A profile that cannot be written (a file where a directory should be)
     * fails before running: IO. */
    snprintf(path, sizeof path, "%s/p.json", nested);
    o.profile_path = path;
    o.profile_path_len = strlen(path);
    out = NULL;
    CHECK_ERR(call_program(p, "[\"q\",\"slow\",\"fast\"]", &o, &out), AF_ERR_IO, "p.json");
    remove(nested);
    snprintf(nested, sizeof nested, "%s/run", dir);
    rmdir(nested);
    rmdir(dir);
  }
  af_program_free(p);
  af_ir_free(ir);
  af_provider_free(slow);
  af_provider_free(fast);
}

static void errors_cancel_the_rest_or_keep_going(void) {
  /* model "slow" is routed, "missing" is not: f1/f2 fail with NOT_FOUND. */
  af_provider_t* slow = echo_with("{\"latency_ms\":5000}");
  af_ir_t* ir = TRACE(two_level, NULL, "[\"q\",\"s\",\"f\"]", NULL);
  af_program_t* p = compile_ir(ir);
  af_run_options_t o;
  af_value_t* out = NULL;
  double t0;
  if (!p) return;
  route("slow", slow);
  t0 = now_ms();
  CHECK_ERR(call_program(p, "[\"q\",\"slow\",\"missing\"]", NULL, &out), AF_ERR_NOT_FOUND, "missing");
  CHECK(now_ms() - t0 < 2500); /* the 5 s call was cancelled, not awaited */
  CHECK_INT_EQ(stat_field(slow, "in_flight"), 0);
  CHECK_OK(af_provider_set_max_in_flight(slow, 0));
  af_program_free(p);
  af_provider_free(slow);
  slow = echo_with("{\"latency_ms\":10}");
  route("slow", slow);
  p = compile_ir(ir);
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.flags = AF_RUN_KEEP_GOING;
  out = NULL;
  if (CHECK_OK(call_program(p, "[\"q\",\"slow\",\"missing\"]", &o, &out))) {
    af_value_t *ok = NULL, *bad = NULL, *err = NULL, *code = NULL;
    int64_t c = 0;
    CHECK_OK(af_value_index(out, 0, &ok));
    CHECK_JSON(ok, "\"slow|q\"");
    CHECK_OK(af_value_index(out, 1, &bad));
    CHECK_OK(af_value_key(bad, "error", 5, &err));
    CHECK_OK(af_value_key(err, "code", 4, &code));
    CHECK_OK(af_value_get_int(code, &c));
    CHECK_INT_EQ(c, AF_ERR_NOT_FOUND);
    {
      char* s = json_of(err);
      CHECK_CONTAINS(s, "NOT_FOUND");
      CHECK_CONTAINS(s, "missing");
      free(s);
    }
    af_value_free(ok);
    af_value_free(bad);
    af_value_free(err);
    af_value_free(code);
  }
  af_value_free(out);
  af_program_free(p);
  af_ir_free(ir);
  af_provider_free(slow);
}

/* ask_model(q) = lm(model, q), the model named by ud (a C string). */
static af_error_t* ask_model(void* ud, af_context_t* c, const af_value_t* const* in, size_t n, af_value_t** out) {
  af_value_t* m = cstr(c, (const char*)ud);
  af_error_t* e = ask(c, in[0], m, out);
  (void)n;
  af_value_free(m);
  return e;
}

/* routed(key, q) = switch key { a: lm("ma", q), b: lm("mb", q) } */
static af_error_t* routed(void* ud, af_context_t* c, const af_value_t* const* in, size_t n, af_value_t** out) {
  af_ir_t* br[2] = {TRACE(ask_model, (void*)"ma", "[\"q\"]", NULL), TRACE(ask_model, (void*)"mb", "[\"q\"]", NULL)};
  const char* names[2] = {"a", "b"};
  size_t lens[2] = {1, 1};
  af_error_t* e;
  (void)ud;
  (void)n;
  e = af_switch(c, in[0], names, lens, (const af_ir_t* const*)br, 2, &in[1], 1, out);
  af_ir_free(br[0]);
  af_ir_free(br[1]);
  return e;
}

/* Host provider failing every third item: the request whose content is
 * "q<i>" with i % 3 == 0 fails at once with PROVIDER; the others are
 * answered "ok q<i>" 30 ms later from a thread of their own, which records
 * whether the run had cancelled them meanwhile. */
static int every_third_cancelled = 0;
static void* answer_later(void* arg) {
  af_lm_request_t* req = (af_lm_request_t*)arg;
  af_bytes_t b = {NULL, 0};
  char reply[64] = "ok ";
  const char* at;
  sleep_ms(30);
  if (af_lm_request_cancelled(req)) __atomic_add_fetch(&every_third_cancelled, 1, __ATOMIC_SEQ_CST);
  af_lm_request_json(req, &b);
  at = b.data ? strstr((const char*)b.data, "\"content\":\"") : NULL;
  if (at) sscanf(at + 11, "%50[^\"]", reply + 3);
  af_bytes_free(&b);
  af_lm_request_complete(req, reply, strlen(reply));
  return NULL;
}
static void fail_every_third(void* ud, af_lm_request_t* req) {
  af_bytes_t b = {NULL, 0};
  const char* at;
  int item = -1;
  pthread_t t;
  (void)ud;
  af_lm_request_json(req, &b);
  at = b.data ? strstr((const char*)b.data, "\"content\":\"q") : NULL;
  if (at) item = atoi(at + 12);
  af_bytes_free(&b);
  if (item % 3 == 0) {
    char msg[64];
    snprintf(msg, sizeof msg, "item %d refused", item);
    af_lm_request_fail(req, af_error_new(AF_ERR_PROVIDER, msg, strlen(msg)));
    return;
  }
  pthread_create(&t, NULL, answer_later, req);
  pthread_detach(t);
}

/* answer(q) = [lm("m", q), concat(lm("m", q), "!")]: two steps per item. */
static af_error_t* answer_and_mark(void* ud, af_context_t* c, const af_value_t* const* in, size_t n, af_value_t** out) {
  af_value_t *m = cstr(c, "m"), *a = NULL, *bang = cstr(c, "!"), *marked = NULL;
  const af_value_t* parts[2];
  af_error_t* e = ask(c, in[0], m, &a);
  (void)ud;
  (void)n;
  if (!e) {
    parts[0] = a;
    parts[1] = bang;
    e = af_concat(c, parts, 2, &marked);
  }
  if (!e) {
    parts[0] = a;
    parts[1] = marked;
    e = af_value_list(c, parts, 2, out);
  }
  af_value_free(m);
  af_value_free(a);
  af_value_free(bang);
  af_value_free(marked);
  return e;
}

/* AF_RUN_ITEM_ERRORS: each failing item becomes its error value in every
 * output list (its later step is skipped), the others complete uncancelled;
 * without it the run fails, and keep-going alone fails the whole leaves. */
static void item_errors_isolate_batch_items(void) {
  af_provider_t* host = NULL;
  af_ir_t* one = TRACE(answer_and_mark, NULL, "[\"q\"]", NULL);
  af_ir_t* batched = NULL;
  af_program_t* p = NULL;
  af_value_t* out = NULL;
  af_run_options_t o;
  char inputs[256] = "[[", want[2048] = "[[", marks[512] = "[";
  int i;
  if (!one || !CHECK_OK(af_batch(ctx, one, NULL, &batched))) return;
  p = compile_ir(batched);
  if (!p) return;
  CHECK_OK(af_provider_host_new(fail_every_third, NULL, NULL, &host));
  route("m", host);
  for (i = 0; i < 9; i++) {
    char err[160];
    snprintf(inputs + strlen(inputs), sizeof inputs - strlen(inputs), "%s\"q%d\"", i ? "," : "", i);
    snprintf(err, sizeof err,
             "{\"error\":{\"code\":6,\"name\":\"PROVIDER\",\"message\":"
             "\"lm_call to model \\\"m\\\" (batch item %d): host provider: item %d refused\"}}",
             i, i);
    if (i % 3 == 0) {
      snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s", i ? "," : "", err);
      snprintf(marks + strlen(marks), sizeof marks - strlen(marks), "%s%s", i ? "," : "", err);
    } else {
      snprintf(want + strlen(want), sizeof want - strlen(want), ",\"ok q%d\"", i);
      snprintf(marks + strlen(marks), sizeof marks - strlen(marks), ",\"ok q%d!\"", i);
    }
  }
  strcat(inputs, "]]");
  snprintf(want + strlen(want), sizeof want - strlen(want), "],%s]]", marks);
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.flags = AF_RUN_ITEM_ERRORS;
  if (CHECK_OK(call_program(p, inputs, &o, &out))) {
    CHECK_JSON(out, want); /* the later step passed each error on unchanged */
    {
      af_value_t *answers = NULL, *item = NULL, *err = NULL, *code = NULL;
      int64_t c = 0;
      size_t n = 0;
      CHECK_OK(af_value_index(out, 0, &answers));
      CHECK_OK(af_value_len(answers, &n));
      CHECK_INT_EQ((long)n, 9);
      for (i = 0; i < 9; i++) {
        CHECK_OK(af_value_index(answers, (size_t)i, &item));
        if (i % 3 == 0) {
          CHECK_OK(af_value_key(item, "error", 5, &err));
          CHECK_OK(af_value_key(err, "code", 4, &code));
          CHECK_OK(af_value_get_int(code, &c));
          CHECK_INT_EQ(c, AF_ERR_PROVIDER);
          af_value_free(err);
          af_value_free(code);
          err = code = NULL;
        } else {
          char w[32];
          snprintf(w, sizeof w, "\"ok q%d\"", i);
          CHECK_JSON(item, w);
        }
        af_value_free(item);
        item = NULL;
      }
      af_value_free(answers);
    }
  }
  CHECK_INT_EQ(every_third_cancelled, 0);
  /* A second stage takes the first's answers, error values included: those
   * items pass on unrun, unchanged (af.h), and the others run; without the
   * flag such an input is refused as before. */
  {
    af_value_t *answers = NULL, *out2 = NULL;
    af_bytes_t json = {NULL, 0};
    char in2[2048] = "[", want2[4096] = "[[", marks2[2048] = "[";
    CHECK_OK(af_value_index(out, 0, &answers));
    CHECK_OK(af_value_to_json(answers, &json));
    if (json.data) snprintf(in2 + 1, sizeof in2 - 1, "%s]", (const char*)json.data);
    for (i = 0; i < 9; i++) {
      af_value_t* item = NULL;
      af_bytes_t ij = {NULL, 0};
      CHECK_OK(af_value_index(answers, (size_t)i, &item));
      CHECK_OK(af_value_to_json(item, &ij));
      if (i % 3 == 0 && ij.data) {
        snprintf(want2 + strlen(want2), sizeof want2 - strlen(want2), "%s%s", i ? "," : "", (const char*)ij.data);
        snprintf(marks2 + strlen(marks2), sizeof marks2 - strlen(marks2), "%s%s", i ? "," : "", (const char*)ij.data);
      } else {
        snprintf(want2 + strlen(want2), sizeof want2 - strlen(want2), ",\"ok ok q%d\"", i);
        snprintf(marks2 + strlen(marks2), sizeof marks2 - strlen(marks2), ",\"ok ok q%d!\"", i);
      }
      af_bytes_free(&ij);
      af_value_free(item);
    }
    snprintf(want2 + strlen(want2), sizeof want2 - strlen(want2), "],%s]]", marks2);
    if (CHECK_OK(call_program(p, in2, &o, &out2))) CHECK_JSON(out2, want2);
    af_value_free(out2);
    out2 = NULL;
    CHECK_ERR(call_program(p, in2, NULL, &out2), AF_ERR_INVALID_ARGUMENT, "input[0][0]: expected str, found a dict");
    af_bytes_free(&json);
    af_value_free(answers);
  }
  af_value_free(out);
  out = (af_value_t*)&out;
  /* Without the flag: the first failure fails the run. */
  CHECK_ERR(call_program(p, inputs, NULL, &out), AF_ERR_PROVIDER, "refused");
  CHECK_NULLED(out, af_value_free);
  /* An unknown flag bit is refused, naming the field. */
  o.flags = 64u;
  out = (af_value_t*)&out;
  CHECK_ERR(call_program(p, inputs, &o, &out), AF_ERR_INVALID_ARGUMENT, "options.flags");
  CHECK_NULLED(out, af_value_free);
  sleep_ms(60); /* let the answers of the cancelled run's items finish */
  af_program_free(p);
  af_ir_free(batched);
  af_ir_free(one);
  af_provider_free(host);
}

/* A batched switch around LM calls: each item takes its own branch, and
 * every item's call is in flight at once (no item waits for another). */
static void batched_switch_calls_are_all_in_flight_at_once(void) {
  af_provider_t* echo = echo_with("{\"latency_ms\":50}");
  af_ir_t* one = TRACE(routed, NULL, "[\"a\",\"q\"]", NULL);
  af_ir_t* batched = NULL;
  af_program_t* p = NULL;
  af_value_t* out = NULL;
  char keys[256] = "[", qs[256] = "[";
  char inputs[600], want[600] = "[";
  int i;
  if (!one || !CHECK_OK(af_batch(ctx, one, NULL, &batched))) return;
  p = compile_ir(batched);
  if (!p) return;
  route("*", echo);
  for (i = 0; i < 16; i++) {
    const char* k = i % 3 == 0 ? "b" : "a";
    snprintf(keys + strlen(keys), sizeof keys - strlen(keys), "%s\"%s\"", i ? "," : "", k);
    snprintf(qs + strlen(qs), sizeof qs - strlen(qs), "%s\"q%d\"", i ? "," : "", i);
    snprintf(want + strlen(want), sizeof want - strlen(want), "%s\"m%s|q%d\"", i ? "," : "", k, i);
  }
  strcat(keys, "]");
  strcat(qs, "]");
  strcat(want, "]");
  snprintf(inputs, sizeof inputs, "[%s,%s]", keys, qs);
  if (CHECK_OK(call_program(p, inputs, NULL, &out))) CHECK_JSON(out, want);
  CHECK_INT_EQ(stat_field(echo, "peak_in_flight"), 16);
  af_value_free(out);
  /* Profiled: every item's call is on the provider's tracks, under the map. */
  {
    af_future_t* f = NULL;
    af_bytes_t b = {NULL, 0};
    af_run_options_t o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.flags = AF_RUN_PROFILE;
    if (CHECK_OK(start_program(p, inputs, &o, &f))) {
      out = NULL;
      CHECK_OK(af_future_wait(f, &out));
      af_value_free(out);
      if (CHECK_OK(af_future_profile(f, &b))) {
        const char* at = (const char*)b.data;
        int calls = 0;
        while ((at = strstr(at, "\"cat\":\"lm\"")) != NULL) {
          calls++;
          at++;
        }
        CHECK_INT_EQ(calls, 16);
        CHECK_CONTAINS((const char*)b.data, "\"model\":\"ma\"");
        CHECK_CONTAINS((const char*)b.data, "\"model\":\"mb\"");
        CHECK_CONTAINS((const char*)b.data, "\"slot 15\"");
      }
      af_bytes_free(&b);
      af_future_free(f);
    }
  }
  /* A key no branch has fails the run with NOT_FOUND naming it. */
  out = (af_value_t*)&out;
  CHECK_ERR(call_program(p, "[[\"a\",\"zzz\"],[\"x\",\"y\"]]", NULL, &out), AF_ERR_NOT_FOUND, "\"zzz\"");
  CHECK_NULLED(out, af_value_free);
  af_program_free(p);
  af_ir_free(batched);
  af_ir_free(one);
  af_provider_free(echo);
}

/* Cancelling a run cancels the LM calls its batched switch has in flight;
 * one item's failure cancels the other items' calls. */
static void batched_switch_cancels_its_items(void) {
  struct parked parked;
  af_provider_t* host = NULL;
  af_ir_t* one = TRACE(routed, NULL, "[\"a\",\"q\"]", NULL);
  af_ir_t* batched = NULL;
  af_program_t* p = NULL;
  af_future_t* f = NULL;
  af_value_t* out = (af_value_t*)&out;
  int i;
  if (!one || !CHECK_OK(af_batch(ctx, one, NULL, &batched))) return;
  p = compile_ir(batched);
  if (!p) return;
  memset(&parked, 0, sizeof parked);
  pthread_mutex_init(&parked.mu, NULL);
  CHECK_OK(af_provider_host_new(park, &parked, NULL, &host));
  route("*", host);
  if (!CHECK_OK(start_program(p, "[[\"a\",\"b\",\"a\"],[\"x\",\"y\",\"z\"]]", NULL, &f))) return;
  CHECK_INT_EQ(parked_wait(&parked, 3), 3);
  CHECK_INT_EQ(stat_field(host, "in_flight"), 3);
  af_future_cancel(f);
  CHECK_ERR(af_future_wait(f, &out), AF_ERR_CANCELLED, "cancelled");
  CHECK_NULLED(out, af_value_free);
  {
    double t0 = now_ms();
    while (stat_field(host, "in_flight") > 0 && now_ms() - t0 < 5000) sleep_ms(1);
  }
  CHECK_INT_EQ(stat_field(host, "in_flight"), 0);
  for (i = 0; i < parked.n; i++) {
    CHECK_INT_EQ(af_lm_request_cancelled(parked.reqs[i]), 1);
    CHECK_OK(af_lm_request_complete(parked.reqs[i], "late", 4));
  }
  af_future_free(f);
  /* One item fails: the others' calls are cancelled, the run fails. */
  pthread_mutex_lock(&parked.mu);
  parked.n = 0;
  pthread_mutex_unlock(&parked.mu);
  f = NULL;
  if (CHECK_OK(start_program(p, "[[\"a\",\"b\",\"a\"],[\"x\",\"y\",\"z\"]]", NULL, &f))) {
    double t0;
    int got = parked_wait(&parked, 3);
    CHECK_INT_EQ(got, 3);
    if (got == 3) CHECK_OK(af_lm_request_fail(parked.reqs[1], af_error_new(AF_ERR_PROVIDER, "overloaded", 10)));
    out = (af_value_t*)&out;
    CHECK_ERR(af_future_wait(f, &out), AF_ERR_PROVIDER, "");
    CHECK_NULLED(out, af_value_free);
    t0 = now_ms();
    while (stat_field(host, "in_flight") > 0 && now_ms() - t0 < 5000) sleep_ms(1);
    CHECK_INT_EQ(stat_field(host, "in_flight"), 0);
    for (i = 0; i < parked.n; i++)
      if (i != 1) {
        CHECK_INT_EQ(af_lm_request_cancelled(parked.reqs[i]), 1);
        CHECK_OK(af_lm_request_complete(parked.reqs[i], "late", 4));
      }
    af_future_free(f);
  }
  pthread_mutex_destroy(&parked.mu);
  af_program_free(p);
  af_ir_free(batched);
  af_ir_free(one);
  af_provider_free(host);
}

/* looped(q) = while (true, at most *ud (default 3) times) q = lm("m", q) */
static af_error_t* always(void* ud, af_context_t* c, const af_value_t* const* in, size_t n, af_value_t** out) {
  (void)ud;
  (void)in;
  (void)n;
  return af_value_bool(c, 1, out);
}
static af_error_t* looped(void* ud, af_context_t* c, const af_value_t* const* in, size_t n, af_value_t** out) {
  af_ir_t* cond = TRACE(always, NULL, "[\"q\"]", NULL);
  af_ir_t* body = TRACE(ask_model, (void*)"m", "[\"q\"]", NULL);
  af_error_t* e;
  (void)n;
  e = af_while_loop(c, cond, body, in[0], ud ? (uint64_t)*(int*)ud : 3, out);
  af_ir_free(cond);
  af_ir_free(body);
  return e;
}

/* A batched loop around LM calls: every item's iteration is in flight at
 * once, each item's three calls in order. */
static void batched_loop_calls_are_all_in_flight_at_once(void) {
  af_provider_t* echo = echo_with("{\"latency_ms\":30}");
  af_ir_t* one = TRACE(looped, NULL, "[\"q\"]", NULL);
  af_ir_t* batched = NULL;
  af_program_t* p = NULL;
  af_value_t* out = NULL;
  if (!one || !CHECK_OK(af_batch(ctx, one, NULL, &batched))) return;
  p = compile_ir(batched);
  if (!p) return;
  route("*", echo);
  if (CHECK_OK(call_program(p, "[[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\"]]", NULL, &out)))
    CHECK_JSON(out, "[\"m|m|m|a\",\"m|m|m|b\",\"m|m|m|c\",\"m|m|m|d\",\"m|m|m|e\",\"m|m|m|f\",\"m|m|m|g\",\"m|m|m|h\"]");
  CHECK_INT_EQ(stat_field(echo, "peak_in_flight"), 8);
  CHECK_INT_EQ(stat_field(echo, "finished"), 24);
  af_value_free(out);
  /* Unbatched, through the executor too: the same answer as af_ir_call's. */
  out = NULL;
  af_program_free(p);
  p = compile_ir(one);
  if (p && CHECK_OK(call_program(p, "[\"z\"]", NULL, &out))) CHECK_JSON(out, "\"m|m|m|z\"");
  af_value_free(out);
  af_program_free(p);
  af_ir_free(batched);
  af_ir_free(one);
  af_provider_free(echo);
}

/* Many iterations of an async loop whose calls finish at once (echo without
 * latency): every pass runs, in order, and the loop finishes. */
static void long_async_loops_run_every_iteration(void) {
  int iters = 5000;
  af_provider_t* echo = echo_with(NULL);
  af_ir_t* one = TRACE(looped, &iters, "[\"q\"]", NULL);
  af_program_t* p = compile_ir(one);
  af_value_t* out = NULL;
  if (!p) return;
  route("*", echo);
  if (CHECK_OK(call_program(p, "[\"\"]", NULL, &out))) {
    const char* s = NULL;
    size_t len = 0;
    CHECK_OK(af_value_get_str(out, &s, &len));
    CHECK_INT_EQ(len, 2 * 5000);  /* "m|" per iteration */
  }
  CHECK_INT_EQ(stat_field(echo, "finished"), 5000);
  af_value_free(out);
  af_program_free(p);
  af_ir_free(one);
  af_provider_free(echo);
}

/* gather_body([acc, x]) = [acc + lm("m", x), x]: one call per pass, fed by
 * x alone. */
static af_error_t* gather_body(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                               af_value_t** out) {
  af_value_t *acc = NULL, *x = NULL, *m = cstr(c, "m"), *y = NULL, *joined = NULL;
  af_error_t* e = af_value_index(in[0], 0, &acc);
  (void)ud;
  (void)n;
  if (!e) e = af_value_index(in[0], 1, &x);
  if (!e) e = ask(c, x, m, &y);
  if (!e) {
    const af_value_t* parts[2];
    parts[0] = acc;
    parts[1] = y;
    e = af_concat(c, parts, 2, &joined);
  }
  if (!e) {
    const af_value_t* items[2];
    items[0] = joined;
    items[1] = x;
    e = af_value_list(c, items, 2, out);
  }
  af_value_free(acc);
  af_value_free(x);
  af_value_free(m);
  af_value_free(y);
  af_value_free(joined);
  return e;
}
static af_error_t* always_state(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                                af_value_t** out) {
  (void)ud;
  (void)in;
  (void)n;
  return af_value_bool(c, 1, out);
}
/* gather(acc, x) = 5 passes of gather_body, then the accumulated text. */
static af_error_t* gather(void* ud, af_context_t* c, const af_value_t* const* in, size_t n, af_value_t** out) {
  af_ir_t* cond = TRACE(always_state, NULL, "[[\"a\",\"x\"]]", NULL);
  af_ir_t* body = TRACE(gather_body, NULL, "[[\"a\",\"x\"]]", NULL);
  af_value_t* state = NULL;
  af_value_t* last = NULL;
  af_error_t* e;
  (void)ud;
  (void)n;
  e = af_value_list(c, in, 2, &state);
  if (!e) e = af_while_loop(c, cond, body, state, 5, &last);
  if (!e) e = af_value_index(last, 0, out);
  af_value_free(state);
  af_value_free(last);
  af_ir_free(cond);
  af_ir_free(body);
  return e;
}

/* The pullback of a loop around LM calls: the forward passes run one after
 * another (each waits for the state), but the backward pass's feedback
 * calls depend only on the output's feedback, so they are in flight
 * together: 5 forward calls + 1 round of feedback calls, not 5 + 5. */
static void loop_pullback_feedback_calls_run_together(void) {
  af_provider_t* echo = echo_with("{\"latency_ms\":100}");
  af_ir_t* fwd = TRACE(gather, NULL, "[\"a\",\"x\"]", NULL);
  af_ir_t* pb = NULL;
  af_program_t* p = NULL;
  af_value_t* out = NULL;
  double t0, elapsed;
  if (!fwd || !CHECK_OK(af_pullback(ctx, fwd, &pb))) return;
  p = compile_ir(pb);
  if (!p) return;
  route("*", echo);
  t0 = now_ms();
  if (CHECK_OK(call_program(p, "[[\"\",\"q\"],\"shorter\"]", NULL, &out))) {
    af_value_t* grads = NULL;
    af_value_t* gx = NULL;
    const char* s = NULL;
    size_t len = 0;
    CHECK_OK(af_value_index(out, 1, &grads));
    CHECK_OK(af_value_index(grads, 1, &gx));
    /* Five feedback calls reached x: their answers are accumulated. */
    if (CHECK_OK(af_value_get_str(gx, &s, &len))) CHECK(len > 0);
    af_value_free(gx);
    af_value_free(grads);
  }
  elapsed = now_ms() - t0;
  CHECK_INT_EQ(stat_field(echo, "finished"), 10);
  /* 6 rounds of 100 ms; one after another it would be 10 (>= 1 000 ms). */
  CHECK(elapsed < 900);
  CHECK(stat_field(echo, "peak_in_flight") >= 5);
  af_value_free(out);
  af_program_free(p);
  af_ir_free(pb);
  af_ir_free(fwd);
  af_provider_free(echo);
}

static void freeing_the_context_cancels_runs(void) {
  int n = 2;
  af_provider_t* echo = echo_with("{\"latency_ms\":10000}");
  af_ir_t* ir = TRACE(fan_out, &n, "[\"q\",\"m\"]", NULL);
  af_program_t* p = compile_ir(ir);
  af_future_t* f = NULL;
  af_value_t* out = NULL;
  if (!p) return;
  route("*", echo);
  if (!CHECK_OK(start_program(p, "[\"a\",\"m\"]", NULL, &f))) return;
  af_context_free(ctx);
  ctx = NULL;
  CHECK_ERR(af_future_wait(f, &out), AF_ERR_CANCELLED, "context");
  af_future_free(f);
  af_program_free(p);
  af_ir_free(ir);
  CHECK_INT_EQ(stat_field(echo, "in_flight"), 0);
  af_provider_free(echo);
  af_context_new(&ctx);
}

static void many_async_runs_share_one_scheduler(void) {
  int n = 4, i;
  af_provider_t* echo = echo_with("{\"latency_ms\":400}"); /* long: overlap even when sanitized */
  af_ir_t* ir = TRACE(fan_out, &n, "[\"q\",\"m\"]", NULL);
  af_program_t* p = compile_ir(ir);
  af_future_t* fs[50];
  if (!p) return;
  route("*", echo);
  for (i = 0; i < 50; i++) {
    fs[i] = NULL;
    CHECK_OK(start_program(p, "[\"a\",\"m\"]", NULL, &fs[i]));
  }
  for (i = 0; i < 50; i++) {
    af_value_t* out = NULL;
    if (fs[i] && CHECK_OK(af_future_wait(fs[i], &out))) CHECK_JSON(out, "[\"m|a0\",\"m|a1\",\"m|a2\",\"m|a3\"]");
    af_value_free(out);
    af_future_free(fs[i]);
  }
  CHECK_INT_EQ(stat_field(echo, "peak_in_flight"), 200);
  af_program_free(p);
  af_ir_free(ir);
  af_provider_free(echo);
}

int main(int argc, char** argv) {
  static const struct test_case cases[] = {
      CASE(compiled_program_matches_ir_call),
      CASE(dataflow_starts_work_across_levels),
      CASE(independent_calls_are_all_in_flight_at_once),
      CASE(futures_wait_poll_and_call_back),
      CASE(cancel_stops_in_flight_requests),
      CASE(timeout_fails_the_run_quickly),
      CASE(cancel_token_stops_a_blocking_call),
      CASE(progress_reports_every_equation),
      CASE(callbacks_are_released_before_the_run_reports_done),
      CASE(profile_is_chrome_trace_json),
      CASE(errors_cancel_the_rest_or_keep_going),
      CASE(item_errors_isolate_batch_items),
      CASE(batched_switch_calls_are_all_in_flight_at_once),
      CASE(batched_switch_cancels_its_items),
      CASE(batched_loop_calls_are_all_in_flight_at_once),
      CASE(long_async_loops_run_every_iteration),
      CASE(loop_pullback_feedback_calls_run_together),
      CASE(freeing_the_context_cancels_runs),
      CASE(many_async_runs_share_one_scheduler),
  };
  return run_cases(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
