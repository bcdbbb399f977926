/*
 * af.h — the libaf C API (C99). The only public header of libaf.
 *
 * libaf turns LM programs into data: a host function is traced once into an
 * IR of primitives (format, concat, match, ...), which can be printed,
 * transformed and called from C, Rust, Go, C# or any language with a C FFI.
 *
 * Conventions (read once, they hold for every function below):
 *  - Every fallible function returns af_error_t*: NULL on success, otherwise
 *    an owned error the caller frees with af_error_free. Out-parameters are
 *    written last and are set to NULL (or 0) when a call fails.
 *  - Strings in are (const char* utf8, size_t len): not necessarily
 *    NUL-terminated, validated as UTF-8 (INVALID_ARGUMENT otherwise).
 *    Strings out are borrowed (pointer + length valid while the owning handle
 *    lives) or owned af_bytes_t released with af_bytes_free.
 *  - Handles are opaque; af_X_free releases one and accepts NULL. Values,
 *    IRs, programs and providers are reference counted (af_X_clone adds a
 *    reference, each af_X_free drops one). Contexts, walks, futures, cancel
 *    tokens and host requests have one owner and no clone: share them by
 *    pointer and free them once.
 *  - Callbacks take (fn, user_data[, destroy]); a callback reports failure by
 *    returning an af_error_t* (made with af_error_new), which libaf chains as
 *    the cause of an AF_ERR_CALLBACK error. Callbacks must not unwind (no C++
 *    exceptions, no longjmp) across libaf.
 *  - No function exits, aborts or lets an exception escape.
 *  - Options. Configuration is one JSON object given as text (options_json,
 *    len; NULL/0 = every default): contexts, providers, provider limits.
 *    One reader takes every such object: an unknown key, a wrong kind or a
 *    value out of range is INVALID_ARGUMENT naming the key, and
 *    af_options_json describes every key (name, kind, default, range, doc).
 *    Why JSON text rather than one setter function per option (wasmtime's
 *    wasm_config_t) or typed structs: an option added later needs no new
 *    symbol and no change in any binding (onnxruntime's session config
 *    entries keep to strings for the same reason), every language already
 *    writes JSON, and nested options (plan_cache) stay one value. What JSON
 *    cannot carry, callbacks, handles and out-buffers, goes in a versioned
 *    struct (struct_size first; zero it, set struct_size, then the fields
 *    needed): af_run_options_t, af_function_options_t and
 *    af_trace_options_t (value masks), each the single way its call takes
 *    options. (af_cse_ex's struct, which held one flag, is deprecated for
 *    af_cse_with's JSON.) An LM call's sampling params (af_lm_call_ex) are
 *    a value, not options: they are recorded in the IR as the call's params.
 *
 * Thread safety: handles may move between threads. A const handle (value,
 * IR, program, provider) may be used from several threads at once. An af_context_t serializes
 * its own mutations internally. Tracing is per thread: operations called on
 * the thread that runs an af_trace callback are recorded into that trace;
 * the trace callback runs on the thread that called af_trace.
 */
#ifndef AF_AF_H
#define AF_AF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Windows: libaf's own build defines AF_BUILDING_LIBRARY (dllexport); a
 * program linking the static library defines AF_STATIC (the CMake target
 * af::af_static does it). */
#if defined(_WIN32) && defined(AF_BUILDING_LIBRARY)
#define AF_API __declspec(dllexport)
#elif defined(_WIN32) && !defined(AF_STATIC)
#define AF_API __declspec(dllimport)
#elif defined(_WIN32)
#define AF_API
#elif defined(__GNUC__)
#define AF_API __attribute__((visibility("default")))
#else
#define AF_API
#endif

/* ======================================================================= */
/* Versioning                                                              */
/* ======================================================================= */

#define AF_VERSION_MAJOR 0
#define AF_VERSION_MINOR 1
#define AF_VERSION_PATCH 0
#define AF_VERSION_STRING "0.1.0"
/* Bumped only if the ABI ever breaks (symbols are only ever added). */
#define AF_ABI_VERSION 1u

/* "MAJOR.MINOR.PATCH" of the loaded library; static storage. */
AF_API const char* af_version(void);
/* AF_ABI_VERSION of the loaded library. */
AF_API uint32_t af_abi_version(void);

/* ======================================================================= */
/* Errors                                                                  */
/* ======================================================================= */

#define AF_ERR_INVALID_ARGUMENT 1 /* bad input, structure, kind, template */
#define AF_ERR_NOT_FOUND 2        /* switch key, host function, provider, route */
#define AF_ERR_SCHEMA 3           /* structured output did not validate */
#define AF_ERR_FORMAT 4           /* corrupt or unverifiable graph bytes */
#define AF_ERR_VERSION 5          /* graph needs a newer library */
#define AF_ERR_PROVIDER 6         /* LM or host call failed after retries */
#define AF_ERR_TIMEOUT 7
#define AF_ERR_CANCELLED 8
#define AF_ERR_CALLBACK 9 /* a host callback returned an error (see cause) */
#define AF_ERR_IO 10
#define AF_ERR_OUT_OF_MEMORY 11
#define AF_ERR_INTERNAL 12

typedef struct af_error af_error_t;

/* The AF_ERR_* code of e (AF_ERR_INVALID_ARGUMENT if e is NULL). */
AF_API int32_t af_error_code(const af_error_t* e);
/* The name of an AF_ERR_* code without its prefix ("NOT_FOUND"; "UNKNOWN"
 * for a code this libaf does not define): static storage, never NULL. The
 * one table of names: errors as values ({"error": {"name"}}), the C++
 * wrapper, the bindings and the database hosts all use it. */
AF_API const char* af_error_code_name(int32_t code);
/* NUL-terminated UTF-8 message, owned by e ("" if e is NULL). */
AF_API const char* af_error_message(const af_error_t* e);
/* The error that caused e (owned by e), or NULL if none. */
AF_API const af_error_t* af_error_cause(const af_error_t* e);
/* A new owned error, for callbacks to return. msg need not be NUL-terminated;
 * invalid UTF-8 is replaced by U+FFFD. Returns NULL only if out of memory. */
AF_API af_error_t* af_error_new(int32_t code, const char* msg, size_t len);
/* af_error_new carrying payload, a binding's own object (its exception)
 * that libaf keeps, opaque, through every error made from this one: when a
 * callback returns it, it is the cause of the error libaf reports (wrapped
 * in CALLBACK, crossing threads and runs), and af_error_payload of that
 * cause gives payload back, so a binding re-raises its own exception
 * object. destroy(payload) (may be NULL) runs exactly once, on whatever
 * thread frees the last error holding it; also when this returns NULL
 * (out of memory). A NULL payload makes a plain af_error_new error.
 * Convention, so that code sharing a process can tell whose a payload is: a
 * payload points to memory that starts with a 64-bit tag chosen by its
 * owner (the bindings each use one; look only at payloads you recognise). */
AF_API af_error_t* af_error_new_with(int32_t code, const char* msg, size_t len, void* payload,
                                     void (*destroy)(void*));
/* The payload e carries (af_error_new_with), or NULL (also for NULL e);
 * borrowed: valid while e is. Only e itself is looked at: walk
 * af_error_cause to find a payload further down. */
AF_API void* af_error_payload(const af_error_t* e);
/* Frees e and its causes. Accepts NULL. */
AF_API void af_error_free(af_error_t* e);

/* ======================================================================= */
/* Bytes                                                                   */
/* ======================================================================= */

/* An owned byte buffer returned by libaf. Text outputs (JSON, IR text, DOT)
 * are UTF-8 and also NUL-terminated (data[len] == 0, not counted in len). */
typedef struct af_bytes {
  uint8_t* data;
  size_t len;
} af_bytes_t;

/* Frees b->data and zeroes b. Accepts NULL and an already-zeroed b. */
AF_API void af_bytes_free(af_bytes_t* b);

/* ======================================================================= */
/* Handles                                                                 */
/* ======================================================================= */

/* Every handle type, declared once here so that any section can name any
 * other; each is described in its own section (ownership: see the
 * conventions at the top). */
typedef struct af_context af_context_t;           /* Context */
typedef struct af_value af_value_t;               /* Values */
typedef struct af_ir af_ir_t;                     /* Tracing; IRs */
typedef struct af_program af_program_t;           /* Programs and runs */
typedef struct af_future af_future_t;             /* Programs and runs */
typedef struct af_cancel af_cancel_t;             /* Programs and runs */
typedef struct af_walk af_walk_t;                 /* Walking an IR */
typedef struct af_provider af_provider_t;         /* LM providers */
typedef struct af_lm_request af_lm_request_t;     /* LM providers (host) */
typedef struct af_host_request af_host_request_t; /* Context (async host functions) */

/* ======================================================================= */
/* Context: options, host functions, routes, run-time scopes               */
/* ======================================================================= */

/* A context owns what a program needs at run time: host functions, LM
 * providers and routes, the scheduler, and the plan cache. Values and IRs are
 * not tied to one context (promises of a lazy context are: see below). */

/* An eager context with default options: af_context_new_with(NULL, 0, out). */
AF_API af_error_t* af_context_new(af_context_t** out);
/* A context with options, a JSON object (NULL/0 = defaults):
 *   {"lazy": false,
 *    "plan_cache": {"max_entries": 1024, "max_bytes": 268435456, "dir": "",
 *                   "max_disk_bytes": 1073741824},
 *    "host_threads": 8, "eager_timeout_ms": 0, "host_wait_ms": 0,
 *    "eval_timeout_ms": 0}
 * "lazy": true makes operations outside a trace record promises instead of
 * running (see "Lazy evaluation" below). "plan_cache" bounds the context's
 * cache of compiled programs (least recently used out first) and, with
 * "dir", keeps them on disk too, shared between processes (created if
 * missing; files 0600 in a directory made 0700; past "max_disk_bytes" the
 * least recently used files are removed). A program larger than "max_bytes"
 * runs but is not kept. "eval_timeout_ms" (lazy contexts; 0 = no limit)
 * bounds every evaluation a read or af_eval starts (af_eval_with sets its
 * own). "host_threads" (1..256) bounds the pool that runs blocking host
 * functions (af_register_function_blocking). "eager_timeout_ms" (0 = no
 * limit) bounds how long an operation made eagerly, outside any run, waits
 * for an asynchronous result — af_host_call of an async or blocking host
 * function, af_lm_call / af_lm_schema_call on an eager context: past it the
 * request is cancelled (af_host_request_cancelled reports 1, an LM transfer
 * is aborted; a late answer is ignored) and the call fails with TIMEOUT. A
 * sync host function runs on the calling thread and is not interrupted.
 * "host_wait_ms" (0 = no limit) bounds how long af_context_free waits for
 * blocking host functions still running: past it, it returns and abandons
 * their threads — each call goes on until it returns (its result is
 * dropped; it must not use the freed context), and the function's destroy
 * runs after the last such call returns, on that call's thread. INVALID_ARGUMENT: malformed
 * JSON, unknown key, wrong kind, value out of range (max_entries >= 1); IO: dir cannot be created or written. */
AF_API af_error_t* af_context_new_with(const char* options_json, size_t len,
                                       af_context_t** out);
/* Every option libaf reads from JSON options text, described as JSON
 * (owned; see "Options" at the top):
 *   {"af_context_new_with": [key...],
 *    "af_provider_new": {"echo": [key...], "openai": [...], ...},
 *    "af_provider_set_options": [key...], "af_cse_with": [key...],
 *    "af_lm_call_ex": [key...]}
 * each key {"key", "kind": "int" | "number" | "str" | "bool" | "object" |
 * "list", "default" (null: none), "min" and "max" (where bounded; a list's
 * count its items), "doc", and "keys" for an object read key by key}.
 * af_provider_<type>_new takes its type's keys (af_provider_new the same
 * plus "type"). "af_lm_call_ex" lists the sampling params every LM call
 * takes (af_lm_schema_call_ex and af_lm_tool_call too; the latter also
 * "tool_choice"). It is made by the code that reads and checks them, so it
 * is exactly what they accept; docs/OPTIONS.md is generated from it.
 * Provider types this build lacks are left out.
 * INVALID_ARGUMENT: out NULL. */
AF_API af_error_t* af_options_json(af_bytes_t* out);
/* Frees ctx: cancels its runs in flight and joins its threads (a blocking
 * host function still running is waited for, at most "host_wait_ms" when
 * set; a sync host function runs on libaf's threads and must return: one
 * that may hang belongs in af_register_function_blocking). Promises of a
 * lazy ctx not yet evaluated can no longer be (reading one is
 * INVALID_ARGUMENT), and observable operations still pending are not run:
 * call af_eval(ctx, NULL, 0) first to run them. Evaluations in progress on
 * other threads (cutting, compiling or running) are cancelled, and
 * af_context_free returns only once none of them touches ctx: their readers
 * get CANCELLED. Never call it from a libaf callback. */
