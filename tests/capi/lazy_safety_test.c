/* The lazy evaluator under misuse and at its limits, through the C API:
 * freeing the context while evaluations are in progress, chains too long to
 * free recursively, host functions reading promises of the evaluation that
 * calls them, deadlines and cancels (af_eval_with, "eval_timeout_ms"),
 * exact identity (float sign, dict key order: in memory, across processes,
 * in CSE), what an evaluation keeps, a bounded private plan-cache directory,
 * and the counters that show all of it. Run under ASan and TSan in CI. */
#include "lazy_common.h"

#include <dirent.h>
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static af_value_t* concat2(af_context_t* c, const af_value_t* a, const af_value_t* b) {
  const af_value_t* parts[2];
  af_value_t* out = NULL;
  parts[0] = a;
  parts[1] = b;
  CHECK_OK(af_concat(c, parts, 2, &out));
  return out;
}

static af_run_options_t run_options(uint64_t timeout_ms, af_cancel_t* cancel) {
  af_run_options_t o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.timeout_ms = timeout_ms;
  o.cancel = cancel;
  return o;
}

/* ---- lifetimes ---------------------------------------------------------- */

struct reader {
  af_value_t* v;
  af_error_t* err;
  af_bytes_t json;
};

static void* read_json(void* arg) {
  struct reader* r = (struct reader*)arg;
  r->err = af_value_to_json(r->v, &r->json);
  return NULL;
}

/* A read cutting, compiling or running a long chain while the context is
 * freed: the free waits for it, the reader gets the result or CANCELLED (or
 * INVALID_ARGUMENT when the context was gone before it started), never a
 * use after free. */
static void freeing_the_context_during_an_evaluation_is_safe(void) {
  int round, outcome[3] = {0, 0, 0}; /* read, cancelled, context gone first */
  for (round = 0; round < 12; round++) {
    af_context_t* c = lazy_ctx("{\"lazy\":true}");
    af_value_t *x = str_in(c, "x"), *b = str_in(c, "b"), *v = af_value_clone(x);
    struct reader r = {NULL, NULL, {NULL, 0}};
    pthread_t t;
    int i;
    for (i = 0; i < 20000; i++) {
      af_value_t* next = concat2(c, v, b);
      af_value_free(v);
      v = next;
    }
    r.v = v;
    pthread_create(&t, NULL, read_json, &r);
    sleep_ms(round % 6);
    af_context_free(c);
    pthread_join(t, NULL);
    if (r.err) {
      int32_t code = af_error_code(r.err);
      CHECK(code == AF_ERR_CANCELLED || code == AF_ERR_INVALID_ARGUMENT);
      ++outcome[code == AF_ERR_CANCELLED ? 1 : 2];
      af_error_free(r.err);
    } else {
      CHECK_INT_EQ((long)r.json.len, 20001 + 2);
      ++outcome[0];
    }
    af_bytes_free(&r.json);
    af_value_free(v);
    af_value_free(b);
    af_value_free(x);
  }
  printf("    %d read, %d cancelled, %d found the context gone\n", outcome[0], outcome[1], outcome[2]);
}

/* An LM call in flight: freeing the context cancels it at once. */
static void freeing_the_context_cancels_a_slow_evaluation(void) {
  af_context_t* c = lazy_ctx("{\"lazy\":true}");
  af_provider_t* echo = route_echo(c, "{\"latency_ms\": 5000}");
  af_value_t *q = str_in(c, "slow"), *a = ask(c, q);
  struct reader r = {a, NULL, {NULL, 0}};
  pthread_t t;
  double start;
  pthread_create(&t, NULL, read_json, &r);
  sleep_ms(100);
  start = now_ms();
  af_context_free(c);
  CHECK(now_ms() - start < 2000);
  pthread_join(t, NULL);
  CHECK_ERR(r.err, AF_ERR_CANCELLED, "");
  af_value_free(a);
  af_value_free(q);
  af_provider_free(echo);
}

/* 200 000 pending operations in a chain, older promises freed: freeing the
 * last one frees them all without a recursion per node; evaluating such a
 * chain works too. */
