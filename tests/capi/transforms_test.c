/* transforms_test.c — batch, pushforward, pullback, dce, cse and sched
 * through the C API: every primitive under every transform and nested
 * compositions (one table of program x transform chain -> output), the
 * shape of transformed IRs, and the errors of bad input. */
#include "check.h"

/* ---- programs --------------------------------------------------------- */

static af_error_t* lit(af_context_t* c, const char* s, af_value_t** out) {
  return af_value_str(c, s, strlen(s), out);
}

/* format("<{}|{a}>", x, a=y) */
static af_error_t* format_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                             af_value_t** out) {
  const char* key = "a";
  size_t key_len = 1;
  af_value_t* named = NULL;
  af_error_t* e = af_value_dict(c, &key, &key_len, &in[1], 1, &named);
  (void)ud;
  (void)n;
  if (!e) e = af_format(c, "<{}|{a}>", 8, in, 1, named, out);
  af_value_free(named);
  return e;
}

/* concat(x, "-", y) */
static af_error_t* concat_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                             af_value_t** out) {
  af_value_t* parts[3] = {NULL, NULL, NULL};
  af_error_t* e = lit(c, "-", &parts[1]);
  (void)ud;
  (void)n;
  parts[0] = af_value_clone(in[0]);
  parts[2] = af_value_clone(in[1]);
  if (!e) e = af_concat(c, AS_ARGS(parts), 3, out);
  free_items(parts, 3);
  return e;
}

/* [match(x, y), x] */
static af_error_t* match_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                            af_value_t** out) {
  af_value_t* items[2] = {NULL, NULL};
  af_error_t* e = af_match(c, in[0], in[1], &items[0]);
  (void)ud;
  (void)n;
  items[1] = af_value_clone(in[0]);
  if (!e) e = af_value_list(c, AS_ARGS(items), 2, out);
  free_items(items, 2);
  return e;
}

/* concat(stop_gradient(x), y) */
static af_error_t* stop_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                           af_value_t** out) {
  af_value_t* parts[2] = {NULL, NULL};
  af_error_t* e = af_stop_gradient(c, in[0], &parts[0]);
  (void)ud;
  (void)n;
  parts[1] = af_value_clone(in[1]);
  if (!e) e = af_concat(c, AS_ARGS(parts), 2, out);
  free_items(parts, 2);
  return e;
}

/* depends(concat(x, "1"), [y]) */
static af_error_t* depends_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                              af_value_t** out) {
  af_value_t* parts[2] = {NULL, NULL};
  af_value_t* v = NULL;
  af_error_t* e = lit(c, "1", &parts[1]);
  (void)ud;
  (void)n;
  parts[0] = af_value_clone(in[0]);
  if (!e) e = af_concat(c, AS_ARGS(parts), 2, &v);
  if (!e) e = af_depends(c, v, &in[1], 1, out);
  free_items(parts, 2);
  af_value_free(v);
  return e;
}

/* checkpoint(concat(x, y), "k", "c") */
static af_error_t* checkpoint_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                                 af_value_t** out) {
  af_value_t* v = NULL;
  af_error_t* e = af_concat(c, in, 2, &v);
  (void)ud;
  (void)n;
  if (!e) e = af_checkpoint(c, v, "k", 1, "c", 1, out);
  af_value_free(v);
  return e;
}

/* concat(x, format("{}{}", x, x)): x has three consumers */
static af_error_t* multi_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                            af_value_t** out) {
  const af_value_t* two[2];
  af_value_t* parts[2] = {NULL, NULL};
  af_error_t* e;
  (void)ud;
  (void)n;
  two[0] = in[0];
  two[1] = in[0];
  e = af_format(c, "{}{}", 4, two, 2, NULL, &parts[1]);
  parts[0] = af_value_clone(in[0]);
  if (!e) e = af_concat(c, AS_ARGS(parts), 2, out);
  free_items(parts, 2);
  return e;
}

/* Branches of the switch programs. */
static af_error_t* branch_a_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                               af_value_t** out) {
  (void)ud;
  (void)n;
  return af_format(c, "A{}", 3, in, 1, NULL, out);
}
static af_error_t* branch_b_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                               af_value_t** out) {
  const af_value_t* two[2];
  (void)ud;
  (void)n;
  two[0] = in[0];
  two[1] = in[0];
  return af_concat(c, two, 2, out);
}

/* A function returning a constant (the JSON in ud): literal branches. */
static af_error_t* const_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                            af_value_t** out) {
  (void)in;
  (void)n;
  return af_value_from_json(c, (const char*)ud, strlen((const char*)ud), out);
}

struct branches {
  const char* names[4];
  size_t lens[4];
  af_ir_t* irs[4];
  size_t n;
};

static void free_branches(struct branches* b) {
  size_t i;
  for (i = 0; i < b->n; i++) af_ir_free(b->irs[i]);
}

/* switch(key, {"a": format("A{}", x), "b": concat(x, x)}, x) */
static af_error_t* switch_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                             af_value_t** out) {
  struct branches* b = (struct branches*)ud;
  (void)n;
  return af_switch(c, in[0], b->names, b->lens, (const af_ir_t* const*)b->irs, b->n, &in[1], 1, out);
}

/* The counter loop's state is [s, c] with c in "0".."3". */
static struct branches go_branches, step_branches;

static af_error_t* state_item(af_context_t* c, const af_value_t* state, size_t i, af_value_t** out) {
  (void)c;
  return af_value_index(state, i, out);
}

/* cond([s, c]) = switch(c, {"0": true, "1": true, "2": true, "3": false}, c) */
static af_error_t* cond_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                           af_value_t** out) {
  af_value_t* k = NULL;
  af_error_t* e = state_item(c, in[0], 1, &k);
  const af_value_t* ops[1];
  (void)ud;
  (void)n;
  ops[0] = k;
  if (!e)
    e = af_switch(c, k, go_branches.names, go_branches.lens, (const af_ir_t* const*)go_branches.irs, 4, ops, 1,
                  out);
  af_value_free(k);
  return e;
}

/* body([s, c]) = [concat(s, "!"), switch(c, {"0": "1", ..., "3": "3"}, c)] */
static af_error_t* body_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                           af_value_t** out) {
  af_value_t* s = NULL;
  af_value_t* k = NULL;
  af_value_t* bang = NULL;
  af_value_t* items[2] = {NULL, NULL};
  af_error_t* e;
  const af_value_t* ops[1];
  (void)ud;
  (void)n;
  e = state_item(c, in[0], 0, &s);
  if (!e) e = state_item(c, in[0], 1, &k);
  if (!e) e = lit(c, "!", &bang);
  if (!e) {
    const af_value_t* parts[2];
    parts[0] = s;
    parts[1] = bang;
    e = af_concat(c, parts, 2, &items[0]);
  }
  ops[0] = k;
  if (!e)
    e = af_switch(c, k, step_branches.names, step_branches.lens, (const af_ir_t* const*)step_branches.irs, 4, ops,
                  1, &items[1]);
  if (!e) e = af_value_list(c, AS_ARGS(items), 2, out);
  af_value_free(s);
  af_value_free(k);
  af_value_free(bang);
  free_items(items, 2);
  return e;
}

