/* af: a PostgreSQL extension that runs saved libaf graphs (CREATE EXTENSION af).
 *
 *   af_run(graph bytea, input jsonb [, options jsonb]) -> jsonb
 *   af_run(graph_path text, input jsonb [, options jsonb]) -> jsonb
 *   af_run_agg(graph bytea, input jsonb [, options jsonb]) -> jsonb   (aggregate)
 *   af.routes: provider routes, a JSON object pattern -> {type, options}
 *
 * Threads and signals. A backend is single-threaded; libaf runs LM calls on
 * threads of its own. None of them ever calls PostgreSQL: a run's end is
 * signalled by a libaf thread writing one byte to a socket, and the backend
 * waits for that socket and its own latch together (WaitLatchOrSocket). Every
 * call into libaf is made with all signals blocked, so the threads libaf
 * starts inherit a full mask and PostgreSQL's signal handlers (query cancel,
 * statement_timeout, shutdown) run only on the backend's own thread. When
 * the wait sees a cancel or a timeout pending, it cancels the run, waits for
 * its end (libaf aborts in-flight requests at once), frees it, and only then
 * lets PostgreSQL raise the error (CHECK_FOR_INTERRUPTS): no ereport ever
 * skips libaf's cleanup. The session (a libaf context) is made at first use
 * in each backend and freed when it exits. docs/PLUGIN_HOSTS.md. */
#include "postgres.h"

#include <pthread.h>
#include <signal.h>
#include <string.h>

#include "catalog/pg_authid.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/jsonb.h"
#include "utils/wait_event.h"

#include "afsql.h"

PG_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(af_run_bytea);
PG_FUNCTION_INFO_V1(af_run_path);
PG_FUNCTION_INFO_V1(af_run_agg_step);
PG_FUNCTION_INFO_V1(af_run_agg_final);

void _PG_init(void);

static char* routes_guc = NULL;         /* af.routes */
static afsql_session* session = NULL;   /* this backend's */
static char* session_routes = NULL;     /* the af.routes it was made with (malloc) */

void _PG_init(void) {
  /* Superuser-set (per session, database or role, or in postgresql.conf):
   * a route names an endpoint and the environment variable holding its key,
   * so an ordinary user must not be able to point them elsewhere. */
  DefineCustomStringVariable("af.routes", "libaf provider routes: a JSON object model pattern -> {type, options}.",
                             "Types: echo, openai, anthropic, ollama, replay; options as af run --provider-options.", &routes_guc,
                             "", PGC_SUSET, 0, NULL, NULL, NULL);
  MarkGUCPrefixReserved("af");
}

/* libaf may start threads in any call: with every signal blocked here,
 * they start with every signal blocked too. */
static sigset_t block_signals(void) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  return old;
}
static void restore_signals(const sigset_t* old) { pthread_sigmask(SIG_SETMASK, old, NULL); }

static int sqlstate_of(int32_t code) {
  switch (code) {
    case AF_ERR_INVALID_ARGUMENT: return ERRCODE_INVALID_PARAMETER_VALUE;
    case AF_ERR_NOT_FOUND: return ERRCODE_UNDEFINED_OBJECT;
    case AF_ERR_FORMAT: return ERRCODE_DATA_CORRUPTED;
    case AF_ERR_VERSION: return ERRCODE_FEATURE_NOT_SUPPORTED;
    case AF_ERR_TIMEOUT:
    case AF_ERR_CANCELLED: return ERRCODE_QUERY_CANCELED;
    case AF_ERR_IO: return ERRCODE_IO_ERROR;
    case AF_ERR_OUT_OF_MEMORY: return ERRCODE_OUT_OF_MEMORY;
    default: return ERRCODE_EXTERNAL_ROUTINE_EXCEPTION;
  }
}

/* Raises err (freed first) as an ERROR "NAME: message". */
static void pg_attribute_noreturn() throw_af(af_error_t* err, const char* what) {
  char msg[2048];
  int32_t code = af_error_code(err);
  afsql_error_text(err, msg, sizeof msg);
  af_error_free(err);
  ereport(ERROR, (errcode(sqlstate_of(code)), errmsg("%s%s", what, msg)));
}

static void session_exit(int code, Datum arg) {
  sigset_t old = block_signals();
  afsql_session_free(session);
  restore_signals(&old);
  session = NULL;
}

