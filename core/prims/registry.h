// The process-wide primitive registry: name + version -> Prim. Built-in
// primitive families are registered on first use (explicit calls, not static
// initializers, so a static libaf.a never drops them).
#pragma once

#include <string_view>
#include <vector>

#include "ir/prim.h"

namespace af {

// nullptr if absent; version 0 = the newest registered version.
const Prim* find_prim(std::string_view name, uint32_t version = 0);
// Like find_prim, but throws INTERNAL if absent (for built-in names).
const Prim& prim(std::string_view name);
// Registers p; INVALID_ARGUMENT if (name, version) exists. The returned
// pointer is stable for the life of the process.
const Prim* register_prim(Prim p);
std::vector<const Prim*> all_prims();

// Each built-in family appends its primitives (one function per file).
void add_string_prims(std::vector<Prim>& out);
void add_control_prims(std::vector<Prim>& out);
void add_lm_prims(std::vector<Prim>& out);  // prims/lm.cpp
void add_control_flow_prims(std::vector<Prim>& out);  // prims/control_flow.cpp: switch, while_loop
void add_scan_prims(std::vector<Prim>& out);          // prims/scan.cpp: while_scan, scan
void add_batching_prims(std::vector<Prim>& out);      // prims/batching.cpp: map, batch_check, broadcast
void add_linear_prims(std::vector<Prim>& out);        // prims/linear.cpp: accumulate, zeros_like, ...
void add_host_prims(std::vector<Prim>& out);          // prims/host.cpp: host_call

}  // namespace af
