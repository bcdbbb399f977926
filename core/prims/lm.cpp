// LM primitives: lm_call and lm_schema_call (docs/SEMANTICS.md §3).
//
// Equation shape: inputs = [content_0, ..., content_{n-1}, model] (flat
// leaves), params = {"roles": [str...]} (+ "schema" for lm_schema_call, +
// the sampling params the call sets: temperature, top_p, max_tokens, seed,
// stop). Roles and params are static; contents and the model are inputs. Batched values
// (list<str> avals, made by the batch transform) are native: the impl
// issues one request per item, all at once, under the provider's limits.
#include "prims/lm.h"

#include <atomic>
#include <mutex>
#include <optional>

#include "rt/async.h"
#include "rt/context.h"
#include "rt/journal.h"
#include "value/error_value.h"
#include "lm/call_arena.h"
#include "lm/router.h"
#include "lm/schema.h"
#include "lm/tools.h"
#include "ir/registry.h"
#include "prims/builtins.h"
#include "prims/ops.h"
#include "trace/trace.h"
#include "transforms/batch.h"
#include "transforms/dce.h"
#include "transforms/pullback.h"
#include "transforms/pushforward.h"
#include "value/error.h"
#include "value/hash.h"
#include "value/small_vec.h"

namespace af {

namespace {

// The param names (prims/lm.h), spelled once: the sampling params' are in
// kSampling below.
constexpr const char* kParamRoles = "roles";
constexpr const char* kParamParts = "parts";
constexpr const char* kParamSchema = "schema";
constexpr const char* kParamTools = "tools";
constexpr const char* kParamToolChoice = "tool_choice";

const Value& roles_of(const Params& p) { return p.value(kParamRoles); }

// Calls f(k, message, kind) for each content input k: kind is null for a
// plain message's, else its part's kind.
template <class F>
void each_content(const Value& roles, const Value* parts, F&& f) {
  size_t k = 0;
  for (size_t m = 0; m < roles.size(); ++m) {
    const Value* mp = parts ? &parts->items()[m] : nullptr;
    if (!mp || mp->is_null()) {
      f(k++, m, nullptr);
      continue;
    }
    for (const Value& kind : mp->items()) f(k++, m, &kind);
  }
}

// The number of content inputs (before the history and the model).
size_t content_count(const Params& p) {
  size_t n = 0;
  each_content(roles_of(p), lm_parts(p), [&](size_t, size_t, const Value*) { ++n; });
  return n;
}

// An image part's kind (a URL or a media type): it gets no tangent or feedback.
bool is_image(const Value* kind) { return kind && kind->as_str() != "text"; }

// The roles param, checked (graphs loaded from disk reach abstract_eval
// with whatever params they hold).
const Value& checked_roles(const char* prim, const Params& p) {
  const Value* v = lm_roles(p);
  if (!v || v->kind() != Kind::List || v->items().empty())
    invalid(std::string(prim) + ": param \"roles\" must be a non-empty list of str");
  for (const Value& x : v->items())
    if (x.kind() != Kind::Str || x.as_str().empty())
      invalid(std::string(prim) + ": param \"roles\" must hold non-empty str roles");
  if (p.find(kParamParts)) {  // one entry per role: null or part kinds
    const Value* parts = p.find_value(kParamParts);
    bool ok = parts && parts->kind() == Kind::List && parts->size() == v->size();
    for (size_t i = 0; ok && i < parts->size(); ++i) {
      const Value& m = parts->items()[i];
      ok = m.is_null() || (m.kind() == Kind::List && m.size() > 0);
      for (size_t j = 0; ok && !m.is_null() && j < m.size(); ++j) {
        const Value& kind = m.items()[j];
        ok = kind.kind() == Kind::Str &&
             (kind.as_str() == "text" || kind.as_str() == "url" || lm::image_media_type(kind.as_str()));
      }
    }
    if (!ok)
      invalid(std::string(prim) + ": param \"parts\" must hold, per message, null or a non-empty list of "
                                   "\"text\", \"url\" or an image media type");
  }
  return *v;
}

// The sampling params an LM call may set: the kind each is stored as, its
// range and what it does. check_sampling checks against this table and
// describe_sampling_params describes it (af_options_json), so the two agree.
struct SamplingParam {
  const char* name;
  Kind kind;
  bool ranged;    // Float: min..max (min excluded if min_open); Int: at least min;
  double min, max;  // List: 1..max items
  bool min_open;
  const char* doc;
};
constexpr SamplingParam kSampling[] = {
    {"temperature", Kind::Float, true, 0, 2, false, "Sampling temperature (an int is taken as a float)."},
    {"top_p", Kind::Float, true, 0, 1, true, "Nucleus sampling: the probability mass kept, in (0, 1]."},
    {"max_tokens", Kind::Int, true, 1, 0, false, "The reply's token limit."},
    {"seed", Kind::Int, false, 0, 0, false, "Asks the server for reproducible sampling, where it can."},
    {"stop", Kind::List, true, 1, 16, false, "Non-empty strings (1 to 16) where the reply stops."},
};

std::string bound(double d) { return d == double(int64_t(d)) ? std::to_string(int64_t(d)) : to_json(Value::floating(d)); }

// Checks the call's sampling params (graphs loaded from disk hold whatever
// they hold): the abstract rule runs it when an equation is recorded or loaded.
void check_sampling(const char* prim, const Params& p) {
  for (const SamplingParam& sp : kSampling) {
    if (!p.find(sp.name)) continue;
    const Value* v = p.find_value(sp.name);
    std::string at = std::string(prim) + ": param \"" + sp.name + "\"";
    if (!v || v->kind() != sp.kind) invalid(at + " must be a" + (sp.kind == Kind::Int ? "n " : " ") + kind_name(sp.kind));
    if (!sp.ranged) continue;
    if (sp.kind == Kind::Float) {
      const double f = v->as_float();
      if (!((sp.min_open ? f > sp.min : f >= sp.min) && f <= sp.max))
        invalid(at + (sp.min_open ? " must be in (" + bound(sp.min) + ", " + bound(sp.max) + "]"
                                  : " must be between " + bound(sp.min) + " and " + bound(sp.max)) +
                ", found " + to_json(*v));
    } else if (sp.kind == Kind::Int) {
      if (double(v->as_int()) < sp.min) invalid(at + " must be at least " + bound(sp.min) + ", found " + to_json(*v));
    } else {
      if (v->items().empty() || double(v->items().size()) > sp.max)
        invalid(at + " must hold 1 to " + bound(sp.max) + " strings, found " + std::to_string(v->items().size()));
      for (const Value& stop : v->items())
        if (stop.kind() != Kind::Str || stop.as_str().empty())
          invalid(at + " must hold non-empty strings, found " + to_json(stop));
    }
  }
}

// The call's sampling params (checked already) as the dict a request
// carries, in kSampling's order; null when it sets none. One pass over the
// params, which a plain call holds one of (its roles).
Value sampling_of(const Params& p) {
  std::vector<Entry> out;
  for (const SamplingParam& sp : kSampling)
    for (const auto& [name, param] : p.items())
      if (name == sp.name) out.emplace_back(sp.name, std::get<Value>(param));
  return out.empty() ? Value() : Value::dict(std::move(out));
}

// Sampling params given to lm_call / lm_schema_call (a dict or null) into
// the equation's params; ints are accepted where a float is stored.
// lm_tool_call's params may also hold its "tool_choice" (lm/tools.h).
void set_sampling(const char* op, const Value& given, Params& params, bool tool_call = false) {
  if (given.is_null()) return;
  if (given.kind() != Kind::Dict)
    invalid(std::string(op) + ": params must be a dict such as {\"temperature\": 0.2, \"max_tokens\": 64}, found " +
            kind_name(given.kind()));
  if (given.has_placeholder()) invalid(std::string(op) + ": params are static; they cannot hold traced values");
  for (const auto& [k, v] : given.entries()) {
    if (tool_call && k == kParamToolChoice) {
      params.set(k, v);  // checked against the tools by the abstract rule
      continue;
    }
    const SamplingParam* sp = nullptr;
    for (const SamplingParam& c : kSampling)
      if (k == c.name) sp = &c;
    if (!sp)
      invalid(std::string(op) + ": unknown param \"" + k + "\" (known: temperature, top_p, max_tokens, seed, stop" +
              (tool_call ? ", tool_choice)" : ")"));
    if (sp->kind == Kind::Float && v.kind() == Kind::Int) params.set(k, Value::floating(double(v.as_int())));
    else params.set(k, v);
  }
  check_sampling(op, params);  // INVALID_ARGUMENT before anything is recorded
}

// Batch depth D of the inputs: every input is str or list^D<str>.
// (lm_tool_call's history sits between the contents and the model.)
uint8_t batch_depth(const char* prim, std::span<const Aval> in, size_t n_contents, bool history = false) {
  if (in.size() != n_contents + history + 1)
    invalid(std::string(prim) + ": expected " + std::to_string(n_contents) + " content input(s), " +
            (history ? "a history " : "") + "and a model, got " + std::to_string(in.size()) + " input(s)");
  uint8_t depth = 0;
  for (const Aval& a : in) {
    if (a.kind != Kind::Str)
      invalid(std::string(prim) + ": message contents and the model must be str, found " + aval_name(a));
    depth = std::max(depth, a.list_depth);
  }
  for (const Aval& a : in)
    if (a.list_depth != 0 && a.list_depth != depth)
      invalid(std::string(prim) + ": batched inputs must share one batch depth, found " + aval_name(a));
  return depth;
}

AbstractOut lm_call_abstract(const Params& params, std::span<const Aval> in, const TreeDef&) {
  checked_roles("lm_call", params);
  uint8_t d = batch_depth("lm_call", in, content_count(params));
  check_sampling("lm_call", params);
  return AbstractOut{{Aval{Kind::Str, d}}, TreeDef::leaf()};
}

AbstractOut lm_schema_call_abstract(const Params& params, std::span<const Aval> in, const TreeDef&) {
  checked_roles("lm_schema_call", params);
  uint8_t d = batch_depth("lm_schema_call", in, content_count(params));
  check_sampling("lm_schema_call", params);
  const Value* tree = lm_schema(params);
  if (!tree) invalid("lm_schema_call: param \"schema\" (the node tree) is missing");
  std::shared_ptr<const lm::Schema> schema;
  try {
    schema = lm::schema_of(*tree);
  } catch (const Error& e) {
    invalid(std::string("lm_schema_call: ") + e.what());
  }
  AbstractOut out;
  out.out_tree = schema->out_tree();
  for (Kind k : schema->leaf_kinds()) out.out.push_back(Aval{k, d});
  return out;
}

AbstractOut lm_tool_call_abstract(const Params& params, std::span<const Aval> in, const TreeDef&) {
  checked_roles("lm_tool_call", params);
  uint8_t d = batch_depth("lm_tool_call", in, content_count(params), true);
  check_sampling("lm_tool_call", params);
  const Value* tree = lm_tools(params);
  if (!tree) invalid("lm_tool_call: param \"tools\" is missing");
  try {
    const Value* choice = lm_tool_choice(params);
    lm::tools_of(*tree)->check_choice(choice ? *choice : Value());
  } catch (const Error& e) {
    invalid(std::string("lm_tool_call: ") + e.what());
  }
  static const TreeDef out_tree = TreeDef::of(lm::tool_output_prototype());
  AbstractOut out;
  out.out_tree = out_tree;
  out.out.resize(lm::kToolOutputs);
  out.out[lm::kArguments] = Aval{Kind::Str, uint8_t(d + 1)};
  out.out[lm::kCalled] = Aval{Kind::Bool, d};
  out.out[lm::kNames] = Aval{Kind::Str, uint8_t(d + 1)};
  out.out[lm::kText] = Aval{Kind::Str, d};
  out.out[lm::kTurn] = Aval{Kind::Str, d};
  return out;
}

// Expanding a (possibly batched) equation into requests. `shape` records
// the list lengths level by level so the results can be put back together.
struct Shape {
  std::vector<Shape> items;  // empty + leaf = one request
  bool leaf = true;
  size_t first = 0;          // index of the first request under this node
};

// A row of inputs: the contents and the model of one request, or of a batch
// level. Inline: an unbatched call (in a loop, a map item) allocates none.
using Row = SmallVec<const Value*, 4>;

struct Expansion {
  size_t width = 0;  // inputs per request: content..., model
  Row cells;         // request i's inputs: [i * width, (i + 1) * width)
  // Per request: with per-item errors, the error value an earlier step left
  // in the batch item's inputs (the request is not made), else null.
  SmallVec<const Value*, 1> failed;
  Shape shape;
  bool item_errors = false;

