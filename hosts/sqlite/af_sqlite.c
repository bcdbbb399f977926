/* libaf_sqlite: a SQLite loadable extension that runs saved libaf graphs.
 *
 *   .load build/lib/libaf_sqlite          (sqlite3 shell)
 *   conn.load_extension("build/lib/libaf_sqlite")   (Python)
 *
 *   af_route(model_pattern, provider_type, options_json) -> 1
 *   af_run(graph, input_json [, options_json]) -> JSON text
 *   af_run_agg(graph, input_json [, options_json]) -> JSON array (aggregate)
 *
 * graph is a file path (TEXT) or the .afg bytes (BLOB). Each connection has
 * its own libaf context (routes, loaded graphs, plan cache), made at first
 * use and freed with the connection. af_run_agg batches the per-item graph
 * at first use and runs the group's rows as one batched run (their LM calls
 * in flight together); an item that fails becomes {"error": {...}} in its
 * place. A call waits for its run on the connection's thread, checking every
 * 10 ms whether sqlite3_interrupt was called: if so it cancels the run.
 * docs/PLUGIN_HOSTS.md has the whole story. */
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT1

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "afsql.h"

/* SQLite's JSON functions read a result with this subtype as JSON, so
 * json_group_array(af_run(...)) nests objects rather than strings. */
#define JSON_SUBTYPE 74
#ifndef SQLITE_RESULT_SUBTYPE
#define SQLITE_RESULT_SUBTYPE 0
#endif

/* One connection's state, shared by its functions (refs: registrations). */
typedef struct conn {
  afsql_session* session;
  int refs;
} conn;

static void conn_release(void* p) {
  conn* c = p;
  if (--c->refs > 0) return;
  afsql_session_free(c->session);
  sqlite3_free(c);
}

static af_error_t* session_of(sqlite3_context* cx, afsql_session** out) {
  conn* c = sqlite3_user_data(cx);
  if (!c->session) {
    af_error_t* err = afsql_session_new(&c->session);
    if (err) return err;
  }
  *out = c->session;
  return NULL;
}

/* Reports err (consumed) as the function's SQL error: "NAME: message". */
static void report(sqlite3_context* cx, af_error_t* err, int interrupted) {
  char msg[2048];
  afsql_error_text(err, msg, sizeof msg);
  sqlite3_result_error(cx, msg, -1);
  if (interrupted) {
    sqlite3_result_error_code(cx, SQLITE_INTERRUPT);
  } else if (af_error_code(err) == AF_ERR_OUT_OF_MEMORY) {
    sqlite3_result_error_nomem(cx);
  }
  af_error_free(err);
}

static af_error_t* usage(const char* msg) { return af_error_new(AF_ERR_INVALID_ARGUMENT, msg, strlen(msg)); }
static af_error_t* oom(void) { return af_error_new(AF_ERR_OUT_OF_MEMORY, "out of memory", 13); }

/* A TEXT argument (NULL when SQL NULL and allowed). */
static af_error_t* text_arg(sqlite3_value* v, const char* what, int null_ok, const char** s, size_t* len) {
  char msg[256];
  int type = sqlite3_value_type(v);
  *s = NULL;
  *len = 0;
  if (type == SQLITE_NULL && null_ok) return NULL;
  if (type != SQLITE_TEXT) {
    snprintf(msg, sizeof msg, "%s must be TEXT", what);
    return usage(msg);
  }
  *s = (const char*)sqlite3_value_text(v);
  *len = (size_t)sqlite3_value_bytes(v);
  return *s ? NULL : oom();
}

/* The .afg bytes of a graph argument: a BLOB, or the file a TEXT names.
 * *owned is set when the bytes were read from a file (free() them). */
static af_error_t* graph_bytes(sqlite3_value* v, const uint8_t** data, size_t* len, uint8_t** owned) {
  *owned = NULL;
  if (sqlite3_value_type(v) == SQLITE_BLOB) {
    *len = (size_t)sqlite3_value_bytes(v);
    *data = sqlite3_value_blob(v);
    if (!*data) *data = (const uint8_t*)""; /* a zero-length blob */
    return NULL;
  }
  if (sqlite3_value_type(v) == SQLITE_TEXT) {
    af_error_t* err = afsql_read_file((const char*)sqlite3_value_text(v), (size_t)sqlite3_value_bytes(v), owned, len);
    *data = *owned;
    return err;
  }
  return usage("the graph must be a file path (TEXT) or the .afg bytes (BLOB)");
}

/* 1 if sqlite3_interrupt was called on db. SQLite before 3.41 has no
 * sqlite3_is_interrupted; stepping a trivial statement reports it, since
 * the flag stays set while the calling statement runs. */
static int interrupted(sqlite3* db, sqlite3_stmt** probe) {
  int rc;
#if SQLITE_VERSION_NUMBER >= 3041000
  /* Built against a newer SQLite than the one loading it: the probe. */
  if (sqlite3_libversion_number() >= 3041000) return sqlite3_is_interrupted(db);
#endif
  rc = *probe ? SQLITE_OK : sqlite3_prepare_v2(db, "SELECT 1", -1, probe, NULL);
  if (rc == SQLITE_OK) {
    rc = sqlite3_step(*probe);
    sqlite3_reset(*probe);
  }
  return rc == SQLITE_INTERRUPT;
}

