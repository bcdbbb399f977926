// A compiled program's plan as saved in a .afg program: which equations run,
// which slot each variable reads, priorities. Plain data over the IR's
// equation and variable indices; core/io checks its shape when loading and
// core/exec (program_from_plan) its meaning.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace af::io {

struct PlanData {
  std::vector<uint32_t> live;      // equations that run, increasing
  std::vector<uint32_t> var_slot;  // per var: var whose slot holds it; kNoVar = never computed
  std::vector<double> priority;    // per live equation
  uint64_t removed_dce = 0, merged_cse = 0;
  // The plan of the program's sliced form (exec/program.h Program::sliced),
  // over the IR pipeline_form derives from the program's; null = none.
  std::shared_ptr<const PlanData> sliced = nullptr;
};

}  // namespace af::io