static void long_chains_are_freed_and_evaluated(void) {
  af_context_t* c = lazy_ctx("{\"lazy\":true}");
  af_value_t *x = str_in(c, "x"), *b = str_in(c, "b"), *v = af_value_clone(x);
  size_t len = 0;
  const char* s = NULL;
  int i;
  for (i = 0; i < 200000; i++) {
    af_value_t* next = concat2(c, v, b);
    af_value_free(v);
    v = next;
  }
  af_value_free(v); /* dropped: the whole chain goes */
  CHECK_INT_EQ(stat_of(c, "lazy", "dropped"), 200000);
  v = af_value_clone(x);
  for (i = 0; i < 200000; i++) {
    af_value_t* next = concat2(c, v, b);
    af_value_free(v);
    v = next;
  }
  if (CHECK_OK(af_value_get_str(v, &s, &len))) {
    CHECK_INT_EQ((long)len, 200001);
    CHECK(s[0] == 'x' && s[len - 1] == 'b');
  }
  af_value_free(v);
  af_value_free(b);
  af_value_free(x);
  af_context_free(c);
}

/* ---- re-entrancy -------------------------------------------------------- */

static af_value_t* g_target; /* the promise the host functions below read */

static af_error_t* peek(void* ud, const af_value_t* const* args, size_t n, af_value_t** out) {
  af_bytes_t b = {NULL, 0};
  af_error_t* e;
  (void)ud;
  (void)args;
  (void)n;
  e = af_value_to_json(g_target, &b);
  if (e) return e;
  e = af_value_str(NULL, (const char*)b.data, b.len, out);
  af_bytes_free(&b);
  return e;
}

static void peek_async(void* ud, const af_value_t* const* args, size_t n, af_host_request_t* req) {
  af_value_t* out = NULL;
  af_error_t* e = peek(ud, args, n, &out);
  if (e) af_error_free(af_host_request_fail(req, e));
  else af_error_free(af_host_request_complete(req, out));
  af_value_free(out);
  af_host_request_free(req);
}

static void register_peek(af_context_t* c, int mode) {
  af_value_t* kinds = str_in(c, "str");
  if (mode == 0) CHECK_OK(af_register_function(c, "peek", 4, peek, NULL, NULL, kinds));
  if (mode == 1) CHECK_OK(af_register_function_blocking(c, "peek", 4, peek, NULL, NULL, kinds));
  if (mode == 2) CHECK_OK(af_register_function_async(c, "peek", 4, peek_async, NULL, NULL, kinds));
  af_value_free(kinds);
}

/* A host function (sync, blocking, async) reading a promise that the
 * evaluation calling it runs fails at once instead of waiting for itself;
 * reading a pending promise outside that evaluation evaluates it, nested. */
static void a_host_function_reading_its_own_evaluation_fails(void) {
  int mode;
  for (mode = 0; mode < 3; mode++) {
    af_context_t* c = lazy_ctx("{\"lazy\":true}");
    af_value_t *x = str_in(c, "x"), *bang = str_in(c, "!"), *h = NULL, *h2 = NULL;
    af_value_t* both[2];
    double start = now_ms();
    register_peek(c, mode);
    g_target = concat2(c, x, bang);
    CHECK_OK(af_host_call(c, "peek", 4, (const af_value_t* const*)&x, 1, &h));
    both[0] = g_target;
    both[1] = h;
    CHECK_OK(af_eval(c, both, 2));
    CHECK_JSON(g_target, "\"x!\"");
    CHECK_ERR(af_value_to_json(h, &(af_bytes_t){NULL, 0}), AF_ERR_INVALID_ARGUMENT, "would wait for itself",
              "concat (operation #1");
    CHECK(now_ms() - start < 5000);
    af_value_free(g_target);
    /* Nested: the promise is not part of the evaluation calling peek. */
    g_target = concat2(c, bang, x);
    CHECK_OK(af_host_call(c, "peek", 4, (const af_value_t* const*)&x, 1, &h2));
    CHECK_JSON(h2, "\"\\\"!x\\\"\"");
    af_value_free(g_target);
    g_target = NULL;
    af_value_free(h2);
    af_value_free(h);
    af_value_free(bang);
    af_value_free(x);
    af_context_free(c);
  }
}

