/* Inspection and graph queries (af_ir_json family, af_ir_sub,
 * af_ir_related_json, af_ir_slice, af_ir_cost_json) on the triage example
 * and on generated DAGs, checked against references computed here from the
 * per-variable producers (a naive fixpoint, not the library's traversal). */
#include "check.h"

#include "../../examples/triage/triage_program.h"

#define MAX_EQNS 64

/* A JSON document (owned bytes) as a value; NULL on failure. */
static af_value_t* doc_of(af_error_t* err, af_bytes_t* b) {
  af_value_t* v = NULL;
  if (!CHECK_OK(err)) return NULL;
  CHECK_OK(af_value_from_json(ctx, (const char*)b->data, b->len, &v));
  af_bytes_free(b);
  return v;
}

static af_value_t* key(const af_value_t* v, const char* k) {
  af_value_t* out = NULL;
  CHECK_OK(af_value_key(v, k, strlen(k), &out));
  return out;
}

static int64_t int_at(const af_value_t* list, size_t i) {
  af_value_t* item = NULL;
  int64_t n = -1;
  CHECK_OK(af_value_index(list, i, &item));
  CHECK_OK(af_value_get_int(item, &n));
  af_value_free(item);
  return n;
}

static size_t len_of(const af_value_t* v) {
  size_t n = 0;
  CHECK_OK(af_value_len(v, &n));
  return n;
}

/* The producer of var (-1 for an input), from af_ir_var_json. */
static int64_t producer_of(const af_ir_t* ir, uint32_t var) {
  af_bytes_t b = {0};
  af_value_t* v = doc_of(af_ir_var_json(ir, var, &b), &b);
  af_value_t* p = key(v, "producer");
  int64_t out = -1;
  if (af_value_kind(p) == AF_KIND_INT) CHECK_OK(af_value_get_int(p, &out));
  af_value_free(p);
  af_value_free(v);
  return out;
}

/* dep[j][k] = 1 when equation j reads a var equation k defines: from each
 * equation's "in" vars and each var's producer. */
static size_t direct_deps(const af_ir_t* ir, int dep[MAX_EQNS][MAX_EQNS]) {
  size_t n = af_ir_eqn_count(ir), j, k;
  CHECK(n <= MAX_EQNS);
  memset(dep, 0, sizeof(int) * MAX_EQNS * MAX_EQNS);
  for (j = 0; j < n; ++j) {
    af_bytes_t b = {0};
    af_value_t* e = doc_of(af_ir_eqn_json(ir, j, &b), &b);
    af_value_t* in = key(e, "in");
    for (k = 0; k < len_of(in); ++k) {
      af_value_t* atom = NULL;
      af_value_t* var = NULL;
      af_error_t* literal;
      CHECK_OK(af_value_index(in, k, &atom));
      literal = af_value_key(atom, "var", 3, &var); /* NOT_FOUND for a literal */
      af_error_free(literal);
      if (!literal) {
        int64_t id = -1, p;
        CHECK_OK(af_value_get_int(var, &id));
        p = producer_of(ir, (uint32_t)id);
        if (p >= 0) dep[j][p] = 1;
      }
      af_value_free(var);
      af_value_free(atom);
    }
    af_value_free(in);
    af_value_free(e);
  }
  return n;
}

/* Transitive closure by repeated relaxation (the naive reference). */
static void closure(int r[MAX_EQNS][MAX_EQNS], size_t n) {
  int changed = 1;
  size_t a, b, c;
  while (changed) {
    changed = 0;
    for (a = 0; a < n; ++a)
      for (b = 0; b < n; ++b)
        if (r[a][b])
          for (c = 0; c < n; ++c)
            if (r[b][c] && !r[a][c]) r[a][c] = changed = 1;
  }
}

/* Ancestors and descendants of every equation equal the reference; the
 * topological order puts every equation after what it reads. */
static void check_queries(const af_ir_t* ir) {
  static int dep[MAX_EQNS][MAX_EQNS], reach[MAX_EQNS][MAX_EQNS];
  size_t n = direct_deps(ir, dep), i, k;
  af_bytes_t b = {0};
  af_value_t* whole;
  af_value_t* order;
  size_t pos[MAX_EQNS];
  memcpy(reach, dep, sizeof reach);
  closure(reach, n);
  for (i = 0; i < n; ++i) {
    uint32_t dir;
    for (dir = 0; dir < 2; ++dir) {
      af_value_t* r = doc_of(af_ir_related_json(ir, i, dir ? AF_IR_DESCENDANTS : AF_IR_ANCESTORS, &b), &b);
      af_value_t* eqns = key(r, "eqns");
      int got[MAX_EQNS] = {0};
      for (k = 0; k < len_of(eqns); ++k) got[int_at(eqns, k)] = 1;
      for (k = 0; k < n; ++k) {
        int want = dir ? reach[k][i] : reach[i][k];
        if (got[k] != want) check_fail(__FILE__, __LINE__, "eqn %zu %s: eqn %zu got %d want %d", i,
                                       dir ? "descendants" : "ancestors", k, got[k], want);
      }
      af_value_free(eqns);
      af_value_free(r);
    }
  }
  whole = doc_of(af_ir_json(ir, &b), &b);
  order = key(whole, "topological_order");
  CHECK_INT_EQ(len_of(order), n);
  for (k = 0; k < n && k < len_of(order); ++k) pos[int_at(order, k)] = k;
  for (i = 0; i < n; ++i)
    for (k = 0; k < n; ++k)
      if (dep[i][k]) CHECK(pos[k] < pos[i]);
  af_value_free(order);
  af_value_free(whole);
}

