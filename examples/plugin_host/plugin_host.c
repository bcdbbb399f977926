/* plugin_host: a host application that runs graphs saved by another process.
 * It registers its own host function ("lookup") by name and its own LM
 * provider through the host provider API — requests are answered on a
 * worker thread of the host, as a real plugin would answer them from its own
 * event loop — then loads the saved agent graph and runs it. A graph that
 * needs a function this host did not register fails with NOT_FOUND naming
 * it. Exits non-zero if anything differs from what is expected.
 * Usage: plugin_host AGENT.afg MISSING.afg */
#include <af/af.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The host's own tool: notes about a topic. */
static af_error_t* lookup(void* ud, const af_value_t* const* args, size_t n, af_value_t** out) {
  const char* topic = NULL;
  size_t len = 0;
  char buf[256];
  af_error_t* err;
  (void)ud;
  (void)n;
  err = af_value_get_str(args[0], &topic, &len);
  if (err) return err;
  snprintf(buf, sizeof buf, "notes on %.*s", (int)(len > 100 ? 100 : len), topic);
  return af_value_str_new(buf, strlen(buf), out);
}

/* The host's own model: answers on a thread of its own, from the request JSON. */
static void* answer(void* arg) {
  af_lm_request_t* req = (af_lm_request_t*)arg;
  af_bytes_t json = {NULL, 0};
  char reply[1024];
  af_error_t* err = af_lm_request_json(req, &json);
  if (err) {
    af_error_free(af_lm_request_fail(req, err));
    return NULL;
  }
  /* A real host would call its model here; this one reports what it got. */
  snprintf(reply, sizeof reply, "host model saw %lu bytes of request", (unsigned long)json.len);
  af_bytes_free(&json);
  af_error_free(af_lm_request_complete(req, reply, strlen(reply)));
  return NULL;
}

static void submit(void* ud, af_lm_request_t* req) {
  pthread_t t;
  (void)ud;
  if (pthread_create(&t, NULL, answer, req) != 0) {
    af_error_free(af_lm_request_fail(req, NULL));
    return;
  }
  pthread_detach(t);
}

static int failed(const char* what, af_error_t* err) {
  fprintf(stderr, "plugin_host: %s: error %d: %s\n", what, (int)af_error_code(err),
          af_error_message(err));
  af_error_free(err);
  return 1;
}

static af_error_t* run(af_context_t* ctx, const char* path, af_value_t** out) {
  af_program_t* prog = NULL;
  af_value_t* topic = NULL;
  af_error_t* err = af_program_load(ctx, path, strlen(path), &prog);
  if (!err) err = af_value_str_new("saved graphs", 12, &topic);
  if (!err) {
    const af_value_t* inputs[1] = {topic};
    err = af_program_call(ctx, prog, inputs, 1, out);
  }
  af_value_free(topic);
  af_program_free(prog);
  return err;
}

int main(int argc, char** argv) {
  af_context_t* ctx = NULL;
  af_provider_t* provider = NULL;
  af_value_t *kinds = NULL, *result = NULL;
  af_bytes_t text = {NULL, 0};
  af_error_t* err;
  int status = 0;
  if (argc != 3) {
    fprintf(stderr, "usage: plugin_host AGENT.afg MISSING.afg\n");
    return 2;
  }
  if ((err = af_context_new(&ctx))) return failed("context", err);
  err = af_value_str_new("str", 3, &kinds);
  if (!err) err = af_register_function(ctx, "lookup", 6, lookup, NULL, NULL, kinds);
  if (!err) err = af_provider_host_new(submit, NULL, NULL, &provider);
  if (!err) err = af_context_route(ctx, "*", 1, provider);
  if (err) {
    status = failed("setup", err);
    goto done;
  }

  /* 1. The agent graph runs with the host's function and model. */
  if ((err = run(ctx, argv[1], &result))) {
    status = failed(argv[1], err);
    goto done;
  }
  if ((err = af_value_to_json(result, &text))) {
    status = failed("result", err);
    goto done;
  }
  printf("%s -> %.*s\n", argv[1], (int)text.len, (const char*)text.data);
  if (!strstr((const char*)text.data, "\"notes\":\"notes on saved graphs\"") ||
      !strstr((const char*)text.data, "\"answer\":\"host model saw ")) {
    fprintf(stderr, "plugin_host: unexpected result\n");
    status = 1;
  }

  /* 2. A graph needing a function the host did not register: NOT_FOUND. */
  af_value_free(result);
  result = NULL;
  err = run(ctx, argv[2], &result);
  if (!err || af_error_code(err) != AF_ERR_NOT_FOUND ||
      !strstr(af_error_message(err), "translate")) {
    fprintf(stderr, "plugin_host: expected NOT_FOUND naming \"translate\"\n");
    status = 1;
  } else {
    printf("%s -> NOT_FOUND: %s\n", argv[2], af_error_message(err));
  }
  af_error_free(err);

done:
  af_bytes_free(&text);
  af_value_free(result);
  af_value_free(kinds);
  af_provider_free(provider);
  af_context_free(ctx);
  return status;
}