  size_t size() const { return failed.size(); }
  std::span<const Value* const> row(size_t i) const { return {cells.data() + i * width, width}; }
  void add(std::span<const Value* const> row, const Value* failed_by) {
    for (const Value* v : row) cells.push_back(v);
    failed.push_back(failed_by);
  }
};

// " (batch item i)": how an error names a batch item, by its place in the
// whole batch (`base`: RunEnv::batch_base, where this level's lists start).
std::string batch_item(uint64_t base, size_t i) { return " (batch item " + std::to_string(base + i) + ")"; }

// Where a request is in the batch, for error messages only: " (batch item
// 3, item 1)", or "" for an unbatched call.
std::string where_of(std::span<const size_t> at, uint64_t base) {
  if (at.empty()) return "";
  std::string w = batch_item(base, at[0]);
  for (size_t k = 1; k < at.size(); ++k) w.insert(w.size() - 1, ", item " + std::to_string(at[k]));
  return w;
}

// Expands a row of inputs (a request's contents and model, each str or a
// batched list) into requests. `at` is the row's position in the batch.
void expand(const char* prim, std::span<const Value* const> row, Shape& shape, Expansion& ex,
            std::vector<size_t>& at, uint64_t base) {
  if (ex.item_errors && !at.empty())
    for (const Value* v : row)
      if (is_error_value(*v)) {
        shape.first = ex.size();
        shape.leaf = true;
        ex.add(row, v);
        return;
      }
  size_t len = SIZE_MAX;
  for (const Value* v : row)
    if (v->kind() == Kind::List) {
      if (len != SIZE_MAX && v->size() != len)
        invalid(std::string(prim) + ": batched inputs have different lengths (" + std::to_string(len) + " and " +
                std::to_string(v->size()) + ")" + where_of(at, base));
      len = v->size();
    } else if (v->kind() != Kind::Str) {
      invalid(std::string(prim) + ": an input is " + kind_name(v->kind()) + ", expected str" + where_of(at, base));
    }
  shape.first = ex.size();
  if (len == SIZE_MAX) {
    shape.leaf = true;
    ex.add(row, nullptr);
    return;
  }
  shape.leaf = false;
  shape.items.resize(len);
  Row sub;  // one buffer for the items of this level
  for (const Value* v : row) sub.push_back(v);
  at.push_back(0);
  for (size_t i = 0; i < len; ++i) {
    for (size_t k = 0; k < row.size(); ++k) sub[k] = row[k]->kind() == Kind::List ? &row[k]->items()[i] : row[k];
    at.back() = i;
    expand(prim, sub, shape.items[i], ex, at, base);
  }
  at.pop_back();
}

// The images of a request's row (parts: the "parts" param): a URL is
// http(s) or a data: URL, data is base64. INVALID_ARGUMENT naming the part.
void check_images(const char* prim, const Value& roles, const Value& parts, std::span<const Value* const> row) {
  size_t part = 0, message = SIZE_MAX;
  each_content(roles, &parts, [&](size_t k, size_t m, const Value* kind) {
    part = m == message ? part + 1 : 0;
    message = m;
    if (!is_image(kind)) return;
    const std::string& v = row[k]->as_str();
    const std::string at = std::string(prim) + ": messages[" + std::to_string(m) + "].content[" +
                           std::to_string(part) + "]";
    if (kind->as_str() == "url") {
      if (!v.starts_with("https://") && !v.starts_with("http://") && !v.starts_with("data:"))
        invalid(at + ": an image URL must start with https://, http:// or data:, found " + json_quoted(v.substr(0, 40)));
    } else if (!lm::valid_base64(v)) {
      invalid(at + ": the image data is not base64 (give the file's bytes base64-encoded, without a data: prefix)");
    }
  });
}

// A request's messages from its row, when some are given as parts: each
// part one content of the row; a message's text is its text parts joined.
void add_part_messages(lm::Request& req, const Value& roles, const Value& parts, std::span<const Value* const> row) {
  std::shared_ptr<std::vector<lm::ContentPart>> building;
  std::string text;
  size_t current = SIZE_MAX;
  auto finish = [&] {
    if (!building) return;
    req.messages.back().content = Value::str(std::move(text));
    req.messages.back().parts = std::move(building);
    building.reset();
    text.clear();
  };
  each_content(roles, &parts, [&](size_t k, size_t m, const Value* kind) {
    if (m != current) {
      finish();
      current = m;
      req.messages.push_back(lm::Message{roles.items()[m].as_str(), *row[k]});
      if (!kind) return;
      building = std::make_shared<std::vector<lm::ContentPart>>();
    }
    lm::ContentPart p;
    p.value = *row[k];
    if (kind->as_str() == "text") {
      if (!text.empty()) text += "\n\n";
      text += row[k]->as_str();
    } else if (kind->as_str() == "url") {
      p.type = lm::ContentPart::Type::ImageUrl;
    } else {
      p.type = lm::ContentPart::Type::ImageData;
      p.media_type = kind->as_str();
    }
    building->push_back(std::move(p));
  });
  finish();
}

// How much of an invalid structured reply a re-ask sends back (af.h): a
// server answering ~64 MiB of invalid JSON every time must not make each
// re-ask's request grow by that much.
constexpr size_t kReaskReplyBytes = 16 << 10;

// The invalid reply as the re-ask's assistant turn: whole up to
// kReaskReplyBytes, else its start, cut on a character boundary (the reply
// is valid UTF-8), with a note of its length.
std::string resent_reply(std::string_view reply) {
  if (reply.size() <= kReaskReplyBytes) return std::string(reply);
  size_t cut = kReaskReplyBytes;
  while (cut && (static_cast<unsigned char>(reply[cut]) & 0xC0) == 0x80) --cut;  // a continuation byte
  return std::string(reply.substr(0, cut)) + "\n[... the reply was cut here: " + std::to_string(reply.size()) +
         " bytes in all]";
}

// The turn that re-asks after an invalid structured reply or tool call.
std::string correction(const Error& invalid, bool tool_call) {
  if (tool_call)
    return std::string("Your tool call is invalid: ") + invalid.what() +
           "\nCall a tool again with arguments that match its parameters, or answer.";
  return std::string("Your reply does not match the required JSON schema: ") + invalid.what() +
         "\nReply again with only the corrected JSON.";
}

// A journal's key of a request (rt/journal.h): the 128-bit hash of what the
// provider is asked, each part length-prefixed. `base` holds what every
// request of the equation shares: the primitive, its sampling params and
// schema (as JSON: exact, -0.0 and key order included).
std::string request_base(const Eqn& e, const Value& sampling) {
  std::string b;
  append_key_part(b, e.prim->name);
  append_key_part(b, sampling.is_null() ? "" : to_json(sampling));
  const Value* s = lm_schema(e.params);
  append_key_part(b, s ? to_json(*s) : "");
  if (const Value* t = lm_tools(e.params)) append_key_part(b, to_json(*t));
  if (const Value* c = lm_tool_choice(e.params)) append_key_part(b, to_json(*c));
  return b;
}
JournalKey request_key(std::string b, const lm::Request& req) {
  append_key_part(b, req.model.as_str());
  for (const lm::Message& m : req.messages) {
    append_key_part(b, m.role);
    append_key_part(b, m.content.as_str());
    if (m.tool) {
      std::string parts;
      lm::append_tool_parts(parts, m);
      append_key_part(b, parts);
    }
    if (m.parts)  // the images too (the text parts are in the content)
      for (const lm::ContentPart& p : *m.parts) {
        append_key_part(b, p.media_type);
        append_key_part(b, p.value.as_str());
      }
  }
  return hash128_bytes(b);
}

// One request of an equation (a batch item) through its attempts: the
// route's providers in order (the next after a PROVIDER or TIMEOUT error)
// and, for schema calls, re-asks after a reply that fails validation.
struct Item {
  bool requested = false;     // false for an item that failed before its request
  std::weak_ptr<lm::Call> call;  // the request in flight, with Batch::mu held
  // Held weakly: a provider freed while its calls fly fails them (CANCELLED)
  // rather than living on in them. The route of the item's model, held by
  // the batch (Batch::routes): an item does not count a reference to it
  // (a count shared by every request of a model, on every thread, cost as
  // much as the rest of making the request).
  const std::vector<std::weak_ptr<lm::Provider>>* providers = nullptr;
  size_t provider = 0;  // the one asked now
  uint32_t reasks = 0;  // at that provider
  std::shared_ptr<const Error> earlier;  // the previous providers' errors
};

// What a streaming batch's item sent the host since its last restart.
struct Streamed {
  std::mutex mu;
  std::string text;
};

// Output `leaf` in the batch's shape, moving each request's value out of
// `results` (request i's outputs at [i * n_out, (i + 1) * n_out)).
Value assemble(const Shape& s, std::span<Value> results, size_t n_out, size_t leaf) {
  if (s.leaf) return std::move(results[s.first * n_out + leaf]);
  std::vector<Value> out;
  out.reserve(s.items.size());
  for (const Shape& c : s.items) out.push_back(assemble(c, results, n_out, leaf));
  return Value::list(std::move(out));
}

// The shared state of one equation's requests. It keeps itself alive
// (`self`) while it issues requests and while any request's done hook is
// still to run (`holds`), so a done hook needs only a plain pointer to it:
// a hook that small is stored inside its std::function, with no
// allocation per request. (A Call runs its done hook exactly once, even
// when it is dropped unfinished: lm/call.h.)
struct Batch : std::enable_shared_from_this<Batch> {
  std::atomic<size_t> holds{1};  // the issuer's, plus one per request not yet answered
  std::shared_ptr<Batch> self;
  // Drops one hold; the last one frees the batch (touch nothing after).
  void release() {
    if (holds.fetch_sub(1, std::memory_order_acq_rel) == 1) std::shared_ptr<Batch> last = std::move(self);
  }

