#!/usr/bin/env bash
# CI for the Python package, as it ships: builds the wheel once, repairs it
# into a self-contained manylinux wheel, installs it into fresh venvs that hold
# nothing else and runs a small traced program there, checks the sdist, then
# runs pytest against the same wheel installed in the test venv.
#
# The test venv is kept outside the clone, keyed by the Python version and the
# pinned build, packaging and test requirements (requirements-ci.txt), so
# reruns download nothing. The wheel is built without build isolation from
# that venv: scikit-build-core -> one CMake Release build of libaf with 2 jobs
# -> a wheel carrying libaf.so. The sdist is not compiled here (it is that same
# CMake build); its CMake project is configured, which fails on any source file
# it lacks. LIBAF_LIBRARY is cleared so the tests load the wheel's libaf.so.
set -euo pipefail
cd "$(dirname "$0")"
py_ver=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
py_key=$(sha256sum requirements-ci.txt | cut -c1-12)
venv=${AF_PY_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/libaf-ci/venv-py$py_ver-$py_key}
# The manylinux policy the wheel must meet: this build machine's libstdc++
# (GCC 12, GLIBCXX_3.4.30) allows nothing older than glibc 2.35.
plat=${AF_PY_PLAT:-manylinux_2_35_x86_64}

[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check -r requirements-ci.txt
pip=("$venv/bin/pip" --disable-pip-version-check)

work=$(mktemp -d "${TMPDIR:-/tmp}/libaf-python.XXXXXX")
trap 'rm -rf "$work"' EXIT
start=$(date +%s)
lap=$start
step() {
  local now
  now=$(date +%s)
  echo "python: $1 ($((now - lap)) s)"
  lap=$now
}

# --- The wheel: built once, then repaired. auditwheel copies every library
# libaf.so needs that the policy does not promise on the target system into
# libaf.libs/ (renamed, so they never clash with another copy in the process)
# and points libaf.so's RPATH there.
CMAKE_BUILD_PARALLEL_LEVEL=2 "${pip[@]}" wheel -q --no-build-isolation --no-deps -w "$work/built" .
step "wheel built"
PATH="$venv/bin:$PATH" "$venv/bin/auditwheel" repair --plat "$plat" -w "$work/dist" \
  "$work"/built/libaf-*.whl >"$work/repair.log" 2>&1 ||
  { cat "$work/repair.log"; echo "python: auditwheel cannot repair the wheel to $plat"; exit 1; }
wheel=$(echo "$work"/dist/libaf-*.whl)
shown=$("$venv/bin/auditwheel" show "$wheel" | tr -s ' \n' ' ')
grep -qF "platform tag: \"$plat\"" <<<"$shown" || { echo "$shown"; echo "python: the repaired wheel is not $plat"; exit 1; }
step "wheel repaired: $(basename "$wheel"), $(($(stat -c %s "$wheel") / 1024)) KiB"

# --- A consumer: a venv outside the repository with no pip and no build tools,
# under every CPython >= 3.9 found here (the wheel is py3-none, one for all of
# them). It gets the wheel alone (--no-index: nothing is downloaded), and runs
# packaging/smoke.py in a bare environment (no LD_LIBRARY_PATH, PATH only the
# venv).
consumers=()
for minor in 9 10 11 12 13 14; do
  for py in "python3.$minor" "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3."$minor".*/bin/python3."$minor"; do
    if "$py" -c '' 2>/dev/null; then consumers+=("$py"); break; fi
  done
done
((${#consumers[@]})) || { echo "python: no CPython >= 3.9 found for the consumer venv"; exit 1; }
mkdir "$work/consumer"
cp packaging/smoke.py "$work/consumer/"
for py in "${consumers[@]}"; do
  env_dir="$work/consumer/venv-$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
  "$py" -m venv --without-pip "$env_dir"
  t0=$(date +%s%N)
  "${pip[@]}" --python "$env_dir/bin/python" install -q --no-index --only-binary :all: "$wheel"
  t1=$(date +%s%N)
  echo "python: installed into a fresh venv ($(basename "$env_dir")) in $(((t1 - t0) / 1000000)) ms"
  (cd "$work/consumer" && env -i PATH="$env_dir/bin" HOME="$work/consumer" "$env_dir/bin/python" -I smoke.py)
done
# The installed libaf.so loads every library from the wheel, except those the
# manylinux policy lets a wheel take from the system.
so=$(echo "$env_dir"/lib/python3.*/site-packages/libaf/libaf.so)
site=$(dirname "$(dirname "$so")")
outside=$(env -u LD_LIBRARY_PATH ldd "$so" | awk -v site="$site/" '$2 == "=>" && index($3, site) != 1 { print $1 }' |
  grep -Ev '^(libc|libm|libmvec|libdl|librt|libpthread|libresolv|libutil|libnsl|libanl|libgcc_s|libstdc\+\+|libatomic|libz|libexpat)\.so\.' || true)
[ -z "$outside" ] || { echo "python: the installed libaf.so loads from outside the wheel:" $outside; exit 1; }
step "wheel installed and run in ${#consumers[@]} fresh venvs (${consumers[*]##*/}); its libaf.so needs only policy libraries from the system"

# --- The sdist: the package and the C++ sources under cpp/, whose CMake
# project configures (every target's sources are present).
"$venv/bin/python" -m build -q --sdist --no-isolation -o "$work/sdist" . >/dev/null
sdist=$(echo "$work"/sdist/libaf-*.tar.gz)
mkdir "$work/sdist/src"
tar xzf "$sdist" -C "$work/sdist/src"
root=$(echo "$work"/sdist/src/libaf-*)
for f in PKG-INFO pyproject.toml README.md src/libaf/__init__.py src/libaf/_lib.py cpp/CMakeLists.txt cpp/capi/include/af/af.h; do
  [ -f "$root/$f" ] || { echo "python: the sdist lacks $f"; exit 1; }
done
cmake -S "$root/cpp" -B "$work/sdist/build" -DAF_BUILD_TESTS=OFF -DAF_BUILD_BENCH=OFF >"$work/sdist/configure.log" 2>&1 ||
  { cat "$work/sdist/configure.log"; echo "python: the sdist's CMake project does not configure"; exit 1; }
step "sdist $(basename "$sdist"), $(($(stat -c %s "$sdist") / 1024)) KiB, $(tar tzf "$sdist" | wc -l) files, configures"

# --- The tests, against the repaired wheel.
"${pip[@]}" install -q --no-deps --force-reinstall "$wheel"
step "wheel installed into the test venv"
echo "python: packaging done in $(($(date +%s) - start)) s"
env -u LIBAF_LIBRARY "$venv/bin/python" -m pytest -p no:cacheprovider -q -rfE tests
