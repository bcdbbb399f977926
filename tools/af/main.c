/* af — the libaf command-line tool. A client of the public C API only.
 *   af version                      print the library version
 *   af demo [TICKET...] [--save FILE] [--save-item FILE]
 *          [--provider NAME [--provider-options JSON]] [--stream]
 *                                   trace the example LM program
 *                                   (examples/triage), print its IR, batch
 *                                   it, save it (default triage.afg) and run
 *                                   the saved file on the tickets (echo, or
 *                                   the provider given) with per-item
 *                                   errors (as run --item-errors);
 *                                   --save-item also saves the traced
 *                                   per-ticket program, unbatched (what the
 *                                   SQL extensions' af_run_agg batches)
 *   af run FILE --input JSON [--provider echo|openai|anthropic|ollama|replay
 *          [--provider-options JSON] [--model PATTERN]] [--profile OUT.json]
 *          [--stream [--stream-tag TAG]] [--item-errors] [--timeout-ms N]
 *          [--journal FILE]
 *                                   load a saved graph or program and run it
 *                                   on the positional inputs (a JSON list);
 *                                   LM calls go to the provider (models
 *                                   matching PATTERN, default "*"); a
 *                                   progress bar on a terminal for long runs
 *                                   (or, with --stream, the LM replies as
 *                                   they arrive, on stderr), then the run
 *                                   summary on stderr (LM calls, tokens,
 *                                   retries, time queued and in flight, per
 *                                   model when several); with
 *                                   --item-errors each item of a batched
 *                                   program gets its answer or its error
 *                                   (AF_RUN_ITEM_ERRORS: the error value in
 *                                   its place, each failed item named on
 *                                   stderr) and the others complete;
 *                                   --timeout-ms bounds the run (TIMEOUT),
 *                                   and SIGINT or SIGTERM cancels it (its
 *                                   LM requests aborted, the summary shown);
 *                                   --journal FILE records each completed
 *                                   LM call there (af.h "Run journals"): a
 *                                   run of the same FILE on the same inputs
 *                                   with the same journal resumes, asking
 *                                   only the calls not recorded yet
 *   af options                      every JSON option libaf reads, described
 *                                   (af_options_json; docs/OPTIONS.md)
 *   af journal show FILE [--json]   what a run journal holds: LM calls and
 *                                   tokens, per model
 *   af journal compact FILE         fold a journal's log into the file and
 *                                   free unused pages
 *   af show FILE [--json]           the IR text of a saved graph, or its
 *                                   inspection JSON (docs/INSPECT.md)
 *   af slice FILE --outputs PATH... [--inputs PATH...] -o OUT
 *                                   save the part of FILE that computes the
 *                                   chosen outputs (from the chosen inputs)
 *   af cost FILE [--batch N]        the dry-run LM cost (calls per model)
 *   af dot FILE                     its Graphviz DOT
 *   af verify FILE                  every load check; exit 1 with the reason
 *   af convert FILE --to json [-o OUT]     .afg -> readable JSON
 *   af convert FILE --from json [-o OUT]   JSON -> .afg
 * Exit status: 0 success, 1 an error (printed with its code), 2 bad usage,
 * 3 a run with --item-errors (or demo) completed but some items failed,
 * 130 / 143 a run cancelled by SIGINT / SIGTERM.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, isatty, sigwait */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "triage_program.h"

static int fail(af_error_t* err) {
  fprintf(stderr, "af: error %d: %s\n", (int)af_error_code(err), af_error_message(err));
  for (const af_error_t* c = af_error_cause(err); c; c = af_error_cause(c))
    fprintf(stderr, "  caused by %d: %s\n", (int)af_error_code(c), af_error_message(c));
  af_error_free(err);
  return 1;
}

static void usage(FILE* f) {
  fprintf(f,
          "usage: af <command>\n"
          "  version                         print the libaf version\n"
          "  demo [TICKET...] [--save FILE] [--save-item FILE] [--provider NAME [--provider-options JSON]]\n"
          "       [--stream]                 trace the example LM program, batch it, save it\n"
          "                                  (default triage.afg) and run the saved file\n"
          "  run FILE --input JSON [--provider echo|openai|anthropic|ollama|replay [--provider-options JSON]\n"
          "      [--model PATTERN]] [--profile OUT.json] [--stream [--stream-tag TAG]] [--item-errors]\n"
          "      [--timeout-ms N] [--journal FILE]\n"
          "                                  run a saved graph on a JSON list of inputs;\n"
          "                                  --stream prints LM replies on stderr as they arrive\n"
          "                                  --item-errors: each batch item's answer or error (exit 3 if any failed)\n"
          "                                  --timeout-ms N: the run fails with TIMEOUT after N ms;\n"
          "                                  SIGINT/SIGTERM cancel it (exit 130/143)\n"
          "                                  --journal FILE: record each LM call there; a rerun with the\n"
          "                                  same FILE, graph and inputs resumes without asking them again\n"
          "  options                         describe every JSON option libaf reads (docs/OPTIONS.md)\n"
          "  journal show FILE [--json]      what a run journal holds (LM calls, tokens, per model)\n"
          "  journal compact FILE            fold a journal's log into it and free unused pages\n"
          "  show FILE [--json]              print the IR text (or inspection JSON) of a saved graph\n"
          "  slice FILE --outputs PATH... [--inputs PATH...] -o OUT\n"
          "                                  save the part computing the chosen outputs\n"
          "  cost FILE [--batch N]           dry-run LM calls per model (total, critical path)\n"
          "  dot FILE                        print its Graphviz DOT\n"
          "  verify FILE                     run every load check (exit 1 with the reason)\n"
          "  convert FILE --to json [-o OUT]    saved graph -> readable JSON\n"
          "  convert FILE --from json [-o OUT]  readable JSON -> saved graph\n");
}

