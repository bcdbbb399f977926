/* Content parts (text and images) through the three HTTP wire formats
 * (openai, anthropic, ollama), against the local server
 * (tests/lm_server/server.py), which checks images in each format's form as
 * strictly as the real APIs (OpenAI's image_url parts, Anthropic's image
 * blocks with url and base64 sources, Ollama's "images" of base64 data; a
 * media type that does not match the image's bytes is a 400) and answers a
 * request with images "<model>|<text>|saw N image(s): <kinds>". Each type
 * gets a message of text, an image by URL (not for Ollama, which takes none),
 * an image as base64 data and one as a data: URL, plain and streamed; a
 * tool call with images; and the refusals: Ollama's of an image by URL, an
 * image outside a user message (every type), a data: URL that is not a
 * base64 image's. Providers are made from a spec by type name
 * (af_provider_new). */
#include "check.h"
#include "lm_helpers.h"

#include <pthread.h>

#define KEY "sk-ant-parts-test-0123456789"

static const char* const kTypes[] = {"openai", "anthropic", "ollama"};
#define NTYPES (sizeof kTypes / sizeof kTypes[0])

/* A PNG's and a JPEG's first bytes, base64: the server reads the format
 * from them. */
#define PNG "iVBORw0KGgo="
#define JPEG "/9j/4A=="

/* Two text parts and three images: by URL, as data, as a data: URL. */
static const char* kWithUrl =
    "[{\"role\":\"system\",\"content\":\"be brief\"},{\"role\":\"user\",\"content\":["
    "{\"type\":\"text\",\"text\":\"look\"},{\"type\":\"image\",\"url\":\"https://example.com/cat.png\"},"
    "{\"type\":\"image\",\"media_type\":\"image/png\",\"data\":\"" PNG "\"},"
    "{\"type\":\"text\",\"text\":\"and this\"},{\"type\":\"image\",\"url\":\"data:image/jpeg;base64," JPEG "\"}]}]";
/* The same without the image by URL (Ollama's). */
static const char* kDataOnly =
    "[{\"role\":\"system\",\"content\":\"be brief\"},{\"role\":\"user\",\"content\":["
    "{\"type\":\"text\",\"text\":\"look\"},"
    "{\"type\":\"image\",\"media_type\":\"image/png\",\"data\":\"" PNG "\"},"
    "{\"type\":\"text\",\"text\":\"and this\"},{\"type\":\"image\",\"url\":\"data:image/jpeg;base64," JPEG "\"}]}]";

static int is_ollama(const char* type) { return strcmp(type, "ollama") == 0; }

static const char* messages_for(const char* type) { return is_ollama(type) ? kDataOnly : kWithUrl; }

/* What the server answers model "ok" for messages_for(type). */
static const char* seen_for(const char* type) {
  return is_ollama(type) ? "ok|look\n\nand this|saw 2 images: png,jpeg"
                         : "ok|look\n\nand this|saw 3 images: url,png,jpeg";
}

/* A provider of type `type` for the server. */
static af_provider_t* provider_for(const struct server* s, const char* type) {
  char spec[1024];
  af_provider_t* p = NULL;
  snprintf(spec, sizeof spec,
           "{\"type\":\"%s\",\"name\":\"%s\",\"base_url\":\"http://127.0.0.1:%d%s\",\"timeout_ms\":2000,"
           "\"max_retries\":1,\"backoff_ms\":10%s}",
           type, type, s->port, strcmp(type, "openai") == 0 ? "/v1" : "",
           strcmp(type, "anthropic") == 0 ? ",\"api_key_env\":\"AF_PARTS_TEST_KEY\"" : "");
  CHECK_OK(af_provider_new(spec, strlen(spec), &p));
  return p;
}

/* v is the str `want`. */
#define CHECK_STR(v, want)                 \
  do {                                     \
    char buf_[1024];                       \
    CHECK_STR_EQ(str_of((v), buf_), want); \
  } while (0)

