/* loop_graph: saves a graph that never ends, for the SQL extensions' tests
 * of timeouts and cancels: loop(s) = while match(s, s): s = concat(s)
 * (no iteration limit; every iteration is cheap, so the run spins).
 * Usage: loop_graph OUT.afg */
#include <af/af.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static af_error_t* cond_fn(void* ud, af_context_t* ctx, const af_value_t* const* in, size_t n,
                           af_value_t** out) {
  (void)ud;
  (void)n;
  return af_match(ctx, in[0], in[0], out);
}

static af_error_t* body_fn(void* ud, af_context_t* ctx, const af_value_t* const* in, size_t n,
                           af_value_t** out) {
  (void)ud;
  (void)n;
  return af_concat(ctx, in, 1, out);
}

static af_error_t* loop_fn(void* ud, af_context_t* ctx, const af_value_t* const* in, size_t n,
                           af_value_t** out) {
  af_ir_t* const* subs = (af_ir_t* const*)ud;
  (void)n;
  return af_while_loop(ctx, subs[0], subs[1], in[0], UINT64_MAX, out);
}

int main(int argc, char** argv) {
  af_context_t* ctx = NULL;
  af_value_t* example = NULL;
  af_ir_t *subs[2] = {NULL, NULL}, *loop = NULL;
  af_error_t* err;
  if (argc != 2) {
    fprintf(stderr, "usage: loop_graph OUT.afg\n");
    return 2;
  }
  err = af_context_new(&ctx);
  if (!err) err = af_value_str_new("s", 1, &example);
  if (!err) err = af_trace(ctx, cond_fn, NULL, (const af_value_t* const*)&example, 1, NULL, &subs[0]);
  if (!err) err = af_trace(ctx, body_fn, NULL, (const af_value_t* const*)&example, 1, NULL, &subs[1]);
  if (!err) err = af_trace(ctx, loop_fn, subs, (const af_value_t* const*)&example, 1, NULL, &loop);
  if (!err) err = af_ir_save(loop, argv[1], strlen(argv[1]));
  af_ir_free(loop);
  af_ir_free(subs[0]);
  af_ir_free(subs[1]);
  af_value_free(example);
  af_context_free(ctx);
  if (err) {
    fprintf(stderr, "loop_graph: %s\n", af_error_message(err));
    af_error_free(err);
    return 1;
  }
  return 0;
}
