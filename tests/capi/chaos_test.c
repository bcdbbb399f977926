/* chaos_test.c — the openai provider against a hostile endpoint: 1000
 * requests to the local fault server's "chaos" model (429, 500, connection
 * resets, slow and cut bodies, garbage, hangs, absurd usage claims, drawn at
 * random per attempt),
 * 100 runs in flight at a time, some cancelled midway. Every run ends with
 * an answer or a coded error before its deadline, and nothing is left in
 * flight (the ASan suite checks that nothing leaks). */
#include "check.h"

#include <time.h>

#include "lm_server.h"

#define CHAOS_RUNS 1000
#define CHAOS_AT_ONCE 100
#define CHAOS_TIMEOUT_MS 1500
/* Generous: a loaded machine (and ASan) delays the timer and the waiter. */
#define CHAOS_SLACK_MS 3000

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ask(q) = lm_call([{"role": "user", "content": q}], "chaos") */
static af_error_t* ask(void* ud, af_context_t* c, const af_value_t* const* in, size_t n, af_value_t** out) {
  const char* keys[] = {"role", "content"};
  size_t lens[] = {4, 7};
  af_value_t *role = NULL, *msg = NULL, *msgs = NULL, *model = NULL;
  af_error_t* e = af_value_str(c, "user", 4, &role);
  (void)ud;
  (void)n;
  if (!e) {
    const af_value_t* v[] = {role, in[0]};
    e = af_value_dict(c, keys, lens, v, 2, &msg);
  }
  if (!e) e = af_value_list(c, (const af_value_t* const*)&msg, 1, &msgs);
  if (!e) e = af_value_str(c, "chaos", 5, &model);
  if (!e) e = af_lm_call(c, msgs, model, out);
  af_value_free(role);
  af_value_free(msg);
  af_value_free(msgs);
  af_value_free(model);
  return e;
}

static void every_request_ends_coded_and_in_time(void) {
  struct server s = server_start();
  /* Short per-attempt timeout and backoff; Retry-After: 1 is clamped to
   * backoff_max_ms. A token rate no honest reply reaches: a reply claiming
   * 2^63-1 tokens must neither stall the provider nor overflow its wait. */
  af_provider_t* p =
      openai_for(&s, "\"backoff_max_ms\":50,\"max_in_flight\":64,\"tokens_per_minute\":60000000000");
  af_ir_t* ir = NULL;
  af_program_t* prog = NULL;
  long counts[AF_ERR_INTERNAL + 1] = {0};
  int i, j;
  if (!p) goto done;
  CHECK_OK(af_context_route(ctx, "chaos", 5, p));
  ir = TRACE(ask, NULL, "[\"q\"]", NULL);
  if (!ir || !CHECK_OK(af_compile(ctx, ir, &prog))) goto done;
  for (i = 0; i < CHAOS_RUNS; i += CHAOS_AT_ONCE) {
    af_future_t* f[CHAOS_AT_ONCE] = {NULL};
    double started[CHAOS_AT_ONCE];
    for (j = 0; j < CHAOS_AT_ONCE; j++) {
      char q[32];
      af_value_t* in = NULL;
      af_run_options_t o;
      memset(&o, 0, sizeof o);
      o.struct_size = sizeof o;
      o.timeout_ms = CHAOS_TIMEOUT_MS;
      snprintf(q, sizeof q, "q%d", i + j);
      in = mk_str(q);
      started[j] = now_ms();
      CHECK_OK(af_program_call_async_with(ctx, prog, (const af_value_t* const*)&in, 1, &o, &f[j]));
      af_value_free(in);
    }
    /* Every seventh run is cancelled while its requests fly or wait. */
    for (j = 0; j < CHAOS_AT_ONCE; j += 7)
      if (f[j]) af_future_cancel(f[j]);
    for (j = 0; j < CHAOS_AT_ONCE; j++) {
      af_value_t* out = NULL;
      af_error_t* e;
      int code;
      if (!f[j]) continue;
      e = af_future_wait(f[j], &out);
      code = e ? af_error_code(e) : 0;
      if (now_ms() - started[j] > CHAOS_TIMEOUT_MS + CHAOS_SLACK_MS)
        check_fail(__FILE__, __LINE__, "run %d ended %.0f ms after it started", i + j, now_ms() - started[j]);
      if (code == 0) {
        char want[48];
        snprintf(want, sizeof want, "\"chaos|q%d\"", i + j);
        CHECK_JSON(out, want);
      } else if (code != AF_ERR_PROVIDER && code != AF_ERR_TIMEOUT && code != AF_ERR_CANCELLED) {
        check_fail(__FILE__, __LINE__, "run %d: unexpected code %d: %s", i + j, code, af_error_message(e));
      } else if (!af_error_message(e) || !*af_error_message(e)) {
        check_fail(__FILE__, __LINE__, "run %d: code %d without a message", i + j, code);
      }
      if (code >= 0 && code <= AF_ERR_INTERNAL) counts[code]++;
      af_error_free(e);
      af_value_free(out);
      af_future_free(f[j]);
    }
  }
  fprintf(stderr, "  %ld answers, %ld PROVIDER, %ld TIMEOUT, %ld CANCELLED\n", counts[0],
          counts[AF_ERR_PROVIDER], counts[AF_ERR_TIMEOUT], counts[AF_ERR_CANCELLED]);
  /* The faults were met: answers after retries, failures, cancellations. */
  CHECK(counts[0] > CHAOS_RUNS / 4);
  CHECK(counts[AF_ERR_PROVIDER] > 0);
  CHECK(counts[AF_ERR_CANCELLED] >= CHAOS_RUNS / CHAOS_AT_ONCE);
  {
    af_bytes_t b = {NULL, 0};
    if (CHECK_OK(af_provider_stats(p, &b))) {
      char* stats = (char*)malloc(b.len + 1);
      memcpy(stats, b.data, b.len);
      stats[b.len] = 0;
      CHECK_CONTAINS(stats, "\"in_flight\":0");
      free(stats);
    }
    af_bytes_free(&b);
  }
done:
  af_program_free(prog);
  af_ir_free(ir);
  af_provider_free(p);
  server_stop(&s);
}

int main(int argc, char** argv) {
  static const struct test_case cases[] = {
      CASE(every_request_ends_coded_and_in_time),
  };
  return run_cases(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
