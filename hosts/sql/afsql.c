/* afsql: sessions, graphs and runs for libaf's SQL extensions (afsql.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* SOCK_CLOEXEC, MSG_NOSIGNAL */
#endif
#include "afsql.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* Graphs kept per session; the least recently used goes first past it. */
#define AFSQL_MAX_GRAPHS 32
/* As libaf's own limit on a graph file. */
#define AFSQL_MAX_FILE_BYTES (1ull << 30)

/* The leaf paths of an input or output tree (af_ir_json "path"). */
typedef struct paths {
  char** items;
  size_t n;
} paths;

struct afsql_graph {
  afsql_graph* next; /* most recently used first */
  uint64_t hash;
  uint8_t* bytes;
  size_t len;
  af_ir_t* ir;
  af_program_t* one;     /* compiled at first use */
  af_program_t* batched; /* af_batch over every input, compiled at first use */
  paths in, out;         /* leaf paths of the per-item program's inputs and outputs */
  char* in_tree;         /* its input structure, for messages ("[*, *]") */
};

struct afsql_session {
  af_context_t* ctx;
  afsql_graph* graphs;
};

struct afsql_run {
  af_future_t* future;
  int fd;            /* the host's end of the done socket pair */
  afsql_graph* g;    /* batched runs: the output paths */
  size_t items;      /* batched runs: the number of rows, else 0 */
};

