/* Lists of any length as trace inputs (af_trace_with's list_mask): a traced
 * function calls a batched IR on its list input once, and the program runs
 * on lists of other lengths, nested lists included; wrong kinds and lengths
 * are INVALID_ARGUMENT naming the path; saved programs keep list inputs. */
#include "check.h"

static af_value_t* cstr(af_context_t* c, const char* s) {
  af_value_t* v = NULL;
  af_value_str(c, s, strlen(s), &v);
  return v;
}

/* process_one(ticket) = lm_call("echo", [user: "Triage: " + ticket]). */
static af_error_t* process_one(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                               af_value_t** out) {
  af_value_t *prompt = NULL, *role = cstr(c, "user"), *model = cstr(c, "echo"), *m = NULL,
             *msgs = NULL;
  const char* keys[] = {"role", "content"};
  size_t lens[] = {4, 7};
  const af_value_t* vals[2];
  af_error_t* e;
  (void)ud;
  (void)n;
  e = af_format(c, "Triage: {}", 10, in, 1, NULL, &prompt);
  vals[0] = role;
  vals[1] = prompt;
  if (!e) e = af_value_dict(c, keys, lens, vals, 2, &m);
  if (!e) e = af_value_list(c, (const af_value_t* const*)&m, 1, &msgs);
  if (!e) e = af_lm_call(c, msgs, model, out);
  af_value_free(prompt);
  af_value_free(role);
  af_value_free(model);
  af_value_free(m);
  af_value_free(msgs);
  return e;
}

/* lm_call("echo", [user: in[0]]): on a traced list, a batched call. */
static af_error_t* ask_echo(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                            af_value_t** out) {
  af_value_t *role = cstr(c, "user"), *model = cstr(c, "echo"), *m = NULL, *msgs = NULL;
  const char* keys[] = {"role", "content"};
  size_t lens[] = {4, 7};
  const af_value_t* vals[2];
  af_error_t* e;
  (void)ud;
  (void)n;
  vals[0] = role;
  vals[1] = in[0];
  e = af_value_dict(c, keys, lens, vals, 2, &m);
  if (!e) e = af_value_list(c, (const af_value_t* const*)&m, 1, &msgs);
  if (!e) e = af_lm_call(c, msgs, model, out);
  af_value_free(role);
  af_value_free(model);
  af_value_free(m);
  af_value_free(msgs);
  return e;
}

/* Calls the IR in ud on the traced inputs. */
static af_error_t* call_ud(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                           af_value_t** out) {
  return af_ir_call(c, (const af_ir_t*)ud, in, n, out);
}

/* af_trace_with on a JSON list of examples and JSON masks (NULL = none). */
static af_error_t* trace_lists(af_trace_fn fn, void* ud, const char* examples_json,
                               const char* list_mask_json, const char* static_mask_json,
                               af_ir_t** out) {
  af_value_t* ex[MAX_INPUTS];
  af_value_t* lists = list_mask_json ? mk_json(list_mask_json) : NULL;
  af_value_t* statics = static_mask_json ? mk_json(static_mask_json) : NULL;
  size_t n = split_list(examples_json, ex);
  af_trace_options_t o;
  af_error_t* e;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.list_mask = lists;
  o.static_mask = statics;
  e = af_trace_with(ctx, fn, ud, AS_ARGS(ex), n, &o, out);
  free_items(ex, n);
  af_value_free(lists);
  af_value_free(statics);
  return e;
}

static af_ir_t* traced_lists(af_trace_fn fn, void* ud, const char* examples_json,
                             const char* list_mask_json) {
  af_ir_t* ir = NULL;
  if (!CHECK_OK(trace_lists(fn, ud, examples_json, list_mask_json, NULL, &ir))) return NULL;
  return ir;
}

static af_ir_t* batched(const af_ir_t* ir) {
  af_ir_t* b = NULL;
  if (ir) CHECK_OK(af_batch(ctx, ir, NULL, &b));
  return b;
}

static size_t count_prim(const af_ir_t* ir, const char* name) {
  size_t i, k = 0;
  for (i = 0; i < af_ir_eqn_count(ir); i++)
    if (strcmp(af_ir_eqn_prim(ir, i), name) == 0) k++;
  return k;
}