/* ---- deadlines ---------------------------------------------------------- */

static void eval_with_a_timeout_stops_the_evaluation(void) {
  af_context_t* c = lazy_ctx("{\"lazy\":true}");
  af_provider_t* echo = route_echo(c, "{\"latency_ms\": 3000}");
  af_value_t *q = str_in(c, "q"), *a = ask(c, q);
  af_run_options_t o = run_options(100, NULL);
  double start = now_ms();
  CHECK_ERR(af_eval_with(c, &a, 1, &o), AF_ERR_TIMEOUT, "100 ms");
  CHECK(now_ms() - start < 2000);
  /* The promise keeps that error. */
  CHECK_ERR(af_value_to_json(a, &(af_bytes_t){NULL, 0}), AF_ERR_TIMEOUT, "lm_call (operation #1");
  CHECK_INT_EQ(stat_of(c, "lazy", "timed_out"), 1);
  CHECK_INT_EQ(stat_of(c, "lazy", "evaluations"), 1);
  af_value_free(a);
  af_value_free(q);
  af_provider_free(echo);
  af_context_free(c);
}

struct trigger {
  af_cancel_t* cancel;
  int after_ms;
};

static void* trigger_later(void* arg) {
  struct trigger* t = (struct trigger*)arg;
  sleep_ms(t->after_ms);
  af_cancel_trigger(t->cancel);
  return NULL;
}

static void a_cancel_token_stops_the_evaluation(void) {
  af_context_t* c = lazy_ctx("{\"lazy\":true}");
  af_provider_t* echo = route_echo(c, "{\"latency_ms\": 3000}");
  af_value_t *q = str_in(c, "q"), *a = ask(c, q);
  struct trigger t = {NULL, 100};
  af_run_options_t o;
  pthread_t th;
  double start = now_ms();
  CHECK_OK(af_cancel_new(&t.cancel));
  o = run_options(0, t.cancel);
  pthread_create(&th, NULL, trigger_later, &t);
  CHECK_ERR(af_eval_with(c, &a, 1, &o), AF_ERR_CANCELLED, "");
  CHECK(now_ms() - start < 2000);
  pthread_join(th, NULL);
  CHECK_ERR(af_value_to_json(a, &(af_bytes_t){NULL, 0}), AF_ERR_CANCELLED, "");
  CHECK_INT_EQ(stat_of(c, "lazy", "cancelled"), 1);
  af_cancel_free(t.cancel);
  af_value_free(a);
  af_value_free(q);
  af_provider_free(echo);
  af_context_free(c);
}

static void the_context_deadline_bounds_every_read(void) {
  af_context_t* c = lazy_ctx("{\"lazy\":true,\"eval_timeout_ms\":100}");
  af_provider_t* echo = route_echo(c, "{\"latency_ms\": 3000}");
  af_value_t *q = str_in(c, "q"), *a = ask(c, q);
  const char* s = NULL;
  size_t len = 0;
  double start = now_ms();
  CHECK_ERR(af_value_get_str(a, &s, &len), AF_ERR_TIMEOUT, "");
  CHECK(now_ms() - start < 2000);
  af_value_free(a);
  af_value_free(q);
  af_provider_free(echo);
  af_context_free(c);
  CHECK_ERR(af_context_new_with("{\"eval_timeout_ms\":-1}", 22, &c), AF_ERR_INVALID_ARGUMENT,
            "eval_timeout_ms");
}

/* A reader waiting for another thread's evaluation stops waiting at its own
 * deadline; that evaluation goes on and its result is read afterwards. */
