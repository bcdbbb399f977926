/*
 * lm_server.h — tests/lm_server/server.py (a local OpenAI-compatible server
 * with fault injection, chosen by model name) for the C API suites: start,
 * stop, an openai provider pointed at it, and its per-request counters.
 * Include after check.h.
 */
#ifndef AF_TESTS_CAPI_LM_SERVER_H
#define AF_TESTS_CAPI_LM_SERVER_H

#include <signal.h>

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
           "{\"base_url\":\"http://127.0.0.1:%d/v1\",\"timeout_ms\":400,\"max_retries\":2,\"backoff_ms\":10%s%s}",
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
           "print(json.load(urllib.request.urlopen('http://127.0.0.1:%d/stats?key='+urllib.parse.quote('%s|%s')))"
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

#endif