static void route_echo(void) {
  af_provider_t* echo = NULL;
  CHECK_OK(af_provider_echo_new(NULL, 0, &echo));
  CHECK_OK(af_context_route(ctx, "echo", 4, echo));
  af_provider_free(echo);
}

/* ---- cases ------------------------------------------------------------- */

static void a_traced_list_calls_a_batched_ir_once(void) {
  af_ir_t* one = TRACE(process_one, NULL, "[\"t\"]", NULL);
  af_ir_t* each = batched(one);
  af_ir_t* all;
  if (!each) goto done;
  route_echo();
  all = traced_lists(call_ud, each, "[[\"an example ticket\"]]", "[true]");
  if (all) {
    char* text = ir_text(all);
    /* The batched equations are recorded once: the traced program is the
     * batched IR itself, one LM call for every item. */
    CHECK(af_ir_equal(all, each));
    CHECK_INT_EQ(count_prim(all, "lm_call"), 1);
    if (text) CHECK_CONTAINS(text, "ir (%0:list<str>)");
    free(text);
    CHECK_CALL(all, "[[\"a\"]]", "[\"echo|Triage: a\"]");
    CHECK_CALL(all, "[[\"a\",\"b\",\"c\"]]",
               "[\"echo|Triage: a\",\"echo|Triage: b\",\"echo|Triage: c\"]");
  }
  af_ir_free(all);
done:
  af_ir_free(each);
  af_ir_free(one);
}

/* [batch(pair)(a, b), a]: two list inputs and the list itself as an output. */
static af_error_t* pair_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                           af_value_t** out) {
  af_value_t* parts[2] = {NULL, NULL};
  af_error_t* e;
  (void)ud;
  (void)n;
  e = af_concat(c, in, 2, &parts[0]);
  if (!e) e = af_value_list(c, AS_ARGS(parts), 1, out);
  af_value_free(parts[0]);
  return e;
}
static af_error_t* pair_all(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                            af_value_t** out) {
  af_value_t* joined = NULL;
  af_value_t* items[2];
  af_error_t* e = af_ir_call(c, (const af_ir_t*)ud, in, n, &joined);
  (void)n;
  if (e) return e;
  items[0] = joined;
  items[1] = (af_value_t*)in[0];
  e = af_value_list(c, AS_ARGS(items), 2, out);
  af_value_free(joined);
  return e;
}

static void wrong_kinds_and_lengths_name_the_path(void) {
  af_ir_t* pair = TRACE(pair_fn, NULL, "[\"a\",\"b\"]", NULL);
  af_ir_t* each = batched(pair);
  af_ir_t* all;
  af_value_t* out = NULL;
  if (!each) goto done;
  all = traced_lists(pair_all, each, "[[\"x\"],[\"y\"]]", "[true,true]");
  if (all) {
    CHECK_CALL(all, "[[\"a\",\"b\"],[\"1\",\"2\"]]", "[[[\"a1\",\"b2\"]],[\"a\",\"b\"]]");
    CHECK_ERR(call_json(all, "[[\"a\",3],[\"1\",\"2\"]]", &out), AF_ERR_INVALID_ARGUMENT,
              "input[0][1]", "expected str, found int", "list<str>");
    CHECK_ERR(call_json(all, "[\"a\",[\"1\"]]", &out), AF_ERR_INVALID_ARGUMENT, "input[0]",
              "expected list<str>", "found str");
    CHECK_ERR(call_json(all, "[[\"a\",\"b\"],[\"1\"]]", &out), AF_ERR_INVALID_ARGUMENT,
              "different lengths", "input[0] has 2", "input[1] has 1");
    CHECK_ERR(call_json(all, "[[],[]]", &out), AF_ERR_INVALID_ARGUMENT, "empty");
  }
  af_ir_free(all);
done:
  af_ir_free(each);
  af_ir_free(pair);
}