static void a_waiting_reader_stops_at_its_deadline(void) {
  af_context_t* c = lazy_ctx("{\"lazy\":true}");
  af_provider_t* echo = route_echo(c, "{\"latency_ms\": 600}");
  af_value_t *q = str_in(c, "q"), *a = ask(c, q);
  struct reader r = {a, NULL, {NULL, 0}};
  af_run_options_t o = run_options(100, NULL);
  pthread_t t;
  pthread_create(&t, NULL, read_json, &r);
  sleep_ms(50);
  CHECK_ERR(af_eval_with(c, &a, 1, &o), AF_ERR_TIMEOUT, "waited for another evaluation");
  pthread_join(t, NULL);
  CHECK_OK(r.err);
  af_bytes_free(&r.json);
  CHECK_OK(af_eval_with(c, &a, 1, &o));
  CHECK_INT_EQ(af_value_ready(a), 1);
  af_value_free(a);
  af_value_free(q);
  af_provider_free(echo);
  af_context_free(c);
}

static void bad_eval_options_are_refused(void) {
  af_context_t* c = lazy_ctx("{\"lazy\":true}");
  af_value_t* x = str_in(c, "x");
  af_run_options_t o = run_options(0, NULL);
  o.struct_size = 4;
  CHECK_ERR(af_eval_with(c, &x, 1, &o), AF_ERR_INVALID_ARGUMENT, "af_eval_with", "struct_size");
  o = run_options(0, NULL);
  o.flags = 1u << 20;
  CHECK_ERR(af_eval_with(c, &x, 1, &o), AF_ERR_INVALID_ARGUMENT, "flags");
  CHECK_ERR(af_eval_with(NULL, &x, 1, NULL), AF_ERR_INVALID_ARGUMENT, "ctx");
  CHECK_OK(af_eval_with(c, &x, 1, NULL)); /* a concrete value: nothing to do */
  af_value_free(x);
  af_context_free(c);
}

/* ---- identity ----------------------------------------------------------- */

/* f(x) = format("{}:{}", x, K): K is a constant of the traced program. */
static af_error_t* with_constant(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                                 af_value_t** out) {
  const af_value_t* args[2];
  args[0] = in[0];
  args[1] = (const af_value_t*)ud;
  (void)n;
  return af_format(c, "{}:{}", 5, args, 2, NULL, out);
}

static af_ir_t* trace_with(af_context_t* c, const af_value_t* k) {
  af_value_t* example = str_in(c, "x");
  af_ir_t* ir = NULL;
  CHECK_OK(af_trace(c, with_constant, (void*)k, (const af_value_t* const*)&example, 1, NULL, &ir));
  af_value_free(example);
  return ir;
}

static af_value_t* dict_ab(af_context_t* c, int b_first) {
  const char* keys[2];
  size_t lens[] = {1, 1};
  af_value_t *one = NULL, *two = NULL, *d = NULL;
  const af_value_t* vals[2];
  CHECK_OK(af_value_int(c, 1, &one));
  CHECK_OK(af_value_int(c, 2, &two));
  keys[0] = b_first ? "b" : "a";
  keys[1] = b_first ? "a" : "b";
  vals[0] = b_first ? two : one;
  vals[1] = b_first ? one : two;
  CHECK_OK(af_value_dict(c, keys, lens, vals, 2, &d));
  af_value_free(one);
  af_value_free(two);
  return d;
}

static char g_cache_dir[] = "/tmp/af_identity_XXXXXX";

/* Calls ir on "x" lazily on c and checks the text. */
static void call_expecting(af_context_t* c, const af_ir_t* ir, const char* json) {
  af_value_t *x = str_in(c, "x"), *out = NULL;
  CHECK_OK(af_ir_call(c, ir, (const af_value_t* const*)&x, 1, &out));
  CHECK_JSON(out, json);
  af_value_free(out);
  af_value_free(x);
}

/* The child process of programs_that_print_differently_never_share_a_plan. */
static int child_calls_negative_zero(void) {
  char o[256];
  af_context_t* c;
  af_value_t* k;
  af_ir_t* ir;
  af_value_t *x, *out = NULL;
  af_bytes_t b = {NULL, 0};
  int ok;
  snprintf(o, sizeof o, "{\"lazy\":true,\"plan_cache\":{\"dir\":\"%s\"}}", g_cache_dir);
  if (af_context_new_with(o, strlen(o), &c)) return 2;
  af_value_float(c, -0.0, &k);
  ir = trace_with(c, k);
  x = str_in(c, "x");
  ok = af_ir_call(c, ir, (const af_value_t* const*)&x, 1, &out) == NULL &&
       af_value_to_json(out, &b) == NULL && strcmp((const char*)b.data, "\"x:-0.0\"") == 0;
  af_bytes_free(&b);
  af_value_free(out);
  af_value_free(x);
  af_ir_free(ir);
  af_value_free(k);
  af_context_free(c);
  return ok ? 0 : 1;
}

