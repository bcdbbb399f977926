// Router: model name -> providers, by pattern. Patterns are globs ('*' any
// run of characters, '?' one character). An exact pattern beats any glob;
// among globs the one with more literal characters wins; on a tie the route
// added last wins. Routing the same pattern again replaces its providers.
// A route names one provider, or an ordered list of fallbacks: a call that
// fails with PROVIDER or TIMEOUT (after that provider's retries) is tried
// on the next one (prims/lm.cpp).
#pragma once

#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "lm/provider.h"

namespace af::lm {

class Router {
 public:
  using Providers = std::shared_ptr<const std::vector<ProviderPtr>>;  // non-empty
  // What a request holds: the route's providers, weakly (a provider freed
  // while its calls fly fails them rather than living on in them). Made
  // once per route, shared by every request routed by it.
  using WeakProviders = std::shared_ptr<const std::vector<std::weak_ptr<Provider>>>;
  void route(std::string pattern, ProviderPtr provider);
  void route(std::string pattern, std::vector<ProviderPtr> fallbacks);
  // NOT_FOUND naming the model and the patterns there are.
  WeakProviders resolve(std::string_view model) const;
  // The first provider; nullptr when no pattern matches.
  ProviderPtr find(std::string_view model) const;

 private:
  struct Route {
    std::string pattern;
    Providers providers;  // the route holds its providers
    WeakProviders weak;   // the same, handed to requests
    size_t literal;  // non-wildcard characters
    bool exact;
  };
  const Route* match(std::string_view model) const;  // with mu_ held
  mutable std::mutex mu_;
  std::vector<Route> routes_;
};

bool glob_match(std::string_view pattern, std::string_view text) noexcept;

}  // namespace af::lm
