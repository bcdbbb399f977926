/* The example LM program: support-ticket triage, traced from C through the
 * public API. Shared by examples/triage/main.c and `af demo`.
 *
 *   triage(ticket) =
 *     c      = lm_schema_call(classify prompt of ticket, "triage-classifier",
 *                             {team: enum[billing, technical], urgency: int 1..5})
 *     reply  = switch c.team { billing:   lm_call(billing prompt,   "billing-drafter")
 *                              technical: lm_call(technical prompt, "tech-drafter") }
 *     review = lm_schema_call(review prompt of ticket and reply, "triage-reviewer",
 *                             {ok: bool, note: str <= 80})
 *     return {team, urgency, reply, review}
 *
 * triage_batched_trace gives the same program over a list of tickets
 * (af_batch): every ticket's calls are independent, so a compiled program
 * runs them concurrently. */
#ifndef AF_EXAMPLES_TRIAGE_PROGRAM_H
#define AF_EXAMPLES_TRIAGE_PROGRAM_H

#include <af/af.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Three sample tickets (the demo's default input). */
#define TRIAGE_N_SAMPLE_TICKETS 3
extern const char* const triage_sample_tickets[TRIAGE_N_SAMPLE_TICKETS];

/* The traced function (an af_trace_fn): one ticket (a str) in. */
af_error_t* triage_fn(void* user_data, af_context_t* ctx, const af_value_t* const* inputs,
                      size_t n_inputs, af_value_t** out);
/* Traces triage on one ticket. */
af_error_t* triage_trace(af_context_t* ctx, af_ir_t** out);
/* Traces triage and batches it: one input, a list of tickets; the output
 * holds one list per leaf ({"team": [...], "urgency": [...], ...}). */
af_error_t* triage_batched_trace(af_context_t* ctx, af_ir_t** out);

#ifdef __cplusplus
}
#endif

#endif
