#include "ir/ir.h"

#include <algorithm>

#include "value/error.h"

namespace af {

Shared<EqnNotes> EqnNotes::of(Tags tags, NamePath name_path, std::optional<EqnSched> sched) {
  if (!tags && !name_path && !sched) return nullptr;
  return Shared<EqnNotes>::make(EqnNotes{std::move(tags), std::move(name_path), sched});
}

Tags union_tags(const Tags& a, const Tags& b) {
  if (!a || a->empty()) return b;
  if (!b || b->empty()) return a;
  auto merged = std::make_shared<std::vector<std::string>>();
  std::set_union(a->begin(), a->end(), b->begin(), b->end(), std::back_inserter(*merged));
  return merged;
}

NamePath join_names(const NamePath& outer, const NamePath& inner) {
  if (!outer || outer->empty()) return inner;
  if (!inner || inner->empty()) return outer;
  auto joined = std::make_shared<std::vector<std::string>>(*outer);
  joined->insert(joined->end(), inner->begin(), inner->end());
  return joined;
}

std::string name_path_text(const NamePath& p) {
  std::string s;
  if (p)
    for (const std::string& name : *p) s += (s.empty() ? "" : "/") + name;
  return s;
}

NamePath pushed_name(const NamePath& path, std::string name) {
  if (name.empty()) invalid("a name is empty; give each module or step a non-empty name");
  if (name.find('/') != std::string::npos)
    invalid("the name \"" + name +
            "\" holds '/', which separates the levels of a name path: push one name per level");
  return join_names(path, std::make_shared<const std::vector<std::string>>(1, std::move(name)));
}

NamePath popped_name(const NamePath& path) {
  if (!path || path->empty()) invalid("name pop without a matching push");
  if (path->size() == 1) return nullptr;
  return std::make_shared<const std::vector<std::string>>(path->begin(), path->end() - 1);
}

Error named_error(const NamePath& path, const Error& err) {
  if (!path || path->empty()) return err;
  return Error(err.code(), "in " + name_path_text(path) + ": " + err.what(), err.cause_ptr());
}

std::string aval_name(const Aval& a) {
  std::string s = kind_name(a.kind);
  for (int i = 0; i < a.list_depth; ++i) s = "list<" + s + ">";
  return s;
}

Aval aval_of(const Value& v) {
  if (v.kind() == Kind::Placeholder) return Aval{v.placeholder_ref().kind, v.placeholder_ref().list_depth};
  if (v.kind() != Kind::List || v.size() == 0) return Aval{v.kind(), 0};
  // A list of leaves of one kind (a batched value) is list<kind>.
  Aval first = aval_of(v.items().front());
  // From the second item on: revisiting the first would make nested lists
  // cost 2^depth.
  for (size_t i = 1; i < v.items().size(); ++i)
    if (!(aval_of(v.items()[i]) == first)) return Aval{Kind::List, 0};
  if (first.kind == Kind::List || first.kind == Kind::Dict || first.kind == Kind::Null)
    return Aval{Kind::List, 0};
  return Aval{first.kind, uint8_t(first.list_depth + 1)};
}

uint32_t nesting_depth(const Params& params) {
  uint32_t depth = 0;
  params.any_ir([&](const IR& sub) {
    const uint32_t below = sub.facts.height([&] {
      uint32_t h = 0;
      for (const Eqn& e : sub.eqns) h = std::max(h, nesting_depth(e.params));
      return h;
    });
    depth = std::max(depth, below + 1);
    return false;
  });
  return depth;
}

void check_nesting(const Params& params, const std::string& what) {
  const uint32_t depth = nesting_depth(params);
  if (depth > kMaxIrDepth)
    invalid(what + ": its sub-IRs would nest " + std::to_string(depth) + " levels deep, more than the limit of " +
            std::to_string(kMaxIrDepth) + " (a graph nested deeper cannot be saved or loaded); flatten a level");
}

void set_input_roles(IR& ir, std::vector<InputRole> roles) {
  if (std::all_of(roles.begin(), roles.end(), [](InputRole r) { return r == InputRole::Primal; })) roles.clear();
  ir.in_roles = std::move(roles);
}

std::vector<InputRole> input_roles(const IR& ir) {
  if (ir.in_roles.empty()) return std::vector<InputRole>(ir.in.size(), InputRole::Primal);
  return ir.in_roles;
}

Value zero_value(Kind k) {
  switch (k) {
    case Kind::Str: return Value::str("");
    case Kind::Int: return Value::integer(0);
    case Kind::Float: return Value::floating(0.0);
    case Kind::Bool: return Value::boolean(false);
    default: fail(Code::Internal, std::string("no zero of kind ") + kind_name(k));
  }
}

const Params::Items& Params::empty_items() noexcept {
  static const Items none;
  return none;
}

void Params::set(std::string name, Param p) {
  // Copy on write: other Params may share the block (a block only this
  // object holds is changed in place).
  if (!items_) items_ = Shared<Items>::make();
  else if (!items_.unique()) items_ = Shared<Items>::make(*items_);
  Items* items = &items_.mutable_value();
  auto it = std::lower_bound(items->begin(), items->end(), name,
                             [](const auto& item, const std::string& n) { return item.first < n; });
  if (it != items->end() && it->first == name) {
    it->second = std::move(p);
  } else {
    items->emplace(it, std::move(name), std::move(p));
  }
}

const Param* Params::find(std::string_view name) const noexcept {
  const Items& v = items();
  if (v.size() <= 8) {  // most blocks: a scan comparing lengths first beats the search's string orderings
    for (const auto& item : v)
      if (item.first == name) return &item.second;
    return nullptr;
  }
  auto it = std::lower_bound(v.begin(), v.end(), name,
                             [](const auto& item, std::string_view n) { return item.first < n; });
  if (it == v.end() || it->first != name) return nullptr;
  return &it->second;
}

const Value* Params::find_value(std::string_view name) const noexcept {
  const Param* p = find(name);
  return p ? std::get_if<Value>(p) : nullptr;
}

const Value& Params::value(std::string_view name) const {
  const Param* p = find(name);
  if (!p || !std::holds_alternative<Value>(*p))
    fail(Code::Internal, "missing value param \"" + std::string(name) + "\"");
  return std::get<Value>(*p);
}

const IRPtr& Params::ir(std::string_view name) const {
  const Param* p = find(name);
  if (!p || !std::holds_alternative<IRPtr>(*p))
    fail(Code::Internal, "missing IR param \"" + std::string(name) + "\"");
  return std::get<IRPtr>(*p);
}


}  // namespace af