  std::shared_ptr<AsyncOp> op;
  std::shared_ptr<const lm::Schema> schema;  // lm_schema_call's, else null
  std::shared_ptr<const lm::Tools> tools;    // lm_tool_call's, else null
  Value tool_choice;                         // lm_tool_call's, or null ("auto")
  const char* prim = "";
  bool item_errors = false;
  bool streams = false;
  bool batched = false;  // items are named in errors: " (batch item base + i)"
  bool profiling = false;  // the op records its calls' spans
  int64_t queued_at = 0;   // when its requests were made
  uint64_t base = 0;      // RunEnv::batch_base
  Shape shape;
  size_t n_out = 1;
  std::vector<Item> items;  // one per request, made at once (an Item does not move)
  std::vector<lm::Router::WeakProviders> routes;  // of the items' models (Item::providers)
  std::unique_ptr<Streamed[]> streamed;  // one per request, for a streaming batch only
  // The run's journal (null for none), the equation's name path for its
  // rows, and each request's key there.
  std::shared_ptr<Journal> journal;
  std::string name;
  std::unique_ptr<JournalKey[]> keys;
  // Request i's outputs (or error values): [i * n_out, (i + 1) * n_out).
  // Inline for an unbatched call of up to two outputs.
  SmallVec<Value, 2> results;
  std::atomic<size_t> remaining{0};
  std::mutex mu;
  bool cancelled = false;  // with mu held

