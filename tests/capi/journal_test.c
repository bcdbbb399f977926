/* Run journals through the C API (af.h "Run journals"): the batched triage
 * program (a switch, structured calls) over many tickets against echo with
 * latency and a limit, so calls overlap and group commits carry several
 * rows; a rerun answers every call from the journal, an interrupted run
 * resumes asking only what is missing, and bad journals are refused. Also
 * under ThreadSanitizer (the writer thread finishes calls). */
#include "check.h"

#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lm_helpers.h"
#include "../../examples/triage/triage_program.h"

#define N_TICKETS 60

static af_program_t* triage(void) {
  af_ir_t* ir = NULL;
  af_program_t* p = NULL;
  if (CHECK_OK(triage_batched_trace(ctx, &ir))) CHECK_OK(af_compile(ctx, ir, &p));
  af_ir_free(ir);
  return p;
}

/* [[ticket 0, ticket 1, ...]]: the program's one input, a list of tickets. */
static af_value_t* tickets(int n, const char* prefix) {
  char buf[64];
  af_value_t** items = calloc((size_t)n, sizeof *items);
  af_value_t* list = NULL;
  for (int i = 0; i < n; i++) {
    snprintf(buf, sizeof buf, "%s %d: my invoice is wrong", prefix, i);
    items[i] = mk_str(buf);
  }
  CHECK_OK(af_value_list(ctx, (const af_value_t* const*)items, (size_t)n, &list));
  for (int i = 0; i < n; i++) af_value_free(items[i]);
  free(items);
  return list;
}

static af_run_options_t with_journal(const char* path) {
  af_run_options_t o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.journal_path = path;
  o.journal_path_len = strlen(path);
  return o;
}

static char* run_json(af_program_t* p, af_value_t* input, const af_run_options_t* o) {
  af_value_t* out = NULL;
  char* s = NULL;
  if (CHECK_OK(af_program_call_with(ctx, p, (const af_value_t* const*)&input, 1, o, &out))) s = json_of(out);
  af_value_free(out);
  return s;
}

static long journal_calls(const char* path) {
  af_bytes_t b = {NULL, 0};
  char* s = bytes_to_cstr_at(af_journal_summary_json(path, strlen(path), &b), &b, "summary", __FILE__, __LINE__);
  const char* at = s ? strstr(s, "\"calls\":") : NULL;
  long n = at ? strtol(at + 8, NULL, 10) : -1;
  free(s);
  return n;
}

static char dir[64];
/* Each case runs in a process of its own: it removes its directory. */
static void remove_dir(void) {
  char cmd[96];
  if (!dir[0]) return;
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}
static const char* journal_path(const char* name) {
  static char path[128];
  if (!dir[0]) {
    strcpy(dir, "/tmp/af-journal-XXXXXX");
    if (!mkdtemp(dir)) check_skip("no temporary directory");
  }
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return path;
}

static void a_rerun_asks_no_provider(void) {
  af_provider_t* echo = echo_with("{\"latency_ms\": 5, \"max_in_flight\": 16}");
  route("*", echo);
  af_program_t* p = triage();
  af_value_t* in = tickets(N_TICKETS, "t");
  const char* path = journal_path("triage.afj");
  af_run_options_t o = with_journal(path);
  char* first = run_json(p, in, &o);
  const long asked = stat_field(echo, "submitted");
  CHECK_INT_EQ(asked, 3 * N_TICKETS);
  CHECK_INT_EQ(journal_calls(path), 3 * N_TICKETS);
  struct stat st;
  CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
  af_bytes_t summary = {NULL, 0};
  o.summary = &summary;
  char* again = run_json(p, in, &o);
  o.summary = NULL;
  CHECK_INT_EQ(stat_field(echo, "submitted"), asked);
  /* The summary counts the journal's answers apart: no request, nothing spent. */
  if (summary.data) {
    CHECK_CONTAINS((const char*)summary.data, "\"calls\":0,");
    CHECK_CONTAINS((const char*)summary.data, "\"journaled\":180}");
  }
  af_bytes_free(&summary);
  if (first && again) CHECK_STR_EQ(again, first);
  /* Without the journal the provider is asked again, and answers the same. */
  char* plain = run_json(p, in, NULL);
  CHECK_INT_EQ(stat_field(echo, "submitted"), 2 * asked);
  if (first && plain) CHECK_STR_EQ(plain, first);
  free(first);
  free(again);
  free(plain);
  af_value_free(in);
  af_program_free(p);
  af_provider_free(echo);
  remove_dir();
}

/* A run cancelled midway resumes: the rerun asks only the calls the first
 * did not finish, and its result is the uninterrupted one. */