static void an_lm_call_on_a_traced_list_is_one_batched_call(void) {
  af_ir_t* all = traced_lists(ask_echo, NULL, "[[\"x\"]]", "[true]");
  route_echo();
  if (all) {
    CHECK_INT_EQ(af_ir_eqn_count(all), 1);
    CHECK_CALL(all, "[[\"a\",\"b\"]]", "[\"echo|a\",\"echo|b\"]");
    CHECK_CALL(all, "[[]]", "[]");
  }
  af_ir_free(all);
}

static void nested_lists_of_any_length(void) {
  af_ir_t* one = TRACE(process_one, NULL, "[\"t\"]", NULL);
  af_ir_t* each = batched(one);
  af_ir_t* groups = batched(each);
  af_ir_t* all;
  af_value_t* out = NULL;
  if (!groups) goto done;
  route_echo();
  all = traced_lists(call_ud, groups, "[[[\"x\",\"y\"],[\"z\"]]]", "[true]");
  if (all) {
    char* text = ir_text(all);
    if (text) CHECK_CONTAINS(text, "ir (%0:list<list<str>>)");
    free(text);
    CHECK_CALL(all, "[[[\"a\",\"b\"],[\"c\"]]]",
               "[[\"echo|Triage: a\",\"echo|Triage: b\"],[\"echo|Triage: c\"]]");
    CHECK_CALL(all, "[[[\"d\"]]]", "[[\"echo|Triage: d\"]]");
    CHECK_ERR(call_json(all, "[[[\"a\"],\"b\"]]", &out), AF_ERR_INVALID_ARGUMENT, "input[0][1]",
              "expected list<str>", "found str");
    CHECK_ERR(call_json(all, "[[[\"a\"],[true]]]", &out), AF_ERR_INVALID_ARGUMENT, "input[0][1][0]",
              "expected str, found bool");
  }
  af_ir_free(all);
done:
  af_ir_free(groups);
  af_ir_free(each);
  af_ir_free(one);
}

/* Reads the length of its list input (refused while tracing). */
static af_error_t* read_len(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                            af_value_t** out) {
  size_t len = 0;
  af_error_t* e = af_value_len(in[0], &len);
  (void)ud;
  (void)c;
  (void)n;
  if (e) return e;
  return af_value_int(c, (int64_t)len, out);
}
/* Passes its list input where a str is expected. */
static af_error_t* concat_list(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                               af_value_t** out) {
  (void)ud;
  return af_concat(c, in, n, out);
}
/* Passes its list input to an IR that takes a str. */
static af_error_t* identity(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                            af_value_t** out) {
  (void)ud;
  (void)c;
  (void)n;
  *out = af_value_clone(in[0]);
  return NULL;
}

