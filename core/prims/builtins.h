// The built-in primitive families: each file of core/prims appends its
// primitives (with every rule) through one function; add_builtin_prims
// (ir/registry.h) calls them all.
#pragma once

#include <vector>

#include "ir/prim.h"

namespace af {

void add_string_prims(std::vector<Prim>& out);          // prims/string.cpp: format, concat, match
void add_control_prims(std::vector<Prim>& out);         // prims/control.cpp: stop_gradient, depends, checkpoint
void add_lm_prims(std::vector<Prim>& out);              // prims/lm.cpp: lm_call, lm_schema_call
void add_control_flow_prims(std::vector<Prim>& out);  // prims/control_flow.cpp: switch, while_loop
void add_scan_prims(std::vector<Prim>& out);          // prims/scan.cpp: while_scan, scan
void add_batching_prims(std::vector<Prim>& out);      // prims/batching.cpp: map, batch_check, broadcast
void add_pipeline_prims(std::vector<Prim>& out);      // prims/pipeline.cpp: pipeline
void add_linear_prims(std::vector<Prim>& out);        // prims/linear.cpp: accumulate, zeros_like, ...
void add_host_prims(std::vector<Prim>& out);          // prims/host.cpp: host_call

}  // namespace af