static af_value_t* str(const char* s) {
  af_value_t* v = NULL;
  CHECK_OK(af_value_str(ctx, s, strlen(s), &v));
  return v;
}

static void routed_echo(void) {
  af_provider_t* p = NULL;
  CHECK_OK(af_provider_echo_new(NULL, 0, &p));
  CHECK_OK(af_context_route(ctx, "*", 1, p));
  af_provider_free(p);
}

static af_ir_t* triage(void) {
  af_ir_t* ir = NULL;
  CHECK_OK(triage_trace(ctx, &ir));
  return ir;
}

static void triage_queries_match_reference(void) {
  af_ir_t* ir = triage();
  CHECK(af_ir_eqn_count(ir) > 3);
  check_queries(ir);
  af_ir_free(ir);
}

/* A DAG of concats over 3 inputs: step k joins two earlier values picked by
 * a seeded generator; the outputs are the last value and two others. */
static unsigned dag_seed;
static unsigned next_rand(void) {
  dag_seed = dag_seed * 1103515245u + 12345u;
  return (dag_seed >> 16) & 0x7fff;
}

static af_error_t* dag_fn(void* user, af_context_t* c, const af_value_t* const* in, size_t n_in, af_value_t** out) {
  af_value_t* vals[40];
  size_t n = n_in, steps = 8 + next_rand() % 20, k;
  af_error_t* err = NULL;
  const char* keys[3] = {"a", "b", "last"};
  const size_t key_lens[3] = {1, 1, 4};
  const af_value_t* outs[3];
  (void)user;
  for (k = 0; k < n_in; ++k) vals[k] = af_value_clone(in[k]);
  for (k = 0; k < steps && !err; ++k, ++n) {
    const af_value_t* args[2];
    args[0] = vals[next_rand() % n];
    args[1] = vals[next_rand() % n];
    err = af_concat(c, args, 2, &vals[n]);
  }
  if (!err) {
    outs[0] = vals[n_in + next_rand() % (n - n_in)];
    outs[1] = vals[n_in + next_rand() % (n - n_in)];
    outs[2] = vals[n - 1];
    err = af_value_dict(c, keys, key_lens, outs, 3, out);
  }
  for (k = 0; k < n; ++k) af_value_free(vals[k]);
  return err;
}

static af_ir_t* dag(unsigned seed) {
  af_ir_t* ir = NULL;
  af_value_t* ex[3];
  size_t k;
  dag_seed = seed;
  for (k = 0; k < 3; ++k) ex[k] = str("x");
  CHECK_OK(af_trace(ctx, dag_fn, NULL, (const af_value_t* const*)ex, 3, NULL, &ir));
  for (k = 0; k < 3; ++k) af_value_free(ex[k]);
  return ir;
}

static void generated_dags_match_reference(void) {
  unsigned seed;
  for (seed = 1; seed <= 20; ++seed) {
    af_ir_t* ir = dag(seed);
    if (ir) check_queries(ir);
    af_ir_free(ir);
  }
}

/* The slice of one output, run on the same arguments, gives that output of
 * the full program; it has no more equations than the program. */
static void dag_slices_compute_the_same_output(void) {
  const char* names[3] = {"a", "b", "last"};
  unsigned seed;
  for (seed = 1; seed <= 10; ++seed) {
    af_ir_t* ir = dag(seed);
    af_value_t* args[3];
    af_value_t* full = NULL;
    size_t k;
    args[0] = str("p");
    args[1] = str("q");
    args[2] = str("r");
    CHECK_OK(af_ir_call(ctx, ir, (const af_value_t* const*)args, 3, &full));
    for (k = 0; k < 3; ++k) {
      af_ir_t* s = NULL;
      af_value_t* got = NULL;
      af_value_t* first = NULL;
      af_value_t* want = key(full, names[k]);
      af_bytes_t a = {0}, b = {0};
      CHECK_OK(af_ir_slice(ir, &names[k], NULL, 1, NULL, NULL, 0, &s));
      CHECK(af_ir_eqn_count(s) <= af_ir_eqn_count(ir));
      CHECK_OK(af_ir_call(ctx, s, (const af_value_t* const*)args, 3, &got));
      CHECK_OK(af_value_index(got, 0, &first));
      CHECK_OK(af_value_to_json(first, &a));
      CHECK_OK(af_value_to_json(want, &b));
      CHECK_MEM_EQ_N((const char*)a.data, a.len, (const char*)b.data, b.len);
      af_bytes_free(&a);
      af_bytes_free(&b);
      af_value_free(first);
      af_value_free(got);
      af_value_free(want);
      af_ir_free(s);
    }
    for (k = 0; k < 3; ++k) af_value_free(args[k]);
    af_value_free(full);
    af_ir_free(ir);
  }
}