/* 0.0 and -0.0, and dicts whose keys were written in another order, print
 * differently: programs holding them are different programs for
 * af_ir_equal / af_ir_hash, the plan cache (in memory and on disk, across
 * processes) and compile's CSE. */
static void programs_that_print_differently_never_share_a_plan(void) {
  char o[256];
  af_context_t* c;
  af_value_t *pz, *nz, *ab, *ba;
  af_ir_t *fp, *fn, *fab, *fba;
  pid_t pid;
  int status = -1;
  if (!mkdtemp(g_cache_dir)) {
    CHECK(!"mkdtemp");
    return;
  }
  snprintf(o, sizeof o, "{\"lazy\":true,\"plan_cache\":{\"dir\":\"%s\"}}", g_cache_dir);
  c = lazy_ctx(o);
  if (!c) return;
  CHECK_OK(af_value_float(c, 0.0, &pz));
  CHECK_OK(af_value_float(c, -0.0, &nz));
  ab = dict_ab(c, 0);
  ba = dict_ab(c, 1);
  fp = trace_with(c, pz);
  fn = trace_with(c, nz);
  fab = trace_with(c, ab);
  fba = trace_with(c, ba);
  CHECK_INT_EQ(af_ir_equal(fp, fn), 0);
  CHECK(af_ir_hash(fp) != af_ir_hash(fn));
  CHECK_INT_EQ(af_ir_equal(fab, fba), 0);
  CHECK(af_ir_hash(fab) != af_ir_hash(fba));
  call_expecting(c, fp, "\"x:0.0\"");
  call_expecting(c, fn, "\"x:-0.0\"");
  call_expecting(c, fab, "\"x:{\\\"a\\\":1,\\\"b\\\":2}\"");
  call_expecting(c, fba, "\"x:{\\\"b\\\":2,\\\"a\\\":1}\"");
  CHECK_INT_EQ(stat_of(c, "plan_cache", "misses"), 4);
  af_context_free(c);
  /* Another process: only 0.0's plan on disk would be a wrong answer. */
  fflush(stdout);
  pid = fork();
  if (pid == 0) {
    char* argv[] = {(char*)"/proc/self/exe", (char*)"--child-identity", g_cache_dir, NULL};
    execv("/proc/self/exe", argv);
    _exit(3);
  }
  waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_cache_dir);
    CHECK(system(cmd) == 0);
  }
  af_ir_free(fp);
  af_ir_free(fn);
  af_ir_free(fab);
  af_ir_free(fba);
  af_value_free(pz);
  af_value_free(nz);
  af_value_free(ab);
  af_value_free(ba);
}

/* A dict given to a lazy operation is flattened into leaves and a structure;
 * two key orders are two structures, though their leaves are alike. */
static void a_dict_argument_keeps_its_key_order(void) {
  af_context_t* c = lazy_ctx("{\"lazy\":true}");
  int b_first;
  for (b_first = 0; b_first < 2; b_first++) {
    af_value_t *d = dict_ab(c, b_first), *out = NULL;
    CHECK_OK(af_format(c, "{}", 2, (const af_value_t* const*)&d, 1, NULL, &out));
    CHECK_JSON(out, b_first ? "\"{\\\"b\\\":2,\\\"a\\\":1}\"" : "\"{\\\"a\\\":1,\\\"b\\\":2}\"");
    af_value_free(out);
    af_value_free(d);
  }
  CHECK_INT_EQ(stat_of(c, "plan_cache", "misses"), 2);
  af_context_free(c);
}

