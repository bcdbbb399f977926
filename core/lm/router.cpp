#include "lm/router.h"

#include "value/error.h"

namespace af::lm {

bool glob_match(std::string_view p, std::string_view t) noexcept {
  size_t pi = 0, ti = 0, star = std::string_view::npos, mark = 0;
  while (ti < t.size()) {
    if (pi < p.size() && (p[pi] == '?' || p[pi] == t[ti])) {
      ++pi, ++ti;
    } else if (pi < p.size() && p[pi] == '*') {
      star = pi++;
      mark = ti;
    } else if (star != std::string_view::npos) {
      pi = star + 1;
      ti = ++mark;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

void Router::route(std::string pattern, ProviderPtr provider) {
  route(std::move(pattern), std::vector<ProviderPtr>{std::move(provider)});
}

void Router::route(std::string pattern, std::vector<ProviderPtr> fallbacks) {
  if (fallbacks.empty()) invalid("a route needs at least one provider");
  auto weak = std::make_shared<const std::vector<std::weak_ptr<Provider>>>(fallbacks.begin(), fallbacks.end());
  auto providers = std::make_shared<const std::vector<ProviderPtr>>(std::move(fallbacks));
  size_t literal = 0;
  for (char c : pattern) literal += c != '*' && c != '?';
  bool exact = literal == pattern.size();
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = routes_.begin(); it != routes_.end(); ++it)
    if (it->pattern == pattern) {
      routes_.erase(it);
      break;
    }
  routes_.push_back(Route{std::move(pattern), std::move(providers), std::move(weak), literal, exact});
}

const Router::Route* Router::match(std::string_view model) const {
  const Route* best = nullptr;
  for (const Route& r : routes_) {
    if (!glob_match(r.pattern, model)) continue;
    if (!best || r.exact > best->exact || (r.exact == best->exact && r.literal >= best->literal))
      best = &r;
  }
  return best;
}

ProviderPtr Router::find(std::string_view model) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Route* r = match(model);
  return r ? r->providers->front() : nullptr;
}

Router::WeakProviders Router::resolve(std::string_view model) const {
  std::string known;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (const Route* r = match(model)) return r->weak;
    for (const Route& r : routes_) {
      if (!known.empty()) known += ", ";
      append_json_string(known, r.pattern);
    }
  }
  std::string m;
  append_json_string(m, model);
  fail(Code::NotFound, "no provider is routed for model " + m +
                           (known.empty() ? std::string(" (no routes: add one with af_context_route)")
                                          : " (routes: " + known + ")"));
}

}  // namespace af::lm
