/* shared_subirs_test.c — a graph whose sub-IRs reuse each other in a fan:
 * 19 levels, each using the one below three times (a switch with two
 * branches on it, and a loop whose body it is), so a 1.5 KB file reaches
 * 2.3e9 equations once expanded, within every loader limit. Every entry
 * point that walks a whole graph must work on the shared DAG (each distinct
 * sub-IR once) or refuse with a clear code; none may expand it (they used
 * to run for an hour or exhaust memory). Each case runs under the harness's
 * 60 s alarm, which a regression turns into a failure. The same graph is
 * fuzz/corpus/graph/fan_sub_irs_json (fuzz/crafted.py). */
#include "check.h"

#define FAN_LEVELS 19

/* The fan's JSON form, as fuzz/crafted.py writes it (malloc'd). */
static char* fan_json(int levels) {
  size_t cap = 4096 + (size_t)levels * 512, n = 0;
  char* s = (char*)malloc(cap);
  int k;
  n += (size_t)snprintf(
      s + n, cap - n,
      "{\"afg\":1,\"irs\":["
      "{\"vars\":[\"str\"],\"in\":{\"tree\":[[\"*\"]],\"atoms\":[\"%%0\"]},\"eqns\":[],"
      "\"out\":{\"lit\":true}},"
      "{\"vars\":[\"str\",\"str\"],\"in\":{\"tree\":[[\"*\"]],\"atoms\":[\"%%0\"]},"
      "\"eqns\":[{\"prim\":\"concat\",\"out\":\"%%1\",\"in\":[\"%%0\",{\"lit\":\"!\"}]}],"
      "\"out\":{\"tree\":[\"*\"],\"atoms\":[\"%%1\"]}}");
  for (k = 1; k <= levels; k++)
    n += (size_t)snprintf(
        s + n, cap - n,
        ",{\"vars\":[\"str\",\"str\",\"str\"],\"in\":{\"tree\":[[\"*\"]],\"atoms\":[\"%%0\"]},"
        "\"eqns\":["
        "{\"prim\":\"switch\",\"out\":{\"tree\":[\"*\"],\"atoms\":[\"%%1\"]},"
        "\"in\":{\"tree\":[\"*\",[\"*\"]],\"atoms\":[{\"lit\":\"a\"},\"%%0\"]},"
        "\"params\":{\"branches\":{\"ir_map\":{\"a\":%d,\"b\":%d}}}},"
        "{\"prim\":\"while_loop\",\"out\":{\"tree\":[\"*\"],\"atoms\":[\"%%2\"]},"
        "\"in\":{\"tree\":[[\"*\"]],\"atoms\":[\"%%1\"]},"
        "\"params\":{\"body\":{\"ir\":%d},\"cond\":{\"ir\":0},\"max_iters\":{\"value\":1}}}],"
        "\"out\":{\"tree\":[\"*\"],\"atoms\":[\"%%2\"]}}",
        k, k, k);
  snprintf(s + n, cap - n, "]}");
  return s;
}

static char fan_path[256];
static af_bytes_t fan_bytes;

/* Writes the fan's .afg to a temporary file and loads it. */
static af_ir_t* load_fan(void) {
  char* json = fan_json(FAN_LEVELS);
  af_ir_t* ir = NULL;
  FILE* f;
  if (!fan_bytes.data && !CHECK_OK(af_graph_from_json(ctx, json, strlen(json), &fan_bytes))) {
    free(json);
    return NULL;
  }
  free(json);
  CHECK(fan_bytes.len < 2048);
  snprintf(fan_path, sizeof fan_path, "/tmp/af_shared_subirs_%ld.afg", (long)getpid());
  f = fopen(fan_path, "wb");
  CHECK(f && fwrite(fan_bytes.data, 1, fan_bytes.len, f) == fan_bytes.len);
  if (f) fclose(f);
  CHECK_OK(af_ir_load(ctx, fan_path, strlen(fan_path), &ir));
  return ir;
}

static void done_fan(af_ir_t* ir) {
  af_ir_free(ir);
  af_bytes_free(&fan_bytes);
  fan_bytes.data = NULL;
  remove(fan_path);
}

