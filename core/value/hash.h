// Hash building blocks shared by Value::hash and the IR's structural hash.
// Both are defined functions of the bytes (XXH3 for strings, splitmix64's
// finalizer to combine), not std::hash, so af_ir_hash gives the same number
// in every process, build and platform, and can key caches kept on disk.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace af {

constexpr uint64_t hash_mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ULL;
  return h ^ (h >> 29);
}

uint64_t hash_bytes(std::string_view s) noexcept;  // XXH3-64, seed 0
// XXH3-128 of s as 16 bytes (high half first): a digest for keys on disk
// where a 64-bit collision would cost a wrong answer (run journals).
std::string hash128_bytes(std::string_view s);

// Bit pattern of a double with -0.0 folded into 0.0 and every NaN into one,
// for numbers compared by value (a schedule's priority; values themselves
// hash their bits: Value::hash).
uint64_t hash_double(double f) noexcept;

}  // namespace af