/* Branches of the routed loop's body: how s changes at each step. */
static af_error_t* bang_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                           af_value_t** out) {
  af_value_t* parts[2] = {NULL, NULL};
  af_error_t* e = lit(c, "!", &parts[1]);
  (void)ud;
  (void)n;
  parts[0] = af_value_clone(in[0]);
  if (!e) e = af_concat(c, AS_ARGS(parts), 2, out);
  free_items(parts, 2);
  return e;
}
static af_error_t* paren_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                            af_value_t** out) {
  (void)ud;
  (void)n;
  return af_format(c, "({})", 4, in, 1, NULL, out);
}
static af_error_t* identity_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                               af_value_t** out) {
  (void)ud;
  (void)c;
  (void)n;
  *out = af_value_clone(in[0]);
  return NULL;
}

/* How s changes at step c: "0": s + "!", "1": "(" s ")", "2": s + s, "3": s. */
static struct branches route_branches;

/* routed body([s, c]) = [switch(c, route_branches, s), switch(c, step_branches, c)]:
 * the backward of each iteration needs that iteration's key, so the pullback
 * must record the trajectory. */
static af_error_t* routed_body_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                                  af_value_t** out) {
  af_value_t* s = NULL;
  af_value_t* k = NULL;
  af_value_t* items[2] = {NULL, NULL};
  af_error_t* e;
  const af_value_t* ops[1];
  (void)ud;
  (void)n;
  e = state_item(c, in[0], 0, &s);
  if (!e) e = state_item(c, in[0], 1, &k);
  ops[0] = s;
  if (!e)
    e = af_switch(c, k, route_branches.names, route_branches.lens, (const af_ir_t* const*)route_branches.irs, 4,
                  ops, 1, &items[0]);
  ops[0] = k;
  if (!e)
    e = af_switch(c, k, step_branches.names, step_branches.lens, (const af_ir_t* const*)step_branches.irs, 4, ops,
                  1, &items[1]);
  if (!e) e = af_value_list(c, AS_ARGS(items), 2, out);
  af_value_free(s);
  af_value_free(k);
  free_items(items, 2);
  return e;
}

/* lm_call([{"role": "user", "content": format("Q:{}", x)}], y): the echo
 * provider answers "<model>|<content>". */
static af_error_t* lm_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                         af_value_t** out) {
  const char* keys[2] = {"role", "content"};
  size_t lens[2] = {4, 7};
  af_value_t* items[2] = {NULL, NULL};
  af_value_t* msg = NULL;
  af_value_t* msgs = NULL;
  af_error_t* e = lit(c, "user", &items[0]);
  (void)ud;
  (void)n;
  if (!e) e = af_format(c, "Q:{}", 4, in, 1, NULL, &items[1]);
  if (!e) e = af_value_dict(c, keys, lens, AS_ARGS(items), 2, &msg);
  if (!e) e = af_value_list(c, AS_ARGS(&msg), 1, &msgs);
  if (!e) e = af_lm_call(c, msgs, in[1], out);
  free_items(items, 2);
  af_value_free(msg);
  af_value_free(msgs);
  return e;
}

struct loop {
  af_ir_t* cond;
  af_ir_t* body;
};

/* while_loop(cond, body, [s, c], 10) */
static af_error_t* while_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                            af_value_t** out) {
  struct loop* l = (struct loop*)ud;
  af_value_t* init = NULL;
  af_error_t* e = af_value_list(c, in, n, &init);
  if (!e) e = af_while_loop(c, l->cond, l->body, init, 10, out);
  af_value_free(init);
  return e;
}

/* Host function "upper": upper-cases a str. */
static int upper_calls;
static af_error_t* upper(void* ud, const af_value_t* const* args, size_t n, af_value_t** out) {
  const char* s = NULL;
  size_t len = 0, i;
  char buf[256];
  af_error_t* e;
  (void)ud;
  if (n != 1) return af_error_new(AF_ERR_INVALID_ARGUMENT, "upper takes 1 argument", 22);
  e = af_value_get_str(args[0], &s, &len);
  if (e) return e;
  if (len >= sizeof buf) len = sizeof buf - 1;
  for (i = 0; i < len; i++) buf[i] = (char)((s[i] >= 'a' && s[i] <= 'z') ? s[i] - 32 : s[i]);
  upper_calls++;
  return af_value_str(ctx, buf, len, out);
}

static void register_upper(void) {
  af_value_t* kinds = mk_json("\"str\"");
  CHECK_OK(af_register_function(ctx, "upper", 5, upper, NULL, NULL, kinds));
  af_value_free(kinds);
}

/* Every model answered by the echo provider. */
static void route_echo(void) {
  af_provider_t* echo = NULL;
  if (CHECK_OK(af_provider_echo_new(NULL, 0, &echo))) CHECK_OK(af_context_route(ctx, "*", 1, echo));
  af_provider_free(echo);
}

/* concat(stop_gradient(upper(stop_gradient(x))), y) */
static af_error_t* host_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                           af_value_t** out) {
  af_value_t* x = NULL;
  af_value_t* h = NULL;
  af_value_t* parts[2] = {NULL, NULL};
  af_error_t* e = af_stop_gradient(c, in[0], &x);
  const af_value_t* args[1];
  (void)ud;
  (void)n;
  args[0] = x;
  if (!e) e = af_host_call(c, "upper", 5, args, 1, &h);
  if (!e) e = af_stop_gradient(c, h, &parts[0]);
  parts[1] = af_value_clone(in[1]);
  if (!e) e = af_concat(c, AS_ARGS(parts), 2, out);
  af_value_free(x);
  af_value_free(h);
  free_items(parts, 2);
  return e;
}

static struct branches ab;
static struct loop counter, routed;

static void make_branches(void) {
  static const char* digits[4] = {"0", "1", "2", "3"};
  static const char* go[4] = {"true", "true", "true", "false"};
  static const char* step[4] = {"\"1\"", "\"2\"", "\"3\"", "\"3\""};
  size_t i;
  ab.n = 2;
  ab.names[0] = "a";
  ab.names[1] = "b";
  ab.lens[0] = ab.lens[1] = 1;
  ab.irs[0] = TRACE(branch_a_fn, NULL, "[\"x\"]", NULL);
  ab.irs[1] = TRACE(branch_b_fn, NULL, "[\"x\"]", NULL);
  go_branches.n = step_branches.n = 4;
  for (i = 0; i < 4; i++) {
    go_branches.names[i] = step_branches.names[i] = digits[i];
    go_branches.lens[i] = step_branches.lens[i] = 1;
    go_branches.irs[i] = TRACE(const_fn, (void*)go[i], "[\"0\"]", NULL);
    step_branches.irs[i] = TRACE(const_fn, (void*)step[i], "[\"0\"]", NULL);
  }
  counter.cond = TRACE(cond_fn, NULL, "[[\"x\",\"0\"]]", NULL);
  counter.body = TRACE(body_fn, NULL, "[[\"x\",\"0\"]]", NULL);
  route_branches.n = 4;
  for (i = 0; i < 4; i++) {
    route_branches.names[i] = digits[i];
    route_branches.lens[i] = 1;
  }
  route_branches.irs[0] = TRACE(bang_fn, NULL, "[\"x\"]", NULL);
  route_branches.irs[1] = TRACE(paren_fn, NULL, "[\"x\"]", NULL);
  route_branches.irs[2] = TRACE(branch_b_fn, NULL, "[\"x\"]", NULL);
  route_branches.irs[3] = TRACE(identity_fn, NULL, "[\"x\"]", NULL);
  routed.cond = af_ir_clone(counter.cond);
  routed.body = TRACE(routed_body_fn, NULL, "[[\"x\",\"0\"]]", NULL);
}

