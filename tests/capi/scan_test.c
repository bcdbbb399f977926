/* scan_test.c — af_scan: a carry threaded through a list, one output per
 * item. Eager, traced (over a list input of any length), lazy; reverse;
 * a tree of lists; batch, pushforward and pullback checked against the
 * same body unrolled by hand; saved graphs; cost; the errors of bad bodies
 * and inputs. */
#include "lazy_common.h"

/* body(c, x) = [concat(c, x), format("<{}>", x)] */
static af_error_t* body_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                           af_value_t** out) {
  af_value_t* parts[2] = {NULL, NULL};
  af_error_t* e = af_concat(c, in, 2, &parts[0]);
  (void)ud;
  (void)n;
  if (!e) e = af_format(c, "<{}>", 4, &in[1], 1, NULL, &parts[1]);
  if (!e) e = af_value_list(c, AS_ARGS(parts), 2, out);
  free_items(parts, 2);
  return e;
}

/* body(c, x) = an LM call asked "<c> / <x>", as the next carry and y. */
static af_error_t* lm_body_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                              af_value_t** out) {
  const char* keys[2] = {"role", "content"};
  size_t lens[2] = {4, 7};
  af_value_t* items[2] = {NULL, NULL};
  af_value_t *msg = NULL, *msgs = NULL, *model = NULL, *reply = NULL;
  const af_value_t* pair[2];
  af_error_t* e = af_value_str(c, "user", 4, &items[0]);
  (void)ud;
  (void)n;
  if (!e) e = af_format(c, "{} / {}", 7, in, 2, NULL, &items[1]);
  if (!e) e = af_value_dict(c, keys, lens, AS_ARGS(items), 2, &msg);
  if (!e) e = af_value_list(c, AS_ARGS(&msg), 1, &msgs);
  if (!e) e = af_value_str(c, "m", 1, &model);
  if (!e) e = af_lm_call(c, msgs, model, &reply);
  pair[0] = reply;
  pair[1] = reply;
  if (!e) e = af_value_list(c, pair, 2, out);
  free_items(items, 2);
  af_value_free(msg);
  af_value_free(msgs);
  af_value_free(model);
  af_value_free(reply);
  return e;
}

struct prog {
  af_ir_t* body;
  int32_t reverse;
};

/* f(init, xs) = scan(body, init, xs) */
static af_error_t* scan_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                           af_value_t** out) {
  struct prog* p = (struct prog*)ud;
  (void)n;
  return af_scan(c, p->body, in[0], in[1], p->reverse, out);
}

/* The same as scan_fn over three items, unrolled by hand. */
static af_error_t* unrolled_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                               af_value_t** out) {
  af_value_t* carry = af_value_clone(in[0]);
  af_value_t* ys[3] = {NULL, NULL, NULL};
  af_value_t* pair[2] = {NULL, NULL};
  af_error_t* e = NULL;
  size_t i;
  (void)ud;
  (void)n;
  for (i = 0; i < 3 && !e; ++i) {
    const af_value_t* args[2];
    af_value_t* step = NULL;
    args[0] = carry;
    args[1] = in[1 + i];
    e = body_fn(NULL, c, args, 2, &step);
    if (!e) {
      af_value_free(carry);
      carry = NULL;
      e = af_value_index(step, 0, &carry);
    }
    if (!e) e = af_value_index(step, 1, &ys[i]);
    af_value_free(step);
  }
  pair[0] = carry;
  if (!e) e = af_value_list(c, AS_ARGS(ys), 3, &pair[1]);
  if (!e) e = af_value_list(c, AS_ARGS(pair), 2, out);
  free_items(ys, 3);
  free_items(pair, 2);
  return e;
}