static af_error_t* both_signs(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                              af_value_t** out) {
  af_value_t *pz = NULL, *nz = NULL, *a = NULL, *b = NULL;
  const af_value_t* args[2];
  const af_value_t* items[2];
  af_error_t* e;
  (void)ud;
  (void)n;
  af_value_float(c, 0.0, &pz);
  af_value_float(c, -0.0, &nz);
  args[0] = in[0];
  args[1] = pz;
  e = af_format(c, "{}:{}", 5, args, 2, NULL, &a);
  args[1] = nz;
  if (!e) e = af_format(c, "{}:{}", 5, args, 2, NULL, &b);
  items[0] = a;
  items[1] = b;
  if (!e) e = af_value_list(c, items, 2, out);
  af_value_free(pz);
  af_value_free(nz);
  af_value_free(a);
  af_value_free(b);
  return e;
}

static void cse_keeps_apart_what_prints_apart(void) {
  af_context_t* c = lazy_ctx("{}");
  af_value_t *x = str_in(c, "x"), *out = NULL;
  af_ir_t* ir = NULL;
  CHECK_OK(af_trace(c, both_signs, NULL, (const af_value_t* const*)&x, 1, NULL, &ir));
  CHECK_OK(af_ir_call(c, ir, (const af_value_t* const*)&x, 1, &out));
  CHECK_JSON(out, "[\"x:0.0\",\"x:-0.0\"]");
  af_value_free(out);
  af_ir_free(ir);
  af_value_free(x);
  af_context_free(c);
}

/* ---- what an evaluation keeps ------------------------------------------- */

/* A promise still held keeps its result after an evaluation that needed it
 * on the way (no second evaluation); the observable operations run even when
 * nothing reads them. */
static void held_results_are_kept(void) {
  af_context_t* c = lazy_ctx("{\"lazy\":true}");
  af_value_t *x = str_in(c, "x"), *b = str_in(c, "b"), *v = af_value_clone(x), *mid = NULL;
  int i;
  for (i = 0; i < 1000; i++) {
    af_value_t* next = concat2(c, v, b);
    af_value_free(v);
    v = next;
    if (i == 499) mid = af_value_clone(v);
  }
  CHECK_OK(af_eval(c, &v, 1));
  CHECK_INT_EQ(stat_of(c, "lazy", "evaluations"), 1);
  CHECK_INT_EQ(af_value_ready(mid), 1);
  {
    size_t len = 0;
    const char* s = NULL;
    if (CHECK_OK(af_value_get_str(mid, &s, &len))) CHECK_INT_EQ((long)len, 501);
  }
  CHECK_INT_EQ(stat_of(c, "lazy", "evaluations"), 1);
  af_value_free(mid);
  af_value_free(v);
  af_value_free(b);
  af_value_free(x);
  af_context_free(c);
}

/* A program larger than the cache's max_bytes runs but is not kept. */
static void a_plan_over_max_bytes_is_not_kept(void) {
  af_context_t* c = lazy_ctx("{\"lazy\":true,\"plan_cache\":{\"max_bytes\":64}}");
  af_value_t *x = str_in(c, "x"), *h = concat2(c, x, x);
  CHECK_JSON(h, "\"xx\"");
  CHECK_INT_EQ(stat_of(c, "plan_cache", "entries"), 0);
  CHECK_INT_EQ(stat_of(c, "plan_cache", "not_kept"), 1);
  af_value_free(h);
  af_value_free(x);
  af_context_free(c);
}

/* ---- the plan cache's directory ------------------------------------------ */

static long dir_bytes(const char* dir, long* files, int* private_files) {
  DIR* d = opendir(dir);
  struct dirent* ent;
  long total = 0;
  *files = 0;
  *private_files = 1;
  if (!d) return -1;
  while ((ent = readdir(d)) != NULL) {
    char path[512];
    struct stat st;
    if (ent->d_name[0] == '.') continue;
    snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
    if (stat(path, &st) != 0) continue;
    total += (long)st.st_size;
    ++*files;
    if ((st.st_mode & 077) != 0) *private_files = 0;
  }
  closedir(d);
  return total;
}

/* Made 0700, files 0600, and trimmed to max_disk_bytes, least recently used
 * out first. */
