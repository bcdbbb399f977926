/* Helpers of the LM suites: providers, routes, messages, provider stats,
 * time, and the local fault-injecting chat-completions server
 * (tests/lm_server/server.py). Include after check.h. */
#ifndef AF_TESTS_CAPI_LM_HELPERS_H
#define AF_TESTS_CAPI_LM_HELPERS_H

#include <signal.h>
#include <time.h>

static CHECK_MAYBE_UNUSED af_provider_t* echo_with(const char* options) {
  af_provider_t* p = NULL;
  if (!CHECK_OK(af_provider_echo_new(options, options ? strlen(options) : 0, &p))) return NULL;
  return p;
}

static CHECK_MAYBE_UNUSED void route(const char* pattern, af_provider_t* p) {
  CHECK_OK(af_context_route(ctx, pattern, strlen(pattern), p));
}

/* One-message conversation with a user turn. */
static CHECK_MAYBE_UNUSED af_value_t* user_msg(const char* content) {
  char buf[512];
  snprintf(buf, sizeof buf, "[{\"role\":\"user\",\"content\":\"%s\"}]", content);
  return mk_json(buf);
}

static CHECK_MAYBE_UNUSED char* stats_of(const af_provider_t* p) {
  af_bytes_t b = {NULL, 0};
  return bytes_to_cstr_at(af_provider_stats(p, &b), &b, "af_provider_stats", __FILE__, __LINE__);
}

static CHECK_MAYBE_UNUSED long stat_field(const af_provider_t* p, const char* field) {
  char* s = stats_of(p);
  char key[64];
  const char* at;
  long v = -1;
  snprintf(key, sizeof key, "\"%s\":", field);
  at = s ? strstr(s, key) : NULL;
  if (at) v = strtol(at + strlen(key), NULL, 10);
  free(s);
  return v;
}

static CHECK_MAYBE_UNUSED void sleep_ms(long ms) {
  struct timespec ts;
  ts.tv_sec = ms / 1000;
  ts.tv_nsec = (ms % 1000) * 1000000L;
  nanosleep(&ts, NULL);
}

static CHECK_MAYBE_UNUSED double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

struct server {
  pid_t pid;
  int port;
};

/* Starts tests/lm_server/server.py (AF_TESTS_DIR is set by the build) on an
 * ephemeral 127.0.0.1 port. */
static CHECK_MAYBE_UNUSED struct server server_start(void) {
  struct server s = {-1, 0};
  const char* path = AF_TESTS_DIR "/lm_server/server.py";
  int fds[2];
  FILE* f;
  char line[64];
  if (pipe(fds) != 0) return s;
  s.pid = fork();
  if (s.pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    execlp("python3", "python3", path, "--lifetime", "90", (char*)NULL);
    _exit(127);
  }
  close(fds[1]);
  f = fdopen(fds[0], "r");
  if (f && fgets(line, sizeof line, f) && strncmp(line, "PORT ", 5) == 0) s.port = atoi(line + 5);
  if (f) fclose(f);
  if (!s.port) check_fail(__FILE__, __LINE__, "the test server did not start (python3 %s)", path);
  return s;
}

static CHECK_MAYBE_UNUSED void server_stop(struct server* s) {
  if (s->pid > 0) {
    kill(s->pid, SIGTERM);
    waitpid(s->pid, NULL, 0);
  }
  s->pid = -1;
}

/* An openai provider for the server: 400 ms per attempt, 2 retries 10 ms
 * apart, plus the options in extra (JSON members, or NULL). */
static CHECK_MAYBE_UNUSED af_provider_t* openai_for(const struct server* s, const char* extra) {
  char opts[512];
  af_provider_t* p = NULL;
  snprintf(opts, sizeof opts,
           "{\"base_url\":\"http://127.0.0.1:%d/"
           "v1\",\"timeout_ms\":400,\"max_retries\":2,\"backoff_ms\":10%s%s}",
           s->port, extra ? "," : "", extra ? extra : "");
  if (!CHECK_OK(af_provider_openai_new(opts, strlen(opts), &p))) return NULL;
  return p;
}

/* GET /stats: a counter ("attempts", "aborted") the server kept for
 * model|content. */
static CHECK_MAYBE_UNUSED long server_stat(const struct server* s, const char* model,
                                           const char* content, const char* field) {
  char cmd[512];
  FILE* p;
  long n = -1;
  snprintf(cmd, sizeof cmd,
           "python3 -c \"import urllib.request,json,urllib.parse;"
           "print(json.load(urllib.request.urlopen('http://127.0.0.1:%d/"
           "stats?key='+urllib.parse.quote('%s|%s')))"
           "['%s'])\"",
           s->port, model, content, field);
  p = popen(cmd, "r");
  if (p) {
    if (fscanf(p, "%ld", &n) != 1) n = -1;
    pclose(p);
  }
  return n;
}

/* The attempts the server saw for model|content. */
static CHECK_MAYBE_UNUSED long server_attempts(const struct server* s, const char* model,
                                               const char* content) {
  return server_stat(s, model, content, "attempts");
}

/* One user message to model through the context's routes. */
static CHECK_MAYBE_UNUSED af_error_t* call_model(const char* model, const char* content,
                                                 af_value_t** out) {
  af_value_t* msgs = user_msg(content);
  af_value_t* m = mk_str(model);
  af_error_t* e = af_lm_call(ctx, msgs, m, out);
  af_value_free(msgs);
  af_value_free(m);
  return e;
}

#endif
