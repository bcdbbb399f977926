/* Error payloads (af_error_new_with, af_error_payload): a callback's own
 * object rides on its error through libaf's wrapping, across threads, and
 * is destroyed exactly once. */
#include "check.h"

#include <pthread.h>
#include <time.h>

static int destroyed[8];
/* Any thread may free the last error holding a payload. */
static void destroy_slot(void* p) { __atomic_add_fetch((int*)p, 1, __ATOMIC_SEQ_CST); }
/* destroyed[k], once it reached want or after a second. */
static int destroyed_count(int k, int want) {
  for (int i = 0; i < 100 && __atomic_load_n(&destroyed[k], __ATOMIC_SEQ_CST) < want; i++) {
    struct timespec ts = {0, 10 * 1000000L};
    nanosleep(&ts, NULL);
  }
  return __atomic_load_n(&destroyed[k], __ATOMIC_SEQ_CST);
}

/* A host function failing with the payload &destroyed[k], k its argument. */
static af_error_t* fails_with(void* user_data, const af_value_t* const* args, size_t n, af_value_t** out) {
  (void)user_data;
  (void)n;
  (void)out;
  int64_t k = 0;
  af_error_free(af_value_get_int(args[0], &k));
  return af_error_new_with(AF_ERR_PROVIDER, "same text", 9, &destroyed[k], destroy_slot);
}

/* The first payload along e's cause chain. */
static void* payload_in(const af_error_t* e) {
  for (; e; e = af_error_cause(e))
    if (af_error_payload(e)) return af_error_payload(e);
  return NULL;
}

static void a_payload_is_kept_and_destroyed_once(void) {
  af_error_t* e = af_error_new_with(AF_ERR_CALLBACK, "x", 1, &destroyed[0], destroy_slot);
  CHECK(af_error_payload(e) == &destroyed[0]);
  CHECK(af_error_payload(NULL) == NULL);
  af_error_free(e);
  CHECK_INT_EQ(destroyed_count(0, 1), 1);
  af_error_t* plain = af_error_new_with(AF_ERR_CALLBACK, "x", 1, NULL, destroy_slot);
  CHECK(af_error_payload(plain) == NULL);
  af_error_free(plain);
  af_error_t* no_destroy = af_error_new_with(AF_ERR_CALLBACK, "x", 1, &destroyed[1], NULL);
  CHECK(af_error_payload(no_destroy) == &destroyed[1]);
  af_error_free(no_destroy);
  CHECK_INT_EQ(destroyed_count(1, 0), 0);
}

static void a_callbacks_payload_comes_back_as_the_cause(void) {
  af_value_t* kinds = mk_str("str");
  CHECK_OK(af_register_function(ctx, "fails", 5, fails_with, NULL, NULL, kinds));
  af_value_t* k = NULL;
  CHECK_OK(af_value_int(ctx, 2, &k));
  af_value_t* out = NULL;
  af_error_t* e = af_host_call(ctx, "fails", 5, (const af_value_t* const*)&k, 1, &out);
  CHECK_INT_EQ(af_error_code(e), AF_ERR_CALLBACK);
  CHECK(af_error_payload(e) == NULL);
  CHECK(payload_in(e) == &destroyed[2]);
  af_error_free(e);
  CHECK_INT_EQ(destroyed_count(2, 1), 1);
  af_value_free(k);
  af_value_free(kinds);
}

struct caller {
  int k, wrong;
};
static void* call_many(void* arg) {
  struct caller* c = arg;
  af_value_t* k = NULL;
  af_error_free(af_value_int(ctx, c->k, &k));
  for (int i = 0; i < 200; i++) {
    af_value_t* out = NULL;
    af_error_t* e = af_host_call(ctx, "fails", 5, (const af_value_t* const*)&k, 1, &out);
    if (payload_in(e) != &destroyed[c->k]) c->wrong++;
    af_error_free(e);
  }
  af_value_free(k);
  return NULL;
}

static void two_callbacks_failing_at_once_keep_their_own(void) {
  af_value_t* kinds = mk_str("str");
  CHECK_OK(af_register_function(ctx, "fails", 5, fails_with, NULL, NULL, kinds));
  struct caller a = {3, 0}, b = {4, 0};
  pthread_t ta, tb;
  pthread_create(&ta, NULL, call_many, &a);
  pthread_create(&tb, NULL, call_many, &b);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  CHECK_INT_EQ(a.wrong + b.wrong, 0);
  CHECK_INT_EQ(destroyed_count(3, 200), 200);
  CHECK_INT_EQ(destroyed_count(4, 200), 200);
  af_value_free(kinds);
}

/* af_error_code_name: every AF_ERR_* code by its name, the same name an
 * error value carries; others are UNKNOWN. */
static void codes_have_one_table_of_names(void) {
  static const char* const names[] = {"INVALID_ARGUMENT", "NOT_FOUND", "SCHEMA",    "FORMAT",
                                      "VERSION",          "PROVIDER",  "TIMEOUT",   "CANCELLED",
                                      "CALLBACK",         "IO",        "OUT_OF_MEMORY", "INTERNAL"};
  int32_t c;
  for (c = AF_ERR_INVALID_ARGUMENT; c <= AF_ERR_INTERNAL; ++c) CHECK_STR_EQ(af_error_code_name(c), names[c - 1]);
  CHECK_STR_EQ(af_error_code_name(0), "UNKNOWN");
  CHECK_STR_EQ(af_error_code_name(13), "UNKNOWN");
  CHECK_STR_EQ(af_error_code_name(-1), "UNKNOWN");
}

int main(int argc, char** argv) {
  static const struct test_case cases[] = {
      CASE(a_payload_is_kept_and_destroyed_once),
      CASE(a_callbacks_payload_comes_back_as_the_cause),
      CASE(two_callbacks_failing_at_once_keep_their_own),
      CASE(codes_have_one_table_of_names),
  };
  return run_cases(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
