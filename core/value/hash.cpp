#include "value/hash.h"

#include <cstring>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace af {

uint64_t hash_bytes(std::string_view s) noexcept { return XXH3_64bits(s.data(), s.size()); }

std::string hash128_bytes(std::string_view s) {
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, XXH3_128bits(s.data(), s.size()));
  return std::string(reinterpret_cast<const char*>(c.digest), sizeof c.digest);
}

uint64_t hash_double(double f) noexcept {
  if (f != f) return 0x7ff8000000000000ULL;
  if (f == 0.0) f = 0.0;
  uint64_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

}  // namespace af