static int usage_error(const char* what) {
  fprintf(stderr, "af: %s\n", what);
  usage(stderr);
  return 2;
}

/* The largest file the library accepts (a saved graph or its JSON form):
 * anything larger is refused before reading. */
#define AF_CLI_MAX_FILE_BYTES ((uint64_t)1 << 30)

/* Reads a whole regular file into *out (malloc'ed, NUL-terminated). A FIFO,
 * device or directory is refused at once (opened without blocking, then
 * checked), and so is a file over the library's size limit. */
static af_error_t* read_all(const char* path, unsigned char** out, size_t* len) {
  char msg[600];
  struct stat st;
  unsigned char* buf;
  size_t n = 0;
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY);
  *out = NULL;
  *len = 0;
  if (fd < 0) {
    snprintf(msg, sizeof msg, "cannot open \"%s\": %s", path, strerror(errno));
    return af_error_new(AF_ERR_IO, msg, strlen(msg));
  }
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    snprintf(msg, sizeof msg, "cannot read \"%s\": not a regular file", path);
    return af_error_new(AF_ERR_IO, msg, strlen(msg));
  }
  if ((uint64_t)st.st_size > AF_CLI_MAX_FILE_BYTES) {
    close(fd);
    snprintf(msg, sizeof msg, "\"%s\" is %llu bytes, over the %llu bytes limit of a saved graph", path,
             (unsigned long long)st.st_size, (unsigned long long)AF_CLI_MAX_FILE_BYTES);
    return af_error_new(AF_ERR_FORMAT, msg, strlen(msg));
  }
  buf = malloc((size_t)st.st_size + 1);
  if (!buf) {
    close(fd);
    return af_error_new(AF_ERR_OUT_OF_MEMORY, "out of memory", 13);
  }
  while (n < (size_t)st.st_size) {
    ssize_t got = read(fd, buf + n, (size_t)st.st_size - n);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      snprintf(msg, sizeof msg, "cannot read \"%s\": %s", path, strerror(errno));
      close(fd);
      free(buf);
      return af_error_new(AF_ERR_IO, msg, strlen(msg));
    }
    if (got == 0) break; /* shrank while reading: the loader reports the truncation */
    n += (size_t)got;
  }
  close(fd);
  buf[n] = 0;
  *out = buf;
  *len = n;
  return NULL;
}

/* Writes data to path, or to stdout when path is NULL. */
static af_error_t* write_all(const char* path, const void* data, size_t len) {
  char msg[512];
  FILE* f = path ? fopen(path, "wb") : stdout;
  if (!f) {
    snprintf(msg, sizeof msg, "cannot create \"%s\"", path);
    return af_error_new(AF_ERR_IO, msg, strlen(msg));
  }
  size_t wrote = fwrite(data, 1, len, f);
  int bad = wrote != len || fflush(f) != 0;
  if (path && fclose(f) != 0) bad = 1;
  if (bad) {
    snprintf(msg, sizeof msg, "cannot write \"%s\"", path ? path : "standard output");
    return af_error_new(AF_ERR_IO, msg, strlen(msg));
  }
  return NULL;
}

/* af run options. */
struct run_opts {
  const char* input;            /* JSON list of the positional inputs */
  const char* provider;         /* echo | openai | replay; NULL = no LM route */
  const char* provider_options; /* JSON object for the provider, NULL = defaults */
  const char* model;            /* model pattern routed to the provider */
  const char* profile;          /* Chrome trace JSON output, NULL = none */
  int stream;                   /* print LM replies as they arrive */
  const char* stream_tag;       /* only equations with this tag, NULL = all */
  int item_errors;              /* AF_RUN_ITEM_ERRORS: per-item answers or errors */
  uint64_t timeout_ms;          /* 0 = none */
  const char* journal;          /* the run journal file, NULL = none */
};

/* SIGINT and SIGTERM cancel the run: blocked in every thread from the start
 * of main (libaf's threads inherit the mask), they are taken by one thread
 * that waits for them with sigwait and triggers the run's cancel token —
 * nothing runs in a signal handler. The process's exit ends that thread. */
static struct {
  af_cancel_t* cancel;  /* NULL when signals keep their default action */
  sigset_t set;
  volatile sig_atomic_t signo; /* the signal that cancelled the run, 0 if none */
} g_signals;

static void* signal_wait(void* arg) {
  int signo = 0;
  (void)arg;
  while (sigwait(&g_signals.set, &signo) == 0) {
    g_signals.signo = signo;
    af_cancel_trigger(g_signals.cancel);
  }
  return NULL;
}

/* Before any libaf call that may start a thread. Where it cannot be set up,
 * the signals keep their default action (they end the process). */
