/* Tool calling through the three HTTP wire formats (openai, anthropic,
 * ollama), against the local server (tests/lm_server/server.py), which
 * offers a scripted tool-calling model whenever a request carries tools: it
 * calls the first tool with arguments made from its JSON Schema, then, once
 * the conversation holds a tool result, answers "done: <result>". The
 * server checks the tool turns as strictly as the real APIs (OpenAI's
 * tool_call_id, Anthropic's tool_result blocks right after the tool_use
 * turn in alternating roles, Ollama's tool_name), so a wrong wire format
 * fails here. Each case runs for every type, plain and streamed: a call,
 * af_tool_results, the final answer; an invalid call re-asked (and SCHEMA
 * without re-asks); a malformed call from a hostile server (PROVIDER).
 * Providers are made from a spec by type name (af_provider_new). */
#include "check.h"
#include "lm_helpers.h"

#include <pthread.h>

#define KEY "sk-ant-tool-test-0123456789"

static const char* const kTypes[] = {"openai", "anthropic", "ollama"};
#define NTYPES (sizeof kTypes / sizeof kTypes[0])

/* Two tools: the server calls the first, with the smallest valid
 * arguments (a str of minLength 2, an int's minimum, true, the first enum
 * value). */
static const char* kTools =
    "[{\"name\":\"lookup\",\"description\":\"Looks a word up.\",\"parameters\":{"
    "\"word\":{\"type\":\"str\",\"min\":2},\"count\":{\"type\":\"int\",\"min\":3,\"max\":9},"
    "\"exact\":{\"type\":\"bool\"},\"lang\":{\"type\":\"enum\",\"values\":[\"fr\",\"en\"]}}},"
    "{\"name\":\"other\",\"description\":\"Never called.\"}]";
static const char* kArguments = "[\"{\\\"word\\\":\\\"xx\\\",\\\"count\\\":3,\\\"exact\\\":true,\\\"lang\\\":\\\"fr\\\"}\"]";

/* A provider of type `type` for the server, with options `up` (JSON
 * members, or NULL). */
static af_provider_t* provider_for(const struct server* s, const char* type, const char* up) {
  char spec[1024];
  af_provider_t* p = NULL;
  snprintf(spec, sizeof spec,
           "{\"type\":\"%s\",\"name\":\"%s\",\"base_url\":\"http://127.0.0.1:%d%s\",\"timeout_ms\":2000,"
           "\"max_retries\":1,\"backoff_ms\":10%s%s%s}",
           type, type, s->port, strcmp(type, "openai") == 0 ? "/v1" : "",
           strcmp(type, "anthropic") == 0 ? ",\"api_key_env\":\"AF_TOOL_TEST_KEY\"" : "", up ? "," : "",
           up ? up : "");
  CHECK_OK(af_provider_new(spec, strlen(spec), &p));
  return p;
}

/* field `key` of the dict v (owned), or NULL with a recorded failure. */
static af_value_t* field(const af_value_t* v, const char* key) {
  af_value_t* f = NULL;
  if (!v || !CHECK_OK(af_value_key(v, key, strlen(key), &f))) return NULL;
  return f;
}

static void check_field(const af_value_t* v, const char* key, const char* json) {
  af_value_t* f = field(v, key);
  if (f) CHECK_JSON(f, json);
  af_value_free(f);
}

/* The traced step: (q, history, model) -> lm_tool_call([user q], history,
 * model, kTools). */
static af_error_t* tool_step(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                             af_value_t** out) {
  af_value_t *msgs = user_turn(c, in[0]), *tools = NULL;
  af_error_t* e;
  (void)ud;
  (void)n;
  e = af_value_from_json(c, kTools, strlen(kTools), &tools);
  if (!e) e = af_lm_tool_call(c, msgs, in[1], in[2], tools, NULL, out);
  af_value_free(msgs);
  af_value_free(tools);
  return e;
}

/* ---- streaming ---------------------------------------------------------- */


/* One step: eager when prog is NULL, else through prog with the stream
 * callback collecting into c (reset first). */
static af_error_t* step(af_program_t* prog, struct streamed* c, const char* q, const af_value_t* history,
                        const char* model, af_value_t** out) {
  af_value_t* in[3];
  af_error_t* e;
  in[0] = mk_str(q);
  in[1] = af_value_clone(history);
  in[2] = mk_str(model);
  if (!prog) {
    e = tool_step(NULL, ctx, (const af_value_t* const*)in, 3, out);
  } else {
    af_run_options_t o = streaming_into(c);
    e = af_program_call_with(ctx, prog, (const af_value_t* const*)in, 3, &o, out);
  }
  af_value_free(in[0]);
  af_value_free(in[1]);
  af_value_free(in[2]);
  return e;
}

/* Runs fn(prog, c) for every type, plain (prog NULL) and streamed. */
static void for_each_type_and_mode(void (*fn)(const struct server*, const char*, af_program_t*,
                                              struct streamed*)) {
  struct server s = server_start();
  struct streamed c;
  af_ir_t* ir = TRACE(tool_step, NULL, "[\"q\", \"\", \"m\"]", NULL);
  af_program_t* prog = NULL;
  size_t i;
  memset(&c, 0, sizeof c);
  pthread_mutex_init(&c.mu, NULL);
  if (ir && CHECK_OK(af_compile(ctx, ir, &prog))) {
    for (i = 0; i < NTYPES; i++) {
      printf("  %s\n", kTypes[i]);
      fn(&s, kTypes[i], NULL, &c);
      printf("  %s, streamed\n", kTypes[i]);
      fn(&s, kTypes[i], prog, &c);
    }
  }
  af_program_free(prog);
  af_ir_free(ir);
  server_stop(&s);
}