static af_ir_t* trace_scan(struct prog* p, af_trace_fn body) {
  af_value_t* ex[2];
  af_value_t* lists = mk_json("[false, true]");
  af_trace_options_t o;
  af_ir_t* ir = NULL;
  p->body = TRACE(body, NULL, "[\"c\",\"x\"]", NULL);
  if (!p->body) return NULL;
  ex[0] = mk_str("c");
  ex[1] = mk_json("[\"x\"]");
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.list_mask = lists;
  CHECK_OK(af_trace_with(ctx, scan_fn, p, AS_ARGS(ex), 2, &o, &ir));
  free_items(ex, 2);
  af_value_free(lists);
  return ir;
}

static void run_eagerly_forward_and_in_reverse(void) {
  af_ir_t* body = TRACE(body_fn, NULL, "[\"c\",\"x\"]", NULL);
  af_value_t* init = mk_str(">");
  af_value_t* xs = mk_json("[\"a\",\"b\",\"c\"]");
  af_value_t* out = NULL;
  if (!body) return;
  if (CHECK_OK(af_scan(ctx, body, init, xs, 0, &out))) CHECK_JSON(out, "[\">abc\",[\"<a>\",\"<b>\",\"<c>\"]]");
  af_value_free(out);
  out = NULL;
  /* Reverse: last item first; ys stay at their items' indices. */
  if (CHECK_OK(af_scan(ctx, body, init, xs, 1, &out))) CHECK_JSON(out, "[\">cba\",[\"<a>\",\"<b>\",\"<c>\"]]");
  af_value_free(out);
  af_value_free(xs);
  out = NULL;
  /* No items: the initial carry and empty ys. */
  xs = mk_json("[]");
  if (CHECK_OK(af_scan(ctx, body, init, xs, 0, &out))) CHECK_JSON(out, "[\">\",[]]");
  af_value_free(out);
  af_value_free(xs);
  af_value_free(init);
  af_ir_free(body);
}

static void traced_over_a_list_of_any_length(void) {
  struct prog p = {NULL, 0};
  af_ir_t* ir = trace_scan(&p, body_fn);
  if (ir) {
    char* text = ir_text(ir);
    if (text) CHECK_CONTAINS(text, "scan[");
    free(text);
    CHECK_CALL(ir, "[\"\",[\"a\"]]", "[\"a\",[\"<a>\"]]");
    CHECK_CALL(ir, "[\"0\",[\"a\",\"b\",\"c\",\"d\"]]", "[\"0abcd\",[\"<a>\",\"<b>\",\"<c>\",\"<d>\"]]");
    CHECK_CALL(ir, "[\"0\",[]]", "[\"0\",[]]");
  }
  af_ir_free(ir);
  af_ir_free(p.body);
}

/* xs as a dict of two lists: the item is the dict of their i-th items. */
static af_error_t* pair_body_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                                af_value_t** out) {
  af_value_t *q = NULL, *a = NULL, *line = NULL, *next = NULL;
  af_value_t* parts[2] = {NULL, NULL};
  af_error_t* e = af_value_key(in[1], "q", 1, &q);
  (void)ud;
  (void)n;
  if (!e) e = af_value_key(in[1], "a", 1, &a);
  parts[0] = q;
  parts[1] = a;
  if (!e) e = af_format(c, "{}={};", 6, AS_ARGS(parts), 2, NULL, &line);
  parts[0] = af_value_clone(in[0]);
  parts[1] = line;
  if (!e) e = af_concat(c, AS_ARGS(parts), 2, &next);
  af_value_free(parts[0]);
  parts[0] = next;
  if (!e) e = af_value_list(c, AS_ARGS(parts), 2, out);
  af_value_free(q);
  af_value_free(a);
  free_items(parts, 2);
  return e;
}