static void triage_slice_runs_and_matches(void) {
  af_ir_t* ir = triage();
  af_ir_t* s = NULL;
  af_value_t* ticket = str("My invoice is wrong");
  af_value_t* full = NULL;
  af_value_t* part = NULL;
  af_value_t* team = NULL;
  af_value_t* want = NULL;
  af_bytes_t a = {0}, b = {0};
  const char* out = "0/team";
  const char* in = "0";
  routed_echo();
  /* "0/team" is an error: the output is a dict, not a list. */
  CHECK_ERR(af_ir_slice(ir, &out, NULL, 1, &in, NULL, 1, &s), AF_ERR_INVALID_ARGUMENT, "af_ir_slice",
            "output path", "0/team");
  out = "team";
  CHECK_OK(af_ir_slice(ir, &out, NULL, 1, &in, NULL, 1, &s));
  CHECK(af_ir_eqn_count(s) < af_ir_eqn_count(ir));
  CHECK_OK(af_ir_call(ctx, ir, (const af_value_t* const*)&ticket, 1, &full));
  CHECK_OK(af_ir_call(ctx, s, (const af_value_t* const*)&ticket, 1, &part));
  CHECK_OK(af_value_index(part, 0, &team));
  want = key(full, "team");
  CHECK_OK(af_value_to_json(team, &a));
  CHECK_OK(af_value_to_json(want, &b));
  CHECK_MEM_EQ_N((const char*)a.data, a.len, (const char*)b.data, b.len);
  af_bytes_free(&a);
  af_bytes_free(&b);
  af_value_free(want);
  af_value_free(team);
  af_value_free(part);
  af_value_free(full);
  af_value_free(ticket);
  af_ir_free(s);
  af_ir_free(ir);
}

static void slice_reports_missing_inputs(void) {
  af_ir_t* ir = dag(3);
  af_ir_t* s = NULL;
  const char* out = "last";
  const char* none[1] = {"9"};
  /* No inputs chosen: the output needs at least one. */
  CHECK_ERR(af_ir_slice(ir, &out, NULL, 1, none, NULL, 0, &s), AF_ERR_INVALID_ARGUMENT, "af_ir_slice",
            "output \"last\" needs input", "not among the chosen inputs");
  CHECK(s == NULL);
  CHECK_ERR(af_ir_slice(ir, &out, NULL, 1, none, NULL, 1, &s), AF_ERR_INVALID_ARGUMENT, "input path \"9\"");
  CHECK_ERR(af_ir_slice(ir, NULL, NULL, 0, NULL, NULL, 0, &s), AF_ERR_INVALID_ARGUMENT, "at least one output");
  CHECK_ERR(af_ir_slice(NULL, &out, NULL, 1, NULL, NULL, 0, &s), AF_ERR_INVALID_ARGUMENT, "`ir` is NULL");
  af_ir_free(ir);
}

static void eqn_json_describes_inputs_params_and_subs(void) {
  af_ir_t* ir = triage();
  size_t n = af_ir_eqn_count(ir), i, switches = 0;
  af_bytes_t b = {0};
  for (i = 0; i < n; ++i) {
    const char* prim = af_ir_eqn_prim(ir, i);
    CHECK_OK(af_ir_eqn_json(ir, i, &b));
    CHECK_CONTAINS((const char*)b.data, prim);
    if (strcmp(prim, "lm_schema_call") == 0) {
      /* The model is a literal input; the roles and schema are params. */
      CHECK_CONTAINS((const char*)b.data, "\"lit\":\"triage-");
      CHECK_CONTAINS((const char*)b.data, "\"roles\":[");
      CHECK_CONTAINS((const char*)b.data, "\"schema\":");
    }
    if (strcmp(prim, "switch") == 0) {
      af_ir_t* branch = NULL;
      af_bytes_t t = {0};
      ++switches;
      CHECK_CONTAINS((const char*)b.data, "\"subs\":[\"branches/billing\",\"branches/technical\"]");
      CHECK_OK(af_ir_sub(ir, i, "branches/billing", 16, &branch));
      CHECK_OK(af_ir_to_text(branch, &t));
      CHECK_CONTAINS((const char*)t.data, "billing-drafter");
      af_bytes_free(&t);
      af_ir_free(branch);
      CHECK_ERR(af_ir_sub(ir, i, "branches/x", 10, &branch), AF_ERR_NOT_FOUND, "af_ir_sub",
                "no sub-IR \"branches/x\"", "branches/billing");
    }
    af_bytes_free(&b);
  }
  CHECK_INT_EQ(switches, 1);
  CHECK_ERR(af_ir_eqn_json(ir, n, &b), AF_ERR_INVALID_ARGUMENT, "af_ir_eqn_json", "out of range");
  CHECK_ERR(af_ir_var_json(ir, 100000, &b), AF_ERR_INVALID_ARGUMENT, "af_ir_var_json", "out of range");
  CHECK_ERR(af_ir_related_json(ir, n, 0, &b), AF_ERR_INVALID_ARGUMENT, "out of range");
  CHECK_ERR(af_ir_related_json(ir, 0, 8, &b), AF_ERR_INVALID_ARGUMENT, "unknown flags");
  CHECK_ERR(af_ir_json(NULL, &b), AF_ERR_INVALID_ARGUMENT, "`ir` is NULL");
  af_ir_free(ir);
}

