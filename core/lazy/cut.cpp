#include "lazy/cut.h"

#include "value/hash.h"

namespace af::lazy {

Cut::Cut(const std::vector<std::shared_ptr<Node>>& batch) {
  nodes.reserve(batch.size());
  vars.reserve(2 * batch.size());
  uses.reserve(2 * batch.size());
  code.reserve(6 * batch.size() + 2);  // enough for nodes of two inputs, one of them new
  for (const auto& np : batch) {
    Node& n = *np;
    for (const Value& leaf : n.in)
      if (const Cell* c = cell_of(leaf); c && c->node->error) {  // failed earlier, or in this batch
        n.error = c->node->error;
        break;
      }
    if (n.error) continue;
    const Shape& shape = *n.shape;
    code.push_back(uint32_t(shape.id));
    code.push_back(uint32_t(shape.id >> 32));
    for (size_t k = 0; k < n.in.size(); ++k) {
      const Value& leaf = n.in[k];
      const Cell* c = cell_of(leaf);
      uint32_t var;
      bool fresh = false;  // a new input variable: its kind follows
      if (!n.literal.empty() && n.literal[k]) {
        var = kLiteral;
      } else if (c && c->node->first_var != kNoVar) {
        var = c->node->first_var + c->index;
        ++uses[var];
      } else {
        const Value& v = c ? c->node->out[c->index] : leaf;  // evaluated earlier, or concrete
        var = new_var(c ? aval_of(v) : shape.in_avals[k]);
        inputs.push_back(&v);
        in_vars.push_back(var);
        fresh = true;
      }
      code.push_back(var);
      if (fresh) code.push_back(uint32_t(vars[var].kind) << 8 | vars[var].list_depth);
    }
    n.first_var = VarId(vars.size());
    for (const Aval& a : shape.out_avals) new_var(a);
    nodes.push_back(&n);
  }
  for (Node* n : nodes) {
    const bool observable = n->shape->observable;
    for (uint32_t i = 0; i < n->out_avals.size(); ++i) {
      const VarId var = n->first_var + i;
      const Cell* c = n->cells[i].load(std::memory_order_acquire);
      // With uses, the cell is alive (this cut's nodes hold it) and held
      // elsewhere too when it has more references than uses.
      if (observable || (c && (uses[var] == 0 || c->refs.load(std::memory_order_acquire) > uses[var]))) {
        out_vars.push_back(var);
        code.push_back(var);
      }
    }
  }
  code.push_back(uint32_t(nodes.size()));
  code.push_back(uint32_t(out_vars.size()));
  key = hash_bytes({reinterpret_cast<const char*>(code.data()), code.size() * sizeof(uint32_t)});
}

IRPtr Cut::build() const {
  auto ir = std::make_shared<IR>();
  ir->checked = true;  // each node was recorded through its primitive's abstract rule
  ir->vars = vars;
  for (VarId v : in_vars) ir->in.push_back(Atom::of_var(v));
  for (VarId v : out_vars) ir->out.push_back(Atom::of_var(v));
  ir->in_tree = TreeDef::flat_list(ir->in.size());
  ir->out_tree = TreeDef::flat_list(ir->out.size());
  ir->eqns.reserve(nodes.size());
  Shared<EqnNotes> notes;  // shared by consecutive nodes of the same tags
  size_t p = 0;            // into code: the equations are read back from the signature
  VarId next = 0;          // the next new variable
  for (const Node* n : nodes) {
    Eqn e;
    e.prim = n->prim;
    e.params = n->params;
    e.in_tree = n->in_tree;
    e.out_tree = n->out_tree;
    // (Not the name path: it only words errors, through where().)
    if (!notes || notes->tags != n->tags) notes = EqnNotes::of(n->tags, nullptr);
    e.notes = notes;
    e.in.reserve(n->in.size());
    p += 2;  // the shape's id
    for (size_t k = 0; k < n->in.size(); ++k) {
      const uint32_t var = code[p++];
      if (var == next) {  // a new input: its kind follows
        ++next;
        ++p;
      }
      e.in.push_back(var == kLiteral ? Atom::literal(n->in[k]) : Atom::of_var(var));
    }
    next = n->first_var + VarId(n->out_avals.size());
    for (uint32_t i = 0; i < n->out_avals.size(); ++i) e.out.push_back(n->first_var + i);
    ir->eqns.push_back(std::move(e));
  }
  return ir;
}

}  // namespace af::lazy
