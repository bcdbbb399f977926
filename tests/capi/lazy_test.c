/* The lazy evaluator and the plan cache through the C API: promises,
 * evaluate-on-read, af_eval concurrency, dropped values, observable
 * operations, errors with origin and cause, threads, the plan cache (hits,
 * LRU, a directory shared between processes, corrupt files), bad input. */
#include "lazy_common.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>

static long provider_stat(const af_provider_t* p, const char* field) {
  af_bytes_t b = {NULL, 0};
  char key[64];
  const char* at;
  long v = -1;
  if (!CHECK_OK(af_provider_stats(p, &b))) return -1;
  snprintf(key, sizeof key, "\"%s\":", field);
  at = strstr((const char*)b.data, key);
  if (at) v = strtol(at + strlen(key), NULL, 10);
  af_bytes_free(&b);
  return v;
}

/* format("Hello {}", x) */
static af_value_t* hello(af_context_t* c, const af_value_t* x) {
  af_value_t* out = NULL;
  CHECK_OK(af_format(c, "Hello {}", 8, &x, 1, NULL, &out));
  return out;
}

/* ---- promises and reads ----------------------------------------------- */

static void reading_a_promise_evaluates_it(void) {
  af_context_t* c = lazy_ctx(NULL);
  af_value_t *x = str_in(c, "world"), *h = hello(c, x), *d = NULL;
  const char* s = NULL;
  size_t len = 0;
  CHECK_INT_EQ(af_value_kind(h), AF_KIND_STR);
  CHECK_INT_EQ(af_value_ready(h), 0);
  CHECK_INT_EQ(stat_of(c, "lazy", "pending"), 1);
  /* A promise composes: the concat is recorded too. */
  {
    const af_value_t* parts[2];
    parts[0] = h;
    parts[1] = x;
    CHECK_OK(af_concat(c, parts, 2, &d));
  }
  CHECK_INT_EQ(af_value_ready(d), 0);
  if (CHECK_OK(af_value_get_str(h, &s, &len))) CHECK_MEM_EQ(s, len, "Hello world");
  CHECK_INT_EQ(af_value_ready(h), 1);
  CHECK_INT_EQ(af_value_ready(d), 0); /* only what the read needed ran */
  CHECK_JSON(d, "\"Hello worldworld\"");
  CHECK_INT_EQ(af_value_ready(d), 1);
  CHECK_INT_EQ(stat_of(c, "lazy", "recorded"), 2);
  CHECK_INT_EQ(stat_of(c, "lazy", "evaluated"), 2);
  CHECK_INT_EQ(stat_of(c, "lazy", "pending"), 0);
  af_value_free(x);
  af_value_free(h);
  af_value_free(d);
  af_context_free(c);
}

static void structure_is_known_at_once(void) {
  af_context_t* c = lazy_ctx(NULL);
  af_value_t *x = str_in(c, "a"), *y = str_in(c, "b"), *m = NULL, *item = NULL;
  af_value_t* list = NULL;
  const af_value_t* both[2];
  int32_t b = 0;
  CHECK_OK(af_match(c, x, y, &m));
  CHECK_INT_EQ(af_value_kind(m), AF_KIND_BOOL);
  both[0] = m;
  both[1] = x;
  CHECK_OK(af_value_list(c, both, 2, &list)); /* containers of promises */
  CHECK_INT_EQ(af_value_ready(list), 0);
  if (CHECK_OK(af_value_index(list, 0, &item))) {
    CHECK_INT_EQ(af_value_kind(item), AF_KIND_BOOL);
    if (CHECK_OK(af_value_get_bool(item, &b))) CHECK_INT_EQ(b, 0);
  }
  CHECK_JSON(list, "[false,\"a\"]");
  /* Kind errors come at once, not at the read. */
  {
    af_value_t* bad = NULL;
    const af_value_t* parts[1];
    parts[0] = m;
    CHECK_ERR(af_concat(c, parts, 1, &bad), AF_ERR_INVALID_ARGUMENT, "bool");
    CHECK_NULLED(bad, af_value_free);
  }
  af_value_free(item);
  af_value_free(list);
  af_value_free(m);
  af_value_free(x);
  af_value_free(y);
  af_context_free(c);
}

