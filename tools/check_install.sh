#!/usr/bin/env bash
# Installs libaf from build dir $1 into a temporary prefix and builds a small
# C consumer two ways: CMake find_package(af) -> af::af, and pkg-config af;
# then a C++17 consumer of the installed wrapper af/af.hpp.
set -euo pipefail
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cmake --install "$BUILD" --prefix "$TMP/prefix" >/dev/null
mkdir -p "$TMP/consumer"
cat >"$TMP/consumer/main.c" <<'C'
#include <af/af.h>
#include <stdio.h>
#include <string.h>
int main(void) {
  af_context_t* ctx = NULL;
  af_value_t *a = NULL, *b = NULL, *out = NULL;
  if (af_context_new(&ctx)) return 1;
  if (af_value_str(ctx, "ab", 2, &a) || af_value_str(ctx, "c", 1, &b)) return 1;
  const af_value_t* args[2] = {a, b};
  if (af_concat(ctx, args, 2, &out)) return 1;
  const char* s; size_t n;
  if (af_value_get_str(out, &s, &n) || n != 3 || memcmp(s, "abc", 3)) return 1;
  printf("libaf %s ok\n", af_version());
  af_value_free(a); af_value_free(b); af_value_free(out); af_context_free(ctx);
  return 0;
}
C
cat >"$TMP/consumer/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.22)
project(consumer C)
find_package(af REQUIRED)
add_executable(consumer main.c)
target_link_libraries(consumer PRIVATE af::af)
CM
cmake -S "$TMP/consumer" -B "$TMP/consumer/build" -G Ninja -DCMAKE_PREFIX_PATH="$TMP/prefix" >/dev/null
cmake --build "$TMP/consumer/build" >/dev/null
LD_LIBRARY_PATH="$TMP/prefix/lib:$TMP/prefix/lib/x86_64-linux-gnu" "$TMP/consumer/build/consumer"
PKG_CONFIG_PATH=$(dirname "$(find "$TMP/prefix" -name af.pc)")
export PKG_CONFIG_PATH
cc -std=c99 -o "$TMP/pc-consumer" "$TMP/consumer/main.c" $(pkg-config --cflags --libs af)
LD_LIBRARY_PATH=$(pkg-config --variable=libdir af) "$TMP/pc-consumer"
# The C++17 wrapper is installed beside af.h and builds against the same flags.
cat >"$TMP/consumer/main.cpp" <<'CPP'
#include <af/af.hpp>
#include <cstdio>
int main() {
  af::Context ctx;
  std::string s = ctx.concat({ctx.str("ab"), ctx.str("c")}).str();
  std::printf("af.hpp %s ok\n", s.c_str());
  return s == "abc" ? 0 : 1;
}
CPP
c++ -std=c++17 -Wall -Wextra -pedantic -Werror -o "$TMP/pc-consumer-cpp" "$TMP/consumer/main.cpp" $(pkg-config --cflags --libs af)
LD_LIBRARY_PATH=$(pkg-config --variable=libdir af) "$TMP/pc-consumer-cpp"