AF_API void af_context_free(af_context_t* ctx);

/* ctx's counters as JSON (owned):
 *   {"programs": {"compiles"},
 *    "plan_cache": {"hits", "misses", "disk_hits", "evictions", "entries",
 *                   "bytes", "not_kept", "disk_files", "disk_bytes",
 *                   "disk_evictions"},
 *    "lazy": {"recorded", "evaluated", "dropped", "pending", "evaluations",
 *             "timed_out", "cancelled"}}
 * (the lazy counters stay 0 on an eager context; bytes are estimated;
 * "not_kept" counts programs over "max_bytes"; the disk counters count what
 * this context saw of its "dir": files and bytes it holds by its last scan
 * and its own writes, files it removed). "evaluations" counts evaluations
 * that ran something, "timed_out" / "cancelled" those stopped by a deadline
 * or a cancel (af_context_free included). "compiles" counts the programs
 * compiled for ctx: af_compile and af_ir_call (plan cache misses), lazy
 * evaluations, walks, an af_program_load of a graph saved without a plan,
 * control flow run outside a program (its sub-IRs, once each), and the one
 * form a run may add: a scan around LM calls unrolled for a count it has not
 * met (a few counts kept per scan). A program keeps everything else it runs
 * (switch branches batched over their items, the sliced form of a large
 * batch), so running it compiles nothing after its first run; a saved
 * program holds its plan and its sliced form's, so loading it compiles
 * nothing either (its sub-IRs are lowered with it, as af_compile does). */
AF_API af_error_t* af_context_stats(const af_context_t* ctx, af_bytes_t* out);

/* A host function: receives the positional argument trees (borrowed for the
 * call; a Zero arrives as null) and returns its result in *out (ownership
 * passes to libaf) or an error (made with af_error_new; it becomes the cause
 * of an AF_ERR_CALLBACK error). May be called from any thread. */
typedef af_error_t* (*af_host_fn)(void* user_data, const af_value_t* const* args, size_t n,
                                  af_value_t** out);
/* Registers fn under name on ctx (replacing an earlier function of that
 * name). result_kinds: the result's structure with kind names as leaves
 * ("str", "int", "float", "bool", "list<str>", ...), e.g. {"title": "str",
 * "n": "int"}; it is recorded in IRs, so a saved graph runs wherever the same
 * name is registered. destroy(user_data) (may be NULL) runs exactly once: when
 * the function is replaced or ctx is freed, or before this call returns an
 * error. INVALID_ARGUMENT: empty name, NULL fn, bad result_kinds. */
AF_API af_error_t* af_register_function(af_context_t* ctx, const char* name, size_t name_len,
                                        af_host_fn fn, void* user_data, void (*destroy)(void*),
                                        const af_value_t* result_kinds);
/* A blocking host function: like af_register_function, but each call runs
 * on the context's host pool instead of a scheduler thread, so slow tools
 * (network, disk, subprocesses) never starve the engine. The pool runs at
 * most "host_threads" calls at once (a context option, default 8; the rest
 * wait their turn); a call whose run was cancelled before it started is
 * skipped. Same errors as af_register_function. */
AF_API af_error_t* af_register_function_blocking(af_context_t* ctx, const char* name,
                                                 size_t name_len, af_host_fn fn, void* user_data,
                                                 void (*destroy)(void*),
                                                 const af_value_t* result_kinds);

/* An async host function starts its work and returns at once; it finishes
 * the call later, from any thread, through req, and no libaf thread waits
 * meanwhile. args are borrowed for the duration of fn only (af_value_clone
 * what the work needs later). fn owns req: it must finish it once with
 * af_host_request_complete or af_host_request_fail, and release it with
 * af_host_request_free (in either order). Releasing a request that was never
 * finished fails the call with CALLBACK, so a lost request never hangs a run.
 * fn runs on a libaf thread and must not block for long. */
typedef void (*af_host_async_fn)(void* user_data, const af_value_t* const* args, size_t n,
                                 af_host_request_t* req);
/* Registers an async host function (see af_register_function for name,
 * result_kinds, destroy and errors). Outside a trace on an eager context,
 * af_host_call waits for the request to finish, at most the context's
 * "eager_timeout_ms" when set (af_context_new_with): then TIMEOUT. */
AF_API af_error_t* af_register_function_async(af_context_t* ctx, const char* name,
                                              size_t name_len, af_host_async_fn fn,
                                              void* user_data, void (*destroy)(void*),
                                              const af_value_t* result_kinds);
/* Registration with options: one call for every kind of host function.
 * Zero the struct, set struct_size = sizeof(af_function_options_t) and the
 * fields you need (a program built against an older af.h passes a smaller
 * struct_size and gets the defaults of the fields it lacks).
 *
 * Effects. A host function is effectful unless registered with
 * AF_FUNCTION_PURE. A call of an effectful function (sends, writes,
 * charges, reads a clock) runs exactly once per run, in compiled and lazy
 * mode alike: compile never removes it when its result is unused (dce),
 * never merges two equal calls (cse, even with merge_nondeterministic),
 * memoize never answers it, and a lazy context runs it even when no one
 * reads its result (af_eval(ctx, NULL, 0) or the next evaluation). In a
 * batched program it runs once per item when its arguments depend on the
 * item, and once for the whole batch when they do not (as any equation). A pure function (same arguments, same result, no
 * effects) lets libaf drop a call whose result is unused (lazy: never read),
 * merge equal calls and answer one from a memoize scope. Effectful is the
 * default because its mistake is cheaper: a pure function taken for
 * effectful costs a call that was not needed, an effectful one taken for
 * pure silently loses what it does. The flag is recorded in each call's
 * equation when it is traced or recorded ("pure": true among its params,
 * "effects" in af_ir_eqn_json) and saved in .afg files: a loaded graph keeps
 * the flags it was traced with, whatever the loading host registers under
 * that name. Graphs saved before the flag existed call effectful functions. */
#define AF_FUNCTION_PURE 1u     /* no effects: calls may be dropped, merged, memoized */
#define AF_FUNCTION_BLOCKING 2u /* fn runs on the host pool (af_register_function_blocking) */
typedef struct af_function_options {
  uint32_t struct_size; /* sizeof(af_function_options_t) */
  uint32_t flags;       /* AF_FUNCTION_* */
  /* Exactly one of fn (sync, or blocking with AF_FUNCTION_BLOCKING) and
   * async_fn (see af_register_function_async). */
  af_host_fn fn;
  af_host_async_fn async_fn;
  void* user_data;
  void (*destroy)(void*); /* runs exactly once, as for af_register_function */
  const af_value_t* result_kinds; /* borrowed; as for af_register_function */
} af_function_options_t;
/* Registers the function options describes under name (see
 * af_register_function for names, result_kinds and destroy; options is
 * borrowed). INVALID_ARGUMENT: options NULL or struct_size too small
 * (nothing is read beyond it, so destroy does not run); and, after
 * destroy(user_data) has run: unknown flag bits, neither or both of fn and
 * async_fn, AF_FUNCTION_BLOCKING with async_fn, and the errors of
 * af_register_function. */
AF_API af_error_t* af_register_function_with(af_context_t* ctx, const char* name, size_t name_len,
                                             const af_function_options_t* options);

/* 1 if the run no longer wants the result (cancelled, timed out, failed
 * elsewhere): the host may stop working, but must still finish and free req.
 * Finishing such a request is accepted and ignored. 0 otherwise or for NULL. */
AF_API int af_host_request_cancelled(const af_host_request_t* req);
/* Finishes the call with result (borrowed: the caller keeps its reference).
 * INVALID_ARGUMENT, naming the function: result does not have the declared
 * structure and kinds (the call then fails with the same error), result is
 * NULL, or req was already finished (the second finish changes nothing). */
AF_API af_error_t* af_host_request_complete(af_host_request_t* req, const af_value_t* result);
/* Fails the call with err (owned, consumed): it becomes the cause of an
 * AF_ERR_CALLBACK error naming the function; NULL err fails with CALLBACK.
 * INVALID_ARGUMENT if req was already finished. */
AF_API af_error_t* af_host_request_fail(af_host_request_t* req, af_error_t* err);
/* Releases req (NULL is a no-op). If it was never finished, the call fails
 * with CALLBACK. */
AF_API void af_host_request_free(af_host_request_t* req);

/* Routes models matching model_pattern to provider (the context takes a
 * reference). '*' matches any run of characters, '?' one: "*", "gpt-*".
 * An exact name beats any pattern; among patterns the one with more literal
 * characters wins; on a tie the later route. Re-routing a pattern replaces
 * it. A model without a route fails with NOT_FOUND naming the model. */
AF_API af_error_t* af_context_route(af_context_t* ctx, const char* model_pattern, size_t len,
                                    af_provider_t* provider);
/* Routes model_pattern to n >= 1 providers in order (the context takes a
 * reference to each): a request that fails with PROVIDER or TIMEOUT after
 * a provider's own retries is sent to the next one (each attempt appears
 * in the run's profile on its provider's track). The error after the last
 * names the model and has the earlier providers' errors as causes.
 * INVALID_ARGUMENT for n == 0 or a NULL provider. */
AF_API af_error_t* af_context_route_fallback(af_context_t* ctx, const char* model_pattern,
                                             size_t len, af_provider_t* const* providers,
                                             size_t n);

/* Run-time scopes (docs/SEMANTICS.md §4). A scope belongs to the calling
 * thread: it applies to every run that thread starts from ctx while the
 * scope is open (captured when the run starts, sub-runs of its control flow
 * included), never to runs started by other threads. Pushes and pops pair
 * up per thread (a pop without a push on this thread is INVALID_ARGUMENT).
 *  - collect: every checkpoint of `collection` that runs appends its value
 *    under its key; af_collect_pop returns {key: [values in program order]}
 *    of the innermost collect scope (owned; keys by first hit).
 *  - inject: values is {key: [values...]}: a checkpoint of `collection`
 *    whose key has a queued value yields it instead of its input, one per
 *    hit, in program order; an empty queue lets the checkpoint run normally.
 *    To keep that order, the parts of a run that hit a queued key run one
 *    after another (other work still overlaps). Inside a trace the
 *    injected value becomes a literal. INVALID_ARGUMENT if values is not a
 *    dict of lists, or (when used) an injected value's structure or kinds
 *    differ from the checkpoint's.
 *  - memoize: identical calls (same primitive, params and input values) run
 *    once: a call is answered from the scope when an identical one already
 *    finished in it (identical calls in flight at the same moment, such as
 *    equal items of one batch, may each run); checkpoints bypass it.
 * Program order (docs/SEMANTICS.md §4), however the executor schedules the
 * work: runs in the order they started; within a run, the order of the
 * equations of the program that runs (a pushforward has each primal
 * checkpoint right before its tangent, a pullback the primal checkpoints
 * before the cotangent ones, in backward order), and inside control flow
 * batch items in item order and loop passes in iteration order. */
AF_API af_error_t* af_collect_push(af_context_t* ctx, const char* collection, size_t len);
AF_API af_error_t* af_collect_pop(af_context_t* ctx, af_value_t** collected);
AF_API af_error_t* af_inject_push(af_context_t* ctx, const char* collection, size_t len,
                                  const af_value_t* values);
AF_API af_error_t* af_inject_pop(af_context_t* ctx);
AF_API af_error_t* af_memoize_push(af_context_t* ctx);
AF_API af_error_t* af_memoize_pop(af_context_t* ctx);

/* ======================================================================= */
/* Values                                                                  */
/* ======================================================================= */

/* An immutable, reference-counted tree: null, bool, int (int64), float
 * (double), str (UTF-8), list, dict (string keys; insertion order kept for
 * display, sorted key order used when flattening). Inside a trace a value may
 * be (or contain) a placeholder: a traced leaf whose content is only known
 * when the program runs. Lists and dicts nest at most 512 levels deep (a
 * leaf is 0, a list of leaves 1): building or parsing anything deeper is
 * INVALID_ARGUMENT, so every walk over a value stays within the stack. */

#define AF_KIND_NULL 0
#define AF_KIND_BOOL 1
#define AF_KIND_INT 2
#define AF_KIND_FLOAT 3
#define AF_KIND_STR 4
#define AF_KIND_LIST 5
#define AF_KIND_DICT 6
#define AF_KIND_PLACEHOLDER 7 /* a traced leaf (only seen inside a trace) */

