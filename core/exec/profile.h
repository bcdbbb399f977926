// Profile of one run, written as Chrome trace JSON (opens in Perfetto and
// chrome://tracing). Tracks: "engine" has one track per thread that ran
// equations; every provider has one track per slot (one in-flight request
// each). Every equation appears as an async slice from queued to finished
// with a nested "queued" slice (waiting for a thread or a provider slot).
// Titles are "prim #eqn" and the name path; an equation's args carry its
// tags and name path, a request's its model, tokens, tags and joined name
// path (docs/INSPECT.md "Profiles").
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "rt/async.h"
#include "exec/program.h"

namespace af {

int64_t now_ns() noexcept;  // steady clock (same clock as lm::now_ns)

class Profile {
 public:
  explicit Profile(size_t n_nodes);
  void queued(uint32_t node) noexcept;
  void started(uint32_t node, int thread) noexcept;
  void finished(uint32_t node, int32_t code) noexcept;
  void span(uint32_t node, const CallSpan& s);
  // A host function's event, at node's equation (the host call, or the
  // control flow it ran inside).
  void event(uint32_t node, const HostEvent& e);
  // The Chrome trace JSON of the run so far.
  std::string to_json(const Program& prog) const;
  // Writes to_json to path through a temp file + rename. IO error if it fails.
  void write(const std::string& path, const Program& prog) const;

 private:
  // Written by the threads that run the equation, read when the run ends
  // (possibly while a cancelled equation still finishes): relaxed atomics.
  struct Times {
    std::atomic<int64_t> queued{0}, started{0}, finished{0};
    std::atomic<int> thread{-1};
    std::atomic<int32_t> code{0};
  };
  int64_t t0_;
  size_t n_;
  std::unique_ptr<Times[]> times_;
  mutable std::mutex mu_;
  std::vector<std::pair<uint32_t, CallSpan>> spans_;
  std::vector<std::pair<uint32_t, HostEvent>> events_;
};

// The engine thread index of the calling thread for profiles (0 = a caller
// running its own program, 1.. = scheduler workers).
int engine_thread_index() noexcept;
void set_engine_thread_index(int i) noexcept;

}  // namespace af
