// RunSummary: what one run's LM calls cost, per model (af.h "Run
// summaries"). The run feeds it every provider request its equations made
// (the CallSpans its profile sees, sub-runs' included) and stops its clock
// when it finishes; whoever asked for it reads the JSON, during or after
// the run, from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "rt/async.h"

namespace af {

class RunSummary {
 public:
  RunSummary();  // the wall clock starts here
  // One finished request. Thread-safe; never throws.
  void add(const CallSpan& s) noexcept;
  // The run finished: the wall time stops growing. The first call wins.
  void stop() noexcept;
  // {"wall_ms", "total": {...}, "models": {model: {...}}} with, in total and
  // per model: calls, failed, prompt_tokens, completion_tokens, retries,
  // queued_ms, in_flight_ms (docs/INSPECT.md "Run summaries").
  std::string to_json() const;

 private:
  struct Counts {
    uint64_t calls = 0, failed = 0, prompt_tokens = 0, completion_tokens = 0, retries = 0;
    uint64_t journaled = 0;  // answered from the run's journal (no provider request)
    int64_t queued_ns = 0, in_flight_ns = 0;
    void add(const Counts& o);
  };
  const int64_t t0_;
  std::atomic<int64_t> t1_{0};
  mutable std::mutex mu_;
  std::map<std::string, Counts> models_;
};

}  // namespace af
