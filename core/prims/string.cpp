// String primitives: format, concat, match. Each primitive's rules sit
// together; transform rules join them with the transforms.
#include <algorithm>

#include "prims/ops.h"
#include "ir/registry.h"
#include "prims/builtins.h"
#include "prims/template.h"
#include "transforms/batch.h"
#include "transforms/dce.h"
#include "transforms/pullback.h"
#include "transforms/pushforward.h"
#include "trace/trace.h"
#include "value/small_vec.h"
#include "value/error.h"

namespace af {

// ---- params (prims/ops.h): each name spelled once

namespace {
constexpr const char* kParamTemplate = "template";
constexpr const char* kParamNames = "names";
}  // namespace

Params format_params(std::string tmpl, std::vector<Value> names) {
  Params p;
  p.set(kParamTemplate, Value::str(std::move(tmpl)));
  p.set(kParamNames, Value::list(std::move(names)));
  return p;
}
std::vector<ParamSpec> format_param_specs() {
  return {{.name = kParamNames, .value_kind = Kind::List}, {.name = kParamTemplate, .value_kind = Kind::Str}};
}
const Value& format_template(const Params& p) { return p.value(kParamTemplate); }
const Value& format_names(const Params& p) { return p.value(kParamNames); }

namespace {

AbstractOut one_leaf(Kind k) { return AbstractOut{{Aval{k, 0}}, TreeDef::leaf()}; }

void require_str(const char* prim, std::span<const Aval> in) {
  for (size_t i = 0; i < in.size(); ++i)
    if (!(in[i] == Aval{Kind::Str, 0}))
      invalid(std::string(prim) + ": argument " + std::to_string(i) + " is " + aval_name(in[i]) +
              "; every argument must be str (use format to turn other kinds into text)");
}

// ---- format(template P, names P, args..., named...) -> str
// Inputs are the positional argument trees followed by the named ones (in
// the sorted order of the `names` param). Containers are stringified as JSON.

AbstractOut format_abstract(const Params& params, std::span<const Aval> in, const TreeDef& in_tree) {
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i].list_depth != 0 || in[i].kind == Kind::Null || in[i].kind >= Kind::List)
      invalid("format: argument " + std::to_string(i) + " has kind " + aval_name(in[i]));
  // The template against the arguments, as tracing checked them: an
  // equation from elsewhere (a loaded graph) must not make the impl look up
  // an argument that is not there.
  const Template t = parse_template(format_template(params).as_str());
  const auto& names = format_names(params).items();
  const size_t n_args = in_tree.root().n_children;
  if (names.size() > n_args)
    invalid("format: " + std::to_string(names.size()) + " named arguments but only " +
            std::to_string(n_args) + " arguments");
  if (t.max_positional > n_args - names.size())
    invalid("format: the template uses " + std::to_string(t.max_positional) +
            " positional argument(s) but " + std::to_string(n_args - names.size()) + " are given");
  for (const std::string& name : t.names)
    if (std::none_of(names.begin(), names.end(), [&](const Value& n) { return n.as_str() == name; }))
      invalid("format: the template uses the named field \"" + name + "\", which no argument has");
  return one_leaf(Kind::Str);
}

// The parsed template of a format equation. Batched runs call the impl once
// per item with the same params, so the last parse is kept (per thread),
// with the template it parsed: holding that string keeps it alive, so the
// same address is the same text (no comparison of the text per item).
const Template& parsed_template(const Value& tmpl) {
  thread_local Value held;
  thread_local Template parsed;
  if (held.is_null() || &held.as_str() != &tmpl.as_str()) {
    parsed = parse_template(tmpl.as_str());
    held = tmpl;
  }
  return parsed;
}

