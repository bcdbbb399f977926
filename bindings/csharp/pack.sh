#!/usr/bin/env bash
# Builds Af.dll with xbuild (Af.csproj) and packs the NuGet package
# Libaf.<version>.nupkg (nuget/Libaf.nuspec) with libaf for linux-x64 from LIB_DIR.
#   usage: pack.sh LIB_DIR OUT_DIR      (LIB_DIR holds libaf.so, e.g. <prefix>/lib)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
lib_dir="$(cd "${1:?usage: pack.sh LIB_DIR OUT_DIR}" && pwd)"
out="${2:?usage: pack.sh LIB_DIR OUT_DIR}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
[ -e "$lib_dir/libaf.so" ] || { echo "pack.sh: no libaf.so in $lib_dir" >&2; exit 2; }
version=$(sed -n 's/^#define AF_VERSION_STRING "\(.*\)"$/\1/p' "$here/../../capi/include/af/af.h")

work="$out/pack-work"
rm -rf "$work" && mkdir -p "$work/native"
xbuild /nologo /v:minimal /p:Configuration=Release "/p:OutputPath=$work/managed/" \
  "/p:BaseIntermediateOutputPath=$work/obj/" "/p:DocumentationFile=$work/managed/Af.xml" \
  "$here/Af.csproj"
cp -L "$lib_dir/libaf.so" "$work/native/libaf.so"   # the file, not the symlink
# Without debug info (with it, a RelWithDebInfo libaf.so is over 20 times as
# large); the symbol table stays, so backtraces still name functions.
strip --strip-debug "$work/native/libaf.so"
cp "$here/nuget/Libaf.targets" "$work/"
nuget pack "$here/nuget/Libaf.nuspec" -BasePath "$work" -OutputDirectory "$out" -NoPackageAnalysis \
  -Properties "version=$version;managed=managed;native=native"
rm -rf "$work"
ls "$out/Libaf.$version.nupkg"
