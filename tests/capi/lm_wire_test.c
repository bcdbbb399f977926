/* The anthropic and ollama providers through the C API, against the local
 * fault-injecting server (tests/lm_server/server.py), which speaks their
 * wire formats (POST /v1/messages, POST /api/chat) and refuses what the real
 * APIs refuse — a system role among Anthropic's messages, a missing
 * anthropic-version or max_tokens, a seed; an Ollama request without
 * "stream", sampling params outside "options" — so a wrong wire format
 * fails here. Each case runs for both types: plain calls, a system prompt,
 * sampling params under each API's names, schema calls, streamed calls
 * (the pieces make up the result), retries after 429/529/5xx, timeouts,
 * bad bodies and error bodies (PROVIDER, quoted safely), usage in the
 * provider stats and the run summary (also through a replay provider
 * recording it), and a fallback to another provider. Providers are made
 * from a spec by type name (af_provider_new). */
#include "check.h"
#include "lm_helpers.h"

#include <pthread.h>

#define KEY "sk-ant-wire-test-0123456789"

/* What differs between the two types, as the tests see it. */
struct wire {
  const char* type;
  const char* options;      /* the type's own upstream options, or "" */
  const char* stream_end;   /* in the message about a cut stream */
  const char* no_content;   /* in the message about a reply without text */
  const char* stream_error; /* in the message about an error mid-stream */
  const char* error_body;   /* in the message about a 400 */
};

static const struct wire kWires[] = {
    {"anthropic", ",\"api_key_env\":\"AF_WIRE_TEST_KEY\"", "no message_stop event", "no \"content\" array",
     "overloaded_error", "\"type\": \"invalid_request_error\""},
    {"ollama", "", "no line with \"done\": true", "no message.content", "the model crashed",
     "{\"error\": \""},
};
#define NWIRES (sizeof kWires / sizeof kWires[0])

static const char* kSchema =
    "{\"answer\":{\"type\":\"str\"},\"score\":{\"type\":\"int\",\"min\":1,\"max\":10}}";

/* The spec of a provider of type w->type for the server (400 ms per
 * attempt, 2 retries 10 ms apart or `retries`; Retry-After clamped to 50
 * ms), plus options `up` (JSON members, or NULL), named after the type. */
static void spec_for(char* spec, size_t size, const struct server* s, const struct wire* w, int retries,
                     const char* up) {
  snprintf(spec, size,
           "{\"type\":\"%s\",\"name\":\"%s\",\"base_url\":\"http://127.0.0.1:%d\",\"timeout_ms\":400,"
           "\"max_retries\":%d,\"backoff_ms\":10,\"backoff_max_ms\":50%s%s%s}",
           w->type, w->type, s->port, retries, w->options, up ? "," : "", up ? up : "");
}

/* The provider of spec_for, made by af_provider_new. */
static af_provider_t* wire_for(const struct server* s, const struct wire* w, int retries, const char* up) {
  char spec[1024];
  af_provider_t* p = NULL;
  spec_for(spec, sizeof spec, s, w, retries, up);
  CHECK_OK(af_provider_new(spec, strlen(spec), &p));
  return p;
}

/* The same provider as a replay provider's upstream in record mode (which
 * forwards each request, its stream, usage and error as they are), writing
 * to an unlinked temporary file. */
static af_provider_t* recorded_wire_for(const struct server* s, const struct wire* w) {
  char path[] = "/tmp/af_wire_test_XXXXXX";
  char spec[1024], opts[1400];
  af_provider_t* p = NULL;
  int fd = mkstemp(path);
  if (fd < 0) {
    check_fail(__FILE__, __LINE__, "mkstemp failed");
    return NULL;
  }
  close(fd);
  spec_for(spec, sizeof spec, s, w, 2, NULL);
  snprintf(opts, sizeof opts, "{\"path\":\"%s\",\"mode\":\"record\",\"name\":\"%s\",\"upstream\":%s}", path,
           w->type, spec);
  CHECK_OK(af_provider_replay_new(opts, strlen(opts), &p));
  unlink(path); /* the recording is written to the open file, then gone */
  return p;
}

/* The message of err (owned by the caller), or "" for none. */
static char* message_of(const af_error_t* err) {
  const char* m = err ? af_error_message(err) : "";
  char* out = malloc(strlen(m) + 1);
  strcpy(out, m);
  return out;
}

