// String primitives: format, concat, match. Each primitive's rules sit
// together; transform rules join them with the transforms.
#include <algorithm>

#include "prims/ops.h"
#include "prims/registry.h"
#include "prims/template.h"
#include "trace/trace.h"
#include "value/error.h"

namespace af {

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

AbstractOut format_abstract(const Params& params, std::span<const Aval> in, const TreeDef&) {
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i].list_depth != 0 || in[i].kind == Kind::Null || in[i].kind >= Kind::List)
      invalid("format: argument " + std::to_string(i) + " has kind " + aval_name(in[i]));
  return one_leaf(Kind::Str);
}

void format_impl(const Eqn& e, std::span<const Value> in, std::span<Value> out, RunEnv&) {
  Template t = parse_template(e.params.value("template").as_str());
  const auto& names = e.params.value("names").items();
  // Arguments as trees (the flat case needs no rebuilding).
  std::vector<Value> args;
  const bool flat = e.in_tree.nodes().size() == e.in_tree.root().n_children + 1;
  if (flat) {
    args.assign(in.begin(), in.end());
  } else {
    args = e.in_tree.unflatten(in).items();
  }
  size_t n_positional = args.size() - names.size();
  std::string s;
  for (const TemplatePart& p : t.parts) {
    s += p.text;
    if (!p.has_field) continue;
    const Value* arg = nullptr;
    if (p.index >= 0) {
      if (size_t(p.index) < n_positional) arg = &args[size_t(p.index)];
    } else {
      for (size_t k = 0; k < names.size() && !arg; ++k)
        if (names[k].as_str() == p.name) arg = &args[n_positional + k];
    }
    if (!arg) fail(Code::Internal, "format: field without argument survived tracing");
    if (arg->kind() == Kind::Str) {
      s += arg->as_str();
    } else {
      s += stringify(*arg);
    }
  }
  out[0] = Value::str(std::move(s));
}

// ---- concat(strs...) -> str

AbstractOut concat_abstract(const Params&, std::span<const Aval> in, const TreeDef&) {
  require_str("concat", in);
  return one_leaf(Kind::Str);
}

void concat_impl(const Eqn&, std::span<const Value> in, std::span<Value> out, RunEnv&) {
  size_t n = 0;
  for (const Value& v : in) n += v.as_str().size();
  std::string s;
  s.reserve(n);
  for (const Value& v : in) s += v.as_str();
  out[0] = Value::str(std::move(s));
}

// ---- match(a, b) -> bool

AbstractOut match_abstract(const Params&, std::span<const Aval> in, const TreeDef&) {
  if (in.size() != 2) invalid("match: takes 2 arguments, got " + std::to_string(in.size()));
  require_str("match", in);
  return one_leaf(Kind::Bool);
}

void match_impl(const Eqn&, std::span<const Value> in, std::span<Value> out, RunEnv&) {
  out[0] = Value::boolean(in[0].as_str() == in[1].as_str());
}

}  // namespace

void add_string_prims(std::vector<Prim>& out) {
  Prim format;
  format.name = "format";
  format.impl = format_impl;
  format.abstract_eval = format_abstract;
  out.push_back(format);

  Prim concat;
  concat.name = "concat";
  concat.impl = concat_impl;
  concat.abstract_eval = concat_abstract;
  out.push_back(concat);

  Prim match;
  match.name = "match";
  match.impl = match_impl;
  match.abstract_eval = match_abstract;
  out.push_back(match);
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
  Params params;
  params.set("template", Value::str(std::string(tmpl)));
  params.set("names", Value::list(std::move(names)));
  static const Prim& p = prim("format");
  return bind(p, std::move(params), Value::list(std::move(in)), env);
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
      invalid(std::string("match: an argument is ") + kind_name(v->kind()) + "; both must be str");
  static const Prim& p = prim("match");
  return bind_flat(p, Params(), {a, b}, env);
}

}  // namespace af
