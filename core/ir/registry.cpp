#include "ir/registry.h"

#include <deque>
#include <mutex>
#include <string>
#include <unordered_map>

#include "value/error.h"
#include "value/hash.h"

namespace af {

namespace {

struct Registry {
  std::mutex mu;
  std::deque<Prim> prims;  // deque: stable addresses
  std::unordered_map<std::string, std::vector<const Prim*>> by_name;

  const Prim* add(Prim p) {
    for (const Prim* q : by_name[p.name])
      if (q->version == p.version)
        invalid("primitive \"" + p.name + "\" version " + std::to_string(p.version) +
                " is already registered");
    p.hash = prim_identity_hash(p.name, p.version);
    prims.push_back(std::move(p));
    by_name[prims.back().name].push_back(&prims.back());
    return &prims.back();
  }
};

Registry& registry() {
  static Registry* r = [] {
    auto* reg = new Registry();  // never destroyed: prims outlive every IR
    std::vector<Prim> builtins;
    add_builtin_prims(builtins);
    for (Prim& p : builtins) reg->add(std::move(p));
    return reg;
  }();
  return *r;
}

}  // namespace

const Prim* find_prim(std::string_view name, uint32_t version) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.by_name.find(std::string(name));
  if (it == r.by_name.end()) return nullptr;
  const Prim* best = nullptr;
  for (const Prim* p : it->second) {
    if (version != 0 && p->version == version) return p;
    if (version == 0 && (!best || p->version > best->version)) best = p;
  }
  return best;
}

const Prim& prim(std::string_view name) {
  const Prim* p = find_prim(name);
  if (!p) fail(Code::Internal, "primitive \"" + std::string(name) + "\" is not registered");
  return *p;
}

const Prim* register_prim(Prim p) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.add(std::move(p));
}

std::vector<const Prim*> all_prims() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<const Prim*> out;
  for (const Prim& p : r.prims) out.push_back(&p);
  return out;
}

const char* param_kind_name(ParamKind k) noexcept {
  switch (k) {
    case ParamKind::Value: return "a value";
    case ParamKind::IR: return "an IR";
    case ParamKind::IRList: return "a list of IRs";
    case ParamKind::IRMap: return "a map of IRs";
  }
  return "an unknown kind";
}

}  // namespace af