static void a_cancelled_run_resumes(void) {
  af_provider_t* echo = echo_with("{\"latency_ms\": 20, \"max_in_flight\": 8}");
  route("*", echo);
  af_program_t* p = triage();
  af_value_t* in = tickets(N_TICKETS, "c");
  char* expected = run_json(p, in, NULL);
  const long whole = stat_field(echo, "submitted");
  const char* path = journal_path("cancelled.afj");
  af_run_options_t o = with_journal(path);
  af_future_t* f = NULL;
  af_value_t* out = NULL;
  CHECK_OK(af_program_call_async_with(ctx, p, (const af_value_t* const*)&in, 1, &o, &f));
  const struct timespec wait = {0, 100 * 1000000L};
  nanosleep(&wait, NULL);
  af_future_cancel(f);
  CHECK_ERR(af_future_wait(f, &out), AF_ERR_CANCELLED, "cancel");
  af_future_free(f);
  const long done = journal_calls(path);
  CHECK(done > 0 && done < 3 * N_TICKETS);
  const long before = stat_field(echo, "submitted");
  char* resumed = run_json(p, in, &o);
  CHECK_INT_EQ(stat_field(echo, "submitted") - before, 3 * N_TICKETS - done);
  CHECK_INT_EQ(journal_calls(path), 3 * N_TICKETS);
  CHECK(whole == 3 * N_TICKETS);
  if (expected && resumed) CHECK_STR_EQ(resumed, expected);
  free(expected);
  free(resumed);
  af_value_free(in);
  af_program_free(p);
  af_provider_free(echo);
  remove_dir();
}

static void another_run_of_the_journal_is_refused(void) {
  af_provider_t* echo = echo_with("{\"latency_ms\": 200}");
  route("*", echo);
  af_program_t* p = triage();
  af_value_t* in = tickets(4, "b");
  const char* path = journal_path("busy.afj");
  af_run_options_t o = with_journal(path);
  af_future_t* f = NULL;
  af_value_t* out = NULL;
  CHECK_OK(af_program_call_async_with(ctx, p, (const af_value_t* const*)&in, 1, &o, &f));
  CHECK_ERR(af_program_call_with(ctx, p, (const af_value_t* const*)&in, 1, &o, &out), AF_ERR_IO, "another run");
  CHECK_ERR(af_journal_compact(path, strlen(path)), AF_ERR_IO, "another run");
  CHECK_OK(af_future_wait(f, &out));
  af_value_free(out);
  af_future_free(f);
  /* Free as soon as the run reported completion. */
  CHECK_OK(af_journal_compact(path, strlen(path)));
  af_value_free(in);
  af_program_free(p);
  af_provider_free(echo);
  remove_dir();
}

static void bad_journals_are_refused(void) {
  af_provider_t* echo = echo_with(NULL);
  route("*", echo);
  af_program_t* p = triage();
  af_value_t* in = tickets(2, "x");
  af_value_t* other = tickets(3, "x");
  af_value_t* out = NULL;
  const char* path = journal_path("bound.afj");
  af_run_options_t o = with_journal(path);
  char* first = run_json(p, in, &o);
  free(first);
  CHECK_ERR(af_program_call_with(ctx, p, (const af_value_t* const*)&other, 1, &o, &out), AF_ERR_INVALID_ARGUMENT,
            "other inputs");
  FILE* fp = fopen(journal_path("garbage.afj"), "w");
  if (fp) {
    fputs("this is not a SQLite file, and it is long enough to have a header of sorts", fp);
    fclose(fp);
  }
  o = with_journal(journal_path("garbage.afj"));
  CHECK_ERR(af_program_call_with(ctx, p, (const af_value_t* const*)&in, 1, &o, &out), AF_ERR_FORMAT, "journal");
  const char* missing = journal_path("missing.afj");
  af_bytes_t b = {NULL, 0};
  CHECK_ERR(af_journal_summary_json(missing, strlen(missing), &b), AF_ERR_NOT_FOUND, "no such file");
  CHECK_ERR(af_journal_compact(missing, strlen(missing)), AF_ERR_NOT_FOUND, "no such file");
  CHECK_ERR(af_journal_summary_json(NULL, 0, &b), AF_ERR_INVALID_ARGUMENT, "empty");
  CHECK_ERR(af_journal_summary_json(path, strlen(path), NULL), AF_ERR_INVALID_ARGUMENT, "out");
  CHECK_ERR(af_journal_summary_json("\xff", 1, &b), AF_ERR_INVALID_ARGUMENT, "UTF-8");
  /* A lazy evaluation refuses a journal. */
  af_value_t* v = mk_str("x");
  af_run_options_t lazy = with_journal(journal_path("lazy.afj"));
  CHECK_ERR(af_eval_with(ctx, &v, 1, &lazy), AF_ERR_INVALID_ARGUMENT, "program runs");
  CHECK(access(journal_path("lazy.afj"), F_OK) != 0);
  af_value_free(v);
  af_value_free(in);
  af_value_free(other);
  af_program_free(p);
  af_provider_free(echo);
  remove_dir();
}

/* Effectful host calls are journaled: a run that failed after "send" did
 * its work resumes without sending again; a pure function runs again. */
struct counts {
  int sent, looked, boomed, boom_fails;
};
static struct counts counts;

