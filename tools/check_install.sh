#!/usr/bin/env bash
# Installs libaf from build dir $1 into a temporary prefix and builds a small
# C consumer two ways: CMake find_package(af) -> af::af, and pkg-config af;
# then a C++17 consumer of the installed wrapper af/af.hpp, a fresh Go module
# a fresh Rust crate (dynamic through cargo run, and static) and a fresh C#
# project consuming the NuGet package, each using its binding the way its
# ecosystem expects; the SQLite extension from the prefix, and the PostgreSQL
# extension built against it.
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
  ldd "$TMP/pg/af.so" | grep -q "$TMP/prefix/.*libaf.so"
  echo "PostgreSQL extension against the installed libaf ok"
fi

# A fresh Go module using the binding the Go way: a replace directive to the
# checkout, cgo flags from the installed af.pc (nothing from the build tree).
# Go's build cache does not hash pkg-config's output, so a package built
# against an earlier (deleted) prefix would be reused: CGO_CFLAGS naming this
# prefix makes the cache key differ.
PC_DIR=$(dirname "$(find "$TMP/prefix" -name af.pc)")
LIB_DIR=$(PKG_CONFIG_PATH=$PC_DIR pkg-config --variable=libdir af)
mkdir -p "$TMP/gomod"
cat >"$TMP/gomod/main.go" <<'GO'
package main

import (
	"fmt"
	"os"

	"libaf.dev/af"
)

func main() {
	eng, err := af.NewEngine()
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	defer eng.Close()
	v, err := eng.ValueOf([]string{"a", "b"})
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Println("go module:", v)
}
GO
(cd "$TMP/gomod" && go mod init example.com/consumer >/dev/null 2>&1 &&
  go mod edit -require=libaf.dev/af@v0.0.0 -replace=libaf.dev/af="$ROOT/bindings/go" &&
  PKG_CONFIG_PATH=$PC_DIR CGO_ENABLED=1 GOFLAGS=-mod=mod CGO_CFLAGS="-O2 -g -I$TMP/prefix/include" \
    go build -o consumer . &&
  LD_LIBRARY_PATH=$LIB_DIR ./consumer | grep -q '^go module: \["a","b"\]$')
echo "go module against the installed libaf ok"

# A fresh Rust crate with a path dependency on the binding: af-sys finds the
# installed libaf through pkg-config; `cargo run` needs no rpath or
# LD_LIBRARY_PATH, and with the static feature the binary runs on its own.
mkdir -p "$TMP/crate/src"
cat >"$TMP/crate/src/main.rs" <<'RS'
fn main() -> Result<(), af::Error> {
    let ctx = af::Context::new()?;
    println!("rust crate: {}", ctx.concat(&[af::Value::from("ab"), af::Value::from("c")])?);
    Ok(())
}
RS
crate_toml() {
  printf '[package]\nname = "consumer"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\naf = { path = "%s"%s }\n' \
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

# The C# binding as a NuGet package (xbuild + Debian's nuget): packed with the
# installed libaf, installed from a local folder source into a fresh console
# project built with xbuild, run by Mono with no dllmap and no LD_LIBRARY_PATH.
bash "$ROOT/bindings/csharp/pack.sh" "$LIB_DIR" "$TMP/feed" >/dev/null
version=$(sed -n 's/^#define AF_VERSION_STRING "\(.*\)"$/\1/p' "$ROOT/capi/include/af/af.h")
mkdir -p "$TMP/csapp"
cat >"$TMP/csapp/App.cs" <<'CS'
using System;
using Af;

static class App
{
    static int Main()
    {
        using (var ctx = new Context())
        using (var v = ctx.Concat("ab", "c"))
        {
            Console.WriteLine("nuget package: " + v.ToJson());
            return v.AsString() == "abc" ? 0 : 1;
        }
    }
}
CS
cat >"$TMP/csapp/App.csproj" <<CSPROJ
<?xml version="1.0" encoding="utf-8"?>
<Project ToolsVersion="4.0" DefaultTargets="Build" xmlns="http://schemas.microsoft.com/developer/msbuild/2003">
  <PropertyGroup>
    <OutputType>Exe</OutputType>
    <AssemblyName>App</AssemblyName>
    <TargetFrameworkVersion>v4.5</TargetFrameworkVersion>
    <LangVersion>7.2</LangVersion>
    <OutputPath>bin/</OutputPath>
    <MonoLib>\$(MSBuildBinPath)/../../../4.5</MonoLib>
  </PropertyGroup>
  <ItemGroup>
    <Reference Include="mscorlib"><HintPath>\$(MonoLib)/mscorlib.dll</HintPath><Private>False</Private></Reference>
    <Reference Include="System"><HintPath>\$(MonoLib)/System.dll</HintPath><Private>False</Private></Reference>
    <Reference Include="Af"><HintPath>packages/Af.$version/lib/net45/Af.dll</HintPath></Reference>
    <Compile Include="App.cs" />
  </ItemGroup>
  <Import Project="\$(MSBuildToolsPath)/Microsoft.CSharp.targets" />
  <Import Project="packages/Af.$version/build/Af.targets" />
</Project>
CSPROJ
(cd "$TMP/csapp" &&
  nuget install Af -Version "$version" -Source "$TMP/feed" -OutputDirectory packages -NonInteractive >/dev/null &&
  xbuild /nologo /v:quiet App.csproj >/dev/null &&
  env -u LD_LIBRARY_PATH mono bin/App.exe | grep -q '^nuget package: "abc"$')
echo "C# NuGet package in a fresh project ok"
