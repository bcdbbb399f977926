// RunEnv: what an impl rule may need from its surroundings while running.
// It grows with the executor (host functions, providers, cancellation).
#pragma once

namespace af {

class Context;

struct RunEnv {
  Context* context = nullptr;
};

}  // namespace af