static void free_made(void) {
  free_branches(&ab);
  free_branches(&go_branches);
  free_branches(&step_branches);
  free_branches(&route_branches);
  af_ir_free(counter.cond);
  af_ir_free(counter.body);
  af_ir_free(routed.cond);
  af_ir_free(routed.body);
}

/* The program named `name`, traced. */
static af_ir_t* program(const char* name) {
  if (!strcmp(name, "format")) return TRACE(format_fn, NULL, "[\"x\",\"y\"]", NULL);
  if (!strcmp(name, "concat")) return TRACE(concat_fn, NULL, "[\"x\",\"y\"]", NULL);
  if (!strcmp(name, "match")) return TRACE(match_fn, NULL, "[\"x\",\"y\"]", NULL);
  if (!strcmp(name, "stop_gradient")) return TRACE(stop_fn, NULL, "[\"x\",\"y\"]", NULL);
  if (!strcmp(name, "depends")) return TRACE(depends_fn, NULL, "[\"x\",\"y\"]", NULL);
  if (!strcmp(name, "checkpoint")) return TRACE(checkpoint_fn, NULL, "[\"x\",\"y\"]", NULL);
  if (!strcmp(name, "multi")) return TRACE(multi_fn, NULL, "[\"x\"]", NULL);
  if (!strcmp(name, "switch")) return TRACE(switch_fn, &ab, "[\"a\",\"x\"]", NULL);
  if (!strcmp(name, "while_loop")) return TRACE(while_fn, &counter, "[\"x\",\"0\"]", NULL);
  if (!strcmp(name, "routed_loop")) return TRACE(while_fn, &routed, "[\"x\",\"0\"]", NULL);
  if (!strcmp(name, "lm_call")) {
    route_echo();
    return TRACE(lm_fn, NULL, "[\"x\",\"m\"]", NULL);
  }
  if (!strcmp(name, "host")) {
    register_upper();
    return TRACE(host_fn, NULL, "[\"x\",\"y\"]", NULL);
  }
  check_fail(__FILE__, __LINE__, "no program %s", name);
  return NULL;
}

/* Applies a comma-separated chain of transforms, left to right. */
static af_ir_t* apply_chain(af_ir_t* ir, const char* chain) {
  char buf[128];
  char* t;
  size_t len = strlen(chain);
  if (len >= sizeof buf) return NULL;
  memcpy(buf, chain, len + 1);
  for (t = strtok(buf, ","); t && ir; t = strtok(NULL, ",")) {
    af_ir_t* next = NULL;
    af_error_t* e;
    if (!strcmp(t, "batch")) e = af_batch(ctx, ir, NULL, &next);
    else if (!strcmp(t, "pushforward")) e = af_pushforward(ctx, ir, &next);
    else if (!strcmp(t, "pullback")) e = af_pullback(ctx, ir, &next);
    else if (!strcmp(t, "dce")) e = af_dce(ctx, ir, NULL, &next);
    else if (!strcmp(t, "cse")) e = af_cse(ctx, ir, &next);
    else if (!strcmp(t, "sched")) e = af_sched(ctx, ir, &next);
    else e = af_error_new(AF_ERR_INTERNAL, "unknown transform", 17);
    af_ir_free(ir);
    ir = NULL;
    if (!CHECK_OK(e)) break;
    if (!CHECK_OK(af_ir_validate(next))) {
      char* text = ir_text(next);
      printf("%s\n", text ? text : "");
      free(text);
    }
    ir = next;
  }
  return ir;
}

/* ---- the table --------------------------------------------------------- */

struct row {
  const char* program;
  const char* chain; /* "" = the program itself */
  const char* inputs;
  const char* expected;
};

