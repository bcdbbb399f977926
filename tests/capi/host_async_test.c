/* host_async_test.c — async and blocking host functions: concurrency
 * through af_program_call, cancellation reaching an async tool, finishing
 * a request twice / after cancel / with a wrong result, the host pool bound,
 * and eager calls outside a trace. */
#include "check.h"

#include <pthread.h>
#include <time.h>

#define N_TOOLS 8

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

/* ---- a tool's shared state ---------------------------------------------- */

struct tool {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  long sleep_ms;       /* how long one call works */
  int in_flight, peak; /* concurrent calls */
  int started, finished;
  int saw_cancelled;   /* an async call observed af_host_request_cancelled */
  int wait_for_cancel; /* async calls poll until cancelled (or 5 s) */
  int wrong_result;    /* complete with an int instead of a str */
  int second_finish_code, late_complete_code; /* codes the tool got back */
  pthread_t threads[16];
  int n_threads;
};

static void tool_init(struct tool* t, long ms) {
  memset(t, 0, sizeof *t);
  pthread_mutex_init(&t->mu, NULL);
  pthread_cond_init(&t->cv, NULL);
  t->sleep_ms = ms;
  t->second_finish_code = -1;
  t->late_complete_code = -1;
}

/* Joins the tool's threads, then frees its locks. */
static void tool_done(struct tool* t) {
  int i;
  for (i = 0; i < t->n_threads; i++) pthread_join(t->threads[i], NULL);
  pthread_mutex_destroy(&t->mu);
  pthread_cond_destroy(&t->cv);
}

static void tool_enter(struct tool* t) {
  pthread_mutex_lock(&t->mu);
  t->started++;
  if (++t->in_flight > t->peak) t->peak = t->in_flight;
  pthread_cond_broadcast(&t->cv);
  pthread_mutex_unlock(&t->mu);
}

static void tool_leave(struct tool* t) {
  pthread_mutex_lock(&t->mu);
  t->in_flight--;
  t->finished++;
  pthread_cond_broadcast(&t->cv);
  pthread_mutex_unlock(&t->mu);
}

static int32_t code_of(af_error_t* e) {
  int32_t c = e ? af_error_code(e) : 0;
  af_error_free(e);
  return c;
}

/* ---- a blocking (sync) tool: sleeps, then answers "done:<arg>" ---------- */

static af_error_t* slow_sync(void* ud, const af_value_t* const* args, size_t n, af_value_t** out) {
  struct tool* t = (struct tool*)ud;
  char buf[64];
  int64_t i = 0;
  af_error_t* e;
  if (n != 1) return af_error_new(AF_ERR_INVALID_ARGUMENT, "one argument", 12);
  e = af_value_get_int(args[0], &i);
  if (e) {
    af_error_free(e);
    return af_error_new(AF_ERR_INVALID_ARGUMENT, "wants an int", 12);
  }
  tool_enter(t);
  sleep_ms(t->sleep_ms);
  tool_leave(t);
  snprintf(buf, sizeof buf, "done:%lld", (long long)i);
  return af_value_str(NULL, buf, strlen(buf), out);
}

/* ---- an async tool: a thread of its own per call ------------------------ */

struct job {
  struct tool* t;
  af_host_request_t* req;
  int64_t arg;
};

static void* async_work(void* p) {
  struct job* j = (struct job*)p;
  struct tool* t = j->t;
  af_value_t* v = NULL;
  char buf[64];
  tool_enter(t);
  if (t->wait_for_cancel) {
    int waited = 0;
    while (!af_host_request_cancelled(j->req) && waited < 5000) {
      sleep_ms(5);
      waited += 5;
    }
    pthread_mutex_lock(&t->mu);
    t->saw_cancelled = af_host_request_cancelled(j->req);
    pthread_mutex_unlock(&t->mu);
  } else {
    sleep_ms(t->sleep_ms);
  }
  if (t->wrong_result) {
    af_value_int(NULL, 42, &v);
  } else {
    snprintf(buf, sizeof buf, "done:%lld", (long long)j->arg);
    af_value_str(NULL, buf, strlen(buf), &v);
  }
  {
    int32_t first = code_of(af_host_request_complete(j->req, v));
    int32_t second = code_of(af_host_request_complete(j->req, v));
    pthread_mutex_lock(&t->mu);
    if (t->wait_for_cancel) t->late_complete_code = first;
    t->second_finish_code = second;
    pthread_mutex_unlock(&t->mu);
  }
  af_value_free(v);
  af_host_request_free(j->req);
  tool_leave(t);
  free(j);
  return NULL;
}