static void cancel_on_signals(void) {
  pthread_t thread;
  af_error_t* err = af_cancel_new(&g_signals.cancel);
  if (err) {
    af_error_free(err);
    return;
  }
  sigemptyset(&g_signals.set);
  sigaddset(&g_signals.set, SIGINT);
  sigaddset(&g_signals.set, SIGTERM);
  if (pthread_sigmask(SIG_BLOCK, &g_signals.set, NULL) == 0) {
    if (pthread_create(&thread, NULL, signal_wait, NULL) == 0 && pthread_detach(thread) == 0) return;
    pthread_sigmask(SIG_UNBLOCK, &g_signals.set, NULL);
  }
  af_cancel_free(g_signals.cancel);
  g_signals.cancel = NULL;
}

/* Exit status of a run that completed with failed items (--item-errors). */
#define AF_CLI_ITEMS_FAILED 3

/* Whether err is an error (freed: only the fact is wanted). */
static int is_err(af_error_t* err) {
  af_error_free(err);
  return err != NULL;
}

/* An error value in an item's place: {"error": {"code", "name", "message"}}.
 * Its name and message (borrowed from v) when it is one. */
static int error_value(const af_value_t* v, const char** name, size_t* name_len, const char** msg,
                       size_t* msg_len) {
  af_value_t *e = NULL, *n = NULL, *m = NULL;
  size_t len = 0;
  int is = 0;
  if (af_value_kind(v) != AF_KIND_DICT || is_err(af_value_len(v, &len)) || len != 1) return 0;
  if (!is_err(af_value_key(v, "error", 5, &e)) && af_value_kind(e) == AF_KIND_DICT &&
      !is_err(af_value_key(e, "name", 4, &n)) && !is_err(af_value_key(e, "message", 7, &m)) &&
      !is_err(af_value_get_str(n, name, name_len)) && !is_err(af_value_get_str(m, msg, msg_len)))
    is = 1;
  /* The strings stay valid: v holds e, e holds n and m. */
  af_value_free(m);
  af_value_free(n);
  af_value_free(e);
  return is;
}

/* Which items failed: item i of every output list that holds an error value
 * in place i. `failed` grows to the longest list seen. */
struct item_failures {
  unsigned char* failed;
  size_t n;
  size_t count;
};

static void find_failed_items(const af_value_t* v, int in_item, size_t item, struct item_failures* f) {
  const char *name, *msg;
  size_t name_len, msg_len, len = 0, i;
  int kind = af_value_kind(v);
  if (in_item && error_value(v, &name, &name_len, &msg, &msg_len)) {
    if (item >= f->n) {
      unsigned char* grown = realloc(f->failed, item + 1);
      if (!grown) return;
      memset(grown + f->n, 0, item + 1 - f->n);
      f->failed = grown;
      f->n = item + 1;
    }
    if (!f->failed[item]) {
      f->failed[item] = 1;
      f->count++;
      fprintf(stderr, "af: item %zu failed: %.*s: %.*s\n", item, (int)name_len, name, (int)msg_len, msg);
    }
    return;
  }
  if (kind != AF_KIND_LIST && kind != AF_KIND_DICT) return;
  if (is_err(af_value_len(v, &len))) return;
  for (i = 0; i < len; i++) {
    af_value_t* c = NULL;
    if (is_err(af_value_index(v, i, &c))) continue;
    /* The first list on the way down is the batch's: its index is the item. */
    if (in_item) find_failed_items(c, 1, item, f);
    else find_failed_items(c, kind == AF_KIND_LIST, kind == AF_KIND_LIST ? i : 0, f);
    af_value_free(c);
  }
}

/* --stream: each LM reply's text on stderr as it arrives, under a header
 * naming its equation and batch item whenever another one speaks. */
struct stream_state {
  int started;
  uint32_t eqn;
  uint64_t item;
};

static void stream_print(void* ud, uint32_t eqn, uint64_t item, const char* text, size_t len) {
  struct stream_state* s = (struct stream_state*)ud;
  if (!s->started || s->eqn != eqn || s->item != item)
    fprintf(stderr, "%s[equation %u, item %llu] ", s->started ? "\n" : "", (unsigned)eqn, (unsigned long long)item);
  s->started = 1;
  s->eqn = eqn;
  s->item = item;
  if (text) fwrite(text, 1, len, stderr);
  else fputs("[starting over] ", stderr);
  fflush(stderr);
}

/* The progress bar: drawn on a terminal only, once a run has taken more
 * than half a second, at most every 1/40 of the total. */
struct progress {
  double start;
  uint64_t shown;
  int drawn;
};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void progress_draw(void* ud, uint64_t done, uint64_t total) {
  struct progress* p = (struct progress*)ud;
  char bar[41];
  int k, fill;
  if (total == 0 || now_s() - p->start < 0.5) return;
  if (done != total && p->drawn && (done - p->shown) * 40 < total) return;
  p->shown = done;
  p->drawn = 1;
  fill = (int)(done * 40 / total);
  for (k = 0; k < 40; k++) bar[k] = k < fill ? '#' : '.';
  bar[40] = 0;
  fprintf(stderr, "\r[%s] %llu/%llu equations", bar, (unsigned long long)done,
          (unsigned long long)total);
  fflush(stderr);
}

/* Routes the chosen provider (none without --provider); *out keeps a
 * reference until the run ends (free with af_provider_free). */
