/* effects_test.c — host functions registered pure or effectful
 * (af_register_function_with, AF_FUNCTION_PURE): what dce, cse, memoize and
 * a lazy context may do with their calls, how af_ir_eqn_json shows it, that
 * saved graphs keep it, and the registration's errors. */
#include "lazy_common.h"

struct counter {
  int calls;
  int destroyed;
};

static struct counter sent, looked;

/* "send" stands for a tool with an effect; "lookup" for a pure one. Both
 * return their argument with a prefix. */
static af_error_t* tagged(void* ud, const af_value_t* const* args, size_t n, af_value_t** out,
                          const char* tag) {
  const char* s = NULL;
  size_t len = 0;
  char buf[128];
  af_error_t* e;
  ((struct counter*)ud)->calls++;
  if (n != 1) return af_error_new(AF_ERR_INVALID_ARGUMENT, "takes one argument", 18);
  e = af_value_get_str(args[0], &s, &len);
  if (e) return e;
  if (len > 100) len = 100;
  snprintf(buf, sizeof buf, "%s:%.*s", tag, (int)len, s);
  return af_value_str(NULL, buf, strlen(buf), out);
}

static af_error_t* send_fn(void* ud, const af_value_t* const* args, size_t n, af_value_t** out) {
  return tagged(ud, args, n, out, "sent");
}

static af_error_t* lookup_fn(void* ud, const af_value_t* const* args, size_t n, af_value_t** out) {
  return tagged(ud, args, n, out, "found");
}

static void count_destroy(void* ud) { ((struct counter*)ud)->destroyed++; }

static af_function_options_t options(uint32_t flags, af_host_fn fn, struct counter* k,
                                     const af_value_t* kinds) {
  af_function_options_t o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.flags = flags;
  o.fn = fn;
  o.user_data = k;
  o.result_kinds = kinds;
  return o;
}

/* Registers send (effectful, the default) and lookup (pure) on c. */
static void register_both(af_context_t* c) {
  af_value_t* kinds = mk_json("\"str\"");
  af_function_options_t s = options(0, send_fn, &sent, kinds);
  af_function_options_t l = options(AF_FUNCTION_PURE, lookup_fn, &looked, kinds);
  CHECK_OK(af_register_function_with(c, "send", 4, &s));
  CHECK_OK(af_register_function_with(c, "lookup", 6, &l));
  af_value_free(kinds);
  sent.calls = looked.calls = 0;
}

/* f(x) = x, calling send(x) and lookup(x) and reading neither. */
static af_error_t* unused_calls_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                                   af_value_t** out) {
  af_value_t* a = NULL;
  af_value_t* b = NULL;
  af_error_t* e = af_host_call(c, "send", 4, in, n, &a);
  (void)ud;
  if (!e) e = af_host_call(c, "lookup", 6, in, n, &b);
  af_value_free(a);
  af_value_free(b);
  if (!e) *out = af_value_clone(in[0]);
  return e;
}

/* f(x) = concat(name(x), name(x)): two equal calls of the function ud names. */
static af_error_t* twice_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                            af_value_t** out) {
  const char* name = (const char*)ud;
  af_value_t* parts[2] = {NULL, NULL};
  af_error_t* e = af_host_call(c, name, strlen(name), in, n, &parts[0]);
  if (!e) e = af_host_call(c, name, strlen(name), in, n, &parts[1]);
  if (!e) e = af_concat(c, AS_ARGS(parts), 2, out);
  free_items(parts, 2);
  return e;
}

/* Which equations of ir call host functions, as the JSON af_ir_eqn_json
 * gives ("" past the last one). */
static char* host_eqn_json(const af_ir_t* ir, size_t which) {
  size_t i, seen = 0;
  for (i = 0; i < af_ir_eqn_count(ir); ++i) {
    af_bytes_t b = {NULL, 0};
    char* s = bytes_to_cstr_at(af_ir_eqn_json(ir, i, &b), &b, "af_ir_eqn_json", __FILE__, __LINE__);
    if (!s) return NULL;
    if (strstr(s, "\"prim\":\"host_call\"") && seen++ == which) return s;
    free(s);
  }
  return NULL;
}

