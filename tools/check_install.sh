#!/usr/bin/env bash
# Installs libaf from build dir $1 into a temporary prefix and builds a small
# C consumer two ways: CMake find_package(af) -> af::af, and pkg-config af;
# then a C++17 consumer of the installed wrapper af/af.hpp, a fresh Go module
# fetching the binding from a module proxy (bindings/go/check_proxy.sh),
# a fresh Rust crate (dynamic through cargo run, and static) and a fresh C#
# project installing the NuGet package from a local feed
# (bindings/csharp/check_feed.sh), each using its binding the way its
# ecosystem expects; the SQLite extension from the prefix, and the PostgreSQL
# extension built against it.
set -euo pipefail
trap 'echo "check_install.sh: failed at line $LINENO: $BASH_COMMAND" >&2' ERR
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
# A C program linked against a non-system prefix with an rpath (README) and
# the installed af CLI run with no LD_LIBRARY_PATH.
cc -std=c99 -o "$TMP/pc-consumer-rpath" "$TMP/consumer/main.c" $(pkg-config --cflags --libs af) \
  -Wl,-rpath,"$(pkg-config --variable=libdir af)"
env -u LD_LIBRARY_PATH "$TMP/pc-consumer-rpath"
env -u LD_LIBRARY_PATH "$TMP/prefix/bin/af" version
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
# The SQLite extension is installed beside libaf and finds it there ($ORIGIN);
# the PostgreSQL extension builds with PGXS against the installed libaf
# (pkg-config), as docs/PLUGIN_HOSTS.md says.
if [ -f "$BUILD/lib/libaf_sqlite.so" ]; then
  ext=$(find "$TMP/prefix" -name libaf_sqlite.so)
  [ "$(sqlite3 :memory: ".load ${ext%.so}" "SELECT af_route('*', 'echo', NULL)")" = 1 ]
  echo "libaf_sqlite from the prefix ok"
fi
if [ -d "$BUILD/postgres" ]; then
  mkdir "$TMP/pg"
  make -s -C "$TMP/pg" -f "$ROOT/hosts/postgres/Makefile" >/dev/null
  ldd "$TMP/pg/af.so" | grep "$TMP/prefix/.*libaf.so" >/dev/null  # not -q: under pipefail an early exit can SIGPIPE ldd
  echo "PostgreSQL extension against the installed libaf ok"
fi

# The installed af.pc and libaf, which the bindings' consumers below build against.
PC_DIR=$(dirname "$(find "$TMP/prefix" -name af.pc)")
LIB_DIR=$(PKG_CONFIG_PATH=$PC_DIR pkg-config --variable=libdir af)

# The Go binding the way `go get` installs it: published into a module proxy
# directory, fetched by a fresh module with GOPROXY=file://..., cgo flags from
# the installed af.pc (nothing from the build tree), run against the prefix.
bash "$ROOT/bindings/go/check_proxy.sh" "$TMP/prefix"

# A fresh Rust crate with a path dependency on the binding: libaf-sys finds the
# installed libaf through pkg-config; `cargo run` needs no rpath or
# LD_LIBRARY_PATH, and with the static feature the binary runs on its own.
mkdir -p "$TMP/crate/src"
cat >"$TMP/crate/src/main.rs" <<'RS'
fn main() -> Result<(), libaf::Error> {
    let ctx = libaf::Context::new()?;
    println!("rust crate: {}", ctx.concat(&[libaf::Value::from("ab"), libaf::Value::from("c")])?);
    Ok(())
}
RS
crate_toml() {
  printf '[package]\nname = "consumer"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\nlibaf = { path = "%s"%s }\n' \
    "$ROOT/bindings/rust" "$1" >"$TMP/crate/Cargo.toml"
}
crate_toml ""
(cd "$TMP/crate" && env -u AF_LIB_DIR -u LD_LIBRARY_PATH PKG_CONFIG_PATH=$PC_DIR \
  cargo run --offline -q | grep -q '^rust crate: "abc"$')
echo "rust crate (cargo run) against the installed libaf ok"
crate_toml ', features = ["static"]'
(cd "$TMP/crate" && env -u AF_LIB_DIR PKG_CONFIG_PATH=$PC_DIR cargo build --offline -q &&
  env -u LD_LIBRARY_PATH ./target/debug/consumer | grep -q '^rust crate: "abc"$')
echo "rust crate (static, run directly) ok"

# The C# binding the way NuGet installs it: the package Libaf packed with the
# installed libaf into a local folder feed, installed with `nuget install` into
# a fresh project (the one bindings/csharp/README.md shows) built with xbuild,
# run by Mono with no dllmap and no LD_LIBRARY_PATH.
bash "$ROOT/bindings/csharp/check_feed.sh" "$LIB_DIR"