/* DOT: a switch's branches are clusters reached by dashed edges named by
 * branch; a tool call names its function. */
static af_error_t* lookup_stand_in(void* ud, const af_value_t* const* args, size_t n, af_value_t** out) {
  (void)ud;
  (void)args;
  (void)n;
  return af_value_str(NULL, "notes", 5, out);
}

static af_error_t* calls_lookup(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                                af_value_t** out) {
  (void)ud;
  return af_host_call(c, "lookup", 6, in, n, out);
}

static void dot_draws_branches_and_names_tool_calls(void) {
  af_ir_t *ir = triage(), *tool = NULL;
  af_bytes_t dot = {0};
  af_value_t* kinds = mk_str("str");
  if (CHECK_OK(af_ir_to_dot(ir, &dot))) {
    const char* d = (const char*)dot.data;
    CHECK_CONTAINS(d, "subgraph cluster_s0 {");
    CHECK_CONTAINS(d, "subgraph cluster_s1 {");
    CHECK_CONTAINS(d, "[style=dashed, label=\"branches/billing\"]");
    CHECK_CONTAINS(d, "[style=dashed, label=\"branches/technical\"]");
    CHECK_CONTAINS(d, "s0_e1 [shape=ellipse, label=\"lm_call\"]");
    CHECK_CONTAINS(d, "label=\"switch e2: branches/billing\"");
  }
  af_bytes_free(&dot);
  CHECK_OK(af_register_function(ctx, "lookup", 6, lookup_stand_in, NULL, NULL, kinds));
  tool = TRACE(calls_lookup, NULL, "[\"topic\"]", NULL);
  if (tool && CHECK_OK(af_ir_to_dot(tool, &dot))) CHECK_CONTAINS((const char*)dot.data, "label=\"host_call lookup\"");
  af_bytes_free(&dot);
  af_value_free(kinds);
  af_ir_free(tool);
  af_ir_free(ir);
}

static void ir_json_lists_inputs_outputs_and_vars(void) {
  af_ir_t* ir = triage();
  af_bytes_t b = {0};
  af_value_t* v = doc_of(af_ir_json(ir, &b), &b);
  af_value_t* outs = key(v, "outputs");
  af_value_t* eqns = key(v, "eqns");
  af_bytes_t j = {0};
  CHECK_INT_EQ(len_of(outs), 5); /* reply, review/note, review/ok, team, urgency */
  CHECK_INT_EQ(len_of(eqns), af_ir_eqn_count(ir));
  CHECK_OK(af_value_to_json(outs, &j));
  CHECK_CONTAINS((const char*)j.data, "\"path\":\"team\"");
  CHECK_CONTAINS((const char*)j.data, "\"path\":\"review/ok\"");
  af_bytes_free(&j);
  af_value_free(eqns);
  af_value_free(outs);
  af_value_free(v);
  af_ir_free(ir);
}

static void deep_queries_enter_sub_irs(void) {
  af_ir_t* ir = triage();
  size_t n = af_ir_eqn_count(ir), sw = n, i;
  af_bytes_t b = {0};
  for (i = 0; i < n; ++i)
    if (strcmp(af_ir_eqn_prim(ir, i), "switch") == 0) sw = i;
  CHECK_OK(af_ir_related_json(ir, n - 1, AF_IR_ANCESTORS, &b));
  CHECK_NOT_CONTAINS((const char*)b.data, "nested");
  af_bytes_free(&b);
  CHECK_OK(af_ir_related_json(ir, n - 1, AF_IR_ANCESTORS | AF_IR_DEEP, &b));
  {
    char want[64];
    snprintf(want, sizeof want, "\"%zu/branches/billing/0\"", sw);
    CHECK_CONTAINS((const char*)b.data, want);
  }
  af_bytes_free(&b);
  af_ir_free(ir);
}

/* A graph of 11 KB whose deep query lists 786 428 paths (under the 2^20
 * path limit) of up to 4.4 KB each: switches 18 deep, each with two branches
 * of 250-byte names sharing the level below. Its answer (about 3 GB) is
 * refused by its size before anything is built; a query within a limit it
 * sets is answered exactly up to it. */
static char* long_names_fan_json(void) {
  char* json = malloc(20000);
  char a[251], b[251];
  size_t n = 0;
  int k;
  if (!json) return NULL;
  memset(a, 'a', 250);
  memset(b, 'b', 250);
  a[250] = b[250] = 0;
  n += (size_t)sprintf(json + n, "{\"afg\":1,\"irs\":[{\"vars\":[\"str\",\"str\",\"str\"],\"in\":[\"%%0\",\"%%1\"],"
                                 "\"eqns\":[{\"prim\":\"concat\",\"out\":\"%%2\",\"in\":[\"%%1\",{\"lit\":\"!\"}]}],\"out\":\"%%2\"}");
  for (k = 1; k <= 18; k++)
    n += (size_t)sprintf(json + n,
                         ",{\"vars\":[\"str\",\"str\",\"str\",\"str\"],\"in\":[\"%%0\",\"%%1\"],\"eqns\":["
                         "{\"prim\":\"switch\",\"out\":\"%%2\",\"in\":[\"%%0\",\"%%0\",\"%%1\"],"
                         "\"params\":{\"branches\":{\"ir_map\":{\"%s\":%d,\"%s\":%d}}}},"
                         "{\"prim\":\"concat\",\"out\":\"%%3\",\"in\":[\"%%2\",{\"lit\":\"?\"}]}],\"out\":\"%%3\"}",
                         a, k - 1, b, k - 1);
  sprintf(json + n, "]}");
  return json;
}

