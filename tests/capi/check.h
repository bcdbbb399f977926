/*
 * check.h — a tiny C99 test harness for the libaf C API suites.
 *
 * Include it FIRST in a test file (it selects POSIX before any system
 * header, for fork/waitpid). A suite is a table of named cases:
 *
 *   static void json_round_trips(void) { CHECK_JSON(v, "[1,2.0]"); ... }
 *   int main(int argc, char** argv) {
 *     static const struct test_case cases[] = {CASE(json_round_trips)};
 *     return run_cases(argc, argv, cases, sizeof cases / sizeof cases[0]);
 *   }
 *
 * Every CHECK records a failure with file:line and continues. Each case runs
 * in its own forked process (a crash, a hang or a sanitizer report fails that
 * case only) with a fresh context in the global `ctx`. The run ends with
 * "N passed, N failed" (cases) and a non-zero exit status on any failure.
 * argv[1], if given, runs only the cases whose name contains it;
 * AF_TEST_NOFORK=1 runs cases in-process (for debuggers). A case may end
 * its process with check_skip(reason) (exit status CHECK_SKIP_STATUS): it
 * counts as neither passed nor failed, and a line "N skipped" comes before
 * the summary.
 *
 * Error checks take message fragments: every fragment must occur in the
 * message (case-insensitive); a fragment "a|b" accepts either alternative.
 */
#ifndef AF_TESTS_CAPI_CHECK_H
#define AF_TESTS_CAPI_CHECK_H

#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <af/af.h>

#if defined(__GNUC__)
#define CHECK_MAYBE_UNUSED __attribute__((unused))
#else
#define CHECK_MAYBE_UNUSED
#endif

/* A case running longer is killed and fails (a suite may define more). */
#ifndef CHECK_CASE_SECONDS
#define CHECK_CASE_SECONDS 60
#endif

/* The exit status of a skipped case (check_skip). */
#define CHECK_SKIP_STATUS 77

/* The context of the running case (fresh for every case). */
static af_context_t* ctx;
/* Failed checks of the running case. */
static int check_case_failures;

struct test_case {
  const char* name;
  void (*fn)(void);
};
#define CASE(fn) {#fn, fn}

/* ---- reporting -------------------------------------------------------- */

static CHECK_MAYBE_UNUSED void check_fail(const char* file, int line, const char* fmt, ...) {
  va_list ap;
  check_case_failures++;
  printf("  %s:%d: FAILED: ", file, line);
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
  fflush(stdout);
}

/* Prints "code N: message" (and its causes) of e into the current line. */
static CHECK_MAYBE_UNUSED void check_print_error(const af_error_t* e) {
  int depth = 0;
  while (e && depth < 8) {
    printf("%scode %d: \"%s\"", depth ? " <- cause " : "", (int)af_error_code(e),
           af_error_message(e));
    e = af_error_cause(e);
    depth++;
  }
}

/* Case-insensitive: does hay[0..hay_len) contain needle[0..needle_len)? */
static CHECK_MAYBE_UNUSED int check_contains_n(const char* hay, size_t hay_len,
                                               const char* needle, size_t needle_len) {
  size_t i, j;
  if (!hay) return 0;
  if (needle_len == 0) return 1;
  for (i = 0; i + needle_len <= hay_len; i++) {
    for (j = 0; j < needle_len; j++) {
      if (tolower((unsigned char)hay[i + j]) != tolower((unsigned char)needle[j])) break;
    }
    if (j == needle_len) return 1;
  }
  return 0;
}

/* Fragment "a|b|c": does the text contain any alternative? */
static CHECK_MAYBE_UNUSED int check_matches_fragment(const char* text, size_t len,
                                                     const char* frag) {
  const char* p = frag;
  for (;;) {
    const char* bar = strchr(p, '|');
    size_t n = bar ? (size_t)(bar - p) : strlen(p);
    if (check_contains_n(text, len, p, n)) return 1;
    if (!bar) return 0;
    p = bar + 1;
  }
}