static void slow_async(void* ud, const af_value_t* const* args, size_t n, af_host_request_t* req) {
  struct tool* t = (struct tool*)ud;
  struct job* j = (struct job*)calloc(1, sizeof *j);
  j->t = t;
  j->req = req;
  if (n == 1) af_error_free(af_value_get_int(args[0], &j->arg));
  pthread_mutex_lock(&t->mu);
  pthread_create(&t->threads[t->n_threads++], NULL, async_work, j);
  pthread_mutex_unlock(&t->mu);
}

/* Async tools that finish inside fn, on the calling thread. */
static void answers_at_once(void* ud, const af_value_t* const* args, size_t n, af_host_request_t* req) {
  af_value_t* v = NULL;
  (void)ud;
  af_value_list(NULL, args, n, &v);
  af_error_free(af_host_request_complete(req, v));
  af_value_free(v);
  af_host_request_free(req);
}

static void fails_at_once(void* ud, const af_value_t* const* args, size_t n, af_host_request_t* req) {
  (void)ud;
  (void)args;
  (void)n;
  af_error_free(af_host_request_fail(req, af_error_new(AF_ERR_PROVIDER, "search backend down", 19)));
  /* a second finish is refused, not fatal */
  *(int32_t*)ud = code_of(af_host_request_fail(req, af_error_new(AF_ERR_PROVIDER, "again", 5)));
  af_host_request_free(req);
}

static void forgets_the_request(void* ud, const af_value_t* const* args, size_t n, af_host_request_t* req) {
  (void)ud;
  (void)args;
  (void)n;
  af_host_request_free(req);
}

/* ---- programs ---------------------------------------------------------- */

/* [tool(0), tool(1), ... tool(N_TOOLS-1)]: independent calls. */
static af_error_t* fan_out(void* ud, af_context_t* c, const af_value_t* const* in, size_t n, af_value_t** out) {
  af_value_t* results[N_TOOLS];
  const char* name = (const char*)ud;
  af_error_t* e = NULL;
  int i, made = 0;
  (void)in;
  (void)n;
  for (i = 0; i < N_TOOLS && !e; i++) {
    af_value_t* arg = NULL;
    e = af_value_int(c, i, &arg);
    if (!e) e = af_host_call(c, name, strlen(name), (const af_value_t* const*)&arg, 1, &results[made]);
    if (!e) made++;
    af_value_free(arg);
  }
  if (!e) e = af_value_list(c, (const af_value_t* const*)results, (size_t)made, out);
  for (i = 0; i < made; i++) af_value_free(results[i]);
  return e;
}

static af_program_t* compile_fan_out(const char* name) {
  af_ir_t* ir = TRACE(fan_out, (void*)name, "[\"x\"]", NULL);
  af_program_t* p = NULL;
  if (ir) CHECK_OK(af_compile(ctx, ir, &p));
  af_ir_free(ir);
  return p;
}

static const char* kExpected =
    "[\"done:0\",\"done:1\",\"done:2\",\"done:3\",\"done:4\",\"done:5\",\"done:6\",\"done:7\"]";

/* Runs the fan-out program through af_program_call; returns the time. */
static double run_fan_out(af_program_t* p, const char* expected) {
  af_value_t* x = mk_str("x");
  af_value_t* out = NULL;
  double t0 = now_ms(), ms;
  if (CHECK_OK(af_program_call(ctx, p, (const af_value_t* const*)&x, 1, &out)) && expected)
    CHECK_JSON(out, expected);
  ms = now_ms() - t0;
  af_value_free(out);
  af_value_free(x);
  return ms;
}