static const struct row rows[] = {
    /* The programs as traced. */
    {"format", "", "[\"p\",\"q\"]", "\"<p|q>\""},
    {"switch", "", "[\"b\",\"p\"]", "\"pp\""},
    {"while_loop", "", "[\"p\",\"1\"]", "[\"p!!\",\"3\"]"},
    {"host", "", "[\"p\",\"q\"]", "\"Pq\""},
    {"routed_loop", "", "[\"p\",\"0\"]", "[\"(p!)(p!)\",\"3\"]"},
    {"lm_call", "", "[\"p\",\"m\"]", "\"m|Q:p\""},
    /* pushforward: (primals, tangents) -> [outputs, tangents]; Zero = null. */
    {"format", "pushforward", "[[\"p\",\"q\"],[\"dp\",\"dq\"]]", "[\"<p|q>\",\"<dp|dq>\"]"},
    {"concat", "pushforward", "[[\"p\",\"q\"],[\"dp\",\"dq\"]]", "[\"p-q\",\"dpdq\"]"},
    {"match", "pushforward", "[[\"p\",\"q\"],[\"dp\",\"dq\"]]", "[[false,\"p\"],[null,\"dp\"]]"},
    {"stop_gradient", "pushforward", "[[\"p\",\"q\"],[\"dp\",\"dq\"]]", "[\"pq\",\"dq\"]"},
    {"depends", "pushforward", "[[\"p\",\"q\"],[\"dp\",\"dq\"]]", "[\"p1\",\"dp\"]"},
    {"checkpoint", "pushforward", "[[\"p\",\"q\"],[\"dp\",\"dq\"]]", "[\"pq\",\"dpdq\"]"},
    {"multi", "pushforward", "[[\"p\"],[\"d\"]]", "[\"ppp\",\"ddd\"]"},
    {"switch", "pushforward", "[[\"a\",\"p\"],[\"\",\"dp\"]]", "[\"Ap\",\"Adp\"]"},
    {"switch", "pushforward", "[[\"b\",\"p\"],[\"\",\"dp\"]]", "[\"pp\",\"dpdp\"]"},
    {"while_loop", "pushforward", "[[\"p\",\"1\"],[\"dp\",\"dc\"]]", "[[\"p!!\",\"3\"],[\"dp\",\"\"]]"},
    {"host", "pushforward", "[[\"p\",\"q\"],[\"dp\",\"dq\"]]", "[\"Pq\",\"dq\"]"},
    {"routed_loop", "pushforward", "[[\"p\",\"0\"],[\"d\",\"e\"]]", "[[\"(p!)(p!)\",\"3\"],[\"(d)(d)\",\"\"]]"},
    {"routed_loop", "pushforward", "[[\"p\",\"3\"],[\"d\",\"e\"]]", "[[\"p\",\"3\"],[\"d\",\"e\"]]"},
    {"lm_call", "pushforward", "[[\"p\",\"m\"],[\"d\",\"\"]]", "[\"m|Q:p\",\"m|Q:d\"]"},
    /* pullback: (primals, output_cotangent) -> [outputs, input_cotangents]. */
    {"format", "pullback", "[[\"p\",\"q\"],\"g\"]", "[\"<p|q>\",[\"g\",\"g\"]]"},
    {"concat", "pullback", "[[\"p\",\"q\"],\"g\"]", "[\"p-q\",[\"g\",\"g\"]]"},
    {"match", "pullback", "[[\"p\",\"q\"],[\"should be true\",\"g\"]]", "[[false,\"p\"],[\"g\",null]]"},
    {"stop_gradient", "pullback", "[[\"p\",\"q\"],\"g\"]", "[\"pq\",[null,\"g\"]]"},
    {"depends", "pullback", "[[\"p\",\"q\"],\"g\"]", "[\"p1\",[\"g\",null]]"},
    {"checkpoint", "pullback", "[[\"p\",\"q\"],\"g\"]", "[\"pq\",[\"g\",\"g\"]]"},
    {"multi", "pullback", "[[\"p\"],\"g\"]", "[\"ppp\",[\"ggg\"]]"},
    {"switch", "pullback", "[[\"a\",\"p\"],\"g\"]", "[\"Ap\",[null,\"g\"]]"},
    {"switch", "pullback", "[[\"b\",\"p\"],\"g\"]", "[\"pp\",[null,\"gg\"]]"},
    {"while_loop", "pullback", "[[\"p\",\"1\"],[\"g\",\"h\"]]", "[[\"p!!\",\"3\"],[\"g\",\"\"]]"},
    {"host", "pullback", "[[\"p\",\"q\"],\"g\"]", "[\"Pq\",[null,\"g\"]]"},
    /* The backward of each iteration routes by that iteration's key (the
     * recorded trajectory): "!" and "(...)" pass g on, s + s doubles it. */
    {"routed_loop", "pullback", "[[\"p\",\"0\"],[\"g\",\"h\"]]", "[[\"(p!)(p!)\",\"3\"],[\"gg\",\"\"]]"},
    {"routed_loop", "pullback", "[[\"p\",\"1\"],[\"g\",\"h\"]]", "[[\"(p)(p)\",\"3\"],[\"gg\",\"\"]]"},
    {"routed_loop", "pullback", "[[\"p\",\"3\"],[\"g\",\"h\"]]", "[[\"p\",\"3\"],[\"g\",\"h\"]]"},
    /* One feedback call on the user message (echo answers model|prompt). */
    {"lm_call", "pullback", "[[\"p\",\"m\"],\"g\"]",
     "[\"m|Q:p\",[\"m|The input (the user message):\\nQ:p\\n\\nThe output:\\nm|Q:p\\n\\nFeedback on the "
     "output:\\ng\\n\\nHow should the input be improved?\",null]]"},
    /* batch: every leaf a list of per-item values. */
    {"format", "batch", "[[\"a\",\"b\"],[\"x\",\"y\"]]", "[\"<a|x>\",\"<b|y>\"]"},
    {"concat", "batch", "[[\"a\",\"b\"],[\"x\",\"y\"]]", "[\"a-x\",\"b-y\"]"},
    {"match", "batch", "[[\"a\",\"b\"],[\"a\",\"y\"]]", "[[true,false],[\"a\",\"b\"]]"},
    {"stop_gradient", "batch", "[[\"a\",\"b\"],[\"x\",\"y\"]]", "[\"ax\",\"by\"]"},
    {"depends", "batch", "[[\"a\",\"b\"],[\"x\",\"y\"]]", "[\"a1\",\"b1\"]"},
    {"checkpoint", "batch", "[[\"a\",\"b\"],[\"x\",\"y\"]]", "[\"ax\",\"by\"]"},
    {"switch", "batch", "[[\"a\",\"b\",\"a\"],[\"x\",\"y\",\"z\"]]", "[\"Ax\",\"yy\",\"Az\"]"},
    {"while_loop", "batch", "[[\"p\",\"q\",\"r\"],[\"0\",\"2\",\"3\"]]",
     "[[\"p!!!\",\"q!\",\"r\"],[\"3\",\"3\",\"3\"]]"},
    {"host", "batch", "[[\"a\",\"b\"],[\"x\",\"y\"]]", "[\"Ax\",\"By\"]"},
    {"routed_loop", "batch", "[[\"p\",\"q\",\"r\"],[\"0\",\"2\",\"3\"]]",
     "[[\"(p!)(p!)\",\"qq\",\"r\"],[\"3\",\"3\",\"3\"]]"},
    {"lm_call", "batch", "[[\"p\",\"q\"],[\"m\",\"n\"]]", "[\"m|Q:p\",\"n|Q:q\"]"},
    /* dce / cse / sched keep the outputs. */
    {"format", "dce", "[\"p\",\"q\"]", "\"<p|q>\""},
    {"format", "cse", "[\"p\",\"q\"]", "\"<p|q>\""},
    {"format", "sched", "[\"p\",\"q\"]", "\"<p|q>\""},
    {"concat", "dce", "[\"p\",\"q\"]", "\"p-q\""},
    {"concat", "cse", "[\"p\",\"q\"]", "\"p-q\""},
    {"concat", "sched", "[\"p\",\"q\"]", "\"p-q\""},
    {"match", "dce", "[\"p\",\"p\"]", "[true,\"p\"]"},
    {"match", "cse", "[\"p\",\"q\"]", "[false,\"p\"]"},
    {"match", "sched", "[\"p\",\"q\"]", "[false,\"p\"]"},
    {"stop_gradient", "dce", "[\"p\",\"q\"]", "\"pq\""},
    {"stop_gradient", "cse", "[\"p\",\"q\"]", "\"pq\""},
    {"stop_gradient", "sched", "[\"p\",\"q\"]", "\"pq\""},
    {"depends", "dce", "[\"p\",\"q\"]", "\"p1\""},
    {"depends", "cse", "[\"p\",\"q\"]", "\"p1\""},
    {"depends", "sched", "[\"p\",\"q\"]", "\"p1\""},
    {"checkpoint", "dce", "[\"p\",\"q\"]", "\"pq\""},
    {"checkpoint", "cse", "[\"p\",\"q\"]", "\"pq\""},
    {"checkpoint", "sched", "[\"p\",\"q\"]", "\"pq\""},
    {"multi", "dce", "[\"p\"]", "\"ppp\""},
    {"multi", "cse", "[\"p\"]", "\"ppp\""},
    {"switch", "dce", "[\"a\",\"p\"]", "\"Ap\""},
    {"switch", "cse", "[\"b\",\"p\"]", "\"pp\""},
    {"switch", "sched", "[\"b\",\"p\"]", "\"pp\""},
    {"while_loop", "dce", "[\"p\",\"1\"]", "[\"p!!\",\"3\"]"},
    {"while_loop", "cse", "[\"p\",\"1\"]", "[\"p!!\",\"3\"]"},
    {"while_loop", "sched", "[\"p\",\"2\"]", "[\"p!\",\"3\"]"},
    {"while_loop", "sched,dce", "[\"p\",\"2\"]", "[\"p!\",\"3\"]"},
    {"routed_loop", "dce", "[\"p\",\"1\"]", "[\"(p)(p)\",\"3\"]"},
    {"routed_loop", "cse", "[\"p\",\"1\"]", "[\"(p)(p)\",\"3\"]"},
    {"routed_loop", "sched", "[\"p\",\"1\"]", "[\"(p)(p)\",\"3\"]"},
    {"host", "dce", "[\"p\",\"q\"]", "\"Pq\""},
    {"host", "cse", "[\"p\",\"q\"]", "\"Pq\""},
    {"host", "sched", "[\"p\",\"q\"]", "\"Pq\""},
    {"lm_call", "dce", "[\"p\",\"m\"]", "\"m|Q:p\""},
    {"lm_call", "cse", "[\"p\",\"m\"]", "\"m|Q:p\""},
    {"lm_call", "sched", "[\"p\",\"m\"]", "\"m|Q:p\""},
    /* null is Zero wherever a tangent or cotangent is taken (materialized:
     * "" for text), also through compositions. */
    {"format", "pullback", "[[\"p\",\"q\"],null]", "[\"<p|q>\",[\"\",\"\"]]"},
    {"match", "pullback", "[[\"p\",\"q\"],[null,null]]", "[[false,\"p\"],[\"\",null]]"},
    {"format", "pushforward", "[[\"p\",\"q\"],[null,\"dq\"]]", "[\"<p|q>\",\"<|dq>\"]"},
    {"while_loop", "pullback", "[[\"p\",\"1\"],[null,\"h\"]]", "[[\"p!!\",\"3\"],[\"\",\"\"]]"},
    {"multi", "pullback,pullback", "[[[\"p\"],null],[null,[\"h\"]]]", "[[\"ppp\",[\"\"]],[[\"\"],\"hhh\"]]"},
    {"format", "pullback,batch", "[[[\"a\",\"b\"],[\"c\",\"d\"]],[\"g1\",null]]",
     "[[\"<a|c>\",\"<b|d>\"],[[\"g1\",\"\"],[\"g1\",\"\"]]]"},
    /* The pullback of a pullback runs through the first pullback's program:
     * feedback on each argument's feedback is joined into the output's. */
    {"format", "pullback,pullback", "[[[\"p\",\"q\"],\"g\"],[\"o\",[\"h\",\"i\"]]]",
     "[[\"<p|q>\",[\"g\",\"g\"]],[[\"o\",\"o\"],\"hi\"]]"},
    /* Compositions named by the issue. */
    {"format", "pullback,batch", "[[[\"a\",\"b\"],[\"c\",\"d\"]],[\"g1\",\"g2\"]]",
     "[[\"<a|c>\",\"<b|d>\"],[[\"g1\",\"g2\"],[\"g1\",\"g2\"]]]"},
    {"concat", "batch,pullback", "[[[\"a\",\"b\"],[\"c\",\"d\"]],[\"g1\",\"g2\"]]",
     "[[\"a-c\",\"b-d\"],[[\"g1\",\"g2\"],[\"g1\",\"g2\"]]]"},
    {"concat", "pullback,pushforward", "[[[\"p\",\"q\"],\"g\"],[[\"dp\",\"dq\"],\"dg\"]]",
     "[[\"p-q\",[\"g\",\"g\"]],[\"dpdq\",[\"dg\",\"dg\"]]]"},
    {"multi", "pullback,pullback", "[[[\"p\"],\"g\"],[\"o\",[\"h\"]]]", "[[\"ppp\",[\"ggg\"]],[[\"ooo\"],\"hhh\"]]"},
    {"concat", "pushforward,pushforward,pushforward",
     "[[[[\"a\",\"b\"],[\"c\",\"d\"]],[[\"e\",\"f\"],[\"g\",\"h\"]]],[[[\"i\",\"j\"],[\"k\",\"l\"]],[[\"m\",\"n\"],"
     "[\"o\",\"p\"]]]]",
     "[[[\"a-b\",\"cd\"],[\"ef\",\"gh\"]],[[\"ij\",\"kl\"],[\"mn\",\"op\"]]]"},
    {"concat", "batch,batch,batch,batch", "[[[[[\"a\"]]],[[[\"b\",\"c\"]]]],[[[[\"x\"]]],[[[\"y\",\"z\"]]]]]",
     "[[[[\"a-x\"]]],[[[\"b-y\",\"c-z\"]]]]"},
    {"multi", "sched,dce", "[\"p\"]", "\"ppp\""},
    {"switch", "pullback,batch", "[[[\"a\",\"b\"],[\"x\",\"y\"]],[\"g\",\"h\"]]",
     "[[\"Ax\",\"yy\"],[null,[\"g\",\"hh\"]]]"},
    {"switch", "batch,pullback", "[[[\"a\",\"b\"],[\"x\",\"y\"]],[\"g\",\"h\"]]",
     "[[\"Ax\",\"yy\"],[null,[\"g\",\"hh\"]]]"},
    {"switch", "pullback,pullback", "[[[\"b\",\"p\"],\"g\"],[\"o\",[null,\"h\"]]]",
     "[[\"pp\",[null,\"gg\"]],[[null,\"oo\"],\"hh\"]]"},
    {"while_loop", "pullback,batch", "[[[\"p\",\"q\"],[\"1\",\"3\"]],[[\"g\",\"h\"],[\"x\",\"y\"]]]",
     "[[[\"p!!\",\"q\"],[\"3\",\"3\"]],[[\"g\",\"h\"],[\"\",\"y\"]]]"},
    {"while_loop", "batch,pullback", "[[[\"p\",\"q\"],[\"1\",\"3\"]],[[\"g\",\"h\"],[\"x\",\"y\"]]]",
     "[[[\"p!!\",\"q\"],[\"3\",\"3\"]],[[\"g\",\"h\"],[\"\",\"y\"]]]"},
    {"while_loop", "pullback,pullback", "[[[\"p\",\"1\"],[\"g\",\"h\"]],[[\"o\",\"c\"],[\"i\",\"j\"]]]",
     "[[[\"p!!\",\"3\"],[\"g\",\"\"]],[[\"o\",\"\"],[\"i\",\"\"]]]"},
    {"while_loop", "pushforward,pullback",
     "[[[\"p\",\"1\"],[\"dp\",\"dc\"]],[[\"o\",\"c\"],[\"do\",\"e\"]]]",
     "[[[\"p!!\",\"3\"],[\"dp\",\"\"]],[[\"o\",\"\"],[\"do\",\"\"]]]"},
    {"routed_loop", "pullback,batch", "[[[\"p\",\"q\"],[\"0\",\"3\"]],[[\"g\",\"h\"],[\"x\",\"y\"]]]",
     "[[[\"(p!)(p!)\",\"q\"],[\"3\",\"3\"]],[[\"gg\",\"h\"],[\"\",\"y\"]]]"},
    {"routed_loop", "batch,pullback", "[[[\"p\",\"q\"],[\"0\",\"3\"]],[[\"g\",\"h\"],[\"x\",\"y\"]]]",
     "[[[\"(p!)(p!)\",\"q\"],[\"3\",\"3\"]],[[\"gg\",\"h\"],[\"\",\"y\"]]]"},
    {"routed_loop", "pullback,pullback", "[[[\"p\",\"1\"],[\"g\",\"h\"]],[[\"o\",\"c\"],[\"i\",\"j\"]]]",
     "[[[\"(p)(p)\",\"3\"],[\"gg\",\"\"]],[[\"oo\",\"\"],[\"ii\",\"\"]]]"},
    {"routed_loop", "pushforward,pullback", "[[[\"p\",\"1\"],[\"d\",\"e\"]],[[\"o\",\"c\"],[\"i\",\"j\"]]]",
     "[[[\"(p)(p)\",\"3\"],[\"(d)(d)\",\"\"]],[[\"oo\",\"\"],[\"ii\",\"\"]]]"},
    {"routed_loop", "pullback,pushforward", "[[[\"p\",\"1\"],[\"g\",\"h\"]],[[\"d\",\"e\"],[\"i\",\"j\"]]]",
     "[[[\"(p)(p)\",\"3\"],[\"gg\",\"\"]],[[\"(d)(d)\",\"\"],[\"ii\",\"\"]]]"},
    {"switch", "pullback,dce", "[[\"b\",\"p\"],\"g\"]", "[\"pp\",[null,\"gg\"]]"},
    {"while_loop", "dce,sched", "[\"p\",\"1\"]", "[\"p!!\",\"3\"]"},
    {"lm_call", "pushforward,batch", "[[[\"p\",\"q\"],[\"m\",\"m\"]],[[\"d\",\"e\"],[\"\",\"\"]]]",
     "[[\"m|Q:p\",\"m|Q:q\"],[\"m|Q:d\",\"m|Q:e\"]]"},
    /* Triples and a quadruple. */
    {"concat", "pullback,pullback,pullback",
     "[[[[\"p\",\"q\"],\"g\"],[\"o\",[\"h\",\"i\"]]],[[\"a\",[\"b\",\"c\"]],[[\"d\",\"e\"],\"f\"]]]",
     "[[[\"p-q\",[\"g\",\"g\"]],[[\"o\",\"o\"],\"hi\"]],[[[\"a\",\"a\"],\"bc\"],[\"de\",[\"f\",\"f\"]]]]"},
    {"switch", "pullback,batch,pushforward",
     "[[[[\"a\",\"b\"],[\"x\",\"y\"]],[\"g\",\"h\"]],[[[\"\",\"\"],[\"dx\",\"dy\"]],[\"dg\",\"dh\"]]]",
     "[[[\"Ax\",\"yy\"],[null,[\"g\",\"hh\"]]],[[\"Adx\",\"dydy\"],[null,[\"dg\",\"dhdh\"]]]]"},
    {"switch", "pushforward,pullback,batch",
     "[[[[\"a\",\"b\"],[\"x\",\"y\"]],[[\"\",\"\"],[\"dx\",\"dy\"]]],[[\"o1\",\"o2\"],[\"t1\",\"t2\"]]]",
     "[[[\"Ax\",\"yy\"],[\"Adx\",\"dydy\"]],[[null,[\"o1\",\"o2o2\"]],[null,[\"t1\",\"t2t2\"]]]]"},
    {"format", "pushforward,batch,pullback",
     "[[[[\"a\",\"b\"],[\"c\",\"d\"]],[[\"e\",\"f\"],[\"g\",\"h\"]]],[[\"o1\",\"o2\"],[\"t1\",\"t2\"]]]",
     "[[[\"<a|c>\",\"<b|d>\"],[\"<e|g>\",\"<f|h>\"]],[[[\"o1\",\"o2\"],[\"o1\",\"o2\"]],[[\"t1\",\"t2\"],[\"t1\","
     "\"t2\"]]]]"},
    /* Ragged inner batches: each outer item has its own number of items. */
    {"routed_loop", "pullback,batch,batch",
     "[[[[\"p\"],[\"q\",\"r\"]],[[\"0\"],[\"1\",\"3\"]]],[[[\"g\"],[\"h\",\"i\"]],[[\"x\"],[\"y\",\"z\"]]]]",
     "[[[[\"(p!)(p!)\"],[\"(q)(q)\",\"r\"]],[[\"3\"],[\"3\",\"3\"]]],[[[\"gg\"],[\"hh\",\"i\"]],[[\"\"],[\"\",\"z\"]]]]"},
    {"routed_loop", "pushforward,pushforward,pushforward",
     "[[[[\"p\",\"1\"],[\"d\",\"e\"]],[[\"f\",\"g\"],[\"h\",\"i\"]]],[[[\"j\",\"k\"],[\"l\",\"m\"]],[[\"n\",\"o\"],[\"q\",\"r\"]]]]",
     "[[[[\"(p)(p)\",\"3\"],[\"(d)(d)\",\"\"]],[[\"(f)(f)\",\"\"],[\"(h)(h)\",\"\"]]],[[[\"(j)(j)\",\"\"],[\"(l)(l)\","
     "\"\"]],[[\"(n)(n)\",\"\"],[\"(q)(q)\",\"\"]]]]"},
    {"switch", "batch,batch,batch,batch", "[[[[[\"a\"]]],[[[\"b\",\"a\"]]]],[[[[\"x\"]]],[[[\"y\",\"z\"]]]]]",
     "[[[[\"Ax\"]]],[[[\"yy\",\"Az\"]]]]"},
};

