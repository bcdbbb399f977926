#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine for libaf and builds it into build/.
# Installs packages with apt when run as root (skips what is present).
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(cmake ninja-build g++ pkg-config libgtest-dev zstd libzstd-dev flatbuffers-compiler
          libflatbuffers-dev libsimdjson-dev libxxhash-dev libbenchmark-dev libcurl4-openssl-dev zlib1g-dev
          clang libclang-rt-14-dev mono-mcs mono-xbuild nuget python3 python3-venv libre2-dev
          libsqlite3-dev sqlite3 postgresql-15 postgresql-server-dev-15 jq)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
command -v go >/dev/null || missing+=(golang-go)
command -v cargo >/dev/null || missing+=(cargo)
if ((${#missing[@]})); then
  if [ "$(id -u)" = 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "setup: missing packages: ${missing[*]} (run as root, or install them)" >&2
    exit 1
  fi
fi

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAF_WERROR=ON >/dev/null
cmake --build build