/* One call of [{"role":"system",...}, {"role":"user",...}] messages. */
static af_error_t* call_msgs(const char* msgs_json, const char* model, const char* params,
                             af_value_t** out) {
  af_value_t* msgs = mk_json(msgs_json);
  af_value_t* m = mk_str(model);
  af_value_t* p = params ? mk_json(params) : NULL;
  af_error_t* e = af_lm_call_ex(ctx, msgs, m, p, out);
  af_value_free(msgs);
  af_value_free(m);
  af_value_free(p);
  return e;
}

/* "model|q", the server's plain answer (in a static buffer). */
static const char* want(const char* model, const char* q) {
  static char buf[256];
  snprintf(buf, sizeof buf, "%s|%s", model, q);
  return buf;
}

/* The str result of a call to model with content, into buf ("" on error). */
static const char* answer(const char* model, const char* content, char* buf, size_t cap) {
  af_value_t* out = NULL;
  buf[0] = 0;
  if (CHECK_OK(call_model(model, content, &out))) str_of_at(out, buf, cap, __FILE__, __LINE__);
  af_value_free(out);
  return buf;
}

static void plain_calls_and_the_system_prompt(void) {
  struct server s = server_start();
  size_t i;
  for (i = 0; i < NWIRES; i++) {
    const struct wire* w = &kWires[i];
    af_provider_t* p = wire_for(&s, w, 2, NULL);
    af_value_t* out = NULL;
    char buf[4096];
    const char* got;
    if (!p) continue;
    printf("  %s\n", w->type);
    route("*", p);
    got = answer("ok", "hello", buf, sizeof buf);
    CHECK_STR_EQ(got, "ok|hello");
    /* Non-ASCII text and quotes survive both ways. */
    got = answer("ok", "caf\xc3\xa9 \\\"q\\\"", buf, sizeof buf);
    CHECK_STR_EQ(got, "ok|caf\xc3\xa9 \"q\"");
    /* The system prompt: Anthropic's top-level "system" (a system message
     * among its messages is a 400), Ollama's first message; and the body's
     * other fields (Anthropic's default max_tokens, Ollama's "stream"). */
    if (CHECK_OK(call_msgs("[{\"role\":\"system\",\"content\":\"be brief\"},"
                           "{\"role\":\"user\",\"content\":\"hi\"},{\"role\":\"assistant\",\"content\":\"yes?\"},"
                           "{\"role\":\"user\",\"content\":\"again\"}]",
                           "show-request", NULL, &out))) {
      str_of_at(out, buf, sizeof buf, __FILE__, __LINE__);
      if (i == 0) {
        CHECK_CONTAINS(buf, "\"max_tokens\":1024,\"system\":\"be brief\",\"messages\":[{\"role\":\"user\","
                            "\"content\":\"hi\"},{\"role\":\"assistant\",\"content\":\"yes?\"},{\"role\":\"user\","
                            "\"content\":\"again\"}]}");
        CHECK_NOT_CONTAINS(buf, "\"stream\"");
      } else {
        CHECK_CONTAINS(buf, "\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"},{\"role\":\"user\","
                            "\"content\":\"hi\"},{\"role\":\"assistant\",\"content\":\"yes?\"},{\"role\":\"user\","
                            "\"content\":\"again\"}],\"stream\":false}");
      }
    }
    af_value_free(out);
    out = NULL;
    /* Anthropic: the key goes in x-api-key (the server refuses an
     * Authorization header). */
    if (i == 0) {
      got = answer("show-auth", "k", buf, sizeof buf);
      CHECK_STR_EQ(got, KEY);
    }
    af_provider_free(p);
  }
  server_stop(&s);
}

/* The call's sampling params under each API's names, over the provider's
 * "extra": Anthropic's stop_sequences and no seed (it has none: the server
 * refuses unknown fields); Ollama's options with num_predict. */