static void register_kinds(const char* name, int async, struct tool* t) {
  af_value_t* kinds = mk_str("str");
  if (async)
    CHECK_OK(af_register_function_async(ctx, name, strlen(name), slow_async, t, NULL, kinds));
  else
    CHECK_OK(af_register_function_blocking(ctx, name, strlen(name), slow_sync, t, NULL, kinds));
  af_value_free(kinds);
}

/* ---- cases ------------------------------------------------------------- */

static void async_tools_run_concurrently(void) {
  struct tool t;
  af_program_t* p;
  double ms;
  tool_init(&t, 200);
  register_kinds("tool", 1, &t);
  p = compile_fan_out("tool");
  ms = run_fan_out(p, kExpected);
  printf("    %d async 200 ms tools via af_program_call: %.0f ms (peak %d in flight)\n", N_TOOLS, ms, t.peak);
  CHECK(ms < 800);
  af_program_free(p);
  tool_done(&t);
  CHECK_INT_EQ(t.second_finish_code, AF_ERR_INVALID_ARGUMENT); /* completing twice: refused, harmless */
}

static void blocking_tools_run_on_the_host_pool(void) {
  struct tool t;
  af_program_t* p;
  double ms;
  tool_init(&t, 200);
  register_kinds("tool", 0, &t);
  p = compile_fan_out("tool");
  ms = run_fan_out(p, kExpected);
  printf("    %d blocking 200 ms tools, pool of 8: %.0f ms (peak %d)\n", N_TOOLS, ms, t.peak);
  CHECK(ms < 800);
  af_program_free(p);
  tool_done(&t);
}

static void host_threads_bounds_the_pool(void) {
  struct tool t;
  af_program_t* p;
  double ms;
  af_context_free(ctx);
  ctx = NULL;
  CHECK_ERR(af_context_new_with("{\"host_threads\": 0}", 19, &ctx), AF_ERR_INVALID_ARGUMENT, "host_threads");
  if (!CHECK_OK(af_context_new_with("{\"host_threads\": 2}", 19, &ctx))) return;
  tool_init(&t, 100);
  register_kinds("tool", 0, &t);
  p = compile_fan_out("tool");
  ms = run_fan_out(p, kExpected);
  printf("    %d blocking 100 ms tools, pool of 2: %.0f ms (peak %d)\n", N_TOOLS, ms, t.peak);
  CHECK(t.peak <= 2); /* the bound holds */
  CHECK(ms >= 390);   /* four waves of two */
  af_program_free(p);
  tool_done(&t);
}

/* A blocking tool that calls another blocking tool through libaf. */
static af_error_t* calls_inner(void* ud, const af_value_t* const* args, size_t n, af_value_t** out) {
  (void)ud;
  return af_host_call(ctx, "inner", 5, args, n, out);
}

static void a_blocking_tool_may_call_another_with_a_pool_of_one(void) {
  struct tool t;
  af_value_t* kinds = mk_str("str");
  af_value_t* arg = NULL;
  af_value_t* out = NULL;
  af_context_free(ctx);
  ctx = NULL;
  if (!CHECK_OK(af_context_new_with("{\"host_threads\": 1}", 19, &ctx))) return;
  tool_init(&t, 1);
  CHECK_OK(af_register_function_blocking(ctx, "inner", 5, slow_sync, &t, NULL, kinds));
  CHECK_OK(af_register_function_blocking(ctx, "outer", 5, calls_inner, NULL, NULL, kinds));
  CHECK_OK(af_value_int(ctx, 4, &arg));
  /* would never finish if the inner call waited for the pool's one thread */
  if (CHECK_OK(af_host_call(ctx, "outer", 5, (const af_value_t* const*)&arg, 1, &out))) CHECK_JSON(out, "\"done:4\"");
  af_value_free(out);
  af_value_free(arg);
  af_value_free(kinds);
  tool_done(&t);
}