/* ---- checks ----------------------------------------------------------- */

#define CHECK(cond)                                                  \
  do {                                                               \
    if (!(cond)) check_fail(__FILE__, __LINE__, "CHECK(%s)", #cond); \
  } while (0)

#define CHECK_INT_EQ(actual, expected)                                                  \
  do {                                                                                  \
    long long check_a_ = (long long)(actual), check_e_ = (long long)(expected);         \
    if (check_a_ != check_e_)                                                           \
      check_fail(__FILE__, __LINE__, "%s is %lld, expected %lld (%s)", #actual, check_a_, \
                 check_e_, #expected);                                                  \
  } while (0)

#define CHECK_STR_EQ(actual, expected)                                                   \
  check_str_eq_impl((actual), (actual) ? strlen(actual) : 0, (expected), #actual, __FILE__, \
                    __LINE__)
/* Compares the bytes [ptr, ptr+len) with the NUL-terminated expected. */
#define CHECK_MEM_EQ(ptr, len, expected) \
  check_str_eq_impl((ptr), (len), (expected), #ptr, __FILE__, __LINE__)
/* Compares with expected of explicit length (may hold NUL bytes). */
#define CHECK_MEM_EQ_N(ptr, len, expected, expected_len) \
  check_mem_eq_impl((ptr), (len), (expected), (expected_len), #ptr, __FILE__, __LINE__)
#define CHECK_CONTAINS(text, fragment) \
  check_contains_impl((text), (fragment), #text, __FILE__, __LINE__)
#define CHECK_NOT_CONTAINS(text, fragment) \
  check_not_contains_impl((text), (fragment), #text, __FILE__, __LINE__)

/* Evaluates to 1 if the af_error_t* expression is NULL; otherwise records
 * the error, frees it and evaluates to 0. */
#define CHECK_OK(expr) check_ok_impl((expr), #expr, __FILE__, __LINE__)
/* Evaluates to 1 if the expression returned an error with this code whose
 * message contains every fragment; frees the error in every case. */
#define CHECK_ERR(expr, code, ...) \
  check_err_impl((expr), (code), #expr, __FILE__, __LINE__, __VA_ARGS__, (const char*)0)
/* Like CHECK_ERR for an error the caller keeps (not freed). */
#define CHECK_ERR_KEEP(err, code, ...) \
  check_err_keep_impl((err), (code), #err, __FILE__, __LINE__, __VA_ARGS__, (const char*)0)
/* Serializes v with af_value_to_json and compares with the expected text. */
#define CHECK_JSON(v, expected) check_json_impl((v), (expected), #v, __FILE__, __LINE__)

/* After a failed call: checks that the out-parameter p was set to NULL; if
 * the call wrongly produced a handle, frees it (so a library bug is reported
 * once, not again as a leak). p may hold its own address as a sentinel. */
#define CHECK_NULLED(p, free_fn)                                               \
  do {                                                                         \
    if ((p) != NULL) {                                                         \
      check_fail(__FILE__, __LINE__, "%s not set to NULL after a failure", #p); \
      if ((const void*)(p) != (const void*)&(p)) free_fn(p);                   \
    }                                                                          \
  } while (0)

static CHECK_MAYBE_UNUSED void check_print_bytes(const char* p, size_t len) {
  size_t i;
  putchar('"');
  for (i = 0; i < len; i++) {
    unsigned char c = (unsigned char)p[i];
    if (c == '"' || c == '\\') printf("\\%c", c);
    else if (c < 0x20 || c >= 0x7f) printf("\\x%02x", c);
    else putchar(c);
  }
  putchar('"');
}

static CHECK_MAYBE_UNUSED int check_mem_eq_impl(const char* actual, size_t len,
                                                const char* expected, size_t expected_len,
                                                const char* what, const char* file, int line) {
  if (actual && len == expected_len && memcmp(actual, expected, len) == 0) return 1;
  check_fail(file, line, "%s differs", what);
  printf("    expected: ");
  check_print_bytes(expected, expected_len);
  printf("\n    actual:   ");
  if (actual) check_print_bytes(actual, len);
  else printf("(null)");
  printf("\n");
  return 0;
}

static CHECK_MAYBE_UNUSED int check_str_eq_impl(const char* actual, size_t len,
                                                const char* expected, const char* what,
                                                const char* file, int line) {
  if (!expected) {
    if (!actual) return 1;
    check_fail(file, line, "%s is not NULL", what);
    return 0;
  }
  return check_mem_eq_impl(actual, len, expected, strlen(expected), what, file, line);
}

static CHECK_MAYBE_UNUSED int check_contains_impl(const char* text, const char* frag,
                                                  const char* what, const char* file, int line) {
  if (text && check_matches_fragment(text, strlen(text), frag)) return 1;
  check_fail(file, line, "%s does not contain \"%s\"; it is:\n%s", what, frag,
             text ? text : "(null)");
  return 0;
}

static CHECK_MAYBE_UNUSED int check_not_contains_impl(const char* text, const char* frag,
                                                      const char* what, const char* file,
                                                      int line) {
  if (text && !check_matches_fragment(text, strlen(text), frag)) return 1;
  check_fail(file, line, "%s contains \"%s\"; it is:\n%s", what, frag, text ? text : "(null)");
  return 0;
}

static CHECK_MAYBE_UNUSED int check_ok_impl(af_error_t* e, const char* what, const char* file,
                                            int line) {
  if (!e) return 1;
  check_fail(file, line, "%s failed: ", what);
  printf("    ");
  check_print_error(e);
  printf("\n");
  af_error_free(e);
  return 0;
}

static CHECK_MAYBE_UNUSED int check_err_va(const af_error_t* e, int32_t code, const char* what,
                                           const char* file, int line, va_list ap) {
  const char* frag;
  const char* msg;
  int ok = 1;
  if (!e) {
    check_fail(file, line, "%s succeeded, expected error code %d", what, (int)code);
    return 0;
  }
  if (af_error_code(e) != code) {
    check_fail(file, line, "%s: error code %d, expected %d", what, (int)af_error_code(e),
               (int)code);
    ok = 0;
  }
  msg = af_error_message(e);
  if (!msg) {
    check_fail(file, line, "%s: af_error_message returned NULL", what);
    return 0;
  }
  while ((frag = va_arg(ap, const char*)) != NULL) {
    if (!check_matches_fragment(msg, strlen(msg), frag)) {
      check_fail(file, line, "%s: message lacks \"%s\"", what, frag);
      ok = 0;
    }
  }
  if (!ok) {
    printf("    error was: ");
    check_print_error(e);
    printf("\n");
  }
  return ok;
}

static CHECK_MAYBE_UNUSED int check_err_impl(af_error_t* e, int32_t code, const char* what,
                                             const char* file, int line, ...) {
  int ok;
  va_list ap;
  va_start(ap, line);
  ok = check_err_va(e, code, what, file, line, ap);
  va_end(ap);
  af_error_free(e);
  return ok;
}

static CHECK_MAYBE_UNUSED int check_err_keep_impl(const af_error_t* e, int32_t code,
                                                  const char* what, const char* file, int line,
                                                  ...) {
  int ok;
  va_list ap;
  va_start(ap, line);
  ok = check_err_va(e, code, what, file, line, ap);
  va_end(ap);
  return ok;
}

/* JSON of v as a malloc'd NUL-terminated string (NULL and a recorded
 * failure if serializing fails). */
static CHECK_MAYBE_UNUSED char* json_of_at(const af_value_t* v, const char* file, int line) {
  af_bytes_t b = {NULL, 0};
  af_error_t* e = af_value_to_json(v, &b);
  char* s;
  if (e) {
    check_fail(file, line, "af_value_to_json failed:");
    printf("    ");
    check_print_error(e);
    printf("\n");
    af_error_free(e);
    return NULL;
  }
  if (!b.data) {
    check_fail(file, line, "af_value_to_json succeeded with data == NULL");
    return NULL;
  }
  if (b.data[b.len] != 0) check_fail(file, line, "af_value_to_json output not NUL-terminated");
  s = (char*)malloc(b.len + 1);
  memcpy(s, b.data, b.len);
  s[b.len] = 0;
  if (strlen(s) != b.len) check_fail(file, line, "af_value_to_json output holds a NUL byte");
  af_bytes_free(&b);
  return s;
}
#define json_of(v) json_of_at((v), __FILE__, __LINE__)

static CHECK_MAYBE_UNUSED int check_json_impl(const af_value_t* v, const char* expected,
                                              const char* what, const char* file, int line) {
  char* s;
  int ok;
  if (!v) {
    check_fail(file, line, "%s is NULL, expected JSON %s", what, expected);
    return 0;
  }
  s = json_of_at(v, file, line);
  if (!s) return 0;
  ok = check_str_eq_impl(s, strlen(s), expected, what, file, line);
  free(s);
  return ok;
}

/* ---- value helpers (record a failure and return NULL on error) --------- */

static CHECK_MAYBE_UNUSED af_value_t* mk_str_at(const char* s, const char* file, int line) {
  af_value_t* v = NULL;
  af_error_t* e = af_value_str(ctx, s, strlen(s), &v);
  if (!check_ok_impl(e, "af_value_str", file, line)) return NULL;
  return v;
}
static CHECK_MAYBE_UNUSED af_value_t* mk_int_at(int64_t i, const char* file, int line) {
  af_value_t* v = NULL;
  af_error_t* e = af_value_int(ctx, i, &v);
  if (!check_ok_impl(e, "af_value_int", file, line)) return NULL;
  return v;
}
static CHECK_MAYBE_UNUSED af_value_t* mk_float_at(double f, const char* file, int line) {
  af_value_t* v = NULL;
  af_error_t* e = af_value_float(ctx, f, &v);
  if (!check_ok_impl(e, "af_value_float", file, line)) return NULL;
  return v;
}
static CHECK_MAYBE_UNUSED af_value_t* mk_bool_at(int b, const char* file, int line) {
  af_value_t* v = NULL;
  af_error_t* e = af_value_bool(ctx, b, &v);
  if (!check_ok_impl(e, "af_value_bool", file, line)) return NULL;
  return v;
}
static CHECK_MAYBE_UNUSED af_value_t* mk_json_at(const char* json, const char* file, int line) {
  af_value_t* v = NULL;
  af_error_t* e = af_value_from_json(ctx, json, strlen(json), &v);
  if (!check_ok_impl(e, "af_value_from_json", file, line)) {
    printf("    json: %s\n", json);
    return NULL;
  }
  return v;
}
#define mk_str(s) mk_str_at((s), __FILE__, __LINE__)
#define mk_int(i) mk_int_at((i), __FILE__, __LINE__)
#define mk_float(f) mk_float_at((f), __FILE__, __LINE__)
#define mk_bool(b) mk_bool_at((b), __FILE__, __LINE__)
#define mk_json(j) mk_json_at((j), __FILE__, __LINE__)

/* Borrowed string of a str value as a NUL-terminated copy in buf (records a
 * failure and returns "" on error or if it does not fit). */
static CHECK_MAYBE_UNUSED const char* str_of_at(const af_value_t* v, char* buf, size_t cap,
                                                const char* file, int line) {
  const char* s = NULL;
  size_t n = 0;
  buf[0] = 0;
  if (!check_ok_impl(af_value_get_str(v, &s, &n), "af_value_get_str", file, line)) return buf;
  if (n + 1 > cap) {
    check_fail(file, line, "string too long for the test buffer");
    return buf;
  }
  memcpy(buf, s, n);
  buf[n] = 0;
  return buf;
}
#define str_of(v, buf) str_of_at((v), (buf), sizeof(buf), __FILE__, __LINE__)

/* Owned text of af_ir_to_text / af_ir_to_dot as a malloc'd string. */
static CHECK_MAYBE_UNUSED char* bytes_to_cstr_at(af_error_t* e, af_bytes_t* b, const char* what,
                                                 const char* file, int line) {
  char* s;
  if (!check_ok_impl(e, what, file, line)) return NULL;
  if (!b->data) {
    check_fail(file, line, "%s succeeded with data == NULL", what);
    return NULL;
  }
  if (b->data[b->len] != 0) check_fail(file, line, "%s output not NUL-terminated", what);
  s = (char*)malloc(b->len + 1);
  memcpy(s, b->data, b->len);
  s[b->len] = 0;
  af_bytes_free(b);
  return s;
}
static CHECK_MAYBE_UNUSED char* ir_text_at(const af_ir_t* ir, const char* file, int line) {
  af_bytes_t b = {NULL, 0};
  return bytes_to_cstr_at(af_ir_to_text(ir, &b), &b, "af_ir_to_text", file, line);
}
static CHECK_MAYBE_UNUSED char* ir_dot_at(const af_ir_t* ir, const char* file, int line) {
  af_bytes_t b = {NULL, 0};
  return bytes_to_cstr_at(af_ir_to_dot(ir, &b), &b, "af_ir_to_dot", file, line);
}
#define ir_text(ir) ir_text_at((ir), __FILE__, __LINE__)
#define ir_dot(ir) ir_dot_at((ir), __FILE__, __LINE__)

/* ---- tracing and calling with JSON-written inputs --------------------- */

#define MAX_INPUTS 8
/* An array of af_value_t* as the const array the API takes. */
#define AS_ARGS(a) ((const af_value_t* const*)(a))

/* Splits a JSON list into owned items (at most MAX_INPUTS); returns count. */
static CHECK_MAYBE_UNUSED size_t split_list(const char* json, af_value_t** items) {
  af_value_t* list = mk_json(json);
  size_t n = 0, i;
  if (!list) return 0;
  if (!CHECK_OK(af_value_len(list, &n)) || n > MAX_INPUTS) n = 0;
  for (i = 0; i < n; i++) {
    items[i] = NULL;
    CHECK_OK(af_value_index(list, i, &items[i]));
  }
  af_value_free(list);
  return n;
}

static CHECK_MAYBE_UNUSED void free_items(af_value_t** items, size_t n) {
  size_t i;
  for (i = 0; i < n; i++) af_value_free(items[i]);
}

/* af_trace on the items of a JSON list of examples, with an optional JSON
 * static mask. */
static CHECK_MAYBE_UNUSED af_error_t* trace_json(af_trace_fn fn, void* ud,
                                                 const char* examples_json, const char* mask_json,
                                                 af_ir_t** out) {
  af_value_t* ex[MAX_INPUTS];
  af_value_t* mask = mask_json ? mk_json(mask_json) : NULL;
  size_t n = split_list(examples_json, ex);
  af_error_t* e = af_trace(ctx, fn, ud, (const af_value_t* const*)ex, n, mask, out);
  free_items(ex, n);
  af_value_free(mask);
  return e;
}

/* af_ir_call on the items of a JSON list. */
static CHECK_MAYBE_UNUSED af_error_t* call_json(const af_ir_t* ir, const char* inputs_json,
                                                af_value_t** out) {
  af_value_t* in[MAX_INPUTS];
  size_t n = split_list(inputs_json, in);
  af_error_t* e = af_ir_call(ctx, ir, (const af_value_t* const*)in, n, out);
  free_items(in, n);
  return e;
}

/* Calls ir on the JSON list of inputs and compares the JSON of the output. */
#define CHECK_CALL(ir, inputs_json, expected_json) \
  check_call_at((ir), (inputs_json), (expected_json), __FILE__, __LINE__)
static CHECK_MAYBE_UNUSED int check_call_at(const af_ir_t* ir, const char* inputs_json,
                                            const char* expected, const char* file, int line) {
  af_value_t* out = NULL;
  int ok = check_ok_impl(call_json(ir, inputs_json, &out), "af_ir_call", file, line);
  if (ok) ok = check_json_impl(out, expected, inputs_json, file, line);
  af_value_free(out);
  return ok;
}

/* Traces and returns the IR, or NULL with a recorded failure. */
#define TRACE(fn, ud, examples_json, mask_json) \
  trace_at((fn), (ud), (examples_json), (mask_json), __FILE__, __LINE__)
static CHECK_MAYBE_UNUSED af_ir_t* trace_at(af_trace_fn fn, void* ud, const char* examples_json,
                                            const char* mask_json, const char* file, int line) {
  af_ir_t* ir = NULL;
  if (!check_ok_impl(trace_json(fn, ud, examples_json, mask_json, &ir), "af_trace", file, line))
    return NULL;
  if (!ir) check_fail(file, line, "af_trace succeeded with a NULL IR");
  return ir;
}

/* ---- runner ----------------------------------------------------------- */

/* Ends the running case's process as skipped, saying why (with
 * AF_TEST_NOFORK=1 it ends the whole run, with CHECK_SKIP_STATUS). */
static CHECK_MAYBE_UNUSED void check_skip(const char* reason) {
  printf("  SKIPPED: %s\n", reason);
  fflush(stdout);
  _exit(CHECK_SKIP_STATUS);
}

/* Runs one case in this process; returns its number of failed checks. */
static CHECK_MAYBE_UNUSED int check_run_inline(const struct test_case* c) {
  af_error_t* e;
  check_case_failures = 0;
  ctx = NULL;
  e = af_context_new(&ctx);
  if (e || !ctx) {
    check_fail(__FILE__, __LINE__, "af_context_new failed");
    af_error_free(e);
    return check_case_failures;
  }
  c->fn();
  af_context_free(ctx);
  ctx = NULL;
  fflush(stdout);
  return check_case_failures;
}

static CHECK_MAYBE_UNUSED int run_cases(int argc, char** argv, const struct test_case* cases,
                                        size_t n) {
  size_t i;
  int passed = 0, failed = 0, skipped = 0;
  const char* filter = argc > 1 ? argv[1] : NULL;
  const char* nofork = getenv("AF_TEST_NOFORK");
  int use_fork = !(nofork && nofork[0] && strcmp(nofork, "0") != 0);
  for (i = 0; i < n; i++) {
    const struct test_case* c = &cases[i];
    int ok, skip = 0;
    if (filter && !strstr(c->name, filter)) continue;
    printf("[ RUN  ] %s\n", c->name);
    fflush(stdout);
    if (!use_fork) {
      ok = check_run_inline(c) == 0;
    } else {
      pid_t pid = fork();
      if (pid < 0) {
        perror("fork");
        return 2;
      }
      if (pid == 0) {
        alarm(CHECK_CASE_SECONDS); /* a hang fails the case, not the suite */
        exit(check_run_inline(c) == 0 ? 0 : 1);
      } else {
        int status = 0;
        if (waitpid(pid, &status, 0) < 0) {
          perror("waitpid");
          return 2;
        }
        ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        skip = WIFEXITED(status) && WEXITSTATUS(status) == CHECK_SKIP_STATUS;
        if (WIFSIGNALED(status)) {
          printf("  CRASHED: killed by signal %d%s\n", WTERMSIG(status),
                 WTERMSIG(status) == 14 ? " (timeout)" : "");
        } else if (WIFEXITED(status) && WEXITSTATUS(status) > 1 && !skip) {
          printf("  exit status %d (a sanitizer report or leak above?)\n", WEXITSTATUS(status));
        }
      }
    }
    printf("[ %s ] %s\n", skip ? "SKIP" : ok ? " OK " : "FAIL", c->name);
    fflush(stdout);
    if (skip) skipped++;
    else if (ok) passed++;
    else failed++;
  }
  if (skipped) printf("%d skipped\n", skipped);
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}

#endif /* AF_TESTS_CAPI_CHECK_H */
