// The primitives pullback and pushforward emit to combine tangents and
// cotangents (docs/SEMANTICS.md §4):
//
//   accumulate(xs...) -> x          strings concatenated in order, ints and
//       floats summed, bools or-ed, lists element by element.
//   accumulate_items(list) -> item  accumulate over a list's items (the
//       cotangent of a value shared by every batch item).
//   zeros_like(x) -> x              Zero materialized, shaped like x ("" for
//       str, 0, 0.0, false; lists keep their lengths). With text=true the
//       zeros are "" whatever x's kind: a zero cotangent (feedback is text).
#include "ir/registry.h"
#include "prims/builtins.h"
#include "transforms/batch.h"
#include "transforms/dce.h"
#include "transforms/prim_params.h"
#include "transforms/builder.h"
#include "transforms/pullback.h"
#include "transforms/pushforward.h"
#include "value/error.h"

namespace af {

namespace {

Value accumulate_values(std::span<const Value> xs, Kind kind_hint) {
  if (xs.empty()) return zero_value(kind_hint);
  switch (xs[0].kind()) {
    case Kind::Str: {
      size_t n = 0;
      for (const Value& x : xs) n += x.as_str().size();
      std::string s;
      s.reserve(n);
      for (const Value& x : xs) s += x.as_str();
      return Value::str(std::move(s));
    }
    case Kind::Int: {
      int64_t sum = 0;
      for (const Value& x : xs) sum += x.as_int();
      return Value::integer(sum);
    }
    case Kind::Float: {
      double sum = 0;
      for (const Value& x : xs) sum += x.as_float();
      return Value::floating(sum);
    }
    case Kind::Bool: {
      bool any = false;
      for (const Value& x : xs) any = any || x.as_bool();
      return Value::boolean(any);
    }
    case Kind::List: {
      const size_t n = xs[0].size();
      for (const Value& x : xs)
        if (x.kind() != Kind::List || x.size() != n)
          invalid("accumulate: lists of different lengths (" + std::to_string(n) + " and " +
                  std::to_string(x.size()) + ")");
      std::vector<Value> items;
      items.reserve(n);
      std::vector<Value> col(xs.size());
      for (size_t i = 0; i < n; ++i) {
        for (size_t j = 0; j < xs.size(); ++j) col[j] = xs[j].items()[i];
        items.push_back(accumulate_values(col, kind_hint));
      }
      return Value::list(std::move(items));
    }
    default: invalid(std::string("accumulate: cannot accumulate ") + kind_name(xs[0].kind()));
  }
}

Value zeros_of(const Value& x, bool text) {
  if (x.kind() == Kind::List) {
    std::vector<Value> items;
    items.reserve(x.size());
    for (const Value& item : x.items()) items.push_back(zeros_of(item, text));
    return Value::list(std::move(items));
  }
  return zero_value(text ? Kind::Str : x.kind());
}

// ---- accumulate

AbstractOut accumulate_abstract(const Params&, std::span<const Aval> in, const TreeDef&) {
  if (in.empty()) invalid("accumulate: takes at least one input");
  for (const Aval& a : in)
    if (!(a == in[0])) invalid("accumulate: inputs of different kinds (" + aval_name(in[0]) + " and " + aval_name(a) + ")");
  if (in[0].kind == Kind::Null || in[0].kind >= Kind::List)
    invalid("accumulate: cannot accumulate " + aval_name(in[0]));
  return AbstractOut{{in[0]}, TreeDef::leaf()};
}

void accumulate_impl(const Eqn&, std::span<const Value> in, std::span<Value> out, RunEnv&) {
  out[0] = accumulate_values(in, in.empty() ? Kind::Str : in[0].kind());
}

void accumulate_push(PushCtx& ctx, const Eqn& e) {
  ctx.emit_primal();
  std::vector<Atom> t;
  for (size_t k = 0; k < ctx.n_in(); ++k)
    if (ctx.tangent(k)) t.push_back(*ctx.tangent(k));
  ctx.tangent_out(0, t.size() == 1 ? t[0] : ctx.b.emit1(*e.prim, Params(), std::move(t)));
}

void accumulate_pull_bwd(PullCtx& ctx, const Eqn&) {
  for (size_t k = 0; k < ctx.n_in(); ++k) ctx.add_cotangent(k, *ctx.cotangent(0));
}

// ---- accumulate_items

AbstractOut accumulate_items_abstract(const Params&, std::span<const Aval> in, const TreeDef&) {
  if (in.size() != 1 || in[0].list_depth == 0)
    invalid("accumulate_items: takes one list");
  return AbstractOut{{Aval{in[0].kind, uint8_t(in[0].list_depth - 1)}}, TreeDef::leaf()};
}

void accumulate_items_impl(const Eqn& e, std::span<const Value> in, std::span<Value> out, RunEnv&) {
  if (in[0].kind() != Kind::List) invalid("accumulate_items: the input is not a list");
  (void)e;
  if (in[0].size() == 0) invalid("accumulate_items: the list is empty (no item to accumulate)");
  out[0] = accumulate_values(in[0].items(), Kind::Str);
}

void accumulate_items_push(PushCtx& ctx, const Eqn& e) {
  ctx.emit_primal();
  ctx.tangent_out(0, ctx.b.emit1(*e.prim, Params(), {*ctx.tangent(0)}));
}

void accumulate_items_pull_bwd(PullCtx& ctx, const Eqn&) {
  ctx.add_cotangent(0, broadcast_like(ctx.b, *ctx.cotangent(0), ctx.primal(0)));
}

// ---- zeros_like

AbstractOut zeros_like_abstract(const Params& p, std::span<const Aval> in, const TreeDef&) {
  if (in.size() != 1) invalid("zeros_like: takes one input");
  if (in[0].kind == Kind::Null || in[0].kind >= Kind::List) invalid("zeros_like: no zero of " + aval_name(in[0]));
  return AbstractOut{{zeros_like_text(p) ? Aval{Kind::Str, in[0].list_depth} : in[0]}, TreeDef::leaf()};
}

void zeros_like_impl(const Eqn& e, std::span<const Value> in, std::span<Value> out, RunEnv&) {
  out[0] = zeros_of(in[0], zeros_like_text(e.params));
}

void zero_push(PushCtx& ctx, const Eqn&) {
  ctx.emit_primal();
  ctx.tangent_out(0, std::nullopt);
}

void zero_pull_bwd(PullCtx&, const Eqn&) {}

}  // namespace

void add_linear_prims(std::vector<Prim>& out) {
  out.push_back(Prim{
      .name = "accumulate",
      .cost = 0.0,
      .params = {},
      .impl = accumulate_impl,
      .abstract_eval = accumulate_abstract,
      .batch = batch_by_map,
      .pushforward = accumulate_push,
      .pullback_fwd = pull_fwd_copy,
      .pullback_bwd = accumulate_pull_bwd,
      .dce = dce_whole,
  });
  out.push_back(Prim{
      .name = "accumulate_items",
      .cost = 0.0,
      .params = {},
      .impl = accumulate_items_impl,
      .abstract_eval = accumulate_items_abstract,
      .batch = batch_by_map,
      .pushforward = accumulate_items_push,
      .pullback_fwd = pull_fwd_copy,
      .pullback_bwd = accumulate_items_pull_bwd,
      .dce = dce_whole,
  });
  out.push_back(Prim{
      .name = "zeros_like",
      .cost = 0.0,
      .params = zeros_like_param_specs(),
      .impl = zeros_like_impl,
      .abstract_eval = zeros_like_abstract,
      .batch = batch_identity,
      .pushforward = zero_push,
      .pullback_fwd = pull_fwd_copy,
      .pullback_bwd = zero_pull_bwd,
      .dce = dce_whole,
  });
}

}  // namespace af