static void cancellation_reaches_an_async_tool(void) {
  struct tool t;
  af_program_t* p;
  af_future_t* f = NULL;
  af_value_t* x = mk_str("x");
  af_value_t* out = NULL;
  double t0, ms;
  tool_init(&t, 0);
  t.wait_for_cancel = 1;
  register_kinds("waits", 1, &t);
  p = compile_fan_out("waits");
  if (!p || !CHECK_OK(af_program_call_async(ctx, p, (const af_value_t* const*)&x, 1, &f))) goto done;
  pthread_mutex_lock(&t.mu);
  while (t.started < N_TOOLS) pthread_cond_wait(&t.cv, &t.mu);
  pthread_mutex_unlock(&t.mu);
  t0 = now_ms();
  af_future_cancel(f);
  CHECK_ERR(af_future_wait(f, &out), AF_ERR_CANCELLED, "cancel");
  ms = now_ms() - t0;
  printf("    cancelled with %d async tools in flight: run ended after %.0f ms\n", N_TOOLS, ms);
  CHECK(ms < 1000); /* the tools would wait 5 s */
  af_future_free(f);
done:
  af_program_free(p);
  af_value_free(x);
  tool_done(&t);
  CHECK_INT_EQ(t.saw_cancelled, 1);
  CHECK_INT_EQ(t.late_complete_code, 0);                      /* completing after cancel: accepted, ignored */
  CHECK_INT_EQ(t.second_finish_code, AF_ERR_INVALID_ARGUMENT); /* and a second time: refused */
}

static void a_timeout_reaches_an_async_tool_in_program_call(void) {
  struct tool t;
  af_program_t* p;
  af_run_options_t o;
  af_value_t* x = mk_str("x");
  af_value_t* out = NULL;
  tool_init(&t, 0);
  t.wait_for_cancel = 1;
  register_kinds("waits", 1, &t);
  p = compile_fan_out("waits");
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.timeout_ms = 100;
  CHECK_ERR(af_program_call_with(ctx, p, (const af_value_t* const*)&x, 1, &o, &out), AF_ERR_TIMEOUT, "timeout");
  af_program_free(p);
  af_value_free(x);
  tool_done(&t);
  CHECK_INT_EQ(t.saw_cancelled, 1);
}

static void a_wrong_result_names_the_function(void) {
  struct tool t;
  af_program_t* p;
  af_value_t* x = mk_str("x");
  af_value_t* out = NULL;
  tool_init(&t, 1);
  t.wrong_result = 1;
  register_kinds("lookup", 1, &t);
  p = compile_fan_out("lookup");
  CHECK_ERR(af_program_call(ctx, p, (const af_value_t* const*)&x, 1, &out), AF_ERR_INVALID_ARGUMENT,
            "\"lookup\"", "declared result kinds", "expected str, found int");
  af_program_free(p);
  af_value_free(x);
  tool_done(&t);
}

static void eager_calls_wait_for_async_tools(void) {
  struct tool t;
  af_value_t* arg = NULL;
  af_value_t* out = NULL;
  af_value_t* kinds = mk_json("[\"int\"]");
  int32_t second = -1;
  tool_init(&t, 50);
  register_kinds("tool", 1, &t);
  CHECK_OK(af_value_int(ctx, 3, &arg));
  if (CHECK_OK(af_host_call(ctx, "tool", 4, (const af_value_t* const*)&arg, 1, &out))) CHECK_JSON(out, "\"done:3\"");
  af_value_free(out);
  out = NULL;
  /* finished inside fn, on the calling thread */
  CHECK_OK(af_register_function_async(ctx, "now", 3, answers_at_once, NULL, NULL, kinds));
  if (CHECK_OK(af_host_call(ctx, "now", 3, (const af_value_t* const*)&arg, 1, &out))) CHECK_JSON(out, "[3]");
  af_value_free(out);
  out = NULL;
  CHECK_OK(af_register_function_async(ctx, "down", 4, fails_at_once, &second, NULL, kinds));
  CHECK_ERR(af_host_call(ctx, "down", 4, (const af_value_t* const*)&arg, 1, &out), AF_ERR_CALLBACK, "\"down\"",
            "search backend down");
  CHECK_INT_EQ(second, AF_ERR_INVALID_ARGUMENT);
  CHECK_OK(af_register_function_async(ctx, "lost", 4, forgets_the_request, NULL, NULL, kinds));
  CHECK_ERR(af_host_call(ctx, "lost", 4, (const af_value_t* const*)&arg, 1, &out), AF_ERR_CALLBACK, "\"lost\"",
            "without completing or failing");
  af_value_free(kinds);
  af_value_free(arg);
  tool_done(&t);
}