/* ---- cases -------------------------------------------------------------- */

/* A call of the first tool, its result given back, the final answer. */
static void call_then_answer(const struct server* s, const char* type, af_program_t* prog,
                             struct streamed* c) {
  af_provider_t* p = provider_for(s, type, NULL);
  af_value_t *empty = mk_str(""), *out = NULL, *out2 = NULL, *turn = NULL, *results = NULL, *history = NULL;
  /* Anthropic's reply has a text block before its tool_use block. */
  const char* text = strcmp(type, "anthropic") == 0 ? "\"Calling lookup.\"" : "\"\"";
  if (!p) goto done;
  route("*", p);
  if (!CHECK_OK(step(prog, c, "what is a cat?", empty, "ok", &out))) goto done;
  check_field(out, "called", "true");
  check_field(out, "names", "[\"lookup\"]");
  check_field(out, "arguments", kArguments);
  check_field(out, "text", text);
  if (prog) {
    char want[64];
    snprintf(want, sizeof want, "%.*s", (int)strlen(text) - 2, text + 1);
    CHECK_STR_EQ(c->text, want); /* the text streamed as it came */
  }
  /* The server refuses tool turns in the wrong shape: the second request
   * (the turn and its result, in the format's form) is the wire's test. */
  turn = field(out, "turn");
  results = mk_json("[\"a small feline\"]");
  if (!turn || !CHECK_OK(af_tool_results(ctx, empty, turn, results, &history))) goto done;
  if (!CHECK_OK(step(prog, c, "what is a cat?", history, "ok", &out2))) goto done;
  check_field(out2, "called", "false");
  check_field(out2, "names", "[]");
  check_field(out2, "text", "\"done: a small feline\"");
  if (prog) CHECK_STR_EQ(c->text, "done: a small feline");
done:
  af_value_free(empty);
  af_value_free(out);
  af_value_free(out2);
  af_value_free(turn);
  af_value_free(results);
  af_value_free(history);
  af_provider_free(p);
}

static void tool_calls_and_results(void) { for_each_type_and_mode(call_then_answer); }

/* Arguments missing a required property, or an unknown tool: re-asked
 * (the server answers the correction turn validly), then valid; SCHEMA
 * when the provider allows no re-ask (the default). */
static void reask(const struct server* s, const char* type, af_program_t* prog, struct streamed* c) {
  af_provider_t *p = provider_for(s, type, "\"schema_retries\":1"), *strict = provider_for(s, type, NULL);
  af_value_t *empty = mk_str(""), *out = NULL;
  if (!p || !strict) goto done;
  route("*", p);
  if (CHECK_OK(step(prog, c, "re-ask args", empty, "bad-args", &out))) {
    check_field(out, "names", "[\"lookup\"]");
    check_field(out, "arguments", kArguments);
  }
  af_value_free(out);
  out = NULL;
  if (CHECK_OK(step(prog, c, "re-ask tool", empty, "bad-tool", &out))) check_field(out, "names", "[\"lookup\"]");
  af_value_free(out);
  out = NULL;
  route("*", strict);
  CHECK_ERR(step(prog, c, "no re-ask", empty, "bad-args", &out), AF_ERR_SCHEMA, "lookup", "word");
  CHECK_ERR(step(prog, c, "no re-ask", empty, "bad-tool", &out), AF_ERR_SCHEMA, "unknown tool",
            "no_such_tool");
done:
  af_value_free(empty);
  af_value_free(out);
  af_provider_free(p);
  af_provider_free(strict);
}

static void invalid_calls_are_reasked(void) { for_each_type_and_mode(reask); }

/* A server's malformed tool calls: PROVIDER, naming what is wrong. */
static void hostile(const struct server* s, const char* type, af_program_t* prog, struct streamed* c) {
  af_provider_t* p = provider_for(s, type, NULL);
  af_value_t *empty = mk_str(""), *out = NULL;
  const int anthropic = strcmp(type, "anthropic") == 0;
  if (!p) goto done;
  route("*", p);
  CHECK_ERR(step(prog, c, "q", empty, "hostile-entry", &out), AF_ERR_PROVIDER,
            anthropic ? "no \"id\"" : "is not an object");
  CHECK_ERR(step(prog, c, "q", empty, "hostile-noname", &out), AF_ERR_PROVIDER, "name");
  CHECK_ERR(step(prog, c, "q", empty, "hostile-args", &out), AF_ERR_PROVIDER,
            anthropic ? (prog ? "partial_json" : "no \"input\" object")
                      : "arguments");
done:
  af_value_free(empty);
  af_value_free(out);
  af_provider_free(p);
}

static void hostile_calls_are_provider_errors(void) { for_each_type_and_mode(hostile); }

int main(int argc, char** argv) {
  static const struct test_case cases[] = {
      CASE(tool_calls_and_results),
      CASE(invalid_calls_are_reasked),
      CASE(hostile_calls_are_provider_errors),
  };
  setenv("AF_TOOL_TEST_KEY", KEY, 1);
  return run_cases(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