static void unused_effectful_calls_run_unused_pure_calls_do_not(void) {
  af_ir_t* ir;
  register_both(ctx);
  ir = TRACE(unused_calls_fn, NULL, "[\"x\"]", NULL);
  if (!ir) return;
  CHECK_CALL(ir, "[\"a\"]", "\"a\"");
  CHECK_INT_EQ(sent.calls, 1);
  CHECK_INT_EQ(looked.calls, 0);
  CHECK_CALL(ir, "[\"b\"]", "\"b\"");
  CHECK_INT_EQ(sent.calls, 2);
  CHECK_INT_EQ(looked.calls, 0);
  af_ir_free(ir);
}

static size_t host_calls_in(const af_ir_t* ir) {
  size_t n = 0;
  char* s;
  while ((s = host_eqn_json(ir, n)) != NULL) {
    free(s);
    n++;
  }
  return n;
}

static void equal_effectful_calls_are_never_merged(void) {
  af_ir_t* send2;
  af_ir_t* lookup2;
  af_ir_t* merged = NULL;
  af_cse_options_t all;
  memset(&all, 0, sizeof all);
  all.struct_size = sizeof all;
  all.merge_nondeterministic = 1;
  register_both(ctx);
  send2 = TRACE(twice_fn, (void*)"send", "[\"x\"]", NULL);
  lookup2 = TRACE(twice_fn, (void*)"lookup", "[\"x\"]", NULL);
  if (!send2 || !lookup2) goto done;
  if (CHECK_OK(af_cse_ex(ctx, send2, &all, &merged))) CHECK_INT_EQ(host_calls_in(merged), 2);
  af_ir_free(merged);
  merged = NULL;
  if (CHECK_OK(af_cse(ctx, lookup2, &merged))) CHECK_INT_EQ(host_calls_in(merged), 1);
  /* Running compiles, and compile merges what cse may. */
  CHECK_CALL(send2, "[\"a\"]", "\"sent:asent:a\"");
  CHECK_INT_EQ(sent.calls, 2);
  CHECK_CALL(lookup2, "[\"a\"]", "\"found:afound:a\"");
  CHECK_INT_EQ(looked.calls, 1);
done:
  af_ir_free(merged);
  af_ir_free(send2);
  af_ir_free(lookup2);
}

static void memoize_answers_pure_calls_only(void) {
  af_ir_t* s;
  af_ir_t* l;
  register_both(ctx);
  s = TRACE(twice_fn, (void*)"send", "[\"x\"]", NULL);
  l = TRACE(twice_fn, (void*)"lookup", "[\"x\"]", NULL);
  if (s && l && CHECK_OK(af_memoize_push(ctx))) {
    CHECK_CALL(s, "[\"a\"]", "\"sent:asent:a\"");
    CHECK_CALL(s, "[\"a\"]", "\"sent:asent:a\"");
    CHECK_INT_EQ(sent.calls, 4);
    CHECK_CALL(l, "[\"a\"]", "\"found:afound:a\"");
    CHECK_CALL(l, "[\"a\"]", "\"found:afound:a\"");
    CHECK_INT_EQ(looked.calls, 1);
    CHECK_OK(af_memoize_pop(ctx));
  }
  af_ir_free(s);
  af_ir_free(l);
}

/* af_ir_eqn_json shows the flag; the .afg bytes keep it, and a loaded
 * graph runs by the flags it was traced with, whatever is registered now. */
