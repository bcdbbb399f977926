// Context: what running programs share inside one af_context_t. Each part
// is owned by the layer that defines it; the context only holds them:
//   - host functions registered by name (prims/host)
//   - LM providers and model routes, the shared scheduler (lm/, exec/)
// Thread safety: members synchronize themselves; the context is shared by
// every run started from it.
#pragma once

namespace af {

class Context {
 public:
  Context() = default;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
};

}  // namespace af