static af_error_t* error(int32_t code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static af_error_t* error(int32_t code, const char* fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return af_error_new(code, msg, strlen(msg));
}

static af_error_t* oom(void) { return af_error_new(AF_ERR_OUT_OF_MEMORY, "out of memory", 13); }

void afsql_error_text(const af_error_t* e, char* buf, size_t size) {
  if (size == 0) return;
  snprintf(buf, size, "%s: %s", af_error_code_name(af_error_code(e)), af_error_message(e));
}

/* ---- sessions and routes ------------------------------------------------ */

static void graph_free(afsql_graph* g) {
  size_t i;
  if (!g) return;
  for (i = 0; i < g->in.n; i++) free(g->in.items[i]);
  for (i = 0; i < g->out.n; i++) free(g->out.items[i]);
  free(g->in.items);
  free(g->out.items);
  free(g->in_tree);
  af_program_free(g->one);
  af_program_free(g->batched);
  af_ir_free(g->ir);
  free(g->bytes);
  free(g);
}

af_error_t* afsql_session_new(afsql_session** out) {
  afsql_session* s = calloc(1, sizeof *s);
  af_error_t* err;
  *out = NULL;
  if (!s) return oom();
  err = af_context_new(&s->ctx);
  if (err) {
    free(s);
    return err;
  }
  *out = s;
  return NULL;
}

void afsql_session_free(afsql_session* s) {
  afsql_graph* g;
  if (!s) return;
  af_context_free(s->ctx);
  while ((g = s->graphs)) {
    s->graphs = g->next;
    graph_free(g);
  }
  free(s);
}

/* Text of (p, len) as a NUL-terminated copy; NULL if out of memory. */
static char* cstr(const char* p, size_t len) {
  char* c = malloc(len + 1);
  if (!c) return NULL;
  if (len) memcpy(c, p, len);
  c[len] = 0;
  return c;
}

/* The provider spec af_provider_new takes: the options object (empty for
 * none) with "type" added first. */
static af_error_t* provider_spec(af_context_t* ctx, const char* type, size_t type_len, const char* options,
                                 size_t options_len, af_bytes_t* out) {
  af_value_t *opts = NULL, *spec = NULL;
  const char** keys = NULL;
  size_t* lens = NULL;
  const af_value_t** values = NULL;
  size_t n = 0, i;
  af_error_t* err = af_value_json_new(options_len ? options : "{}", options_len ? options_len : 2, &opts);
  if (!err && af_value_kind(opts) != AF_KIND_DICT)
    err = error(AF_ERR_INVALID_ARGUMENT, "the provider options must be a JSON object");
  if (!err) err = af_value_len(opts, &n);
  if (!err) {
    keys = calloc(n + 1, sizeof *keys);
    lens = calloc(n + 1, sizeof *lens);
    values = calloc(n + 1, sizeof *values);
    if (!keys || !lens || !values) err = oom();
  }
  if (!err) {
    keys[0] = "type";
    lens[0] = 4;
    err = af_value_str_new(type, type_len, (af_value_t**)&values[0]);
  }
  for (i = 0; !err && i < n; i++) {
    err = af_value_key_at(opts, i, &keys[i + 1], &lens[i + 1]);
    if (!err) err = af_value_index(opts, i, (af_value_t**)&values[i + 1]);
  }
  if (!err) err = af_value_dict_new(keys, lens, values, n + 1, &spec);
  if (!err) err = af_value_to_json(spec, out);
  for (i = 0; values && i <= n; i++) af_value_free((af_value_t*)values[i]);
  free(keys);
  free(lens);
  free(values);
  af_value_free(spec);
  af_value_free(opts);
  return err;
}

af_error_t* afsql_route(afsql_session* s, const char* pattern, size_t pattern_len, const char* type,
                        size_t type_len, const char* options, size_t options_len) {
  af_provider_t* p = NULL;
  af_bytes_t spec = {0};
  af_error_t* err = provider_spec(s->ctx, type, type_len, options, options ? options_len : 0, &spec);
  if (!err) err = af_provider_new((const char*)spec.data, spec.len, &p);
  if (!err) err = af_context_route(s->ctx, pattern, pattern_len, p);
  af_provider_free(p); /* the route holds its own reference */
  af_bytes_free(&spec);
  return err;
}

af_error_t* afsql_route_all(afsql_session* s, const char* json, size_t len) {
  static const char usage[] =
      "routes must be a JSON object {\"model pattern\": {\"type\": \"echo\"|\"openai\"|\"anthropic\"|\"ollama\"|\"replay\", "
      "\"options\": {...}}}";
  af_value_t* doc = NULL;
  size_t n = 0, i;
  af_error_t* err = af_value_json_new(json, len, &doc);
  if (!err && af_value_kind(doc) != AF_KIND_DICT) err = error(AF_ERR_INVALID_ARGUMENT, "%s", usage);
  if (!err) err = af_value_len(doc, &n);
  for (i = 0; !err && i < n; i++) {
    const char *pattern, *type = NULL;
    size_t plen, tlen = 0, entries = 0, j;
    af_value_t *spec = NULL, *tv = NULL, *ov = NULL;
    af_bytes_t options = {0};
    err = af_value_key_at(doc, i, &pattern, &plen);
    if (!err) err = af_value_index(doc, i, &spec);
    if (!err && af_value_kind(spec) != AF_KIND_DICT) err = error(AF_ERR_INVALID_ARGUMENT, "%s", usage);
    if (!err) err = af_value_len(spec, &entries);
    for (j = 0; !err && j < entries; j++) {
      const char* key;
      size_t klen;
      err = af_value_key_at(spec, j, &key, &klen);
      if (!err && !(klen == 4 && memcmp(key, "type", 4) == 0) && !(klen == 7 && memcmp(key, "options", 7) == 0))
        err = error(AF_ERR_INVALID_ARGUMENT, "route \"%.*s\": unknown key \"%.*s\"; %s", (int)(plen > 64 ? 64 : plen),
                    pattern, (int)(klen > 64 ? 64 : klen), key, usage);
    }
    if (!err) {
      af_error_t* missing = af_value_key(spec, "type", 4, &tv);
      if (missing) {
        af_error_free(missing);
        err = error(AF_ERR_INVALID_ARGUMENT, "route \"%.*s\" has no \"type\"; %s", (int)(plen > 64 ? 64 : plen),
                    pattern, usage);
      }
    }
    if (!err) err = af_value_get_str(tv, &type, &tlen);
    if (!err) {
      af_error_t* absent = af_value_key(spec, "options", 7, &ov);
      af_error_free(absent);
      if (ov) err = af_value_to_json(ov, &options);
    }
    if (!err) err = afsql_route(s, pattern, plen, type, tlen, (const char*)options.data, options.len);
    af_bytes_free(&options);
    af_value_free(ov);
    af_value_free(tv);
    af_value_free(spec);
  }
  af_value_free(doc);
  return err;
}

/* ---- graphs ------------------------------------------------------------- */

af_error_t* afsql_read_file(const char* path, size_t path_len, uint8_t** data, size_t* len) {
  char* p;
  int fd;
  struct stat st;
  uint8_t* buf = NULL;
  size_t got = 0;
  af_error_t* err = NULL;
  *data = NULL;
  *len = 0;
  if (path_len == 0 || memchr(path, 0, path_len))
    return error(AF_ERR_INVALID_ARGUMENT, "a graph path must be a non-empty text without NUL bytes");
  if (!(p = cstr(path, path_len))) return oom();
  /* O_NONBLOCK: opening a FIFO must not wait for a writer. */
  fd = open(p, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    err = error(AF_ERR_IO, "cannot open graph %s: %s", p, strerror(errno));
  } else if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    err = error(AF_ERR_IO, "graph %s is not a regular file", p);
  } else if ((unsigned long long)st.st_size > AFSQL_MAX_FILE_BYTES) {
    err = error(AF_ERR_FORMAT, "graph %s is larger than 1 GiB", p);
  } else if (!(buf = malloc((size_t)st.st_size + 1))) {
    err = oom();
  }
  while (!err && got < (size_t)st.st_size) {
    ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) err = error(AF_ERR_IO, "cannot read graph %s: %s", p, n < 0 ? strerror(errno) : "it shrank");
    else got += (size_t)n;
  }
  if (fd >= 0) close(fd);
  free(p);
  if (err) {
    free(buf);
    return err;
  }
  *data = buf;
  *len = got;
  return NULL;
}