/* Waits for r on this thread (cancelling it when the connection is
 * interrupted) and makes its output the function's result. */
static void finish(sqlite3_context* cx, afsql_run* r) {
  sqlite3* db = sqlite3_context_db_handle(cx);
  sqlite3_stmt* probe = NULL;
  struct pollfd p;
  af_bytes_t json = {0};
  af_error_t* err;
  int cancelled = 0;
  p.fd = afsql_run_fd(r);
  p.events = POLLIN;
  for (;;) {
    int rc = poll(&p, 1, 10);
    if (rc > 0 || (rc < 0 && errno != EINTR)) break;
    if (interrupted(db, &probe)) {
      afsql_run_cancel(r);
      cancelled = 1;
      break;
    }
  }
  sqlite3_finalize(probe);
  err = afsql_run_finish(r, &json);
  if (err) {
    report(cx, err, cancelled && af_error_code(err) == AF_ERR_CANCELLED);
    return;
  }
  sqlite3_result_text64(cx, (const char*)json.data, json.len, SQLITE_TRANSIENT, SQLITE_UTF8);
  sqlite3_result_subtype(cx, JSON_SUBTYPE);
  af_bytes_free(&json);
}

/* af_route(model_pattern, provider_type, options_json) */
static void route_fn(sqlite3_context* cx, int argc, sqlite3_value** argv) {
  const char *pattern, *type, *options;
  size_t plen, tlen, olen;
  afsql_session* s = NULL;
  af_error_t* err = text_arg(argv[0], "af_route: the model pattern", 0, &pattern, &plen);
  if (!err) err = text_arg(argv[1], "af_route: the provider type (echo, openai, anthropic, ollama or replay)", 0, &type, &tlen);
  if (!err) err = text_arg(argv[2], "af_route: the options (a JSON object, or NULL)", 1, &options, &olen);
  if (!err) err = session_of(cx, &s);
  if (!err) err = afsql_route(s, pattern, plen, type, tlen, options, olen);
  if (err) {
    report(cx, err, 0);
  } else {
    sqlite3_result_int(cx, 1);
  }
}

/* af_run(graph, input_json [, options_json]) */
static void run_fn(sqlite3_context* cx, int argc, sqlite3_value** argv) {
  const uint8_t* data = NULL;
  uint8_t* owned = NULL;
  size_t len = 0, ilen, olen = 0;
  const char *input, *options = NULL;
  afsql_session* s = NULL;
  afsql_graph* g = NULL;
  afsql_run* r = NULL;
  af_error_t* err = text_arg(argv[1], "af_run: the input (a JSON array of the program's inputs)", 0, &input, &ilen);
  if (!err && argc > 2) err = text_arg(argv[2], "af_run: the options (a JSON object, or NULL)", 1, &options, &olen);
  if (!err) err = session_of(cx, &s);
  if (!err) err = graph_bytes(argv[0], &data, &len, &owned);
  if (!err) err = afsql_graph_get(s, data, len, &g);
  free(owned);
  if (!err) err = afsql_run_one(s, g, input, ilen, options, olen, &r);
  if (err) {
    report(cx, err, 0);
    return;
  }
  finish(cx, r);
}

/* af_run_agg's state: the group's graph (from its first row) and rows. */
typedef struct agg {
  int failed; /* a step reported an error: the statement is ending */
  uint8_t* graph;
  size_t graph_len;
  char* path; /* the first row's graph argument when it was a path */
  size_t path_len;
  char* options;
  size_t options_len;
  char** rows;
  size_t* lens;
  size_t n, cap;
} agg;

static void agg_free(agg* a) {
  size_t i;
  for (i = 0; i < a->n; i++) free(a->rows[i]);
  free(a->rows);
  free(a->lens);
  free(a->graph);
  free(a->path);
  free(a->options);
  memset(a, 0, sizeof *a);
}

static char* copy(const void* p, size_t len) {
  char* c = malloc(len + 1);
  if (c) {
    if (len) memcpy(c, p, len);
    c[len] = 0;
  }
  return c;
}

/* 1 if a row's graph argument is the first row's (the same path, or the
 * same bytes). */
static int same_graph(const agg* a, sqlite3_value* v) {
  int type = sqlite3_value_type(v);
  const void* p = type == SQLITE_BLOB ? sqlite3_value_blob(v) : (const void*)sqlite3_value_text(v);
  size_t len = (size_t)sqlite3_value_bytes(v);
  const void* first = a->path ? (const void*)a->path : (const void*)a->graph;
  size_t first_len = a->path ? a->path_len : a->graph_len;
  return type == (a->path ? SQLITE_TEXT : SQLITE_BLOB) && len == first_len && (len == 0 || memcmp(p, first, len) == 0);
}

