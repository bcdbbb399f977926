/* rolling_summary: summarize a long document chunk by chunk with af_scan.
 * The carry is the summary so far; each step asks the model to fold the
 * next chunk into it; ys keeps the summary after every chunk. The program
 * is traced once over a list of chunks of any length, so the same traced
 * (or saved) program summarizes any document.
 *
 * Usage: rolling_summary_example [FILE]
 *   FILE: a text whose paragraphs (separated by blank lines) are the chunks
 *   (default: a short built-in document). The model "summarizer" answers
 *   through the offline echo provider; set AF_SUMMARY_URL (an
 *   OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1) to ask a
 *   real model there. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "af/af.h"

static const char* kDocument =
    "The support team moved to a new ticket system in March.\n\n"
    "Response times fell by a third in the first month.\n\n"
    "Two outages in April sent the backlog back up.\n\n"
    "By June the team had added an on-call rota and the backlog was gone.";

/* step(summary, chunk) = [next, next] where next asks the summarizer to fold
 * the chunk into the summary. */
static af_error_t* step_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                           af_value_t** out) {
  static const char* kTemplate = "Summary so far: {}\nNext part: {}\nWrite the updated summary in one sentence.";
  const char* keys[2] = {"role", "content"};
  size_t lens[2] = {4, 7};
  af_value_t* items[2] = {NULL, NULL};
  af_value_t *msg = NULL, *msgs = NULL, *model = NULL, *next = NULL;
  const af_value_t* pair[2];
  af_error_t* e = af_value_str_new("user", 4, &items[0]);
  (void)ud;
  (void)n;
  if (!e) e = af_format(c, kTemplate, strlen(kTemplate), in, 2, NULL, &items[1]);
  if (!e) e = af_value_dict_new(keys, lens, (const af_value_t* const*)items, 2, &msg);
  if (!e) e = af_value_list_new((const af_value_t* const*)&msg, 1, &msgs);
  if (!e) e = af_value_str_new("summarizer", 10, &model);
  if (!e) e = af_lm_call(c, msgs, model, &next);
  pair[0] = next;
  pair[1] = next;
  if (!e) e = af_value_list_new(pair, 2, out);
  af_value_free(items[0]);
  af_value_free(items[1]);
  af_value_free(msg);
  af_value_free(msgs);
  af_value_free(model);
  af_value_free(next);
  return e;
}

/* summarize(start, chunks) = scan(step, start, chunks) */
static af_error_t* summarize_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                                af_value_t** out) {
  (void)n;
  return af_scan(c, (const af_ir_t*)ud, in[0], in[1], 0, out);
}

/* The text's paragraphs as a list value. */
static af_error_t* chunks_of(af_context_t* c, const char* text, af_value_t** out) {
  af_value_t* items[256];
  size_t n = 0;
  af_error_t* e = NULL;
  const char* p = text;
  while (*p && n < 256 && !e) {
    const char* end = strstr(p, "\n\n");
    size_t len = end ? (size_t)(end - p) : strlen(p);
    while (len && (p[len - 1] == '\n' || p[len - 1] == ' ')) --len;
    if (len) e = af_value_str_new(p, len, &items[n++]);
    if (!end) break;
    p = end + 2;
    while (*p == '\n') ++p;
  }
  if (!e) e = af_value_list_new((const af_value_t* const*)items, n, out);
  while (n) af_value_free(items[--n]);
  return e;
}

static char* read_file(const char* path) {
  FILE* f = fopen(path, "rb");
  char* buf = NULL;
  long size;
  if (!f) return NULL;
  if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
      (buf = malloc((size_t)size + 1)) != NULL) {
    size_t got = fread(buf, 1, (size_t)size, f);
    buf[got] = 0;
  }
  fclose(f);
  return buf;
}

static af_error_t* route_summarizer(af_context_t* ctx) {
  const char* url = getenv("AF_SUMMARY_URL");
  char opts[512];
  af_provider_t* p = NULL;
  af_error_t* e;
  if (url && *url) {
    snprintf(opts, sizeof opts, "{\"base_url\":\"%s\"}", url);
    e = af_provider_openai_new(opts, strlen(opts), &p);
  } else {
    e = af_provider_echo_new(NULL, 0, &p);
  }
  if (!e) e = af_context_route(ctx, "summarizer", 10, p);
  af_provider_free(p);
  return e;
}

int main(int argc, char** argv) {
  char* text = argc > 1 ? read_file(argv[1]) : NULL;
  af_context_t* ctx = NULL;
  af_ir_t *step = NULL, *program = NULL;
  af_value_t *ex[2] = {NULL, NULL}, *mask = NULL, *chunks = NULL, *start = NULL, *result = NULL;
  af_value_t *summaries = NULL, *item = NULL;
  af_trace_options_t o;
  af_error_t* e;
  if (argc > 1 && !text) {
    fprintf(stderr, "cannot read %s\n", argv[1]);
    return 2;
  }
  e = af_context_new(&ctx);
  if (!e) e = route_summarizer(ctx);
  /* Trace the step on example strings, then the whole program over a list
   * of chunks of any length (list_mask marks input 1). */
  if (!e) e = af_value_str_new("s", 1, &ex[0]);
  if (!e) e = af_value_str_new("x", 1, &ex[1]);
  if (!e) e = af_trace(ctx, step_fn, NULL, (const af_value_t* const*)ex, 2, NULL, &step);
  af_value_free(ex[1]);
  ex[1] = NULL;
  if (!e) e = af_value_json_new("[\"x\"]", 5, &ex[1]);
  if (!e) e = af_value_json_new("[false, true]", 13, &mask);
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.list_mask = mask;
  if (!e) e = af_trace_with(ctx, summarize_fn, step, (const af_value_t* const*)ex, 2, &o, &program);
  if (!e) e = chunks_of(ctx, text ? text : kDocument, &chunks);
  if (!e) e = af_value_str_new("(nothing yet)", 13, &start);
  if (!e) {
    const af_value_t* inputs[2] = {start, chunks};
    e = af_ir_call(ctx, program, inputs, 2, &result);
  }
  size_t count = 0;
  if (!e) e = af_value_index(result, 1, &summaries);
  if (!e) e = af_value_len(summaries, &count);
  for (size_t i = 0; !e && i < count; ++i) {
    const char* s = NULL;
    size_t len = 0;
    af_value_free(item);
    item = NULL;
    e = af_value_index(summaries, i, &item);
    if (!e) e = af_value_get_str(item, &s, &len);
    if (!e) printf("after chunk %zu: %.*s\n", i + 1, (int)len, s);
  }
  af_value_free(item);
  af_value_free(summaries);
  af_value_free(result);
  af_value_free(start);
  af_value_free(chunks);
  af_value_free(mask);
  af_value_free(ex[0]);
  af_value_free(ex[1]);
  af_ir_free(program);
  af_ir_free(step);
  af_context_free(ctx);
  free(text);
  if (e) {
    fprintf(stderr, "error %d: %s\n", (int)af_error_code(e), af_error_message(e));
    af_error_free(e);
    return 1;
  }
  return 0;
}
