/* make_graphs: the "other process" of the plugin-host example. It traces a
 * small agent step and saves it as a graph a plugin host can run:
 *
 *   agent(topic) = {"notes": lookup(topic),
 *                   "answer": lm_call([system, user: "Topic: {topic}. Notes: {notes}"],
 *                                     model "plugin-model")}
 *
 * `lookup` is a host function referenced by name only: the tracer registers
 * a stand-in so it knows the result's kind; the host that runs the graph
 * registers its own. A second graph calls `translate`, which the example
 * host does not provide.
 * Usage: make_graphs AGENT.afg MISSING.afg */
#include <af/af.h>
#include <stdio.h>
#include <string.h>

#define TRY(call)        \
  do {                   \
    err = (call);        \
    if (err) goto done;  \
  } while (0)

static af_error_t* stand_in(void* ud, const af_value_t* const* args, size_t n, af_value_t** out) {
  (void)ud;
  (void)args;
  (void)n;
  (void)out;
  return af_error_new(AF_ERR_INTERNAL, "only traced, never called", 25);
}

/* ud: the host function's name. */
static af_error_t* agent(void* ud, af_context_t* ctx, const af_value_t* const* in, size_t n,
                         af_value_t** out) {
  const char* tool = (const char*)ud;
  af_value_t *notes = NULL, *prompt = NULL, *messages = NULL, *model = NULL, *answer = NULL;
  af_value_t *system = NULL, *user = NULL, *role = NULL;
  af_error_t* err = NULL;
  (void)n;
  TRY(af_host_call(ctx, tool, strlen(tool), in, 1, &notes));
  {
    const af_value_t* args[2] = {in[0], notes};
    TRY(af_format(ctx, "Topic: {}. Notes: {}", 20, args, 2, NULL, &prompt));
  }
  {
    static const char sys[] = "{\"role\":\"system\",\"content\":\"Answer in one line.\"}";
    const char* keys[2] = {"role", "content"};
    const size_t key_lens[2] = {4, 7};
    const af_value_t* vals[2] = {NULL, prompt};
    TRY(af_value_json_new(sys, strlen(sys), &system));
    TRY(af_value_str_new("user", 4, &role));
    vals[0] = role;
    TRY(af_value_dict_new(keys, key_lens, vals, 2, &user));
  }
  {
    const af_value_t* items[2] = {system, user};
    TRY(af_value_list_new(items, 2, &messages));
  }
  TRY(af_value_str_new("plugin-model", 12, &model));
  TRY(af_lm_call(ctx, messages, model, &answer));
  {
    const char* keys[2] = {"notes", "answer"};
    const size_t key_lens[2] = {5, 6};
    const af_value_t* vals[2] = {notes, answer};
    TRY(af_value_dict_new(keys, key_lens, vals, 2, out));
  }
done:
  af_value_free(notes);
  af_value_free(prompt);
  af_value_free(messages);
  af_value_free(model);
  af_value_free(answer);
  af_value_free(system);
  af_value_free(user);
  af_value_free(role);
  return err;
}

static af_error_t* save(af_context_t* ctx, const char* tool, const char* path) {
  af_value_t *kinds = NULL, *example = NULL;
  af_ir_t* ir = NULL;
  af_error_t* err = NULL;
  TRY(af_value_str_new("str", 3, &kinds));
  TRY(af_register_function(ctx, tool, strlen(tool), stand_in, NULL, NULL, kinds));
  TRY(af_value_str_new("topic", 5, &example));
  {
    const af_value_t* examples[1] = {example};
    TRY(af_trace(ctx, agent, (void*)tool, examples, 1, NULL, &ir));
  }
  TRY(af_ir_save(ir, path, strlen(path)));
done:
  af_value_free(kinds);
  af_value_free(example);
  af_ir_free(ir);
  return err;
}

int main(int argc, char** argv) {
  af_context_t* ctx = NULL;
  af_error_t* err;
  if (argc != 3) {
    fprintf(stderr, "usage: make_graphs AGENT.afg MISSING.afg\n");
    return 2;
  }
  err = af_context_new(&ctx);
  if (!err) err = save(ctx, "lookup", argv[1]);
  if (!err) err = save(ctx, "translate", argv[2]);
  af_context_free(ctx);
  if (err) {
    fprintf(stderr, "make_graphs: %s\n", af_error_message(err));
    af_error_free(err);
    return 1;
  }
  printf("saved %s and %s\n", argv[1], argv[2]);
  return 0;
}