static void deep_queries_are_bounded_in_bytes(void) {
  char* json = long_names_fan_json();
  af_bytes_t g = {NULL, 0}, b = {NULL, 0}, exact = {NULL, 0};
  af_ir_t *fan = NULL, *ir = triage();
  size_t n = af_ir_eqn_count(ir);
  if (json && CHECK_OK(af_graph_from_json(ctx, json, strlen(json), &g)) &&
      CHECK_OK(af_ir_from_bytes(ctx, g.data, g.len, &fan))) {
    CHECK_ERR(af_ir_related_json(fan, 1, AF_IR_ANCESTORS | AF_IR_DEEP, &b), AF_ERR_INVALID_ARGUMENT,
              "over the limit of 67108864", "af_ir_related_json_with");
    CHECK_ERR(af_ir_related_json_with(fan, 1, AF_IR_ANCESTORS | AF_IR_DEEP, 1000000, &b), AF_ERR_INVALID_ARGUMENT,
              "over the limit of 1000000");
    /* Shallow, it is small. */
    CHECK_OK(af_ir_related_json(fan, 1, AF_IR_ANCESTORS, &b));
    af_bytes_free(&b);
  }
  /* The size checked is the answer's own: a limit of exactly its length
   * passes, one byte less is refused. */
  if (ir && CHECK_OK(af_ir_related_json(ir, n - 1, AF_IR_ANCESTORS | AF_IR_DEEP, &exact))) {
    if (CHECK_OK(af_ir_related_json_with(ir, n - 1, AF_IR_ANCESTORS | AF_IR_DEEP, exact.len, &b)))
      CHECK_MEM_EQ((const char*)b.data, b.len, (const char*)exact.data);
    af_bytes_free(&b);
    CHECK_ERR(af_ir_related_json_with(ir, n - 1, AF_IR_ANCESTORS | AF_IR_DEEP, exact.len - 1, &b),
              AF_ERR_INVALID_ARGUMENT, "over the limit");
  }
  af_bytes_free(&exact);
  af_bytes_free(&g);
  af_ir_free(fan);
  af_ir_free(ir);
  free(json);
}

static void cost_counts_calls_per_model(void) {
  af_ir_t* ir = triage();
  af_bytes_t b = {0};
  CHECK_OK(af_ir_cost_json(ir, 4, &b));
  /* classify, one drafter (the costliest branch) and review, per ticket;
   * the three wait on each other. */
  CHECK_MEM_EQ((const char*)b.data, b.len,
               "{\"batch\":4,\"total\":{\"calls\":12,\"models\":{\"billing-drafter\":4,"
               "\"triage-classifier\":4,\"triage-reviewer\":4}},\"critical_path\":{\"calls\":3,"
               "\"models\":{\"billing-drafter\":1,\"triage-classifier\":1,\"triage-reviewer\":1}}}");
  af_bytes_free(&b);
  CHECK_ERR(af_ir_cost_json(ir, 0, &b), AF_ERR_INVALID_ARGUMENT, "af_ir_cost_json", "batch");
  af_ir_free(ir);
}

/* A loop whose body makes one LM call, and a call with a computed model. */
static af_error_t* go_cond(void* u, af_context_t* c, const af_value_t* const* in, size_t n, af_value_t** out) {
  af_value_t* go = NULL;
  af_error_t* err = af_value_str(c, "go", 2, &go);
  (void)u;
  (void)n;
  if (!err) err = af_match(c, in[0], go, out);
  af_value_free(go);
  return err;
}

static af_error_t* ask(af_context_t* c, const af_value_t* content, const af_value_t* model, af_value_t** out) {
  const char* keys[2] = {"role", "content"};
  const size_t lens[2] = {4, 7};
  const af_value_t* vals[2];
  af_value_t *role = NULL, *msg = NULL, *msgs = NULL;
  af_error_t* err = af_value_str(c, "user", 4, &role);
  vals[0] = role;
  vals[1] = content;
  if (!err) err = af_value_dict(c, keys, lens, vals, 2, &msg);
  if (!err) err = af_value_list(c, (const af_value_t* const*)&msg, 1, &msgs);
  if (!err) err = af_lm_call(c, msgs, model, out);
  af_value_free(msgs);
  af_value_free(msg);
  af_value_free(role);
  return err;
}

static af_error_t* looper_body(void* u, af_context_t* c, const af_value_t* const* in, size_t n, af_value_t** out) {
  af_value_t* model = NULL;
  af_error_t* err = af_value_str(c, "looper", 6, &model);
  (void)u;
  (void)n;
  if (!err) err = ask(c, in[0], model, out);
  af_value_free(model);
  return err;
}

struct loop_irs {
  af_ir_t* cond;
  af_ir_t* body;
};

