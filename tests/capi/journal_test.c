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

int main(int argc, char** argv) {
  static const struct test_case cases[] = {
      CASE(a_rerun_asks_no_provider),
      CASE(a_cancelled_run_resumes),
      CASE(another_run_of_the_journal_is_refused),
      CASE(bad_journals_are_refused),
  };
  return run_cases(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
