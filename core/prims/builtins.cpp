#include "prims/builtins.h"

#include "ir/registry.h"

namespace af {

void add_builtin_prims(std::vector<Prim>& out) {
  add_string_prims(out);
  add_control_prims(out);
  add_lm_prims(out);
  add_control_flow_prims(out);
  add_scan_prims(out);
  add_batching_prims(out);
  add_pipeline_prims(out);
  add_linear_prims(out);
  add_host_prims(out);
}

}  // namespace af
