#include "triage_program.h"

#include <string.h>

const char* const triage_sample_tickets[TRIAGE_N_SAMPLE_TICKETS] = {
    "I was charged twice for my March invoice.", "The app crashes when I upload a photo.",
    "How do I change the card on my account?"};

/* A chat message {"role": role, "content": content}; content may be traced. */
static af_error_t* message(const char* role, const af_value_t* content, af_value_t** out) {
  af_value_t* r = NULL;
  af_error_t* err = af_value_str_new(role, strlen(role), &r);
  if (!err) {
    const char* keys[2] = {"role", "content"};
    size_t lens[2] = {4, 7};
    const af_value_t* values[2] = {r, content};
    err = af_value_dict_new(keys, lens, values, 2, out);
  }
  af_value_free(r);
  return err;
}

/* One user message whose content is tmpl formatted with args. */
static af_error_t* ask(af_context_t* ctx, const char* tmpl, const af_value_t* const* args,
                       size_t n_args, af_value_t** out) {
  af_value_t *content = NULL, *msg = NULL;
  af_error_t* err = af_format(ctx, tmpl, strlen(tmpl), args, n_args, NULL, &content);
  if (!err) err = message("user", content, &msg);
  if (!err) err = af_value_list_new((const af_value_t* const*)&msg, 1, out);
  af_value_free(content);
  af_value_free(msg);
  return err;
}

/* lm_call of one user message (tmpl formatted with args) to model. */
static af_error_t* call_lm(af_context_t* ctx, const char* model, const char* tmpl,
                           const af_value_t* const* args, size_t n_args, const char* schema_json,
                           af_value_t** out) {
  af_value_t *msgs = NULL, *m = NULL, *schema = NULL;
  af_error_t* err = ask(ctx, tmpl, args, n_args, &msgs);
  if (!err) err = af_value_str_new(model, strlen(model), &m);
  if (!err && schema_json) err = af_value_json_new(schema_json, strlen(schema_json), &schema);
  if (!err) err = schema ? af_lm_schema_call(ctx, msgs, m, schema, out) : af_lm_call(ctx, msgs, m, out);
  af_value_free(msgs);
  af_value_free(m);
  af_value_free(schema);
  return err;
}

/* The switch branches: each drafts a reply to the ticket with its own model. */
static af_error_t* billing_fn(void* ud, af_context_t* ctx, const af_value_t* const* in, size_t n,
                              af_value_t** out) {
  (void)ud;
  (void)n;
  return call_lm(ctx, "billing-drafter",
                 "Draft a short, friendly reply to this billing question: {}", in, 1, NULL, out);
}

static af_error_t* technical_fn(void* ud, af_context_t* ctx, const af_value_t* const* in,
                                size_t n, af_value_t** out) {
  (void)ud;
  (void)n;
  return call_lm(ctx, "tech-drafter",
                 "Draft troubleshooting steps for this problem report: {}", in, 1, NULL, out);
}

static const char* kClassify =
    "{\"team\": {\"type\": \"enum\", \"values\": [\"billing\", \"technical\"]},"
    " \"urgency\": {\"type\": \"int\", \"min\": 1, \"max\": 5, \"doc\": \"5 = service down\"}}";
static const char* kReview =
    "{\"ok\": {\"type\": \"bool\", \"doc\": \"the reply answers the ticket\"},"
    " \"note\": {\"type\": \"str\", \"max\": 80}}";

af_error_t* triage_fn(void* user_data, af_context_t* ctx, const af_value_t* const* inputs,
                      size_t n_inputs, af_value_t** out) {
  const af_value_t* ticket = inputs[0];
  af_value_t* example = NULL;
  af_value_t *cls = NULL, *team = NULL, *urgency = NULL, *reply = NULL, *review = NULL;
  af_ir_t* branches[2] = {NULL, NULL};
  af_error_t* err;
  (void)user_data;
  (void)n_inputs;
  /* Each step under its own name: texts, profiles and errors say which. */
  err = af_name_push(ctx, "classify", 8);
  if (!err)
    err = call_lm(ctx, "triage-classifier", "Classify this support ticket: {}", &ticket, 1,
                  kClassify, &cls);
  if (!err) err = af_name_pop(ctx);
  if (!err) err = af_value_key(cls, "team", 4, &team);
  if (!err) err = af_value_key(cls, "urgency", 7, &urgency);
  /* Branches are traced on their own, on an example of the operand. */
  if (!err) err = af_value_str_new("ticket", 6, &example);
  if (!err) err = af_trace(ctx, billing_fn, NULL, (const af_value_t* const*)&example, 1, NULL, &branches[0]);
  if (!err) err = af_trace(ctx, technical_fn, NULL, (const af_value_t* const*)&example, 1, NULL, &branches[1]);
  if (!err) err = af_name_push(ctx, "draft", 5);
  if (!err) {
    const char* names[2] = {"billing", "technical"};
    size_t lens[2] = {7, 9};
    err = af_switch(ctx, team, names, lens, (const af_ir_t* const*)branches, 2, &ticket, 1, &reply);
  }
  if (!err) err = af_name_pop(ctx);
  if (!err) err = af_name_push(ctx, "review", 6);
  if (!err) {
    const af_value_t* args[2] = {ticket, reply};
    err = call_lm(ctx, "triage-reviewer", "Does this reply answer the ticket?\nTicket: {}\nReply: {}",
                  args, 2, kReview, &review);
  }
  if (!err) err = af_name_pop(ctx);
  if (!err) {
    const char* keys[4] = {"team", "urgency", "reply", "review"};
    size_t lens[4] = {4, 7, 5, 6};
    const af_value_t* values[4] = {team, urgency, reply, review};
    err = af_value_dict_new(keys, lens, values, 4, out);
  }
  af_ir_free(branches[0]);
  af_ir_free(branches[1]);
  af_value_free(example);
  af_value_free(cls);
  af_value_free(team);
  af_value_free(urgency);
  af_value_free(reply);
  af_value_free(review);
  return err;
}

af_error_t* triage_trace(af_context_t* ctx, af_ir_t** out) {
  af_value_t* example = NULL;
  af_error_t* err = af_value_str_new("ticket", 6, &example);
  if (!err) err = af_trace(ctx, triage_fn, NULL, (const af_value_t* const*)&example, 1, NULL, out);
  af_value_free(example);
  return err;
}

af_error_t* triage_batched_trace(af_context_t* ctx, af_ir_t** out) {
  af_ir_t* one = NULL;
  af_error_t* err = triage_trace(ctx, &one);
  if (!err) err = af_batch(ctx, one, NULL, out);
  af_ir_free(one);
  return err;
}