static void the_plan_directory_is_private_and_bounded(void) {
  char base[] = "/tmp/af_disk_XXXXXX";
  char dir[256], o[512];
  af_context_t* c;
  af_value_t *x, *v;
  struct stat st;
  long files = 0, bytes;
  int private_files = 0, i;
  mode_t old = umask(022);
  if (!mkdtemp(base)) {
    CHECK(!"mkdtemp");
    return;
  }
  snprintf(dir, sizeof dir, "%s/plans", base);
  snprintf(o, sizeof o, "{\"lazy\":true,\"plan_cache\":{\"dir\":\"%s\",\"max_disk_bytes\":6000}}", dir);
  c = lazy_ctx(o);
  if (!c) return;
  CHECK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700);
  x = str_in(c, "x");
  /* Chains of 1 to 24 concats: 24 structures, 24 files of growing size. */
  for (i = 1; i <= 24; i++) {
    int k;
    v = af_value_clone(x);
    for (k = 0; k < i; k++) {
      af_value_t* next = concat2(c, v, x);
      af_value_free(v);
      v = next;
    }
    CHECK_OK(af_eval(c, &v, 1));
    af_value_free(v);
  }
  bytes = dir_bytes(dir, &files, &private_files);
  CHECK(bytes > 0 && bytes <= 6000);
  CHECK(private_files);
  CHECK(files < 24);
  CHECK(stat_of(c, "plan_cache", "disk_evictions") > 0);
  CHECK_INT_EQ(stat_of(c, "plan_cache", "disk_bytes"), bytes);
  CHECK_INT_EQ(stat_of(c, "plan_cache", "disk_files"), files);
  af_value_free(x);
  af_context_free(c);
  /* A new context counts what it finds there; one with a smaller bound
   * trims the directory as it opens it. */
  c = lazy_ctx(o);
  if (c) {
    CHECK_INT_EQ(stat_of(c, "plan_cache", "disk_bytes"), bytes);
    af_context_free(c);
  }
  snprintf(o, sizeof o, "{\"lazy\":true,\"plan_cache\":{\"dir\":\"%s\",\"max_disk_bytes\":2000}}", dir);
  c = lazy_ctx(o);
  if (c) {
    long small = dir_bytes(dir, &files, &private_files);
    CHECK(small > 0 && small <= 2000);
    CHECK_INT_EQ(stat_of(c, "plan_cache", "disk_bytes"), small);
    CHECK(stat_of(c, "plan_cache", "disk_evictions") > 0);
    af_context_free(c);
  }
  CHECK_ERR(af_context_new_with("{\"plan_cache\":{\"max_disk_bytes\":-5}}", 36, &c),
            AF_ERR_INVALID_ARGUMENT, "max_disk_bytes");
  {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    CHECK(system(cmd) == 0);
  }
  umask(old);
}

int main(int argc, char** argv) {
  static const struct test_case cases[] = {
      CASE(freeing_the_context_during_an_evaluation_is_safe),
      CASE(freeing_the_context_cancels_a_slow_evaluation),
      CASE(long_chains_are_freed_and_evaluated),
      CASE(a_host_function_reading_its_own_evaluation_fails),
      CASE(eval_with_a_timeout_stops_the_evaluation),
      CASE(a_cancel_token_stops_the_evaluation),
      CASE(the_context_deadline_bounds_every_read),
      CASE(a_waiting_reader_stops_at_its_deadline),
      CASE(bad_eval_options_are_refused),
      CASE(programs_that_print_differently_never_share_a_plan),
      CASE(a_dict_argument_keeps_its_key_order),
      CASE(cse_keeps_apart_what_prints_apart),
      CASE(held_results_are_kept),
      CASE(a_plan_over_max_bytes_is_not_kept),
      CASE(the_plan_directory_is_private_and_bounded),
  };
  if (argc == 3 && strcmp(argv[1], "--child-identity") == 0) {
    snprintf(g_cache_dir, sizeof g_cache_dir, "%s", argv[2]);
    return child_calls_negative_zero();
  }
  return run_cases(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
