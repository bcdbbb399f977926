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
 *  - Handles are opaque and reference counted: af_X_clone adds a reference,
 *    af_X_free drops one and accepts NULL.
 *  - Callbacks take (fn, user_data[, destroy]); a callback reports failure by
 *    returning an af_error_t* (made with af_error_new), which libaf chains as
 *    the cause of an AF_ERR_CALLBACK error. Callbacks must not unwind (no C++
 *    exceptions, no longjmp) across libaf.
 *  - No function exits, aborts or lets an exception escape.
 *
 * Thread safety: handles may move between threads. A const handle (value,
 * IR) may be used from several threads at once. An af_context_t serializes
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

#if defined(_WIN32)
#define AF_API __declspec(dllimport)
#elif defined(__GNUC__)
#define AF_API __attribute__((visibility("default")))
#else
#define AF_API
#endif

/* ======================================================================= */
/* Versioning                                                               */
/* ======================================================================= */

#define AF_VERSION_MAJOR 0
#define AF_VERSION_MINOR 1
#define AF_VERSION_PATCH 0
#define AF_VERSION_STRING "0.1.0"
/* Bumped only if the ABI ever breaks (symbols are only ever added). */
#define AF_ABI_VERSION 1

/* "MAJOR.MINOR.PATCH" of the loaded library; static storage. */
AF_API const char* af_version(void);
/* AF_ABI_VERSION of the loaded library. */
AF_API uint32_t af_abi_version(void);

/* ======================================================================= */
/* Errors                                                                   */
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
/* NUL-terminated UTF-8 message, owned by e ("" if e is NULL). */
AF_API const char* af_error_message(const af_error_t* e);
/* The error that caused e (owned by e), or NULL if none. */
AF_API const af_error_t* af_error_cause(const af_error_t* e);
/* A new owned error, for callbacks to return. msg need not be NUL-terminated;
 * invalid UTF-8 is replaced by U+FFFD. Returns NULL only if out of memory. */
AF_API af_error_t* af_error_new(int32_t code, const char* msg, size_t len);
/* Frees e and its causes. Accepts NULL. */
AF_API void af_error_free(af_error_t* e);

/* ======================================================================= */
/* Bytes                                                                    */
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
/* Context                                                                  */
/* ======================================================================= */

/* A context owns what a program needs at run time (later: host functions,
 * providers, caches). Values and IRs are not tied to one context. */
typedef struct af_context af_context_t;

AF_API af_error_t* af_context_new(af_context_t** out);
AF_API void af_context_free(af_context_t* ctx);

/* ======================================================================= */
/* Values                                                                   */
/* ======================================================================= */

/* An immutable, reference-counted tree: null, bool, int (int64), float
 * (double), str (UTF-8), list, dict (string keys; insertion order kept for
 * display, sorted key order used when flattening). Inside a trace a value may
 * be (or contain) a placeholder: a traced leaf whose content is only known
 * when the program runs. */
typedef struct af_value af_value_t;

#define AF_KIND_NULL 0
#define AF_KIND_BOOL 1
#define AF_KIND_INT 2
#define AF_KIND_FLOAT 3
#define AF_KIND_STR 4
#define AF_KIND_LIST 5
#define AF_KIND_DICT 6
#define AF_KIND_PLACEHOLDER 7 /* a traced leaf (only seen inside a trace) */

/* Parses exact JSON: integers stay int, numbers with '.', 'e' stay float.
 * INVALID_ARGUMENT for malformed JSON, invalid UTF-8, duplicate keys or
 * integers outside int64. */
AF_API af_error_t* af_value_from_json(af_context_t* ctx, const char* json, size_t len,
                                      af_value_t** out);
/* Compact JSON; floats shortest round-trip ("2.0", "1e+30"). INVALID_ARGUMENT
 * for NaN/infinity and for placeholders (their content is unknown while
 * tracing: use af_switch / af_while_loop or a static input). */
AF_API af_error_t* af_value_to_json(const af_value_t* v, af_bytes_t* out);

AF_API af_error_t* af_value_null(af_context_t* ctx, af_value_t** out);
AF_API af_error_t* af_value_bool(af_context_t* ctx, int32_t b, af_value_t** out);
AF_API af_error_t* af_value_int(af_context_t* ctx, int64_t i, af_value_t** out);
AF_API af_error_t* af_value_float(af_context_t* ctx, double f, af_value_t** out);
AF_API af_error_t* af_value_str(af_context_t* ctx, const char* s, size_t len, af_value_t** out);
/* A list of the items (each gets a new reference; the caller keeps its own). */
AF_API af_error_t* af_value_list(af_context_t* ctx, const af_value_t* const* items, size_t n,
                                 af_value_t** out);