static void eval_runs_independent_calls_together(void) {
  af_context_t* c = lazy_ctx(NULL);
  af_provider_t* p = route_echo(c, "{\"latency_ms\":200}");
  af_value_t* outs[10];
  double t0, took;
  int i;
  for (i = 0; i < 10; i++) {
    char buf[16];
    af_value_t* q;
    snprintf(buf, sizeof buf, "q%d", i);
    q = str_in(c, buf);
    outs[i] = ask(c, q);
    af_value_free(q);
  }
  CHECK_INT_EQ(provider_stat(p, "submitted"), 0); /* nothing ran while recording */
  t0 = now_ms();
  CHECK_OK(af_eval(c, outs, 10));
  took = now_ms() - t0;
  printf("    af_eval of 10 pending 200 ms calls: %.0f ms\n", took);
  CHECK(took < 1500); /* one after another: 2000 ms */
  CHECK_INT_EQ(provider_stat(p, "peak_in_flight"), 10);
  CHECK_JSON(outs[3], "\"m|q3\"");
  for (i = 0; i < 10; i++) CHECK_INT_EQ(af_value_ready(outs[i]), 1);
  for (i = 0; i < 10; i++) af_value_free(outs[i]);
  af_provider_free(p);
  af_context_free(c);
}

static void a_dropped_promise_never_runs(void) {
  af_context_t* c = lazy_ctx(NULL);
  af_provider_t* p = route_echo(c, "{}");
  af_value_t *q = str_in(c, "unused"), *r = str_in(c, "used");
  af_value_t* a = ask(c, q);
  af_value_t* b = ask(c, r);
  af_value_free(a); /* nothing needs it any more */
  CHECK_INT_EQ(stat_of(c, "lazy", "dropped"), 1);
  CHECK_JSON(b, "\"m|used\"");
  CHECK_INT_EQ(provider_stat(p, "submitted"), 1);
  CHECK_INT_EQ(stat_of(c, "lazy", "pending"), 0);
  af_value_free(b);
  af_value_free(q);
  af_value_free(r);
  af_provider_free(p);
  af_context_free(c);
}

static void an_input_of_a_live_promise_is_kept(void) {
  af_context_t* c = lazy_ctx(NULL);
  af_value_t *x = str_in(c, "w"), *h = hello(c, x), *h2 = hello(c, h);
  af_value_free(h); /* h2 still needs it */
  CHECK_INT_EQ(stat_of(c, "lazy", "dropped"), 0);
  CHECK_JSON(h2, "\"Hello Hello w\"");
  af_value_free(h2);
  af_value_free(x);
  af_context_free(c);
}

struct calls {
  int n;
};

static af_error_t* count_and_echo(void* user_data, const af_value_t* const* args, size_t n, af_value_t** out) {
  ((struct calls*)user_data)->n++;
  (void)n;
  *out = af_value_clone(args[0]);
  return NULL;
}

static void observable_operations_run_with_the_next_evaluation(void) {
  af_context_t* c = lazy_ctx(NULL);
  struct calls k = {0};
  af_value_t *kinds = str_in(c, "str"), *x = str_in(c, "x"), *r = NULL, *h = NULL;
  const af_value_t* args[1];
  args[0] = x;
  CHECK_OK(af_register_function(c, "tool", 4, count_and_echo, &k, NULL, kinds));
  CHECK_OK(af_host_call(c, "tool", 4, args, 1, &r));
  af_value_free(r); /* a tool call is never dropped */
  CHECK_INT_EQ(k.n, 0);
  h = hello(c, x);
  CHECK_JSON(h, "\"Hello x\"");
  CHECK_INT_EQ(k.n, 1); /* ran with the next evaluation */
  /* af_eval(ctx, NULL, 0) runs just the pending ones. */
  CHECK_OK(af_host_call(c, "tool", 4, args, 1, &r));
  af_value_free(r);
  CHECK_INT_EQ(stat_of(c, "lazy", "pending"), 1);
  CHECK_OK(af_eval(c, NULL, 0));
  CHECK_INT_EQ(k.n, 2);
  CHECK_INT_EQ(stat_of(c, "lazy", "pending"), 0);
  CHECK_INT_EQ(stat_of(c, "lazy", "dropped"), 0);
  af_value_free(h);
  af_value_free(x);
  af_value_free(kinds);
  af_context_free(c);
}

