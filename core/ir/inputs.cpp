#include "ir/ir.h"
#include "value/error.h"

namespace af {

std::vector<Value> check_inputs(const IR& ir, std::span<const Value> inputs,
                                bool allow_placeholders) {
  if (inputs.size() != ir.num_inputs())
    invalid("the program takes " + std::to_string(ir.num_inputs()) + " input(s), got " +
            std::to_string(inputs.size()));
  std::vector<Value> leaves;
  leaves.reserve(ir.in.size());
  auto trees = ir.in_tree.children();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const size_t first = leaves.size();
    // Kinds and static values are checked leaf by leaf, with the path.
    auto check_leaf = [&](size_t k, const Value& got, const std::string& path) {
      const Atom& slot = ir.in[first + k];
      if (!slot.is_var()) {
        if (!(got == slot.lit))
          invalid("static input mismatch at " + path + ": expected " + to_json(slot.lit) +
                  ", got " + (got.kind() == Kind::Placeholder ? std::string("a traced value")
                                                             : to_json(got)) +
                  " (static inputs are fixed when the program is traced)");
        return;
      }
      if (got.kind() == Kind::Placeholder && !allow_placeholders)
        invalid(path + ": a traced value (placeholder) cannot be run; it only exists inside its "
                "trace. Pass a concrete value");
      Aval want = ir.vars[slot.var];
      Aval have = aval_of(got);
      if (!(want == have))
        invalid(path + ": expected " + aval_name(want) + ", found " + aval_name(have));
    };
    check_structure(inputs[i], trees[i], "input[" + std::to_string(i) + "]", check_leaf);
    flatten_into(inputs[i], leaves);
  }
  return leaves;
}

}  // namespace af