static void xs_may_be_a_tree_of_lists(void) {
  af_ir_t* body = TRACE(pair_body_fn, NULL, "[\"c\",{\"q\":\"x\",\"a\":\"y\"}]", NULL);
  af_value_t* init = mk_str("");
  af_value_t* xs = mk_json("{\"q\":[\"1+1\",\"2+2\"],\"a\":[\"2\",\"4\"]}");
  af_value_t* ragged = mk_json("{\"q\":[\"1+1\",\"2+2\"],\"a\":[\"2\"]}");
  af_value_t* out = NULL;
  if (!body) goto done;
  if (CHECK_OK(af_scan(ctx, body, init, xs, 0, &out)))
    CHECK_JSON(out, "[\"1+1=2;2+2=4;\",[\"1+1=2;\",\"2+2=4;\"]]");
  af_value_free(out);
  out = NULL;
  CHECK_ERR(af_scan(ctx, body, init, ragged, 0, &out), AF_ERR_INVALID_ARGUMENT, "must have one length");
done:
  af_value_free(out);
  af_value_free(xs);
  af_value_free(ragged);
  af_value_free(init);
  af_ir_free(body);
}

/* Runs ir on inputs (JSON) and returns the output's JSON with every '[' and
 * ']' removed: the leaves in order, whatever the nesting (the bodies here
 * write no brackets into strings). */
static char* leaves_of(const af_ir_t* ir, const char* inputs) {
  af_value_t* out = NULL;
  char *s, *w, *r;
  if (!CHECK_OK(call_json(ir, inputs, &out))) return NULL;
  s = json_of(out);
  af_value_free(out);
  if (!s) return NULL;
  for (w = r = s; *r; ++r)
    if (*r != '[' && *r != ']') *w++ = *r;
  *w = 0;
  return s;
}

static af_ir_t* transformed(const af_ir_t* ir, const char* which) {
  af_ir_t* out = NULL;
  af_error_t* e = !strcmp(which, "pullback") ? af_pullback(ctx, ir, &out)
                  : !strcmp(which, "pushforward") ? af_pushforward(ctx, ir, &out)
                                                  : af_batch(ctx, ir, NULL, &out);
  if (!CHECK_OK(e)) return NULL;
  CHECK_OK(af_ir_validate(out));
  return out;
}

/* pushforward and pullback of the scan equal those of the same body
 * unrolled: tangents and feedback thread through the carry alike. */
static void transforms_agree_with_the_unrolled_body(void) {
  static const struct {
    const char* transform;
    const char* scan_inputs;
    const char* unrolled_inputs;
  } cases[] = {
      {"", "[\"i\",[\"a\",\"b\",\"c\"]]", "[\"i\",\"a\",\"b\",\"c\"]"},
      {"pushforward", "[[\"i\",[\"a\",\"b\",\"c\"]],[\"di\",[\"da\",null,\"dc\"]]]",
       "[[\"i\",\"a\",\"b\",\"c\"],[\"di\",\"da\",null,\"dc\"]]"},
      {"pullback", "[[\"i\",[\"a\",\"b\",\"c\"]],[\"G\",[\"y0\",null,\"y2\"]]]",
       "[[\"i\",\"a\",\"b\",\"c\"],[\"G\",[\"y0\",null,\"y2\"]]]"},
      {"pullback", "[[\"i\",[\"a\",\"b\",\"c\"]],[null,[\"y0\",\"y1\",\"y2\"]]]",
       "[[\"i\",\"a\",\"b\",\"c\"],[null,[\"y0\",\"y1\",\"y2\"]]]"},
  };
  struct prog p = {NULL, 0};
  af_ir_t* scan = trace_scan(&p, body_fn);
  af_ir_t* unrolled = TRACE(unrolled_fn, NULL, "[\"c\",\"x\",\"x\",\"x\"]", NULL);
  size_t i;
  for (i = 0; scan && unrolled && i < sizeof cases / sizeof cases[0]; ++i) {
    af_ir_t* s = *cases[i].transform ? transformed(scan, cases[i].transform) : af_ir_clone(scan);
    af_ir_t* u = *cases[i].transform ? transformed(unrolled, cases[i].transform) : af_ir_clone(unrolled);
    char* a = s ? leaves_of(s, cases[i].scan_inputs) : NULL;
    char* b = u ? leaves_of(u, cases[i].unrolled_inputs) : NULL;
    if (a && b && strcmp(a, b) != 0)
      check_fail(__FILE__, __LINE__, "%s: scan gives %s, unrolled gives %s", cases[i].transform, a, b);
    CHECK(a && b && strstr(a, "iabc"));
    free(a);
    free(b);
    af_ir_free(s);
    af_ir_free(u);
  }
  af_ir_free(scan);
  af_ir_free(unrolled);
  af_ir_free(p.body);
}