/* Value constructors: af_value_<kind>_new. Values belong to no context
 * (they may be made anywhere, e.g. in an af_host_fn, and passed to any
 * context), so the constructors take none.
 * The older af_value_<kind>(ctx, ...) forms (af_value_from_json for
 * af_value_json_new) are deprecated: they ignore ctx (which may be NULL)
 * and stay so that compiled programs keep linking. */

/* Parses exact JSON: integers stay int, numbers with '.', 'e' stay float.
 * INVALID_ARGUMENT for malformed JSON, invalid UTF-8, duplicate keys,
 * integers outside int64 or nesting deeper than 512. */
AF_API af_error_t* af_value_json_new(const char* json, size_t len, af_value_t** out);
/* Compact JSON; floats shortest round-trip ("2.0", "1e+30"). INVALID_ARGUMENT
 * for NaN/infinity and for placeholders (their content is unknown while
 * tracing: use af_switch / af_while_loop or a static input). */
AF_API af_error_t* af_value_to_json(const af_value_t* v, af_bytes_t* out);

AF_API af_error_t* af_value_null_new(af_value_t** out);
AF_API af_error_t* af_value_bool_new(int32_t b, af_value_t** out);
AF_API af_error_t* af_value_int_new(int64_t i, af_value_t** out);
AF_API af_error_t* af_value_float_new(double f, af_value_t** out);
/* INVALID_ARGUMENT for invalid UTF-8, or s NULL with len > 0. */
AF_API af_error_t* af_value_str_new(const char* s, size_t len, af_value_t** out);
/* A list of the items (each gets a new reference; the caller keeps its own).
 * INVALID_ARGUMENT if it would nest deeper than 512 (also for dicts). */
AF_API af_error_t* af_value_list_new(const af_value_t* const* items, size_t n, af_value_t** out);
/* A dict of n entries in this order; INVALID_ARGUMENT on a duplicate key. */
AF_API af_error_t* af_value_dict_new(const char* const* keys, const size_t* key_lens,
                                     const af_value_t* const* values, size_t n, af_value_t** out);

/* Deprecated (above): the same as the _new forms; ctx is ignored. */
AF_API af_error_t* af_value_from_json(af_context_t* ctx, const char* json, size_t len,
                                      af_value_t** out);
AF_API af_error_t* af_value_null(af_context_t* ctx, af_value_t** out);
AF_API af_error_t* af_value_bool(af_context_t* ctx, int32_t b, af_value_t** out);
AF_API af_error_t* af_value_int(af_context_t* ctx, int64_t i, af_value_t** out);
AF_API af_error_t* af_value_float(af_context_t* ctx, double f, af_value_t** out);
AF_API af_error_t* af_value_str(af_context_t* ctx, const char* s, size_t len, af_value_t** out);
AF_API af_error_t* af_value_list(af_context_t* ctx, const af_value_t* const* items, size_t n,
                                 af_value_t** out);
AF_API af_error_t* af_value_dict(af_context_t* ctx, const char* const* keys,
                                 const size_t* key_lens, const af_value_t* const* values,
                                 size_t n, af_value_t** out);

/* AF_KIND_* of v; -1 if v is NULL. Never reads a placeholder's content: a
 * traced leaf is AF_KIND_PLACEHOLDER; a promise leaf (lazy contexts) has the
 * kind its content will have (AF_KIND_LIST for a batched value). */
AF_API int32_t af_value_kind(const af_value_t* v);
/* Number of items of a list or dict; INVALID_ARGUMENT for other kinds. */
AF_API af_error_t* af_value_len(const af_value_t* v, size_t* out);
/* Item i of a list, or the value of the i-th dict entry (insertion order). */
AF_API af_error_t* af_value_index(const af_value_t* v, size_t i, af_value_t** out);
/* The value under key in a dict; NOT_FOUND naming the key if absent. */
AF_API af_error_t* af_value_key(const af_value_t* v, const char* key, size_t len,
                                af_value_t** out);
/* The i-th key of a dict (insertion order), borrowed from v. */
AF_API af_error_t* af_value_key_at(const af_value_t* v, size_t i, const char** key,
                                   size_t* len);
/* Leaf reads: INVALID_ARGUMENT naming the kinds on a mismatch; reading a
 * placeholder is INVALID_ARGUMENT (see af_value_to_json). af_value_get_str
 * borrows the bytes from v (not NUL-terminated in general). */
AF_API af_error_t* af_value_get_str(const af_value_t* v, const char** s, size_t* len);
AF_API af_error_t* af_value_get_int(const af_value_t* v, int64_t* out);
AF_API af_error_t* af_value_get_float(const af_value_t* v, double* out);
AF_API af_error_t* af_value_get_bool(const af_value_t* v, int32_t* out);

/* Adds a reference: returns v (NULL if v is NULL). */
AF_API af_value_t* af_value_clone(const af_value_t* v);
AF_API void af_value_free(af_value_t* v);

/* ======================================================================= */
/* Lazy evaluation and the plan cache                                      */
/* ======================================================================= */

/* On a lazy context (af_context_new_with {"lazy": true}) every operation made
 * outside a trace (af_format, af_concat, af_match, af_stop_gradient,
 * af_depends, af_checkpoint, af_switch, af_while_loop, af_host_call,
 * af_lm_call, af_lm_schema_call, and af_ir_call / af_program_call, whose
 * equations are recorded one by one) is recorded into the context's pending
 * graph and returns a promise: an ordinary af_value_t* whose structure and
 * leaf kinds are known at once (af_value_kind, af_value_len of containers;
 * kind errors are reported at once), and whose content is not. A promise is
 * a valid input of any later operation. Inside a trace, operations record
 * into the trace as always; a promise used there is evaluated and becomes a
 * constant of the traced program. Eager contexts behave as they always did.
 *
 * Reading: af_value_to_json, af_value_get_*, and af_value_len / af_value_index
 * / af_value_key of a promise leaf (a batched list) evaluate what they read;
 * so does passing a promise to an eager context's operation or call.
 * Evaluating cuts the smallest part of the pending graph the promises need
 * into one program whose inputs are the concrete values the operations were
 * given, and runs it on the dataflow executor: independent LM calls are in
 * flight together. Results are written back into the promises: later reads
 * are free. af_eval evaluates several values as one run.
 *
 * Dropped: an operation whose promises are all freed before it ran, and that
 * no live promise needs, is dropped and never runs (no LM call is made).
 * Observable operations are never dropped: checkpoints, depends and host
 * function calls are held by the context until they run, and every
 * evaluation on the context (a read or af_eval) also runs the ones recorded
 * before it; af_eval(ctx, NULL, 0) runs just them.
 *
 * Errors: a failing operation fails every promise that depends on it;
 * reading one returns an error with the failure's code whose message names
 * the primitive and where it was recorded ("lm_call (operation #3 recorded
 * on its context, name triage/draft, tags [triage])", with af_name_push and
 * af_tag_push on a lazy context outside a trace), and whose cause is the
 * original error. Other promises of the same evaluation are unaffected.
 *
 * Threads: several threads may record and read on one lazy context at once;
 * a promise is evaluated once even if several threads read it (the others
 * wait for that evaluation). Tag scopes are per thread.
 *
 * Lifetimes: a promise holds what it needs to be evaluated (its operation,
 * their inputs), not its context: free the context only after reading what
 * you need (af_context_free above). Bindings make a promise keep its
 * context alive. An evaluation keeps everything it uses alive until it
 * returns. Dropping the last promise of a long chain of pending operations
 * frees it without recursion.
 *
 * Deadlines: every evaluation can be stopped. Reads and af_eval use the
 * context's "eval_timeout_ms" (0 = none); af_eval_with takes a run's
 * options (timeout_ms, cancel, ...) for one evaluation. An evaluation
 * stopped by its deadline or its cancel fails the operations it was running
 * with TIMEOUT / CANCELLED (reading their promises returns that error, later
 * too) and returns it; a reader only waiting for another thread's
 * evaluation stops waiting with that error and leaves it running.
 *
 * Re-entrancy: a host function called by an evaluation may read promises
 * of its context: evaluated ones are read; pending ones are evaluated by a
 * nested evaluation. Reading one that the evaluation calling it is running
 * (its own result's inputs, say) would wait for itself: it fails at once
 * with INVALID_ARGUMENT instead (an async host function must not wait for
 * one from another thread either: that is not detected).
 *
 * Identity: structures are equal for the plan cache only when nothing
 * observable differs: literals compare exactly (0.0 and -0.0 differ, as do
 * dicts whose keys are in another order), as in af_ir_equal and af_ir_hash.
 *
 * Memory: an evaluation keeps, of the operations it runs, only the results a
 * live promise (or a pending operation) still needs; a chain of N pending
 * operations evaluates in O(N) memory, and concat appends in place.
 *
 * The plan cache (every context has one): af_compile, af_ir_call and the
 * lazy evaluator take compiled programs from it. Its key is a structural
 * hash (in memory, a faster one than af_ir_hash that never leaves the
 * process), always confirmed by structural equality (af_ir_equal), so equal
 * structures with other input data share one plan and a hash collision never
 * returns a wrong plan. With a "dir", a program missing in memory is looked
 * for in DIR/<hash>.afp, <hash> being af_ir_hash in 16 hex digits (loaded
 * through every check of af_program_load and compared with the IR; a
 * corrupt, truncated or foreign file is a miss and is rewritten) and
 * compiled programs are written there atomically. */

/* Evaluates the promises among values (deep; concrete values are ignored),
 * plus ctx's pending observable operations, as one run. Failed operations do
 * not fail af_eval: reading their promises returns their errors.
 * INVALID_ARGUMENT: a NULL entry, or a promise of another context. */
AF_API af_error_t* af_eval(af_context_t* ctx, af_value_t* const* values, size_t n);
/* af_eval with a run's options for this one evaluation (NULL = af_eval):
 * timeout_ms (0 = the context's "eval_timeout_ms"), cancel, flags
 * (AF_RUN_KEEP_GOING is always on; AF_RUN_ITEM_ERRORS, AF_RUN_PROFILE),
 * progress, stream, profile_path, summary and max_value_bytes as for
 * af_program_call_with. Returns TIMEOUT or CANCELLED when the deadline or
 * the cancel stopped the evaluation (its operations' promises then hold that
 * error). On an eager ctx (nothing pending there) the promises of lazy
 * contexts among values are evaluated by their own contexts, with their
 * defaults. INVALID_ARGUMENT: as af_eval, bad options. */
struct af_run_options; /* af_run_options_t, defined under "Programs and runs" */
AF_API af_error_t* af_eval_with(af_context_t* ctx, af_value_t* const* values, size_t n,
                                const struct af_run_options* options);
/* 1 if reading v runs nothing: v is concrete, or every promise in it has
 * been evaluated (with a result or an error); else 0 (also for NULL and for
 * traced placeholders). */
AF_API int32_t af_value_ready(const af_value_t* v);

/* ======================================================================= */
/* Tracing                                                                 */
/* ======================================================================= */

/* An IR: a traced program of primitives, immutable once built. Inputs are a
 * list of positional trees; the output is one tree (a function with several
 * outputs returns a list). */

/* The function being traced. inputs are placeholders shaped like the
 * examples (static leaves are the example values themselves). Return the
 * output tree in *out (owned by libaf afterwards) or an error (CALLBACK). */
typedef af_error_t* (*af_trace_fn)(void* user_data, af_context_t* ctx,
                                   const af_value_t* const* inputs, size_t n_inputs,
                                   af_value_t** out);

/* Traces fn once on placeholders shaped like examples (only their structure
 * and leaf kinds matter, except for static leaves). static_mask: a bool tree
 * that is a prefix of the list of inputs (true = static: the leaf becomes a
 * literal and calls must pass an equal value); NULL = all dynamic.
 * Errors: INVALID_ARGUMENT (mask not a prefix, unsupported leaf kind, output
 * not built from the inputs), CALLBACK (fn failed; its error is the cause),
 * and any error of an operation fn called. */
AF_API af_error_t* af_trace(af_context_t* ctx, af_trace_fn fn, void* user_data,
                            const af_value_t* const* examples, size_t n_examples,
                            const af_value_t* static_mask, af_ir_t** out);