/* A dict; INVALID_ARGUMENT on a duplicate key. */
AF_API af_error_t* af_value_dict(af_context_t* ctx, const char* const* keys,
                                 const size_t* key_lens, const af_value_t* const* values,
                                 size_t n, af_value_t** out);

/* AF_KIND_* of v; -1 if v is NULL. Never reads a placeholder's content. */
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
/* Tracing                                                                  */
/* ======================================================================= */

/* An IR: a traced program of primitives, immutable once built. Inputs are a
 * list of positional trees; the output is one tree (a function with several
 * outputs returns a list). */
typedef struct af_ir af_ir_t;

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

/* 1 if the calling thread is inside an af_trace callback, else 0. */
AF_API int32_t af_is_tracing(void);

/* Tags: while pushed, every equation recorded by the innermost trace of this
 * thread carries the tag (nested scopes union). INVALID_ARGUMENT outside a
 * trace; af_tag_pop without a matching push is INVALID_ARGUMENT. */
AF_API af_error_t* af_tag_push(af_context_t* ctx, const char* tag, size_t len);
AF_API af_error_t* af_tag_pop(af_context_t* ctx);

/* Fold: between push and pop, operations of the innermost trace run at
 * trace time and their results become literals. An operation whose input
 * is a placeholder is INVALID_ARGUMENT ("cannot fold <prim>: ..."). */
AF_API af_error_t* af_fold_push(af_context_t* ctx);
AF_API af_error_t* af_fold_pop(af_context_t* ctx);

/* ======================================================================= */
/* Operations (recorded inside a trace, evaluated outside)                   */
/* ======================================================================= */

/* Python-style template: "{}" automatic, "{0}" positional, "{name}" named,
 * "{{" / "}}" escapes. Non-string arguments are stringified as JSON ("2.5",
 * "true", "[1,2]"; a list or dict argument may hold placeholders). named: a
 * dict of named arguments, or NULL. INVALID_ARGUMENT: unbalanced braces,
 * automatic and manual numbering mixed, missing positional or named
 * argument (checked when the operation is recorded, not when it runs). */
AF_API af_error_t* af_format(af_context_t* ctx, const char* tmpl, size_t tmpl_len,
                             const af_value_t* const* args, size_t n_args,
                             const af_value_t* named, af_value_t** out);
/* Concatenation of strings (every argument must be a str). */
AF_API af_error_t* af_concat(af_context_t* ctx, const af_value_t* const* args, size_t n,
                             af_value_t** out);
/* String equality: a bool. */
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

/* ======================================================================= */
/* Calling and inspecting IRs                                               */
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
 * dependency. */
AF_API af_error_t* af_ir_to_dot(const af_ir_t* ir, af_bytes_t* out);

/* Number of equations (0 if ir is NULL). */
AF_API size_t af_ir_eqn_count(const af_ir_t* ir);
/* Primitive name of equation i (static storage); NULL if out of range. */
AF_API const char* af_ir_eqn_prim(const af_ir_t* ir, size_t i);
/* Number of positional inputs of ir (0 if ir is NULL). */
AF_API size_t af_ir_input_count(const af_ir_t* ir);
/* Structural hash: equal IRs (same equations, params, literals, structure,
 * kinds, tags) hash equal whatever their origin. */
AF_API uint64_t af_ir_hash(const af_ir_t* ir);
/* 1 if a and b are structurally equal, else 0. */
AF_API int32_t af_ir_equal(const af_ir_t* a, const af_ir_t* b);

AF_API af_ir_t* af_ir_clone(const af_ir_t* ir);
AF_API void af_ir_free(af_ir_t* ir);

/* ======================================================================= */
/* Walking an IR one equation at a time                                     */
/* ======================================================================= */

/* A stepper over an IR: the caller asks for the next equation and its input
 * values, then either lets libaf evaluate it (af_walk_eval) or supplies the
 * outputs itself (af_walk_send); when no equation is left, af_walk_outputs
 * gives the program's outputs. For debuggers and hosts that run some
 * equations themselves. */
typedef struct af_walk af_walk_t;

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
/* Transforms, control flow and host functions                              */
/* ======================================================================= */

/* ======================================================================= */
/* Programs, execution and LM providers                                     */
/* ======================================================================= */

/* ======================================================================= */
/* Saved graphs                                                             */
/* ======================================================================= */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* AF_AF_H */