/* ---- errors ------------------------------------------------------------ */

static af_error_t* failing_tool(void* user_data, const af_value_t* const* args, size_t n, af_value_t** out) {
  static const char msg[] = "the tool is down";
  (void)user_data;
  (void)args;
  (void)n;
  (void)out;
  return af_error_new(AF_ERR_PROVIDER, msg, sizeof msg - 1);
}

static void errors_name_the_origin_and_keep_the_cause(void) {
  af_context_t* c = lazy_ctx(NULL);
  af_value_t *kinds = str_in(c, "str"), *x = str_in(c, "x"), *r = NULL, *h = NULL, *ok = NULL;
  const af_value_t* args[1];
  af_value_t* both[2];
  af_error_t* e;
  const char* s;
  size_t len;
  args[0] = x;
  CHECK_OK(af_register_function(c, "down", 4, failing_tool, NULL, NULL, kinds));
  CHECK_OK(af_tag_push(c, "triage", 6));
  CHECK_OK(af_host_call(c, "down", 4, args, 1, &r));
  CHECK_OK(af_tag_pop(c));
  h = hello(c, r); /* depends on the failing call */
  ok = hello(c, x); /* does not */
  both[0] = h;
  both[1] = ok;
  CHECK_OK(af_eval(c, both, 2)); /* failures are read, not thrown here */
  CHECK_INT_EQ(af_value_ready(h), 1);
  CHECK_JSON(ok, "\"Hello x\"");
  e = af_value_get_str(h, &s, &len);
  if (CHECK_ERR_KEEP(e, AF_ERR_CALLBACK, "host_call", "operation #1", "triage")) {
    const af_error_t* cause = af_error_cause(e);
    CHECK(cause != NULL);
    if (cause) CHECK_CONTAINS(af_error_message(cause), "down");
    /* The original error stays at the end of the chain. */
    while (cause && af_error_cause(cause)) cause = af_error_cause(cause);
    if (cause) CHECK_CONTAINS(af_error_message(cause), "the tool is down");
  }
  af_error_free(e);
  CHECK_ERR(af_value_to_json(r, &(af_bytes_t){NULL, 0}), AF_ERR_CALLBACK, "host_call");
  af_value_free(h);
  af_value_free(ok);
  af_value_free(r);
  af_value_free(x);
  af_value_free(kinds);
  af_context_free(c);
}