static uint64_t fnv1a(const uint8_t* data, size_t len) {
  uint64_t h = 1469598103934665603ull;
  size_t i;
  for (i = 0; i < len; i++) h = (h ^ data[i]) * 1099511628211ull;
  return h;
}

/* The "path" of every entry of af_ir_json's list `key`. */
static af_error_t* leaf_paths(const af_value_t* doc, const char* key, paths* out) {
  af_value_t* list = NULL;
  size_t n = 0, i;
  af_error_t* err = af_value_key(doc, key, strlen(key), &list);
  if (!err) err = af_value_len(list, &n);
  if (!err && !(out->items = calloc(n ? n : 1, sizeof *out->items))) err = oom();
  for (i = 0; !err && i < n; i++) {
    af_value_t *atom = NULL, *path = NULL;
    const char* s;
    size_t len;
    err = af_value_index(list, i, &atom);
    if (!err) err = af_value_key(atom, "path", 4, &path);
    if (!err) err = af_value_get_str(path, &s, &len);
    if (!err && !(out->items[out->n++] = cstr(s, len))) err = oom();
    af_value_free(path);
    af_value_free(atom);
  }
  af_value_free(list);
  return err;
}

/* The per-item program's input and output leaf paths and input structure. */
static af_error_t* read_shape(afsql_session* s, afsql_graph* g) {
  af_bytes_t json = {0};
  af_value_t *doc = NULL, *tree = NULL;
  const char* t;
  size_t tlen;
  af_error_t* err = af_ir_json(g->ir, &json);
  if (!err) err = af_value_json_new((const char*)json.data, json.len, &doc);
  if (!err) err = leaf_paths(doc, "inputs", &g->in);
  if (!err) err = leaf_paths(doc, "outputs", &g->out);
  if (!err) err = af_value_key(doc, "in_tree", 7, &tree);
  if (!err) err = af_value_get_str(tree, &t, &tlen);
  if (!err && !(g->in_tree = cstr(t, tlen))) err = oom();
  af_value_free(tree);
  af_value_free(doc);
  af_bytes_free(&json);
  return err;
}

af_error_t* afsql_graph_get(afsql_session* s, const uint8_t* data, size_t len, afsql_graph** out) {
  uint64_t h = fnv1a(data, len);
  afsql_graph **link = &s->graphs, *g;
  size_t kept = 0;
  af_error_t* err;
  *out = NULL;
  for (g = s->graphs; g; link = &g->next, g = g->next) {
    if (g->hash == h && g->len == len && memcmp(g->bytes, data, len) == 0) {
      *link = g->next; /* to the front */
      g->next = s->graphs;
      s->graphs = g;
      *out = g;
      return NULL;
    }
  }
  if (!(g = calloc(1, sizeof *g)) || !(g->bytes = malloc(len ? len : 1))) {
    free(g);
    return oom();
  }
  memcpy(g->bytes, data, len);
  g->len = len;
  g->hash = h;
  err = af_ir_from_bytes(s->ctx, data, len, &g->ir);
  if (!err) err = read_shape(s, g);
  if (err) {
    graph_free(g);
    return err;
  }
  g->next = s->graphs;
  s->graphs = g;
  for (link = &s->graphs; *link; link = &(*link)->next) {
    if (++kept > AFSQL_MAX_GRAPHS) {
      graph_free(*link);
      *link = NULL;
      break;
    }
  }
  *out = g;
  return NULL;
}

