#include "rt/env.h"

namespace af {

namespace {
thread_local const std::shared_ptr<const Evaluation>* t_serving = nullptr;
const std::shared_ptr<const Evaluation> kNone;
}  // namespace

const std::shared_ptr<const Evaluation>& serving_evaluation() noexcept {
  return t_serving ? *t_serving : kNone;
}

ServingScope::ServingScope(const std::shared_ptr<const Evaluation>& e) noexcept : prev_(t_serving) {
  t_serving = &e;
}

ServingScope::~ServingScope() { t_serving = prev_; }

}  // namespace af