/* A context's eager_timeout_ms bounds an eager af_host_call: an async
 * request never finished (it blocked forever) and a blocking function still
 * working both end with TIMEOUT; the async tool sees itself cancelled, and
 * its late answer is ignored. An eager LM call is bounded the same way. */
static void eager_calls_honour_the_contexts_timeout(void) {
  static const char opts[] = "{\"eager_timeout_ms\":100}";
  struct tool waits, sleeps;
  af_context_t* c = NULL;
  af_value_t *arg = NULL, *out = NULL, *kinds = mk_str("str");
  double t0;
  tool_init(&waits, 0);
  waits.wait_for_cancel = 1;
  tool_init(&sleeps, 400);
  if (!CHECK_OK(af_context_new_with(opts, strlen(opts), &c))) goto done;
  CHECK_OK(af_register_function_async(c, "waits", 5, slow_async, &waits, NULL, kinds));
  CHECK_OK(af_register_function_blocking(c, "sleeps", 6, slow_sync, &sleeps, NULL, kinds));
  CHECK_OK(af_value_int(c, 7, &arg));
  t0 = now_ms();
  CHECK_ERR(af_host_call(c, "waits", 5, (const af_value_t* const*)&arg, 1, &out), AF_ERR_TIMEOUT,
            "eager_timeout_ms of 100 ms", "cancelled");
  CHECK(now_ms() - t0 < 2000); /* the tool would wait 5 s */
  CHECK_ERR(af_host_call(c, "sleeps", 6, (const af_value_t* const*)&arg, 1, &out), AF_ERR_TIMEOUT,
            "eager_timeout_ms of 100 ms");
  CHECK_NULLED(out, af_value_free);
  {
    static const char slow[] = "{\"latency_ms\":5000}";
    af_provider_t* echo = NULL;
    af_value_t* msgs = mk_json("[{\"role\":\"user\",\"content\":\"hi\"}]");
    af_value_t* model = mk_str("m");
    if (CHECK_OK(af_provider_echo_new(slow, strlen(slow), &echo)) && CHECK_OK(af_context_route(c, "*", 1, echo))) {
      t0 = now_ms();
      CHECK_ERR(af_lm_call(c, msgs, model, &out), AF_ERR_TIMEOUT, "eager_timeout_ms of 100 ms");
      CHECK(now_ms() - t0 < 2000); /* the reply would take 5 s */
    }
    af_provider_free(echo);
    af_value_free(msgs);
    af_value_free(model);
  }
  {
    af_context_t* bad = NULL;
    CHECK_ERR(af_context_new_with("{\"eager_timeout_ms\":-1}", 23, &bad), AF_ERR_INVALID_ARGUMENT, "eager_timeout_ms");
    CHECK_NULLED(bad, af_context_free);
  }
done:
  af_value_free(arg);
  af_value_free(kinds);
  tool_done(&waits);
  af_context_free(c); /* waits for the blocking call still sleeping */
  tool_done(&sleeps);
  CHECK_INT_EQ(waits.saw_cancelled, 1);
  CHECK_INT_EQ(waits.late_complete_code, 0);
}

/* A context's host_wait_ms bounds how long af_context_free waits for a
 * blocking host function still running (it waited forever): past it the
 * call's thread is abandoned, the call goes on to its end, and only then
 * does the function's destroy run. */
static int g_destroyed;
static void count_destroy(void* ud) {
  (void)ud;
  __atomic_add_fetch(&g_destroyed, 1, __ATOMIC_SEQ_CST);
}