  // Request i's outputs are in `results`: the last one finishes the op.
  void done_one() {
    if (remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) finish();
  }
  void finish() {
    std::vector<Value> out;
    out.reserve(n_out);
    const std::span<Value> all(results.data(), results.size());
    for (size_t k = 0; k < n_out; ++k) out.push_back(assemble(shape, all, n_out, k));
    op->succeed(std::move(out));
  }

  void cancel_all(const Error& why) {
    std::vector<std::shared_ptr<lm::Call>> cs;
    {
      std::lock_guard<std::mutex> lock(mu);
      cancelled = true;
      for (Item& it : items)
        if (auto c = it.call.lock()) cs.push_back(std::move(c));
    }
    for (auto& c : cs) c->cancel(why);
  }

  // A reply into item i's outputs: parsed for a schema or tool call (SCHEMA
  // error if it does not fit), else the text itself.
  void parse_into(std::span<Value> result, std::string& content) const {
    if (schema) schema->parse_reply(content, result);
    else if (tools) tools->parse_reply(content, result, tool_choice);
    else result[0] = Value::str(std::move(content));
  }
  // What the host sees streamed for a reply parsed into `result`: a tool
  // call's text, else the reply.
  const std::string& shown(std::span<const Value> result, const std::string& content) const {
    return tools ? lm::Tools::text_of(result) : content;
  }

  // Item i's outputs, all set to `v`.
  void set_result(size_t i, const Value& v) { std::fill_n(results.begin() + i * n_out, n_out, v); }

  // Item i's call for `req`. Its done hook holds the batch (see `holds`);
  // a delta hook may run on a provider thread while the call is being
  // cancelled elsewhere, so it holds a reference of its own.
  // From `arena` when given (the batch's first requests; only the thread
  // that issues them carves it).
  std::shared_ptr<lm::Call> make_call(size_t i, lm::Request req, lm::CallArena* arena = nullptr) {
    holds.fetch_add(1, std::memory_order_relaxed);
    auto done = [b = this, i](lm::Call& c, std::string* content, const Error* err) {
      b->answered(i, c, content, err);
      b->release();
    };
    auto call = arena ? std::allocate_shared<lm::Call>(lm::CallArena::Allocator<lm::Call>(arena), std::move(req),
                                                        std::move(done), op->priority, queued_at)
                      : std::make_shared<lm::Call>(std::move(req), std::move(done), op->priority, queued_at);
    call->timed = profiling;
    if (streams)
      call->set_on_delta([self = shared_from_this(), i](const char* data, size_t len) { self->stream(i, data, len); });
    return call;
  }
  // Sends item i's request (a retry, a re-ask) to its current provider.
  void submit(size_t i, lm::Request req) {
    std::shared_ptr<lm::Call> call = make_call(i, std::move(req));
    submit_calls(std::span<std::shared_ptr<lm::Call>>(&call, 1), std::span<const size_t>(&i, 1));
  }
  // Sends calls[k] (item at[k]'s request) to each item's current provider:
  // the calls of items that share one go in one submission. A dropped
  // call (the batch was cancelled, its provider freed) fails into its
  // done hook.
  void submit_calls(std::span<std::shared_ptr<lm::Call>> calls, std::span<const size_t> at) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (cancelled) return;
      for (size_t k = 0; k < calls.size(); ++k) items[at[k]].call = calls[k];
    }
    for (size_t from = 0; from < calls.size();) {
      const Item& first = items[at[from]];
      size_t to = from + 1;
      while (to < calls.size() && items[at[to]].providers == first.providers && items[at[to]].provider == first.provider)
        ++to;
      auto group = calls.subspan(from, to - from);
      if (auto provider = (*first.providers)[first.provider].lock()) {
        provider->submit(group);
      } else {
        for (auto& call : group)
          call->fail(Error(Code::Cancelled, "the provider was freed before the request could start"));
      }
      from = to;
    }
  }

  // A failed request fails the equation and cancels its siblings, or, with
  // per-item errors, becomes its item's error value.
  void fail_item(size_t i, const Error& e) {
    if (item_errors && is_item_failure(e)) {
      set_result(i, error_value(e));
      return done_one();
    }
    op->fail(e);
    cancel_all(Error(Code::Cancelled, "a sibling request of the same equation failed"));
  }

  void answered(size_t i, lm::Call& call, std::string* content, const Error* err) {
    Item& it = items[i];
    const std::span<Value> result(results.data() + i * n_out, n_out);
    std::optional<Error> invalid;  // a reply that fails the schema or the tools
    if (content && (schema || tools)) {
      try {
        parse_into(result, *content);
      } catch (const Error& e) {
        invalid.emplace(detached(e));
        std::fill(result.begin(), result.end(), Value());  // what it had put there
      }
    }
    if (profiling)
      op->record_span(CallSpan{
          call.provider_name, call.slot, call.queued_ns, call.started_ns, call.finished_ns,
          call.request().model.as_str(), err ? int32_t(err->code()) : invalid ? int32_t(invalid->code()) : 0,
          call.attempts.load(), err ? 0 : call.prompt_tokens, err ? 0 : call.completion_tokens,
          nullptr, nullptr});
    if (op->finished()) return;
    auto what = [&] {
      std::string w = std::string(prim) + " to model " + json_quoted(call.request().model.as_str());
      return batched ? w + batch_item(base, i) : w;
    };
    if (err) {
      if (err->code() == Code::Cancelled) {
        std::lock_guard<std::mutex> lock(mu);
        if (cancelled) return;
      }
      if ((err->code() == Code::Provider || err->code() == Code::Timeout) && it.provider + 1 < it.providers->size()) {
        it.earlier = std::make_shared<const Error>(err->code(), err->what(), it.earlier);
        ++it.provider;
        it.reasks = 0;
        restart_stream(i);
        return submit(i, call.request());
      }
      std::string after;
      if (it.provider) after = " (the route's " + std::to_string(it.provider) + " earlier provider(s) failed too)";
      return fail_item(i, Error(err->code(), what() + ": " + err->what() + after, it.earlier ? it.earlier : err->cause_ptr()));
    }
    if (invalid) {
      auto provider = (*it.providers)[it.provider].lock();
      if (provider && it.reasks < provider->schema_retries()) {
        ++it.reasks;
        lm::Request next = call.request();
        // The original conversation and only the last invalid reply: an
        // earlier re-ask's two turns are dropped, not sent again.
        if (next.reask) {
          next.messages.pop_back();
          next.messages.pop_back();
        }
        next.reask = it.reasks;
        next.messages.push_back(lm::Message{"assistant", Value::str(resent_reply(*content))});
        next.messages.push_back(lm::Message{"user", Value::str(correction(*invalid, tools != nullptr))});
        restart_stream(i);
        return submit(i, std::move(next));
      }
      std::string after;
      if (it.reasks) after = " (after " + std::to_string(it.reasks) + " re-ask" + (it.reasks > 1 ? "s)" : ")");
      return fail_item(i, Error(invalid->code(), what() + ": " + invalid->what() + after));
    }
    if (streams) settle_stream(i, shown(result, *content));
    if (journal) return record(i, call, std::move(*content));
    if (!schema && !tools) result[0] = Value::str(std::move(*content));
    done_one();
  }

