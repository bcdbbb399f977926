/* build_options_test.c — the providers a build of libaf has. Compiled in
 * every build, it checks whichever one it is: AF_WITH_HTTP_PROVIDERS (set by
 * tests/CMakeLists.txt from AF_WITH_OPENAI) is 1 when libaf has the HTTP
 * providers (openai, anthropic, ollama; libcurl), 0 when it was built with
 * -DAF_WITH_OPENAI=OFF: then creating one is NOT_FOUND saying how to get
 * it, and echo, replay and host providers work as ever. */
#include "check.h"

#ifndef AF_WITH_HTTP_PROVIDERS
#error "AF_WITH_HTTP_PROVIDERS (0 or 1) is set by tests/CMakeLists.txt"
#endif

/* A spec of each HTTP provider that needs no server to be created. */
static const char* const kHttpSpecs[][2] = {
    {"openai", "{\"type\":\"openai\",\"base_url\":\"http://127.0.0.1:9\"}"},
    {"anthropic", "{\"type\":\"anthropic\",\"base_url\":\"http://127.0.0.1:9\",\"api_key_env\":\"\"}"},
    {"ollama", "{\"type\":\"ollama\"}"},
};

/* Checks the outcome of creating an HTTP provider `type` in this build and
 * frees what it made. */
static void check_http_provider(af_error_t* err, af_provider_t* p, const char* type) {
  char what[64];
  snprintf(what, sizeof what, "the %s provider is not in this build of libaf", type);
#if AF_WITH_HTTP_PROVIDERS
  (void)what;
  if (CHECK_OK(err)) CHECK(p != NULL);
#else
  CHECK_ERR(err, AF_ERR_NOT_FOUND, what, "built with -DAF_WITH_OPENAI=OFF", "rebuild with -DAF_WITH_OPENAI=ON",
            "register a host provider (af_provider_host_new)");
  CHECK(p == NULL);
#endif
  af_provider_free(p);
}

static void http_providers_are_there_or_not_found(void) {
  size_t i;
  af_provider_t* p = NULL;
  const char* opts = "{\"base_url\":\"http://127.0.0.1:9\"}";
  af_error_t* err;
  for (i = 0; i < sizeof kHttpSpecs / sizeof kHttpSpecs[0]; i++) {
    p = (af_provider_t*)&p; /* a sentinel: a failure must set it to NULL */
    err = af_provider_new(kHttpSpecs[i][1], strlen(kHttpSpecs[i][1]), &p);
    check_http_provider(err, p, kHttpSpecs[i][0]);
  }
  p = (af_provider_t*)&p;
  err = af_provider_openai_new(opts, strlen(opts), &p);
  check_http_provider(err, p, "openai");
}

/* A replay provider recording from an HTTP upstream needs that upstream. */
static void replay_of_an_http_upstream(void) {
  char spec[512];
  af_provider_t* p = NULL;
  af_error_t* err;
  snprintf(spec, sizeof spec,
           "{\"type\":\"replay\",\"path\":\"/tmp/af_build_options_%ld.jsonl\",\"mode\":\"record\","
           "\"upstream\":%s}",
           (long)getpid(), kHttpSpecs[0][1]);
  err = af_provider_new(spec, strlen(spec), &p);
  check_http_provider(err, p, "openai");
  snprintf(spec, sizeof spec, "/tmp/af_build_options_%ld.jsonl", (long)getpid());
  remove(spec);
}

/* Unknown types are still INVALID_ARGUMENT, listing the known ones. */
static void unknown_types_are_invalid(void) {
  const char* spec = "{\"type\":\"nope\"}";
  af_provider_t* p = NULL;
  CHECK_ERR(af_provider_new(spec, strlen(spec), &p), AF_ERR_INVALID_ARGUMENT, "unknown type \"nope\"", "openai");
  CHECK(p == NULL);
}

/* lm_call([user: text], "m") through whatever ctx routes "m" to; the answer
 * as a NUL-terminated copy in buf ("" on error). */
static const char* ask(const char* text, char* buf, size_t cap) {
  char json[256];
  af_value_t *msgs = NULL, *model = mk_str("m"), *out = NULL;
  const char* s = NULL;
  size_t n = 0;
  buf[0] = 0;
  snprintf(json, sizeof json, "[{\"role\":\"user\",\"content\":\"%s\"}]", text);
  msgs = mk_json(json);
  if (msgs && model && CHECK_OK(af_lm_call(ctx, msgs, model, &out)) && CHECK_OK(af_value_get_str(out, &s, &n)))
    snprintf(buf, cap, "%.*s", (int)n, s);
  af_value_free(msgs);
  af_value_free(model);
  af_value_free(out);
  return buf;
}

static void route_to(af_provider_t* p) {
  CHECK_OK(af_context_route(ctx, "*", 1, p));
  af_provider_free(p);
}

static void echo_answers(void) {
  const char* spec = "{\"type\":\"echo\"}";
  af_provider_t* p = NULL;
  char buf[128];
  if (!CHECK_OK(af_provider_new(spec, strlen(spec), &p))) return;
  route_to(p);
  CHECK_STR_EQ(ask("hi", buf, sizeof buf), "m|hi");
}

static void answer_ok(void* ud, af_lm_request_t* req) {
  (void)ud;
  af_error_free(af_lm_request_complete(req, "from the host", 13));
}

static void a_host_provider_answers(void) {
  af_provider_t* p = NULL;
  char buf[128];
  if (!CHECK_OK(af_provider_host_new(answer_ok, NULL, NULL, &p))) return;
  route_to(p);
  CHECK_STR_EQ(ask("hi", buf, sizeof buf), "from the host");
}

/* Records echo's answer, then replays it with no upstream. */
static void replay_records_and_replays(void) {
  char path[128], spec[512], buf[128];
  af_provider_t* p = NULL;
  snprintf(path, sizeof path, "/tmp/af_build_options_%ld.jsonl", (long)getpid());
  remove(path);
  snprintf(spec, sizeof spec,
           "{\"type\":\"replay\",\"path\":\"%s\",\"mode\":\"record\",\"upstream\":{\"type\":\"echo\"}}", path);
  if (!CHECK_OK(af_provider_new(spec, strlen(spec), &p))) return;
  route_to(p);
  CHECK_STR_EQ(ask("recorded", buf, sizeof buf), "m|recorded");
  /* The replaying route replaces this one, whose file is then complete. */
  snprintf(spec, sizeof spec, "{\"type\":\"replay\",\"path\":\"%s\"}", path);
  if (CHECK_OK(af_provider_new(spec, strlen(spec), &p))) {
    route_to(p);
    CHECK_STR_EQ(ask("recorded", buf, sizeof buf), "m|recorded");
  }
  remove(path);
}

int main(int argc, char** argv) {
  static const struct test_case cases[] = {
      CASE(http_providers_are_there_or_not_found),
      CASE(replay_of_an_http_upstream),
      CASE(unknown_types_are_invalid),
      CASE(echo_answers),
      CASE(a_host_provider_answers),
      CASE(replay_records_and_replays),
  };
  printf("libaf %s, HTTP providers: %s\n", af_version(), AF_WITH_HTTP_PROVIDERS ? "yes" : "no");
  return run_cases(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
