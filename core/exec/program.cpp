// compile(): IR -> Program. DCE and CSE act on the plan (which equations
// run, which slot a var reads), so the IR itself is kept as given and the
// program's equation indices still name equations of that IR. lower() turns
// those decisions into the flat plan; a saved program's decisions go
// through the same lower() (exec/saved_plan.cpp).
#include "exec/program.h"

#include <algorithm>
#include <unordered_map>

#include "rt/scopes.h"
#include "transforms/builder.h"
#include "transforms/pipeline.h"
#include "value/error.h"

namespace af {

namespace {

// Above any cost-weighted path a program can have (an LM call weighs 1000).
constexpr double kUrgentPriority = 1e12;

bool is_urgent(const Eqn& e) {
  return e.tags() && std::binary_search(e.tags()->begin(), e.tags()->end(), std::string("urgent"));
}

// Sub-IRs compiled during one compile, by IR object: a sub-IR shared by
// several equations (or levels) is compiled once.
using SubMemo = std::unordered_map<const IR*, std::shared_ptr<const Program>>;

std::shared_ptr<Program> compile_with(IRPtr ir, const CompileOptions& o, SubMemo& memo,
                                      std::span<const uint64_t> eqn_ids = {});
std::shared_ptr<Program> lower_with(IRPtr ir, const Lowering& l, const CompileOptions& o,
                                    SubMemo& memo);

// True when an input var of e stands for another var (an earlier merge).
bool aliased(const Eqn& e, std::span<const VarId> alias) {
  for (const Atom& a : e.in)
    if (a.is_var() && alias[a.var] != a.var) return true;
  return false;
}

// The decisions of compile: CSE aliases (one equation identity with the cse
// transform: ir/ir.h eqn_hash / eqn_same), then DCE over what is left.
// `ids`: the equations' identities without aliases (ir_hash), or empty.
Lowering decide(const IR& g, const CompileOptions& o, std::span<const uint64_t> ids, size_t& merged,
                size_t& removed) {
  const size_t n_eqns = g.eqns.size();
  const uint32_t n_vars = uint32_t(g.vars.size());
  Lowering l;
  l.var_slot.resize(n_vars);
  for (VarId v = 0; v < n_vars; ++v) l.var_slot[v] = v;

  std::vector<uint8_t> live(n_eqns, 1);
  if (o.cse) {
    // Equations seen so far, by identity hash: open addressing over one flat
    // table (one allocation for the whole IR, none per equation). A slot holds
    // the hash's high half beside the equation index, so a probe touches one
    // cache line: on a first call of a large IR these probes are cache misses.
    struct Slot {
      uint32_t tag = 0;
      uint32_t eqn = UINT32_MAX;  // equation index, or empty
    };
    size_t cap = 16;
    while (cap < 2 * n_eqns) cap *= 2;
    std::vector<Slot> table(cap);
    for (size_t i = 0; i < n_eqns; ++i) {
      const Eqn& e = g.eqns[i];
      if (!mergeable(e, o.cse_nondeterministic)) continue;
      const uint64_t h = ids.empty() || aliased(e, l.var_slot) ? eqn_hash(e, l.var_slot) : ids[i];
      const uint32_t tag = uint32_t(h >> 32);
      size_t slot = size_t(h) & (cap - 1);
      bool merged_here = false;
      for (; table[slot].eqn != UINT32_MAX; slot = (slot + 1) & (cap - 1)) {
        if (table[slot].tag != tag) continue;
        const Eqn& f = g.eqns[table[slot].eqn];
        if (!eqn_same(f, e, l.var_slot)) continue;
        for (size_t k = 0; k < e.out.size(); ++k) l.var_slot[e.out[k]] = f.out[k];
        live[i] = 0;
        merged_here = true;
        ++merged;
        break;
      }
      if (!merged_here) table[slot] = Slot{tag, uint32_t(i)};
    }
  }
  if (o.dce) {
    std::vector<uint8_t> used(n_vars, 0);
    for (const Atom& a : g.out)
      if (a.is_var()) used[l.var_slot[a.var]] = 1;
    for (size_t i = n_eqns; i-- > 0;) {
      if (!live[i]) continue;
      const Eqn& e = g.eqns[i];
      bool needed = eqn_has_effects(e);  // transforms/builder.h: sub-IRs included
      for (VarId v : e.out) needed = needed || used[v];
      if (!needed) {
        live[i] = 0;
        ++removed;
        continue;
      }
      for (const Atom& a : e.in)
        if (a.is_var()) used[l.var_slot[a.var]] = 1;
    }
  }
  for (size_t i = 0; i < n_eqns; ++i)
    if (live[i]) l.live.push_back(uint32_t(i));
  return l;
}

std::shared_ptr<Program> compile_with(IRPtr ir, const CompileOptions& o, SubMemo& memo,
                                      std::span<const uint64_t> eqn_ids) {
  size_t merged = 0, removed = 0;
  Lowering l = decide(*ir, o, eqn_ids, merged, removed);
  std::shared_ptr<Program> prog = lower_with(std::move(ir), l, o, memo);
  prog->merged_cse = merged;
  prog->removed_dce = removed;
  return prog;
}

// Compiles the sub-IRs an equation holds and the forms its primitive
// derives from it (ir/prim.h Forms), once each per compile through memo,
// and decides whether its node runs async: through its primitive's
// impl_async when it has one and — for control flow — one of its compiled
// sub-IRs waits on async work. Control flow over cheap work runs inline;
// around LM calls it holds no thread while they fly.
bool compile_subs_of(Program& p, const Eqn& e, const CompileOptions& o, SubMemo& memo) {
  bool holds_irs = false, waits = false;
  auto add = [&](const IR& sub, const IRPtr& owner) {
    holds_irs = true;
    auto [it, fresh] = memo.try_emplace(&sub);
    if (fresh) it->second = compile_with(owner, o, memo);
    p.subs.emplace_back(&sub, it->second);
    waits = waits || it->second->n_async > 0;
  };
  e.params.any_ir([&](const IR& sub) {
    // Sub-IRs are validated with their parent; params own them (shared_ptr
    // aliasing keeps the IR alive through its program).
    add(sub, IRPtr(p.ir, &sub));
    return false;
  });
  if (e.prim->forms)
    if (std::shared_ptr<const Forms> f = e.prim->forms(e)) {
      for (const IRPtr& form : f->irs)
        if (form) add(*form, form);
      p.forms.emplace_back(&e, std::move(f));
    }
  if (!e.prim->impl && !e.prim->impl_async)
    invalid("compile: primitive " + e.prim->name + " has no implementation");
  return e.prim->impl_async && (!holds_irs || waits);
}

std::shared_ptr<Program> lower_with(IRPtr ir, const Lowering& l, const CompileOptions& o,
                                    SubMemo& memo) {
  auto prog = std::make_shared<Program>();
  Program& p = *prog;
  const IR& g = *ir;
  const uint32_t n_vars = uint32_t(g.vars.size());
  p.ir = ir;

  // Slots: one per var, then one per literal. An equation's literal
  // identical to the one before it (a traced loop's constant) shares its
  // slot; an input's never does (a call writes its leaf there).
  size_t shared_from = 0;  // constants from here on may be shared
  auto slot_of = [&](const Atom& a) -> uint32_t {
    if (a.is_var()) return l.var_slot[a.var];
    if (p.constants.size() > shared_from && p.constants.back().identical(a.lit))
      return n_vars + uint32_t(p.constants.size() - 1);
    p.constants.push_back(a.lit);
    return n_vars + uint32_t(p.constants.size() - 1);
  };
  for (const Atom& a : g.in) p.in_slots.push_back(slot_of(a));
  shared_from = p.constants.size();

  // Nodes with their input / output slots, dependency counts and compiled
  // sub-IRs; then the consumer lists as one flat array (counted, then
  // filled). One pass reads the equations: on a first call of a large IR,
  // each pass over them streams ~100 bytes per equation from memory.
  std::vector<uint32_t> producer(n_vars, UINT32_MAX);  // slot -> node
  std::vector<uint32_t> n_cons(l.live.size(), 0);
  p.nodes.reserve(l.live.size());
  p.args.reserve(2 * l.live.size());  // most equations have one or two of each
  p.results.reserve(l.live.size());
  for (uint32_t i : l.live) {
    const Eqn& e = g.eqns[i];
    // Built in place (reserved above): a node built aside and copied in
    // stalled on reading back its own just-written fields.
    Program::Node& n = p.nodes.emplace_back();
    n.eqn = &e;
    n.eqn_index = i;
    n.in_begin = uint32_t(p.args.size());
    n.in_count = uint32_t(e.in.size());
    n.out_begin = uint32_t(p.results.size());
    n.out_count = uint32_t(e.out.size());
    for (const Atom& a : e.in) {
      const uint32_t s = slot_of(a);
      p.args.push_back(s);
      if (a.is_var() && producer[s] != UINT32_MAX) {
        ++n.n_deps;
        ++n_cons[producer[s]];
      }
    }
    for (VarId v : e.out) {
      p.results.push_back(v);
      producer[v] = uint32_t(p.nodes.size() - 1);
    }
    n.async = compile_subs_of(p, e, o, memo);
    p.n_async += n.async;
  }
  std::sort(p.subs.begin(), p.subs.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  p.subs.erase(std::unique(p.subs.begin(), p.subs.end(),
                           [](const auto& a, const auto& b) { return a.first == b.first; }),
               p.subs.end());
  std::sort(p.forms.begin(), p.forms.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const Atom& a : g.out) p.out_slots.push_back(slot_of(a));
  p.n_slots = n_vars + uint32_t(p.constants.size());

  uint32_t at = 0;
  for (size_t id = 0; id < p.nodes.size(); ++id) {
    p.nodes[id].cons_begin = at;
    at += n_cons[id];
  }
  p.consumers.resize(at);
  // Each var is produced once, before its reads (SSA, topological order):
  // `producer` already names every arg's producing node.
  for (size_t id = 0; id < p.nodes.size(); ++id) {
    const Program::Node& n = p.nodes[id];
    for (uint32_t k = 0; k < n.in_count; ++k) {
      const uint32_t s = p.args[n.in_begin + k];
      const uint32_t from = s < n_vars ? producer[s] : UINT32_MAX;
      if (from != UINT32_MAX) p.consumers[p.nodes[from].cons_begin + p.nodes[from].cons_count++] = uint32_t(id);
    }
  }

  // Last uses: only single reads move (consumers of one slot may run
  // concurrently, so which read comes last is not known before the run).
  std::vector<uint32_t> reads(p.n_slots, 0);
  for (uint32_t s : p.args) ++reads[s];
  for (uint32_t s : p.out_slots) reads[s] += 2;
  p.last_use.resize(p.args.size());
  for (size_t i = 0; i < p.args.size(); ++i) p.last_use[i] = reads[p.args[i]] == 1;

  // Priorities in reverse order (nodes are topological): the given ones, or
  // the cost-weighted longest path to an output.
  for (size_t id = p.nodes.size(); id-- > 0;) {
    Program::Node& n = p.nodes[id];
    if (!l.priority.empty()) {
      n.priority = l.priority[id];
    } else {
      double below = 0;
      for (uint32_t k = 0; k < n.cons_count; ++k)
        below = std::max(below, p.nodes[p.consumers[n.cons_begin + k]].priority);
      // The priority hint: an equation tagged "urgent" (a call a person
      // waits for) outranks any untagged path, and so does all it needs.
      n.priority = eqn_cost(*n.eqn) + std::max(below, is_urgent(*n.eqn) ? kUrgentPriority : 0.0);
    }
    p.critical_path = std::max(p.critical_path, n.priority);
    if (n.n_deps == 0) p.roots.push_back(uint32_t(id));
  }
  std::stable_sort(p.roots.begin(), p.roots.end(),
                   [&](uint32_t a, uint32_t b) { return p.nodes[a].priority > p.nodes[b].priority; });
  return prog;
}

}  // namespace

const std::shared_ptr<const Program>* Program::sub(const IR* ir) const noexcept {
  auto it = std::lower_bound(subs.begin(), subs.end(), ir,
                             [](const auto& entry, const IR* key) { return entry.first < key; });
  return it != subs.end() && it->first == ir ? &it->second : nullptr;
}

const Forms* Program::forms_of(const Eqn* e) const noexcept {
  auto it = std::lower_bound(forms.begin(), forms.end(), e,
                             [](const auto& entry, const Eqn* key) { return entry.first < key; });
  return it != forms.end() && it->first == e ? it->second.get() : nullptr;
}

std::shared_ptr<const Program> Program::keyed_form(const Eqn& e, uint64_t key, const std::function<IRPtr()>& build,
                                                   const CompileOptions& options) const {
  std::vector<KeyedForms::Entry>& entries = keyed_.entries;
  auto find = [&]() -> std::shared_ptr<const Program> {
    for (size_t i = entries.size(); i-- > 0;)
      if (entries[i].eqn == &e && entries[i].key == key) {
        KeyedForms::Entry hit = std::move(entries[i]);  // most recently used: to the back
        entries.erase(entries.begin() + long(i));
        entries.push_back(std::move(hit));
        return entries.back().prog;
      }
    return nullptr;
  };
  {
    std::lock_guard lock(keyed_.mu);
    if (auto prog = find()) return prog;
  }
  // Built and compiled outside the lock (an unrolled form may be large); a
  // thread that raced this one keeps the first.
  std::shared_ptr<const Program> built = compile(build(), options);
  std::lock_guard lock(keyed_.mu);
  if (auto prog = find()) return prog;
  size_t of_eqn = 0;
  for (const KeyedForms::Entry& k : entries) of_eqn += k.eqn == &e;
  if (of_eqn >= kMaxKeyedPerEqn)
    entries.erase(std::find_if(entries.begin(), entries.end(), [&](const auto& k) { return k.eqn == &e; }));
  entries.push_back(KeyedForms::Entry{&e, key, built});
  return built;
}

std::shared_ptr<const Program> compile(IRPtr ir, const CompileOptions& o, std::span<const uint64_t> eqn_ids) {
#ifdef NDEBUG
  if (!ir->checked) validate(*ir);
#else
  validate(*ir);  // debug builds check the transforms' and loader's output too
#endif
  if (!eqn_ids.empty() && eqn_ids.size() != ir->eqns.size())
    fail(Code::Internal, "compile: " + std::to_string(eqn_ids.size()) + " equation identities for " +
                             std::to_string(ir->eqns.size()) + " equations");
  if (o.count) o.count->fetch_add(1, std::memory_order_relaxed);
  SubMemo memo;
  std::shared_ptr<Program> prog = compile_with(std::move(ir), o, memo, eqn_ids);
  attach_sliced(*prog, o);
  return prog;
}

IRPtr sliced_form(const IRPtr& owner, uint32_t& slice_leaf) {
  const IR& ir = *owner;
  IRPtr form = pipeline_form(owner);
  if (!form) return nullptr;
  // The batch's length is that of batch_check's first input (pipeline_form
  // found batch_check first), when it is an input leaf.
  const Atom& first = ir.eqns[0].in[0];
  const auto leaf = std::find(ir.in.begin(), ir.in.end(), first);
  if (!first.is_var() || leaf == ir.in.end()) return nullptr;
  slice_leaf = uint32_t(leaf - ir.in.begin());
  return form;
}

void attach_sliced(Program& p, const CompileOptions& o) {
  if (IRPtr form = sliced_form(p.ir, p.slice_leaf)) p.sliced = compile(std::move(form), o);
}

std::shared_ptr<Program> lower(IRPtr ir, const Lowering& l) {
  SubMemo memo;
  return lower_with(std::move(ir), l, CompileOptions{}, memo);
}

}  // namespace af
