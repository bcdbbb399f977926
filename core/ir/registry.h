// The process-wide primitive registry: name + version -> Prim. The built-in
// primitives are registered on first use (an explicit call, not static
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

// The built-in primitives, in registration order: defined by core/prims
// (prims/builtins.cpp), the one layer that knows them; the registry asks for
// them on first use.
void add_builtin_prims(std::vector<Prim>& out);

}  // namespace af