/* af_lm_call of the messages (JSON) to model. */
static af_error_t* call_parts(const char* messages, const char* model, af_value_t** out) {
  af_value_t *msgs = mk_json(messages), *m = mk_str(model);
  af_error_t* e = af_lm_call(ctx, msgs, m, out);
  af_value_free(msgs);
  af_value_free(m);
  return e;
}

/* The traced step: (model) -> lm_call(ud's messages (JSON), model). */
static af_error_t* parts_step(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                              af_value_t** out) {
  af_value_t* msgs = NULL;
  af_error_t* e = af_value_from_json(c, (const char*)ud, strlen((const char*)ud), &msgs);
  (void)n;
  if (!e) e = af_lm_call(c, msgs, in[0], out);
  af_value_free(msgs);
  return e;
}

/* ---- streaming ---------------------------------------------------------- */


/* Runs prog on model with the stream callback collecting into c (reset
 * first, once the last run's destroy came). */
static af_error_t* streamed(af_program_t* prog, struct streamed* c, const char* model, af_value_t** out) {
  af_value_t* in = mk_str(model);
  af_run_options_t o = streaming_into(c);
  af_error_t* e = af_program_call_with(ctx, prog, (const af_value_t* const*)&in, 1, &o, out);
  af_value_free(in);
  return e;
}

/* ---- cases -------------------------------------------------------------- */

/* Text and images reach the server in the type's form, in order: its
 * answer names the images it saw, plain and streamed. */
static void images_are_sent(void) {
  struct server s = server_start();
  struct streamed c;
  size_t i;
  memset(&c, 0, sizeof c);
  pthread_mutex_init(&c.mu, NULL);
  for (i = 0; i < NTYPES; i++) {
    const char* type = kTypes[i];
    af_provider_t* p = provider_for(&s, type);
    af_ir_t* ir = NULL;
    af_program_t* prog = NULL;
    af_value_t* out = NULL;
    if (!p) continue;
    printf("  %s\n", type);
    route("*", p);
    if (CHECK_OK(call_parts(messages_for(type), "ok", &out))) CHECK_STR(out, seen_for(type));
    af_value_free(out);
    out = NULL;
    printf("  %s, streamed\n", type);
    ir = TRACE(parts_step, (void*)messages_for(type), "[\"m\"]", NULL);
    if (ir && CHECK_OK(af_compile(ctx, ir, &prog)) && CHECK_OK(streamed(prog, &c, "ok", &out))) {
      CHECK_STR(out, seen_for(type));
      CHECK_STR_EQ(c.text, seen_for(type)); /* the pieces make up the reply */
    }
    af_value_free(out);
    af_program_free(prog);
    af_ir_free(ir);
    af_provider_free(p);
  }
  server_stop(&s);
}

/* A tool call whose messages hold images: the server checks them among the
 * tool-calling turns and calls its first tool. */
static void images_with_tools(void) {
  static const char* kTools = "[{\"name\":\"lookup\",\"description\":\"Looks a word up.\",\"parameters\":{"
                              "\"word\":{\"type\":\"str\"}}}]";
  struct server s = server_start();
  size_t i;
  for (i = 0; i < NTYPES; i++) {
    const char* type = kTypes[i];
    af_provider_t* p = provider_for(&s, type);
    af_value_t *msgs = mk_json(messages_for(type)), *model = mk_str("ok"), *empty = mk_str(""),
               *tools = mk_json(kTools), *out = NULL, *names = NULL;
    if (!p) goto next;
    printf("  %s\n", type);
    route("*", p);
    if (CHECK_OK(af_lm_tool_call(ctx, msgs, empty, model, tools, NULL, &out)) &&
        CHECK_OK(af_value_key(out, "names", 5, &names)))
      CHECK_JSON(names, "[\"lookup\"]");
  next:
    af_value_free(msgs);
    af_value_free(model);
    af_value_free(empty);
    af_value_free(tools);
    af_value_free(out);
    af_value_free(names);
    af_provider_free(p);
  }
  server_stop(&s);
}