static void table(void) {
  size_t i;
  make_branches();
  for (i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    const struct row* r = &rows[i];
    af_ir_t* ir = program(r->program);
    if (!ir) continue;
    if (r->chain[0]) ir = apply_chain(ir, r->chain);
    if (!ir) {
      printf("    in row %d: %s / %s\n", (int)i, r->program, r->chain);
      continue;
    }
    if (!CHECK_CALL(ir, r->inputs, r->expected)) printf("    in row %d: %s / %s\n", (int)i, r->program, r->chain);
    af_ir_free(ir);
  }
  free_made();
}

/* ---- the shape of transformed IRs ------------------------------------- */

static int count_occurrences(const char* text, const char* needle) {
  int n = 0;
  const char* p = text;
  size_t len = strlen(needle);
  while ((p = strstr(p, needle)) != NULL) {
    n++;
    p += len;
  }
  return n;
}

static void pullback_text_shows_the_backward(void) {
  af_ir_t* ir;
  char* text;
  make_branches();
  ir = apply_chain(program("while_loop"), "pullback");
  text = ir ? ir_text(ir) : NULL;
  if (text) {
    /* The forward records the trajectory; the backward walks it back. */
    CHECK_CONTAINS(text, "while_scan[");
    CHECK_CONTAINS(text, "reverse=true");
    CHECK_STR_EQ(af_ir_eqn_prim(ir, 0), "while_scan");
    CHECK_STR_EQ(af_ir_eqn_prim(ir, 1), "scan");
  }
  free(text);
  af_ir_free(ir);
  ir = apply_chain(program("switch"), "pullback");
  text = ir ? ir_text(ir) : NULL;
  if (text) {
    CHECK_INT_EQ(af_ir_eqn_count(ir), 2);
    CHECK_STR_EQ(af_ir_eqn_prim(ir, 0), "switch");
    CHECK_STR_EQ(af_ir_eqn_prim(ir, 1), "switch");
    /* The backward switch, routed by the same key %0, only accumulates
     * cotangents: the branches' forward work appears once. */
    CHECK_CONTAINS(text, "}}](%0, %2)");
    CHECK_INT_EQ(count_occurrences(text, "template=\"A{}\""), 1);
    CHECK_INT_EQ(count_occurrences(text, "concat("), 1);
    CHECK_INT_EQ(count_occurrences(text, "accumulate(%0, %0)"), 1);
  }
  free(text);
  af_ir_free(ir);
  /* The loop whose body routes by the state's key: the forward while_scan
   * also returns the keys of every iteration (list<str>, the trajectory)
   * and the trip count; the backward scan reads them in reverse and runs
   * only the backward parts of the branches taken. */
  ir = apply_chain(program("routed_loop"), "pullback");
  text = ir ? ir_text(ir) : NULL;
  if (text) {
    CHECK_INT_EQ(af_ir_eqn_count(ir), 2);
    CHECK_STR_EQ(af_ir_eqn_prim(ir, 0), "while_scan");
    CHECK_STR_EQ(af_ir_eqn_prim(ir, 1), "scan");
    CHECK_CONTAINS(text, "[%4:str, %5:str, %6:list<str>, %7:int] = while_scan[");
    CHECK_CONTAINS(text, "n_xs=1, reverse=true](%7, %6, %2, %3)");
    CHECK_INT_EQ(count_occurrences(text, "concat(%0, \"!\")"), 1);
    CHECK_INT_EQ(count_occurrences(text, "template=\"({})\""), 1);
    CHECK_INT_EQ(count_occurrences(text, "concat(%0, %0)"), 1);
    CHECK_INT_EQ(count_occurrences(text, "accumulate(%0, %0)"), 1);
  }
  free(text);
  af_ir_free(ir);
  free_made();
}

