// Router: model name -> provider, by pattern. Patterns are globs ('*' any
// run of characters, '?' one character). An exact pattern beats any glob;
// among globs the one with more literal characters wins; on a tie the route
// added last wins. Routing the same pattern again replaces its provider.
#pragma once

#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "lm/provider.h"

namespace af::lm {

class Router {
 public:
  void route(std::string pattern, ProviderPtr provider);
  // NOT_FOUND naming the model and the patterns there are.
  ProviderPtr resolve(std::string_view model) const;
  // nullptr when no pattern matches.
  ProviderPtr find(std::string_view model) const;

 private:
  struct Route {
    std::string pattern;
    ProviderPtr provider;
    size_t literal;  // non-wildcard characters
    bool exact;
  };
  mutable std::mutex mu_;
  std::vector<Route> routes_;
};

bool glob_match(std::string_view pattern, std::string_view text) noexcept;

}  // namespace af::lm