static af_error_t* str_result(const af_value_t* const* args, const char* prefix, af_value_t** out) {
  const char* s = NULL;
  size_t len = 0;
  char buf[128];
  af_error_t* e = af_value_get_str(args[0], &s, &len);
  if (e) return e;
  snprintf(buf, sizeof buf, "%s(%.*s)", prefix, (int)(len < 100 ? len : 100), s);
  return af_value_str(NULL, buf, strlen(buf), out);
}
static af_error_t* send_fn(void* ud, const af_value_t* const* args, size_t n, af_value_t** out) {
  (void)ud;
  (void)n;
  counts.sent++;
  return str_result(args, "sent", out);
}
static af_error_t* lookup_fn(void* ud, const af_value_t* const* args, size_t n, af_value_t** out) {
  (void)ud;
  (void)n;
  counts.looked++;
  return str_result(args, "found", out);
}
static af_error_t* boom_fn(void* ud, const af_value_t* const* args, size_t n, af_value_t** out) {
  (void)ud;
  (void)n;
  counts.boomed++;
  if (counts.boom_fails-- > 0) return af_error_new(AF_ERR_PROVIDER, "the mail server is down", 23);
  return str_result(args, "boom", out);
}
static af_error_t* effects_fn(void* ud, af_context_t* c, const af_value_t* const* in, size_t n,
                              af_value_t** out) {
  af_value_t *sent = NULL, *parts[2] = {NULL, NULL};
  af_error_t* e = af_host_call(c, "send", 4, in, n, &sent);
  (void)ud;
  if (!e) e = af_host_call(c, "boom", 4, (const af_value_t* const*)&sent, 1, &parts[0]);
  if (!e) e = af_host_call(c, "lookup", 6, in, n, &parts[1]);
  if (!e) e = af_concat(c, (const af_value_t* const*)parts, 2, out);
  af_value_free(sent);
  free_items(parts, 2);
  return e;
}

static void effectful_host_calls_are_journaled(void) {
  af_value_t* kinds = mk_json("\"str\"");
  af_function_options_t o;
  af_ir_t* ir = NULL;
  af_program_t* p = NULL;
  af_value_t* in = mk_str("hi");
  af_value_t* out = NULL;
  const char* path = journal_path("effects.afj");
  af_run_options_t ro = with_journal(path);
  af_bytes_t b = {NULL, 0};
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.result_kinds = kinds;
  o.fn = send_fn;
  CHECK_OK(af_register_function_with(ctx, "send", 4, &o));
  o.fn = boom_fn;
  CHECK_OK(af_register_function_with(ctx, "boom", 4, &o));
  o.fn = lookup_fn;
  o.flags = AF_FUNCTION_PURE;
  CHECK_OK(af_register_function_with(ctx, "lookup", 6, &o));
  memset(&counts, 0, sizeof counts);
  counts.boom_fails = 1;
  ir = TRACE(effects_fn, NULL, "[\"x\"]", NULL);
  if (!ir || !CHECK_OK(af_compile(ctx, ir, &p))) goto done;
  /* The first run fails at "boom", after "send" did its work. */
  CHECK_ERR(af_program_call_with(ctx, p, (const af_value_t* const*)&in, 1, &ro, &out), AF_ERR_CALLBACK,
            "mail server is down");
  CHECK_INT_EQ(counts.sent, 1);
  /* The rerun answers "send" from the journal and does the rest. */
  if (CHECK_OK(af_program_call_with(ctx, p, (const af_value_t* const*)&in, 1, &ro, &out)))
    CHECK_JSON(out, "\"boom(sent(hi))found(hi)\"");
  CHECK_INT_EQ(counts.sent, 1);
  CHECK_INT_EQ(counts.boomed, 2);
  CHECK_INT_EQ(counts.looked, 2); /* pure: runs again */
  af_value_free(out);
  out = NULL;
  /* A third run does no effect at all. */
  if (CHECK_OK(af_program_call_with(ctx, p, (const af_value_t* const*)&in, 1, &ro, &out)))
    CHECK_JSON(out, "\"boom(sent(hi))found(hi)\"");
  CHECK_INT_EQ(counts.sent, 1);
  CHECK_INT_EQ(counts.boomed, 2);
  if (CHECK_OK(af_journal_summary_json(path, strlen(path), &b))) {
    CHECK_CONTAINS((const char*)b.data, "\"calls\":0,");
    CHECK_CONTAINS((const char*)b.data, "\"host_calls\":{\"boom\":1,\"send\":1}");
  }
done:
  af_bytes_free(&b);
  af_value_free(out);
  af_value_free(in);
  af_value_free(kinds);
  af_program_free(p);
  af_ir_free(ir);
  remove_dir();
}

int main(int argc, char** argv) {
  static const struct test_case cases[] = {
      CASE(a_rerun_asks_no_provider),
      CASE(a_cancelled_run_resumes),
      CASE(another_run_of_the_journal_is_refused),
      CASE(bad_journals_are_refused),
      CASE(effectful_host_calls_are_journaled),
  };
  return run_cases(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
