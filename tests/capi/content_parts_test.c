/* content_parts_test.c — messages whose content is a list of text and image
 * parts, through the C API: echo reads the text parts, a host provider sees
 * every part in the request JSON, a traced call takes one input per part
 * (batched, saved and reloaded, journaled keys and all), images get no
 * feedback under pullback, and malformed parts are INVALID_ARGUMENT naming
 * the part — when the call is made, or per item when its data arrives. (The
 * HTTP wire formats are tests/capi/parts_wire_test.c.) */
#include "lazy_common.h"

#include <pthread.h>

static const char* kPng = "iVBORw0KGgo=";
static const char* kBrief = "{\"type\":\"text\",\"text\":\"Be brief.\"}";
static const char* kSystem = "{\"role\":\"system\",\"content\":\"Describe images.\"}";

static af_value_t* parts_message(const char* text, const char* url) {
  char json[1024];
  snprintf(json, sizeof json,
           "[{\"role\":\"system\",\"content\":\"Describe images.\"},{\"role\":\"user\",\"content\":["
           "{\"type\":\"text\",\"text\":\"%s\"},{\"type\":\"image\",\"url\":\"%s\"},"
           "{\"type\":\"image\",\"media_type\":\"image/png\",\"data\":\"%s\"},{\"type\":\"text\",\"text\":\"Be brief.\"}]}]",
           text, url, kPng);
  return mk_json(json);
}

static void echo_reads_the_text_parts(void) {
  af_provider_t* echo = route_echo(ctx, "{}");
  af_value_t *msgs = parts_message("What is this?", "https://example.com/cat.png"), *model = mk_str("m"), *out = NULL;
  if (msgs && CHECK_OK(af_lm_call(ctx, msgs, model, &out))) CHECK_JSON(out, "\"m|What is this?\\n\\nBe brief.\"");
  af_value_free(msgs);
  af_value_free(model);
  af_value_free(out);
  af_provider_free(echo);
}

static void record_json(void* ud, af_lm_request_t* req) {
  af_bytes_t b = {NULL, 0};
  if (!af_lm_request_json(req, &b)) {
    snprintf((char*)ud, 2048, "%.*s", (int)b.len, (const char*)b.data);
    af_bytes_free(&b);
  }
  af_error_free(af_lm_request_complete(req, "ok", 2));
}

static void a_host_provider_sees_every_part(void) {
  static char seen[2048];
  af_provider_t* host = NULL;
  af_value_t *msgs = parts_message("What is this?", "data:image/png;base64,iVBORw0KGgo="), *model = mk_str("m"),
             *out = NULL;
  seen[0] = 0;
  if (!CHECK_OK(af_provider_host_new(record_json, seen, NULL, &host))) goto done;
  CHECK_OK(af_context_route(ctx, "*", 1, host));
  if (msgs && CHECK_OK(af_lm_call(ctx, msgs, model, &out)))
    CHECK_CONTAINS(seen,
                   "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"What is this?\"},{\"type\":"
                   "\"image\",\"url\":\"data:image/png;base64,iVBORw0KGgo=\"},{\"type\":\"image\",\"media_type\":"
                   "\"image/png\",\"data\":\"iVBORw0KGgo=\"},{\"type\":\"text\",\"text\":\"Be brief.\"}]}");
done:
  af_value_free(msgs);
  af_value_free(model);
  af_value_free(out);
  af_provider_free(host);
}

