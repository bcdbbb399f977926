#include "rt/hosts.h"

#include "value/error.h"

namespace af {

namespace {

Aval parse_aval(const std::string& s, const std::string& path) {
  std::string_view v = s;
  uint8_t depth = 0;
  while (v.size() > 6 && v.substr(0, 5) == "list<" && v.back() == '>') {
    v = v.substr(5, v.size() - 6);
    ++depth;
  }
  Kind k;
  if (v == "str") k = Kind::Str;
  else if (v == "int") k = Kind::Int;
  else if (v == "float") k = Kind::Float;
  else if (v == "bool") k = Kind::Bool;
  else
    invalid("host function result kinds: " + json_quoted(s) + " at " + path +
            " is not a kind (use \"str\", \"int\", \"float\", \"bool\" or \"list<...>\" of them)");
  return Aval{k, depth};
}

void collect_kinds(const Value& v, const std::string& path, std::vector<Aval>& out) {
  switch (v.kind()) {
    case Kind::Null: return;
    case Kind::List:
      for (size_t i = 0; i < v.size(); ++i) collect_kinds(v.items()[i], path + "[" + std::to_string(i) + "]", out);
      return;
    case Kind::Dict:
      for (uint32_t i : v.sorted())
        collect_kinds(v.entries()[i].second, path + "[" + json_quoted(v.entries()[i].first) + "]", out);
      return;
    case Kind::Str: out.push_back(parse_aval(v.as_str(), path)); return;
    default:
      invalid(std::string("host function result kinds: the leaf at ") + path + " is " + kind_name(v.kind()) +
              ", not a kind name such as \"str\"");
  }
}

}  // namespace

std::vector<Value> result_leaves(const std::string& name, const Value& declared, const Value& result) {
  AbstractOut want = parse_result_kinds(declared);
  const std::string what = "host function " + json_quoted(name) + " returned a value that does not match its declared result kinds " +
                           to_json(declared) + ": result";
  check_structure(result, want.out_tree, what, [&](size_t k, const Value& got, const std::string& path) {
    if (!conforms(got, want.out[k]))
      invalid(path + ": expected " + aval_name(want.out[k]) + ", found " +
              (got.is_container() ? to_json(got) : std::string(kind_name(got.kind()))));
  });
  std::vector<Value> leaves;
  leaves.reserve(want.out.size());
  flatten_into(result, leaves);
  return leaves;
}

HostRequest::HostRequest(std::shared_ptr<AsyncOp> op, std::string name, Value declared_kinds)
    : op_(std::move(op)), name_(std::move(name)), declared_(std::move(declared_kinds)) {}

HostRequest::~HostRequest() {
  if (finished_by_host_.load(std::memory_order_acquire) || op_->finished()) return;
  try {
    op_->fail(Error(Code::Callback, "host function " + json_quoted(name_) +
                                        " released its request without completing or failing it"));
  } catch (...) {
    op_->fail(Error(Code::OutOfMemory, "out of memory"));
  }
}

void HostRequest::claim(const char* what) {
  if (finished_by_host_.exchange(true, std::memory_order_acq_rel))
    invalid(std::string(what) + ": host function " + json_quoted(name_) + " already finished this call");
}

void HostRequest::complete(Value result) {
  claim("complete");
  std::vector<Value> leaves;
  try {
    leaves = result_leaves(name_, declared_, result);
  } catch (const Error& e) {
    op_->fail(e);
    throw;
  }
  op_->succeed(std::move(leaves));
}

void HostRequest::fail(const Error& err) {
  claim("fail");
  op_->fail(err);
}

bool HostRequest::cancelled() const noexcept {
  return op_->finished() && !finished_by_host_.load(std::memory_order_acquire);
}

void HostRegistry::add(std::shared_ptr<const HostFunction> fn) {
  std::shared_ptr<const HostFunction> old;  // released outside the lock
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = fns_[fn->name];
  old = std::move(slot);
  slot = std::move(fn);
}

std::shared_ptr<const HostFunction> HostRegistry::find(std::string_view name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = fns_.find(name);
  return it == fns_.end() ? nullptr : it->second;
}

std::shared_ptr<const HostFunction> HostRegistry::require(std::string_view name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = fns_.find(name);
  if (it != fns_.end()) return it->second;
  std::string known;
  for (const auto& [n, f] : fns_) known += (known.empty() ? "" : ", ") + json_quoted(n);
  fail(Code::NotFound, "host function " + json_quoted(name) + " is not registered on this context (" +
                           (known.empty() ? std::string("no host function is registered") : "registered: " + known) +
                           "); register it with af_register_function");
}

AbstractOut parse_result_kinds(const Value& kinds) {
  AbstractOut out;
  collect_kinds(kinds, "result", out.out);
  out.out_tree = TreeDef::of(kinds);
  return out;
}

}  // namespace af