static void sched_annotates_levels(void) {
  af_ir_t* ir = apply_chain(program("multi"), "sched");
  uint32_t level = 99;
  double priority = -1;
  char* text;
  char* dot;
  if (!ir) return;
  CHECK_OK(af_ir_eqn_sched(ir, 0, &level, &priority));
  CHECK_INT_EQ(level, 0);
  CHECK(priority == 2.0);
  CHECK_OK(af_ir_eqn_sched(ir, 1, &level, &priority));
  CHECK_INT_EQ(level, 1);
  CHECK(priority == 1.0);
  CHECK_ERR(af_ir_eqn_sched(ir, 2, &level, &priority), AF_ERR_INVALID_ARGUMENT, "out of range");
  text = ir_text(ir);
  if (text) CHECK_CONTAINS(text, "@level=1 @priority=1");
  dot = ir_dot(ir);
  if (dot) {
    CHECK_CONTAINS(dot, "rank=same");
    CHECK_CONTAINS(dot, "level 0, priority 2");
  }
  free(text);
  free(dot);
  af_ir_free(ir);
  ir = program("multi");
  CHECK_ERR(af_ir_eqn_sched(ir, 0, &level, &priority), AF_ERR_NOT_FOUND, "af_sched");
  af_ir_free(ir);
}