static void sampling_params_use_each_apis_names(void) {
  struct server s = server_start();
  size_t i;
  for (i = 0; i < NWIRES; i++) {
    const struct wire* w = &kWires[i];
    af_provider_t* p = wire_for(&s, w, 2, i == 0 ? "\"extra\":{\"top_k\":5,\"temperature\":1}"
                                              : "\"extra\":{\"num_ctx\":2048,\"num_predict\":99}");
    af_value_t* out = NULL;
    char buf[4096];
    if (!p) continue;
    printf("  %s\n", w->type);
    route("*", p);
    if (CHECK_OK(call_msgs("[{\"role\":\"user\",\"content\":\"p\"}]", "show-request",
                           "{\"temperature\":0.5,\"max_tokens\":7,\"stop\":[\"END\"],\"seed\":3}", &out))) {
      str_of_at(out, buf, sizeof buf, __FILE__, __LINE__);
      if (i == 0) {
        CHECK_CONTAINS(buf, "\"top_k\":5");
        CHECK_CONTAINS(buf, "\"temperature\":0.5"); /* the call's, over extra's 1 */
        CHECK_CONTAINS(buf, "\"max_tokens\":7");
        CHECK_CONTAINS(buf, "\"stop_sequences\":[\"END\"]");
        CHECK_NOT_CONTAINS(buf, "seed");
        CHECK_NOT_CONTAINS(buf, "1024");
      } else {
        CHECK_CONTAINS(buf, "\"options\":{\"num_ctx\":2048,\"num_predict\":7,");
        CHECK_CONTAINS(buf, "\"temperature\":0.5");
        CHECK_CONTAINS(buf, "\"stop\":[\"END\"]");
        CHECK_CONTAINS(buf, "\"seed\":3");
        CHECK_NOT_CONTAINS(buf, "max_tokens");
      }
    }
    af_value_free(out);
    af_provider_free(p);
  }
  /* Anthropic's max_tokens option and anthropic_version (which the server
   * checks: another version is a 400 quoted in the error). */
  {
    af_provider_t* p = wire_for(&s, &kWires[0], 2, "\"max_tokens\":33");
    af_value_t* out = NULL;
    char buf[4096];
    const char* got;
    if (p) {
      route("*", p);
      got = answer("show-request", "m", buf, sizeof buf);
      CHECK_CONTAINS(got, "\"max_tokens\":33,");
      af_provider_free(p);
    }
    p = wire_for(&s, &kWires[0], 2, "\"anthropic_version\":\"2023-01-01\"");
    if (p) {
      route("*", p);
      CHECK_ERR(call_model("ok", "v", &out), AF_ERR_PROVIDER, "HTTP 400",
                "anthropic-version: expected 2023-06-01, found '2023-01-01'");
      af_provider_free(p);
    }
  }
  server_stop(&s);
}

static void schema_calls(void) {
  struct server s = server_start();
  size_t i;
  for (i = 0; i < NWIRES; i++) {
    const struct wire* w = &kWires[i];
    af_provider_t* p = wire_for(&s, w, 2, "\"schema_retries\":1");
    af_value_t *msgs = user_msg("rate"), *schema = mk_json(kSchema), *model = NULL, *out = NULL;
    char buf[4096];
    if (!p) goto next;
    printf("  %s\n", w->type);
    route("*", p);
    model = mk_str("schema-ok");
    if (CHECK_OK(af_lm_schema_call(ctx, msgs, model, schema, &out))) CHECK_JSON(out, "{\"answer\":\"fine\",\"score\":7}");
    af_value_free(out);
    af_value_free(model);
    out = NULL;
    /* What the server was told of the schema: Anthropic in "system" (it has
     * no response_format), Ollama in "format" (a JSON Schema object). */
    model = mk_str("show-format");
    if (CHECK_OK(af_lm_schema_call(ctx, msgs, model, schema, &out))) {
      af_value_t* a = NULL;
      if (CHECK_OK(af_value_key(out, "answer", 6, &a))) {
        str_of_at(a, buf, sizeof buf, __FILE__, __LINE__);
        if (i == 0) {
          CHECK_CONTAINS(buf, "Reply with only a JSON value that matches this JSON Schema:\n{\"type\":\"object\"");
          CHECK_CONTAINS(buf, "\"score\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":10,\"enum\":[1,2,");
        } else {
          CHECK_CONTAINS(buf, "{\"type\": \"object\", \"properties\": {\"answer\": {\"type\": \"string\"}");
          CHECK_CONTAINS(buf, "\"required\": [\"answer\", \"score\"]");
        }
      }
      af_value_free(a);
    }
    af_value_free(out);
    af_value_free(model);
    out = NULL;
    /* An invalid reply is re-asked with a correction turn (an assistant
     * message, which both formats carry as a message). */
    model = mk_str("schema-fix");
    if (CHECK_OK(af_lm_schema_call(ctx, msgs, model, schema, &out))) CHECK_JSON(out, "{\"answer\":\"fine\",\"score\":7}");
    af_value_free(out);
    out = NULL;
    af_value_free(model);
    model = mk_str("schema-bad");
    CHECK_ERR(af_lm_schema_call(ctx, msgs, model, schema, &out), AF_ERR_SCHEMA, "$.score", "99");
    af_value_free(model);
    /* Ollama: the schema also reaches the model as a system instruction,
     * joined to the conversation's own. */
    if (i == 1) {
      af_value_t* two = mk_json("[{\"role\":\"system\",\"content\":\"be fair\"},{\"role\":\"user\",\"content\":\"r\"}]");
      model = mk_str("show-messages");
      out = NULL;
      if (CHECK_OK(af_lm_schema_call(ctx, two, model, schema, &out))) {
        af_value_t* a = NULL;
        if (CHECK_OK(af_value_key(out, "answer", 6, &a))) {
          str_of_at(a, buf, sizeof buf, __FILE__, __LINE__);
          CHECK_CONTAINS(buf, "[{\"role\": \"system\", \"content\": \"be fair\\n\\nReply with only a JSON value");
        }
        af_value_free(a);
      }
      af_value_free(out);
      af_value_free(model);
      af_value_free(two);
    }
  next:
    af_value_free(msgs);
    af_value_free(schema);
    af_provider_free(p);
  }
  server_stop(&s);
}

