#!/usr/bin/env bash
# tools/local_model.sh without the model: a package that cannot be fetched
# fails the install with a clear message (and leaves no venv marked
# installed), misuse says how to use it, a server that dies on its first
# request (or fails it) is reported with the reason, and `busy` (how the integration
# suite tells a slow model from a hang of libaf's) sees whether a process
# computes. Run by tools/test.sh; needs python3 with venv, no network.
set -uo pipefail
SCRIPT=$(cd "$(dirname "$0")/../.." && pwd)/tools/local_model.sh
T=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  rm -rf "$T"
}
trap cleanup EXIT
fails=0
# check NAME STATUS FRAGMENT -- CMD...: CMD exits with STATUS and its stderr holds FRAGMENT.
check() {
  local name=$1 want=$2 frag=$3
  shift 4
  "$@" >"$T/out.txt" 2>"$T/err.txt"
  local got=$?
  if [ "$got" != "$want" ] || { [ -n "$frag" ] && ! grep -qF -- "$frag" "$T/err.txt"; }; then
    echo "FAIL $name: exit $got (want $want), stderr:"
    sed 's/^/  | /' "$T/err.txt" | tail -10
    fails=$((fails + 1))
  else
    echo "ok   $name"
  fi
}

# An index nothing listens on: pip cannot fetch the package.
check install-unfetchable 1 'cannot install llama-cpp-python[server]==' -- \
  env AF_LOCAL_MODEL_VENV="$T/venv" PIP_INDEX_URL=http://127.0.0.1:9/simple PIP_RETRIES=0 \
  PIP_TIMEOUT=2 bash "$SCRIPT" install
if [ -e "$T/venv/.installed" ]; then echo "FAIL install-unfetchable: the venv is marked installed"; fails=$((fails + 1)); fi
check run-without-command 1 'run: give the command to run' -- \
  env AF_LOCAL_MODEL_VENV="$T/venv" bash "$SCRIPT" run
check usage 2 'tools/local_model.sh install' -- bash "$SCRIPT"
check busy-outside-run 1 'AF_LOCAL_MODEL_PID is not set' -- env -u AF_LOCAL_MODEL_PID bash "$SCRIPT" busy

# busy: a process computing is busy; one sleeping is not; one gone is an error.
(while :; do :; done) &
pids+=($!)
check busy-computing 0 '' -- env AF_LOCAL_MODEL_PID=${pids[0]} bash "$SCRIPT" busy
sleep 600 &
pids+=($!)
check busy-idle 1 '' -- env AF_LOCAL_MODEL_PID=${pids[1]} bash "$SCRIPT" busy
kill "${pids[1]}"; wait "${pids[1]}" 2>/dev/null
check busy-gone 1 'is gone' -- env AF_LOCAL_MODEL_PID=${pids[1]} bash "$SCRIPT" busy

# Starting the server: it counts as up only once it has answered a completion. The real
# packages are replaced by stand-ins (standin/: a server taking the real one's command line,
# a .gguf file) in a venv marked installed.
mkdir -p "$T/fake/bin"
ln -s "$(command -v python3)" "$T/fake/bin/python"
touch "$T/fake/.installed"
standin() {  # standin MODE CMD...: the script with the stand-in server in MODE
  local mode=$1; shift
  env AF_LOCAL_MODEL_VENV="$T/fake" PYTHONPATH="$(dirname "$0")/standin" AF_STANDIN_MODE="$mode" \
    AF_LOCAL_MODEL_LOG="$T/server-$mode.log" AF_LOCAL_MODEL_START_TIMEOUT=20 bash "$SCRIPT" "$@"
}
check start-ok 0 'SmolLM2-135M-Instruct at http://127.0.0.1:' -- standin ok run true
# A build the CPU cannot run dies of SIGILL on its first request: the reason, not a
# connection error, and the log's last lines.
check start-sigill 1 'was killed by signal 4 (SIGILL) on its first completion: this llama.cpp build uses an instruction this CPU lacks' -- \
  standin sigill run true
grep -qF '  | stand-in: computing the first completion' "$T/err.txt" ||
  { echo "FAIL start-sigill: the server log's last lines are not shown"; fails=$((fails + 1)); }
check start-error 1 'the model server did not complete a first request' -- standin error run true

# The installed build is checked for AVX-512 and AMX code: a library with one
# zmm instruction is refused, one without passes.
lib=$T/built/lib/python3/site-packages/llama_cpp/lib
mkdir -p "$lib"
printf 'void f(void) { __asm__ volatile("vpxord %%zmm0, %%zmm0, %%zmm0"); }\n' >"$T/avx512.c"
printf 'void f(void) { __asm__ volatile("vpxor %%ymm0, %%ymm0, %%ymm0"); }\n' >"$T/avx2.c"
cc -shared -fPIC -o "$lib/libggml-cpu.so" "$T/avx512.c"
check check-build-avx512 1 'holds 1 AVX-512/AMX instructions: the build was not portable' -- \
  env AF_LOCAL_MODEL_VENV="$T/built" bash "$SCRIPT" check-build
cc -shared -fPIC -o "$lib/libggml-cpu.so" "$T/avx2.c"
check check-build-avx2 0 'holds no AVX-512 or AMX instruction' -- env AF_LOCAL_MODEL_VENV="$T/built" bash "$SCRIPT" check-build
check check-build-empty 1 'no llama.cpp library' -- env AF_LOCAL_MODEL_VENV="$T/none" bash "$SCRIPT" check-build

echo "$fails failed"
[ "$fails" = 0 ]