  // Journal: item i's reply counts once its row is committed.
  void record(size_t i, lm::Call& call, std::string content) {
    JournalEntry entry{content, call.request().model.as_str(), call.provider_name, name, call.prompt_tokens,
                       call.completion_tokens};
    if (!schema && !tools) results[i * n_out] = Value::str(std::move(content));
    holds.fetch_add(1, std::memory_order_relaxed);
    journal->record(keys[i], std::move(entry), [b = this, i](const Error* err) {
      if (err) b->fail_item(i, *err);
      else b->done_one();
      b->release();
    });
  }
  // Journal: item i answered by an earlier run, as its provider answered it.
  void replay(size_t i, const JournalEntry& recorded) {
    const std::span<Value> result(results.data() + i * n_out, n_out);
    if (profiling) {  // a span of no time on the "journal" track; summaries count it apart
      const int64_t now = lm::now_ns();
      op->record_span(CallSpan{"journal", 0, now, now, now, recorded.model, 0, 0, 0, 0, nullptr, nullptr});
    }
    std::string reply = recorded.reply;
    try {
      parse_into(result, reply);
    } catch (const Error& e) {  // the program's hash binds the schema and tools: a damaged journal
      return fail_item(i, Error(Code::Format, std::string(prim) + ": the journal's reply does not match the "
                                                  "schema or tools: " + e.what()));
    }
    if (streams) settle_stream(i, shown(result, recorded.reply));
    done_one();
  }

  // Streaming: the provider's pieces of item i go to the run as they come.
  void stream(size_t i, const char* data, size_t len) {
    Streamed& it = streamed[i];
    std::lock_guard<std::mutex> lock(it.mu);
    if (data) it.text.append(data, len);
    else it.text.clear();
    op->stream(i, data, len);
  }
  void restart_stream(size_t i) {
    if (!streams) return;
    Streamed& it = streamed[i];
    std::lock_guard<std::mutex> lock(it.mu);
    if (it.text.empty()) return;
    it.text.clear();
    op->stream(i, nullptr, 0);
  }
  // What was streamed for item i ends up equal to its reply, whatever the
  // provider streamed (providers that do not stream send it here whole).
  void settle_stream(size_t i, const std::string& content) {
    Streamed& it = streamed[i];
    std::lock_guard<std::mutex> lock(it.mu);
    if (it.text == content) return;
    if (!it.text.empty()) op->stream(i, nullptr, 0);
    if (!content.empty()) op->stream(i, content.data(), content.size());
    it.text = content;
  }
};

void lm_impl_async(const Eqn& e, std::span<const Value> in, std::shared_ptr<AsyncOp> op, RunEnv& env) {
  const char* prim = e.prim->name.c_str();
  if (!env.context) fail(Code::Internal, std::string(prim) + ": no context to route the model");
  const Value& roles = roles_of(e.params);
  const Value sampling = sampling_of(e.params);
  auto batch = std::make_shared<Batch>();
  batch->self = batch;
  struct Issuing {  // the issuer's hold on the batch, dropped however this returns
    Batch& b;
    ~Issuing() { b.release(); }
  } issuing{*batch};
  batch->op = op;
  batch->prim = prim;
  if (const Value* s = lm_schema(e.params)) {
    batch->schema = lm::schema_of(*s);
    batch->n_out = batch->schema->leaf_kinds().size();
  }
  if (const Value* t = lm_tools(e.params)) {
    batch->tools = lm::tools_of(*t);
    batch->n_out = lm::kToolOutputs;
    if (const Value* c = lm_tool_choice(e.params)) batch->tool_choice = *c;
  }
  Expansion ex;
  ex.item_errors = env.item_errors;
  Row row;
  for (const Value& v : in) row.push_back(&v);
  ex.width = row.size();
  std::vector<size_t> at;
  expand(prim, row, ex.shape, ex, at, env.batch_base);
  batch->shape = std::move(ex.shape);
  const size_t n = ex.size();
  batch->items = std::vector<Item>(n);
  batch->results.reserve(n * batch->n_out);
  for (size_t k = 0; k < n * batch->n_out; ++k) batch->results.emplace_back();
  batch->remaining.store(n);
  if (n == 0) {  // an empty batch: empty lists out
    std::vector<Value> out(batch->n_out, Value::list({}));
    op->succeed(std::move(out));
    return;
  }
  // Per-item errors apply to the items of a batched call only.
  batch->item_errors = env.item_errors && !batch->shape.leaf;
  batch->streams = op->streams(e);
  batch->profiling = op->profiling();
  batch->queued_at = lm::now_ns();
  if (batch->streams) batch->streamed = std::make_unique<Streamed[]>(n);
  if (env.journal) {
    batch->journal = env.journal;
    batch->name = name_path_text(e.name_path());
    batch->keys = std::make_unique<JournalKey[]>(n);
  }
  auto item_error = [&batch](size_t i, const Value& error) { batch->set_result(i, error); };
  // Route every request first: a missing route fails before anything runs
  // (with per-item errors, fails its item).
  lm::Router& router = env.context->router();
  batch->batched = n > 1 || !batch->shape.leaf;
  batch->base = env.batch_base;
  size_t n_failed = 0;
  // The route of the model asked last: a batch's items mostly share one.
  const std::string* routed_model = nullptr;
  // lm_tool_call: each item's history, read before any request is made.
  std::vector<std::vector<lm::Message>> histories(batch->tools ? n : 0);
  const Value* parts = lm_parts(e.params);
  const size_t n_contents = parts ? content_count(e.params) : roles.size();
  for (size_t i = 0; i < n; ++i) {
    if (ex.failed[i]) {
      item_error(i, *ex.failed[i]);
      ++n_failed;
      continue;
    }
    if (batch->tools || parts) {
      try {
        if (parts) check_images(prim, roles, *parts, ex.row(i));
        if (batch->tools) histories[i] = lm::history_messages(prim, ex.row(i)[n_contents]->as_str());
      } catch (const Error& err) {
        if (!batch->item_errors) throw;
        item_error(i, error_value(Error(err.code(), std::string(err.what()) + batch_item(batch->base, i))));
        ++n_failed;
        continue;
      }
    }
    const std::string& model = ex.row(i).back()->as_str();
    if (!routed_model || (routed_model != &model && *routed_model != model)) {
      try {
        batch->routes.push_back(router.resolve(model));
        routed_model = &model;
      } catch (const Error& err) {
        if (!batch->item_errors || !is_item_failure(err)) throw;
        item_error(i, error_value(Error(err.code(), std::string(prim) + batch_item(batch->base, i) + ": " +
                                                        err.what())));
        ++n_failed;
        continue;
      }
    }
    Item& it = batch->items[i];
    it.requested = true;
    it.providers = batch->routes.back().get();
  }
  std::weak_ptr<Batch> weak = batch;
  op->on_cancel([weak] {
    if (auto b = weak.lock()) b->cancel_all(Error(Code::Cancelled, "the run was cancelled"));
  });
  // Items that failed already are done; when every item has, no request runs.
  batch->remaining.store(n - n_failed);
  if (n_failed == n) return batch->finish();
  // Inline for an unbatched call: it allocates no arrays of its own.
  SmallVec<std::shared_ptr<lm::Call>, 1> calls;
  SmallVec<size_t, 1> called;
  calls.reserve(n - n_failed);
  called.reserve(n - n_failed);
  // What the requests of a large batch share is counted per batch
  // (lm::own_count; those waits were most of this function's own time):
  // the batch copies the first request's model name once (requests asking
  // another model share its count, as before) and holds the schema and
  // tags through counts of its own.
  const bool own_counts = n - n_failed >= lm::kOwnCountFrom;
  const std::shared_ptr<const lm::Schema> schema = own_counts ? lm::own_count(batch->schema) : batch->schema;
  const auto tags = own_counts ? lm::own_count(e.tags()) : e.tags();
  const std::string* own_of = nullptr;  // the model name `own_model` copies
  Value own_model;
  // Their calls come from arenas of up to lm::kCallsPerArena calls
  // (lm/call_arena.h: freed on the provider's thread a block at a time).
  lm::CallArenaHold arena;
  size_t made = 0;
  // Journal: what the equation's requests share.
  const std::string key_base = batch->journal ? request_base(e, sampling) : std::string();
  for (size_t i = 0; i < n; ++i) {
    if (!batch->items[i].requested) continue;
    if (own_counts && made % lm::kCallsPerArena == 0)
      arena.reset(lm::CallArena::make(std::min(lm::kCallsPerArena, n - n_failed - made)));
    lm::Request req;
    const Value& asked = *ex.row(i).back();
    if (own_counts && !own_of) {
      own_of = &asked.as_str();
      own_model = Value::str(*own_of);
    }
    req.model = &asked.as_str() == own_of ? own_model : asked;
    req.messages.reserve(roles.size());
    if (parts) {
      add_part_messages(req, roles, *parts, ex.row(i));
    } else {
      for (size_t k = 0; k < roles.size(); ++k)
        req.messages.push_back(lm::Message{roles.items()[k].as_str(), *ex.row(i)[k]});
    }
    if (batch->tools) {  // the conversation so far, after the call's own messages
      for (lm::Message& m : histories[i]) req.messages.push_back(std::move(m));
      req.tools = batch->tools;
      req.tool_choice = batch->tool_choice;
    }
    req.schema = schema;
    req.tags = tags;
    req.sampling = sampling;
    req.stream = batch->streams;
    if (batch->journal) {
      batch->keys[i] = request_key(key_base, req);
      if (std::optional<JournalEntry> recorded = batch->journal->take(batch->keys[i])) {
        batch->replay(i, *recorded);  // no request: the last one may finish the batch
        continue;
      }
    }
    calls.push_back(batch->make_call(i, std::move(req), arena.get()));
    called.push_back(i);
    ++made;
  }
  batch->submit_calls(std::span<std::shared_ptr<lm::Call>>(calls.data(), calls.size()),
                      std::span<const size_t>(called.data(), called.size()));
}