static void loads_verifies_validates_hashes_and_compares(void) {
  af_ir_t* ir = load_fan();
  af_ir_t* again = NULL;
  af_bytes_t summary = {NULL, 0};
  if (!ir) return;
  if (CHECK_OK(af_graph_verify(ctx, fan_bytes.data, fan_bytes.len, &summary)))
    CHECK_CONTAINS((const char*)summary.data, "\"irs\":21");
  af_bytes_free(&summary);
  CHECK_OK(af_ir_validate(ir));
  /* A second load is a distinct DAG of equal structure. */
  CHECK_OK(af_ir_load(ctx, fan_path, strlen(fan_path), &again));
  CHECK(af_ir_hash(ir) == af_ir_hash(again));
  CHECK_INT_EQ(af_ir_equal(ir, again), 1);
  af_ir_free(again);
  done_fan(ir);
}

static void prints_each_shared_sub_ir_once(void) {
  af_ir_t* ir = load_fan();
  char* text;
  char* dot;
  af_bytes_t json = {NULL, 0}, cost = {NULL, 0};
  if (!ir) return;
  text = ir_text(ir);
  /* Each level is printed once and referred to after (docs/IR_TEXT.md). */
  if (text) {
    CHECK(strlen(text) < 20000);
    CHECK_CONTAINS(text, "&1 {");
    CHECK_CONTAINS(text, "*1");
    CHECK_CONTAINS(text, "*19");
  }
  free(text);
  dot = ir_dot(ir);
  free(dot);
  CHECK_OK(af_ir_json(ir, &json));
  af_bytes_free(&json);
  /* No LM call anywhere: nothing to count, however many paths. */
  if (CHECK_OK(af_ir_cost_json(ir, 1, &cost)))
    CHECK_CONTAINS((const char*)cost.data, "\"calls\":0");
  af_bytes_free(&cost);
  done_fan(ir);
}

static void transforms_work_on_the_dag(void) {
  af_ir_t* ir = load_fan();
  af_ir_t* out = NULL;
  uint32_t level = 0;
  double priority = 0;
  if (!ir) return;
  if (CHECK_OK(af_dce(ctx, ir, NULL, &out))) CHECK_OK(af_ir_validate(out));
  af_ir_free(out);
  out = NULL;
  if (CHECK_OK(af_cse(ctx, ir, &out))) CHECK_INT_EQ(af_ir_equal(ir, out), 1);
  af_ir_free(out);
  out = NULL;
  if (CHECK_OK(af_sched(ctx, ir, &out))) CHECK_OK(af_ir_eqn_sched(out, 1, &level, &priority));
  CHECK_INT_EQ(level, 1);
  af_ir_free(out);
  out = NULL;
  if (CHECK_OK(af_pushforward(ctx, ir, &out))) CHECK_OK(af_ir_validate(out));
  af_ir_free(out);
  out = NULL;
  if (CHECK_OK(af_batch(ctx, ir, NULL, &out))) CHECK_OK(af_ir_validate(out));
  af_ir_free(out);
  out = NULL;
  /* The pullback of this graph keeps the residuals of every use of every
   * level: exponentially many, so it is refused by the transform budget. */
  CHECK_ERR(af_pullback(ctx, ir, &out), AF_ERR_INVALID_ARGUMENT, "shared sub-IRs");
  CHECK_NULLED(out, af_ir_free);
  done_fan(ir);
}

static void compiles_saves_and_loads_as_a_program(void) {
  af_ir_t* ir = load_fan();
  af_program_t* p = NULL;
  af_program_t* back = NULL;
  char path[256];
  if (!ir) return;
  snprintf(path, sizeof path, "/tmp/af_shared_subirs_%ld.prog.afg", (long)getpid());
  if (CHECK_OK(af_compile(ctx, ir, &p))) {
    CHECK_OK(af_program_save(p, path, strlen(path)));
    CHECK_OK(af_program_load(ctx, path, strlen(path), &back));
  }
  af_program_free(back);
  af_program_free(p);
  remove(path);
  done_fan(ir);
}

int main(int argc, char** argv) {
  static const struct test_case cases[] = {
      CASE(loads_verifies_validates_hashes_and_compares),
      CASE(prints_each_shared_sub_ir_once),
      CASE(transforms_work_on_the_dag),
      CASE(compiles_saves_and_loads_as_a_program),
  };
  return run_cases(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