static void dce_mask_and_cse_options(void) {
  af_ir_t* ir = program("match");
  af_ir_t* d = NULL;
  af_value_t* mask = mk_json("[false,true]");
  af_cse_options_t opts;
  af_ir_t* c = NULL;
  if (!ir) return;
  if (CHECK_OK(af_dce(ctx, ir, mask, &d))) {
    CHECK_INT_EQ(af_ir_eqn_count(d), 0);
    CHECK_CALL(d, "[\"p\",\"q\"]", "[null,\"p\"]");
  }
  opts.struct_size = sizeof opts;
  opts.merge_nondeterministic = 1;
  if (CHECK_OK(af_cse_ex(ctx, ir, &opts, &c))) CHECK_CALL(c, "[\"p\",\"p\"]", "[true,\"p\"]");
  af_ir_free(c);
  c = NULL;
  opts.struct_size = 2;
  CHECK_ERR(af_cse_ex(ctx, ir, &opts, &c), AF_ERR_INVALID_ARGUMENT, "struct_size");
  CHECK_NULLED(c, af_ir_free);
  /* af_cse_with: the same through JSON options (NULL = defaults), read by
   * the one options reader. */
  {
    static const char merge[] = "{\"merge_nondeterministic\": true}";
    static const char typo[] = "{\"merge_nondetermistic\": true}";
    static const char not_bool[] = "{\"merge_nondeterministic\": 1}";
    if (CHECK_OK(af_cse_with(ctx, ir, merge, sizeof merge - 1, &c))) CHECK_CALL(c, "[\"p\",\"p\"]", "[true,\"p\"]");
    af_ir_free(c);
    c = NULL;
    CHECK_OK(af_cse_with(ctx, ir, NULL, 0, &c));
    af_ir_free(c);
    c = NULL;
    CHECK_ERR(af_cse_with(ctx, ir, typo, sizeof typo - 1, &c), AF_ERR_INVALID_ARGUMENT,
              "unknown option \"merge_nondetermistic\"");
    CHECK_NULLED(c, af_ir_free);
    CHECK_ERR(af_cse_with(ctx, ir, not_bool, sizeof not_bool - 1, &c), AF_ERR_INVALID_ARGUMENT,
              "must be true or false");
  }
  af_value_free(mask);
  af_ir_free(d);
  af_ir_free(ir);
}

/* ---- bad input -------------------------------------------------------- */

static void batch_errors(void) {
  af_ir_t* ir = program("concat");
  af_ir_t* b = NULL;
  af_value_t* out = NULL;
  af_value_t* axes;
  if (!ir) return;
  if (CHECK_OK(af_batch(ctx, ir, NULL, &b))) {
    CHECK_ERR(call_json(b, "[[\"a\",\"b\"],[\"x\",\"y\",\"z\"]]", &out), AF_ERR_INVALID_ARGUMENT, "2 items",
              "has 3");
    CHECK_NULLED(out, af_value_free);
    CHECK_ERR(call_json(b, "[[],[]]", &out), AF_ERR_INVALID_ARGUMENT, "empty");
    CHECK_ERR(call_json(b, "[\"a\",[\"x\"]]", &out), AF_ERR_INVALID_ARGUMENT, "expected list<str>");
  }
  af_ir_free(b);
  b = NULL;
  axes = mk_json("[true]");
  CHECK_ERR(af_batch(ctx, ir, axes, &b), AF_ERR_INVALID_ARGUMENT, "in_axes is not a prefix");
  CHECK_NULLED(b, af_ir_free);
  af_value_free(axes);
  axes = mk_json("{\"x\":true}");
  CHECK_ERR(af_batch(ctx, ir, axes, &b), AF_ERR_INVALID_ARGUMENT, "in_axes is not a prefix", "dict");
  af_value_free(axes);
  axes = mk_json("[true,\"yes\"]");
  CHECK_ERR(af_batch(ctx, ir, axes, &b), AF_ERR_INVALID_ARGUMENT, "in_axes must hold bools");
  af_value_free(axes);
  axes = mk_json("[true,false]");
  if (CHECK_OK(af_batch(ctx, ir, axes, &b))) CHECK_CALL(b, "[[\"a\",\"b\"],\"Y\"]", "[\"a-Y\",\"b-Y\"]");
  af_value_free(axes);
  af_ir_free(b);
  b = NULL;
  /* Lengths checked on every batched leaf, also deep in a pullback's inputs. */
  {
    af_ir_t* pb = apply_chain(af_ir_clone(ir), "pullback");
    if (pb && CHECK_OK(af_batch(ctx, pb, NULL, &b)))
      CHECK_ERR(call_json(b, "[[[\"a\",\"b\"],[\"x\",\"y\"]],[\"g\"]]", &out), AF_ERR_INVALID_ARGUMENT,
                "input[0][0] has 2 items", "input[1] has 1");
    af_ir_free(b);
    b = NULL;
    af_ir_free(pb);
  }
  CHECK_ERR(af_batch(NULL, ir, NULL, &b), AF_ERR_INVALID_ARGUMENT, "ctx");
  CHECK_ERR(af_pullback(ctx, NULL, &b), AF_ERR_INVALID_ARGUMENT, "ir");
  CHECK_ERR(af_pushforward(ctx, ir, NULL), AF_ERR_INVALID_ARGUMENT, "out");
  af_ir_free(ir);
}

/* upper(x): the host function is on the differentiated path. */
static af_error_t* host_only_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                                af_value_t** out) {
  (void)ud;
  return af_host_call(c, "upper", 5, in, n, out);
}

/* An unknown switch key is NOT_FOUND listing the branches, also when the
 * switch was batched (per item) or pulled back. */