static void bad_input_is_refused(void) {
  af_context_t *a = lazy_ctx(NULL), *b = lazy_ctx(NULL), *c = NULL;
  af_value_t *x = str_in(a, "x"), *pa = hello(a, x), *out = NULL;
  const char* s;
  size_t len;
  /* A promise of another lazy context. */
  CHECK_ERR(af_format(b, "{}", 2, (const af_value_t* const*)&pa, 1, NULL, &out), AF_ERR_INVALID_ARGUMENT,
            "another lazy context");
  CHECK_NULLED(out, af_value_free);
  CHECK_ERR(af_eval(b, &pa, 1), AF_ERR_INVALID_ARGUMENT, "another context");
  CHECK_ERR(af_eval(NULL, &pa, 1), AF_ERR_INVALID_ARGUMENT, "ctx");
  {
    af_value_t* nulls[1] = {NULL};
    CHECK_ERR(af_eval(a, nulls, 1), AF_ERR_INVALID_ARGUMENT, "NULL");
  }
  /* An eager context evaluates another context's promise it is given. */
  out = hello(ctx, pa);
  CHECK_JSON(out, "\"Hello Hello x\"");
  af_value_free(out);
  out = NULL;
  /* Reading after the context was freed. */
  af_value_free(pa);
  pa = hello(a, x);
  af_context_free(a);
  CHECK_ERR(af_value_get_str(pa, &s, &len), AF_ERR_INVALID_ARGUMENT, "context was freed");
  CHECK_INT_EQ(af_value_ready(pa), 0);
  af_value_free(pa);
  /* Options. */
  CHECK_ERR(af_context_new_with("{\"lazy\":1}", 10, &c), AF_ERR_INVALID_ARGUMENT, "lazy");
  CHECK_NULLED(c, af_context_free);
  CHECK_ERR(af_context_new_with("{\"lazzy\":true}", 14, &c), AF_ERR_INVALID_ARGUMENT, "lazzy");
  CHECK_ERR(af_context_new_with("{\"plan_cache\":{\"max_entries\":0}}", 32, &c), AF_ERR_INVALID_ARGUMENT,
            "max_entries");
  CHECK_ERR(af_context_new_with("{\"plan_cache\":{\"dir\":7}}", 24, &c), AF_ERR_INVALID_ARGUMENT, "dir");
  CHECK_ERR(af_context_new_with("{\"plan_cache\":{\"dir\":\"/proc/no/such\"}}", 38, &c), AF_ERR_IO,
            "/proc/no");
  CHECK_ERR(af_context_new_with("[", 1, &c), AF_ERR_INVALID_ARGUMENT, "");
  CHECK_ERR(af_context_new_with("{}", 2, NULL), AF_ERR_INVALID_ARGUMENT, "out");
  CHECK_ERR(af_context_stats(NULL, &(af_bytes_t){NULL, 0}), AF_ERR_INVALID_ARGUMENT, "ctx");
  CHECK_INT_EQ(af_value_ready(NULL), 0);
  af_value_free(x);
  af_context_free(b);
}

/* ---- threads ------------------------------------------------------------ */

struct reader {
  af_value_t* v;
  int ok;
};

static void* read_it(void* arg) {
  struct reader* r = arg;
  const char* s = NULL;
  size_t len = 0;
  af_error_t* e = af_value_get_str(r->v, &s, &len);
  r->ok = e == NULL && len == 5 && memcmp(s, "m|abc", 5) == 0;
  af_error_free(e);
  return NULL;
}

static void two_threads_reading_one_promise_run_it_once(void) {
  af_context_t* c = lazy_ctx(NULL);
  af_provider_t* p = route_echo(c, "{\"latency_ms\":100}");
  af_value_t *q = str_in(c, "abc"), *a = ask(c, q);
  struct reader r1 = {a, 0}, r2 = {a, 0};
  pthread_t t1, t2;
  pthread_create(&t1, NULL, read_it, &r1);
  pthread_create(&t2, NULL, read_it, &r2);
  pthread_join(t1, NULL);
  pthread_join(t2, NULL);
  CHECK(r1.ok && r2.ok);
  CHECK_INT_EQ(provider_stat(p, "submitted"), 1);
  af_value_free(a);
  af_value_free(q);
  af_provider_free(p);
  af_context_free(c);
}

struct recorder {
  af_context_t* c;
  int ok;
};

static void* record_and_read(void* arg) {
  struct recorder* r = arg;
  int i;
  r->ok = 1;
  for (i = 0; i < 200; i++) {
    char buf[16];
    af_value_t *x, *h;
    const char* s;
    size_t len;
    snprintf(buf, sizeof buf, "%d", i);
    x = str_in(r->c, buf);
    h = hello(r->c, x);
    if (af_value_get_str(h, &s, &len) != NULL || len != 6 + strlen(buf)) r->ok = 0;
    af_value_free(h);
    af_value_free(x);
  }
  return NULL;
}