/* ---- streaming ---------------------------------------------------------- */

/* Runs (q, model) -> lm_call through a program with a stream callback and a
 * summary; c is reset first. */
static af_error_t* run_streamed(af_program_t* prog, const char* q, const char* model, struct streamed* c,
                                af_bytes_t* summary, af_value_t** out) {
  af_value_t* in[2];
  af_run_options_t o = streaming_into(c);
  af_error_t* e;
  in[0] = mk_str(q);
  in[1] = mk_str(model);
  o.summary = summary;
  e = af_program_call_with(ctx, prog, (const af_value_t* const*)in, 2, &o, out);
  af_value_free(in[0]);
  af_value_free(in[1]);
  return e;
}

static void streamed_calls(void) {
  struct server s = server_start();
  struct streamed c;
  af_ir_t* ir = TRACE(lm_ask, NULL, "[\"q\", \"m\"]", NULL);
  af_program_t* prog = NULL;
  size_t i;
  memset(&c, 0, sizeof c);
  pthread_mutex_init(&c.mu, NULL);
  if (!ir || !CHECK_OK(af_compile(ctx, ir, &prog))) goto done;
  for (i = 0; i < NWIRES; i++) {
    const struct wire* w = &kWires[i];
    af_provider_t* p = wire_for(&s, w, 2, NULL);
    af_value_t* out = NULL;
    af_bytes_t summary = {NULL, 0};
    if (!p) continue;
    printf("  %s\n", w->type);
    route("*", p);
    /* Text in pieces of 4 characters, equal to the result; the usage of the
     * stream's own counts (Anthropic: message_start and message_delta;
     * Ollama: the done line) reaches the stats and the summary. */
    if (CHECK_OK(run_streamed(prog, "streaming is fun", "ok", &c, &summary, &out))) {
      CHECK_JSON(out, "\"ok|streaming is fun\"");
      CHECK_STR_EQ(c.text, "ok|streaming is fun");
      CHECK_INT_EQ(c.pieces, 5);
      CHECK_INT_EQ(c.resets, 0);
      CHECK(summary.data != NULL);
      if (summary.data) CHECK_CONTAINS((const char*)summary.data, "\"prompt_tokens\":2,\"completion_tokens\":19");
    }
    CHECK_INT_EQ(stat_field(p, "prompt_tokens"), 2);
    CHECK_INT_EQ(stat_field(p, "completion_tokens"), 19);
    af_bytes_free(&summary);
    af_value_free(out);
    out = NULL;
    /* Cut once after two pieces: retried, the host told to start over. */
    if (CHECK_OK(run_streamed(prog, w->type, "stream-cutx1", &c, NULL, &out))) {
      CHECK_STR_EQ(c.text, want("stream-cutx1", w->type));
      CHECK(c.resets >= 1);
    }
    af_value_free(out);
    out = NULL;
    CHECK_INT_EQ(server_attempts(&s, "stream-cutx1", w->type), 2);
    /* Cut every time: PROVIDER after the retries, naming the missing end. */
    CHECK_ERR(run_streamed(prog, w->type, "stream-cutx9", &c, NULL, &out), AF_ERR_PROVIDER,
              "the stream ended before the reply did", w->stream_end, "attempt 3 of 3");
    CHECK_INT_EQ(server_attempts(&s, "stream-cutx9", w->type), 3);
    /* Garbage and error events fail at once. */
    CHECK_ERR(run_streamed(prog, w->type, "stream-garbage", &c, NULL, &out), AF_ERR_PROVIDER, "bad stream",
              "is not valid JSON", "{this is not json");
    CHECK_INT_EQ(server_attempts(&s, "stream-garbage", w->type), 1);
    CHECK_ERR(run_streamed(prog, w->type, "stream-error", &c, NULL, &out), AF_ERR_PROVIDER,
              "the stream reported an error", w->stream_error);
    CHECK_INT_EQ(server_attempts(&s, "stream-error", w->type), 1);
    /* A reply that is not a stream is read whole: not JSON here. */
    CHECK_ERR(run_streamed(prog, w->type, "stream-html", &c, NULL, &out), AF_ERR_PROVIDER,
              "the response is not valid JSON", "Gateway says hello");
    /* A stream that never ends is a TIMEOUT (per attempt, retried). */
    CHECK_ERR(run_streamed(prog, w->type, "stream-forever", &c, NULL, &out), AF_ERR_TIMEOUT, "no reply within 400 ms");
    af_provider_free(p);
  }
done:
  af_program_free(prog);
  af_ir_free(ir);
  server_stop(&s);
}

