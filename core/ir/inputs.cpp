#include "ir/ir.h"
#include "value/error.h"

namespace af {

std::vector<Value> check_inputs(const IR& ir, std::span<const Value> inputs) {
  if (inputs.size() != ir.num_inputs())
    invalid("the program takes " + std::to_string(ir.num_inputs()) + " input(s), got " +
            std::to_string(inputs.size()));
  std::vector<Value> leaves;
  leaves.reserve(ir.in.size());
  auto trees = ir.in_tree.children();
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string where = "input[" + std::to_string(i) + "]";
    check_structure(inputs[i], trees[i], where);
    size_t first = leaves.size();
    flatten_into(inputs[i], leaves);
    for (size_t k = first; k < leaves.size(); ++k) {
      const Atom& slot = ir.in[k];
      const Value& got = leaves[k];
      if (!slot.is_var()) {
        if (!(got == slot.lit))
          invalid("static input mismatch in " + where + ": expected " + to_json(slot.lit) +
                  ", got " + (got.kind() == Kind::Placeholder ? std::string("a traced value")
                                                             : to_json(got)) +
                  " (static inputs are fixed when the program is traced)");
        continue;
      }
      Aval want = ir.vars[slot.var];
      Aval have = aval_of(got);
      if (!(want == have))
        invalid(where + " leaf " + std::to_string(k - first) + ": expected " + aval_name(want) +
                ", found " + aval_name(have));
    }
  }
  return leaves;
}

}  // namespace af