/* Batch maps the scan over items, each with its own length. */
static void batched_over_documents_of_different_lengths(void) {
  struct prog p = {NULL, 0};
  af_ir_t* ir = trace_scan(&p, body_fn);
  af_ir_t* b = ir ? transformed(ir, "batch") : NULL;
  if (b)
    CHECK_CALL(b, "[[\"1\",\"2\"],[[\"a\",\"b\"],[\"c\"]]]", "[[\"1ab\",\"2c\"],[[\"<a>\",\"<b>\"],[\"<c>\"]]]");
  af_ir_free(b);
  af_ir_free(ir);
  af_ir_free(p.body);
}

/* A rolling summary with an LM call per chunk: each call sees the carry;
 * cost counts one pass of the body; the saved graph runs the same. */
static void rolling_summary_with_an_lm_saves_and_costs(void) {
  struct prog p = {NULL, 0};
  af_provider_t* echo = NULL;
  af_ir_t* ir;
  af_ir_t* loaded = NULL;
  af_bytes_t bytes = {NULL, 0}, cost = {NULL, 0};
  if (CHECK_OK(af_provider_echo_new(NULL, 0, &echo))) CHECK_OK(af_context_route(ctx, "m", 1, echo));
  af_provider_free(echo);
  ir = trace_scan(&p, lm_body_fn);
  if (!ir) goto done;
  CHECK_CALL(ir, "[\"start\",[\"one\",\"two\"]]",
             "[\"m|m|start / one / two\",[\"m|start / one\",\"m|m|start / one / two\"]]");
  if (CHECK_OK(af_ir_cost_json(ir, 1, &cost))) CHECK_CONTAINS((const char*)cost.data, "\"total\":{\"calls\":1");
  if (CHECK_OK(af_ir_to_bytes(ir, &bytes)) && CHECK_OK(af_ir_from_bytes(ctx, bytes.data, bytes.len, &loaded))) {
    CHECK(af_ir_equal(ir, loaded));
    CHECK_CALL(loaded, "[\"s\",[\"x\"]]", "[\"m|s / x\",[\"m|s / x\"]]");
  }
done:
  af_bytes_free(&bytes);
  af_bytes_free(&cost);
  af_ir_free(loaded);
  af_ir_free(ir);
  af_ir_free(p.body);
}

static void on_a_lazy_context_it_is_a_promise(void) {
  af_context_t* lc = lazy_ctx(NULL);
  af_ir_t* body = TRACE(body_fn, NULL, "[\"c\",\"x\"]", NULL);
  af_value_t *init = NULL, *xs = NULL, *out = NULL;
  if (!lc || !body) goto done;
  init = str_in(lc, "");
  CHECK_OK(af_value_from_json(lc, "[\"p\",\"q\"]", 9, &xs));
  if (CHECK_OK(af_scan(lc, body, init, xs, 0, &out))) {
    CHECK_INT_EQ(af_value_ready(out), 0);
    CHECK_JSON(out, "[\"pq\",[\"<p>\",\"<q>\"]]");
  }
done:
  af_value_free(out);
  af_value_free(xs);
  af_value_free(init);
  af_ir_free(body);
  af_context_free(lc);
}

/* body(c) with one input; body(c, x) = x (not [carry, y]); body(c, x) =
 * [match(c, x), x] (the carry turns bool). */
static af_error_t* one_input_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                                af_value_t** out) {
  (void)ud;
  (void)c;
  (void)n;
  *out = af_value_clone(in[0]);
  return NULL;
}
static af_error_t* no_pair_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                              af_value_t** out) {
  (void)ud;
  (void)c;
  (void)n;
  *out = af_value_clone(in[1]);
  return NULL;
}
static af_error_t* bool_carry_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                                 af_value_t** out) {
  af_value_t* parts[2] = {NULL, NULL};
  af_error_t* e = af_match(c, in[0], in[1], &parts[0]);
  (void)ud;
  (void)n;
  parts[1] = af_value_clone(in[1]);
  if (!e) e = af_value_list(c, AS_ARGS(parts), 2, out);
  free_items(parts, 2);
  return e;
}