static void eqn_json_shows_effects_and_saved_graphs_keep_them(void) {
  af_ir_t* ir;
  af_ir_t* loaded = NULL;
  af_bytes_t bytes = {NULL, 0};
  char *s = NULL, *l = NULL;
  af_value_t* kinds = mk_json("\"str\"");
  register_both(ctx);
  ir = TRACE(unused_calls_fn, NULL, "[\"x\"]", NULL);
  if (!ir) goto done;
  s = host_eqn_json(ir, 0);
  l = host_eqn_json(ir, 1);
  CHECK(s && l);
  if (s && l) {
    CHECK_CONTAINS(s, "\"name\":\"send\"");
    CHECK_CONTAINS(s, "\"effects\":true");
    CHECK_NOT_CONTAINS(s, "\"pure\"");
    CHECK_CONTAINS(l, "\"name\":\"lookup\"");
    CHECK_CONTAINS(l, "\"effects\":false");
    CHECK_CONTAINS(l, "\"pure\":true");
  }
  free(s);
  free(l);
  s = l = NULL;
  if (!CHECK_OK(af_ir_to_bytes(ir, &bytes))) goto done;
  if (!CHECK_OK(af_ir_from_bytes(ctx, bytes.data, bytes.len, &loaded))) goto done;
  CHECK(af_ir_equal(ir, loaded));
  l = host_eqn_json(loaded, 1);
  CHECK(l != NULL);
  if (l) CHECK_CONTAINS(l, "\"pure\":true");
  /* Swap the registrations: the graph still says send is effectful and
   * lookup pure. */
  {
    af_function_options_t s2 = options(AF_FUNCTION_PURE, send_fn, &sent, kinds);
    af_function_options_t l2 = options(0, lookup_fn, &looked, kinds);
    CHECK_OK(af_register_function_with(ctx, "send", 4, &s2));
    CHECK_OK(af_register_function_with(ctx, "lookup", 6, &l2));
  }
  CHECK_CALL(loaded, "[\"a\"]", "\"a\"");
  CHECK_INT_EQ(sent.calls, 1);
  CHECK_INT_EQ(looked.calls, 0);
done:
  free(s);
  free(l);
  af_bytes_free(&bytes);
  af_ir_free(loaded);
  af_ir_free(ir);
  af_value_free(kinds);
}

/* On a lazy context an effectful call runs even when its promise is
 * dropped unread, and only once; a pure one dropped unread never runs. */
static void lazy_context_runs_effectful_calls_once_even_unread(void) {
  af_context_t* lc = lazy_ctx(NULL);
  af_value_t* x;
  af_value_t* kept = NULL;
  af_value_t* dropped = NULL;
  if (!lc) return;
  register_both(lc);
  x = str_in(lc, "a");
  CHECK_OK(af_host_call(lc, "send", 4, (const af_value_t* const*)&x, 1, &dropped));
  af_value_free(dropped);
  dropped = NULL;
  CHECK_OK(af_host_call(lc, "lookup", 6, (const af_value_t* const*)&x, 1, &dropped));
  af_value_free(dropped);
  CHECK_INT_EQ(sent.calls, 0); /* recorded, not run */
  CHECK_OK(af_eval(lc, NULL, 0));
  CHECK_INT_EQ(sent.calls, 1);
  CHECK_INT_EQ(looked.calls, 0);
  /* Evaluated by af_eval, then read: it ran once. */
  CHECK_OK(af_host_call(lc, "send", 4, (const af_value_t* const*)&x, 1, &kept));
  CHECK_OK(af_eval(lc, NULL, 0));
  CHECK_JSON(kept, "\"sent:a\"");
  CHECK_INT_EQ(sent.calls, 2);
  af_value_free(kept);
  af_value_free(x);
  af_context_free(lc);
}

static void blocking_and_async_functions_register_with_options(void) {
  af_value_t* kinds = mk_json("\"str\"");
  af_value_t* x = mk_str("q");
  af_value_t* out = NULL;
  af_function_options_t o = options(AF_FUNCTION_BLOCKING | AF_FUNCTION_PURE, lookup_fn, &looked, kinds);
  looked.calls = 0;
  CHECK_OK(af_register_function_with(ctx, "lookup_pool", 11, &o));
  if (CHECK_OK(af_host_call(ctx, "lookup_pool", 11, (const af_value_t* const*)&x, 1, &out)))
    CHECK_JSON(out, "\"found:q\"");
  CHECK_INT_EQ(looked.calls, 1);
  af_value_free(out);
  af_value_free(x);
  af_value_free(kinds);
}