/* ---- faults ------------------------------------------------------------- */

static void retries_after_429_529_and_5xx(void) {
  struct server s = server_start();
  size_t i;
  for (i = 0; i < NWIRES; i++) {
    const struct wire* w = &kWires[i];
    af_provider_t* p = wire_for(&s, w, 2, NULL);
    af_value_t* out = NULL;
    char buf[256];
    const char* got;
    double t0;
    if (!p) continue;
    printf("  %s\n", w->type);
    route("*", p);
    /* 429 with Retry-After: 1, clamped to backoff_max_ms (50). */
    t0 = now_ms();
    got = answer("429x1", w->type, buf, sizeof buf);
    CHECK_STR_EQ(got, want("429x1", w->type));
    CHECK(now_ms() - t0 < 900);
    CHECK_INT_EQ(server_attempts(&s, "429x1", w->type), 2);
    got = answer("529x1", w->type, buf, sizeof buf);
    CHECK_STR_EQ(got, want("529x1", w->type));
    CHECK_INT_EQ(server_attempts(&s, "529x1", w->type), 2);
    got = answer("500x2", w->type, buf, sizeof buf);
    CHECK_STR_EQ(got, want("500x2", w->type));
    CHECK_INT_EQ(server_attempts(&s, "500x2", w->type), 3);
    /* Always 500: PROVIDER after 1 + 2 attempts, the format's error body
     * quoted. */
    CHECK_ERR(call_model("500always", w->type, &out), AF_ERR_PROVIDER, "HTTP 500", "always failing",
              "attempt 3 of 3", i == 0 ? "api_error" : "{\"error\": \"always failing\"}");
    CHECK_INT_EQ(server_attempts(&s, "500always", w->type), 3);
    /* Three 429s exhaust the retries. */
    CHECK_ERR(call_model("429x5", w->type, &out), AF_ERR_PROVIDER, "HTTP 429", "rate limited");
    af_provider_free(p);
  }
  server_stop(&s);
}

static void timeouts(void) {
  struct server s = server_start();
  size_t i;
  for (i = 0; i < NWIRES; i++) {
    const struct wire* w = &kWires[i];
    af_provider_t* p = wire_for(&s, w, 1, NULL);
    af_value_t* out = NULL;
    double t0 = now_ms();
    if (!p) continue;
    printf("  %s\n", w->type);
    route("*", p);
    CHECK_ERR(call_model("slow", w->type, &out), AF_ERR_TIMEOUT, "no reply within 400 ms", "attempt 2 of 2");
    CHECK(now_ms() - t0 < 2500);
    CHECK_INT_EQ(server_attempts(&s, "slow", w->type), 2);
    af_provider_free(p);
  }
  server_stop(&s);
}