static void unknown_switch_key_under_transforms(void) {
  static const char* chains[3] = {"batch", "pullback", "pushforward"};
  static const char* inputs[3] = {"[[\"a\",\"zz\"],[\"p\",\"q\"]]", "[[\"zz\",\"p\"],\"g\"]",
                                  "[[\"zz\",\"p\"],[\"\",\"d\"]]"};
  size_t i;
  make_branches();
  for (i = 0; i < 3; i++) {
    af_ir_t* ir = apply_chain(program("switch"), chains[i]);
    af_value_t* out = NULL;
    if (ir)
      CHECK_ERR(call_json(ir, inputs[i], &out), AF_ERR_NOT_FOUND, "no branch is named \"zz\"",
                "the branches are \"a\", \"b\"");
    CHECK_NULLED(out, af_value_free);
    af_ir_free(ir);
  }
  free_made();
}

/* format with an int argument: the feedback on the text reaches the int
 * (text); a Zero tangent of the int shows as the zero of its kind ("0"). */
static void format_of_a_number_under_transforms(void) {
  af_ir_t* ir = TRACE(format_fn, NULL, "[\"p\", 2]", NULL);
  af_ir_t* pulled = NULL;
  af_ir_t* pushed = NULL;
  if (!ir) return;
  if (CHECK_OK(af_pullback(ctx, ir, &pulled)))
    CHECK_CALL(pulled, "[[\"p\",2],\"the number is too small\"]",
               "[\"<p|2>\",[\"the number is too small\",\"the number is too small\"]]");
  if (CHECK_OK(af_pushforward(ctx, ir, &pushed))) {
    CHECK_CALL(pushed, "[[\"p\",2],[\"dp\",null]]", "[\"<p|2>\",\"<dp|0>\"]");
    CHECK_CALL(pushed, "[[\"p\",2],[\"dp\",5]]", "[\"<p|2>\",\"<dp|5>\"]");
  }
  af_ir_free(pushed);
  af_ir_free(pulled);
  af_ir_free(ir);
}

/* [concat(x, "!"), "fixed"]: the second output is a literal. */
static af_error_t* literal_out_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                                  af_value_t** out) {
  af_value_t* parts[2] = {NULL, NULL};
  af_value_t* items[2] = {NULL, NULL};
  af_error_t* e = lit(c, "!", &parts[1]);
  (void)ud;
  (void)n;
  parts[0] = af_value_clone(in[0]);
  if (!e) e = af_concat(c, AS_ARGS(parts), 2, &items[0]);
  if (!e) e = lit(c, "fixed", &items[1]);
  if (!e) e = af_value_list(c, AS_ARGS(items), 2, out);
  free_items(parts, 2);
  free_items(items, 2);
  return e;
}

/* A literal output's cotangent slot and an output nobody gives feedback on
 * take null (Zero); feedback that is not text is refused with its path. */
static void null_is_zero_and_feedback_is_text(void) {
  af_ir_t* ir = TRACE(literal_out_fn, NULL, "[\"x\"]", NULL);
  af_ir_t* pulled = NULL;
  af_ir_t* pushed = NULL;
  af_value_t* out = NULL;
  if (!ir || !CHECK_OK(af_pullback(ctx, ir, &pulled))) goto done;
  CHECK_CALL(pulled, "[[\"p\"],[\"g\",null]]", "[[\"p!\",\"fixed\"],[\"g\"]]");
  CHECK_CALL(pulled, "[[\"p\"],[null,null]]", "[[\"p!\",\"fixed\"],[\"\"]]");
  CHECK_CALL(pulled, "[[\"p\"],[\"g\",\"ignored\"]]", "[[\"p!\",\"fixed\"],[\"g\"]]");
  CHECK_ERR(call_json(pulled, "[[\"p\"],[7,null]]", &out), AF_ERR_INVALID_ARGUMENT, "input[1][0]",
            "feedback must be text");
  CHECK(out == NULL);
  CHECK_ERR(call_json(pulled, "[[\"p\"],[false,null]]", &out), AF_ERR_INVALID_ARGUMENT, "input[1][0]",
            "feedback must be text");
  CHECK(out == NULL);
  /* A primal slot still refuses null. */
  CHECK_ERR(call_json(pulled, "[[null],[\"g\",null]]", &out), AF_ERR_INVALID_ARGUMENT, "input[0][0]",
            "expected str");
  CHECK(out == NULL);
  /* Batched feedback: a list of text, a null item for no feedback. */
  {
    af_ir_t* batched = NULL;
    if (CHECK_OK(af_batch(ctx, pulled, NULL, &batched))) {
      CHECK_CALL(batched, "[[[\"p\",\"q\"]],[[\"g\",null],null]]", "[[[\"p!\",\"q!\"],[\"fixed\",\"fixed\"]],[[\"g\",\"\"]]]");
      CHECK_ERR(call_json(batched, "[[[\"p\",\"q\"]],[[\"g\",1],null]]", &out), AF_ERR_INVALID_ARGUMENT,
                "input[1][0]", "feedback must be text", "one item per batch element");
      CHECK(out == NULL);
    }
    af_ir_free(batched);
    batched = NULL;
    /* Only the feedback batched, all of it null: no length to take. */
    {
      af_value_t* axes = mk_json("[false,true]");
      if (CHECK_OK(af_batch(ctx, pulled, axes, &batched))) {
        CHECK_CALL(batched, "[[\"p\"],[[\"g\",\"h\"],null]]", "[[[\"p!\",\"p!\"],[\"fixed\",\"fixed\"]],[[\"g\",\"h\"]]]");
        CHECK_ERR(call_json(batched, "[[\"p\"],[null,null]]", &out), AF_ERR_INVALID_ARGUMENT, "given as null",
                  "a null item per batch element");
        CHECK(out == NULL);
      }
      af_value_free(axes);
      af_ir_free(batched);
    }
  }
  /* Tangents keep their kinds; null is Zero there too. */
  if (!CHECK_OK(af_pushforward(ctx, ir, &pushed))) goto done;
  CHECK_CALL(pushed, "[[\"p\"],[null]]", "[[\"p!\",\"fixed\"],[\"\",null]]");
  CHECK_ERR(call_json(pushed, "[[\"p\"],[3]]", &out), AF_ERR_INVALID_ARGUMENT, "input[1][0]", "expected str");
  CHECK(out == NULL);
done:
  af_ir_free(pushed);
  af_ir_free(pulled);
  af_ir_free(ir);
}

static void transforms_of_a_host_function_on_the_path(void) {
  af_ir_t* h;
  af_ir_t* t = NULL;
  register_upper();
  h = TRACE(host_only_fn, NULL, "[\"x\"]", NULL);
  if (!h) return;
  CHECK_ERR(af_pushforward(ctx, h, &t), AF_ERR_INVALID_ARGUMENT, "no pushforward rule", "upper");
  CHECK_NULLED(t, af_ir_free);
  CHECK_ERR(af_pullback(ctx, h, &t), AF_ERR_INVALID_ARGUMENT, "no pullback rule", "upper");
  CHECK_NULLED(t, af_ir_free);
  /* batch is fine: one host call per item. */
  if (CHECK_OK(af_batch(ctx, h, NULL, &t))) CHECK_CALL(t, "[[\"a\",\"b\"]]", "[\"A\",\"B\"]");
  af_ir_free(t);
  af_ir_free(h);
}

int main(int argc, char** argv) {
  static const struct test_case cases[] = {
      CASE(table),
      CASE(pullback_text_shows_the_backward),
      CASE(sched_annotates_levels),
      CASE(dce_mask_and_cse_options),
      CASE(batch_errors),
      CASE(unknown_switch_key_under_transforms),
      CASE(transforms_of_a_host_function_on_the_path),
      CASE(null_is_zero_and_feedback_is_text),
      CASE(format_of_a_number_under_transforms),
  };
  return run_cases(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
