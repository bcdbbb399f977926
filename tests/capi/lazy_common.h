/* Helpers shared by the lazy evaluator's C API tests (lazy_test.c,
 * lazy_safety_test.c). */
#ifndef AF_TESTS_LAZY_COMMON_H
#define AF_TESTS_LAZY_COMMON_H

#include "check.h"

#include <time.h>

static CHECK_MAYBE_UNUSED double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static CHECK_MAYBE_UNUSED af_context_t* lazy_ctx(const char* options) {
  af_context_t* c = NULL;
  const char* o = options ? options : "{\"lazy\":true}";
  if (!CHECK_OK(af_context_new_with(o, strlen(o), &c))) return NULL;
  return c;
}

static CHECK_MAYBE_UNUSED af_value_t* str_in(af_context_t* c, const char* s) {
  af_value_t* v = NULL;
  CHECK_OK(af_value_str(c, s, strlen(s), &v));
  return v;
}

/* A counter out of af_context_stats: section "plan_cache" or "lazy". */
static CHECK_MAYBE_UNUSED long stat_of(const af_context_t* c, const char* section, const char* field) {
  af_bytes_t b = {NULL, 0};
  char key[64];
  const char *at, *sec;
  long v = -1;
  if (!CHECK_OK(af_context_stats(c, &b))) return -1;
  snprintf(key, sizeof key, "\"%s\":", field);
  sec = strstr((const char*)b.data, section);
  at = sec ? strstr(sec, key) : NULL;
  if (at) v = strtol(at + strlen(key), NULL, 10);
  af_bytes_free(&b);
  return v;
}

/* Routes every model to an echo provider with these options; returns it. */
static CHECK_MAYBE_UNUSED af_provider_t* route_echo(af_context_t* c, const char* options) {
  af_provider_t* p = NULL;
  if (!CHECK_OK(af_provider_echo_new(options, strlen(options), &p))) return NULL;
  CHECK_OK(af_context_route(c, "*", 1, p));
  return p;
}

/* lm_call(model "m", [user: content]) */
static CHECK_MAYBE_UNUSED af_value_t* ask(af_context_t* c, const af_value_t* content) {
  af_value_t *role = str_in(c, "user"), *m = NULL, *msgs = NULL, *model = str_in(c, "m"), *out = NULL;
  const char* keys[] = {"role", "content"};
  size_t lens[] = {4, 7};
  const af_value_t* vals[2];
  vals[0] = role;
  vals[1] = content;
  CHECK_OK(af_value_dict(c, keys, lens, vals, 2, &m));
  CHECK_OK(af_value_list(c, (const af_value_t* const*)&m, 1, &msgs));
  CHECK_OK(af_lm_call(c, msgs, model, &out));
  af_value_free(role);
  af_value_free(m);
  af_value_free(msgs);
  af_value_free(model);
  return out;
}

#endif
