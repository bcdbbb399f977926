// RunEnv: what an impl rule may need from its surroundings while running.
// It grows with the executor (host functions, providers, cancellation).
#pragma once

#include <span>

#include "value/value.h"

namespace af {

class Context;

struct RunEnv {
  Context* context = nullptr;
  // The inputs of the equation being run when the interpreter owns them:
  // values moved out of their slots at their last use, held nowhere else by
  // the run. Set only around one impl call (empty otherwise).
  std::span<Value> owned_in = {};

  // in[k] as a value the impl may consume (e.g. append to a string nothing
  // else shares), or nullptr when `in` is not the owned input list.
  Value* owned(std::span<const Value> in, size_t k) const noexcept {
    return !in.empty() && in.data() == owned_in.data() && k < owned_in.size() ? &owned_in[k] : nullptr;
  }
};

}  // namespace af