/* Options of af_trace_with: zero the struct, set struct_size =
 * sizeof(af_trace_options_t), then the fields you need.
 *
 * list_mask traces inputs as lists of any length (docs/SEMANTICS.md §2): a
 * bool tree that is a prefix of the list of inputs, like static_mask; a true
 * leaf marks the example at its place, which must be a list of leaves of one
 * kind (str, int, float or bool; nested lists of them for a list of lists).
 * The traced function receives one placeholder for the whole list (kind
 * AF_KIND_PLACEHOLDER; its length cannot be read while tracing), the IR's
 * input is list<T> (list<list<T>> ...), and calls pass a list of any length:
 * only the example's item kind and depth matter. Such a placeholder is what
 * a batched IR (af_batch) takes, so calling one on it records the batched
 * equations once, whatever the length. Why a mask rather than marker values:
 * examples stay ordinary values (the same ones af_trace takes), and the mask
 * follows static_mask and af_batch's in_axes. Calls check the list's items
 * (a wrong kind is INVALID_ARGUMENT naming the item's path, e.g. input[0][2]);
 * a batched IR inside checks that its batched lists have equal, non-zero
 * lengths. */
typedef struct af_trace_options {
  uint32_t struct_size;          /* sizeof(af_trace_options_t) */
  const af_value_t* static_mask; /* as af_trace's; NULL = every leaf dynamic */
  const af_value_t* list_mask;   /* NULL = no list of any length */
} af_trace_options_t;
/* af_trace with options (NULL = af_trace with static_mask NULL). Errors as
 * af_trace, and INVALID_ARGUMENT naming the input path for a list mask that
 * is not a bool prefix of the inputs or that marks a value that is not a
 * non-empty list of one leaf kind, or a list of any length also marked
 * static. */
AF_API af_error_t* af_trace_with(af_context_t* ctx, af_trace_fn fn, void* user_data,
                                 const af_value_t* const* examples, size_t n_examples,
                                 const af_trace_options_t* options, af_ir_t** out);

/* 1 if the calling thread is inside an af_trace callback, else 0. */
AF_API int32_t af_is_tracing(void);

/* Tags: while pushed, every equation recorded by the innermost trace of this
 * thread carries the tag (nested scopes union). INVALID_ARGUMENT outside a
 * trace; af_tag_pop without a matching push is INVALID_ARGUMENT.
 * The tag "urgent" is the priority hint: when work competes (a provider's
 * max_in_flight, the executor's ready queue), urgent equations and
 * everything they depend on start before untagged ones (mark the calls a
 * person waits for). Tags are the user's metadata on equations;
 * af_ir_eqn_json lists them. */
AF_API af_error_t* af_tag_push(af_context_t* ctx, const char* tag, size_t len);
AF_API af_error_t* af_tag_pop(af_context_t* ctx);

/* Name paths: while pushed, every equation recorded by the innermost trace
 * of this thread (or, outside a trace, operation recorded by a lazy
 * context) carries the open names, outermost first: its name path, like a
 * call stack of the program's modules and steps ("triage/classify"). It is
 * kept by every transform, saved in .afg files, part of af_ir_hash /
 * af_ir_equal (as tags are), and shown by af_ir_to_text (@name="a/b"),
 * af_ir_to_dot, af_ir_eqn_json ("name_path") and profiles (event titles
 * and args); an equation that fails words its error "in a/b: ...". An IR
 * called (inlined) inside a named scope gets the scope's path before each
 * equation's own; an equation inside a sub-IR (a branch, a loop body) is
 * named relative to the equation holding it, and runs report the joined
 * path (profiles) or each level in turn (errors: "in route: in billing:
 * ...").
 * Why not tags: tags are an unordered set that unions when scopes nest and
 * when IRs are inlined, and they change how a program runs (the "urgent"
 * hint, what providers see). A name path is one ordered path per equation
 * that composes by prefixing and never changes execution.
 * INVALID_ARGUMENT: outside a trace on an eager context, an empty name, a
 * name holding '/' (push one name per level), af_name_pop without a push,
 * a traced function returning with a name scope open. */
AF_API af_error_t* af_name_push(af_context_t* ctx, const char* name, size_t len);
AF_API af_error_t* af_name_pop(af_context_t* ctx);

/* Fold: between push and pop, operations of the innermost trace run at
 * trace time and their results become literals. An operation whose input
 * is a placeholder is INVALID_ARGUMENT ("cannot fold <prim>: ..."). Outside
 * a trace both are no-ops (operations run at once there anyway). */
AF_API af_error_t* af_fold_push(af_context_t* ctx);
AF_API af_error_t* af_fold_pop(af_context_t* ctx);

/* ======================================================================= */
/* Operations (recorded inside a trace, evaluated outside)                 */
/* ======================================================================= */

/* Python-style template: "{}" automatic, "{0}" positional, "{name}" named,
 * "{{" / "}}" escapes. Non-string arguments are stringified as JSON ("2.5",
 * "true", "[1,2]"; a list or dict argument may hold placeholders). named: a
 * dict of named arguments, or NULL. INVALID_ARGUMENT: unbalanced braces,
 * automatic and manual numbering mixed, missing positional or named
 * argument, more than 10000 fields (checked when the operation is recorded,
 * not when it runs; a loaded graph's templates get the same checks). */
AF_API af_error_t* af_format(af_context_t* ctx, const char* tmpl, size_t tmpl_len,
                             const af_value_t* const* args, size_t n_args,
                             const af_value_t* named, af_value_t** out);
/* Concatenation of strings (every argument must be a str). */
AF_API af_error_t* af_concat(af_context_t* ctx, const af_value_t* const* args, size_t n,
                             af_value_t** out);
/* Equality of two leaves: true iff both have the same kind and value
 * ("a" vs "a"; 1 vs 1); a non-str operand is not an error (match("1", 1) is
 * false). Containers are INVALID_ARGUMENT. */
AF_API af_error_t* af_match(af_context_t* ctx, const af_value_t* a, const af_value_t* b,
                            af_value_t** out);
/* Identity on a tree; tangents and cotangents through it are Zero. */
AF_API af_error_t* af_stop_gradient(af_context_t* ctx, const af_value_t* v, af_value_t** out);
/* value, produced only after every dep exists (keeps deps alive in DCE). */
AF_API af_error_t* af_depends(af_context_t* ctx, const af_value_t* value,
                              const af_value_t* const* deps, size_t n_deps, af_value_t** out);
/* Identity that marks v as checkpoint `key` of `collection` (the hook of
 * collect/inject). Never removed by DCE nor merged by CSE. */
AF_API af_error_t* af_checkpoint(af_context_t* ctx, const af_value_t* v, const char* key,
                                 size_t key_len, const char* collection, size_t collection_len,
                                 af_value_t** out);

/* switch: runs the branch named by key (a str) on the operands (positional
 * trees). branches[i] is named names[i] (name_lens[i] bytes); every branch
 * takes the operands' structure and kinds, and all return one structure
 * (output kinds must agree). Recorded inside a trace, evaluated outside.
 * INVALID_ARGUMENT: no branches, duplicate names, a branch that does not take
 * the operands, branches returning different structures or kinds, a key
 * that is not a str, branches nesting sub-IRs 64 deep already (sub-IRs nest
 * at most 64 levels, the limit of saved graphs). NOT_FOUND (when it runs): a key no branch has — the
 * message lists the branch names. */
AF_API af_error_t* af_switch(af_context_t* ctx, const af_value_t* key, const char* const* names,
                             const size_t* name_lens, const af_ir_t* const* branches,
                             size_t n_branches, const af_value_t* const* operands,
                             size_t n_operands, af_value_t** out);
/* while_loop: state = init; while cond(state) is true and fewer than
 * max_iters iterations ran, state = body(state); returns state (max_iters 0
 * returns init). cond and body take one positional input, the state; cond
 * returns a bool, body returns the state's structure and kinds.
 * INVALID_ARGUMENT: cond / body do not take init, cond does not return one
 * bool, body changes the state structure or a leaf's kind, cond or body
 * nesting sub-IRs 64 deep already (as af_switch). */
AF_API af_error_t* af_while_loop(af_context_t* ctx, const af_ir_t* cond, const af_ir_t* body,
                                 const af_value_t* init, uint64_t max_iters, af_value_t** out);
/* scan: carry = init; for each item of xs in order (last to first when
 * reverse is nonzero), [carry, y] = body(carry, item); *out is [carry, ys]:
 * the last carry and, for each y leaf, the list of its values by item
 * index — a rolling summary over a document's chunks, a refinement that
 * threads a draft through a list. xs is a list, or a tree whose leaves are
 * lists of one length (the item is the tree of their i-th items). body
 * takes two positional inputs, the carry and an item, and returns
 * [next carry, y] with the carry's structure and kinds. Inside a trace it
 * records one equation with every rule (batch maps it over items; push and
 * pull thread tangents / feedback through the carry); af_ir_cost_json
 * counts one pass of body (how many items come is known only when it
 * runs). With no items it returns [init, ys of empty lists] and runs
 * nothing. INVALID_ARGUMENT: body does not take (init, an item of xs), does
 * not return [carry, y], changes the carry's structure or a kind, a leaf of
 * xs is not a list; when it runs: the lists of xs differ in length. */
AF_API af_error_t* af_scan(af_context_t* ctx, const af_ir_t* body, const af_value_t* init,
                           const af_value_t* xs, int32_t reverse, af_value_t** out);

/* Calls host function name on args (positional trees): recorded inside a
 * trace (as host_call), called at once outside. NOT_FOUND: name is not
 * registered on ctx (listing the registered names). CALLBACK: the function
 * returned an error (its error is the cause). INVALID_ARGUMENT: its result
 * does not have the declared structure and kinds. Under pushforward /
 * pullback a host function is not differentiable (wrap it in
 * af_stop_gradient): transforming a program where a tangent or cotangent
 * reaches it is INVALID_ARGUMENT. */
AF_API af_error_t* af_host_call(af_context_t* ctx, const char* name, size_t name_len,
                                const af_value_t* const* args, size_t n, af_value_t** out);

/* LM calls. messages: a list of {"role": str, "content": str} (roles must be
 * concrete; contents may be traced values); model: a str (may be traced).
 * Content parts: a message's content may instead be a list of parts, in
 * order: {"type":"text","text":str}, {"type":"image","url":str} (https://,
 * http:// or a data: URL) or {"type":"image","media_type":"image/png",
 * "data":str} (base64; media types image/png, image/jpeg, image/gif,
 * image/webp, concrete). Each text, url and data may be traced; the parts'
 * kinds are part of the equation. openai and anthropic send images (user
 * messages only: an image elsewhere is INVALID_ARGUMENT when the request is
 * made); ollama sends base64 data (a URL image is INVALID_ARGUMENT); echo
 * answers from the text parts (joined by blank lines); host providers see
 * the parts as the message's "content" list. An image URL that is not
 * http(s) or data:, or data that is not base64, is INVALID_ARGUMENT naming
 * the part when its request is made. Images get no tangent or feedback; a
 * traced text part gets its own feedback call under pullback.
 * Inside a trace these record an equation; outside they make one blocking
 * request through the provider routed for the model. Errors:
 * INVALID_ARGUMENT (malformed messages or schema), NOT_FOUND (no route for
 * the model, naming it), PROVIDER, TIMEOUT, SCHEMA.
 * af_lm_call: the reply text (a str). */
AF_API af_error_t* af_lm_call(af_context_t* ctx, const af_value_t* messages,
                              const af_value_t* model, af_value_t** out);

/* Sampling params of one call: params is NULL or a dict with any of
 *   "temperature" (number, 0..2), "top_p" (number, > 0 and <= 1),
 *   "max_tokens" (int >= 1), "seed" (int), "stop" (1 to 16 non-empty str).
 * They are part of the recorded equation (saved in .afg, printed, hashed;
 * static: no traced values) and travel with each request, overriding a
 * provider's defaults of the same name (the openai provider's "extra");
 * host providers see them as the request's "params". INVALID_ARGUMENT for
 * an unknown key, a wrong kind or a value out of range. */
AF_API af_error_t* af_lm_call_ex(af_context_t* ctx, const af_value_t* messages,
                                 const af_value_t* model, const af_value_t* params,
                                 af_value_t** out);