static void context_free_abandons_a_hung_blocking_call(void) {
  static const char opts[] = "{\"host_wait_ms\":100,\"eager_timeout_ms\":50}";
  struct tool sleeps;
  af_context_t* c = NULL;
  af_value_t *arg = NULL, *out = NULL, *kinds = mk_str("str");
  double t0;
  int waited = 0;
  tool_init(&sleeps, 1500);
  g_destroyed = 0;
  if (!CHECK_OK(af_context_new_with(opts, strlen(opts), &c))) goto done;
  CHECK_OK(af_register_function_blocking(c, "sleeps", 6, slow_sync, &sleeps, count_destroy, kinds));
  CHECK_OK(af_value_int(c, 1, &arg));
  /* The eager call gives up after 50 ms; the call itself sleeps on. */
  CHECK_ERR(af_host_call(c, "sleeps", 6, (const af_value_t* const*)&arg, 1, &out), AF_ERR_TIMEOUT, "eager_timeout_ms");
  pthread_mutex_lock(&sleeps.mu);
  while (sleeps.started < 1) pthread_cond_wait(&sleeps.cv, &sleeps.mu);
  pthread_mutex_unlock(&sleeps.mu);
  t0 = now_ms();
  af_context_free(c);
  c = NULL;
  CHECK(now_ms() - t0 < 1000); /* not the call's 1.5 s */
  CHECK_INT_EQ(__atomic_load_n(&g_destroyed, __ATOMIC_SEQ_CST), 0); /* the running call holds its function */
  pthread_mutex_lock(&sleeps.mu);
  while (sleeps.finished < 1) pthread_cond_wait(&sleeps.cv, &sleeps.mu);
  pthread_mutex_unlock(&sleeps.mu);
  while (__atomic_load_n(&g_destroyed, __ATOMIC_SEQ_CST) == 0 && waited < 5000) {
    sleep_ms(5);
    waited += 5;
  }
  CHECK_INT_EQ(__atomic_load_n(&g_destroyed, __ATOMIC_SEQ_CST), 1);
done:
  af_value_free(arg);
  af_value_free(kinds);
  af_context_free(c);
  tool_done(&sleeps);
}

static void blocking_failures_and_bad_registrations(void) {
  af_value_t* kinds = mk_str("str");
  af_value_t* arg = mk_str("not an int");
  af_value_t* out = NULL;
  struct tool t;
  tool_init(&t, 0);
  CHECK_ERR(af_register_function_async(ctx, "f", 1, NULL, NULL, NULL, kinds), AF_ERR_INVALID_ARGUMENT,
            "af_register_function_async", "`fn` is NULL");
  CHECK_ERR(af_register_function_blocking(ctx, "f", 1, NULL, NULL, NULL, kinds), AF_ERR_INVALID_ARGUMENT,
            "af_register_function_blocking", "`fn` is NULL");
  CHECK_ERR(af_register_function_async(ctx, "", 0, slow_async, &t, NULL, kinds), AF_ERR_INVALID_ARGUMENT, "empty");
  register_kinds("strict", 0, &t);
  /* slow_sync refuses a str argument: the callback's error is the cause */
  CHECK_ERR(af_host_call(ctx, "strict", 6, (const af_value_t* const*)&arg, 1, &out), AF_ERR_CALLBACK,
            "\"strict\"", "wants an int");
  CHECK_ERR(af_host_request_complete(NULL, kinds), AF_ERR_INVALID_ARGUMENT, "`req` is NULL");
  CHECK_ERR(af_host_request_fail(NULL, af_error_new(AF_ERR_PROVIDER, "x", 1)), AF_ERR_INVALID_ARGUMENT,
            "`req` is NULL");
  CHECK_INT_EQ(af_host_request_cancelled(NULL), 0);
  af_host_request_free(NULL);
  af_value_free(arg);
  af_value_free(kinds);
  tool_done(&t);
}

/* A progress callback that finishes a pending host request by hand is
 * called again, nested, on the same thread (the host call's equation
 * completes there), and that nested call cancels the run: the run ends
 * inside both calls. The callback's user data is released once, when the
 * outermost call returns, never while a call is still running in it. */