/* ask(text, url) = lm_call([system, user: [text, image url, image data, "Be brief."]], "m") */
static af_error_t* ask_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n, af_value_t** out) {
  const char* keys[2] = {"type", "text"};
  const char* ukeys[2] = {"type", "url"};
  size_t lens[2] = {4, 4}, ulens[2] = {4, 3};
  af_value_t *t = NULL, *img = NULL, *tpart = NULL, *upart = NULL, *rest = NULL, *parts = NULL, *user = NULL,
             *role = NULL, *msgs = NULL, *model = NULL, *sys = NULL, *pair[3] = {NULL, NULL, NULL};
  const af_value_t* v[2];
  const char* mkeys[2] = {"role", "content"};
  size_t mlens[2] = {4, 7};
  af_error_t* e;
  char data[128];
  (void)ud;
  (void)n;
  snprintf(data, sizeof data, "{\"type\":\"image\",\"media_type\":\"image/png\",\"data\":\"%s\"}", kPng);
  e = af_value_str(c, "text", 4, &t);
  if (!e) e = af_value_str(c, "image", 5, &img);
  v[0] = t;
  v[1] = in[0];
  if (!e) e = af_value_dict(c, keys, lens, v, 2, &tpart);
  v[0] = img;
  v[1] = in[1];
  if (!e) e = af_value_dict(c, ukeys, ulens, v, 2, &upart);
  if (!e) e = af_value_from_json(c, data, strlen(data), &pair[2]);
  if (!e) e = af_value_from_json(c, kBrief, strlen(kBrief), &rest);
  pair[0] = tpart;
  pair[1] = upart;
  if (!e) {
    const af_value_t* items[4];
    items[0] = tpart;
    items[1] = upart;
    items[2] = pair[2];
    items[3] = rest;
    e = af_value_list(c, items, 4, &parts);
  }
  if (!e) e = af_value_str(c, "user", 4, &role);
  v[0] = role;
  v[1] = parts;
  if (!e) e = af_value_dict(c, mkeys, mlens, v, 2, &user);
  if (!e) e = af_value_from_json(c, kSystem, strlen(kSystem), &sys);
  v[0] = sys;
  v[1] = user;
  if (!e) e = af_value_list(c, v, 2, &msgs);
  if (!e) e = af_value_str(c, "m", 1, &model);
  if (!e) e = af_lm_call(c, msgs, model, out);
  af_value_free(t);
  af_value_free(img);
  af_value_free(tpart);
  af_value_free(upart);
  af_value_free(pair[2]);
  af_value_free(rest);
  af_value_free(parts);
  af_value_free(role);
  af_value_free(user);
  af_value_free(sys);
  af_value_free(msgs);
  af_value_free(model);
  return e;
}

static void a_traced_call_takes_one_input_per_part(void) {
  af_provider_t* echo = route_echo(ctx, "{}");
  af_ir_t *ir = TRACE(ask_fn, NULL, "[\"q\", \"u\"]", NULL), *batched = NULL, *loaded = NULL, *pulled = NULL;
  af_bytes_t bytes = {NULL, 0};
  char* text = NULL;
  if (!ir) goto done;
  text = ir_text(ir);
  if (text) CHECK_CONTAINS(text, "parts=[null,[\"text\",\"url\",\"image/png\",\"text\"]]");
  CHECK_CALL(ir, "[\"Cat?\", \"https://example.com/c.png\"]", "\"m|Cat?\\n\\nBe brief.\"");
  if (CHECK_OK(af_batch(ctx, ir, NULL, &batched)))
    CHECK_CALL(batched, "[[\"A?\", \"B?\"], [\"https://a.png\", \"https://b.png\"]]",
               "[\"m|A?\\n\\nBe brief.\",\"m|B?\\n\\nBe brief.\"]");
  if (CHECK_OK(af_ir_to_bytes(ir, &bytes)) && CHECK_OK(af_ir_from_bytes(ctx, bytes.data, bytes.len, &loaded))) {
    CHECK(af_ir_equal(ir, loaded));
    CHECK_CALL(loaded, "[\"Cat?\", \"https://example.com/c.png\"]", "\"m|Cat?\\n\\nBe brief.\"");
  }
  /* Feedback reaches the traced text part, not the traced image. */
  if (CHECK_OK(af_pullback(ctx, ir, &pulled))) {
    af_value_t* out = NULL;
    af_value_t *in = mk_json("[[\"Cat?\", \"https://example.com/c.png\"], \"shorter\"]"), *a = NULL, *b = NULL;
    if (in && CHECK_OK(af_value_index(in, 0, &a)) && CHECK_OK(af_value_index(in, 1, &b))) {
      const af_value_t* args[2];
      args[0] = a;
      args[1] = b;
      if (CHECK_OK(af_ir_call(ctx, pulled, args, 2, &out))) {
        char* j = json_of(out);
        if (j) {
          CHECK_CONTAINS(j, "[\"m|The input (the user message):");  /* feedback on the text */
          CHECK_CONTAINS(j, ",null]]");                                /* none on the image */
        }
        free(j);
      }
    }
    af_value_free(out);
    af_value_free(in);
    af_value_free(a);
    af_value_free(b);
  }
done:
  free(text);
  af_bytes_free(&bytes);
  af_ir_free(ir);
  af_ir_free(batched);
  af_ir_free(loaded);
  af_ir_free(pulled);
  af_provider_free(echo);
}

