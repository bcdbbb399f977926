// The dry-run LM cost of an IR (core/query.h cost_json): counted from the
// equations alone, nothing runs.
#include <algorithm>
#include <cstdint>
#include <map>
#include <unordered_map>

#include "ir/prim.h"
#include "ir/query.h"
#include "value/error.h"

namespace af {

namespace {

using PerModel = std::map<std::string, double>;

// Calls of one example: in total, and along the longest chain (with the
// models on that chain).
struct Cost {
  PerModel total;
  double path = 0;
  PerModel path_models;
};

void add_into(PerModel& into, const PerModel& from, double times) {
  for (const auto& [m, n] : from) into[m] += n * times;
}

// The LM calls: each makes one request to the model of its last input.
bool is_lm(const Eqn& e) {
  const std::string& n = e.prim->name;
  return n == "lm_call" || n == "lm_schema_call" || n == "lm_tool_call";
}

// Each distinct sub-IR is costed once per query, however many paths of a
// DAG of shared sub-IRs reach it.
using Costed = std::unordered_map<const IR*, Cost>;

Cost ir_cost(const IR& ir, Costed& costed);

const Cost& sub_cost(const IR& sub, Costed& costed) {
  if (auto it = costed.find(&sub); it != costed.end()) return it->second;
  Cost c = ir_cost(sub, costed);
  return costed.emplace(&sub, std::move(c)).first->second;
}

// One equation: an LM call is one call per example (a call over batched
// inputs makes one per item, i.e. per example). A param IR always runs; a
// list or map of IRs is a choice (switch branches), costed by its costliest
// member. max_iters (loops) multiplies its sub-IRs.
Cost eqn_lm_cost(const Eqn& e, Costed& costed) {
  Cost c;
  if (is_lm(e)) {
    const Atom& model = e.in.back();
    std::string name = !model.is_var() && model.lit.kind() == Kind::Str ? model.lit.as_str() : "dynamic";
    c.total[name] = 1;
    c.path = 1;
    c.path_models[name] = 1;
    return c;
  }
  double times = 1;
  if (const Param* p = e.params.find("max_iters"); p && std::holds_alternative<Value>(*p) &&
                                                   std::get<Value>(*p).kind() == Kind::Int)
    times = static_cast<double>(std::max<int64_t>(0, std::get<Value>(*p).as_int()));
  auto add_seq = [&](const Cost& s) {  // runs after the others (cond then body)
    if (times == 0) return;            // a loop that never runs (and inf * 0 is NaN)
    add_into(c.total, s.total, times);
    c.path += s.path * times;
    add_into(c.path_models, s.path_models, times);
  };
  for (const auto& [name, p] : e.params.items()) {
    if (const auto* one = std::get_if<IRPtr>(&p)) add_seq(sub_cost(**one, costed));
    auto choice = [&](const std::vector<const IR*>& irs) {
      Cost best;
      bool first = true;
      for (const IR* sub : irs) {
        const Cost& s = sub_cost(*sub, costed);
        double calls = 0, best_calls = 0;
        for (auto& kv : s.total) calls += kv.second;
        for (auto& kv : best.total) best_calls += kv.second;
        if (first || calls > best_calls) best.total = s.total;
        if (first || s.path > best.path) {
          best.path = s.path;
          best.path_models = s.path_models;
        }
        first = false;
      }
      add_seq(best);
    };
    if (const auto* list = std::get_if<IRList>(&p)) {
      std::vector<const IR*> irs;
      for (const IRPtr& s : *list) irs.push_back(s.get());
      choice(irs);
    }
    if (const auto* map = std::get_if<IRMap>(&p)) {
      std::vector<const IR*> irs;
      for (const auto& kv : *map) irs.push_back(kv.second.get());
      choice(irs);
    }
  }
  return c;
}

Cost ir_cost(const IR& ir, Costed& costed) {
  Cost c;
  // The chain reaching each var: its call count and models.
  std::vector<double> done(ir.vars.size(), 0.0);
  std::vector<PerModel> done_models(ir.vars.size());
  for (size_t i : topological_order(ir)) {
    const Eqn& e = ir.eqns[i];
    Cost ec = eqn_lm_cost(e, costed);
    add_into(c.total, ec.total, 1);
    VarId from = kNoVar;
    for (const Atom& a : e.in)
      if (a.is_var() && (from == kNoVar || done[a.var] > done[from])) from = a.var;
    double end = (from == kNoVar ? 0 : done[from]) + ec.path;
    PerModel models = from == kNoVar ? PerModel{} : done_models[from];
    add_into(models, ec.path_models, 1);
    for (VarId v : e.out) {
      done[v] = end;
      done_models[v] = models;
    }
    if (end > c.path || (end == c.path && c.path_models.empty())) {
      c.path = end;
      c.path_models = std::move(models);
    }
  }
  return c;
}

// Counts saturate at INT64_MAX: nested loops of max_iters 2^63 multiply
// far past it (and converting such a double to int64 is undefined).
int64_t count_of(double n) { return n < 9.2e18 ? static_cast<int64_t>(n) : INT64_MAX; }

void append_models(std::string& out, const PerModel& m, double times) {
  out += '{';
  bool first = true;
  for (const auto& [name, n] : m) {
    if (n == 0) continue;
    if (!first) out += ',';
    first = false;
    append_json_string(out, name);
    out += ':' + std::to_string(count_of(n * times));
  }
  out += '}';
}

double sum(const PerModel& m) {
  double s = 0;
  for (const auto& kv : m) s += kv.second;
  return s;
}

}  // namespace

std::string cost_json(const IR& ir, int64_t batch) {
  if (batch < 1) invalid("cost: batch must be at least 1, got " + std::to_string(batch));
  Costed costed;
  Cost c = ir_cost(ir, costed);
  const double b = static_cast<double>(batch);
  std::string out = "{\"batch\":" + std::to_string(batch) +
                    ",\"total\":{\"calls\":" + std::to_string(count_of(sum(c.total) * b)) +
                    ",\"models\":";
  append_models(out, c.total, b);
  out += "},\"critical_path\":{\"calls\":" + std::to_string(count_of(c.path)) + ",\"models\":";
  append_models(out, c.path_models, 1);
  return out + "}}";
}

}  // namespace af
