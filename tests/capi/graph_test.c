/* graph_test.c — saved graphs through the C API: files and bytes, the JSON
 * form, verification, error codes, and the golden graphs of
 * tests/conformance/graphs (every later libaf must load and run them). */
#include "check.h"

#include <dirent.h>
#include <sys/stat.h>

#ifndef AF_SOURCE_DIR
#define AF_SOURCE_DIR "."
#endif

/* hello(x) = concat(format("Hello, {}!", x), "?") */
static af_error_t* hello_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                            af_value_t** out) {
  af_value_t* parts[2] = {NULL, NULL};
  af_error_t* e;
  (void)ud;
  (void)n;
  e = af_format(c, "Hello, {}!", 10, in, 1, NULL, &parts[0]);
  if (e) return e;
  e = af_value_str(c, "?", 1, &parts[1]);
  if (!e) e = af_concat(c, AS_ARGS(parts), 2, out);
  af_value_free(parts[0]);
  af_value_free(parts[1]);
  return e;
}

static af_ir_t* hello_ir(void) { return TRACE(hello_fn, NULL, "[\"x\"]", NULL); }

static void temp_path(char* buf, size_t cap, const char* name) {
  snprintf(buf, cap, "/tmp/af_graph_test_%ld_%s", (long)getpid(), name);
}

/* Reads a whole file (malloc'd); NULL if it cannot. */
static unsigned char* slurp(const char* path, size_t* len) {
  FILE* f = fopen(path, "rb");
  unsigned char* buf;
  long n;
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  buf = (unsigned char*)malloc((size_t)n + 1);
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  if (buf) buf[n] = 0;
  *len = (size_t)n;
  return buf;
}

static uint32_t crc32_of(uint32_t crc, const unsigned char* p, size_t n) {
  size_t i;
  int k;
  crc = ~crc;
  for (i = 0; i < n; i++) {
    crc ^= p[i];
    for (k = 0; k < 8; k++) crc = (crc & 1) ? 0xedb88320u ^ (crc >> 1) : crc >> 1;
  }
  return ~crc;
}

/* Recomputes the header checksum (container version 1, 48-byte header). */
static void fix_crc(unsigned char* b, size_t len) {
  uint32_t crc = crc32_of(0, b, 40);
  crc = crc32_of(crc, b + 44, 4);
  crc = crc32_of(crc, b + 48, len - 48);
  b[40] = (unsigned char)crc;
  b[41] = (unsigned char)(crc >> 8);
  b[42] = (unsigned char)(crc >> 16);
  b[43] = (unsigned char)(crc >> 24);
}

static void save_and_load_a_file(void) {
  char path[256];
  af_ir_t* ir = hello_ir();
  af_ir_t* back = NULL;
  temp_path(path, sizeof path, "hello.afg");
  CHECK_OK(af_ir_save(ir, path, strlen(path)));
  CHECK_OK(af_ir_load(ctx, path, strlen(path), &back));
  CHECK(af_ir_equal(ir, back));
  CHECK_INT_EQ(af_ir_hash(ir), af_ir_hash(back));
  CHECK_CALL(back, "[\"World\"]", "\"Hello, World!?\"");
  /* Saving over an existing file replaces it. */
  CHECK_OK(af_ir_save(back, path, strlen(path)));
  af_ir_free(back);
  back = NULL;
  CHECK_OK(af_ir_load(ctx, path, strlen(path), &back));
  CHECK(af_ir_equal(ir, back));
  remove(path);
  af_ir_free(back);
  af_ir_free(ir);
}