/* A traced image whose value arrives malformed fails its item only. */
static void a_bad_image_fails_its_item(void) {
  af_provider_t* echo = route_echo(ctx, "{}");
  af_ir_t *ir = TRACE(ask_fn, NULL, "[\"q\", \"u\"]", NULL), *batched = NULL;
  af_program_t* prog = NULL;
  af_value_t *q = mk_json("[\"A?\", \"B?\"]"), *u = mk_json("[\"https://a.png\", \"ftp://b.png\"]"), *out = NULL;
  const af_value_t* in[2];
  af_run_options_t o;
  in[0] = q;
  in[1] = u;
  if (!ir || !CHECK_OK(af_batch(ctx, ir, NULL, &batched)) || !CHECK_OK(af_compile(ctx, batched, &prog))) goto done;
  CHECK_ERR(af_program_call(ctx, prog, in, 2, &out), AF_ERR_INVALID_ARGUMENT, "messages[1].content[1]",
            "must start with https://");
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.flags = AF_RUN_ITEM_ERRORS;
  if (CHECK_OK(af_program_call_with(ctx, prog, in, 2, &o, &out))) {
    char* j = json_of(out);
    if (j) {
      CHECK_CONTAINS(j, "[\"m|A?\\n\\nBe brief.\",{\"error\":");
      CHECK_CONTAINS(j, "ftp://b.png");
    }
    free(j);
  }
done:
  af_value_free(q);
  af_value_free(u);
  af_value_free(out);
  af_program_free(prog);
  af_ir_free(batched);
  af_ir_free(ir);
  af_provider_free(echo);
}

static void malformed_parts_are_invalid_argument(void) {
  af_provider_t* echo = route_echo(ctx, "{}");
  af_value_t *model = mk_str("m"), *out = NULL;
  size_t i;
  static const struct {
    const char* content;
    const char* fragment;
  } kBad[] = {
      {"[]", "empty list of parts"},
      {"[{\"type\":\"video\",\"url\":\"https://a\"}]", "unknown part type \"video\""},
      {"[{\"text\":\"x\"}]", "content[0] must be"},
      {"[{\"type\":\"text\",\"text\":1}]", "needs a str \"text\""},
      {"[{\"type\":\"text\",\"text\":\"x\",\"url\":\"y\"}]", "unknown key \"url\""},
      {"[{\"type\":\"image\",\"data\":\"iVBO\"}]", "concrete \"media_type\""},
      {"[{\"type\":\"image\",\"media_type\":\"image/tiff\",\"data\":\"iVBO\"}]", "image/png, image/jpeg"},
      {"[{\"type\":\"image\",\"media_type\":\"image/png\",\"data\":\"not base64!\"}]", "not base64"},
      {"[{\"type\":\"image\",\"url\":\"file:///etc/passwd\"}]", "must start with https://"},
  };
  for (i = 0; i < sizeof kBad / sizeof kBad[0]; ++i) {
    char json[512];
    af_value_t* msgs;
    snprintf(json, sizeof json, "[{\"role\":\"user\",\"content\":%s}]", kBad[i].content);
    msgs = mk_json(json);
    CHECK_ERR(af_lm_call(ctx, msgs, model, &out), AF_ERR_INVALID_ARGUMENT, "lm_call", "messages[0]",
              kBad[i].fragment);
    af_value_free(msgs);
  }
  CHECK(out == NULL);
  af_value_free(model);
  af_provider_free(echo);
}

int main(int argc, char** argv) {
  static const struct test_case cases[] = {
      CASE(echo_reads_the_text_parts),
      CASE(a_host_provider_sees_every_part),
      CASE(a_traced_call_takes_one_input_per_part),
      CASE(a_bad_image_fails_its_item),
      CASE(malformed_parts_are_invalid_argument),
  };
  return run_cases(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