static void list_masks_are_checked_when_tracing(void) {
  af_ir_t* ir = (af_ir_t*)&ir;
  af_ir_t* one = TRACE(identity, NULL, "[\"t\"]", NULL);
  af_trace_options_t small;
  af_value_t* ex = mk_json("[\"a\"]");
  CHECK_ERR(trace_lists(identity, NULL, "[\"a\"]", "[true]", NULL, &ir), AF_ERR_INVALID_ARGUMENT,
            "input[0]", "marks a str", "only a list");
  CHECK_NULLED(ir, af_ir_free);
  CHECK_ERR(trace_lists(identity, NULL, "[[]]", "[true]", NULL, &ir), AF_ERR_INVALID_ARGUMENT,
            "input[0]", "empty list", "example item");
  CHECK_ERR(trace_lists(identity, NULL, "[[\"a\",1]]", "[true]", NULL, &ir),
            AF_ERR_INVALID_ARGUMENT, "input[0]", "one kind");
  CHECK_ERR(trace_lists(identity, NULL, "[[{\"k\":\"a\"}]]", "[true]", NULL, &ir),
            AF_ERR_INVALID_ARGUMENT, "dict of lists");
  CHECK_ERR(trace_lists(identity, NULL, "[[\"a\"]]", "[true,true]", NULL, &ir),
            AF_ERR_INVALID_ARGUMENT, "list mask", "prefix");
  CHECK_ERR(trace_lists(identity, NULL, "[{\"k\":[\"a\"]}]", "[{\"j\":true}]", NULL, &ir),
            AF_ERR_INVALID_ARGUMENT, "list mask", "prefix", "input[0]");
  CHECK_ERR(trace_lists(identity, NULL, "[[\"a\"]]", "[1]", NULL, &ir), AF_ERR_INVALID_ARGUMENT,
            "list mask must hold bools");
  CHECK_ERR(trace_lists(identity, NULL, "[[\"a\"]]", "[true]", "[true]", &ir),
            AF_ERR_INVALID_ARGUMENT, "input[0]", "cannot be static");
  CHECK_ERR(trace_lists(read_len, NULL, "[[\"a\"]]", "[true]", NULL, &ir), AF_ERR_INVALID_ARGUMENT,
            "placeholder|traced");
  CHECK_ERR(trace_lists(concat_list, NULL, "[[\"a\"]]", "[true]", NULL, &ir),
            AF_ERR_INVALID_ARGUMENT, "list<str>");
  if (one)
    CHECK_ERR(trace_lists(call_ud, one, "[[\"a\"]]", "[true]", NULL, &ir), AF_ERR_INVALID_ARGUMENT,
              "input[0]", "expected str", "list<str>");
  memset(&small, 0, sizeof small);
  small.struct_size = 4;
  CHECK_ERR(af_trace_with(ctx, identity, NULL, AS_ARGS(&ex), 1, &small, &ir),
            AF_ERR_INVALID_ARGUMENT, "struct_size");
  CHECK_NULLED(ir, af_ir_free);
  /* A list inside a dict, marked through the dict; NULL options = af_trace. */
  ir = traced_lists(identity, NULL, "[{\"k\":[1,2],\"s\":\"x\"}]", "[{\"k\":true,\"s\":false}]");
  if (ir) {
    CHECK_CALL(ir, "[{\"k\":[7,8,9],\"s\":\"y\"}]", "{\"k\":[7,8,9],\"s\":\"y\"}");
    af_ir_free(ir);
  }
  ir = NULL;
  if (CHECK_OK(af_trace_with(ctx, identity, NULL, AS_ARGS(&ex), 1, NULL, &ir)))
    CHECK_CALL(ir, "[[\"b\"]]", "[\"b\"]");
  af_ir_free(ir);
  af_ir_free(one);
  af_value_free(ex);
}

static void saved_programs_keep_list_inputs(void) {
  af_ir_t* one = TRACE(process_one, NULL, "[\"t\"]", NULL);
  af_ir_t* each = batched(one);
  af_ir_t* all = each ? traced_lists(call_ud, each, "[[\"x\"]]", "[true]") : NULL;
  af_program_t *p = NULL, *back = NULL;
  af_value_t* in = mk_json("[\"a\",\"b\",\"c\",\"d\"]");
  af_value_t* out = NULL;
  char path[128];
  snprintf(path, sizeof path, "/tmp/af_list_inputs_test_%ld.afg", (long)getpid());
  route_echo();
  if (all && CHECK_OK(af_compile(ctx, all, &p)) &&
      CHECK_OK(af_program_save(p, path, strlen(path))) &&
      CHECK_OK(af_program_load(ctx, path, strlen(path), &back))) {
    if (CHECK_OK(af_program_call(ctx, back, AS_ARGS(&in), 1, &out)))
      CHECK_JSON(out,
                 "[\"echo|Triage: a\",\"echo|Triage: b\",\"echo|Triage: c\",\"echo|Triage: d\"]");
  }
  remove(path);
  af_value_free(out);
  af_value_free(in);
  af_program_free(back);
  af_program_free(p);
  af_ir_free(all);
  af_ir_free(each);
  af_ir_free(one);
}

int main(int argc, char** argv) {
  static const struct test_case cases[] = {
      CASE(a_traced_list_calls_a_batched_ir_once),
      CASE(wrong_kinds_and_lengths_name_the_path),
      CASE(an_lm_call_on_a_traced_list_is_one_batched_call),
      CASE(nested_lists_of_any_length),
      CASE(list_masks_are_checked_when_tracing),
      CASE(saved_programs_keep_list_inputs),
  };
  return run_cases(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
