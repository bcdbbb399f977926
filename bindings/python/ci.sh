#!/usr/bin/env bash
# CI for the Python package: pip-installs ./bindings/python into a venv kept
# outside the clone and runs pytest against the installed package.
#
# The venv is keyed by the Python version and the pinned build and test
# requirements (requirements-ci.txt), so reruns download nothing. The wheel
# is built without build isolation from that venv: the real `pip install`
# path (scikit-build-core -> CMake Release build of libaf with 2 jobs -> a
# wheel carrying libaf.so). The tests import the installed package, never
# the source tree, and LIBAF_LIBRARY is cleared so they load the wheel's
# libaf.so.
set -euo pipefail
cd "$(dirname "$0")"
py_ver=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
py_key=$(sha256sum requirements-ci.txt | cut -c1-12)
venv=${AF_PY_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/libaf-ci/venv-py$py_ver-$py_key}

[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check -r requirements-ci.txt
start=$(date +%s)
CMAKE_BUILD_PARALLEL_LEVEL=2 "$venv/bin/pip" install -q --disable-pip-version-check \
  --no-build-isolation --no-deps --force-reinstall .
echo "python: wheel built and installed in $(($(date +%s) - start)) s"
env -u LIBAF_LIBRARY "$venv/bin/python" -m pytest -p no:cacheprovider -q -rfE tests