/* af_lm_schema_call: structured output. schema is a tree (lists and dicts)
 * whose leaves are node descriptions, dicts with a "type":
 *   {"type":"str",   "min":0, "max":80, "pattern":"^[a-z]+$"}  length in code points
 *   {"type":"int",   "min":1, "max":10}
 *   {"type":"float", "min":0.0, "max":1.0}
 *   {"type":"bool"}
 *   {"type":"enum",  "values":["yes","no"]}     values of one kind (str, int, bool)
 *   {"type":"dict",  "fields":{...}}  {"type":"list", "items":[...]}  (a subtree)
 * Every key but "type" is optional; any node or subtree may carry
 * "doc":"..." (its description). A dict without "type" is a container.
 * Example: {"answer": {"type":"str","max":200,"doc":"one sentence"},
 *           "score": {"type":"int","min":1,"max":10}}.
 * Bounds are checked when the schema is given (INVALID_ARGUMENT naming the
 * path, e.g. "$.answer"): str min/max in [0, 64 Mi] with min <= max, int and
 * float min <= max, enum values non-empty, distinct and of one kind, and a
 * pattern of at most 1024 bytes that compiles. A pattern is RE2 syntax
 * (ECMAScript-like, without lookaround or backreferences), searched
 * unanchored in linear time; a reply string over 1 MiB cannot match one.
 * The provider receives the equivalent JSON Schema (containers as objects
 * with every property required and no others; a list's properties are
 * "0","1",...; a single-node schema travels as {"value": ...}). The reply is
 * parsed and validated: SCHEMA error naming the JSON path ("$.score"), what
 * was expected and what was found. The result has the schema's structure
 * with one leaf per node (str, int, float, bool; an enum's kind). */
AF_API af_error_t* af_lm_schema_call(af_context_t* ctx, const af_value_t* messages,
                                     const af_value_t* model, const af_value_t* schema,
                                     af_value_t** out);
/* af_lm_schema_call with sampling params (as af_lm_call_ex). */
AF_API af_error_t* af_lm_schema_call_ex(af_context_t* ctx, const af_value_t* messages,
                                        const af_value_t* model, const af_value_t* schema,
                                        const af_value_t* params, af_value_t** out);

/* Tool calling: an LM call that offers tools the model may call.
 * tools: a list of {"name": str, "description": str (optional),
 * "parameters": a schema tree as af_lm_schema_call's whose root is a
 * container (the arguments object; leave it out for no arguments)}; names
 * are distinct [A-Za-z0-9_-]{1,64}. Static, like a schema.
 * history: a str (may be traced) holding the JSON array of the turns after
 * messages — what the model said and the tools answered so far — as
 * af_tool_results builds it; "" or "[]" for none.
 * The result is a dict:
 *   "called":    bool, true when the model called tools (the reply is not final)
 *   "text":      str, the model's text ("" when it only called tools)
 *   "names":     list of str, the tools called, in order
 *   "arguments": list of str, each call's arguments as compact JSON text
 *   "turn":      str, the model's turn as a history message (JSON)
 * Each call's name and arguments are checked against its tool; a reply that
 * fails (an unknown tool, arguments that do not match) is re-asked like an
 * invalid structured reply, then SCHEMA. params: sampling params as
 * af_lm_call_ex (may be NULL). Host providers see the tools in the request
 * JSON ("tools") and answer with {"content": str|null, "tool_calls":
 * [{"id","name","arguments"}]} (docs/SEMANTICS.md, tools). Not
 * differentiable: pushforward / pullback reaching it is INVALID_ARGUMENT. */
AF_API af_error_t* af_lm_tool_call(af_context_t* ctx, const af_value_t* messages,
                                   const af_value_t* history, const af_value_t* model,
                                   const af_value_t* tools, const af_value_t* params,
                                   af_value_t** out);

/* The history after a tool-calling turn: history (a str, as above) with
 * turn (af_lm_tool_call's "turn") and one tool message per str of results
 * answering the turn's calls in order. With a final turn (no calls) and no
 * results it appends the turn alone. Recorded inside a trace (all three may
 * be traced). INVALID_ARGUMENT: not one result per call, a malformed
 * history or turn. */
AF_API af_error_t* af_tool_results(af_context_t* ctx, const af_value_t* history,
                                   const af_value_t* turn, const af_value_t* results,
                                   af_value_t** out);

/* ======================================================================= */
/* IRs: calling, inspecting, transforming                                  */
/* ======================================================================= */

/* Runs ir on inputs (n must equal the number of positional inputs; each must
 * match the traced structure and leaf kinds; static leaves must be equal).
 * Inside a trace, the IR's equations are inlined into the trace instead.
 * INVALID_ARGUMENT names the input path, the expected and the found kind. */
AF_API af_error_t* af_ir_call(af_context_t* ctx, const af_ir_t* ir,
                              const af_value_t* const* inputs, size_t n, af_value_t** out);

/* Text form (format documented in docs/IR_TEXT.md; stable across versions). */
AF_API af_error_t* af_ir_to_text(const af_ir_t* ir, af_bytes_t* out);
/* Graphviz DOT: inputs as boxes, outputs as double octagons, one edge per
 * dependency; switch branches and loop bodies as clusters (each distinct
 * sub-IR once) reached by dashed edges named by the branch or param; a
 * host call labelled with its function's name (docs/IR_TEXT.md). */
AF_API af_error_t* af_ir_to_dot(const af_ir_t* ir, af_bytes_t* out);

/* Number of equations (0 if ir is NULL). */
AF_API size_t af_ir_eqn_count(const af_ir_t* ir);
/* Primitive name of equation i (static storage); NULL if out of range. */
AF_API const char* af_ir_eqn_prim(const af_ir_t* ir, size_t i);
/* Number of positional inputs of ir (0 if ir is NULL). */
AF_API size_t af_ir_input_count(const af_ir_t* ir);
/* Structural hash: equal IRs (same equations, params, literals, structure,
 * kinds, tags, name paths) hash equal whatever their origin. A defined
 * function of the IR: the same in every process, build and platform (it may
 * key on-disk caches); it changes only with a new libaf major version.
 * Equality is exact, as fine as anything that prints: floats by their bits
 * (0.0 is not -0.0), dicts and dict structures in their written key order.
 * (In 0.1 this became so: IRs holding a dict written out of key order or a
 * negative zero or NaN hash differently from before; others kept theirs.) */
AF_API uint64_t af_ir_hash(const af_ir_t* ir);
/* 1 if a and b are structurally equal (exactly: see af_ir_hash), else 0. */
AF_API int32_t af_ir_equal(const af_ir_t* a, const af_ir_t* b);

AF_API af_ir_t* af_ir_clone(const af_ir_t* ir);
AF_API void af_ir_free(af_ir_t* ir);

/* ---- Inspection and graph queries (format: docs/INSPECT.md)
 *
 * Why JSON: an equation has inputs (variables or literals, each with a
 * kind), outputs, params, tags and sub-IRs; one accessor per field would
 * take dozens of functions in every binding. Each call below returns one
 * self-describing JSON document instead, which every host parses with its
 * own JSON library, and the set can grow fields without new symbols. Only
 * what a JSON document cannot carry gets a function: nested IRs
 * (af_ir_sub, a handle) and new IRs (af_ir_slice). Tags (af_tag_push)
 * and the name path (af_name_push) are the user metadata of an equation;
 * they appear in its "tags" and "name_path".
 *
 * Equations are numbered as af_ir_eqn_prim numbers them; variables by the
 * ids of the text form (%3 is 3). Paths name subtrees of the input or output
 * structure ("0/answer": segments joined by '/', a list index or a dict key
 * each; "" the whole) and sub-IRs of an equation ("body", "branches/urgent").
 * An out-of-range index or an unknown path is INVALID_ARGUMENT (NOT_FOUND
 * for a sub-IR), never a crash. *out is owned by the caller (af_bytes_free).
 */

/* The whole IR: inputs and outputs (each with its path, var or literal and
 * kind), a topological order of the equations, every variable (kind,
 * producer, consumers) and every equation as af_ir_eqn_json gives it. */
AF_API af_error_t* af_ir_json(const af_ir_t* ir, af_bytes_t* out);
/* Equation i: prim, in (each {"var","kind"} or {"lit","kind"}), out, the
 * input/output structures, deps (the equations it reads directly), effects
 * (true: it runs even when nothing reads it — an effectful host call, a
 * checkpoint, or a sub-IR holding one; see AF_FUNCTION_PURE), params
 * (values as JSON; IR params as {"sub": path} / {"subs": [paths]}), subs,
 * tags, name_path, and sched when af_sched set one. */
AF_API af_error_t* af_ir_eqn_json(const af_ir_t* ir, size_t i, af_bytes_t* out);
/* Variable var: {"var","kind","producer": eqn index or null for an input,
 * "consumers": [eqn indices], "output": bool}. */
AF_API af_error_t* af_ir_var_json(const af_ir_t* ir, uint32_t var, af_bytes_t* out);
/* The sub-IR at `path` of equation i (a loop body, a switch branch, a map
 * body), as an owned handle (af_ir_free): inspect it like any IR. */
AF_API af_error_t* af_ir_sub(const af_ir_t* ir, size_t i, const char* path, size_t path_len,
                             af_ir_t** out);

/* af_ir_related_json flags: ancestors (the default) or descendants; DEEP
 * also lists the equations inside the sub-IRs of those found. */
#define AF_IR_ANCESTORS 0u
#define AF_IR_DESCENDANTS 1u
#define AF_IR_DEEP 2u
/* The equations equation i transitively reads (ancestors) or that read it
 * (descendants): {"eqns": [sorted indices]}, and with AF_IR_DEEP also
 * "nested": ["3/body/0", ...], every equation inside their sub-IRs (on
 * every path to a shared sub-IR: more than 2^20 paths, or an answer of more
 * than 64 MiB, is INVALID_ARGUMENT, found before anything is built).
 * Without AF_IR_DEEP the query stops at sub-IR boundaries. */
AF_API af_error_t* af_ir_related_json(const af_ir_t* ir, size_t i, uint32_t flags, af_bytes_t* out);
/* af_ir_related_json with the largest answer accepted, in bytes (0 = the
 * default, 64 MiB): INVALID_ARGUMENT names the answer's size past it. */
AF_API af_error_t* af_ir_related_json_with(const af_ir_t* ir, size_t i, uint32_t flags, uint64_t max_bytes,
                                           af_bytes_t* out);
/* The slice of ir that computes the outputs at paths `outputs` from the
 * inputs at paths `inputs`: a new IR whose output is the list of the chosen
 * output subtrees and whose input is the list of the chosen input subtrees
 * (inputs NULL: ir's own inputs, so the slice takes the same arguments as
 * ir). Only the equations those outputs need are kept. INVALID_ARGUMENT
 * naming the output and the missing input when the chosen inputs do not
 * suffice. Each *_lens may be NULL for NUL-terminated paths. */
AF_API af_error_t* af_ir_slice(const af_ir_t* ir, const char* const* outputs, const size_t* output_lens,
                               size_t n_outputs, const char* const* inputs, const size_t* input_lens,
                               size_t n_inputs, af_ir_t** out);
/* Dry-run LM cost from the IR alone, for `batch` examples (>= 1):
 * {"batch", "total": {"calls", "models": {model: calls}}, "critical_path":
 * {"calls", "models"}}. A model that is not a literal counts as "dynamic".
 * The total is per example times batch (a call over batched inputs or in a
 * map body counts once per example); the critical path is the longest
 * chain of calls one example waits through. Loops count max_iters passes;
 * of alternatives (switch branches) the costliest counts. */
AF_API af_error_t* af_ir_cost_json(const af_ir_t* ir, int64_t batch, af_bytes_t* out);

/* Transforms are IR -> IR rewrites (docs/SEMANTICS.md §4). Each returns a new,
 * owned IR (free with af_ir_free) made of registered primitives: it prints,
 * transforms again (every transform accepts every other's output) and runs
 * with af_ir_call. The input IR is not modified. A symbolic Zero (no
 * tangent, no feedback) reaches the caller as JSON null.
 * Errors: INVALID_ARGUMENT (bad in_axes / out_used, a primitive that has no
 * rule for the transform, e.g. a host function on the differentiated path,
 * a result nesting sub-IRs more than 64 deep — batch wraps equations in a
 * map — or a transform building more than 64 times the program's size, at
 * least 2^20 variables and equations: a pullback of sub-IRs shared in a fan
 * needs exponentially many residuals); NULL ctx / ir / out is
 * INVALID_ARGUMENT. Every transform, like every pass over an IR (hash,
 * equality, validation, printing, cost, compile, save), works on the graph
 * of distinct sub-IRs: a sub-IR used in many places is handled once. */

/* batch (vmap). in_axes: a bool tree that is a prefix of the list of
 * positional inputs (true = batched, false or null = shared); NULL = every
 * input. Each leaf under `true` arrives as a list holding its value for each
 * batch item, and every output leaf comes back as such a list (outputs that
 * do not depend on a batched input are repeated). At run time the batched
 * lists must have one equal, non-zero length (INVALID_ARGUMENT naming both
 * lengths, or "empty"). Static input leaves are never batched; with no
 * batched input the result is the same program. A run over more than 1 024
 * items runs in slices whose LM stages overlap, with the same result
 * (docs/SEMANTICS.md §4 "Large batches"; not while the run streams or keeps
 * going, nor inside a collect or inject scope). */