static af_error_t* route_provider(af_context_t* ctx, const struct run_opts* o, af_provider_t** out) {
  static const char* const types[] = {"echo", "openai", "anthropic", "ollama", "replay"};
  af_provider_t* p = NULL;
  const char* opts = o->provider_options ? o->provider_options : "{}";
  const char* body;
  char* spec;
  size_t i;
  af_error_t* err;
  char msg[256];
  if (!o->provider) return NULL;
  for (i = 0; i < sizeof types / sizeof types[0] && strcmp(o->provider, types[i]) != 0; i++) {
  }
  if (i == sizeof types / sizeof types[0]) {
    snprintf(msg, sizeof msg, "--provider must be echo, openai, anthropic, ollama or replay, not \"%s\"",
             o->provider);
    return af_error_new(AF_ERR_INVALID_ARGUMENT, msg, strlen(msg));
  }
  /* The spec af_provider_new takes: the options object with "type" first. */
  body = opts + strspn(opts, " \t\r\n");
  if (*body != '{') {
    snprintf(msg, sizeof msg, "--provider-options must be a JSON object");
    return af_error_new(AF_ERR_INVALID_ARGUMENT, msg, strlen(msg));
  }
  body++;
  spec = malloc(strlen(body) + 32);
  if (!spec) return af_error_new(AF_ERR_OUT_OF_MEMORY, "out of memory", 13);
  sprintf(spec, "{\"type\":\"%s\"%s%s", types[i], body[strspn(body, " \t\r\n")] == '}' ? "" : ",", body);
  err = af_provider_new(spec, strlen(spec), &p);
  free(spec);
  if (!err) err = af_context_route(ctx, o->model, strlen(o->model), p);
  if (err) {
    af_provider_free(p);
    p = NULL;
  }
  *out = p;
  return err;
}

/* Loads FILE as a program (a saved program runs without compiling; a saved
 * IR is compiled) and runs it on the inputs; prints the output as JSON. */
/* A number of a summary's counts (0 when absent). */
static double count_of(const af_value_t* counts, const char* key) {
  af_value_t* v = NULL;
  int64_t i = 0;
  double d = 0;
  af_error_t* err = af_value_key(counts, key, strlen(key), &v);
  if (!err && af_value_kind(v) == AF_KIND_INT) {
    err = af_value_get_int(v, &i);
    d = (double)i;
  } else if (!err) {
    err = af_value_get_float(v, &d);
  }
  af_error_free(err);
  af_value_free(v);
  return d;
}

static void print_counts(const char* what, const af_value_t* c) {
  fprintf(stderr,
          "af: %s%.0f LM calls, %.0f prompt + %.0f completion tokens, %.0f retries, %.2f s in "
          "flight, %.2f s queued",
          what, count_of(c, "calls"), count_of(c, "prompt_tokens"),
          count_of(c, "completion_tokens"), count_of(c, "retries"),
          count_of(c, "in_flight_ms") / 1000, count_of(c, "queued_ms") / 1000);
  if (count_of(c, "failed") > 0) fprintf(stderr, ", %.0f failed", count_of(c, "failed"));
  if (count_of(c, "journaled") > 0) fprintf(stderr, ", %.0f answered from the journal", count_of(c, "journaled"));
}

/* The run summary (af_run_options_t.summary) on stderr: the totals and the
 * wall time, then each model when there are several. */
static void print_summary(af_context_t* ctx, const af_bytes_t* summary) {
  af_value_t *doc = NULL, *total = NULL, *models = NULL;
  size_t n = 0, i;
  af_error_t* err = af_value_json_new((const char*)summary->data, summary->len, &doc);
  fflush(stdout); /* after the result on a shared terminal */
  if (!err) err = af_value_key(doc, "total", 5, &total);
  if (!err) err = af_value_key(doc, "models", 6, &models);
  if (!err) err = af_value_len(models, &n);
  if (!err) {
    print_counts("", total);
    fprintf(stderr, ", %.2f s wall\n", count_of(doc, "wall_ms") / 1000);
  }
  for (i = 0; !err && n > 1 && i < n; i++) {
    const char* model;
    size_t len;
    af_value_t* c = NULL;
    char what[160];
    err = af_value_key_at(models, i, &model, &len);
    if (!err) err = af_value_index(models, i, &c);
    if (!err) {
      snprintf(what, sizeof what, "  %.*s: ", (int)(len < 120 ? len : 120), model);
      print_counts(what, c);
      fputc('\n', stderr);
    }
    af_value_free(c);
  }
  af_error_free(err);
  af_value_free(models);
  af_value_free(total);
  af_value_free(doc);
}

/* A run journal's summary (af_journal_summary_json): one line (BRIEF, on
 * stderr after a run), the line and each model (TEXT), or the JSON. */
enum journal_view { JOURNAL_BRIEF, JOURNAL_TEXT, JOURNAL_JSON };
static int journal_show(const char* path, enum journal_view view) {
  af_context_t* ctx = NULL;
  af_value_t *doc = NULL, *models = NULL;
  af_bytes_t json = {0};
  size_t n = 0, i;
  FILE* f = view == JOURNAL_BRIEF ? stderr : stdout;
  af_error_t* err = af_journal_summary_json(path, strlen(path), &json);
  if (!err && view == JOURNAL_JSON) {
    printf("%s\n", (const char*)json.data);
    af_bytes_free(&json);
    return 0;
  }
  if (!err) err = af_context_new(&ctx);
  if (!err) err = af_value_json_new((const char*)json.data, json.len, &doc);
  if (!err) err = af_value_key(doc, "models", 6, &models);
  if (!err) err = af_value_len(models, &n);
  if (!err)
    fprintf(f, "af: journal %s: %.0f LM calls recorded, %.0f prompt + %.0f completion tokens\n", path,
            count_of(doc, "calls"), count_of(doc, "prompt_tokens"), count_of(doc, "completion_tokens"));
  for (i = 0; !err && view == JOURNAL_TEXT && i < n; i++) {
    const char* model;
    size_t len;
    af_value_t* c = NULL;
    err = af_value_key_at(models, i, &model, &len);
    if (!err) err = af_value_index(models, i, &c);
    if (!err)
      fprintf(f, "  %.*s: %.0f calls, %.0f prompt + %.0f completion tokens\n", (int)(len < 120 ? len : 120), model,
              count_of(c, "calls"), count_of(c, "prompt_tokens"), count_of(c, "completion_tokens"));
    af_value_free(c);
  }
  af_value_free(models);
  af_value_free(doc);
  af_bytes_free(&json);
  af_context_free(ctx);
  return err ? fail(err) : 0;
}