static void threads_record_and_read_on_one_context(void) {
  af_context_t* c = lazy_ctx(NULL);
  struct recorder r[4];
  pthread_t t[4];
  int i;
  for (i = 0; i < 4; i++) {
    r[i].c = c;
    pthread_create(&t[i], NULL, record_and_read, &r[i]);
  }
  for (i = 0; i < 4; i++) pthread_join(t[i], NULL);
  for (i = 0; i < 4; i++) CHECK(r[i].ok);
  CHECK_INT_EQ(stat_of(c, "lazy", "recorded"), 800);
  CHECK_INT_EQ(stat_of(c, "lazy", "pending"), 0);
  CHECK_INT_EQ(stat_of(c, "plan_cache", "entries"), 1);
  af_context_free(c);
}

/* ---- the plan cache ----------------------------------------------------- */

static void a_loop_compiles_once(void) {
  af_context_t* c = lazy_ctx(NULL);
  int i;
  for (i = 0; i < 1000; i++) {
    char buf[16];
    af_value_t *x, *h, *h2;
    snprintf(buf, sizeof buf, "item %d", i);
    x = str_in(c, buf);
    h = hello(c, x);
    h2 = hello(c, h);
    if (i == 999) CHECK_JSON(h2, "\"Hello Hello item 999\"");
    else CHECK_OK(af_eval(c, &h2, 1));
    af_value_free(h2);
    af_value_free(h);
    af_value_free(x);
  }
  CHECK_INT_EQ(stat_of(c, "plan_cache", "misses"), 1);
  CHECK_INT_EQ(stat_of(c, "plan_cache", "hits"), 999);
  af_context_free(c);
}

static af_error_t* concat_twice(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                                af_value_t** out) {
  const af_value_t* parts[2];
  (void)ud;
  (void)n;
  parts[0] = in[0];
  parts[1] = in[0];
  return af_concat(c, parts, 2, out);
}

static af_ir_t* trace_concat_twice(af_context_t* c) {
  af_value_t* ex = str_in(c, "e");
  af_ir_t* ir = NULL;
  CHECK_OK(af_trace(c, concat_twice, NULL, (const af_value_t* const*)&ex, 1, NULL, &ir));
  af_value_free(ex);
  return ir;
}

static void compile_and_ir_call_share_the_cache(void) {
  af_ir_t *a = trace_concat_twice(ctx), *b = trace_concat_twice(ctx); /* equal, not the same */
  af_program_t *pa = NULL, *pb = NULL;
  af_value_t *x = str_in(ctx, "ab"), *out = NULL;
  CHECK(a != b);
  CHECK_OK(af_compile(ctx, a, &pa));
  CHECK_OK(af_compile(ctx, b, &pb));
  CHECK_INT_EQ(stat_of(ctx, "plan_cache", "misses"), 1);
  CHECK_INT_EQ(stat_of(ctx, "plan_cache", "hits"), 1);
  if (CHECK_OK(af_ir_call(ctx, b, (const af_value_t* const*)&x, 1, &out))) CHECK_JSON(out, "\"abab\"");
  CHECK_INT_EQ(stat_of(ctx, "plan_cache", "hits"), 2);
  af_value_free(out);
  af_value_free(x);
  af_program_free(pa);
  af_program_free(pb);
  af_ir_free(a);
  af_ir_free(b);
}

static void lru_evicts_at_its_bound(void) {
  const char* o = "{\"lazy\":true,\"plan_cache\":{\"max_entries\":2}}";
  af_context_t* c = lazy_ctx(o);
  af_value_t *x = str_in(c, "x"), *v = NULL;
  const af_value_t* xs[3];
  int n;
  xs[0] = xs[1] = xs[2] = x;
  /* Three structures: concat of 1, 2 and 3 inputs. */
  for (n = 1; n <= 3; n++) {
    CHECK_OK(af_concat(c, xs, (size_t)n, &v));
    CHECK_OK(af_eval(c, &v, 1));
    af_value_free(v);
  }
  CHECK_INT_EQ(stat_of(c, "plan_cache", "entries"), 2);
  CHECK_INT_EQ(stat_of(c, "plan_cache", "evictions"), 1);
  /* The first was evicted: compiling it again is a miss. */
  CHECK_OK(af_concat(c, xs, 1, &v));
  CHECK_JSON(v, "\"x\"");
  af_value_free(v);
  CHECK_INT_EQ(stat_of(c, "plan_cache", "misses"), 4);
  af_value_free(x);
  af_context_free(c);
}