AF_API af_error_t* af_batch(af_context_t* ctx, const af_ir_t* ir, const af_value_t* in_axes,
                            af_ir_t** out);
/* pushforward (jvp). The result takes two positional inputs (primals,
 * tangents) — tangents shaped like the primals, of the same kinds, null
 * meaning Zero (values given for static inputs are ignored) — and returns
 * [outputs, output_tangents], null where a tangent is Zero. */
AF_API af_error_t* af_pushforward(af_context_t* ctx, const af_ir_t* ir, af_ir_t** out);
/* pullback (vjp). The result takes (primals, output_cotangent) — the
 * cotangent shaped like the output — and returns [outputs,
 * input_cotangents], shaped like the primals, null where nothing flows.
 * Feedback is text: the cotangent of every leaf (str, int, float or bool) is
 * a str or null (Zero: no feedback, also for a literal output's slot); a
 * number or bool given as feedback is INVALID_ARGUMENT naming its path
 * ("feedback must be text"). Several contributions to one input are joined
 * in the forward order of their consumers (text concatenated). The
 * backward equations read the forward's values (residuals) and never re-run
 * forward work; control flow keeps the branch taken / the loop trajectory. */
AF_API af_error_t* af_pullback(af_context_t* ctx, const af_ir_t* ir, af_ir_t** out);
/* Dead code elimination. out_used: a bool tree prefix of the output (NULL =
 * every output); outputs marked false become null. Recurses into switch
 * branches and loop bodies; checkpoints and calls of effectful host
 * functions (AF_FUNCTION_PURE) are always kept. */
AF_API af_error_t* af_dce(af_context_t* ctx, const af_ir_t* ir, const af_value_t* out_used,
                          af_ir_t** out);
/* Common subexpression elimination: identical pure equations (same
 * primitive, params, inputs, tags, name path) are merged, calls of pure host
 * functions among them; checkpoints and calls of effectful host functions
 * never are, LM calls only with af_cse_with's "merge_nondeterministic". */
AF_API af_error_t* af_cse(af_context_t* ctx, const af_ir_t* ir, af_ir_t** out);
/* af_cse with options, a JSON object (NULL/0 = defaults; af_options_json
 * describes it): {"merge_nondeterministic": false}; true merges identical LM
 * calls too (they then share one answer). INVALID_ARGUMENT: malformed
 * options, and as af_cse. */
AF_API af_error_t* af_cse_with(af_context_t* ctx, const af_ir_t* ir, const char* options_json,
                               size_t len, af_ir_t** out);

/* Deprecated (above): af_cse_with's options as a struct (NULL = defaults;
 * merge_nondeterministic nonzero merges LM calls too). */
typedef struct af_cse_options {
  uint32_t struct_size;            /* sizeof(af_cse_options_t) */
  uint32_t merge_nondeterministic; /* nonzero: merge LM calls too */
} af_cse_options_t;
AF_API af_error_t* af_cse_ex(af_context_t* ctx, const af_ir_t* ir, const af_cse_options_t* options,
                             af_ir_t** out);

/* Annotates every equation (also inside branches and bodies) with its
 * dependency level and priority (cost-weighted longest path to an output).
 * af_ir_to_text prints them (" @level=1 @priority=2"), af_ir_to_dot draws
 * one rank per level. Execution never depends on them. */
AF_API af_error_t* af_sched(af_context_t* ctx, const af_ir_t* ir, af_ir_t** out);
/* The sched annotation of equation i. INVALID_ARGUMENT if i is out of range,
 * NOT_FOUND if the IR was not scheduled. */
AF_API af_error_t* af_ir_eqn_sched(const af_ir_t* ir, size_t i, uint32_t* level, double* priority);
/* Checks an IR: SSA, arity and kinds against every primitive's rule,
 * recursively into sub-IRs. INVALID_ARGUMENT describing the first problem. */
AF_API af_error_t* af_ir_validate(const af_ir_t* ir);

/* ======================================================================= */
/* Programs and runs                                                       */
/* ======================================================================= */

/* Compiling and running programs.
 *
 * af_compile turns an IR into a program for the dataflow executor: it
 * validates the IR, drops equations whose outputs are unused (DCE), merges
 * identical pure equations (CSE; LM calls are never merged), and plans the
 * run (slots, dependency counts, priorities = longest cost-weighted path, LM
 * calls dominating). Running a program starts every equation the moment its
 * inputs exist, anywhere in the graph, and issues independent LM calls
 * concurrently under each provider's limit. All runs of one context share one
 * scheduler (at most 4 threads; requests in flight hold no thread). */

/* Compiles ir. Owned result: free with af_program_free. INVALID_ARGUMENT if
 * the IR does not validate. */
AF_API af_error_t* af_compile(af_context_t* ctx, const af_ir_t* ir, af_program_t** out);
/* Adds a reference: returns p (NULL if p is NULL). */
AF_API af_program_t* af_program_clone(const af_program_t* p);
AF_API void af_program_free(af_program_t* p);

/* A cancel token: one af_cancel_trigger cancels every run given it in its
 * options (running now or started later). Thread-safe. */
AF_API af_error_t* af_cancel_new(af_cancel_t** out);
/* Cancels the token's runs; later runs with it end at once. Idempotent. */
AF_API void af_cancel_trigger(af_cancel_t* c);
/* 1 once triggered, else 0. */
AF_API int af_cancel_triggered(const af_cancel_t* c);
/* Frees the handle; runs already started keep the token alive. */
AF_API void af_cancel_free(af_cancel_t* c);
/* Cancel scopes: from push to the matching pop, what the calling thread
 * runs on ctx ends with CANCELLED once token is triggered — a run it starts
 * (af_ir_call, af_program_call, ..._async) whose options give no cancel
 * token of their own, and an operation made outside a trace and a run that
 * waits for an asynchronous result (af_lm_call / af_lm_schema_call /
 * af_lm_tool_call on an eager context, af_host_call of an async or blocking
 * host function), noticed within 20 ms: an LM transfer is aborted, a host
 * request learns it (af_host_request_cancelled) and its late answer is
 * ignored. A sync host function runs on the calling thread and is not
 * interrupted; a lazy evaluation takes its token from af_eval_with. This is
 * how a binding lets Ctrl-C stop whatever its main thread waits for. Like
 * the run-time scopes above, a scope belongs to the calling thread and
 * pushes and pops pair up per thread. Scopes nest, and the token of each
 * open scope stops what runs inside it (an inner scope never shields from an
 * outer one: a binding's own Ctrl-C scope inside a user's scope leaves the
 * user's token working). The scope holds its own reference to the token (the handle may
 * be freed). INVALID_ARGUMENT: NULL ctx or token; a pop without a push on
 * this thread. */
AF_API af_error_t* af_cancel_scope_push(af_context_t* ctx, const af_cancel_t* token);
AF_API af_error_t* af_cancel_scope_pop(af_context_t* ctx);

/* Run options: zero the struct, set struct_size = sizeof(af_run_options_t),
 * then the fields you need. Passing NULL options means all defaults. */
#define AF_RUN_KEEP_GOING 1u /* a failure does not cancel the rest; see below */
#define AF_RUN_PROFILE 2u    /* record a profile (af_future_profile) */
#define AF_RUN_ITEM_ERRORS 4u /* per-item errors in batched programs; see below */
#define AF_RUN_SUMMARY 8u     /* record a run summary (af_future_summary_json) */

/* Progress: done and total equations. Called from libaf threads, never
 * concurrently for one run, nor once the run has finished, after each
 * equation; must be quick (it may cancel the run).
 * A run's progress_destroy and stream_destroy run once, when the run
 * finishes and before it reports completion: by the time af_program_call_with
 * returns, or af_future_wait / af_future_ready report the run done, its
 * user_data is released (a binding's callable may be collected). When the
 * callback itself ended the run (cancelled it), its destroy runs as that
 * callback returns. A run that never starts (bad inputs or options) runs
 * them before the call returns. */
typedef void (*af_progress_fn)(void* user_data, uint64_t done, uint64_t total);

/* Streaming: a piece of an LM reply as it arrives. eqn is the equation's
 * index in the program's IR (as af_ir_eqn_json numbers them; a call inside
 * a switch, loop or map reports the index of that equation), item its batch
 * item (the request's index in a batched call, the map item for a call
 * inside a map; 0 otherwise), text the next piece (UTF-8, not
 * NUL-terminated). text == NULL (len 0) means: forget what this equation and
 * item streamed so far — a transport retry, a schema re-ask or a fallback
 * provider starts the reply over. For each (eqn, item), the pieces since its
 * last reset make up the reply exactly (the text of an lm_call's result; the
 * JSON of an lm_schema_call's reply), in order; a provider that does not
 * stream (echo and replay do, in pieces or whole) delivers its reply whole.
 * A reply that fails counts for nothing (the run's error says why). Called
 * from libaf threads, never concurrently for one run and never after the
 * run has finished (finishing waits for a call in progress); must be quick
 * and must not block on the run (it may cancel it). */
typedef void (*af_stream_fn)(void* user_data, uint32_t eqn, uint64_t item, const char* text,
                             size_t len);

typedef struct af_run_options {
  uint32_t struct_size;    /* sizeof(af_run_options_t) */
  uint32_t flags;          /* AF_RUN_* */
  uint64_t timeout_ms;     /* 0 = none; the run fails with TIMEOUT */
  af_progress_fn progress; /* NULL = none */
  void* progress_user_data;
  void (*progress_destroy)(void* user_data); /* runs once, when the run finishes (above) */
  /* Where to write the profile as Chrome trace JSON (opens in Perfetto and
   * chrome://tracing): one track per engine thread, one per provider slot,
   * every equation queued -> started -> finished. Written before the run
   * reports completion; missing parent directories are created (as
   * mkdir -p). NULL/0 = no file. */
  const char* profile_path;
  size_t profile_path_len;
  /* NULL = none. af_cancel_trigger on it ends the run with CANCELLED and
   * cancels its in-flight work, from any thread (the way to stop a blocking
   * af_program_call_with). The run holds its own reference. */
  af_cancel_t* cancel;
  /* af_program_call_with only: where the run summary (see "Run summaries"
   * below) is written when the call returns — also when the run failed, as
   * its calls cost all the same; left {NULL, 0} when nothing ran (invalid
   * inputs, a call inlined into a trace). Owned by the caller
   * (af_bytes_free). NULL = none. An asynchronous call sets AF_RUN_SUMMARY
   * instead and reads af_future_summary_json (a non-NULL summary there is
   * INVALID_ARGUMENT, as is AF_RUN_SUMMARY without it here). */
  af_bytes_t* summary;
  /* NULL = no streaming. With a stream function, LM requests are made in
   * streaming mode (the openai provider reads server-sent events) and their
   * text goes to stream as it arrives; the run's result is the same as
   * without it. stream_destroy(stream_user_data) runs once, when the run
   * finishes (see af_progress_fn). */
  af_stream_fn stream;
  void* stream_user_data;
  void (*stream_destroy)(void* user_data);
  /* NULL/0 = every LM equation streams. Else only LM equations carrying this
   * tag (af_tag_push), or inside an equation of the program that carries
   * it; needs stream. */
  const char* stream_tag;
  size_t stream_tag_len;
  /* The largest value one equation may build, in bytes (a format or concat
   * result, ...; 0 = the default, 1 GiB). A primitive whose output can be
   * larger than its inputs checks it before it allocates: past it, the
   * equation fails with OUT_OF_MEMORY naming the primitive and the size. An
   * allocation that fails anywhere in a run is OUT_OF_MEMORY too, never
   * INTERNAL. (A caller built against an af.h without this field passes a
   * smaller struct_size and gets the default.) */
  uint64_t max_value_bytes;
  /* NULL/0 = none. A run journal (see "Run journals" below): a SQLite file
   * recording each LM call this run completes, committed before the call's
   * result is used; a call already recorded there by an earlier run of the
   * same program on the same inputs is answered from it without reaching
   * its provider. Created (0600) when missing, with missing parent
   * directories. Program runs only: af_eval_with refuses it
   * (INVALID_ARGUMENT). Errors at the start of the run: INVALID_ARGUMENT (a
   * journal of another program or other inputs), FORMAT (not a journal, or
   * corrupt), IO (cannot be created or opened); a write that fails later
   * fails the call it records with IO. */
  const char* journal_path;
  size_t journal_path_len;
} af_run_options_t;