void format_impl(const Eqn& e, std::span<const Value> in, std::span<Value> out, RunEnv& env) {
  const Template& t = parsed_template(format_template(e.params));
  const auto& names = format_names(e.params).items();
  // Arguments as trees (the flat case, the common one, reads the inputs as
  // they are).
  std::vector<Value> rebuilt;
  const bool flat = e.in_tree.nodes().size() == e.in_tree.root().n_children + 1 &&
                    e.in_tree.num_leaves() == e.in_tree.root().n_children;
  if (!flat) rebuilt = e.in_tree.unflatten(in).items();
  std::span<const Value> args = flat ? in : std::span<const Value>(rebuilt);
  const size_t n_positional = args.size() - names.size();
  // Other kinds than str as text, once each (a field may repeat).
  std::vector<std::string> texts;
  // Each part's field text (empty for a part without one), found once, and
  // the exact size: a template repeating a large argument must fail before
  // it allocates (10 000 fields of 40 MB are 400 GB), and most prompts then
  // take one allocation.
  SmallVec<std::string_view, 8> fields;
  uint64_t size = 0;
  for (const TemplatePart& p : t.parts) {
    std::string_view field;
    if (p.has_field) {
      size_t a = args.size();
      if (p.index >= 0) {
        if (size_t(p.index) < n_positional) a = size_t(p.index);
      } else {
        for (size_t k = 0; k < names.size() && a == args.size(); ++k)
          if (names[k].as_str() == p.name) a = n_positional + k;
      }
      if (a == args.size()) fail(Code::Internal, "format: field without argument survived tracing");
      if (args[a].kind() == Kind::Str) {
        field = args[a].as_str();
      } else {
        if (texts.empty()) texts.resize(args.size());
        if (texts[a].empty()) texts[a] = stringify(args[a]);
        field = texts[a];
      }
    }
    fields.push_back(field);
    size += p.text.size() + field.size();
  }
  env.check_value_bytes("format", size);
  std::string s;
  s.reserve(size);
  for (size_t k = 0; k < t.parts.size(); ++k) {
    s += t.parts[k].text;
    s += fields[k];
  }
  out[0] = Value::str(std::move(s));
}

// ---- concat(strs...) -> str

AbstractOut concat_abstract(const Params&, std::span<const Aval> in, const TreeDef&) {
  require_str("concat", in);
  return one_leaf(Kind::Str);
}

void concat_impl(const Eqn&, std::span<const Value> in, std::span<Value> out, RunEnv& env) {
  uint64_t n = 0;
  for (const Value& v : in) n += v.as_str().size();
  env.check_value_bytes("concat", n);  // a loop doubling a string meets it after 30 rounds
  // Append in place when the run handed over the only copy of the first
  // string (a growing chain then costs the appended bytes, not its length).
  if (Value* first = env.owned(in, 0))
    if (std::string* s = first->unique_str()) {
      for (size_t k = 1; k < in.size(); ++k) *s += in[k].as_str();
      out[0] = std::move(*first);
      return;
    }
  std::string s;
  s.reserve(n);
  for (const Value& v : in) s += v.as_str();
  out[0] = Value::str(std::move(s));
}

// ---- match(a, b) -> bool

// match compares two leaves of any kinds: a port of a program that matches
// a number against a string expects false, not an error (docs/SEMANTICS.md
// §3).
AbstractOut match_abstract(const Params&, std::span<const Aval> in, const TreeDef&) {
  if (in.size() != 2) invalid("match: takes 2 arguments, got " + std::to_string(in.size()));
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i].list_depth != 0 || in[i].kind == Kind::Null || in[i].kind >= Kind::List)
      invalid("match: argument " + std::to_string(i) + " is " + aval_name(in[i]) + "; both must be leaves");
  return one_leaf(Kind::Bool);
}

void match_impl(const Eqn&, std::span<const Value> in, std::span<Value> out, RunEnv&) {
  out[0] = Value::boolean(in[0].kind() == in[1].kind() && in[0] == in[1]);
}

// ---- transform rules
//
// batch: every string primitive maps over the items (batch_by_map).
// format  push: the same template on the tangents (a Zero tangent shows as
//         the zero of its kind: "", 0, 0.0, false).
//         pull: the output cotangent goes to every argument leaf, whatever
//         its kind (feedback is text: an int argument gets the feedback on
//         the text it was formatted into).
// concat  push: concat of the tangents ("" for literals and Zero tangents).
//         pull: the output cotangent goes to every input.
// match   push: Zero. pull: Zero to both inputs.

void format_push(PushCtx& ctx, const Eqn& e) {
  ctx.emit_primal();
  std::vector<Atom> t;
  t.reserve(ctx.n_in());
  // A Zero tangent is shown as the zero of its kind ("", 0, 0.0, false):
  // the same text a materialized Zero (a switch join) would give.
  for (size_t k = 0; k < ctx.n_in(); ++k) t.push_back(ctx.tangent_or_zero(k));
  std::vector<Atom> o = ctx.b.emit_known(*e.prim, e.params, std::move(t), e.in_tree,
                                         std::vector<Aval>{Aval{Kind::Str, 0}}, e.out_tree);
  ctx.tangent_out(0, o[0]);
}

