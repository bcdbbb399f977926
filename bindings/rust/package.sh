#!/usr/bin/env bash
# Packages the Rust binding's two crates, libaf-sys and libaf, for crates.io.
#
#   bindings/rust/package.sh [package|publish] [cargo options...]
#
#   package.sh                      # target/package/libaf-sys-V.crate, libaf-V.crate
#   package.sh package --allow-dirty
#   package.sh publish --dry-run    # every check of a publication, nothing uploaded
#   package.sh publish              # publishes libaf-sys, then libaf
#
# A crate holds only the files inside its own directory, so libaf's C++
# sources (what the root CMakeLists.txt configures; the `vendored` feature
# builds its af_shared/af_static targets) are copied into libaf-sys/vendor/
# first, and removed again on exit: inside this repository the `vendored`
# feature builds from the repository's own tree, never from a stale copy.
# Tests, docs, benchmarks, fuzzers and the other bindings stay out.
#
# Both crates are packaged in one `cargo package --workspace`: Cargo resolves
# libaf's dependency on libaf-sys against the libaf-sys just packaged (a
# registry of its own under target/package), so libaf packages before
# libaf-sys is on crates.io. Verification builds both crates; libaf-sys then
# needs a libaf to link (AF_LIB_DIR=<dir of libaf.so>, or an installed one
# pkg-config finds), not the vendored build.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
VENDOR=$HERE/libaf-sys/vendor

command=package
if [[ $# -gt 0 && ( $1 == package || $1 == publish ) ]]; then
  command=$1
  shift
fi

cleanup() { rm -rf "$VENDOR"; }
trap cleanup EXIT
rm -rf "$VENDOR"
mkdir -p "$VENDOR"

# What configuring the root CMakeLists.txt needs: the library's own tree,
# and the sources of the programs it declares beside the library (the CLI,
# the examples, the database hosts), which a `--target af_shared` build
# configures but does not compile.
copy() {
  local path
  for path in "$@"; do
    mkdir -p "$VENDOR/$(dirname "$path")"
    cp -R "$ROOT/$path" "$VENDOR/$path"
  done
}
copy CMakeLists.txt core capi schemas cmake \
  tools/af/main.c \
  examples/hello/main.c examples/hello/hello_program.c examples/hello/hello_program.h \
  examples/triage/main.c examples/triage/triage_program.c examples/triage/triage_program.h \
  examples/rolling_summary/main.c examples/agent/main.cpp \
  examples/plugin_host/CMakeLists.txt examples/plugin_host/make_graphs.c \
  examples/plugin_host/plugin_host.c examples/plugin_host/plugin_host.cpp \
  hosts/sql/afsql.c hosts/sql/afsql.h hosts/sql/tests/loop_graph.c \
  hosts/sqlite/CMakeLists.txt hosts/sqlite/af_sqlite.c \
  hosts/postgres/CMakeLists.txt hosts/postgres/Makefile hosts/postgres/af_pg.c \
  hosts/postgres/af.control hosts/postgres/af--0.1.sql
find "$VENDOR" -name '*.md' -delete

# The copy configures (a few seconds; nothing is compiled): a file the root
# CMakeLists.txt has come to need is missing here, not in a user's build.
configured=$(mktemp -d)
if ! cmake -S "$VENDOR" -B "$configured" -DAF_BUILD_TESTS=OFF -DAF_BUILD_BENCH=OFF >"$configured.log" 2>&1; then
  cat "$configured.log" >&2
  echo "package.sh: libaf-sys/vendor/ does not configure: a source the root CMakeLists.txt needs is not copied" >&2
  rm -rf "$configured" "$configured.log"
  exit 1
fi
rm -rf "$configured" "$configured.log"
echo "libaf-sys/vendor: $(du -sh "$VENDOR" | cut -f1) of libaf sources, configures"

cd "$HERE"
if [[ $command == package ]]; then
  cargo package --workspace "$@"
  find "${CARGO_TARGET_DIR:-target}/package" -maxdepth 1 -name '*.crate' -newer "$VENDOR/CMakeLists.txt" -exec ls -l {} +
else
  cargo publish --workspace "$@"
fi
