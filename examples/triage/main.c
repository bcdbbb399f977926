/* triage: trace the support-ticket triage program (triage_program.h), batch
 * it over tickets, compile it and run it in-process on the offline echo
 * provider with a simulated 100 ms per LM call. Prints the result and the
 * wall time: each ticket makes three dependent calls, and the dataflow
 * executor runs every ticket's calls concurrently.
 * Usage: triage_example [TICKET...] */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "triage_program.h"

static int report(af_error_t* err) {
  fprintf(stderr, "error %d: %s\n", (int)af_error_code(err), af_error_message(err));
  af_error_free(err);
  return 1;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

int main(int argc, char** argv) {
  const char* const* tickets = argc > 1 ? (const char* const*)(argv + 1) : triage_sample_tickets;
  size_t n = argc > 1 ? (size_t)(argc - 1) : TRIAGE_N_SAMPLE_TICKETS, i;
  const char* echo_opts = "{\"latency_ms\": 100}";
  af_context_t* ctx = NULL;
  af_provider_t* echo = NULL;
  af_ir_t* ir = NULL;
  af_program_t* prog = NULL;
  af_value_t *items[64], *list = NULL, *result = NULL;
  af_bytes_t json = {0};
  double t0 = 0;
  af_error_t* err;
  if (n > 64) n = 64;
  memset(items, 0, sizeof items);
  err = af_context_new(&ctx);
  if (!err) err = af_provider_echo_new(echo_opts, strlen(echo_opts), &echo);
  if (!err) err = af_context_route(ctx, "*", 1, echo);
  if (!err) err = triage_batched_trace(ctx, &ir);
  if (!err) err = af_compile(ctx, ir, &prog);
  for (i = 0; !err && i < n; i++) err = af_value_str_new(tickets[i], strlen(tickets[i]), &items[i]);
  if (!err) err = af_value_list_new((const af_value_t* const*)items, n, &list);
  if (!err) {
    t0 = now_ms();
    err = af_program_call(ctx, prog, (const af_value_t* const*)&list, 1, &result);
  }
  if (!err) err = af_value_to_json(result, &json);
  if (!err) {
    printf("%s\n", (const char*)json.data);
    printf("%lu tickets, %lu LM calls of 100 ms each: %.0f ms\n", (unsigned long)n,
           (unsigned long)(3 * n), now_ms() - t0);
  }
  af_bytes_free(&json);
  af_value_free(result);
  af_value_free(list);
  for (i = 0; i < n; i++) af_value_free(items[i]);
  af_program_free(prog);
  af_ir_free(ir);
  af_provider_free(echo);
  af_context_free(ctx);
  return err ? report(err) : 0;
}