/* ---- run options ---------------------------------------------------------- */

static af_error_t* parse_options(afsql_session* s, const char* json, size_t len, af_run_options_t* ro) {
  static const char usage[] = "run options must be a JSON object such as {\"timeout_ms\": 5000}";
  af_value_t* doc = NULL;
  size_t n = 0, i;
  af_error_t* err = NULL;
  memset(ro, 0, sizeof *ro);
  ro->struct_size = sizeof *ro;
  if (!json || len == 0) return NULL;
  err = af_value_json_new(json, len, &doc);
  if (!err && af_value_kind(doc) == AF_KIND_NULL) goto done;
  if (!err && af_value_kind(doc) != AF_KIND_DICT) err = error(AF_ERR_INVALID_ARGUMENT, "%s", usage);
  if (!err) err = af_value_len(doc, &n);
  for (i = 0; !err && i < n; i++) {
    const char* key;
    size_t klen;
    af_value_t* v = NULL;
    int64_t ms = -1;
    err = af_value_key_at(doc, i, &key, &klen);
    if (!err && !(klen == 10 && memcmp(key, "timeout_ms", 10) == 0)) {
      err = error(AF_ERR_INVALID_ARGUMENT, "unknown run option \"%.*s\"; %s", (int)(klen > 64 ? 64 : klen), key,
                  usage);
    }
    if (!err) err = af_value_index(doc, i, &v);
    if (!err && af_value_kind(v) == AF_KIND_INT) af_error_free(af_value_get_int(v, &ms));
    if (!err && ms < 0) err = error(AF_ERR_INVALID_ARGUMENT, "\"timeout_ms\" must be an integer >= 0 (0 = none)");
    if (!err) ro->timeout_ms = (uint64_t)ms;
    af_value_free(v);
  }
done:
  af_value_free(doc);
  return err;
}

/* ---- runs ----------------------------------------------------------------- */

/* A socket pair, not a pipe: MSG_NOSIGNAL, so a late write after the host
 * closed its end is EPIPE, never a SIGPIPE killing a host that does not
 * ignore it (the sqlite3 shell). */
static void signal_done(void* ud) {
  int fd = (int)(intptr_t)ud;
  ssize_t rc;
  do rc = send(fd, "", 1, MSG_NOSIGNAL);
  while (rc < 0 && errno == EINTR);
}
static void close_done(void* ud) { close((int)(intptr_t)ud); }

/* Starts p on inputs; *out owns the future and the done socket. */
static af_error_t* start(afsql_session* s, af_program_t* p, af_value_t* const* inputs, size_t n,
                         const af_run_options_t* ro, afsql_run** out) {
  afsql_run* r = calloc(1, sizeof *r);
  int fds[2];
  af_error_t* err;
  *out = NULL;
  if (!r) return oom();
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds) != 0) {
    free(r);
    return error(AF_ERR_IO, "cannot create a socket pair: %s", strerror(errno));
  }
  r->fd = fds[0];
  err = af_program_call_async_with(s->ctx, p, (const af_value_t* const*)inputs, n, ro, &r->future);
  /* The write end belongs to the callback from here on (close_done). */
  if (!err) {
    err = af_future_on_done(r->future, signal_done, (void*)(intptr_t)fds[1], close_done);
  } else {
    close(fds[1]);
  }
  if (err) {
    if (r->future) af_future_cancel(r->future);
    af_future_free(r->future);
    close(r->fd);
    free(r);
    return err;
  }
  *out = r;
  return NULL;
}

/* The positional inputs of a JSON array. */
static af_error_t* parse_inputs(afsql_session* s, const char* json, size_t len, af_value_t** out) {
  af_error_t* err = af_value_json_new(json, len, out);
  if (!err && af_value_kind(*out) != AF_KIND_LIST) {
    af_value_free(*out);
    *out = NULL;
    err = error(AF_ERR_INVALID_ARGUMENT,
                "the input must be a JSON array of the program's positional inputs, e.g. '[\"a ticket\"]'");
  }
  return err;
}