/* {loop: while_loop(go?, looper call, q, 3), picked: lm(q, model=q)} */
static af_error_t* loop_fn(void* u, af_context_t* c, const af_value_t* const* in, size_t n, af_value_t** out) {
  const struct loop_irs* irs = u;
  const char* keys[2] = {"loop", "picked"};
  const size_t lens[2] = {4, 6};
  af_value_t* vals[2] = {NULL, NULL};
  af_error_t* err = af_while_loop(c, irs->cond, irs->body, in[0], 3, &vals[0]);
  (void)n;
  if (!err) err = ask(c, in[0], in[0], &vals[1]);
  if (!err) err = af_value_dict(c, keys, lens, (const af_value_t* const*)vals, 2, out);
  af_value_free(vals[0]);
  af_value_free(vals[1]);
  return err;
}

static void cost_counts_loops_by_max_iters_and_dynamic_models(void) {
  struct loop_irs irs = {NULL, NULL};
  af_ir_t* ir = NULL;
  af_value_t* q = str("q");
  af_bytes_t b = {0};
  CHECK_OK(af_trace(ctx, go_cond, NULL, (const af_value_t* const*)&q, 1, NULL, &irs.cond));
  CHECK_OK(af_trace(ctx, looper_body, NULL, (const af_value_t* const*)&q, 1, NULL, &irs.body));
  CHECK_OK(af_trace(ctx, loop_fn, &irs, (const af_value_t* const*)&q, 1, NULL, &ir));
  CHECK_OK(af_ir_cost_json(ir, 2, &b));
  /* 3 passes of the loop body per example; the other call's model is the
   * input, so it is "dynamic"; the two chains are independent. */
  CHECK_MEM_EQ((const char*)b.data, b.len,
               "{\"batch\":2,\"total\":{\"calls\":8,\"models\":{\"dynamic\":2,\"looper\":6}},"
               "\"critical_path\":{\"calls\":3,\"models\":{\"looper\":3}}}");
  af_bytes_free(&b);
  af_value_free(q);
  af_ir_free(ir);
  af_ir_free(irs.cond);
  af_ir_free(irs.body);
}

/* ---- name paths ------------------------------------------------------- */

/* helper(x) = concat(x, "?") under the name "polish". */
static af_error_t* polish_fn(void* u, af_context_t* c, const af_value_t* const* in, size_t n,
                             af_value_t** out) {
  af_value_t* args[2] = {NULL, NULL};
  af_error_t* err = af_name_push(c, "polish", 6);
  (void)u;
  (void)n;
  args[0] = af_value_clone(in[0]);
  if (!err) err = af_value_str(c, "?", 1, &args[1]);
  if (!err) err = af_concat(c, (const af_value_t* const*)args, 2, out);
  if (!err) err = af_name_pop(c);
  af_value_free(args[0]);
  af_value_free(args[1]);
  return err;
}

struct named {
  int use_names;
  af_ir_t* polish;
};

/* triage: { format; classify: { lm_call(model "named-m") }; polish(...) };
 * then an unnamed concat. Without use_names the same program unnamed. */
static af_error_t* named_fn(void* u, af_context_t* c, const af_value_t* const* in, size_t n,
                            af_value_t** out) {
  const struct named* st = u;
  af_value_t *q = NULL, *model = NULL, *answer = NULL, *polished = NULL, *bang = NULL;
  af_value_t* args[2];
  af_error_t* err = NULL;
  (void)n;
  if (st->use_names) err = af_name_push(c, "triage", 6);
  if (!err) err = af_format(c, "Q: {}", 5, in, 1, NULL, &q);
  if (!err && st->use_names) err = af_name_push(c, "classify", 8);
  if (!err) err = af_value_str(c, "named-m", 7, &model);
  if (!err) err = ask(c, q, model, &answer);
  if (!err && st->use_names) err = af_name_pop(c);
  if (!err) err = af_ir_call(c, st->polish, (const af_value_t* const*)&answer, 1, &polished);
  if (!err && st->use_names) err = af_name_pop(c);
  if (!err) err = af_value_str(c, "!", 1, &bang);
  args[0] = polished;
  args[1] = bang;
  if (!err) err = af_concat(c, (const af_value_t* const*)args, 2, out);
  af_value_free(q);
  af_value_free(model);
  af_value_free(answer);
  af_value_free(polished);
  af_value_free(bang);
  return err;
}

static af_ir_t* named_program(int use_names) {
  struct named st = {use_names, NULL};
  af_value_t* q = str("q");
  af_ir_t* ir = NULL;
  CHECK_OK(af_trace(ctx, polish_fn, NULL, (const af_value_t* const*)&q, 1, NULL, &st.polish));
  CHECK_OK(af_trace(ctx, named_fn, &st, (const af_value_t* const*)&q, 1, NULL, &ir));
  af_ir_free(st.polish);
  af_value_free(q);
  return ir;
}

/* The name path of equation i as JSON text, e.g. ["triage","classify"]. */
static char* name_path_json(const af_ir_t* ir, size_t i) {
  af_bytes_t b = {0};
  af_value_t* e = doc_of(af_ir_eqn_json(ir, i, &b), &b);
  af_value_t* path = key(e, "name_path");
  char* s = json_of(path);
  af_value_free(path);
  af_value_free(e);
  return s;
}

