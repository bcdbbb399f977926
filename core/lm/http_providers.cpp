// The one place that creates the HTTP providers (openai, anthropic, ollama):
// make_provider and the C API come here. A libaf configured with
// -DAF_WITH_OPENAI=OFF has neither them nor libcurl (CMakeLists.txt leaves
// their sources out and sets AF_WITH_HTTP_PROVIDERS to 0); asking it for one
// is NOT_FOUND saying how to get one.
#include <string>

#include "lm/providers.h"

#ifndef AF_WITH_HTTP_PROVIDERS
#error "AF_WITH_HTTP_PROVIDERS (0 or 1) is set by CMakeLists.txt from AF_WITH_OPENAI"
#endif

namespace af::lm {

ProviderPtr make_http_provider(std::string_view type, const Value& options) {
  if (type != "openai" && type != "anthropic" && type != "ollama")
    invalid("unknown HTTP provider type \"" + std::string(type) + "\" (known: openai, anthropic, ollama)");
#if AF_WITH_HTTP_PROVIDERS
  if (type == "openai") return make_openai(options);
  if (type == "anthropic") return make_anthropic(options);
  return make_ollama(options);
#else
  (void)options;
  fail(Code::NotFound, "the " + std::string(type) +
                           " provider is not in this build of libaf (built with -DAF_WITH_OPENAI=OFF); rebuild "
                           "with -DAF_WITH_OPENAI=ON, or register a host provider (af_provider_host_new)");
#endif
}

}  // namespace af::lm
