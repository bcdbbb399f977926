#include "prims/subir.h"

#include <algorithm>
#include <unordered_map>

#include "exec/scopes.h"
#include "ir/prim.h"
#include "value/error.h"

namespace af {

SubProgram::SubProgram(const IR& ir) {
  n_vars_ = ir.vars.size();
  auto slot_of = [&](const Atom& a) -> uint32_t {
    if (a.is_var()) return a.var;
    constants_.push_back(a.lit);
    return uint32_t(n_vars_ + constants_.size() - 1);
  };
  for (const Atom& a : ir.in) in_slots_.push_back(a.is_var() ? int64_t(a.var) : -1);
  steps_.reserve(ir.eqns.size());
  for (const Eqn& e : ir.eqns) {
    Step s{&e, uint32_t(args_.size()), uint32_t(e.in.size()), uint32_t(results_.size()),
           uint32_t(e.out.size())};
    for (const Atom& a : e.in) args_.push_back(slot_of(a));
    for (VarId v : e.out) results_.push_back(v);
    steps_.push_back(s);
  }
  for (const Atom& a : ir.out) out_slots_.push_back(slot_of(a));
}

SubProgram::Frame SubProgram::frame() const {
  Frame f;
  f.slots.resize(n_vars_ + constants_.size());
  for (size_t i = 0; i < constants_.size(); ++i) f.slots[n_vars_ + i] = constants_[i];
  return f;
}

void SubProgram::run(Frame& f, std::span<const Value> in, std::span<Value> out, RunEnv& env) const {
  if (in.size() != in_slots_.size() || out.size() != out_slots_.size())
    fail(Code::Internal, "sub-program: wrong number of inputs or outputs");
  for (size_t i = 0; i < in.size(); ++i)
    if (in_slots_[i] >= 0) f.slots[size_t(in_slots_[i])] = in[i];
  for (const Step& s : steps_) {
    f.in.resize(s.in_count);
    f.out.assign(s.out_count, Value());
    for (uint32_t k = 0; k < s.in_count; ++k) f.in[k] = f.slots[args_[s.in_begin + k]];
    invoke(*s.eqn, f.in, f.out, env);
    for (uint32_t k = 0; k < s.out_count; ++k) f.slots[results_[s.out_begin + k]] = std::move(f.out[k]);
  }
  for (size_t k = 0; k < out.size(); ++k) out[k] = f.slots[out_slots_[k]];
}

namespace {

struct Cached {
  std::weak_ptr<const IR> ir;
  std::shared_ptr<const SubProgram> program;
};

}  // namespace

std::shared_ptr<const SubProgram> sub_program(const IRPtr& ir) {
  thread_local std::unordered_map<const IR*, Cached> cache;
  auto it = cache.find(ir.get());
  if (it != cache.end()) {
    if (it->second.ir.lock() == ir) return it->second.program;
    cache.erase(it);
  }
  if (cache.size() >= 4096)
    std::erase_if(cache, [](const auto& kv) { return kv.second.ir.expired(); });
  auto program = std::make_shared<const SubProgram>(*ir);
  cache[ir.get()] = Cached{ir, program};
  return program;
}

}  // namespace af