struct nested_log {
  af_host_request_t* pending; /* the host call's request, held */
  af_cancel_t* cancel;
  int depth, max_depth, destroyed, destroyed_at_depth;
};
static void hold_request(void* ud, const af_value_t* const* args, size_t n, af_host_request_t* req) {
  (void)args;
  (void)n;
  ((struct nested_log*)ud)->pending = req;
}
static void finish_pending_in_progress(void* ud, uint64_t done, uint64_t total) {
  struct nested_log* l = (struct nested_log*)ud;
  (void)done;
  (void)total;
  if (++l->depth > l->max_depth) l->max_depth = l->depth;
  if (l->depth == 2) af_cancel_trigger(l->cancel); /* the nested call ends the run */
  if (l->pending) {
    af_host_request_t* req = l->pending;
    af_value_t* v = NULL;
    l->pending = NULL;
    af_value_str(NULL, "held", 4, &v);
    af_error_free(af_host_request_complete(req, v));
    af_value_free(v);
    af_host_request_free(req);
  }
  --l->depth;
}
static void nested_destroy(void* ud) {
  struct nested_log* l = (struct nested_log*)ud;
  l->destroyed++;
  l->destroyed_at_depth = l->depth;
}
/* [concat(held(x), "!"), concat(x, "?")]: the host call leads the longer
 * path, so it starts first; the second concat then reports progress. */
static af_error_t* held_then_concat(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                                    af_value_t** out) {
  af_value_t *h = NULL, *bang = NULL, *q = NULL, *pair[2] = {NULL, NULL};
  const af_value_t* args[2];
  af_error_t* e = af_host_call(c, "held", 4, in, 1, &h);
  (void)ud;
  (void)n;
  if (!e) e = af_value_str(c, "!", 1, &bang);
  if (!e) e = af_value_str(c, "?", 1, &q);
  args[0] = h;
  args[1] = bang;
  if (!e) e = af_concat(c, args, 2, &pair[0]);
  args[0] = in[0];
  args[1] = q;
  if (!e) e = af_concat(c, args, 2, &pair[1]);
  if (!e) e = af_value_list(c, AS_ARGS(pair), 2, out);
  af_value_free(h);
  af_value_free(bang);
  af_value_free(q);
  free_items(pair, 2);
  return e;
}
static void a_callback_nested_in_itself_is_released_after_the_outer_call(void) {
  struct nested_log log;
  af_value_t* kinds = mk_str("str");
  af_value_t* x = mk_str("x");
  af_value_t* out = NULL;
  af_ir_t* ir = NULL;
  af_program_t* p = NULL;
  af_run_options_t o;
  memset(&log, 0, sizeof log);
  CHECK_OK(af_register_function_async(ctx, "held", 4, hold_request, &log, NULL, kinds));
  ir = TRACE(held_then_concat, NULL, "[\"x\"]", NULL);
  if (!ir || !CHECK_OK(af_compile(ctx, ir, &p)) || !CHECK_OK(af_cancel_new(&log.cancel))) goto done;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.cancel = log.cancel;
  o.progress = finish_pending_in_progress;
  o.progress_user_data = &log;
  o.progress_destroy = nested_destroy;
  CHECK_ERR(af_program_call_with(ctx, p, AS_ARGS(&x), 1, &o, &out), AF_ERR_CANCELLED, "");
  CHECK_INT_EQ(log.max_depth, 2);
  CHECK_INT_EQ(log.destroyed, 1);
  CHECK_INT_EQ(log.destroyed_at_depth, 0);
done:
  af_value_free(out);
  af_value_free(x);
  af_value_free(kinds);
  af_program_free(p);
  af_ir_free(ir);
  af_cancel_free(log.cancel);
}

int main(int argc, char** argv) {
  static const struct test_case cases[] = {
      CASE(async_tools_run_concurrently),
      CASE(blocking_tools_run_on_the_host_pool),
      CASE(host_threads_bounds_the_pool),
      CASE(a_blocking_tool_may_call_another_with_a_pool_of_one),
      CASE(cancellation_reaches_an_async_tool),
      CASE(a_timeout_reaches_an_async_tool_in_program_call),
      CASE(a_wrong_result_names_the_function),
      CASE(eager_calls_wait_for_async_tools),
      CASE(eager_calls_honour_the_contexts_timeout),
      CASE(context_free_abandons_a_hung_blocking_call),
      CASE(blocking_failures_and_bad_registrations),
      CASE(a_callback_nested_in_itself_is_released_after_the_outer_call),
  };
  return run_cases(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
