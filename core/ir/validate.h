// The one definition of a valid IR. validate() (ir.h) checks an IR made in
// memory; the loader (core/io/decode.cpp, which checks only the bytes) checks
// every IR it reads here too, as it builds it.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "ir/ir.h"
#include "value/error.h"

namespace af {

// Checks IRs one after another against every rule of a valid IR: SSA (each
// var in range, defined once, before use), input and output counts against
// their structures, input roles, sub-IRs (not null, checked themselves, at
// most kMaxIrDepth levels deep), params against the primitive's declared
// params, and each equation's arity, kinds and outputs against its
// primitive's abstract rule. Each sub-IR and each distinct equation signature
// (primitive, params, input structure and kinds) is checked once across
// every IR given to one checker, which remembers them by address: the IRs it
// checked must outlive it. Messages say what and where: "<lead><sep>equation
// 3 (concat) uses %9 before it is defined", a sub-IR's lead naming the path
// to it ("invalid IR > equation 2 (switch) param branches[a]").
class IRChecker {
 public:
  // How a failure is reported: `code`, and with keep_rule_codes a
  // primitive's rule failing keeps its own code (NOT_FOUND for an
  // unregistered host function, ...). validate(): INVALID_ARGUMENT, kept;
  // the loader: FORMAT for everything (a bad file is bad whichever rule it
  // breaks).
  struct Report {
    Code code = Code::InvalidArgument;
    bool keep_rule_codes = true;
    // A primitive that declares no params (an empty Prim::params): with
    // this, it takes none, like one that declares some takes only those (the
    // loader: a file's params are checked against the registry before any
    // rule sees them); without, its params are left to its rule (validate():
    // a primitive made in memory without declarations).
    bool undeclared_means_none = false;
  };
  IRChecker();  // validate()'s report
  explicit IRChecker(Report report);
  ~IRChecker();
  IRChecker(const IRChecker&) = delete;
  IRChecker& operator=(const IRChecker&) = delete;

  // Checks ir and the sub-IRs it holds that this checker has not checked.
  void check(const IR& ir, std::string lead = "invalid IR", std::string_view sep = ": ");

  // The same check, as ir is built in place (the loader: one pass over the
  // equations): begin once its vars, inputs, input roles and slice_items are
  // set; equation(i) once ir.eqns[i] is in place; end once its outputs are.
  // `hint`, for speed only: equations given the same hint usually share a
  // signature (the loader: its param set's index).
  void begin(const IR& ir, std::string lead, std::string_view sep);
  void equation(size_t i, uint32_t hint = 0);
  void end();

  // The host functions the checked equations name (each param a primitive
  // declares with names_host_function), sorted.
  const std::set<std::string, std::less<>>& host_functions() const;

 private:
  struct State;
  struct Scope;
  std::unique_ptr<State> s_;
  std::unique_ptr<Scope> building_;  // between begin and end
};

}  // namespace af
