#!/usr/bin/env bash
# Installs the Go binding the way `go get` does, from a module proxy: writes
# this module at v<AF_VERSION_STRING> into a proxy directory (mkproxy.go: the
# files git tracks here, in Go's module zip format), then in a fresh module
# outside the repository runs `go get <module>@<version>` with
# GOPROXY=file://<dir> and an empty module cache, builds a program tracing an
# LM call (the echo provider), with cgo flags from PREFIX's af.pc, and runs it.
#   usage: check_proxy.sh PREFIX [PROXY_DIR]
# PREFIX: an installed libaf (cmake --install <build> --prefix PREFIX).
# PROXY_DIR: where to write the proxy (kept); default a temporary directory.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
prefix="$(cd "${1:?usage: check_proxy.sh PREFIX [PROXY_DIR]}" && pwd)"
tmp=$(mktemp -d)
# The module cache is read-only; -modcacherw below lets this remove it.
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
proxy="${2:-$tmp/proxy}"
mkdir -p "$proxy"
proxy="$(cd "$proxy" && pwd)"

module=$(sed -n 's/^module //p' "$here/go.mod")
version=v$(sed -n 's/^#define AF_VERSION_STRING "\(.*\)"$/\1/p' "$here/../../capi/include/af/af.h")
pc=$(find "$prefix" -name af.pc | head -1)
[ -n "$pc" ] || { echo "check_proxy.sh: no af.pc under $prefix" >&2; exit 2; }
pc_dir=$(dirname "$pc")
lib_dir=$(PKG_CONFIG_PATH=$pc_dir pkg-config --variable=libdir af)

# The proxy: what a tag bindings/go/$version would publish (the tracked files
# and any new ones not ignored; outside git, every file here).
(cd "$here" &&
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files --cached --others --exclude-standard -- .
  else
    find . -type f
  fi | env -u GOFLAGS go run mkproxy.go -version "$version" \
    -time "$(git log -1 --format=%cI 2>/dev/null || date -u +%Y-%m-%dT%H:%M:%SZ)" "$proxy")

mkdir -p "$tmp/app"
cat >"$tmp/app/main.go" <<GO
package main

import (
	"context"
	"fmt"
	"os"

	af "$module"
)

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func main() {
	eng, err := af.NewEngine()
	check(err)
	defer eng.Close()
	echo, err := af.NewEchoProvider("") // answers "<model>|<last message>"
	check(err)
	check(eng.Route("*", echo))
	example, err := eng.Str("x")
	check(err)
	greet, err := af.Trace(eng, func(eng *af.Engine, in []*af.Value) (*af.Value, error) {
		prompt, err := eng.Format("Hello, {}!", in[0])
		if err != nil {
			return nil, err
		}
		messages, err := eng.ValueOf([]any{map[string]any{"role": "user", "content": prompt}})
		if err != nil {
			return nil, err
		}
		model, err := eng.Str("greeter")
		if err != nil {
			return nil, err
		}
		return eng.LMCall(messages, model)
	}, example)
	check(err)
	world, err := eng.Str("World")
	check(err)
	out, err := eng.Call(context.Background(), greet, world)
	check(err)
	s, err := out.AsString()
	check(err)
	fmt.Printf("libaf %s from the module proxy: %s\n", af.Version(), s)
}
GO
# Only the proxy (no network: no fallback, no private paths fetched directly,
# no toolchain download), a module cache of its own so the module comes from
# the proxy, and CGO_CFLAGS naming the prefix, since Go's build cache does not
# hash pkg-config's output.
(cd "$tmp/app" &&
  export GOPROXY="file://$proxy" GOSUMDB=off GOPRIVATE= GONOPROXY= GOTOOLCHAIN=local \
    GOFLAGS="-mod=mod -modcacherw" GOMODCACHE="$tmp/modcache" CGO_ENABLED=1 \
    PKG_CONFIG_PATH="$pc_dir" CGO_CFLAGS="-O2 -g -I$prefix/include" &&
  go mod init example.com/app >/dev/null 2>&1 &&
  go get "$module@$version" &&
  go build -o app . &&
  grep -q "^$module $version h1:" go.sum &&
  out=$(LD_LIBRARY_PATH=$lib_dir ./app) &&
  echo "$out" &&
  [ "$out" = "libaf ${version#v} from the module proxy: greeter|Hello, World!" ])
echo "go get $module@$version from a file proxy ok"