/* Runs p and waits. inputs are checked as in af_ir_call; inside a trace the
 * program's equations are inlined instead. Errors: those of the equations
 * (the first failure cancels the rest, in-flight LM requests included),
 * TIMEOUT, IO (profile file). With AF_RUN_KEEP_GOING, everything that does
 * not depend on a failure completes and each failed output leaf becomes
 * {"error": {"code": N, "name": "PROVIDER", "message": "..."}}. In a batched
 * program an output leaf is the list over the items, so with keep-going alone
 * one failing item fails that whole leaf.
 * AF_RUN_ITEM_ERRORS isolates the items of a batched program (af_batch): an
 * item that fails (any code but CANCELLED) puts that error value in its place
 * in every output list, its later steps are skipped, and the other items
 * complete (their LM calls are not cancelled); the run succeeds. An item
 * whose batched input already is such an error value passes it on unrun.
 * Failures outside the per-item work (the batch's length check, run
 * TIMEOUT) still fail the run, or only their leaves with AF_RUN_KEEP_GOING
 * (the flags combine). A program with no batched part is unaffected. */
AF_API af_error_t* af_program_call(af_context_t* ctx, const af_program_t* p,
                                   const af_value_t* const* inputs, size_t n, af_value_t** out);
/* af_program_call with options (NULL = defaults). */
AF_API af_error_t* af_program_call_with(af_context_t* ctx, const af_program_t* p,
                                        const af_value_t* const* inputs, size_t n,
                                        const af_run_options_t* options, af_value_t** out);

/* A run in flight. Owned by the caller: free with af_future_free (freeing
 * does not cancel the run; it completes unobserved). */

/* Starts p on the context's scheduler and returns at once. Input errors are
 * returned here; run errors by af_future_wait. */
AF_API af_error_t* af_program_call_async(af_context_t* ctx, const af_program_t* p,
                                         const af_value_t* const* inputs, size_t n,
                                         af_future_t** out);
AF_API af_error_t* af_program_call_async_with(af_context_t* ctx, const af_program_t* p,
                                              const af_value_t* const* inputs, size_t n,
                                              const af_run_options_t* options,
                                              af_future_t** out);
/* Blocks until the run finishes; *out is its output (owned). May be called
 * again (same result). CANCELLED after af_future_cancel, TIMEOUT, or the
 * run's error. */
AF_API af_error_t* af_future_wait(af_future_t* f, af_value_t** out);
/* 1 if the run has finished (af_future_wait will not block), else 0. */
AF_API int af_future_ready(const af_future_t* f);
/* Finishes the run with CANCELLED and cancels its in-flight work (HTTP
 * transfers are aborted, queued requests dropped). No-op once finished. */
AF_API void af_future_cancel(af_future_t* f);
/* fn(user_data) runs once when the run finishes — on a libaf thread, or here
 * at once if it already has; destroy(user_data) runs once after it. fn must
 * not free the context. */
AF_API af_error_t* af_future_on_done(af_future_t* f, void (*fn)(void* user_data),
                                     void* user_data, void (*destroy)(void* user_data));
/* The run's profile as Chrome trace JSON (owned bytes); INVALID_ARGUMENT if
 * the run was started without AF_RUN_PROFILE or a profile_path. */
AF_API af_error_t* af_future_profile(const af_future_t* f, af_bytes_t* out);
/* Adds an instant event to the profile of the run calling this host
 * function: a marker on the run's timeline ("cache miss", "page 3
 * fetched"). name: UTF-8, not empty; args_json: a JSON object shown with
 * the event (NULL/0 = none). It counts when called from a host function
 * while a run that records a profile (AF_RUN_PROFILE or a profile_path)
 * calls it — a sync or blocking function's body, or an async function's
 * submit callback (not later, from another thread) — and is then an event
 * {"ph": "i", "cat": "host", "name", "args": {"eqn": the host call's equation
 * (or the control flow around it), "args": args_json}} on the calling
 * thread's track. Anywhere else (no run, an eager call, a run without a
 * profile) it does nothing and returns NULL. INVALID_ARGUMENT: name empty
 * or not UTF-8, args_json malformed or not an object. */
AF_API af_error_t* af_profile_event(const char* name, size_t name_len, const char* args_json,
                                    size_t args_len);

/* Run summaries: what a run's LM requests cost, from the provider
 * requests its equations made (those inside branches, loop bodies and map
 * items included; answers from a memoize scope make none):
 *   {"wall_ms": 312.5,
 *    "total": {"calls", "failed", "prompt_tokens", "completion_tokens",
 *              "retries", "queued_ms", "in_flight_ms", "journaled"},
 *    "models": {"<model>": {the same fields}, ...}}
 * calls: requests that finished (failed: with an error); tokens: the
 * provider's usage of each successful request, as af_provider_stats counts
 * it (OpenAI's usage block, echo's words; 0 when a provider reports none);
 * retries: attempts beyond the first (429, 5xx, timeouts); queued_ms: time
 * requests waited for a provider slot (max_in_flight); in_flight_ms: time
 * from taking a slot to the answer, summed over requests (concurrent
 * requests add up, so it may exceed wall_ms); wall_ms: the run's start to
 * its end (to now while it runs); journaled: calls answered from the run's
 * journal (af_run_options_t.journal_path), which made no request and are
 * in none of the other counts. Times in milliseconds. Fields may be added. */
/* The summary of a run started with AF_RUN_SUMMARY (owned bytes): complete
 * once the run finished, so far before. INVALID_ARGUMENT for a run started
 * without it. */
AF_API af_error_t* af_future_summary_json(const af_future_t* f, af_bytes_t* out);
AF_API void af_future_free(af_future_t* f);

/* Run journals (af_run_options_t.journal_path; docs/SEMANTICS.md "Durable
 * runs"). A journal belongs to one program and one list of inputs (their
 * hashes are stored when it is created). Each completed LM call is a row
 * keyed by a 128-bit hash of its request (model, messages, schema, sampling
 * params) and its occurrence among equal requests, holding the reply (the
 * JSON of a structured one), the model, the provider, its usage and the
 * equation's name path. Rerunning the same program on the same inputs with
 * the same journal answers every recorded call from it (as the provider
 * answered it; streamed whole) and asks the providers only the rest, so a
 * run killed at any moment resumes where it stopped. A call of an effectful
 * host function (AF_FUNCTION_PURE not set) is journaled the same way (keyed
 * by its name and arguments; its result reaches the run once its row is
 * committed), so a resumed run does not do it again; pure functions run
 * again. The file holds the replies in clear: it is created 0600. */
/* A journal's contents as JSON (owned bytes):
 *   {"program": "<hash hex>", "inputs": "<hash hex>", "calls": N,
 *    "prompt_tokens": N, "completion_tokens": N,
 *    "models": {"<model>": {"calls", "prompt_tokens", "completion_tokens"}},
 *    "host_calls": {"<function>": N}}  (effectful host calls, apart from "calls")
 * Read-only (a run may be writing it). Errors: NOT_FOUND (no such file),
 * FORMAT (not a journal, or corrupt), IO, INVALID_ARGUMENT (path not
 * UTF-8). Fields may be added. */
AF_API af_error_t* af_journal_summary_json(const char* path, size_t path_len, af_bytes_t* out);
/* Compacts a journal no run is writing: folds its write-ahead log into the
 * file and frees unused pages (the journal stays valid and resumable; to
 * forget it, delete the file and its -wal and -shm siblings). Errors as
 * af_journal_summary_json; IO when a run holds it. */
AF_API af_error_t* af_journal_compact(const char* path, size_t path_len);

/* ======================================================================= */
/* Walking an IR one equation at a time                                    */
/* ======================================================================= */

/* A stepper over an IR: the caller asks for the next equation and its input
 * values, then either lets libaf evaluate it (af_walk_eval) or supplies the
 * outputs itself (af_walk_send); when no equation is left, af_walk_outputs
 * gives the program's outputs. For debuggers and hosts that run some
 * equations themselves. */

#define AF_WALK_DONE SIZE_MAX

/* Starts a walk; inputs are checked as in af_ir_call. */
AF_API af_error_t* af_walk_new(af_context_t* ctx, const af_ir_t* ir,
                               const af_value_t* const* inputs, size_t n, af_walk_t** out);
/* The next equation: *eqn_index (AF_WALK_DONE when finished) and *inputs,
 * the equation's input tree with values (NULL when finished). Calling it again
 * before eval/send returns the same equation. */
AF_API af_error_t* af_walk_next(af_walk_t* w, size_t* eqn_index, af_value_t** inputs);
/* Evaluates the current equation with libaf's implementation. */
AF_API af_error_t* af_walk_eval(af_walk_t* w);
/* Supplies the current equation's outputs (its output tree with concrete
 * leaves of the declared kinds; INVALID_ARGUMENT otherwise). */
AF_API af_error_t* af_walk_send(af_walk_t* w, const af_value_t* outputs);
/* The program's output tree; INVALID_ARGUMENT if equations remain. */
AF_API af_error_t* af_walk_outputs(af_walk_t* w, af_value_t** out);
AF_API void af_walk_free(af_walk_t* w);

/* ======================================================================= */
/* LM providers                                                            */
/* ======================================================================= */

/* Providers: where LM requests go. A provider is reference counted and may
 * be routed in several contexts; its limits are shared by all of them.
 * Options are a JSON object (NULL/0 or "null" = defaults); unknown keys are
 * INVALID_ARGUMENT. Every provider takes "name" (profile track and error
 * messages) and these (also settable later, af_provider_set_options):
 *   "max_in_flight"        requests at once (0 = unlimited)
 *   "requests_per_minute"  0 = unlimited
 *   "tokens_per_minute"    0 = unlimited; a request counts a token per 4
 *                          bytes of its messages (+4 per message) plus its
 *                          max_tokens when it starts, corrected by the
 *                          reply's usage when it finishes (a count over 2^24
 *                          is taken as 2^24, and the correction leaves the
 *                          bucket at most one second's worth in debt: a
 *                          server claiming absurd usage cannot stall the
 *                          provider)
 *   "schema_retries"       0..10, default 0: how many times a schema call
 *                          re-asks after a reply that fails validation (the
 *                          invalid reply and the error — path, expected,
 *                          found — go back to the model as a correction
 *                          turn); the last error is returned if all fail.
 *                          Each re-ask sends the original conversation, the
 *                          last invalid reply only (its first 16 KiB, cut on
 *                          a character boundary, when it is longer) and the
 *                          correction: its size does not grow per re-ask.
 *                          A greedy model asked again would repeat itself,
 *                          so re-ask k (1, 2, ...) also steps the sampling
 *                          the openai provider sends (its "extra" with the
 *                          call's params over it): "temperature", when set,
 *                          becomes at least min(1, 0.3 k); "seed", when set,
 *                          becomes seed + k. Host providers see "reask": k
 *                          in the request (af_lm_request_json).
 * A structured reply is JSON as RFC 8259 has it, except that a raw control
 * character (U+0000..U+001F) inside a string is read as its escape (as
 * Python's json.loads(strict=False) reads it: models let raw newlines into
 * strings); anything else strict JSON refuses is a SCHEMA error.
 * Rates are spread evenly (a bucket holds one second's worth, at least one
 * request), and requests wait for them, highest priority first; they never
 * fail because of a limit. */

/* A provider from a spec naming its type: {"type": "echo" | "openai" |
 * "anthropic" | "ollama" | "replay", ...that type's options} (the options
 * documented below, and the common ones above). One constructor for every
 * built-in type, so a new type needs no new function; a host or a config
 * file can hold the whole spec. INVALID_ARGUMENT: not a JSON object, no
 * "type" or an unknown one (the message lists the known), and the type's
 * own option errors. A libaf built with -DAF_WITH_OPENAI=OFF (no libcurl)
 * has no HTTP providers: "openai", "anthropic" and "ollama" here (and
 * af_provider_openai_new, and a replay upstream) are NOT_FOUND, saying so. */
AF_API af_error_t* af_provider_new(const char* spec_json, size_t len, af_provider_t** out);
/* echo: deterministic and offline. lm_call answers "<model>|<content of the
 * last message>"; lm_schema_call the smallest valid instance of the schema,
 * or with "schema_replies": "varied" (default "smallest") an instance whose
 * enum values, bools and bounded ints are drawn from a hash of the last
 * message (different prompts take different branches, reproducibly; `af
 * demo` uses it). Options: "latency_ms" (fixed), or "latency_min_ms" + "latency_max_ms" +
 * "seed" (a latency drawn per request from a hash of the request and seed,
 * so runs are reproducible). A cancelled request ends at once for its
 * caller; echo holds it until its latency runs out, then drops it. */
AF_API af_error_t* af_provider_echo_new(const char* options_json, size_t len,
                                        af_provider_t** out);