void lm_batch(BatchCtx& ctx, const Eqn& e);
void lm_push(PushCtx& ctx, const Eqn& e);
void lm_pull_bwd(PullCtx& ctx, const Eqn& e);

// lm_tool_call has no tangent or feedback rule: what would "improve" a
// choice of tool is not text about one input. Reached only when a tangent
// or cotangent does reach it.
void tool_call_push(PushCtx&, const Eqn&) {
  invalid("pushforward: lm_tool_call has no pushforward rule (a tangent reaches its messages or history; wrap "
          "them in stop_gradient)");
}
void tool_call_pull_bwd(PullCtx&, const Eqn&) {
  invalid("pullback: lm_tool_call has no pullback rule (a cotangent reaches its result; wrap the result in "
          "stop_gradient)");
}

Prim lm_prim(const char* name, std::vector<ParamSpec> params,
             AbstractOut (*abstract)(const Params&, std::span<const Aval>, const TreeDef&),
             void (*push)(PushCtx&, const Eqn&) = lm_push,
             void (*pull_bwd)(PullCtx&, const Eqn&) = lm_pull_bwd) {
  return Prim{
      .name = name,
      .flags = kNondeterministic,
      .cost = kLmCallCost,
      .params = std::move(params),
      .impl_async = lm_impl_async,
      .abstract_eval = abstract,
      .batch = lm_batch,
      .pushforward = push,
      .pullback_fwd = pull_fwd_copy,
      .pullback_bwd = pull_bwd,
      .dce = dce_whole,
  };
}

// A str, or a traced value of kind str.
bool str_like(const Value& v) {
  return v.kind() == Kind::Str || (v.kind() == Kind::Placeholder && v.placeholder_ref().kind == Kind::Str);
}

// A message's content given as parts: one content input per part, and the
// parts param's entry for the message (a list of "text", "url" or an image
// media type).
Value split_parts(const std::string& at, const Value& content, std::vector<Value>& contents) {
  if (content.items().empty()) invalid(at + ": the content is an empty list of parts; give at least one part");
  std::vector<Value> kinds;
  for (size_t j = 0; j < content.size(); ++j) {
    const Value& part = content.items()[j];
    const std::string pat = at + ".content[" + std::to_string(j) + "]";
    const Value* type = part.kind() == Kind::Dict ? part.find("type") : nullptr;
    if (!type || type->kind() != Kind::Str)
      invalid(pat + " must be {\"type\": \"text\", \"text\": str} or {\"type\": \"image\", \"url\": str} or "
                    "{\"type\": \"image\", \"media_type\": \"image/png\", \"data\": base64 str}");
    auto only = [&](std::initializer_list<std::string_view> keys) {
      for (const Entry& entry : part.entries())
        if (std::find(keys.begin(), keys.end(), entry.first) == keys.end())
          invalid(pat + " has an unknown key \"" + entry.first + "\"");
    };
    auto field = [&](const char* key) -> const Value& {
      const Value* v = part.find(key);
      if (!v || !str_like(*v)) invalid(pat + " needs a str \"" + key + "\"");
      return *v;
    };
    if (type->as_str() == "text") {
      only({"type", "text"});
      contents.push_back(field("text"));
      kinds.push_back(Value::str("text"));
    } else if (type->as_str() == "image" && part.find("url")) {
      only({"type", "url"});
      contents.push_back(field("url"));
      kinds.push_back(Value::str("url"));
    } else if (type->as_str() == "image") {
      only({"type", "media_type", "data"});
      const Value* mt = part.find("media_type");
      if (!mt || mt->kind() != Kind::Str || !lm::image_media_type(mt->as_str()))
        invalid(pat + ": an image given as data needs a concrete \"media_type\": image/png, image/jpeg, image/gif "
                      "or image/webp (or give \"url\")");
      contents.push_back(field("data"));
      kinds.push_back(*mt);
    } else {
      invalid(pat + ": unknown part type \"" + type->as_str() + "\" (text or image)");
    }
  }
  return Value::list(std::move(kinds));
}

// Checks messages and splits them into roles (static) and contents (one
// input per plain message, one per part of a message given as parts);
// `parts` is the parts param, or null when no message has parts.
void split_messages(const char* op, const Value& messages, Value& roles, std::vector<Value>& contents,
                    Value& parts) {
  if (messages.kind() != Kind::List)
    invalid(std::string(op) + ": messages must be a list of {\"role\", \"content\"} dicts, found " +
            kind_name(messages.kind()));
  if (messages.items().empty()) invalid(std::string(op) + ": messages is empty; give at least one message");
  std::vector<Value> rs, message_parts;  // message_parts: from the first message with parts on
  for (size_t i = 0; i < messages.items().size(); ++i) {
    const Value& m = messages.items()[i];
    std::string at = std::string(op) + ": messages[" + std::to_string(i) + "]";
    if (m.kind() != Kind::Dict) invalid(at + " must be a dict {\"role\", \"content\"}, found " + kind_name(m.kind()));
    for (const auto& [k, _] : m.entries())
      if (k != "role" && k != "content") invalid(at + " has an unknown key \"" + k + "\" (allowed: role, content)");
    const Value* role = m.find("role");
    const Value* content = m.find("content");
    if (!role || !content) invalid(at + " needs both \"role\" and \"content\"");
    if (role->kind() == Kind::Placeholder)
      invalid(at + ": the role is a traced value; roles are static (give a concrete str such as \"user\")");
    if (role->kind() != Kind::Str || role->as_str().empty())
      invalid(at + ": the role must be a non-empty str, found " + (role->kind() == Kind::Str ? "\"\"" : kind_name(role->kind())));
    rs.push_back(*role);
    if (content->kind() == Kind::List) {
      message_parts.resize(i, Value());
      message_parts.push_back(split_parts(at, *content, contents));
      continue;
    }
    if (!str_like(*content))
      invalid(at + ": the content must be str or a list of parts, found " + kind_name(content->kind()));
    contents.push_back(*content);
    if (!message_parts.empty()) message_parts.emplace_back();
  }
  roles = Value::list(std::move(rs));
  parts = message_parts.empty() ? Value() : Value::list(std::move(message_parts));
}

void check_model(const char* op, const Value& model) {
  if (!str_like(model)) invalid(std::string(op) + ": the model must be a str, found " + kind_name(model.kind()));
}


