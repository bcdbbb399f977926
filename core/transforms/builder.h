// Builder: the emitter every transform and every transform rule writes
// into. It holds the IR being built (vars and equations); emit() is the
// bind() of transforms: it runs the primitive's abstract rule, makes the
// output vars and appends the equation. finish() numbers the vars in order
// of definition, so transformed IRs are canonical (equal, hash equal) like
// traced ones.
//
// Also here: the small IR surgeries the rules of control-flow primitives
// need on their sub-IRs (flat signatures, rewiring inputs and outputs,
// extracting a range of equations), and zero materialization.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ir/effects.h"
#include "ir/ir.h"
#include "ir/prim.h"

namespace af {

class Builder {
 public:
  Builder() = default;

  VarId var(Aval a);
  Aval aval(const Atom& a) const;
  const std::vector<Aval>& avals() const noexcept { return ir_.vars; }

  // Emits p(in) with input structure in_tree (a flat list when omitted); the
  // outputs come from p's abstract rule. Returns the flat output atoms.
  std::vector<Atom> emit(const Prim& p, Params params, std::vector<Atom> in, TreeDef in_tree);
  std::vector<Atom> emit(const Prim& p, Params params, std::vector<Atom> in);
  // Single-output convenience.
  Atom emit1(const Prim& p, Params params, std::vector<Atom> in);
  // Emits with outputs known to the caller (no abstract rule run).
  std::vector<Atom> emit_known(const Prim& p, Params params, std::vector<Atom> in, TreeDef in_tree,
                               std::span<const Aval> out, TreeDef out_tree);
  // Copies e (an equation of `src`) with new input atoms of the same avals:
  // fresh output vars with e's output avals. Tags, name path and
  // annotations are kept.
  std::vector<Atom> copy(const IR& src, const Eqn& e, std::vector<Atom> in);

  // The tags and name path put on every emitted equation (a rule's
  // equations carry those of the equation it transforms).
  Shared<EqnNotes> notes;

  size_t num_eqns() const noexcept { return ir_.eqns.size(); }
  const IR& ir() const noexcept { return ir_; }
  IR& ir() noexcept { return ir_; }

  // The IR with these inputs and outputs, vars renumbered in order of
  // definition (inputs first, then equation outputs); vars nothing defines
  // are dropped. INTERNAL if an equation or output uses an undefined var.
  // Moves the equations out: the builder is done with them.
  // `roles`: one per input leaf (IR::in_roles), or empty for all Primal.
  std::shared_ptr<IR> finish(std::vector<Atom> in, TreeDef in_tree, std::vector<Atom> out, TreeDef out_tree,
                             std::vector<InputRole> roles = {});
  // The same for the equations [first, last) only, whose inputs are `in`
  // (vars defined before `first` that the range reads must be among them).
  // Moves those equations out (extract disjoint ranges only).
  IRPtr extract(size_t first, size_t last, std::vector<Atom> in, TreeDef in_tree,
                std::vector<Atom> out, TreeDef out_tree);

 private:
  std::shared_ptr<IR> extract_ir(size_t first, size_t last, std::vector<Atom> in, TreeDef in_tree,
                                 std::vector<Atom> out, TreeDef out_tree);
  IR ir_;
};

// While alive, b emits equations with e's tags and name path: a rule's
// equations carry those of the equation it transforms.
class EmitAs {
 public:
  EmitAs(Builder& b, const Eqn& e)
      : b_(b),
        notes_(std::exchange(b.notes, e.sched() ? EqnNotes::of(e.tags(), e.name_path()) : e.notes)) {}
  ~EmitAs() { b_.notes = std::move(notes_); }
  EmitAs(const EmitAs&) = delete;
  EmitAs& operator=(const EmitAs&) = delete;

 private:
  Builder& b_;
  Shared<EqnNotes> notes_;
};

// Inlines ir's equations into b with ir's input leaves bound to `in`;
// returns ir's output atoms. Equations keep their own tags.
std::vector<Atom> inline_into(Builder& b, const IR& ir, std::span<const Atom> in);

// ---- zeros (docs/SEMANTICS.md §1: Zero materialized)

// The zero of aval a as an atom: a literal for a leaf aval; for list avals
// (batched values) zeros_like(like), which keeps like's list lengths.
Atom zero_atom(Builder& b, Aval a, const Atom& like);
// A value of aval a to fill a slot nobody reads (switch residuals of the
// branches not taken): the zero of a leaf aval, one-item lists of it for
// list avals (a literal whose aval is list<...>).
Value filler_value(Aval a);
// Feedback is text (docs/SEMANTICS.md §4): the cotangent of a leaf of any
// kind is a str, batched like the leaf (list<int> -> list<str>).
Aval cotangent_aval(Aval primal);
// The zero cotangent of a value of aval `primal`: "" for a leaf; for list
// avals zeros_like[text](like), "" per item with like's list lengths.
Atom zero_cotangent(Builder& b, Aval primal, const Atom& like);

// ---- IR surgery (all results renumbered canonically)

// ir with a flat list of input leaves and a flat list of output leaves.
IRPtr flat_signature(const IRPtr& ir);
// ir with a flat list of input leaves, outputs unchanged.
IRPtr flat_inputs(const IRPtr& ir);
// ir with its single output leaf as a leaf (not a one-item list).
IRPtr leaf_output(const IRPtr& ir);
// ir whose single positional input is the flat state list [leaves...]
// (the shape while_loop's cond and body take), outputs unchanged.
IRPtr state_signature(const IRPtr& ir);
// A flat IR whose inputs are `new_in` (avals), where old input i is new
// input in_from[i], and whose outputs are old outputs out_select[j] (or, if
// out_select[j] >= old output count, old input out_select[j] - old output
// count: a pass-through). Inputs no old input maps to are unused.
IRPtr rewire(const IR& ir, std::span<const Aval> new_in, std::span<const size_t> in_from,
             std::span<const size_t> out_select);
// The avals of ir's input / output leaves.
std::vector<Aval> in_avals(const IR& ir);
std::vector<Aval> out_avals(const IR& ir);

// The tree `def` with the leaves where keep[k] is false replaced by null
// nodes (how transformed IRs show Zero outputs and dropped outputs).
TreeDef tree_without(const TreeDef& def, const std::vector<bool>& keep);

}  // namespace af
