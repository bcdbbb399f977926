// The built-in providers, made from JSON options (documented in af.h and
// lm/README.md). Each returns a shared provider; its limit (max_in_flight)
// is shared by every context it is routed in.
#pragma once

#include <functional>
#include <string_view>

#include "lm/provider.h"

namespace af::lm {

ProviderPtr make_echo(const Value& options);
ProviderPtr make_replay(const Value& options);
// The HTTP providers: type "openai", "anthropic" or "ollama"
// (lm/http_providers.cpp). In a build without them (-DAF_WITH_OPENAI=OFF:
// no libcurl) NOT_FOUND, saying how to get them.
ProviderPtr make_http_provider(std::string_view type, const Value& options);
// What make_http_provider calls; defined only in a build with the HTTP
// providers, so use it instead.
ProviderPtr make_openai(const Value& options);
ProviderPtr make_anthropic(const Value& options);
ProviderPtr make_ollama(const Value& options);
// {"type": "echo" | "openai" | "anthropic" | "ollama" | "replay", ...the
// options of that type}
ProviderPtr make_provider(const Value& spec);
// The options of each type, as their readers read them (lm/options.h):
// {"echo": [key...], "openai": ...}. Types this build lacks are left out.
Value describe_provider_options();
// A provider whose work is done by `submit` (the host): it receives each
// started call and finishes it later from any thread. `on_free` runs once
// when the provider is destroyed.
ProviderPtr make_host(std::function<void(std::shared_ptr<Call>)> submit,
                      std::function<void()> on_free, uint32_t max_in_flight);

}  // namespace af::lm