static char cache_dir[] = "/tmp/af_lazy_cache_XXXXXX";

static void remove_dir(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache_dir);
  if (system(cmd) != 0) printf("    could not remove %s\n", cache_dir);
}

static af_error_t* hello_trace(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                               af_value_t** out) {
  (void)ud;
  (void)n;
  *out = hello(c, in[0]);
  return NULL;
}

static af_context_t* ctx_with_dir(int lazy) {
  char o[256];
  snprintf(o, sizeof o, "{\"lazy\":%s,\"plan_cache\":{\"dir\":\"%s/plans\"}}", lazy ? "true" : "false",
           cache_dir);
  return lazy_ctx(o);
}

static void cache_file(char* path, size_t n, uint64_t hash) {
  snprintf(path, n, "%s/plans/%016llx.afp", cache_dir, (unsigned long long)hash);
}

/* The child process of plan_cache_is_shared_between_processes. */
static int child_evaluates(void) {
  af_context_t* c = ctx_with_dir(1);
  af_value_t *x, *h;
  af_bytes_t b = {NULL, 0};
  int ok;
  if (!c) return 2;
  x = str_in(c, "from the child");
  h = hello(c, x);
  ok = af_value_to_json(h, &b) == NULL && strcmp((const char*)b.data, "\"Hello from the child\"") == 0;
  af_bytes_free(&b);
  ok = ok && stat_of(c, "plan_cache", "disk_hits") == 1 && stat_of(c, "plan_cache", "misses") == 0;
  af_value_free(h);
  af_value_free(x);
  af_context_free(c);
  return ok ? 0 : 1;
}

static void plan_cache_is_shared_between_processes(void) {
  af_context_t* c;
  af_value_t *x, *h;
  pid_t pid;
  int status = -1;
  if (!mkdtemp(cache_dir)) {
    CHECK(!"mkdtemp");
    return;
  }
  c = ctx_with_dir(1);
  if (!c) return;
  x = str_in(c, "parent");
  h = hello(c, x);
  CHECK_JSON(h, "\"Hello parent\"");
  CHECK_INT_EQ(stat_of(c, "plan_cache", "misses"), 1);
  af_value_free(h);
  af_value_free(x);
  af_context_free(c);
  fflush(stdout);
  pid = fork();
  if (pid == 0) {
    char* argv[] = {(char*)"/proc/self/exe", (char*)"--child-cache", cache_dir, NULL};
    execv("/proc/self/exe", argv);
    _exit(3);
  }
  waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  remove_dir();
}

static void write_bytes(const char* path, const void* data, size_t n) {
  FILE* f = fopen(path, "wb");
  if (!f) return;
  fwrite(data, 1, n, f);
  fclose(f);
}

static size_t read_bytes(const char* path, unsigned char* buf, size_t cap) {
  FILE* f = fopen(path, "rb");
  size_t n;
  if (!f) return 0;
  n = fread(buf, 1, cap, f);
  fclose(f);
  return n;
}

/* Compiles ir on a fresh context with the cache dir; checks where the plan
 * came from and that it runs. */
