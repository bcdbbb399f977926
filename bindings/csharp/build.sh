#!/usr/bin/env bash
# Builds the C# binding (Af.dll) and its tests (Af.Tests.exe) with mono's mcs,
# then runs the tests. The last line of output is "N passed, N failed".
#
#   AF_LIB_DIR  directory holding libaf.so   (default: <repo>/build/lib)
#   AF_CS_OUT   output directory             (default: bindings/csharp/bin)
#   Arguments are passed to the runner (substring filters on test names).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
out="${AF_CS_OUT:-$here/bin}"
lib_dir="${AF_LIB_DIR:-$repo/build/lib}"

mkdir -p "$out"
out="$(cd "$out" && pwd)"
if [ ! -d "$lib_dir" ]; then
  echo "build.sh: AF_LIB_DIR=$lib_dir does not exist; build libaf first (cmake --build <dir> --target af_shared)" >&2
  exit 2
fi
lib_dir="$(cd "$lib_dir" && pwd)"
if [ ! -e "$lib_dir/libaf.so" ]; then
  echo "build.sh: $lib_dir/libaf.so not found; build libaf first (cmake --build <dir> --target af_shared)" >&2
  exit 2
fi

MCS="${MCS:-mcs}"
flags=(-langversion:7.2 -debug -optimize+ -warnaserror+ -nologo)

"$MCS" "${flags[@]}" -target:library -out:"$out/Af.dll" -doc:"$out/Af.xml" -nowarn:1591 "$here"/src/*.cs

# Mono maps DllImport("af") to the unversioned libaf.so (libaf.dylib on macOS).
cat > "$out/Af.dll.config" <<'XML'
<configuration>
  <dllmap dll="af" target="libaf.so" os="!windows,osx" />
  <dllmap dll="af" target="libaf.dylib" os="osx" />
</configuration>
XML

"$MCS" "${flags[@]}" -target:exe -out:"$out/Af.Tests.exe" -r:"$out/Af.dll" -r:System.Core.dll "$here"/tests/*.cs

cd "$out"
export AF_HEADER="${AF_HEADER:-$repo/capi/include/af/af.h}"
export AF_REPO="$repo"
LD_LIBRARY_PATH="$lib_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec mono --debug Af.Tests.exe "$@"
