#!/usr/bin/env bash
# The crates as crates.io would serve them: packages libaf-sys and libaf
# (package.sh), serves them from a local registry, and builds a fresh crate
# outside this repository that depends on `libaf = "0.1"` like any registry
# dependency. libaf-sys finds an installed libaf by pkg-config; the program
# traces a function, runs it with the echo provider and checks the answer.
#
#   bindings/rust/check_registry.sh BUILD_DIR|PREFIX [features...]
#
# BUILD_DIR: a configured and built CMake tree (installed into a temporary
# prefix, not rebuilt); PREFIX: an installed libaf (PREFIX/lib/pkgconfig/af.pc).
# Features (e.g. `vendored`) are those of the consumer's libaf dependency;
# `serde` is always on (the registry serves serde and serde_json too, from
# Cargo's cache: run `cargo fetch --locked` here once, online). Offline
# throughout; exits nonzero on the first failure.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[[ $# -ge 1 ]] || { echo "usage: $0 BUILD_DIR|PREFIX [features...]" >&2; exit 2; }
FROM=$(cd "$1" && pwd)
shift
FEATURES=serde
for f in "$@"; do FEATURES="$FEATURES $f"; done

TMP=$(mktemp -d /tmp/libaf-registry.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
step() { echo "== $*"; }

if [[ -f $FROM/CMakeCache.txt ]]; then
  step "install $FROM into $TMP/prefix"
  cmake --install "$FROM" --prefix "$TMP/prefix" >/dev/null
  PREFIX=$TMP/prefix
else
  PREFIX=$FROM
fi
PC=$(find "$PREFIX" -path '*/pkgconfig/af.pc' | head -n1)
[[ -n $PC ]] || { echo "no pkgconfig/af.pc under $PREFIX" >&2; exit 1; }
export PKG_CONFIG_PATH
PKG_CONFIG_PATH=$(dirname "$PC")
unset AF_LIB_DIR LD_LIBRARY_PATH
step "libaf $(pkg-config --modversion af) by pkg-config: $PKG_CONFIG_PATH"

# Package both crates (verification builds them against that libaf).
step "package libaf-sys and libaf (package.sh)"
export CARGO_TARGET_DIR=$TMP/target
bash "$HERE/package.sh" package --offline --allow-dirty 2>&1 |
  grep -v -e '^warning: ignoring test' -e 'no documentation, homepage or repository' \
    -e '^  |$' -e '^  = note: see https://doc.rust-lang.org/cargo/reference/manifest.html'

# A directory registry: each crate unpacked, with the checksums Cargo checks.
REGISTRY=$TMP/registry
mkdir -p "$REGISTRY"
add_crate() {
  local crate=$1 dir
  tar xzf "$crate" -C "$REGISTRY"
  dir=$REGISTRY/$(basename "$crate" .crate)
  (cd "$dir" && find . -type f ! -name .cargo-checksum.json -printf '%P\n' | sort |
    while read -r f; do jq -n --arg f "$f" --arg s "$(sha256sum "$f" | cut -d' ' -f1)" '{($f): $s}'; done |
    jq -s --arg p "$(sha256sum "$crate" | cut -d' ' -f1)" '{files: add, package: $p}') \
    >"$dir/.cargo-checksum.json"
}
for crate in "$CARGO_TARGET_DIR"/package/libaf-sys-*.crate "$CARGO_TARGET_DIR"/package/libaf-[0-9]*.crate; do
  add_crate "$crate"
done
# serde and serde_json with what they depend on: the .crate files Cargo
# downloaded for Cargo.lock (the versions CI tests with).
cargo metadata --manifest-path "$HERE/Cargo.toml" --format-version 1 --locked --offline |
  jq -r '.packages[] | select(.source != null and (.source | startswith("registry+"))) | .manifest_path' |
  while read -r manifest; do
    src=$(dirname "$manifest")
    crate=$(dirname "$(dirname "$src")")/../cache/$(basename "$(dirname "$src")")/$(basename "$src").crate
    [[ -f $crate ]] || { echo "not in Cargo's cache: $crate (run cargo fetch --locked)" >&2; exit 1; }
    add_crate "$crate"
  done
step "local registry $REGISTRY: $(cd "$REGISTRY" && echo *)"

# The consumer: a new crate in /tmp whose crates.io is that registry.
APP=$TMP/app
mkdir -p "$APP/src" "$APP/.cargo"
cat >"$APP/.cargo/config.toml" <<TOML
[source.crates-io]
replace-with = "libaf-local"

[source.libaf-local]
directory = "$REGISTRY"
TOML
features=$(printf '"%s", ' $FEATURES)
cat >"$APP/Cargo.toml" <<TOML
[package]
name = "registry-consumer"
version = "0.1.0"
edition = "2021"

[dependencies]
libaf = { version = "0.1", features = [${features%, }] }
serde_json = "1"
TOML
cat >"$APP/src/main.rs" <<'RS'
use libaf::{Context, Program, Provider, Value};

fn main() -> libaf::Result<()> {
    let ctx = Context::new()?;
    // The echo provider answers "model|prompt".
    ctx.route("*", &Provider::echo("")?)?;
    let greet = ctx.trace(
        |ctx, inputs| {
            let prompt = ctx.format("Say hello to {}.", &inputs[..1], None)?;
            let msg = Value::dict([("role", Value::from("user")), ("content", prompt)])?;
            ctx.lm_call(Value::list(&[msg]), "greeter")
        },
        &[Value::from("name")],
        None,
    )?;
    println!("traced: {} equations", greet.eqn_count());
    let out = Program::compile(&ctx, &greet)?.call(&ctx, &[Value::from("Ada")])?;
    println!("answer: {}", serde_json::to_string(&out).expect("serde"));
    println!("libaf {} linked from {}", libaf::version(), libaf::sys::LIB_DIR);
    Ok(())
}
RS
step "cargo run a fresh crate: libaf = { version = \"0.1\", features = [${features%, }] }"
(cd "$APP" && cargo run --offline --quiet) | tee "$TMP/out.txt"
grep -q '^traced: 2 equations$' "$TMP/out.txt"
grep -qx 'answer: "greeter|Say hello to Ada."' "$TMP/out.txt"
echo "rust crate from a local registry ok"