static void bad_bodies_and_inputs_are_refused(void) {
  af_ir_t* one = TRACE(one_input_fn, NULL, "[\"c\"]", NULL);
  af_ir_t* no_pair = TRACE(no_pair_fn, NULL, "[\"c\",\"x\"]", NULL);
  af_ir_t* bool_carry = TRACE(bool_carry_fn, NULL, "[\"c\",\"x\"]", NULL);
  af_ir_t* body = TRACE(body_fn, NULL, "[\"c\",\"x\"]", NULL);
  af_value_t* init = mk_str("");
  af_value_t* xs = mk_json("[\"a\"]");
  af_value_t* ints = mk_json("[1,2]");
  af_value_t* not_list = mk_str("a");
  af_value_t* out = NULL;
  if (!one || !no_pair || !bool_carry || !body) goto done;
  CHECK_ERR(af_scan(ctx, one, init, xs, 0, &out), AF_ERR_INVALID_ARGUMENT, "must take two inputs");
  CHECK_NULLED(out, af_value_free);
  CHECK_ERR(af_scan(ctx, no_pair, init, xs, 0, &out), AF_ERR_INVALID_ARGUMENT, "must return [next carry, y]");
  CHECK_ERR(af_scan(ctx, bool_carry, init, xs, 0, &out), AF_ERR_INVALID_ARGUMENT, "changes carry leaf 0");
  CHECK_ERR(af_scan(ctx, body, init, not_list, 0, &out), AF_ERR_INVALID_ARGUMENT, "not a list");
  CHECK_ERR(af_scan(ctx, body, init, ints, 0, &out), AF_ERR_INVALID_ARGUMENT, "xs leaf 0 is list<int>");
  CHECK_ERR(af_scan(ctx, NULL, init, xs, 0, &out), AF_ERR_INVALID_ARGUMENT, "body");
  CHECK_ERR(af_scan(ctx, body, NULL, xs, 0, &out), AF_ERR_INVALID_ARGUMENT, "init");
  CHECK_ERR(af_scan(ctx, body, init, NULL, 0, &out), AF_ERR_INVALID_ARGUMENT, "xs");
done:
  af_value_free(init);
  af_value_free(xs);
  af_value_free(ints);
  af_value_free(not_list);
  af_ir_free(one);
  af_ir_free(no_pair);
  af_ir_free(bool_carry);
  af_ir_free(body);
}

/* A list written out of traced values (an input traced without a list
 * mask) is refused while tracing, not recorded as a literal holding them. */
static void a_list_of_traced_values_is_refused(void) {
  struct prog p = {NULL, 0};
  af_ir_t* ir = NULL;
  p.body = TRACE(body_fn, NULL, "[\"c\",\"x\"]", NULL);
  if (p.body)
    CHECK_ERR(trace_json(scan_fn, &p, "[\"c\",[\"x\",\"y\"]]", NULL, &ir), AF_ERR_INVALID_ARGUMENT,
              "list of traced values", "list_mask");
  CHECK(ir == NULL);
  af_ir_free(p.body);
}

int main(int argc, char** argv) {
  static const struct test_case cases[] = {
      CASE(run_eagerly_forward_and_in_reverse),
      CASE(traced_over_a_list_of_any_length),
      CASE(xs_may_be_a_tree_of_lists),
      CASE(transforms_agree_with_the_unrolled_body),
      CASE(batched_over_documents_of_different_lengths),
      CASE(rolling_summary_with_an_lm_saves_and_costs),
      CASE(on_a_lazy_context_it_is_a_promise),
      CASE(bad_bodies_and_inputs_are_refused),
      CASE(a_list_of_traced_values_is_refused),
  };
  return run_cases(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