static void compile_expecting(af_ir_t* ir, long disk_hits, long misses) {
  af_context_t* c = ctx_with_dir(0);
  af_program_t* p = NULL;
  af_value_t *x = str_in(c, "z"), *out = NULL;
  if (CHECK_OK(af_compile(c, ir, &p))) {
    CHECK_INT_EQ(stat_of(c, "plan_cache", "disk_hits"), disk_hits);
    CHECK_INT_EQ(stat_of(c, "plan_cache", "misses"), misses);
    if (CHECK_OK(af_program_call(c, p, (const af_value_t* const*)&x, 1, &out))) CHECK_JSON(out, "\"zz\"");
  }
  af_value_free(out);
  af_value_free(x);
  af_program_free(p);
  af_context_free(c);
}

static void corrupt_cache_files_are_misses(void) {
  af_ir_t* ir = trace_concat_twice(ctx);
  char path[512], other_path[512];
  static unsigned char buf[1 << 16];
  size_t n;
  if (!mkdtemp(cache_dir) || !ir) {
    CHECK(!"setup");
    af_ir_free(ir);
    return;
  }
  cache_file(path, sizeof path, af_ir_hash(ir));
  compile_expecting(ir, 0, 1); /* compiled and written */
  compile_expecting(ir, 1, 0); /* found on disk */
  n = read_bytes(path, buf, sizeof buf);
  CHECK(n > 64);
  /* Truncated. */
  write_bytes(path, buf, n / 2);
  compile_expecting(ir, 0, 1);
  compile_expecting(ir, 1, 0); /* rewritten */
  /* One bit flipped. */
  n = read_bytes(path, buf, sizeof buf);
  buf[n - 5] ^= 0x10;
  write_bytes(path, buf, n);
  compile_expecting(ir, 0, 1);
  compile_expecting(ir, 1, 0);
  /* A valid program of another IR under this IR's name. */
  {
    af_context_t* c = ctx_with_dir(0);
    af_value_t* ex = str_in(c, "e");
    af_ir_t* three = NULL;
    af_program_t* p = NULL;
    CHECK_OK(af_trace(c, hello_trace, NULL, (const af_value_t* const*)&ex, 1, NULL, &three));
    if (three) {
      CHECK_OK(af_compile(c, three, &p));
      cache_file(other_path, sizeof other_path, af_ir_hash(three));
      n = read_bytes(other_path, buf, sizeof buf);
      CHECK(n > 0);
      write_bytes(path, buf, n);
    }
    af_program_free(p);
    af_ir_free(three);
    af_value_free(ex);
    af_context_free(c);
  }
  compile_expecting(ir, 0, 1); /* foreign: a miss, and the right program */
  compile_expecting(ir, 1, 0);
  af_ir_free(ir);
  remove_dir();
}

/* ---- a lazy program equals the traced one ------------------------------ */

/* ask the model, then tell whether the answer is the expected one */
static af_value_t* pipeline(af_context_t* c, const af_value_t* q) {
  af_value_t *a = ask(c, q), *expected = str_in(c, "m|Hello hi"), *same = NULL, *h = hello(c, q), *a2 = ask(c, h);
  af_value_t *res = NULL, *m = NULL;
  const af_value_t* parts[3];
  CHECK_OK(af_match(c, a2, expected, &m));
  parts[0] = a;
  parts[1] = a2;
  parts[2] = m;
  CHECK_OK(af_value_list(c, parts, 3, &res));
  af_value_free(a);
  af_value_free(a2);
  af_value_free(expected);
  af_value_free(same);
  af_value_free(h);
  af_value_free(m);
  return res;
}

static af_error_t* pipeline_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                               af_value_t** out) {
  (void)ud;
  (void)n;
  *out = pipeline(c, in[0]);
  return NULL;
}