/* This backend's session, made anew when af.routes changed (a context's
 * routes can be replaced but not removed). */
static afsql_session* get_session(void) {
  static bool exit_hook = false;
  const char* want = routes_guc ? routes_guc : "";
  afsql_session* s = NULL;
  af_error_t* err;
  sigset_t old;
  char* copy;
  if (session && strcmp(session_routes, want) == 0) return session;
  if (!(copy = strdup(want))) ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
  old = block_signals();
  afsql_session_free(session);
  session = NULL;
  free(session_routes);
  session_routes = NULL;
  err = afsql_session_new(&s);
  if (!err && *want) err = afsql_route_all(s, want, strlen(want));
  if (err) afsql_session_free(s);
  restore_signals(&old);
  if (err) {
    free(copy);
    throw_af(err, "af.routes: ");
  }
  if (!exit_hook) {
    on_proc_exit(session_exit, 0);
    exit_hook = true;
  }
  session = s;
  session_routes = copy;
  return s;
}

static afsql_graph* get_graph(afsql_session* s, const uint8_t* data, size_t len) {
  afsql_graph* g = NULL;
  sigset_t old = block_signals();
  af_error_t* err = afsql_graph_get(s, data, len, &g);
  restore_signals(&old);
  if (err) throw_af(err, "");
  return g;
}

/* Waits for r, cancelling it on a query cancel, statement_timeout or
 * shutdown (raised once r is freed); returns its output as jsonb. */
static Datum wait_run(afsql_run* r) {
  af_bytes_t json = {0};
  af_error_t* err;
  sigset_t old;
  char* text;
  for (;;) {
    int rc = WaitLatchOrSocket(MyLatch, WL_LATCH_SET | WL_SOCKET_READABLE | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
                               afsql_run_fd(r), 1000, PG_WAIT_EXTENSION);
    if (rc & WL_LATCH_SET) ResetLatch(MyLatch);
    if (rc & WL_SOCKET_READABLE) break;
    if (QueryCancelPending || ProcDiePending) {
      afsql_run_cancel(r);
      break;
    }
  }
  old = block_signals();
  err = afsql_run_finish(r, &json);
  restore_signals(&old);
  if (err) {
    if (QueryCancelPending || ProcDiePending) {
      af_error_free(err);
      CHECK_FOR_INTERRUPTS(); /* PostgreSQL's own message: cancel or timeout */
      ereport(ERROR, (errcode(ERRCODE_QUERY_CANCELED), errmsg("canceling the libaf run")));
    }
    throw_af(err, "");
  }
  text = pstrdup((const char*)json.data);
  af_bytes_free(&json);
  return DirectFunctionCall1(jsonb_in, CStringGetDatum(text));
}

static char* jsonb_text(Jsonb* j) { return JsonbToCString(NULL, &j->root, VARSIZE(j)); }

static Datum run(FunctionCallInfo fcinfo, const uint8_t* data, size_t len) {
  afsql_session* s = get_session();
  afsql_graph* g = get_graph(s, data, len);
  char* input = jsonb_text(PG_GETARG_JSONB_P(1));
  char* options = PG_NARGS() > 2 && !PG_ARGISNULL(2) ? jsonb_text(PG_GETARG_JSONB_P(2)) : NULL;
  afsql_run* r = NULL;
  sigset_t old = block_signals();
  af_error_t* err = afsql_run_one(s, g, input, strlen(input), options, options ? strlen(options) : 0, &r);
  restore_signals(&old);
  if (err) throw_af(err, "");
  return wait_run(r);
}

/* af_run(graph bytea, input jsonb [, options jsonb]) */
Datum af_run_bytea(PG_FUNCTION_ARGS) {
  bytea* graph;
  if (PG_ARGISNULL(0) || PG_ARGISNULL(1)) PG_RETURN_NULL();
  graph = PG_GETARG_BYTEA_PP(0);
  return run(fcinfo, (const uint8_t*)VARDATA_ANY(graph), VARSIZE_ANY_EXHDR(graph));
}

/* af_run(graph_path text, input jsonb [, options jsonb]): reads a file of
 * the server, so it needs pg_read_server_files, as COPY FROM a file does. */