/* Bodies that are not replies fail with PROVIDER at once, quoting the
 * server safely (escapes escaped, the key redacted). */
static void bad_and_error_bodies(void) {
  struct server s = server_start();
  size_t i;
  for (i = 0; i < NWIRES; i++) {
    const struct wire* w = &kWires[i];
    af_provider_t* p = wire_for(&s, w, 2, NULL);
    af_value_t* out = NULL;
    af_error_t* e;
    char* m;
    if (!p) continue;
    printf("  %s\n", w->type);
    route("*", p);
    CHECK_ERR(call_model("malformed", w->type, &out), AF_ERR_PROVIDER, "the response is not valid JSON",
              "{this is not json");
    CHECK_INT_EQ(server_attempts(&s, "malformed", w->type), 1);
    CHECK_ERR(call_model("nocontent", w->type, &out), AF_ERR_PROVIDER, w->no_content);
    CHECK_ERR(call_model("html", w->type, &out), AF_ERR_PROVIDER, "not valid JSON", "<html>");
    CHECK_ERR(call_model("error-200", w->type, &out), AF_ERR_PROVIDER, "the server reported an error",
              "model 'error-200' is not loaded");
    CHECK_ERR(call_model("huge-body", w->type, &out), AF_ERR_PROVIDER, "larger than 64 MiB");
    e = call_model("bad-request", w->type, &out);
    m = message_of(e);
    /* The server's JSON escapes its escape; shown as it came. */
    CHECK_ERR(e, AF_ERR_PROVIDER, "HTTP 400", w->error_body, "\\u001b[31mbad request", "prompt is too long");
    CHECK(strchr(m, 0x1b) == NULL);
    free(m);
    CHECK_INT_EQ(server_attempts(&s, "bad-request", w->type), 1);
    if (i == 0) {
      CHECK_ERR(call_model("refusal", w->type, &out), AF_ERR_PROVIDER, "the model refused");
      /* A server echoing the key finds it redacted. */
      e = call_model("echo-auth-error", w->type, &out);
      m = message_of(e);
      CHECK_ERR(e, AF_ERR_PROVIDER, "HTTP 400", "bad key: [redacted]", "\\x1b[2J");
      CHECK(strstr(m, KEY) == NULL);
      free(m);
    }
    af_provider_free(p);
  }
  server_stop(&s);
}

/* Usage counts (Anthropic's input/output_tokens, Ollama's
 * prompt_eval_count/eval_count; the server sends len(model) and
 * len(reply)) reach the provider stats and the run summary, also through a
 * replay provider recording the calls. */
static void usage_reaches_stats_and_summary(void) {
  struct server s = server_start();
  af_ir_t* ir = TRACE(lm_ask, NULL, "[\"q\", \"m\"]", NULL);
  af_program_t* prog = NULL;
  size_t i;
  if (!ir || !CHECK_OK(af_compile(ctx, ir, &prog))) goto done;
  for (i = 0; i < 2 * NWIRES; i++) {
    const struct wire* w = &kWires[i % NWIRES];
    af_provider_t* p = i < NWIRES ? wire_for(&s, w, 2, NULL) : recorded_wire_for(&s, w);
    af_value_t *out = NULL, *in[2] = {NULL, NULL};
    af_run_options_t o;
    af_bytes_t summary = {NULL, 0};
    char buf[64];
    const char* got;
    if (!p) continue;
    printf("  %s%s\n", w->type, i < NWIRES ? "" : ", recorded");
    route("*", p);
    got = answer("ok", "hello", buf, sizeof buf);
    CHECK_STR_EQ(got, "ok|hello");
    CHECK_ERR(call_model("nocontent", "x", &out), AF_ERR_PROVIDER, w->no_content);
    CHECK_INT_EQ(stat_field(p, "prompt_tokens"), 2);
    CHECK_INT_EQ(stat_field(p, "completion_tokens"), 8);
    in[0] = mk_str("hi there");
    in[1] = mk_str("ok");
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.summary = &summary;
    CHECK_OK(af_program_call_with(ctx, prog, (const af_value_t* const*)in, 2, &o, &out));
    CHECK(summary.data != NULL);
    if (summary.data)
      CHECK_CONTAINS((const char*)summary.data, "\"prompt_tokens\":2,\"completion_tokens\":11");
    CHECK_INT_EQ(stat_field(p, "prompt_tokens"), 4);
    CHECK_INT_EQ(stat_field(p, "completion_tokens"), 19);
    af_bytes_free(&summary);
    af_value_free(out);
    af_value_free(in[0]);
    af_value_free(in[1]);
    af_provider_free(p);
  }
done:
  af_program_free(prog);
  af_ir_free(ir);
  server_stop(&s);
}