static void name_paths_are_recorded_and_shown(void) {
  af_ir_t* ir = named_program(1);
  static const char* want[] = {"[\"triage\"]", "[\"triage\",\"classify\"]",
                               "[\"triage\",\"polish\"]", "[]"};
  size_t i;
  char *text, *dot;
  CHECK_INT_EQ(af_ir_eqn_count(ir), 4);
  for (i = 0; i < 4 && i < af_ir_eqn_count(ir); ++i) {
    char* got = name_path_json(ir, i);
    if (got) CHECK_STR_EQ(got, want[i]);
    free(got);
  }
  text = ir_text(ir);
  if (text) {
    CHECK_CONTAINS(text, "%1:str = format[names=[], template=\"Q: {}\"](%0) @name=\"triage\"\n");
    CHECK_CONTAINS(text, "(%1, \"named-m\") @name=\"triage/classify\"\n");
    CHECK_CONTAINS(text, "concat(%2, \"?\") @name=\"triage/polish\"\n");
    CHECK_CONTAINS(text, "concat(%3, \"!\")\n");
  }
  dot = ir_dot(ir);
  if (dot) CHECK_CONTAINS(dot, "label=\"lm_call\\nname: triage/classify\"");
  free(text);
  free(dot);
  af_ir_free(ir);
}

/* Name paths are part of hash and equality (as tags are), and never change
 * what a program computes. */
static void name_paths_join_hash_and_equality(void) {
  af_ir_t* a = named_program(1);
  af_ir_t* b = named_program(1);
  af_ir_t* plain = named_program(0);
  af_value_t* q = str("q");
  af_value_t *x = NULL, *y = NULL;
  CHECK(af_ir_equal(a, b));
  CHECK(af_ir_hash(a) == af_ir_hash(b));
  CHECK(!af_ir_equal(a, plain));
  CHECK(af_ir_hash(a) != af_ir_hash(plain));
  routed_echo();
  CHECK_OK(af_ir_call(ctx, a, (const af_value_t* const*)&q, 1, &x));
  CHECK_OK(af_ir_call(ctx, plain, (const af_value_t* const*)&q, 1, &y));
  CHECK_JSON(x, "\"named-m|Q: q?!\"");
  CHECK_JSON(y, "\"named-m|Q: q?!\"");
  af_value_free(x);
  af_value_free(y);
  af_value_free(q);
  af_ir_free(plain);
  af_ir_free(b);
  af_ir_free(a);
}

/* Every transform keeps the name paths of the equations it rewrites, as it
 * keeps their tags; so does a save and load. */