static void agg_step(sqlite3_context* cx, int argc, sqlite3_value** argv) {
  agg* a = sqlite3_aggregate_context(cx, sizeof *a);
  const uint8_t* data = NULL;
  uint8_t* owned = NULL;
  size_t len = 0, ilen, olen = 0;
  const char *input, *options = NULL;
  af_error_t* err;
  if (!a) {
    sqlite3_result_error_nomem(cx);
    return;
  }
  if (a->failed) return;
  err = text_arg(argv[1], "af_run_agg: the input (a JSON array of the program's inputs)", 0, &input, &ilen);
  if (!err && argc > 2) err = text_arg(argv[2], "af_run_agg: the options (a JSON object, or NULL)", 1, &options, &olen);
  if (!err && !a->graph) {
    /* The first row's graph and options are the group's. */
    err = graph_bytes(argv[0], &data, &len, &owned);
    if (!err && !(a->graph = owned ? owned : (uint8_t*)copy(data, len))) err = oom();
    if (!err && options && !(a->options = copy(options, olen))) err = oom();
    if (!err && owned) { /* read from a path: later rows must give the same path */
      a->path_len = (size_t)sqlite3_value_bytes(argv[0]);
      if (!(a->path = copy(sqlite3_value_text(argv[0]), a->path_len))) err = oom();
    }
    a->graph_len = len;
    a->options_len = olen;
    owned = NULL;
  } else if (!err && !same_graph(a, argv[0])) {
    err = usage("af_run_agg: every row of a group must give the same graph");
  }
  if (!err && a->n == a->cap) {
    size_t cap = a->cap ? 2 * a->cap : 64;
    char** rows = realloc(a->rows, cap * sizeof *rows);
    size_t* lens = rows ? realloc(a->lens, cap * sizeof *lens) : NULL;
    if (rows) a->rows = rows;
    if (lens) a->lens = lens;
    if (!rows || !lens) err = oom();
    else a->cap = cap;
  }
  if (!err && !(a->rows[a->n] = copy(input, ilen))) err = oom();
  if (!err) a->lens[a->n++] = ilen;
  free(owned);
  if (err) {
    a->failed = 1;
    report(cx, err, 0);
  }
}

static void agg_final(sqlite3_context* cx) {
  agg* a = sqlite3_aggregate_context(cx, 0);
  afsql_session* s = NULL;
  afsql_graph* g = NULL;
  afsql_run* r = NULL;
  af_error_t* err = NULL;
  if (!a || a->n == 0) { /* an empty group */
    if (!a || !a->failed) {
      sqlite3_result_text(cx, "[]", 2, SQLITE_STATIC);
      sqlite3_result_subtype(cx, JSON_SUBTYPE);
    }
    if (a) agg_free(a);
    return;
  }
  if (a->failed) { /* the statement is being reset after a step's error */
    agg_free(a);
    return;
  }
  err = session_of(cx, &s);
  if (!err) err = afsql_graph_get(s, a->graph, a->graph_len, &g);
  if (!err)
    err = afsql_run_batch(s, g, (const char* const*)a->rows, a->lens, a->n, a->options, a->options_len, &r);
  agg_free(a);
  if (err) {
    report(cx, err, 0);
    return;
  }
  finish(cx, r);
}

#ifdef _WIN32
__declspec(dllexport)
#else
__attribute__((visibility("default")))
#endif
int sqlite3_afsqlite_init(sqlite3* db, char** pzErrMsg, const sqlite3_api_routines* pApi) {
  static const struct {
    const char* name;
    int args;
    void (*fn)(sqlite3_context*, int, sqlite3_value**);
    void (*step)(sqlite3_context*, int, sqlite3_value**);
    void (*final)(sqlite3_context*);
  } fns[] = {{"af_route", 3, route_fn, NULL, NULL},   {"af_run", 2, run_fn, NULL, NULL},
             {"af_run", 3, run_fn, NULL, NULL},       {"af_run_agg", 2, NULL, agg_step, agg_final},
             {"af_run_agg", 3, NULL, agg_step, agg_final}};
  /* Not in views or triggers of a database file: these functions reach the
   * network and spend money. Not deterministic: LM replies vary. */
  const int flags = SQLITE_UTF8 | SQLITE_DIRECTONLY | SQLITE_RESULT_SUBTYPE;
  const int n = (int)(sizeof fns / sizeof fns[0]);
  conn* c;
  int rc = SQLITE_OK, i;
  SQLITE_EXTENSION_INIT2(pApi);
  c = sqlite3_malloc(sizeof *c);
  if (!c) return SQLITE_NOMEM;
  c->session = NULL;
  c->refs = n; /* one per registration; each destroy drops one */
  for (i = 0; i < n; i++) {
    if (rc == SQLITE_OK) { /* a registration that fails runs its destroy itself */
      rc = sqlite3_create_function_v2(db, fns[i].name, fns[i].args, flags, c, fns[i].fn, fns[i].step,
                                      fns[i].final, conn_release);
    } else {
      conn_release(c);
    }
  }
  if (rc != SQLITE_OK && pzErrMsg) *pzErrMsg = sqlite3_mprintf("libaf_sqlite: %s", sqlite3_errmsg(db));
  return rc;
}