static int run(const char* path, const struct run_opts* o) {
  af_provider_t* provider = NULL;
  af_context_t* ctx = NULL;
  af_program_t* prog = NULL;
  af_value_t* args = NULL;
  af_value_t** items = NULL;
  af_value_t* result = NULL;
  af_bytes_t json = {0}, summary = {0};
  af_run_options_t ro;
  struct progress bar = {now_s(), 0, 0};
  struct stream_state streamed = {0, 0, 0};
  struct item_failures failures = {NULL, 0, 0};
  size_t n = 0, i;
  int rc, cancelled;
  af_error_t* err = af_context_new(&ctx);
  if (!err) err = route_provider(ctx, o, &provider);
  if (!err) err = af_program_load(ctx, path, strlen(path), &prog);
  if (!err) err = af_value_json_new(o->input, strlen(o->input), &args);
  if (!err && af_value_kind(args) != AF_KIND_LIST) {
    const char* msg = "--input must be a JSON list of the positional inputs, e.g. '[\"World\"]'";
    err = af_error_new(AF_ERR_INVALID_ARGUMENT, msg, strlen(msg));
  }
  if (!err) err = af_value_len(args, &n);
  if (!err) {
    items = calloc(n ? n : 1, sizeof *items);
    if (!items) err = af_error_new(AF_ERR_OUT_OF_MEMORY, "out of memory", 13);
  }
  for (i = 0; !err && i < n; i++) err = af_value_index(args, i, &items[i]);
  memset(&ro, 0, sizeof ro);
  ro.struct_size = sizeof ro;
  ro.summary = &summary;
  ro.timeout_ms = o->timeout_ms;
  ro.cancel = g_signals.cancel;
  if (o->stream) {
    ro.stream = stream_print;
    ro.stream_user_data = &streamed;
    if (o->stream_tag) {
      ro.stream_tag = o->stream_tag;
      ro.stream_tag_len = strlen(o->stream_tag);
    }
  } else if (isatty(STDERR_FILENO)) {
    ro.progress = progress_draw;
    ro.progress_user_data = &bar;
  }
  if (o->item_errors) ro.flags |= AF_RUN_ITEM_ERRORS;
  if (o->profile) {
    ro.flags |= AF_RUN_PROFILE;
    ro.profile_path = o->profile;
    ro.profile_path_len = strlen(o->profile);
  }
  if (o->journal) {
    ro.journal_path = o->journal;
    ro.journal_path_len = strlen(o->journal);
  }
  if (!err) err = af_program_call_with(ctx, prog, (const af_value_t* const*)items, n, &ro, &result);
  if (bar.drawn || streamed.started) fputc('\n', stderr);
  if (!err) err = af_value_to_json(result, &json);
  if (!err) printf("%s\n", (const char*)json.data);
  if (!err && o->item_errors) {
    fflush(stdout);
    find_failed_items(result, 0, 0, &failures);
    if (failures.count) fprintf(stderr, "af: %zu item(s) failed, the others completed\n", failures.count);
    free(failures.failed);
  }
  if (summary.data) print_summary(ctx, &summary); /* also for a failed run: its calls cost too */
  if (!err && o->profile) fprintf(stderr, "af: profile written to %s (open it in Perfetto)\n", o->profile);
  if (summary.data && o->journal) journal_show(o->journal, JOURNAL_BRIEF);
  for (i = 0; items && i < n; i++) af_value_free(items[i]);
  free(items);
  af_bytes_free(&json);
  af_bytes_free(&summary);
  af_value_free(result);
  af_value_free(args);
  af_program_free(prog);
  af_provider_free(provider);
  af_context_free(ctx);
  /* A signal that came after the run had ended changes nothing. */
  cancelled = err && af_error_code(err) == AF_ERR_CANCELLED && g_signals.signo;
  rc = err ? fail(err) : failures.count ? AF_CLI_ITEMS_FAILED : 0;
  if (cancelled) {
    fprintf(stderr, "af: cancelled by %s\n", g_signals.signo == SIGINT ? "SIGINT" : "SIGTERM");
    rc = 128 + g_signals.signo;
  }
  return rc;
}

/* The tickets as the program's one positional input, [[t1, t2, ...]], as
 * JSON built with the value API (exact escaping, any length; a ticket that is
 * not valid UTF-8 is refused). */