// ---- transform rules
//
// batch: lm_call and lm_schema_call take batched (list) inputs natively, so
//   the rule re-emits the equation on the batched atoms; the impl issues
//   every item's request at once. An input batched at a shallower depth
//   than the others is broadcast first.
// pushforward: the primal call and a second call whose contents are the
//   tangents (a literal message keeps its text: instructions stay; a Zero
//   tangent is ""), same roles, model and schema. Two independent
//   equations, so the executor runs them concurrently. No tangent at all:
//   Zero out, no second call.
// pullback: for every message content that is not a literal, one ordinary
//   lm_call in the backward graph asking for concise, specific, actionable
//   advice on improving that input, given the input, the output and the
//   feedback on it. lm_schema_call's prompt lists every output field (path,
//   value, feedback; "No feedback" for a Zero cotangent). The model
//   cotangent is Zero. (The transform emits no backward equations when
//   every output cotangent is Zero.)

void lm_batch(BatchCtx& ctx, const Eqn& e) {
  bool any = false;
  uint8_t depth = 0;
  for (size_t k = 0; k < ctx.n_in(); ++k) {
    any = any || ctx.batched(k);
    depth = std::max(depth, ctx.b.aval(ctx.in(k)).list_depth);
  }
  std::vector<Atom> in = ctx.ins;
  const Atom* like = nullptr;
  for (size_t k = 0; k < in.size(); ++k)
    if (ctx.batched(k) && ctx.b.aval(in[k]).list_depth == depth) like = &ctx.ins[k];
  for (size_t k = 0; k < in.size(); ++k) {
    uint8_t d = ctx.b.aval(in[k]).list_depth;
    if (d != 0 && d != depth && like) in[k] = broadcast_like(ctx.b, in[k], *like);
  }
  std::vector<Atom> outs = ctx.b.emit(*e.prim, e.params, std::move(in), e.in_tree);
  for (size_t k = 0; k < outs.size(); ++k) ctx.out(k, outs[k], any);
}

void lm_push(PushCtx& ctx, const Eqn& e) {
  ctx.emit_primal();
  const Value* parts = lm_parts(e.params);
  const size_t n = content_count(e.params);
  std::vector<bool> image(n, false);  // an image keeps its primal in the tangent call
  each_content(roles_of(e.params), parts, [&](size_t k, size_t, const Value* kind) { image[k] = is_image(kind); });
  bool any = false;
  for (size_t k = 0; k < n; ++k) any = any || (!image[k] && ctx.tangent(k).has_value());
  const size_t n_out = e.out.size();
  if (!any) {
    for (size_t k = 0; k < n_out; ++k) ctx.tangent_out(k, std::nullopt);
    return;
  }
  std::vector<Atom> in;
  in.reserve(n + 1);
  for (size_t k = 0; k < n; ++k)
    in.push_back(image[k] || (!ctx.primal(k).is_var() && !ctx.tangent(k)) ? ctx.primal(k) : ctx.tangent_or_zero(k));
  in.push_back(ctx.primal(n));  // the model
  std::vector<Atom> t = ctx.b.emit(*e.prim, e.params, std::move(in), e.in_tree);
  for (size_t k = 0; k < n_out; ++k) ctx.tangent_out(k, t[k]);
}

constexpr const char* kFeedbackSystem =
    "You help improve the inputs of a language-model call. You are given one input of the call, the "
    "output the call produced, and feedback on that output. Reply with concise, specific, actionable "
    "advice on how to change that input so that the output improves. Reply with the advice only.";

// Literal text for a format template: braces doubled.
std::string template_text(std::string_view s) {
  std::string out;
  for (char c : s) {
    out += c;
    if (c == '{' || c == '}') out += c;
  }
  return out;
}

// "$.a.b[0]" for each output leaf of a tree, in flattening order.
void leaf_paths(const std::vector<TreeDef::Node>& nodes, size_t& pos, const std::string& path,
                std::vector<std::string>& out) {
  const TreeDef::Node& n = nodes[pos++];
  switch (n.type) {
    case TreeDef::NodeType::Leaf: out.push_back(path); return;
    case TreeDef::NodeType::Null: return;
    case TreeDef::NodeType::List:
      for (uint32_t i = 0; i < n.n_children; ++i) leaf_paths(nodes, pos, path + "[" + std::to_string(i) + "]", out);
      return;
    case TreeDef::NodeType::Dict:
      for (uint32_t i = 0; i < n.n_children; ++i) leaf_paths(nodes, pos, path + "." + n.keys[i], out);
      return;
  }
}

void lm_pull_bwd(PullCtx& ctx, const Eqn& e) {
  const Value& roles = roles_of(e.params);
  const size_t n = content_count(e.params);
  const bool structured = lm_schema(e.params) != nullptr;
  for (size_t k = 0; k < ctx.n_in(); ++k)
    if (ctx.in_aval(k).list_depth != 0)
      invalid(e.prim->name + ": pullback of a batched call is not supported; apply pullback before batch "
              "(batch(pullback(ir)))");
  static const Prim& format = prim("format");
  static const Prim& lm_call = prim("lm_call");
  std::vector<std::string> paths;
  if (structured) {
    size_t pos = 0;
    leaf_paths(e.out_tree.nodes(), pos, "$", paths);
  }
  const Atom model = ctx.primal(n);
  each_content(roles, lm_parts(e.params), [&](size_t k, size_t m, const Value* kind) {
    // A literal message, and an image, get no feedback call.
    if (!ctx.primal(k).is_var() || is_image(kind)) return;
    const std::string& role = roles.items()[m].as_str();
    std::string tmpl = "The input (the " + template_text(role) + " message):\n{}\n\n";
    std::vector<Atom> args{ctx.primal(k)};
    if (!structured) {
      tmpl += "The output:\n{}\n\nFeedback on the output:\n{}";
      args.push_back(ctx.out(0));
      args.push_back(ctx.cotangent_or_zero(0));
    } else {
      tmpl += "The output fields (path, value, feedback):";
      for (size_t j = 0; j < ctx.n_out(); ++j) {
        tmpl += "\n- " + template_text(paths[j]) + " = {}\n  feedback: {}";
        args.push_back(ctx.out(j));
        args.push_back(ctx.cotangent(j) ? *ctx.cotangent(j) : Atom::literal(Value::str("No feedback")));
      }
    }
    tmpl += "\n\nHow should the input be improved?";
    Atom prompt = ctx.b.emit1(format, format_params(std::move(tmpl), {}), std::move(args));
    Params lp = lm_call_params(Value::list({Value::str("system"), Value::str("user")}), Value());
    Atom advice =
        ctx.b.emit1(lm_call, std::move(lp), {Atom::literal(Value::str(kFeedbackSystem)), prompt, model});
    ctx.add_cotangent(k, advice);
  });
}

// roles, the sampling params (optional), then what the primitive adds.
std::vector<ParamSpec> lm_param_specs_with(std::vector<ParamSpec> more) {
  std::vector<ParamSpec> ps{{.name = kParamRoles, .value_kind = Kind::List},
                            {.name = kParamParts, .value_kind = Kind::List, .optional = true}};
  for (const SamplingParam& sp : kSampling)
    ps.push_back({.name = sp.name, .value_kind = sp.kind, .optional = true});
  for (ParamSpec& p : more) ps.push_back(std::move(p));
  return ps;
}

// ---- tool_results(history, turn, results...) -> history (lm/tools.h)
//
// The results are one list<str> input (a list the program computed, such
// as a scan's ys) or one str input per result (a list written in the
// program, whose items may be traced).

bool results_as_list(std::span<const Aval> in) { return in.size() == 3 && in[2] == Aval{Kind::Str, 1}; }

AbstractOut tool_results_abstract(const Params&, std::span<const Aval> in, const TreeDef&) {
  bool ok = in.size() >= 2 && in[0] == Aval{Kind::Str, 0} && in[1] == Aval{Kind::Str, 0};
  if (ok && !results_as_list(in))
    for (size_t k = 2; k < in.size(); ++k) ok = ok && in[k] == Aval{Kind::Str, 0};
  if (!ok) invalid("tool_results: takes a history (str), a turn (str) and the results (a list of str)");
  return AbstractOut{{Aval{Kind::Str, 0}}, TreeDef::leaf()};
}