static void a_lazy_program_equals_the_traced_one(void) {
  af_context_t* c = lazy_ctx(NULL);
  af_provider_t *p1 = route_echo(c, "{}"), *p2 = route_echo(ctx, "{}");
  af_value_t *q = str_in(c, "hi"), *lazy = pipeline(c, q), *traced = NULL;
  af_ir_t* ir = NULL;
  af_bytes_t a = {NULL, 0}, b = {NULL, 0};
  CHECK_OK(af_trace(ctx, pipeline_fn, NULL, (const af_value_t* const*)&q, 1, NULL, &ir));
  if (ir) CHECK_OK(af_ir_call(ctx, ir, (const af_value_t* const*)&q, 1, &traced));
  if (CHECK_OK(af_value_to_json(lazy, &a)) && traced && CHECK_OK(af_value_to_json(traced, &b)))
    CHECK_STR_EQ((const char*)a.data, (const char*)b.data);
  CHECK_JSON(lazy, "[\"m|hi\",\"m|Hello hi\",true]");
  /* The traced IR called on the lazy context is recorded like the rest. */
  if (ir) {
    af_value_t* again = NULL;
    CHECK_OK(af_ir_call(c, ir, (const af_value_t* const*)&q, 1, &again));
    CHECK_INT_EQ(af_value_ready(again), 0);
    CHECK_JSON(again, "[\"m|hi\",\"m|Hello hi\",true]");
    af_value_free(again);
  }
  af_bytes_free(&a);
  af_bytes_free(&b);
  af_value_free(traced);
  af_value_free(lazy);
  af_value_free(q);
  af_ir_free(ir);
  af_provider_free(p1);
  af_provider_free(p2);
  af_context_free(c);
}

/* A switch recorded on a lazy context, keyed by a promise: the branch taken
 * is decided when it runs. */
static void a_lazy_switch_takes_the_branch_of_its_promised_key(void) {
  af_context_t* c = lazy_ctx(NULL);
  af_provider_t* p = route_echo(c, "{}");
  af_ir_t* shout = trace_concat_twice(c);
  af_ir_t* greet = NULL;
  af_value_t *ex = str_in(c, "e"), *q = str_in(c, "billing"), *x = str_in(c, "x"), *out = NULL;
  const char* names[] = {"m|billing", "other"};
  size_t lens[] = {9, 5};
  af_value_t* key = ask(c, q); /* "m|billing", known only when it runs */
  CHECK_OK(af_trace(c, hello_trace, NULL, (const af_value_t* const*)&ex, 1, NULL, &greet));
  if (greet && shout) {
    const af_ir_t* branches[2];
    branches[0] = shout;
    branches[1] = greet;
    CHECK_OK(af_switch(c, key, names, lens, branches, 2, (const af_value_t* const*)&x, 1, &out));
    CHECK_INT_EQ(af_value_ready(out), 0);
    CHECK_JSON(out, "\"xx\"");
    CHECK_INT_EQ(provider_stat(p, "submitted"), 1);
  }
  af_value_free(out);
  af_value_free(key);
  af_value_free(x);
  af_value_free(q);
  af_value_free(ex);
  af_ir_free(greet);
  af_ir_free(shout);
  af_provider_free(p);
  af_context_free(c);
}

int main(int argc, char** argv) {
  static const struct test_case cases[] = {
      CASE(reading_a_promise_evaluates_it),
      CASE(structure_is_known_at_once),
      CASE(eval_runs_independent_calls_together),
      CASE(a_dropped_promise_never_runs),
      CASE(an_input_of_a_live_promise_is_kept),
      CASE(observable_operations_run_with_the_next_evaluation),
      CASE(errors_name_the_origin_and_keep_the_cause),
      CASE(bad_input_is_refused),
      CASE(two_threads_reading_one_promise_run_it_once),
      CASE(threads_record_and_read_on_one_context),
      CASE(a_loop_compiles_once),
      CASE(compile_and_ir_call_share_the_cache),
      CASE(lru_evicts_at_its_bound),
      CASE(plan_cache_is_shared_between_processes),
      CASE(corrupt_cache_files_are_misses),
      CASE(a_lazy_program_equals_the_traced_one),
      CASE(a_lazy_switch_takes_the_branch_of_its_promised_key),
  };
  if (argc == 3 && strcmp(argv[1], "--child-cache") == 0) {
    snprintf(cache_dir, sizeof cache_dir, "%s", argv[2]);
    return child_evaluates();
  }
  return run_cases(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
