#include "exec/summary.h"

#include <algorithm>
#include <cstdio>

#include "exec/profile.h"
#include "value/value.h"

namespace af {

namespace {

std::string ms(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", double(std::max<int64_t>(0, ns)) / 1e6);
  return buf;
}

}  // namespace

void RunSummary::Counts::add(const Counts& o) {
  calls += o.calls;
  failed += o.failed;
  prompt_tokens += o.prompt_tokens;
  completion_tokens += o.completion_tokens;
  retries += o.retries;
  journaled += o.journaled;
  queued_ns += o.queued_ns;
  in_flight_ns += o.in_flight_ns;
}

RunSummary::RunSummary() : t0_(now_ns()) {}

void RunSummary::add(const CallSpan& s) noexcept {
  // Queued until a slot took it (or until it ended, if none did); in
  // flight from then on.
  const int64_t start = s.started_ns ? s.started_ns : s.finished_ns;
  Counts c;
  if (s.attempts == 0) {  // a journal's answer: no request, nothing spent
    c.journaled = 1;
    try {
      std::lock_guard<std::mutex> lock(mu_);
      models_[s.model].add(c);
    } catch (...) {
    }
    return;
  }
  c.calls = 1;
  c.failed = s.code != 0;
  c.prompt_tokens = s.prompt_tokens;
  c.completion_tokens = s.completion_tokens;
  c.retries = s.attempts > 0 ? s.attempts - 1 : 0;
  c.queued_ns = s.queued_ns ? std::max<int64_t>(0, start - s.queued_ns) : 0;
  c.in_flight_ns = s.started_ns ? std::max<int64_t>(0, s.finished_ns - s.started_ns) : 0;
  try {
    std::lock_guard<std::mutex> lock(mu_);
    models_[s.model].add(c);
  } catch (...) {  // out of memory: the summary misses one request
  }
}

void RunSummary::stop() noexcept {
  int64_t none = 0;
  t1_.compare_exchange_strong(none, now_ns(), std::memory_order_acq_rel);
}

std::string RunSummary::to_json() const {
  auto counts = [](const Counts& c) {
    return "{\"calls\":" + std::to_string(c.calls) + ",\"failed\":" + std::to_string(c.failed) +
           ",\"prompt_tokens\":" + std::to_string(c.prompt_tokens) +
           ",\"completion_tokens\":" + std::to_string(c.completion_tokens) +
           ",\"retries\":" + std::to_string(c.retries) + ",\"queued_ms\":" + ms(c.queued_ns) +
           ",\"in_flight_ms\":" + ms(c.in_flight_ns) + ",\"journaled\":" + std::to_string(c.journaled) + "}";
  };
  const int64_t t1 = t1_.load(std::memory_order_acquire);
  std::string models;
  Counts total;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [model, c] : models_) {
      models += models.empty() ? "" : ",";
      append_json_string(models, model);
      models += ":" + counts(c);
      total.add(c);
    }
  }
  return "{\"wall_ms\":" + ms((t1 ? t1 : now_ns()) - t0_) + ",\"total\":" + counts(total) +
         ",\"models\":{" + models + "}}";
}

}  // namespace af