/* openai: any OpenAI-compatible chat-completions endpoint, over libcurl.
 * Options: "base_url" (required, e.g. "https://api.openai.com/v1"; the
 * request goes to base_url + "/chat/completions"), "api_key_env" (name of the
 * environment variable holding the key, read at creation, never logged;
 * default none; with a key, a plain http:// base_url is INVALID_ARGUMENT
 * unless its host is loopback — localhost, 127.x.x.x, [::1] — or
 * "allow_insecure_http" is true), "max_in_flight" (default 16), "timeout_ms"
 * (per attempt, a streamed reply included; default 60000), "max_retries"
 * (default 3; retried: 429, 5xx, connection failures, timeouts, a stream
 * cut off before its end), "backoff_ms" (first delay, default 500,
 * doubled each retry, with jitter, capped by "backoff_max_ms", default
 * 20000; a Retry-After header wins but is clamped to backoff_max_ms, and a
 * run's deadline or cancel ends the wait; a 429 also pauses the provider's
 * other waiting requests for that delay), "extra" (an object merged into
 * every request body, e.g. {"temperature": 0}; a call's own sampling params
 * win), "structured_output": how schema calls ask for JSON — "json_schema"
 * (default: response_format {"type":"json_schema", ...strict}; OpenAI,
 * vLLM, llama.cpp's server) or "json_object" (response_format
 * {"type":"json_object","schema":...}, for llama-cpp-python's server and
 * servers like it, whose grammars ignore numeric bounds: an int range of at
 * most 64 values also goes as its "enum"; and the schema as a system
 * instruction, since that mode tells the model nothing of it). Streamed
 * runs (af_run_options_t.stream) send "stream": true and read server-sent
 * events. Failures: PROVIDER (status and a 300-byte body excerpt, after
 * retries; the key is replaced by "[redacted]" and control characters are
 * escaped; a reply body or streamed text over 64 MiB is aborted and not
 * retried, and so is a malformed event), TIMEOUT. */
AF_API af_error_t* af_provider_openai_new(const char* options_json, size_t len,
                                          af_provider_t** out);
/* anthropic (af_provider_new {"type":"anthropic", ...}): Anthropic's Messages
 * API on the openai provider's engine (same retries, timeouts, streaming,
 * key handling and failures; 529 is retried like 5xx). Options: "base_url"
 * (default "https://api.anthropic.com"; requests go to base_url +
 * "/v1/messages"), "api_key_env" (default "ANTHROPIC_API_KEY", sent as
 * x-api-key; "" = no key; unset is INVALID_ARGUMENT), "allow_insecure_http",
 * "anthropic_version" (default "2023-06-01"), "max_tokens" (sent with every
 * request; default 1024; a call's max_tokens wins), "extra" (request fields,
 * e.g. {"top_k":40}; a call's params win), "max_in_flight" (default 16),
 * "timeout_ms", "max_retries", "backoff_ms", "backoff_max_ms", and the common
 * options. System messages go to the top-level "system"; "stop" is sent as
 * stop_sequences; "seed" is not sent (the API has none). A schema call sends
 * the JSON Schema as a system instruction (no response_format); the reply is
 * validated as for any provider. A streamed run reads the API's events; an
 * "error" event fails the call with PROVIDER.
 * ollama (af_provider_new {"type":"ollama", ...}): Ollama's native chat API,
 * POST base_url + "/api/chat" (default base_url "http://127.0.0.1:11434"; no
 * key). Options: "base_url", "max_in_flight" (default 4), "timeout_ms",
 * "max_retries", "backoff_ms", "backoff_max_ms" (as openai), "extra" (model
 * options sent in "options", e.g. {"num_ctx":8192}; a call's params win),
 * and the common options. Sampling params go in "options" (max_tokens as
 * num_predict). A schema call sends the JSON Schema as "format" (small int
 * ranges also as enums) and as a system instruction. A streamed run reads
 * newline-delimited JSON; an {"error": ...} line fails the call. */
/* replay: answers from a recorded JSON Lines file (one {"key":...,
 * "content":...} per request; identical requests are answered in recorded
 * order). Options: "path" (required), "mode": "replay" (default; a request
 * not recorded is NOT_FOUND) or "record" (each request goes to "upstream",
 * a provider spec as af_provider_new takes,
 * and its answer is appended to the file, created with its missing
 * directories). */
AF_API af_error_t* af_provider_replay_new(const char* options_json, size_t len,
                                          af_provider_t** out);

/* host: the host answers. fn receives each request as an owned handle and
 * must finish it exactly once — af_lm_request_complete or af_lm_request_fail
 * — from any thread, now or later. fn runs on a libaf thread and must not
 * block for long. destroy(user_data) runs once when the provider is freed. */
typedef void (*af_provider_submit_fn)(void* user_data, af_lm_request_t* req);
AF_API af_error_t* af_provider_host_new(af_provider_submit_fn fn, void* user_data,
                                        void (*destroy)(void*), af_provider_t** out);
/* The request as JSON (owned bytes): {"model": str, "messages": [{"role",
 * "content"}...], "schema": node tree, "json_schema": JSON Schema,
 * "params": {sampling params}, "stream": true, "reask": k, "tags": [...],
 * "tools": [{"name", "description", "parameters": JSON Schema}...]} —
 * schema keys only for schema calls, "tools" only for tool calls (whose
 * messages may also carry "tool_calls" (assistant) or "tool_call_id" and
 * "name" (tool), and whose reply must be the JSON of af_lm_tool_call), the
 * others only when set ("stream" when the run streams: the host may then
 * send the reply in pieces; "reask" on a schema or tool call's k-th re-ask,
 * when the host may vary its sampling). */
AF_API af_error_t* af_lm_request_json(const af_lm_request_t* req, af_bytes_t* out);
/* 1 if the run no longer wants the answer (cancelled, timed out, failed);
 * the host may stop working on it but must still finish the handle. */
AF_API int af_lm_request_cancelled(const af_lm_request_t* req);
/* Streams a piece of the reply before completing req (which it does not
 * consume): whole UTF-8 characters, in order, from one thread at a time.
 * text NULL with len 0 starts the reply over. Ignored when the run does not
 * stream or no longer wants the answer. The reply given to
 * af_lm_request_complete is the result whatever was streamed (if it differs,
 * the run's stream is reset to it). INVALID_ARGUMENT for invalid UTF-8. */
AF_API af_error_t* af_lm_request_stream(af_lm_request_t* req, const char* text, size_t len);
/* Answers the request with the reply text (for schema calls: the JSON the
 * schema describes). Consumes req in every case. INVALID_ARGUMENT for
 * invalid UTF-8 (the request then fails with it). */
AF_API af_error_t* af_lm_request_complete(af_lm_request_t* req, const char* content, size_t len);
/* Fails the request with err (owned, consumed; its code is kept — use
 * AF_ERR_PROVIDER for a failed call — and it becomes the cause). Consumes
 * req. NULL err fails with PROVIDER. */
AF_API af_error_t* af_lm_request_fail(af_lm_request_t* req, af_error_t* err);

/* Changes a provider's limit (0 = unlimited); waiting requests start at
 * once if the new limit allows. */
AF_API af_error_t* af_provider_set_max_in_flight(af_provider_t* p, uint32_t max_in_flight);
/* Changes the options every provider takes (see "Providers" above:
 * "max_in_flight", "requests_per_minute", "tokens_per_minute",
 * "schema_retries"), e.g. {"requests_per_minute": 500}; keys not given keep
 * their values. The way to limit a host provider. INVALID_ARGUMENT for an
 * unknown key or a value out of range (nothing changes then). */
AF_API af_error_t* af_provider_set_options(af_provider_t* p, const char* options_json,
                                           size_t len);
/* Counters as JSON (owned bytes): {"submitted","started","finished",
 * "in_flight","queued","peak_in_flight","max_in_flight","prompt_tokens",
 * "completion_tokens","requests_per_minute","tokens_per_minute",
 * "rate_waits" (requests whose start a rate limit or a 429 pause held
 * back),"schema_retries"}. Tokens add up the usage of completed requests:
 * the OpenAI provider reads the response's usage block (0 when absent; a
 * stream's usage chunk); echo counts words (runs of bytes other than
 * spaces and control characters) of every message sent and of its reply;
 * host providers report none. */
AF_API af_error_t* af_provider_stats(const af_provider_t* p, af_bytes_t* out);
/* Adds a reference: returns p (NULL if p is NULL). */
AF_API af_provider_t* af_provider_clone(const af_provider_t* p);
/* Drops a reference. A provider still routed stays alive in its contexts
 * (routes hold references: re-routing its pattern or freeing the context
 * drops one). Requests still queued or in flight when the last reference
 * goes fail at once with CANCELLED ("provider NAME was freed") and the
 * provider stops their work (transfers aborted; a host provider's requests
 * report af_lm_request_cancelled and answering them is ignored). */
AF_API void af_provider_free(af_provider_t* p);

/* ======================================================================= */
/* Saved graphs                                                            */
/* ======================================================================= */

/* A saved graph (.afg) holds an IR (and, for a program, its plan): a fixed
 * header, then a FlatBuffers graph compressed with zstd. Saving is
 * deterministic: the same IR gives the same bytes. Loading treats the bytes
 * as untrusted and checks everything (size, header, checksum, zstd, the
 * FlatBuffers verifier, every index, SSA, primitives and their arity, UTF-8)
 * before building anything. Errors: FORMAT (damaged or inconsistent bytes),
 * VERSION (a newer format, or a primitive this library lacks, named), IO
 * (files). Primitives are found by (name, version) in this process.
 * Limits (core/io/README.md has them all), each FORMAT at load: a file and
 * its decompressed content of at most 1 GiB, sub-IRs (branches, loop
 * bodies) nested at most 64 deep, literal values and structures nested at
 * most 256 deep, at most 2^32 equations once shared sub-IRs are expanded,
 * format templates of at most 10000 fields. A path that is not a regular
 * file (a FIFO, a device, a directory) is IO at once, never waited on. */

/* Writes ir to path (via a temporary file and a rename, so a crash never
 * leaves a half-written file). IO on failure; INVALID_ARGUMENT if the IR is
 * beyond a limit of the format (see core/io/README.md). */
AF_API af_error_t* af_ir_save(const af_ir_t* ir, const char* path, size_t path_len);
/* Reads and checks the graph at path; *out is a new IR. The message of a
 * FORMAT/VERSION error names the file and what is wrong. */
AF_API af_error_t* af_ir_load(af_context_t* ctx, const char* path, size_t path_len,
                              af_ir_t** out);
/* The .afg bytes of ir, owned by the caller (af_bytes_free). */
AF_API af_error_t* af_ir_to_bytes(const af_ir_t* ir, af_bytes_t* out);
/* An IR from .afg bytes (borrowed for the call), after every check. */
AF_API af_error_t* af_ir_from_bytes(af_context_t* ctx, const uint8_t* data, size_t len,
                                    af_ir_t** out);
/* Runs every load check on .afg bytes; on success, if summary is not NULL,
 * writes a one-line JSON summary (versions, producer, sizes, equations,
 * primitives, host functions) into it. */
AF_API af_error_t* af_graph_verify(af_context_t* ctx, const uint8_t* data, size_t len,
                                   af_bytes_t* summary);
/* The readable JSON form of .afg bytes (checked first). Round trip exact:
 * af_graph_from_json of it gives the same bytes. */
AF_API af_error_t* af_graph_to_json(af_context_t* ctx, const uint8_t* data, size_t len,
                                    af_bytes_t* out);
/* .afg bytes from the JSON form, which gets every check bytes get (FORMAT,
 * VERSION as for af_ir_from_bytes). */
AF_API af_error_t* af_graph_from_json(af_context_t* ctx, const char* json, size_t len,
                                      af_bytes_t* out);
/* Writes a compiled program to path: its IR and its plan (which equations
 * run, which slot each value reads, priorities), so af_program_load runs it
 * without compiling again. The same program gives the same bytes. IO on
 * failure; the file also loads with af_ir_load (the plan is then unused). */
AF_API af_error_t* af_program_save(const af_program_t* p, const char* path, size_t path_len);
/* Reads a program saved by af_program_save; *out is a new program (free with
 * af_program_free). The plan is checked against the IR like everything else:
 * one that could read a value nothing computes, skip an effect or merge
 * different equations is FORMAT. A graph saved from an IR (no plan) is
 * compiled here. Errors as af_ir_load. */
AF_API af_error_t* af_program_load(af_context_t* ctx, const char* path, size_t path_len,
                                   af_program_t** out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* AF_AF_H */
