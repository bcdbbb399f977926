/* Cancel scopes (af_cancel_scope_push / _pop): what the calling thread runs
 * on a context inside the scope ends with CANCELLED when the token fires —
 * an eager LM call (its transfer aborted), a blocking host call, an
 * af_ir_call run — while a run given its own token keeps it, and other
 * threads are not touched. */
#include "check.h"

#include <pthread.h>
#include <time.h>

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static af_provider_t* route_echo(const char* options) {
  af_provider_t* echo = NULL;
  if (CHECK_OK(af_provider_echo_new(options, strlen(options), &echo))) CHECK_OK(af_context_route(ctx, "*", 1, echo));
  return echo;
}

/* Triggers a token after a delay, from another thread (as a signal's
 * watcher in a binding would). */
struct trigger {
  af_cancel_t* token;
  int after_ms;
};

static void* trigger_later(void* arg) {
  const struct trigger* t = (const struct trigger*)arg;
  struct timespec ts = {t->after_ms / 1000, (long)(t->after_ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
  af_cancel_trigger(t->token);
  return NULL;
}

static int in_flight_zero(const af_provider_t* p) {
  for (int i = 0; i < 200; ++i) {
    af_bytes_t stats = {NULL, 0};
    int zero = 0;
    if (!af_provider_stats(p, &stats)) zero = check_contains_n((const char*)stats.data, stats.len, "\"in_flight\":0", 13);
    af_bytes_free(&stats);
    if (zero) return 1;
    struct timespec ts = {0, 10000000L};
    nanosleep(&ts, NULL);
  }
  return 0;
}

static void an_eager_lm_call_is_cancelled_and_its_request_aborted(void) {
  af_provider_t* echo = route_echo("{\"latency_ms\":5000}");
  af_value_t* msgs = mk_json("[{\"role\":\"user\",\"content\":\"hi\"}]");
  af_value_t *model = mk_str("m"), *out = NULL;
  af_cancel_t* token = NULL;
  pthread_t thread;
  struct trigger t;
  double t0;
  if (!CHECK_OK(af_cancel_new(&token)) || !CHECK_OK(af_cancel_scope_push(ctx, token))) goto done;
  t.token = token;
  t.after_ms = 100;
  t0 = now_ms();
  pthread_create(&thread, NULL, trigger_later, &t);
  CHECK_ERR(af_lm_call(ctx, msgs, model, &out), AF_ERR_CANCELLED, "lm_call", "cancel scope");
  CHECK(now_ms() - t0 < 2000); /* the reply would take 5 s */
  pthread_join(thread, NULL);
  CHECK_NULLED(out, af_value_free);
  CHECK(in_flight_zero(echo)); /* the request was cancelled, not left to finish */
  /* A fired token stays fired: the next call in the scope ends at once. */
  t0 = now_ms();
  CHECK_ERR(af_lm_call(ctx, msgs, model, &out), AF_ERR_CANCELLED, "cancel scope");
  CHECK(now_ms() - t0 < 1000);
  CHECK_OK(af_cancel_scope_pop(ctx));
done:
  af_cancel_free(token);
  af_value_free(out);
  af_value_free(msgs);
  af_value_free(model);
  af_provider_free(echo);
}

static af_error_t* sleepy(void* ud, const af_value_t* const* args, size_t n, af_value_t** out) {
  struct timespec ts = {3, 0};
  (void)ud;
  (void)args;
  (void)n;
  nanosleep(&ts, NULL);
  return af_value_str(NULL, "late", 4, out);
}

static void a_blocking_host_call_is_cancelled(void) {
  af_value_t *kinds = mk_str("str"), *arg = mk_str("x"), *out = NULL;
  af_cancel_t* token = NULL;
  pthread_t thread;
  struct trigger t;
  double t0;
  if (!CHECK_OK(af_register_function_blocking(ctx, "sleepy", 6, sleepy, NULL, NULL, kinds)) ||
      !CHECK_OK(af_cancel_new(&token)) || !CHECK_OK(af_cancel_scope_push(ctx, token)))
    goto done;
  t.token = token;
  t.after_ms = 100;
  t0 = now_ms();
  pthread_create(&thread, NULL, trigger_later, &t);
  CHECK_ERR(af_host_call(ctx, "sleepy", 6, (const af_value_t* const*)&arg, 1, &out), AF_ERR_CANCELLED,
            "cancel scope");
  CHECK(now_ms() - t0 < 2000); /* the function sleeps 3 s */
  pthread_join(thread, NULL);
  CHECK_OK(af_cancel_scope_pop(ctx));
done:
  af_cancel_free(token);
  af_value_free(out);
  af_value_free(arg);
  af_value_free(kinds);
}

static af_error_t* one_lm_call(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                               af_value_t** out) {
  (void)n;
  return af_lm_call(c, in[0], (const af_value_t*)ud, out);
}

static af_ir_t* traced_lm_call(af_value_t* model) {
  af_value_t* example = mk_json("[{\"role\":\"user\",\"content\":\"hi\"}]");
  af_value_t* mask = mk_json("[[{\"role\":true,\"content\":false}]]"); /* roles are static */
  af_ir_t* ir = NULL;
  CHECK_OK(af_trace(ctx, one_lm_call, model, (const af_value_t* const*)&example, 1, mask, &ir));
  af_value_free(example);
  af_value_free(mask);
  return ir;
}

static void an_ir_call_run_is_cancelled_but_a_run_with_its_own_token_is_not(void) {
  af_provider_t* echo = route_echo("{\"latency_ms\":300}");
  af_value_t *model = mk_str("m"), *msgs = mk_json("[{\"role\":\"user\",\"content\":\"q\"}]"), *out = NULL;
  af_ir_t* ir = traced_lm_call(model);
  af_program_t* program = NULL;
  af_cancel_t *token = NULL, *own = NULL;
  af_run_options_t opts;
  pthread_t thread;
  struct trigger t;
  double t0;
  if (!ir || !CHECK_OK(af_cancel_new(&token)) || !CHECK_OK(af_cancel_new(&own)) ||
      !CHECK_OK(af_compile(ctx, ir, &program)) || !CHECK_OK(af_cancel_scope_push(ctx, token)))
    goto done;
  /* Not yet fired: calls in the scope run as usual. */
  if (CHECK_OK(af_ir_call(ctx, ir, (const af_value_t* const*)&msgs, 1, &out))) CHECK_JSON(out, "\"m|q\"");
  af_value_free(out);
  out = NULL;
  t.token = token;
  t.after_ms = 50;
  t0 = now_ms();
  pthread_create(&thread, NULL, trigger_later, &t);
  CHECK_ERR(af_ir_call(ctx, ir, (const af_value_t* const*)&msgs, 1, &out), AF_ERR_CANCELLED, "cancel");
  CHECK(now_ms() - t0 < 290);
  pthread_join(thread, NULL);
  CHECK_NULLED(out, af_value_free);
  /* A run given a token of its own keeps it: the fired scope does not end it. */
  memset(&opts, 0, sizeof opts);
  opts.struct_size = sizeof opts;
  opts.cancel = own;
  if (CHECK_OK(af_program_call_with(ctx, program, (const af_value_t* const*)&msgs, 1, &opts, &out)))
    CHECK_JSON(out, "\"m|q\"");
  af_value_free(out);
  out = NULL;
  CHECK_OK(af_cancel_scope_pop(ctx));
  /* After the pop, runs are the thread's own again. */
  if (CHECK_OK(af_program_call(ctx, program, (const af_value_t* const*)&msgs, 1, &out))) CHECK_JSON(out, "\"m|q\"");
done:
  af_value_free(out);
  af_cancel_free(token);
  af_cancel_free(own);
  af_program_free(program);
  af_ir_free(ir);
  af_value_free(msgs);
  af_value_free(model);
  af_provider_free(echo);
}

/* Another thread's calls on the same context are not in this thread's scope. */
struct other_call {
  af_value_t* msgs;
  af_value_t* model;
  af_error_t* err;
  af_value_t* out;
};

static void* call_on_other_thread(void* arg) {
  struct other_call* c = (struct other_call*)arg;
  c->err = af_lm_call(ctx, c->msgs, c->model, &c->out);
  return NULL;
}

static void scopes_belong_to_their_thread_and_nest(void) {
  af_provider_t* echo = route_echo("{\"latency_ms\":200}");
  af_cancel_t *outer = NULL, *inner = NULL;
  struct other_call other = {NULL, NULL, NULL, NULL};
  af_value_t* out = NULL;
  pthread_t thread;
  other.msgs = mk_json("[{\"role\":\"user\",\"content\":\"hi\"}]");
  other.model = mk_str("m");
  if (!CHECK_OK(af_cancel_new(&outer)) || !CHECK_OK(af_cancel_new(&inner))) goto done;
  CHECK_OK(af_cancel_scope_push(ctx, outer));
  CHECK_OK(af_cancel_scope_push(ctx, inner));
  /* Neither fired: calls run. */
  if (CHECK_OK(af_lm_call(ctx, other.msgs, other.model, &out))) CHECK_JSON(out, "\"m|hi\"");
  af_value_free(out);
  out = NULL;
  /* The outer token stops what runs inside the inner scope too: an inner
   * scope never shields from an outer one. */
  af_cancel_trigger(outer);
  pthread_create(&thread, NULL, call_on_other_thread, &other);
  pthread_join(thread, NULL);
  if (CHECK_OK(other.err)) CHECK_JSON(other.out, "\"m|hi\""); /* not this thread's scope */
  CHECK_ERR(af_lm_call(ctx, other.msgs, other.model, &out), AF_ERR_CANCELLED, "cancel scope");
  CHECK_OK(af_cancel_scope_pop(ctx));
  CHECK_ERR(af_lm_call(ctx, other.msgs, other.model, &out), AF_ERR_CANCELLED, "cancel scope"); /* outer fired */
  CHECK_OK(af_cancel_scope_pop(ctx));
  if (CHECK_OK(af_lm_call(ctx, other.msgs, other.model, &out))) CHECK_JSON(out, "\"m|hi\"");
  af_value_free(out);
  out = NULL;
  /* A fired token ends nothing outside its own scope. */
  af_cancel_trigger(inner);
  CHECK_OK(af_cancel_scope_push(ctx, inner));
  CHECK_ERR(af_lm_call(ctx, other.msgs, other.model, &out), AF_ERR_CANCELLED, "cancel scope");
  CHECK_OK(af_cancel_scope_pop(ctx));
  if (CHECK_OK(af_lm_call(ctx, other.msgs, other.model, &out))) CHECK_JSON(out, "\"m|hi\"");
done:
  af_value_free(out);
  af_value_free(other.out);
  af_value_free(other.msgs);
  af_value_free(other.model);
  af_cancel_free(outer);
  af_cancel_free(inner);
  af_provider_free(echo);
}

/* A token fired before the call: the call ends at once, even one whose
 * answer would come at once (as a run given a fired token does). */
static void a_fired_token_stops_a_call_before_it_starts(void) {
  af_provider_t* echo = route_echo("{}");
  af_value_t *msgs = mk_json("[{\"role\":\"user\",\"content\":\"hi\"}]"), *model = mk_str("m"), *out = NULL;
  af_cancel_t* token = NULL;
  if (!CHECK_OK(af_cancel_new(&token))) goto done;
  af_cancel_trigger(token);
  CHECK_OK(af_cancel_scope_push(ctx, token));
  CHECK_ERR(af_lm_call(ctx, msgs, model, &out), AF_ERR_CANCELLED, "cancel scope");
  CHECK_NULLED(out, af_value_free);
  CHECK_OK(af_cancel_scope_pop(ctx));
  if (CHECK_OK(af_lm_call(ctx, msgs, model, &out))) CHECK_JSON(out, "\"m|hi\"");
done:
  af_value_free(out);
  af_value_free(msgs);
  af_value_free(model);
  af_cancel_free(token);
  af_provider_free(echo);
}

static void misuse_is_an_invalid_argument(void) {
  af_cancel_t* token = NULL;
  CHECK_ERR(af_cancel_scope_pop(ctx), AF_ERR_INVALID_ARGUMENT, "cancel scope pop without a matching push");
  if (!CHECK_OK(af_cancel_new(&token))) return;
  CHECK_ERR(af_cancel_scope_push(NULL, token), AF_ERR_INVALID_ARGUMENT, "af_cancel_scope_push", "ctx");
  CHECK_ERR(af_cancel_scope_push(ctx, NULL), AF_ERR_INVALID_ARGUMENT, "af_cancel_scope_push", "token");
  CHECK_ERR(af_cancel_scope_pop(NULL), AF_ERR_INVALID_ARGUMENT, "af_cancel_scope_pop", "ctx");
  /* The scope holds its own reference: freeing the handle is safe. */
  CHECK_OK(af_cancel_scope_push(ctx, token));
  af_cancel_free(token);
  CHECK_OK(af_cancel_scope_pop(ctx));
}

int main(int argc, char** argv) {
  static const struct test_case cases[] = {
      CASE(an_eager_lm_call_is_cancelled_and_its_request_aborted),
      CASE(a_blocking_host_call_is_cancelled),
      CASE(an_ir_call_run_is_cancelled_but_a_run_with_its_own_token_is_not),
      CASE(scopes_belong_to_their_thread_and_nest),
      CASE(a_fired_token_stops_a_call_before_it_starts),
      CASE(misuse_is_an_invalid_argument),
  };
  return run_cases(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