static void name_paths_survive_transforms_and_saving(void) {
  af_ir_t* ir = named_program(1);
  af_ir_t* out[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
  const char* what[6] = {"batch", "pushforward", "pullback", "dce", "cse", "saved"};
  af_bytes_t bytes = {0};
  size_t k;
  CHECK_OK(af_batch(ctx, ir, NULL, &out[0]));
  CHECK_OK(af_pushforward(ctx, ir, &out[1]));
  CHECK_OK(af_pullback(ctx, ir, &out[2]));
  CHECK_OK(af_dce(ctx, ir, NULL, &out[3]));
  CHECK_OK(af_cse(ctx, ir, &out[4]));
  CHECK_OK(af_ir_to_bytes(ir, &bytes));
  CHECK_OK(af_ir_from_bytes(ctx, bytes.data, bytes.len, &out[5]));
  af_bytes_free(&bytes);
  for (k = 0; k < 6; ++k) {
    char* text = ir_text(out[k]);
    if (!text) continue;
    if (!strstr(text, "lm_call[roles=[\"user\"]]") || !strstr(text, "@name=\"triage/classify\"") ||
        !strstr(text, "@name=\"triage/polish\""))
      check_fail(__FILE__, __LINE__, "%s lost a name path:\n%s", what[k], text);
    free(text);
  }
  CHECK(af_ir_equal(ir, out[5]));
  CHECK(af_ir_hash(ir) == af_ir_hash(out[5]));
  for (k = 0; k < 6; ++k) af_ir_free(out[k]);
  af_ir_free(ir);
}

/* A saved graph's name paths are checked when it loads. */
static void bad_saved_name_paths_are_format_errors(void) {
  static const char* bad[] = {"[\"a/b\"]", "[\"\"]", "[\"ok\", 3]"};
  size_t i;
  for (i = 0; i < 3; ++i) {
    char json[512];
    af_bytes_t b = {NULL, 0};
    snprintf(json, sizeof json,
             "{\"afg\":1,\"irs\":[{\"vars\":[\"str\",\"str\"],\"in\":[\"%%0\"],"
             "\"eqns\":[{\"prim\":\"concat\",\"out\":\"%%1\",\"in\":[\"%%0\"],"
             "\"name_path\":%s}],\"out\":\"%%1\"}]}",
             bad[i]);
    CHECK_ERR(af_graph_from_json(ctx, json, strlen(json), &b), AF_ERR_FORMAT, "name");
    CHECK(b.data == NULL);
  }
}

/* A failing equation's error names its name path. */
static void failing_equations_name_their_path(void) {
  af_ir_t* ir = named_program(1);
  af_value_t* q = str("q");
  af_value_t* out = NULL;
  /* No route for "named-m": the lm_call fails. */
  CHECK_ERR(af_ir_call(ctx, ir, (const af_value_t* const*)&q, 1, &out), AF_ERR_NOT_FOUND,
            "in triage/classify: ", "named-m");
  af_value_free(q);
  af_ir_free(ir);
}

static af_error_t* unclosed_name(void* u, af_context_t* c, const af_value_t* const* in, size_t n,
                                 af_value_t** out) {
  af_error_t* err = af_name_push(c, "open", 4);
  (void)u;
  (void)n;
  if (!err) err = af_concat(c, in, 1, out);
  return err;
}

static af_error_t* bad_names(void* u, af_context_t* c, const af_value_t* const* in, size_t n,
                             af_value_t** out) {
  (void)u;
  (void)n;
  CHECK_ERR(af_name_push(c, "", 0), AF_ERR_INVALID_ARGUMENT, "empty");
  CHECK_ERR(af_name_push(c, "a/b", 3), AF_ERR_INVALID_ARGUMENT, "'/'", "one name per level");
  CHECK_ERR(af_name_push(c, "\xff", 1), AF_ERR_INVALID_ARGUMENT, "utf-8|utf8");
  CHECK_ERR(af_name_pop(c), AF_ERR_INVALID_ARGUMENT, "name pop without a matching push");
  return af_concat(c, in, 1, out);
}

static void name_scopes_reject_bad_input(void) {
  af_value_t* q = str("q");
  af_ir_t* ir = NULL;
  CHECK_OK(af_trace(ctx, bad_names, NULL, (const af_value_t* const*)&q, 1, NULL, &ir));
  af_ir_free(ir);
  ir = NULL;
  CHECK_ERR(af_trace(ctx, unclosed_name, NULL, (const af_value_t* const*)&q, 1, NULL, &ir),
            AF_ERR_INVALID_ARGUMENT, "name scope(s) still open", "\"open\"");
  CHECK(ir == NULL);
  /* Outside a trace on an eager context (nothing is recorded there). */
  CHECK_ERR(af_name_push(ctx, "x", 1), AF_ERR_INVALID_ARGUMENT, "inside a trace");
  CHECK_ERR(af_name_pop(ctx), AF_ERR_INVALID_ARGUMENT, "inside a trace");
  CHECK_ERR(af_name_push(NULL, "x", 1), AF_ERR_INVALID_ARGUMENT, "ctx");
  CHECK_ERR(af_name_pop(NULL), AF_ERR_INVALID_ARGUMENT, "ctx");
  af_value_free(q);
}

/* On a lazy context, name scopes outside a trace name the operations it
 * records: a failed one says where it was recorded, with its name path. */
static void lazy_operations_carry_name_paths(void) {
  af_context_t* lazy = NULL;
  af_value_t *q = NULL, *model = NULL, *answer = NULL;
  const char* text = NULL;
  size_t len = 0;
  CHECK_OK(af_context_new_with("{\"lazy\": true}", 14, &lazy));
  CHECK_OK(af_value_str(lazy, "q", 1, &q));
  CHECK_OK(af_value_str(lazy, "unrouted", 8, &model));
  CHECK_OK(af_name_push(lazy, "triage", 6));
  CHECK_OK(af_name_push(lazy, "draft", 5));
  CHECK_OK(ask(lazy, q, model, &answer));
  CHECK_OK(af_name_pop(lazy));
  CHECK_OK(af_name_pop(lazy));
  CHECK_ERR(af_name_pop(lazy), AF_ERR_INVALID_ARGUMENT, "name pop without a matching push");
  CHECK_ERR(af_value_get_str(answer, &text, &len), AF_ERR_NOT_FOUND, "lm_call (operation #",
            "name triage/draft", "unrouted");
  af_value_free(answer);
  af_value_free(model);
  af_value_free(q);
  af_context_free(lazy);
}

int main(int argc, char** argv) {
  static const struct test_case cases[] = {CASE(triage_queries_match_reference),
                                           CASE(generated_dags_match_reference),
                                           CASE(dag_slices_compute_the_same_output),
                                           CASE(triage_slice_runs_and_matches),
                                           CASE(slice_reports_missing_inputs),
                                           CASE(eqn_json_describes_inputs_params_and_subs),
                                           CASE(ir_json_lists_inputs_outputs_and_vars),
                                           CASE(dot_draws_branches_and_names_tool_calls),
                                           CASE(deep_queries_enter_sub_irs),
                                           CASE(cost_counts_calls_per_model),
                                           CASE(cost_counts_loops_by_max_iters_and_dynamic_models),
                                           CASE(name_paths_are_recorded_and_shown),
                                           CASE(name_paths_join_hash_and_equality),
                                           CASE(name_paths_survive_transforms_and_saving),
                                           CASE(failing_equations_name_their_path),
                                           CASE(name_scopes_reject_bad_input),
                                           CASE(bad_saved_name_paths_are_format_errors),
                                           CASE(lazy_operations_carry_name_paths),
                                           CASE(deep_queries_are_bounded_in_bytes)};
  return run_cases(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