// Every value the output shows gets the feedback on the output, whatever its
// kind (feedback is text): an int argument learns what was wrong with the
// text it was formatted into.
void format_pull_bwd(PullCtx& ctx, const Eqn&) {
  for (size_t k = 0; k < ctx.n_in(); ++k) ctx.add_cotangent(k, *ctx.cotangent(0));
}

void concat_push(PushCtx& ctx, const Eqn& e) {
  ctx.emit_primal();
  std::vector<Atom> t;
  t.reserve(ctx.n_in());
  for (size_t k = 0; k < ctx.n_in(); ++k)
    t.push_back(ctx.tangent(k) ? *ctx.tangent(k) : Atom::literal(Value::str("")));
  ctx.tangent_out(0, ctx.b.emit1(*e.prim, Params(), std::move(t)));
}

void concat_pull_bwd(PullCtx& ctx, const Eqn&) {
  for (size_t k = 0; k < ctx.n_in(); ++k) ctx.add_cotangent(k, *ctx.cotangent(0));
}

void match_push(PushCtx& ctx, const Eqn&) {
  ctx.emit_primal();
  ctx.tangent_out(0, std::nullopt);
}

void match_pull_bwd(PullCtx&, const Eqn&) {}

}  // namespace

void add_string_prims(std::vector<Prim>& out) {
  out.push_back(Prim{
      .name = "format",
      .params = format_param_specs(),
      .impl = format_impl,
      .abstract_eval = format_abstract,
      .batch = batch_by_map,
      .pushforward = format_push,
      .pullback_fwd = pull_fwd_copy,
      .pullback_bwd = format_pull_bwd,
      .dce = dce_whole,
  });
  out.push_back(Prim{
      .name = "concat",
      .params = {},
      .impl = concat_impl,
      .abstract_eval = concat_abstract,
      .batch = batch_by_map,
      .pushforward = concat_push,
      .pullback_fwd = pull_fwd_copy,
      .pullback_bwd = concat_pull_bwd,
      .dce = dce_whole,
  });
  out.push_back(Prim{
      .name = "match",
      .params = {},
      .impl = match_impl,
      .abstract_eval = match_abstract,
      .batch = batch_by_map,
      .pushforward = match_push,
      .pullback_fwd = pull_fwd_copy,
      .pullback_bwd = match_pull_bwd,
      .dce = dce_whole,
  });
}

Value op_format(std::string_view tmpl, std::span<const Value> args, const Value& named,
                RunEnv& env) {
  if (!valid_utf8(tmpl)) invalid("format: the template is not valid UTF-8");
  if (!named.is_null() && named.kind() != Kind::Dict)
    invalid(std::string("format: named arguments must be a dict, got ") + kind_name(named.kind()));
  Template t = parse_template(tmpl);
  std::string quoted;
  append_json_string(quoted, tmpl);
  if (t.max_positional > args.size())
    invalid("format template " + quoted + " uses " + std::to_string(t.max_positional) +
            " positional argument(s) but " + std::to_string(args.size()) + " were given");
  for (const std::string& name : t.names)
    if (!named.find(name))
      invalid("format template " + quoted + " uses the named argument {" + name +
              "} but no such named argument was given");
  std::vector<Value> in(args.begin(), args.end());
  std::vector<Value> names;
  for (uint32_t i : named.sorted()) {
    names.push_back(Value::str(named.entries()[i].first));
    in.push_back(named.entries()[i].second);
  }
  static const Prim& p = prim("format");
  return bind(p, format_params(std::string(tmpl), std::move(names)), Value::list(std::move(in)), env);
}

Value op_concat(std::span<const Value> args, RunEnv& env) {
  for (size_t i = 0; i < args.size(); ++i)
    if (!args[i].is_leaf())
      invalid("concat: argument " + std::to_string(i) + " is " + kind_name(args[i].kind()) +
              "; every argument must be str (use format to turn other kinds into text)");
  static const Prim& p = prim("concat");
  return bind_flat(p, Params(), std::vector<Value>(args.begin(), args.end()), env);
}

Value op_match(const Value& a, const Value& b, RunEnv& env) {
  for (const Value* v : {&a, &b})
    if (!v->is_leaf())
      invalid(std::string("match: an argument is ") + kind_name(v->kind()) + "; both must be leaves (str, int, float or bool)");
  static const Prim& p = prim("match");
  return bind_flat(p, Params(), {a, b}, env);
}

}  // namespace af