static af_error_t* tickets_json(const char* const* tickets, size_t n, af_bytes_t* out) {
  af_context_t* ctx = NULL;
  af_value_t** items = calloc(n ? n : 1, sizeof *items);
  af_value_t *list = NULL, *input = NULL;
  size_t i;
  af_error_t* err = items ? af_context_new(&ctx) : af_error_new(AF_ERR_OUT_OF_MEMORY, "out of memory", 13);
  for (i = 0; !err && i < n; i++) err = af_value_str_new(tickets[i], strlen(tickets[i]), &items[i]);
  if (!err) err = af_value_list_new((const af_value_t* const*)items, n, &list);
  if (!err) err = af_value_list_new((const af_value_t* const*)&list, 1, &input);
  if (!err) err = af_value_to_json(input, out);
  for (i = 0; items && i < n; i++) af_value_free(items[i]);
  free(items);
  af_value_free(list);
  af_value_free(input);
  af_context_free(ctx);
  return err;
}

/* The README's main command: trace the example LM program (support-ticket
 * triage), batch it over tickets, save it as a compiled program, and run the
 * saved file exactly as `af run FILE --input ... --provider echo ...` does
 * (offline; echo answers every call after a simulated 100 ms), or with the
 * provider and options `run` gives (a real model). */
static int demo(const char* const* tickets, size_t n, const char* save, const char* save_item,
                struct run_opts run_with) {
  af_context_t* ctx = NULL;
  af_ir_t *one = NULL, *batched = NULL;
  af_program_t* prog = NULL;
  af_bytes_t text = {0}, dot = {0}, input = {0};
  double t0;
  int rc, simulated;
  af_error_t* err;
  if (n == 0) {
    tickets = triage_sample_tickets;
    n = TRIAGE_N_SAMPLE_TICKETS;
  }
  err = tickets_json(tickets, n, &input);
  if (!err) err = af_context_new(&ctx);
  if (!err) err = triage_trace(ctx, &one);
  if (!err) err = af_ir_to_text(one, &text);
  if (!err) err = af_ir_to_dot(one, &dot);
  if (!err) err = af_batch(ctx, one, NULL, &batched);
  if (!err) err = af_compile(ctx, batched, &prog);
  if (!err) err = af_program_save(prog, save, strlen(save));
  if (!err && save_item) err = af_ir_save(one, save_item, strlen(save_item));
  if (!err) {
    printf("== traced: triage(ticket) = classify (lm_schema_call), route by team (switch),\n"
           "   draft a reply (lm_call), review it (lm_schema_call) -- examples/triage\n");
    printf("%s\n", (const char*)text.data);
    printf("== its DOT (Graphviz: inputs as boxes, outputs as double octagons)\n%s\n", (const char*)dot.data);
    printf("== batched over a list of tickets (af_batch), compiled, saved to %s\n", save);
    if (save_item) printf("== the per-ticket program (unbatched) saved to %s\n", save_item);
  }
  af_bytes_free(&text);
  af_bytes_free(&dot);
  af_program_free(prog);
  af_ir_free(batched);
  af_ir_free(one);
  af_context_free(ctx);
  if (err) {
    af_bytes_free(&input);
    return fail(err);
  }
  simulated = !run_with.provider;
  if (simulated) {
    run_with.provider = "echo";
    run_with.provider_options = "{\"latency_ms\":100,\"schema_replies\":\"varied\"}";
  }
  run_with.input = (const char*)input.data;
  run_with.item_errors = 1;
  printf("== af run %s --input '%s' --provider %s", save, run_with.input, run_with.provider);
  if (run_with.provider_options) printf(" --provider-options '%s'", run_with.provider_options);
  printf("%s --item-errors\n", run_with.stream ? " --stream" : "");
  fflush(stdout);
  t0 = now_s();
  rc = run(save, &run_with);
  af_bytes_free(&input);
  if (rc == 0 && simulated)
    printf("== %lu LM calls of 100 ms each in %.0f ms: each ticket's calls wait for each other,\n"
           "   the tickets' calls run concurrently\n"
           "== echo is offline: it picks each structured answer (team, urgency) from a hash of the\n"
           "   prompt, so tickets take different branches but not for their meaning; with a real\n"
           "   model (tools/local_model.sh demo) the team follows the ticket\n",
           (unsigned long)(3 * n), (now_s() - t0) * 1e3);
  return rc;
}

enum show_as { SHOW_TEXT, SHOW_DOT, SHOW_JSON };

/* show / dot: print the IR text, DOT or inspection JSON of a saved graph. */
static int show(const char* path, enum show_as as) {
  af_context_t* ctx = NULL;
  af_ir_t* ir = NULL;
  af_bytes_t out = {0};
  af_error_t* err = af_context_new(&ctx);
  if (!err) err = af_ir_load(ctx, path, strlen(path), &ir);
  if (!err) {
    err = as == SHOW_DOT ? af_ir_to_dot(ir, &out) : as == SHOW_JSON ? af_ir_json(ir, &out) : af_ir_to_text(ir, &out);
  }
  if (!err) fputs((const char*)out.data, stdout);
  af_bytes_free(&out);
  af_ir_free(ir);
  af_context_free(ctx);
  return err ? fail(err) : 0;
}

