/* afsql: what libaf's SQL extensions (hosts/sqlite, hosts/postgres)
 * share. A session is one connection's libaf context, its provider routes
 * and the graphs it has loaded; a run is a program started on it that the
 * host waits for on a file descriptor, so it can watch its own cancel
 * signals while the run is in flight and cancel it. Only af.h is used: the
 * extensions prove the C API is enough for a real host.
 *
 * Threads: nothing here calls back into the host. A run's completion is
 * signalled by a libaf thread writing one byte to a socket, which the
 * host's own thread waits for. Not thread-safe per session (one connection runs one
 * statement at a time, on one thread). */
#ifndef AFSQL_H
#define AFSQL_H

#include <af/af.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct afsql_session afsql_session;
typedef struct afsql_graph afsql_graph;
typedef struct afsql_run afsql_run;

af_error_t* afsql_session_new(afsql_session** out);
/* Frees the session: cancels its runs in flight and joins libaf's threads. */
void afsql_session_free(afsql_session* s);

/* Routes LM calls whose model matches pattern to a new provider of type
 * "echo", "openai" or "replay" with its options (JSON object text; empty =
 * defaults), as `af run --provider TYPE --provider-options JSON`. */
af_error_t* afsql_route(afsql_session* s, const char* pattern, size_t pattern_len, const char* type,
                        size_t type_len, const char* options, size_t options_len);
/* Every route of a JSON object {"pattern": {"type": ..., "options": {...}}}. */
af_error_t* afsql_route_all(afsql_session* s, const char* json, size_t len);

/* A regular file's bytes (a FIFO, device or directory is IO at once, never
 * waited on; at most 1 GiB). *data is owned: free(). */
af_error_t* afsql_read_file(const char* path, size_t path_len, uint8_t** data, size_t* len);

/* The graph of .afg bytes, loaded and checked once per session and content
 * (later calls with the same bytes find it): borrowed from the session.
 * Corrupt bytes are FORMAT/VERSION as af_ir_from_bytes gives them. */
af_error_t* afsql_graph_get(afsql_session* s, const uint8_t* data, size_t len, afsql_graph** out);

/* Starts the graph on one input: input_json is a JSON array of its
 * positional inputs (as `af run --input`). options_json (NULL/empty = none)
 * is a JSON object of run options: {"timeout_ms": N}. */
af_error_t* afsql_run_one(afsql_session* s, afsql_graph* g, const char* input_json, size_t input_len,
                          const char* options_json, size_t options_len, afsql_run** out);
/* Starts one batched run over rows (each a JSON array of the graph's
 * positional inputs, as for afsql_run_one): the graph is batched over every
 * input at first use (af_batch) and compiled once; each item that fails
 * becomes {"error": {"code", "name", "message"}} in its place and the others
 * complete (AF_RUN_ITEM_ERRORS). A row that is not a JSON array of inputs
 * shaped like the program's is INVALID_ARGUMENT naming the row (1-based). */
af_error_t* afsql_run_batch(afsql_session* s, afsql_graph* g, const char* const* rows,
                            const size_t* row_lens, size_t n, const char* options_json,
                            size_t options_len, afsql_run** out);
/* Readable once the run has finished (poll it, or hand it to the host's
 * wait primitive). */
int afsql_run_fd(const afsql_run* r);
/* Cancels the run (it ends with CANCELLED, in-flight LM requests aborted). */
void afsql_run_cancel(afsql_run* r);
/* Waits for the run's end (at once when its fd is readable or it was
 * cancelled), frees r, and on success gives its output as NUL-terminated
 * JSON (a batch: the array of the items' outputs, in row order). Owned:
 * af_bytes_free. */
af_error_t* afsql_run_finish(afsql_run* r, af_bytes_t* json);

/* "NAME: message" of an error (e.g. "FORMAT: graph bytes: bad magic"),
 * cut to fit buf (always NUL-terminated). */
void afsql_error_text(const af_error_t* e, char* buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* AFSQL_H */