/* The items of a list value as owned handles (*items: n of them). */
static af_error_t* items_of(const af_value_t* list, af_value_t*** items, size_t* n) {
  size_t i;
  af_error_t* err = af_value_len(list, n);
  *items = NULL;
  if (err) return err;
  if (!(*items = calloc(*n ? *n : 1, sizeof **items))) return oom();
  for (i = 0; !err && i < *n; i++) err = af_value_index(list, i, &(*items)[i]);
  return err;
}

static void free_items(af_value_t** items, size_t n) {
  size_t i;
  for (i = 0; items && i < n; i++) af_value_free(items[i]);
  free(items);
}

af_error_t* afsql_run_one(afsql_session* s, afsql_graph* g, const char* input_json, size_t input_len,
                          const char* options_json, size_t options_len, afsql_run** out) {
  af_run_options_t ro;
  af_value_t *args = NULL, **items = NULL;
  size_t n = 0;
  af_error_t* err = parse_options(s, options_json, options_len, &ro);
  *out = NULL;
  if (!err && !g->one) err = af_compile(s->ctx, g->ir, &g->one);
  if (!err) err = parse_inputs(s, input_json, input_len, &args);
  if (!err) err = items_of(args, &items, &n);
  if (!err) err = start(s, g->one, items, n, &ro, out);
  free_items(items, n);
  af_value_free(args);
  return err;
}

static int has_path(const paths* ps, const char* path) {
  size_t i;
  for (i = 0; i < ps->n; i++)
    if (strcmp(ps->items[i], path) == 0) return 1;
  return 0;
}

/* path + "/" + segment (or the segment alone at the root). */
static char* child_path(const char* path, const char* seg, size_t seg_len) {
  size_t plen = strlen(path);
  char* c = malloc(plen + seg_len + 2);
  if (!c) return NULL;
  memcpy(c, path, plen);
  if (plen) c[plen++] = '/';
  memcpy(c + plen, seg, seg_len);
  c[plen + seg_len] = 0;
  return c;
}

static const char* kind_name(int32_t kind) {
  static const char* const names[] = {"null", "bool", "int", "float", "str", "list", "dict", "placeholder"};
  return kind >= 0 && kind <= AF_KIND_PLACEHOLDER ? names[kind] : "unknown";
}

/* A list or dict being rebuilt entry by entry (stack, unstack): its new
 * children, and a dict's keys (borrowed from the value it copies). */
typedef struct node {
  int32_t kind; /* AF_KIND_LIST or AF_KIND_DICT */
  size_t n;
  af_value_t** children;
  const char** keys;
  size_t* key_lens;
} node;

static af_error_t* node_new(const af_value_t* like, node* nd) {
  size_t cap, i;
  af_error_t* err;
  memset(nd, 0, sizeof *nd);
  nd->kind = af_value_kind(like);
  err = af_value_len(like, &nd->n);
  cap = nd->n ? nd->n : 1;
  if (!err && (!(nd->children = calloc(cap, sizeof *nd->children)) || !(nd->keys = calloc(cap, sizeof *nd->keys)) ||
               !(nd->key_lens = calloc(cap, sizeof *nd->key_lens))))
    err = oom();
  for (i = 0; !err && nd->kind == AF_KIND_DICT && i < nd->n; i++)
    err = af_value_key_at(like, i, &nd->keys[i], &nd->key_lens[i]);
  return err;
}

/* Entry i of v, a value shaped as the node: a dict's value under the
 * node's key i, a list's item i. */
static af_error_t* node_entry(const node* nd, const af_value_t* v, size_t i, af_value_t** out) {
  return nd->kind == AF_KIND_DICT ? af_value_key(v, nd->keys[i], nd->key_lens[i], out) : af_value_index(v, i, out);
}

/* The path of entry i below path (owned; NULL if out of memory). */
static char* node_path(const node* nd, const char* path, size_t i) {
  char seg[24];
  if (nd->kind == AF_KIND_DICT) return child_path(path, nd->keys[i], nd->key_lens[i]);
  snprintf(seg, sizeof seg, "%zu", i);
  return child_path(path, seg, strlen(seg));
}

static af_error_t* node_build(const node* nd, af_value_t** out) {
  const af_value_t* const* children = (const af_value_t* const*)nd->children;
  return nd->kind == AF_KIND_DICT ? af_value_dict_new(nd->keys, nd->key_lens, children, nd->n, out)
                                  : af_value_list_new(children, nd->n, out);
}

static void node_free(node* nd) {
  free_items(nd->children, nd->n);
  free(nd->keys);
  free(nd->key_lens);
}