/* slice: save the part of a saved graph computing the chosen outputs. */
static int slice(const char* path, const char* const* outputs, size_t n_out, const char* const* inputs,
                 size_t n_in, const char* out_path) {
  af_context_t* ctx = NULL;
  af_ir_t* ir = NULL;
  af_ir_t* part = NULL;
  af_error_t* err = af_context_new(&ctx);
  if (!err) err = af_ir_load(ctx, path, strlen(path), &ir);
  if (!err) err = af_ir_slice(ir, outputs, NULL, n_out, inputs, NULL, n_in, &part);
  if (!err) err = af_ir_save(part, out_path, strlen(out_path));
  if (!err) printf("%s: %zu of %zu equations\n", out_path, af_ir_eqn_count(part), af_ir_eqn_count(ir));
  af_ir_free(part);
  af_ir_free(ir);
  af_context_free(ctx);
  return err ? fail(err) : 0;
}

/* cost: the dry-run LM cost of a saved graph for a batch of examples. */
static int cost(const char* path, int64_t batch) {
  af_context_t* ctx = NULL;
  af_ir_t* ir = NULL;
  af_bytes_t out = {0};
  af_error_t* err = af_context_new(&ctx);
  if (!err) err = af_ir_load(ctx, path, strlen(path), &ir);
  if (!err) err = af_ir_cost_json(ir, batch, &out);
  if (!err) printf("%s\n", (const char*)out.data);
  af_bytes_free(&out);
  af_ir_free(ir);
  af_context_free(ctx);
  return err ? fail(err) : 0;
}

static int verify(const char* path) {
  af_context_t* ctx = NULL;
  unsigned char* data = NULL;
  size_t len = 0;
  af_bytes_t summary = {0};
  af_error_t* err = af_context_new(&ctx);
  if (!err) err = read_all(path, &data, &len);
  if (!err) err = af_graph_verify(ctx, data, len, &summary);
  if (!err) printf("%s: ok %s\n", path, (const char*)summary.data);
  if (err) fprintf(stderr, "%s: verification failed\n", path);
  af_bytes_free(&summary);
  free(data);
  af_context_free(ctx);
  return err ? fail(err) : 0;
}

static int convert(const char* path, int to_json, const char* out_path) {
  af_context_t* ctx = NULL;
  unsigned char* data = NULL;
  size_t len = 0;
  af_bytes_t out = {0};
  af_error_t* err = af_context_new(&ctx);
  if (!err && !to_json && !out_path && isatty(STDOUT_FILENO)) {
    const char* msg = "refusing to write a binary graph to a terminal; use -o OUT.afg";
    err = af_error_new(AF_ERR_INVALID_ARGUMENT, msg, strlen(msg));
  }
  if (!err) err = read_all(path, &data, &len);
  if (!err) {
    err = to_json ? af_graph_to_json(ctx, data, len, &out)
                  : af_graph_from_json(ctx, (const char*)data, len, &out);
  }
  if (!err) err = write_all(out_path, out.data, out.len);
  af_bytes_free(&out);
  free(data);
  af_context_free(ctx);
  return err ? fail(err) : 0;
}