static void bytes_are_deterministic_and_round_trip(void) {
  af_ir_t* ir = hello_ir();
  af_ir_t* again = hello_ir();
  af_ir_t* back = NULL;
  af_bytes_t a = {NULL, 0}, b = {NULL, 0}, c = {NULL, 0};
  CHECK_OK(af_ir_to_bytes(ir, &a));
  CHECK_OK(af_ir_to_bytes(again, &b));
  CHECK_INT_EQ(a.len, b.len);
  CHECK(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
  CHECK(a.len > 48 && memcmp(a.data, "\x89" "AFG\r\n\x1a\n", 8) == 0);
  CHECK_OK(af_ir_from_bytes(ctx, a.data, a.len, &back));
  CHECK(af_ir_equal(ir, back));
  CHECK_OK(af_ir_to_bytes(back, &c));
  CHECK(a.len == c.len && memcmp(a.data, c.data, a.len) == 0);
  af_bytes_free(&a);
  af_bytes_free(&b);
  af_bytes_free(&c);
  af_ir_free(back);
  af_ir_free(again);
  af_ir_free(ir);
}

static void verify_summarizes(void) {
  af_ir_t* ir = hello_ir();
  af_bytes_t bytes = {NULL, 0}, summary = {NULL, 0};
  CHECK_OK(af_ir_to_bytes(ir, &bytes));
  CHECK_OK(af_graph_verify(ctx, bytes.data, bytes.len, &summary));
  CHECK_CONTAINS((const char*)summary.data, "\"ok\":true");
  CHECK_CONTAINS((const char*)summary.data, "\"equations\":2");
  CHECK_CONTAINS((const char*)summary.data, "\"primitives\":[\"format\",\"concat\"]");
  af_bytes_free(&summary);
  CHECK_OK(af_graph_verify(ctx, bytes.data, bytes.len, NULL));
  CHECK_ERR(af_graph_verify(ctx, bytes.data, bytes.len - 1, &summary), AF_ERR_FORMAT, "truncated");
  CHECK(summary.data == NULL && summary.len == 0);
  af_bytes_free(&bytes);
  af_ir_free(ir);
}

static void json_form_round_trips_exactly(void) {
  af_ir_t* ir = hello_ir();
  af_bytes_t bytes = {NULL, 0}, json = {NULL, 0}, back = {NULL, 0}, json2 = {NULL, 0};
  CHECK_OK(af_ir_to_bytes(ir, &bytes));
  CHECK_OK(af_graph_to_json(ctx, bytes.data, bytes.len, &json));
  CHECK_CONTAINS((const char*)json.data, "\"prim\":\"format\"");
  CHECK_CONTAINS((const char*)json.data, "{\"lit\":\"?\"}");
  CHECK_OK(af_graph_from_json(ctx, (const char*)json.data, json.len, &back));
  CHECK(back.len == bytes.len && memcmp(back.data, bytes.data, bytes.len) == 0);
  CHECK_OK(af_graph_to_json(ctx, back.data, back.len, &json2));
  CHECK(json.len == json2.len && memcmp(json.data, json2.data, json.len) == 0);
  af_bytes_free(&back);
  af_bytes_free(&json2);
  CHECK_ERR(af_graph_from_json(ctx, "{", 1, &back), AF_ERR_FORMAT, "invalid graph JSON");
  CHECK(back.data == NULL);
  {
    const char* extra = "{\"afg\":1,\"irs\":[],\"extra\":0}";
    CHECK_ERR(af_graph_from_json(ctx, extra, strlen(extra), &back), AF_ERR_FORMAT, "unknown key \"extra\"");
  }
  CHECK_ERR(af_graph_to_json(ctx, (const uint8_t*)"nope", 4, &json2), AF_ERR_FORMAT, "magic");
  af_bytes_free(&bytes);
  af_bytes_free(&json);
  af_bytes_free(&json2);
  af_ir_free(ir);
}

/* A JSON graph naming a primitive, for VERSION checks. */
static const char* one_prim_graph(const char* prim, const char* version_field, char* buf, size_t cap) {
  snprintf(buf, cap,
           "{\"afg\":%s,\"irs\":[{\"vars\":[\"str\",\"str\"],\"in\":[\"%%0\"],"
           "\"eqns\":[{\"prim\":\"%s\",\"out\":\"%%1\",\"in\":[\"%%0\",\"%%0\"]}],\"out\":\"%%1\"}]}",
           version_field, prim);
  return buf;
}

static void newer_or_unknown_is_version(void) {
  char buf[512];
  const char* g;
  af_bytes_t out = {NULL, 0};
  af_ir_t* ir = NULL;
  g = one_prim_graph("concat", "1", buf, sizeof buf);
  CHECK_OK(af_graph_from_json(ctx, g, strlen(g), &out));
  af_bytes_free(&out);
  g = one_prim_graph("summon_dragon", "1", buf, sizeof buf);
  CHECK_ERR(af_graph_from_json(ctx, g, strlen(g), &out), AF_ERR_VERSION, "\"summon_dragon\"", "upgrade");
  g = one_prim_graph("concat", "99", buf, sizeof buf);
  CHECK_ERR(af_graph_from_json(ctx, g, strlen(g), &out), AF_ERR_VERSION, "format version 99");
  /* A newer container version in the header (checksum kept valid). */
  ir = hello_ir();
  CHECK_OK(af_ir_to_bytes(ir, &out));
  out.data[12] = 2;
  fix_crc(out.data, out.len);
  af_ir_free(ir);
  ir = NULL;
  CHECK_ERR(af_ir_from_bytes(ctx, out.data, out.len, &ir), AF_ERR_VERSION, "container version 2");
  CHECK(ir == NULL);
  /* An unknown required feature. */
  out.data[12] = 1;
  out.data[16] = 1;
  fix_crc(out.data, out.len);
  CHECK_ERR(af_ir_from_bytes(ctx, out.data, out.len, &ir), AF_ERR_VERSION, "feature");
  af_bytes_free(&out);
}

static void damage_is_format(void) {
  af_ir_t* ir = hello_ir();
  af_ir_t* back = NULL;
  af_bytes_t b = {NULL, 0};
  size_t i;
  CHECK_OK(af_ir_to_bytes(ir, &b));
  for (i = 0; i < b.len; i += 7) {
    af_error_t* e;
    b.data[i] ^= 0x20;
    e = af_ir_from_bytes(ctx, b.data, b.len, &back);
    CHECK(e != NULL);
    CHECK(af_error_code(e) == AF_ERR_FORMAT || af_error_code(e) == AF_ERR_VERSION);
    CHECK(back == NULL);
    af_error_free(e);
    b.data[i] ^= 0x20;
  }
  CHECK_ERR(af_ir_from_bytes(ctx, b.data, 10, &back), AF_ERR_FORMAT, "truncated");
  CHECK_ERR(af_ir_from_bytes(ctx, (const uint8_t*)"", 0, &back), AF_ERR_FORMAT, "magic");
  af_bytes_free(&b);
  af_ir_free(ir);
}

static void argument_and_io_errors(void) {
  af_ir_t* ir = hello_ir();
  af_ir_t* back = (af_ir_t*)1;
  af_bytes_t b = {(uint8_t*)1, 1};
  char path[256];
  CHECK_ERR(af_ir_save(NULL, "x.afg", 5), AF_ERR_INVALID_ARGUMENT, "`ir` is NULL");
  CHECK_ERR(af_ir_save(ir, "", 0), AF_ERR_INVALID_ARGUMENT, "`path` is empty");
  CHECK_ERR(af_ir_save(ir, "\xff.afg", 5), AF_ERR_INVALID_ARGUMENT, "UTF-8");
  CHECK_ERR(af_ir_save(ir, "/nonexistent-dir/x.afg", 22), AF_ERR_IO, "/nonexistent-dir/x.afg");
  CHECK_ERR(af_ir_load(ctx, "/nonexistent-dir/x.afg", 22, &back), AF_ERR_IO, "cannot open");
  CHECK(back == NULL);
  CHECK_ERR(af_ir_load(NULL, "x", 1, &back), AF_ERR_INVALID_ARGUMENT, "`ctx` is NULL");
  CHECK_ERR(af_ir_to_bytes(ir, NULL), AF_ERR_INVALID_ARGUMENT, "`out` is NULL");
  CHECK_ERR(af_ir_to_bytes(NULL, &b), AF_ERR_INVALID_ARGUMENT, "`ir` is NULL");
  CHECK(b.data == NULL && b.len == 0);
  CHECK_ERR(af_ir_from_bytes(ctx, NULL, 3, &back), AF_ERR_INVALID_ARGUMENT, "`data` is NULL");
  /* A file that is not a graph names itself in the error. */
  temp_path(path, sizeof path, "not_a_graph.afg");
  {
    FILE* f = fopen(path, "wb");
    fputs("{\"afg\": 1}", f);
    fclose(f);
  }
  CHECK_ERR(af_ir_load(ctx, path, strlen(path), &back), AF_ERR_FORMAT, "not_a_graph.afg", "af convert");
  remove(path);
  af_ir_free(ir);
}

/* A FIFO, a directory or a device is refused at once: loading opens without
 * blocking and checks the type before reading (a FIFO once blocked forever). */
static void files_that_are_not_regular_are_refused_at_once(void) {
  af_ir_t* back = NULL;
  af_program_t* prog = NULL;
  char path[256];
  temp_path(path, sizeof path, "fifo.afg");
  remove(path);
  if (mkfifo(path, 0600) != 0) {
    check_fail(__FILE__, __LINE__, "mkfifo %s failed", path);
    return;
  }
  alarm(20); /* a regression blocks in open(): fail loudly instead of hanging */
  CHECK_ERR(af_ir_load(ctx, path, strlen(path), &back), AF_ERR_IO, "not a regular file", "FIFO");
  CHECK(back == NULL);
  CHECK_ERR(af_program_load(ctx, path, strlen(path), &prog), AF_ERR_IO, "not a regular file", "FIFO");
  CHECK(prog == NULL);
  CHECK_ERR(af_ir_load(ctx, "/tmp", 4, &back), AF_ERR_IO, "directory");
  CHECK_ERR(af_ir_load(ctx, "/dev/zero", 9, &back), AF_ERR_IO, "device");
  alarm(0);
  remove(path);
}

/* ---- programs ---------------------------------------------------------- */

static void program_save_load_runs_without_compiling(void) {
  char p1[256], p2[256];
  af_ir_t* ir = hello_ir();
  af_program_t *prog = NULL, *back = NULL;
  af_value_t *x = mk_str("plan"), *want = NULL, *got = NULL;
  unsigned char *b1, *b2;
  size_t n1 = 0, n2 = 0;
  af_bytes_t json = {NULL, 0}, again = {NULL, 0};
  temp_path(p1, sizeof p1, "prog1.afg");
  temp_path(p2, sizeof p2, "prog2.afg");
  CHECK_OK(af_compile(ctx, ir, &prog));
  CHECK_OK(af_program_save(prog, p1, strlen(p1)));
  CHECK_OK(af_program_save(prog, p2, strlen(p2)));
  b1 = slurp(p1, &n1);
  b2 = slurp(p2, &n2);
  CHECK(b1 && b2 && n1 == n2 && memcmp(b1, b2, n1) == 0); /* same program, same bytes */
  CHECK_OK(af_program_load(ctx, p1, strlen(p1), &back));
  CHECK_OK(af_program_call(ctx, prog, AS_ARGS(&x), 1, &want));
  if (CHECK_OK(af_program_call(ctx, back, AS_ARGS(&x), 1, &got))) CHECK_JSON(got, "\"Hello, plan!?\"");
  CHECK_JSON(want, "\"Hello, plan!?\"");
  /* The JSON form keeps the plan and round-trips to the same bytes. */
  if (CHECK_OK(af_graph_to_json(ctx, b1, n1, &json))) {
    CHECK_CONTAINS((const char*)json.data, "\"plan\"");
    if (CHECK_OK(af_graph_from_json(ctx, (const char*)json.data, json.len, &again)))
      CHECK(again.len == n1 && memcmp(again.data, b1, n1) == 0);
  }
  /* An IR file loads as a program too (compiled on load). */
  af_program_free(back);
  back = NULL;
  CHECK_OK(af_ir_save(ir, p2, strlen(p2)));
  CHECK_OK(af_program_load(ctx, p2, strlen(p2), &back));
  /* Errors: arguments, a missing file, damage. */
  CHECK_ERR(af_program_save(NULL, p1, strlen(p1)), AF_ERR_INVALID_ARGUMENT, "af_program_save");
  CHECK_ERR(af_program_save(prog, "", 0), AF_ERR_INVALID_ARGUMENT, "empty");
  {
    af_program_t* none = (af_program_t*)&none;
    CHECK_ERR(af_program_load(ctx, "/nonexistent/x.afg", 18, &none), AF_ERR_IO, "/nonexistent/x.afg");
    CHECK_NULLED(none, af_program_free);
  }
  af_program_free(back);
  back = NULL;
  if (b1 && n1 > 60) {
    FILE* f = fopen(p1, "wb");
    b1[n1 - 3] ^= 0x40;
    if (f) {
      fwrite(b1, 1, n1, f);
      fclose(f);
    }
    CHECK_ERR(af_program_load(ctx, p1, strlen(p1), &back), AF_ERR_FORMAT, "checksum");
  }
  af_bytes_free(&json);
  af_bytes_free(&again);
  free(b1);
  free(b2);
  remove(p1);
  remove(p2);
  af_value_free(x);
  af_value_free(want);
  af_value_free(got);
  af_program_free(back);
  af_program_free(prog);
  af_ir_free(ir);
}

/* ---- golden graphs ---------------------------------------------------- */

/* The context's compiles (af_context_stats). */
static long golden_compiles(void) {
  af_bytes_t b = {NULL, 0};
  const char* at;
  long n = -1;
  if (!CHECK_OK(af_context_stats(ctx, &b))) return -1;
  at = strstr((const char*)b.data, "\"compiles\":");
  if (at) n = strtol(at + 11, NULL, 10);
  af_bytes_free(&b);
  return n;
}

static void run_golden(const char* dir, const char* name) {
  char path[1024], expected_path[1024];
  af_ir_t* ir = NULL;
  af_program_t* prog = NULL;
  long compiles;
  af_value_t* expected = NULL;
  af_value_t* cases = NULL;
  unsigned char* text;
  size_t len = 0, n = 0, i;
  snprintf(path, sizeof path, "%s/%s.afg", dir, name);
  snprintf(expected_path, sizeof expected_path, "%s/%s.expected.json", dir, name);
  text = slurp(expected_path, &len);
  if (!text) return; /* an .afg without expectations is not a golden graph */
  printf("    golden %s\n", name);
  if (!CHECK_OK(af_ir_load(ctx, path, strlen(path), &ir))) {
    free(text);
    return;
  }
  /* Every golden runs as a loaded program too; a saved program (NAME_program)
   * holds its whole plan, sliced form included: loading it compiles nothing. */
  compiles = golden_compiles();
  CHECK_OK(af_program_load(ctx, path, strlen(path), &prog));
  if (strstr(name, "_program")) CHECK_INT_EQ(golden_compiles(), compiles);
  expected = mk_json((const char*)text);
  free(text);
  if (!expected || !CHECK_OK(af_value_key(expected, "cases", 5, &cases)) ||
      !CHECK_OK(af_value_len(cases, &n)))
    n = 0;
  CHECK(n > 0);
  for (i = 0; i < n; i++) {
    af_value_t *c = NULL, *inputs = NULL, *want = NULL, *got = NULL, *got_prog = NULL;
    af_value_t* args[MAX_INPUTS];
    size_t n_args = 0, k;
    af_error_t *e, *e_prog, *no_error;
    CHECK_OK(af_value_index(cases, i, &c));
    CHECK_OK(af_value_key(c, "inputs", 6, &inputs));
    CHECK_OK(af_value_len(inputs, &n_args));
    CHECK(n_args <= MAX_INPUTS);
    for (k = 0; k < n_args && k < MAX_INPUTS; k++) CHECK_OK(af_value_index(inputs, k, &args[k]));
    e = af_ir_call(ctx, ir, AS_ARGS(args), n_args, &got);
    e_prog = prog ? af_program_call(ctx, prog, AS_ARGS(args), n_args, &got_prog) : NULL;
    no_error = af_value_key(c, "error", 5, &want); /* a case expects an error or an output */
    if (!no_error) {
      int64_t code = 0;
      CHECK_OK(af_value_get_int(want, &code));
      if (!e) printf("    case %lu of %s: expected error %ld, got a result\n", (unsigned long)i, name, (long)code);
      CHECK_ERR(e, (int32_t)code, "");
      if (prog) CHECK_ERR(e_prog, (int32_t)code, "");
    } else {
      char* want_json;
      af_error_free(no_error);
      CHECK_OK(af_value_key(c, "output", 6, &want));
      want_json = json_of(want);
      if (CHECK_OK(e) && want_json) CHECK_JSON(got, want_json);
      if (prog && CHECK_OK(e_prog) && want_json) CHECK_JSON(got_prog, want_json);
      free(want_json);
    }
    af_value_free(got_prog);
    for (k = 0; k < n_args && k < MAX_INPUTS; k++) af_value_free(args[k]);
    af_value_free(got);
    af_value_free(want);
    af_value_free(inputs);
    af_value_free(c);
  }
  af_value_free(cases);
  af_value_free(expected);
  af_ir_free(ir);
  af_program_free(prog);
}

/* The host function the golden graphs call: golden.shout(s) = s + "!". */
static af_error_t* golden_shout(void* ud, const af_value_t* const* args, size_t n, af_value_t** out) {
  const char* s = NULL;
  size_t len = 0;
  char buf[256];
  af_error_t* e = af_value_get_str(args[0], &s, &len);
  (void)ud;
  (void)n;
  if (e) return e;
  snprintf(buf, sizeof buf, "%.*s!", (int)(len > 200 ? 200 : len), s);
  return af_value_str(ctx, buf, strlen(buf), out);
}

static void golden_graphs_load_and_run(void) {
  const char* dir = AF_SOURCE_DIR "/tests/conformance/graphs";
  DIR* d = opendir(dir);
  struct dirent* ent;
  int found = 0;
  af_provider_t* echo = NULL;
  af_value_t* kinds = mk_str("str");
  /* What the graphs need from the host: a function by name, an LM route. */
  CHECK_OK(af_register_function(ctx, "golden.shout", 12, golden_shout, NULL, NULL, kinds));
  CHECK_OK(af_provider_echo_new(NULL, 0, &echo));
  CHECK_OK(af_context_route(ctx, "golden-*", 8, echo));
  af_provider_free(echo);
  af_value_free(kinds);
  if (!d) {
    check_fail(__FILE__, __LINE__, "cannot open %s", dir);
    return;
  }
  while ((ent = readdir(d)) != NULL) {
    char name[512];
    size_t n = strlen(ent->d_name);
    if (n < 5 || n >= sizeof name || strcmp(ent->d_name + n - 4, ".afg") != 0) continue;
    memcpy(name, ent->d_name, n - 4);
    name[n - 4] = 0;
    run_golden(dir, name);
    found++;
  }
  closedir(d);
  CHECK(found >= 9);
}

/* af_ir_hash is a defined function (af.h: it may key on-disk caches): the
 * golden graphs' hashes are pinned, so a change to the hash, or to what it
 * covers (params, literals, tags, name paths, sched), fails here. (Pinned
 * again when it came to cover the written order of dict keys: host_and_lm,
 * trees_and_tags and batched_control_flow hold dicts not written in sorted
 * order; the others kept their values.) */
static void ir_hash_values_are_fixed(void) {
  static const struct {
    const char* name;
    uint64_t hash;
  } want[] = {
      {"hello", 0x21ebe69ec78de91full},         {"host_and_lm", 0x58e4193dc81384bdull},
      {"name_paths", 0x7f9ed9407eb9a20bull},    {"trees_and_tags", 0x5ab859e41d743502ull},
      {"sched_pullback_hello", 0xe59e3dcd745ee67dull},
      {"batched_control_flow", 0x19a053153072f5e5ull},
  };
  size_t i;
  for (i = 0; i < sizeof want / sizeof want[0]; i++) {
    char path[1024];
    af_ir_t* ir = NULL;
    snprintf(path, sizeof path, "%s/tests/conformance/graphs/%s.afg", AF_SOURCE_DIR, want[i].name);
    if (!CHECK_OK(af_ir_load(ctx, path, strlen(path), &ir))) continue;
    if (af_ir_hash(ir) != want[i].hash)
      printf("    %s: af_ir_hash %016llx, expected %016llx\n", want[i].name,
             (unsigned long long)af_ir_hash(ir), (unsigned long long)want[i].hash);
    CHECK(af_ir_hash(ir) == want[i].hash);
    af_ir_free(ir);
  }
}

int main(int argc, char** argv) {
  static const struct test_case cases[] = {
      CASE(save_and_load_a_file),       CASE(bytes_are_deterministic_and_round_trip),
      CASE(verify_summarizes),          CASE(json_form_round_trips_exactly),
      CASE(newer_or_unknown_is_version), CASE(damage_is_format),
      CASE(argument_and_io_errors),     CASE(golden_graphs_load_and_run),
      CASE(files_that_are_not_regular_are_refused_at_once),
      CASE(program_save_load_runs_without_compiling),
      CASE(ir_hash_values_are_fixed),
  };
  return run_cases(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