/* "the inputs" at the root, else "the input at \"P\"", for messages. */
static const char* where(const char* path, char* buf, size_t size) {
  if (!*path) return "the inputs";
  snprintf(buf, size, "the input at \"%s\"", path);
  return buf;
}

/* Batches the rows' values at `path` (vals[r], row r) into the batched
 * program's input there: at a leaf of the program's inputs, the list of the
 * rows' values; above one, the same list or dict of the batched children. */
static af_error_t* stack(afsql_session* s, const afsql_graph* g, af_value_t* const* vals, size_t n,
                         const char* path, af_value_t** out) {
  int32_t kind = af_value_kind(vals[0]);
  af_value_t** column = NULL;
  char at[256];
  size_t r, i;
  node nd;
  af_error_t* err;
  if (has_path(&g->in, path)) return af_value_list_new((const af_value_t* const*)vals, n, out);
  if (kind != AF_KIND_LIST && kind != AF_KIND_DICT) {
    return error(AF_ERR_INVALID_ARGUMENT,
                 "row 1: %s (kind %s): the program takes none there (its inputs are shaped %s, one value per *)",
                 where(path, at, sizeof at), kind_name(kind), g->in_tree);
  }
  err = node_new(vals[0], &nd);
  for (r = 1; !err && r < n; r++) {
    size_t len = 0;
    if (af_value_kind(vals[r]) != kind || (err = af_value_len(vals[r], &len)) != NULL || len != nd.n) {
      af_error_free(err);
      err = error(AF_ERR_INVALID_ARGUMENT,
                  "row %zu: %s: not shaped as row 1's (kind %s of %zu); every row takes the program's inputs, "
                  "shaped %s",
                  r + 1, where(path, at, sizeof at), kind_name(kind), nd.n, g->in_tree);
    }
  }
  if (!err && !(column = calloc(n, sizeof *column))) err = oom();
  for (i = 0; !err && i < nd.n; i++) {
    char* sub = node_path(&nd, path, i);
    if (!sub) err = oom();
    for (r = 0; !err && r < n; r++) {
      err = node_entry(&nd, vals[r], i, &column[r]);
      if (err && r > 0) {
        af_error_free(err);
        err = error(AF_ERR_INVALID_ARGUMENT, "row %zu: %s: missing (row 1 has it)", r + 1, where(sub, at, sizeof at));
      }
    }
    if (!err) err = stack(s, g, column, n, sub, &nd.children[i]);
    free(sub);
    for (r = 0; r < n; r++) {
      af_value_free(column[r]);
      column[r] = NULL;
    }
  }
  if (!err) err = node_build(&nd, out);
  node_free(&nd);
  free(column);
  return err;
}

af_error_t* afsql_run_batch(afsql_session* s, afsql_graph* g, const char* const* rows,
                            const size_t* row_lens, size_t n, const char* options_json,
                            size_t options_len, afsql_run** out) {
  af_run_options_t ro;
  af_value_t **args = NULL, *batched = NULL, **items = NULL;
  size_t n_items = 0, r;
  af_error_t* err = parse_options(s, options_json, options_len, &ro);
  *out = NULL;
  if (!err && n == 0) err = error(AF_ERR_INVALID_ARGUMENT, "a batched run needs at least one row");
  if (!err && g->in.n == 0)
    err = error(AF_ERR_INVALID_ARGUMENT, "the program takes no inputs: there is nothing to batch its rows over");
  if (!err && !g->batched) {
    af_ir_t* b = NULL;
    err = af_batch(s->ctx, g->ir, NULL, &b);
    if (!err) err = af_compile(s->ctx, b, &g->batched);
    af_ir_free(b);
  }
  if (!err && !(args = calloc(n, sizeof *args))) err = oom();
  for (r = 0; !err && r < n; r++) {
    err = parse_inputs(s, rows[r], row_lens[r], &args[r]);
    if (err) {
      char msg[512];
      int32_t code = af_error_code(err);
      snprintf(msg, sizeof msg, "row %zu: %s", r + 1, af_error_message(err));
      af_error_free(err);
      err = af_error_new(code, msg, strlen(msg));
    }
  }
  if (!err) err = stack(s, g, args, n, "", &batched);
  if (!err) err = items_of(batched, &items, &n_items);
  ro.flags |= AF_RUN_ITEM_ERRORS;
  if (!err) {
    err = start(s, g->batched, items, n_items, &ro, out);
    if (err && af_error_code(err) == AF_ERR_INVALID_ARGUMENT) {
      /* libaf names the batched input's path: say how it maps to rows. */
      char msg[1024];
      snprintf(msg, sizeof msg, "%s (the rows are batched: input[i][k] is input i of row k+1)",
               af_error_message(err));
      af_error_free(err);
      err = af_error_new(AF_ERR_INVALID_ARGUMENT, msg, strlen(msg));
    }
  }
  if (!err) {
    (*out)->g = g;
    (*out)->items = n;
  }
  free_items(items, n_items);
  af_value_free(batched);
  free_items(args, args ? n : 0);
  return err;
}