/* What a type cannot send is refused before any request: INVALID_ARGUMENT,
 * and the server sees nothing. */
static void refusals(void) {
  struct server s = server_start();
  size_t i;
  for (i = 0; i < NTYPES; i++) {
    const char* type = kTypes[i];
    af_provider_t* p = provider_for(&s, type);
    af_value_t* out = NULL;
    if (!p) continue;
    printf("  %s\n", type);
    route("*", p);
    /* An image in a system message (the APIs take images from the user
     * alone). */
    CHECK_ERR(call_parts("[{\"role\":\"system\",\"content\":[{\"type\":\"text\",\"text\":\"sys\"},"
                        "{\"type\":\"image\",\"media_type\":\"image/png\",\"data\":\"" PNG "\"}]},"
                        "{\"role\":\"user\",\"content\":\"refused-system\"}]",
                        "ok", &out),
              AF_ERR_INVALID_ARGUMENT, type, "images can be given in user messages only", "messages[0]");
    CHECK_INT_EQ(server_attempts(&s, "ok", "refused-system"), 0);
    /* A system message of text parts alone is its text. */
    if (CHECK_OK(call_parts("[{\"role\":\"system\",\"content\":[{\"type\":\"text\",\"text\":\"sys\"}]},"
                           "{\"role\":\"user\",\"content\":\"text-system\"}]",
                           "ok", &out)))
      CHECK_STR(out, "ok|text-system");
    af_value_free(out);
    out = NULL;
    if (is_ollama(type)) {
      /* Ollama fetches no URL. */
      CHECK_ERR(call_parts(kWithUrl, "ok", &out), AF_ERR_INVALID_ARGUMENT,
                "ollama: Ollama's chat API takes images as base64 data only",
                "messages[1].content[1] is an image by URL");
      CHECK_INT_EQ(server_attempts(&s, "ok", "look\\n\\nand this"), 0); /* (a Python string's escapes) */
    }
    if (strcmp(type, "openai") != 0) {
      /* A data: URL that is not a base64 image's, read where it is sent
       * as data (OpenAI sends the URL as it is: the server refuses it). */
      CHECK_ERR(call_parts("[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"bad-data-url\"},"
                          "{\"type\":\"image\",\"url\":\"data:text/plain;base64,aGk=\"}]}]",
                          "ok", &out),
                AF_ERR_INVALID_ARGUMENT, type, "messages[0].content[1]", "data:<media type>;base64,<data>");
      CHECK_INT_EQ(server_attempts(&s, "ok", "bad-data-url"), 0);
    }
    af_provider_free(p);
  }
  server_stop(&s);
}

/* The server is as strict as the APIs: an image whose bytes are not of
 * the media type said is a 400 (here through OpenAI, which sends a data:
 * URL as it is, and Anthropic's base64 source). */
static void the_server_checks_images(void) {
  struct server s = server_start();
  size_t i;
  for (i = 0; i < 2; i++) {
    const char* type = kTypes[i];
    af_provider_t* p = provider_for(&s, type);
    af_value_t* out = NULL;
    if (!p) continue;
    printf("  %s\n", type);
    route("*", p);
    CHECK_ERR(call_parts("[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"mismatch\"},"
                        "{\"type\":\"image\",\"url\":\"data:image/png;base64," JPEG "\"}]}]",
                        "ok", &out),
              AF_ERR_PROVIDER, "HTTP 400", "does not match the provided media type image/png");
    af_provider_free(p);
  }
  server_stop(&s);
}

int main(int argc, char** argv) {
  static const struct test_case cases[] = {
      CASE(images_are_sent),
      CASE(images_with_tools),
      CASE(refusals),
      CASE(the_server_checks_images),
  };
  setenv("AF_PARTS_TEST_KEY", KEY, 1);
  return run_cases(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
