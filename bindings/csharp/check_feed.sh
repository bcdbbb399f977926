#!/usr/bin/env bash
# Installs the C# binding the way NuGet does: packs Libaf.<version>.nupkg with
# the libaf.so of LIB_DIR (pack.sh) into a local folder feed, checks its
# layout, then in a fresh directory outside the repository installs it with
# `nuget install Libaf -Source <feed>`, builds the consumer project of
# README.md ("A consumer on Debian's Mono": App.cs and App.csproj, taken from
# there verbatim) with xbuild and runs it with Mono, with no dllmap and no
# LD_LIBRARY_PATH. The program traces an LM call answered by the echo provider.
#   usage: check_feed.sh LIB_DIR [FEED_DIR]
# LIB_DIR: the lib directory of an installed libaf (<prefix>/lib).
# FEED_DIR: where to write the package (kept); default a temporary directory.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
lib_dir="$(cd "${1:?usage: check_feed.sh LIB_DIR [FEED_DIR]}" && pwd)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
feed="${2:-$tmp/feed}"
version=$(sed -n 's/^#define AF_VERSION_STRING "\(.*\)"$/\1/p' "$here/../../capi/include/af/af.h")

bash "$here/pack.sh" "$lib_dir" "$feed" >/dev/null
nupkg="$feed/Libaf.$version.nupkg"
for f in lib/net45/Af.dll lib/net45/Af.xml runtimes/linux-x64/native/libaf.so build/Libaf.targets; do
  unzip -l "$nupkg" | grep " $f\$" >/dev/null || { echo "check_feed.sh: $nupkg has no $f" >&2; exit 1; }
done

# The code block right after the line "<!-- check_feed.sh: NAME -->" of README.md.
readme_block() {
  awk -v mark="<!-- check_feed.sh: $1 -->" '
    $0 == mark { found = 1; next }
    found && /^```/ { if (body) exit; body = 1; next }
    body { print }' "$here/README.md"
}
mkdir -p "$tmp/app"
readme_block App.cs >"$tmp/app/App.cs"
readme_block App.csproj >"$tmp/app/App.csproj"
[ -s "$tmp/app/App.cs" ] && [ -s "$tmp/app/App.csproj" ] ||
  { echo "check_feed.sh: README.md lacks the App.cs or App.csproj block" >&2; exit 1; }
grep -q "packages/Libaf\.$version/" "$tmp/app/App.csproj" ||
  { echo "check_feed.sh: README.md's App.csproj does not name Libaf $version" >&2; exit 1; }

cd "$tmp/app"
nuget install Libaf -Version "$version" -Source "$feed" -OutputDirectory packages \
  -NoCache -NonInteractive >install.log || { cat install.log; exit 1; }
xbuild /nologo /v:quiet App.csproj >build.log || { cat build.log; exit 1; }
out=$(env -u LD_LIBRARY_PATH mono bin/App.exe)
echo "$out"
[ "$out" = "libaf $version from the NuGet package: greeter|Hello, World!" ]
echo "nuget install Libaf $version from a local feed ok"