Datum af_run_path(PG_FUNCTION_ARGS) {
  text* path;
  uint8_t* data = NULL;
  size_t len = 0;
  af_error_t* err;
  Datum out;
  if (PG_ARGISNULL(0) || PG_ARGISNULL(1)) PG_RETURN_NULL();
  if (!has_privs_of_role(GetUserId(), ROLE_PG_READ_SERVER_FILES))
    ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                    errmsg("af_run(text): reading a graph file of the server needs the privileges of "
                           "pg_read_server_files"),
                    errhint("Pass the .afg bytes as bytea instead, e.g. from a table of graphs.")));
  path = PG_GETARG_TEXT_PP(0);
  err = afsql_read_file(VARDATA_ANY(path), VARSIZE_ANY_EXHDR(path), &data, &len);
  if (err) throw_af(err, "");
  PG_TRY();
  { out = run(fcinfo, data, len); }
  PG_FINALLY();
  { free(data); }
  PG_END_TRY();
  return out;
}

/* af_run_agg's state, in the aggregate's memory context: the group's graph
 * and options (from its first row) and every row's input as JSON text. */
typedef struct agg_state {
  bytea* graph;
  char* options;
  char** rows;
  size_t* lens;
  size_t n, cap;
} agg_state;

/* af_run_agg step: (state, graph bytea, input jsonb [, options jsonb]) */
Datum af_run_agg_step(PG_FUNCTION_ARGS) {
  MemoryContext aggcontext, old;
  agg_state* st = PG_ARGISNULL(0) ? NULL : (agg_state*)PG_GETARG_POINTER(0);
  bytea* graph;
  if (!AggCheckCallContext(fcinfo, &aggcontext))
    ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED), errmsg("af_run_agg_step called outside an aggregate")));
  if (PG_ARGISNULL(1) || PG_ARGISNULL(2))
    ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
                    errmsg("af_run_agg: row %zu: the graph and the input must not be NULL", st ? st->n + 1 : 1)));
  graph = PG_GETARG_BYTEA_PP(1);
  old = MemoryContextSwitchTo(aggcontext);
  if (!st) {
    st = palloc0(sizeof *st);
    st->graph = (bytea*)PG_DETOAST_DATUM_COPY(PG_GETARG_DATUM(1));
    if (PG_NARGS() > 3 && !PG_ARGISNULL(3)) st->options = jsonb_text(PG_GETARG_JSONB_P(3));
    st->cap = 64;
    st->rows = palloc(st->cap * sizeof *st->rows);
    st->lens = palloc(st->cap * sizeof *st->lens);
  } else if (VARSIZE_ANY_EXHDR(graph) != VARSIZE_ANY_EXHDR(st->graph) ||
             memcmp(VARDATA_ANY(graph), VARDATA_ANY(st->graph), VARSIZE_ANY_EXHDR(graph)) != 0) {
    ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                    errmsg("af_run_agg: every row of a group must give the same graph")));
  }
  if (st->n == st->cap) {
    st->cap *= 2;
    st->rows = repalloc(st->rows, st->cap * sizeof *st->rows);
    st->lens = repalloc(st->lens, st->cap * sizeof *st->lens);
  }
  st->rows[st->n] = jsonb_text(PG_GETARG_JSONB_P(2));
  st->lens[st->n] = strlen(st->rows[st->n]);
  st->n++;
  MemoryContextSwitchTo(old);
  PG_RETURN_POINTER(st);
}

/* af_run_agg final: one batched run over the group's rows. */
Datum af_run_agg_final(PG_FUNCTION_ARGS) {
  agg_state* st = PG_ARGISNULL(0) ? NULL : (agg_state*)PG_GETARG_POINTER(0);
  afsql_session* s;
  afsql_graph* g;
  afsql_run* r = NULL;
  af_error_t* err;
  sigset_t old;
  if (!st || st->n == 0) return DirectFunctionCall1(jsonb_in, CStringGetDatum("[]"));
  s = get_session();
  g = get_graph(s, (const uint8_t*)VARDATA_ANY(st->graph), VARSIZE_ANY_EXHDR(st->graph));
  old = block_signals();
  err = afsql_run_batch(s, g, (const char* const*)st->rows, st->lens, st->n, st->options,
                        st->options ? strlen(st->options) : 0, &r);
  restore_signals(&old);
  if (err) throw_af(err, "");
  return wait_run(r);
}