int main(int argc, char** argv) {
  const char* cmd = argc > 1 ? argv[1] : NULL;
  int i;
  if (!cmd) return usage_error("missing command");
  if (strcmp(cmd, "demo") == 0 || strcmp(cmd, "run") == 0) cancel_on_signals();
  if (strcmp(cmd, "version") == 0) {
    printf("af %s (abi %u)\n", af_version(), (unsigned)af_abi_version());
    return 0;
  }
  if (strcmp(cmd, "options") == 0 && argc == 2) {
    af_bytes_t b = {NULL, 0};
    af_error_t* err = af_options_json(&b);
    if (err) return fail(err);
    printf("%s\n", (const char*)b.data);
    af_bytes_free(&b);
    return 0;
  }
  if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0) {
    usage(stdout);
    return 0;
  }
  if (strcmp(cmd, "demo") == 0) {
    const char* save = "triage.afg";
    const char* save_item = NULL;
    const char** tickets = calloc((size_t)argc, sizeof *tickets);
    struct run_opts o = {NULL, NULL, NULL, "*", NULL, 0, NULL, 0, 0, NULL};
    size_t n = 0;
    int rc;
    if (!tickets) return fail(af_error_new(AF_ERR_OUT_OF_MEMORY, "out of memory", 13));
    for (i = 2; i < argc; i++) {
      if (strcmp(argv[i], "--save") == 0 && i + 1 < argc) {
        save = argv[++i];
      } else if (strcmp(argv[i], "--save-item") == 0 && i + 1 < argc) {
        save_item = argv[++i];
      } else if (strcmp(argv[i], "--provider") == 0 && i + 1 < argc) {
        o.provider = argv[++i];
      } else if (strcmp(argv[i], "--provider-options") == 0 && i + 1 < argc) {
        o.provider_options = argv[++i];
      } else if (strcmp(argv[i], "--stream") == 0) {
        o.stream = 1;
      } else if (argv[i][0] == '-') {
        free(tickets);
        return usage_error("demo: unknown option");
      } else {
        tickets[n++] = argv[i];
      }
    }
    if (o.provider_options && !o.provider) {
      free(tickets);
      return usage_error("demo: --provider-options needs --provider");
    }
    rc = demo(tickets, n, save, save_item, o);
    free(tickets);
    return rc;
  }
  if (strcmp(cmd, "journal") == 0) {
    if (argc == 4 && strcmp(argv[2], "show") == 0) return journal_show(argv[3], JOURNAL_TEXT);
    if (argc == 5 && strcmp(argv[2], "show") == 0 && strcmp(argv[4], "--json") == 0)
      return journal_show(argv[3], JOURNAL_JSON);
    if (argc == 4 && strcmp(argv[2], "compact") == 0) {
      af_error_t* err = af_journal_compact(argv[3], strlen(argv[3]));
      return err ? fail(err) : 0;
    }
    return usage_error("journal: say show FILE [--json] or compact FILE");
  }
  if (strcmp(cmd, "show") == 0 && argc == 4 && strcmp(argv[2], "--json") == 0) return show(argv[3], SHOW_JSON);
  if (argc < 3) return usage_error("missing FILE");
  const char* file = argv[2];
  if (strcmp(cmd, "show") == 0 && argc == 3) return show(file, SHOW_TEXT);
  if (strcmp(cmd, "show") == 0 && argc == 4 && strcmp(argv[3], "--json") == 0) return show(file, SHOW_JSON);
  if (strcmp(cmd, "dot") == 0 && argc == 3) return show(file, SHOW_DOT);
  if (strcmp(cmd, "slice") == 0) {
    /* --outputs and --inputs each take the PATH arguments up to the next option. */
    const char* const* outputs = NULL;
    const char* const* inputs = NULL;
    size_t n_out = 0, n_in = 0;
    const char* out = NULL;
    for (i = 3; i < argc; i++) {
      if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
        out = argv[++i];
      } else if (strcmp(argv[i], "--outputs") == 0 || strcmp(argv[i], "--inputs") == 0) {
        int is_out = argv[i][2] == 'o';
        const char* const* first = (const char* const*)&argv[i + 1];
        size_t n = 0;
        while (i + 1 < argc && strncmp(argv[i + 1], "-", 1) != 0) {
          i++;
          n++;
        }
        if (is_out) {
          outputs = first;
          n_out = n;
        } else {
          inputs = first;
          n_in = n;
        }
      } else {
        return usage_error("slice: unknown option");
      }
    }
    if (n_out == 0) return usage_error("slice: name at least one output with --outputs PATH...");
    if (!out) return usage_error("slice: say where to save the slice with -o OUT");
    return slice(file, outputs, n_out, inputs, n_in, out);
  }
  if (strcmp(cmd, "cost") == 0) {
    int64_t batch = 1;
    for (i = 3; i < argc; i++) {
      char* end = NULL;
      if (strcmp(argv[i], "--batch") == 0 && i + 1 < argc) {
        batch = strtoll(argv[++i], &end, 10);
        if (!*argv[i] || *end || batch < 1) return usage_error("cost: --batch takes a positive integer");
      } else {
        return usage_error("cost: unknown option");
      }
    }
    return cost(file, batch);
  }
  if (strcmp(cmd, "verify") == 0 && argc == 3) return verify(file);
  if (strcmp(cmd, "run") == 0) {
    struct run_opts o = {NULL, NULL, NULL, "*", NULL, 0, NULL, 0, 0, NULL};
    for (i = 3; i < argc; i++) {
      if (strcmp(argv[i], "--stream") == 0) {
        o.stream = 1;
        continue;
      }
      if (strcmp(argv[i], "--item-errors") == 0) {
        o.item_errors = 1;
        continue;
      }
      if (i + 1 >= argc) return usage_error("run: an option is missing its value");
      if (strcmp(argv[i], "--input") == 0) {
        o.input = argv[++i];
      } else if (strcmp(argv[i], "--timeout-ms") == 0) {
        char* end = NULL;
        unsigned long long ms;
        errno = 0;
        ms = strtoull(argv[++i], &end, 10);
        if (!*argv[i] || *end || errno || argv[i][0] == '-' || ms == 0)
          return usage_error("run: --timeout-ms takes a positive integer (milliseconds)");
        o.timeout_ms = (uint64_t)ms;
      } else if (strcmp(argv[i], "--provider") == 0) {
        o.provider = argv[++i];
      } else if (strcmp(argv[i], "--provider-options") == 0) {
        o.provider_options = argv[++i];
      } else if (strcmp(argv[i], "--model") == 0) {
        o.model = argv[++i];
      } else if (strcmp(argv[i], "--profile") == 0) {
        o.profile = argv[++i];
      } else if (strcmp(argv[i], "--stream-tag") == 0) {
        o.stream_tag = argv[++i];
      } else if (strcmp(argv[i], "--journal") == 0) {
        o.journal = argv[++i];
      } else {
        return usage_error("run: unknown option");
      }
    }
    if (!o.input) return usage_error("run: --input JSON is required (a list of the inputs)");
    if (o.stream_tag && !o.stream) return usage_error("run: --stream-tag TAG needs --stream");
    return run(file, &o);
  }
  if (strcmp(cmd, "convert") == 0) {
    int to_json = -1;
    const char* out = NULL;
    for (i = 3; i < argc; i++) {
      if (strcmp(argv[i], "--to") == 0 && i + 1 < argc && strcmp(argv[i + 1], "json") == 0) {
        to_json = 1;
        i++;
      } else if (strcmp(argv[i], "--from") == 0 && i + 1 < argc && strcmp(argv[i + 1], "json") == 0) {
        to_json = 0;
        i++;
      } else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
        out = argv[++i];
      } else {
        return usage_error("convert: unknown option");
      }
    }
    if (to_json < 0) return usage_error("convert: say --to json or --from json");
    return convert(file, to_json, out);
  }
  fprintf(stderr, "af: unknown command or arguments for \"%s\"\n", cmd);
  usage(stderr);
  return 2;
}