void tool_results_impl(const Eqn&, std::span<const Value> in, std::span<Value> out, RunEnv& env) {
  const bool listed = in.size() == 3 && in[2].kind() == Kind::List;
  const Value results = listed ? in[2] : Value::list(std::vector<Value>(in.begin() + 2, in.end()));
  std::string h = lm::history_with(in[0].as_str(), in[1].as_str(), results);
  env.check_value_bytes("tool_results", h.size());  // a loop appending to its history meets it
  out[0] = Value::str(std::move(h));
}

// The history is a record, not a text to improve: no tangent, no feedback.
void tool_results_push(PushCtx& ctx, const Eqn&) {
  ctx.emit_primal();
  ctx.tangent_out(0, std::nullopt);
}
void tool_results_pull_bwd(PullCtx&, const Eqn&) {}

}  // namespace

Params lm_call_params(Value roles, Value parts) {
  Params p;
  p.set(kParamRoles, std::move(roles));
  if (!parts.is_null()) p.set(kParamParts, std::move(parts));
  return p;
}
Params lm_schema_call_params(Value roles, Value parts, Value schema) {
  Params p = lm_call_params(std::move(roles), std::move(parts));
  p.set(kParamSchema, std::move(schema));
  return p;
}
Params lm_tool_call_params(Value roles, Value parts, Value tools) {
  Params p = lm_call_params(std::move(roles), std::move(parts));
  p.set(kParamTools, std::move(tools));
  return p;
}
std::vector<ParamSpec> lm_call_param_specs() { return lm_param_specs_with({}); }
std::vector<ParamSpec> lm_schema_call_param_specs() { return lm_param_specs_with({{.name = kParamSchema}}); }
std::vector<ParamSpec> lm_tool_call_param_specs() {
  return lm_param_specs_with(
      {{.name = kParamTools}, {.name = kParamToolChoice, .value_kind = Kind::Str, .optional = true}});
}
const Value* lm_roles(const Params& p) { return p.find_value(kParamRoles); }
const Value* lm_parts(const Params& p) { return p.find_value(kParamParts); }
const Value* lm_schema(const Params& p) { return p.find_value(kParamSchema); }
const Value* lm_tools(const Params& p) { return p.find_value(kParamTools); }
const Value* lm_tool_choice(const Params& p) { return p.find_value(kParamToolChoice); }

Value describe_sampling_params() {
  std::vector<Value> out;
  for (const SamplingParam& sp : kSampling) {
    const bool is_int = sp.kind == Kind::Int;
    std::vector<Entry> e{{"key", Value::str(sp.name)},
                         {"kind", Value::str(is_int ? "int" : sp.kind == Kind::Float ? "number" : "list")},
                         {"default", Value()}};
    if (sp.ranged) {
      auto num = [&](double d) { return is_int || sp.kind == Kind::List ? Value::integer(int64_t(d)) : Value::floating(d); };
      e.emplace_back("min", num(sp.min));
      if (!is_int) e.emplace_back("max", num(sp.max));
    }
    e.emplace_back("doc", Value::str(sp.doc));
    out.push_back(Value::dict(std::move(e)));
  }
  return Value::list(std::move(out));
}

void add_lm_prims(std::vector<Prim>& out) {
  out.push_back(lm_prim("lm_call", lm_call_param_specs(), lm_call_abstract));
  out.push_back(lm_prim("lm_schema_call", lm_schema_call_param_specs(), lm_schema_call_abstract));
  out.push_back(lm_prim("lm_tool_call", lm_tool_call_param_specs(), lm_tool_call_abstract, tool_call_push,
                        tool_call_pull_bwd));
  out.push_back(Prim{
      .name = "tool_results",
      .cost = 0.0,
      .params = {},
      .impl = tool_results_impl,
      .abstract_eval = tool_results_abstract,
      .batch = batch_by_map,
      .pushforward = tool_results_push,
      .pullback_fwd = pull_fwd_copy,
      .pullback_bwd = tool_results_pull_bwd,
      .dce = dce_whole,
  });
}

Value op_lm_call(const Value& messages, const Value& model, const Value& sampling, RunEnv& env) {
  Value roles;
  std::vector<Value> in;
  Value parts;
  split_messages("lm_call", messages, roles, in, parts);
  check_model("lm_call", model);
  in.push_back(model);
  Params params = lm_call_params(std::move(roles), std::move(parts));
  set_sampling("lm_call", sampling, params);
  static const Prim& p = prim("lm_call");
  return bind_flat(p, std::move(params), std::move(in), env);
}

Value op_lm_schema_call(const Value& messages, const Value& model, const Value& schema, const Value& sampling,
                        RunEnv& env) {
  Value roles;
  std::vector<Value> in;
  Value parts;
  split_messages("lm_schema_call", messages, roles, in, parts);
  check_model("lm_schema_call", model);
  if (schema.has_placeholder()) invalid("lm_schema_call: the schema is static; it cannot hold traced values");
  try {
    lm::schema_of(schema);  // INVALID_ARGUMENT with the path, before anything is recorded
  } catch (const Error& e) {
    invalid(std::string("lm_schema_call: ") + e.what());
  }
  in.push_back(model);
  Params params = lm_schema_call_params(std::move(roles), std::move(parts), schema);
  set_sampling("lm_schema_call", sampling, params);
  static const Prim& p = prim("lm_schema_call");
  return bind_flat(p, std::move(params), std::move(in), env);
}

}  // namespace af

namespace af {

Value op_lm_tool_call(const Value& messages, const Value& history, const Value& model, const Value& tools,
                      const Value& sampling, RunEnv& env) {
  Value roles;
  std::vector<Value> in;
  Value parts;
  split_messages("lm_tool_call", messages, roles, in, parts);
  if (!str_like(history))
    invalid(std::string("lm_tool_call: the history must be a str (\"\" to start, then what tool_results "
                        "returns), found ") + kind_name(history.kind()));
  if (history.kind() == Kind::Str) lm::history_messages("lm_tool_call", history.as_str());  // fails here, not at run time
  check_model("lm_tool_call", model);
  try {
    lm::tools_of(tools);  // INVALID_ARGUMENT naming the tool, before anything is recorded
  } catch (const Error& e) {
    invalid(std::string("lm_tool_call: ") + e.what());
  }
  in.push_back(history);
  in.push_back(model);
  Params params = lm_tool_call_params(std::move(roles), std::move(parts), tools);
  set_sampling("lm_tool_call", sampling, params, true);
  static const Prim& p = prim("lm_tool_call");
  return bind_flat(p, std::move(params), std::move(in), env);
}

Value op_tool_results(const Value& history, const Value& turn, const Value& results, RunEnv& env) {
  if (!str_like(history)) invalid(std::string("tool_results: the history must be a str, found ") + kind_name(history.kind()));
  if (!str_like(turn)) invalid(std::string("tool_results: the turn must be a str (lm_tool_call's \"turn\"), found ") + kind_name(turn.kind()));
  std::vector<Value> in{history, turn};
  if (results.kind() == Kind::List) {  // written in the program: one input per result
    for (size_t i = 0; i < results.size(); ++i) {
      const Value& r = results.items()[i];
      if (!str_like(r))
        invalid("tool_results: result " + std::to_string(i) + " is " + kind_name(r.kind()) + ", expected str");
      in.push_back(r);
    }
  } else if (results.kind() == Kind::Placeholder && results.placeholder_ref().kind == Kind::Str &&
             results.placeholder_ref().list_depth == 1) {
    in.push_back(results);  // a list the program computed
  } else {
    invalid(std::string("tool_results: the results must be a list of str, found ") + kind_name(results.kind()));
  }
  static const Prim& p = prim("tool_results");
  return bind_flat(p, Params(), std::move(in), env);
}

}  // namespace af