int afsql_run_fd(const afsql_run* r) { return r->fd; }

void afsql_run_cancel(afsql_run* r) { af_future_cancel(r->future); }

/* {"error": {"code", "name", "message"}}: what AF_RUN_ITEM_ERRORS puts in a
 * failed item's place. */
static int is_item_error(const af_value_t* v) {
  af_value_t* e = NULL;
  size_t n = 0;
  int yes = 0;
  af_error_t* err;
  if (af_value_kind(v) != AF_KIND_DICT || af_value_len(v, &n) != NULL || n != 1) return 0;
  err = af_value_key(v, "error", 5, &e);
  if (!err && af_value_kind(e) == AF_KIND_DICT && af_value_len(e, &n) == NULL && n == 3) {
    af_value_t *code = NULL, *name = NULL, *msg = NULL;
    af_error_t *a = af_value_key(e, "code", 4, &code), *b = af_value_key(e, "name", 4, &name),
               *c = af_value_key(e, "message", 7, &msg);
    yes = !a && !b && !c;
    af_error_free(a);
    af_error_free(b);
    af_error_free(c);
    af_value_free(code);
    af_value_free(name);
    af_value_free(msg);
  }
  af_error_free(err);
  af_value_free(e);
  return yes;
}

/* Item i of a batched output: the per-item structure with each leaf's list
 * replaced by its i-th value. *failed: the item's error value, when a leaf
 * holds one (every leaf of a failed item does). */
static af_error_t* unstack(const afsql_graph* g, const af_value_t* v, const char* path, size_t i, af_value_t** out,
                           af_value_t** failed) {
  int32_t kind = af_value_kind(v);
  size_t j;
  node nd;
  af_error_t* err;
  if (has_path(&g->out, path)) {
    err = af_value_index(v, i, out);
    if (!err && !*failed && is_item_error(*out)) *failed = af_value_clone(*out);
    return err;
  }
  if (kind != AF_KIND_LIST && kind != AF_KIND_DICT) {
    *out = af_value_clone(v);
    return NULL;
  }
  err = node_new(v, &nd);
  for (j = 0; !err && j < nd.n; j++) {
    af_value_t* child = NULL;
    char* sub = node_path(&nd, path, j);
    err = sub ? node_entry(&nd, v, j, &child) : oom();
    if (!err) err = unstack(g, child, sub, i, &nd.children[j], failed);
    free(sub);
    af_value_free(child);
  }
  if (!err) err = node_build(&nd, out);
  node_free(&nd);
  return err;
}

/* The batched output as the list of the items' outputs. */
static af_error_t* per_item(const afsql_graph* g, const af_value_t* result, size_t n, af_value_t** out) {
  af_value_t** items = calloc(n, sizeof *items);
  size_t i;
  af_error_t* err = items ? NULL : oom();
  for (i = 0; !err && i < n; i++) {
    af_value_t* failed = NULL;
    err = unstack(g, result, "", i, &items[i], &failed);
    if (failed) {
      af_value_free(items[i]);
      items[i] = failed;
    }
  }
  if (!err) err = af_value_list_new((const af_value_t* const*)items, n, out);
  free_items(items, n);
  return err;
}

af_error_t* afsql_run_finish(afsql_run* r, af_bytes_t* json) {
  af_value_t *result = NULL, *items = NULL;
  af_error_t* err = af_future_wait(r->future, &result);
  json->data = NULL;
  json->len = 0;
  if (!err && r->items) err = per_item(r->g, result, r->items, &items);
  if (!err) err = af_value_to_json(items ? items : result, json);
  af_value_free(items);
  af_value_free(result);
  af_future_free(r->future);
  close(r->fd);
  free(r);
  return err;
}