static void async_noop(void* ud, const af_value_t* const* args, size_t n, af_host_request_t* req) {
  (void)ud;
  af_error_free(af_host_request_complete(req, args[n - 1]));
  af_host_request_free(req);
}

static void bad_options_are_refused_and_destroy_runs(void) {
  af_value_t* kinds = mk_json("\"str\"");
  struct counter k = {0, 0};
  af_function_options_t o;
  CHECK_ERR(af_register_function_with(ctx, "f", 1, NULL), AF_ERR_INVALID_ARGUMENT, "`options` is NULL");

  o = options(0, lookup_fn, &k, kinds);
  o.destroy = count_destroy;
  o.struct_size = 8; /* destroy lies beyond what the caller declared: not read */
  CHECK_ERR(af_register_function_with(ctx, "f", 1, &o), AF_ERR_INVALID_ARGUMENT, "struct_size is too small");
  CHECK_INT_EQ(k.destroyed, 0);
  k.destroyed = 1;

  o = options(4, lookup_fn, &k, kinds);
  o.destroy = count_destroy;
  CHECK_ERR(af_register_function_with(ctx, "f", 1, &o), AF_ERR_INVALID_ARGUMENT, "unknown bits in options.flags");
  CHECK_INT_EQ(k.destroyed, 2);

  o = options(0, NULL, &k, kinds);
  o.destroy = count_destroy;
  CHECK_ERR(af_register_function_with(ctx, "f", 1, &o), AF_ERR_INVALID_ARGUMENT, "exactly one of options.fn");
  CHECK_INT_EQ(k.destroyed, 3);

  o = options(0, lookup_fn, &k, kinds);
  o.async_fn = async_noop;
  o.destroy = count_destroy;
  CHECK_ERR(af_register_function_with(ctx, "f", 1, &o), AF_ERR_INVALID_ARGUMENT, "exactly one of options.fn");
  CHECK_INT_EQ(k.destroyed, 4);

  o = options(AF_FUNCTION_BLOCKING, NULL, &k, kinds);
  o.async_fn = async_noop;
  o.destroy = count_destroy;
  CHECK_ERR(af_register_function_with(ctx, "f", 1, &o), AF_ERR_INVALID_ARGUMENT, "AF_FUNCTION_BLOCKING");
  CHECK_INT_EQ(k.destroyed, 5);

  /* The errors of af_register_function still apply (and destroy runs). */
  o = options(0, lookup_fn, &k, NULL);
  o.destroy = count_destroy;
  CHECK_ERR(af_register_function_with(ctx, "f", 1, &o), AF_ERR_INVALID_ARGUMENT, "result_kinds");
  CHECK_INT_EQ(k.destroyed, 6);

  /* An async function with options works, pure or not. */
  o = options(AF_FUNCTION_PURE, NULL, NULL, kinds);
  o.async_fn = async_noop;
  if (CHECK_OK(af_register_function_with(ctx, "echo_async", 10, &o))) {
    af_value_t* x = mk_str("z");
    af_value_t* out = NULL;
    if (CHECK_OK(af_host_call(ctx, "echo_async", 10, (const af_value_t* const*)&x, 1, &out)))
      CHECK_JSON(out, "\"z\"");
    af_value_free(out);
    af_value_free(x);
  }
  af_value_free(kinds);
}

int main(int argc, char** argv) {
  static const struct test_case cases[] = {
      CASE(unused_effectful_calls_run_unused_pure_calls_do_not),
      CASE(equal_effectful_calls_are_never_merged),
      CASE(memoize_answers_pure_calls_only),
      CASE(eqn_json_shows_effects_and_saved_graphs_keep_them),
      CASE(lazy_context_runs_effectful_calls_once_even_unread),
      CASE(blocking_and_async_functions_register_with_options),
      CASE(bad_options_are_refused_and_destroy_runs),
  };
  return run_cases(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