/* A route's failing anthropic/ollama provider falls back to the next one
 * after its own retries, for a PROVIDER error and a TIMEOUT alike. */
static void fallback_to_another_provider(void) {
  struct server s = server_start();
  size_t i;
  for (i = 0; i < NWIRES; i++) {
    const struct wire* w = &kWires[i];
    af_provider_t* ps[2];
    af_value_t* out = NULL;
    char buf[128];
    const char* got;
    ps[0] = wire_for(&s, w, 1, NULL);
    ps[1] = echo_with(NULL);
    if (!ps[0] || !ps[1]) goto next;
    printf("  %s\n", w->type);
    CHECK_OK(af_context_route_fallback(ctx, "*", 1, ps, 2));
    got = answer("500always", w->type, buf, sizeof buf);
    CHECK_STR_EQ(got, want("500always", w->type));
    CHECK_INT_EQ(server_attempts(&s, "500always", w->type), 2);
    got = answer("slow", w->type, buf, sizeof buf);
    CHECK_STR_EQ(got, want("slow", w->type));
    got = answer("bad-request", w->type, buf, sizeof buf);
    CHECK_STR_EQ(got, want("bad-request", w->type));
    CHECK_INT_EQ(stat_field(ps[0], "finished"), 3);
    CHECK_INT_EQ(stat_field(ps[1], "finished"), 3);
    /* A working provider answers itself. */
    got = answer("ok", w->type, buf, sizeof buf);
    CHECK_STR_EQ(got, want("ok", w->type));
    CHECK_INT_EQ(stat_field(ps[1], "finished"), 3);
    af_value_free(out);
  next:
    af_provider_free(ps[0]);
    af_provider_free(ps[1]);
  }
  server_stop(&s);
}

/* af_provider_new: every built-in type by name, and bad specs refused. */
static void providers_are_made_from_specs(void) {
  static const char* const good[] = {
      "{\"type\":\"echo\",\"latency_ms\":1}",
      "{\"type\":\"openai\",\"base_url\":\"http://127.0.0.1:9\"}",
      "{\"type\":\"anthropic\",\"base_url\":\"http://127.0.0.1:9\",\"api_key_env\":\"\"}",
      "{\"type\":\"ollama\"}",
  };
  size_t i;
  af_provider_t* p = NULL;
  for (i = 0; i < sizeof good / sizeof good[0]; i++) {
    if (CHECK_OK(af_provider_new(good[i], strlen(good[i]), &p))) CHECK(p != NULL);
    af_provider_free(p);
    p = NULL;
  }
#define SPEC_ERR(spec, fragment) \
  CHECK_ERR(af_provider_new(spec, strlen(spec), &p), AF_ERR_INVALID_ARGUMENT, fragment)
  SPEC_ERR("{\"type\":\"gemini\"}", "unknown type \"gemini\" (known: echo, openai, anthropic, ollama, replay)");
  CHECK_NULLED(p, af_provider_free);
  SPEC_ERR("{\"base_url\":\"x\"}", "\"type\"");
  SPEC_ERR("[1]", "object");
  SPEC_ERR("{\"type\":\"ollama\",\"api_key_env\":\"K\"}", "api_key_env");
#undef SPEC_ERR
  CHECK_ERR(af_provider_new("{}", 2, NULL), AF_ERR_INVALID_ARGUMENT, "out");
}

int main(int argc, char** argv) {
  static const struct test_case cases[] = {
      CASE(plain_calls_and_the_system_prompt),
      CASE(sampling_params_use_each_apis_names),
      CASE(schema_calls),
      CASE(streamed_calls),
      CASE(retries_after_429_529_and_5xx),
      CASE(timeouts),
      CASE(bad_and_error_bodies),
      CASE(usage_reaches_stats_and_summary),
      CASE(fallback_to_another_provider),
      CASE(providers_are_made_from_specs),
  };
  setenv("AF_WIRE_TEST_KEY", KEY, 1);
  return run_cases(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
