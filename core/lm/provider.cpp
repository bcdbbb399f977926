#include "lm/provider.h"

#include <algorithm>
#include <bit>

#include "lm/options.h"
#include "lm/timer.h"

namespace af::lm {

namespace {
constexpr double kNsPerMinute = 60e9;
// A bucket holds one second's worth of its rate (at least one unit), so
// starts are spread over the minute instead of bursting at its beginning.
double capacity(uint64_t per_minute) { return std::max(1.0, double(per_minute) / 60.0); }

// How many start_all() calls this thread is inside (see submit()).
thread_local int t_starting = 0;

// The wake-ups of every limiter held back by a rate or a pause: one thread,
// made on first use and never destroyed (a limiter may go away from inside
// its own wake-up, which must not free the queue running it).
TimerQueue& wake_timer() {
  static TimerQueue* timer = new TimerQueue();
  return *timer;
}
}  // namespace

void Limiter::submit(std::shared_ptr<Call> call) { submit(std::span<std::shared_ptr<Call>>(&call, 1)); }

void Limiter::submit(std::span<std::shared_ptr<Call>> calls) {
  SmallVec<Starting, 1> own;
  SmallVec<std::shared_ptr<Call>, 1> going;
  own.reserve(calls.size());  // before the lock: the fast path below allocates nothing under it
  going.reserve(calls.size());
  std::unique_lock<std::mutex> lock(mu_);
  if (!provider_) {  // failed outside the lock
    lock.unlock();
    for (auto& call : calls) call->fail(Error(Code::Provider, "the provider was freed before the request could start"));
    return;
  }
  stats_.submitted += calls.size();
  // Nothing limits the provider (no rate, no pause: the first start after
  // a pause's end clears it) and nothing waits: the calls start now, on
  // this thread. (Through pump(), one thread at a time started every
  // thread's calls: 100 000 requests made on three threads started on one.)
  // Not from inside a start (a reply made at once, whose done hook asks
  // again): that one queues, and the pump takes it in its loop, so a chain
  // of instant replies does not recurse.
  if (max_ == 0 && !rpm_ && !tpm_ && !paused_until_ns_ && waiting_.empty() && !t_starting) {
    for (auto& call : calls) own.push_back(take_slot(std::move(call), 0));
    return start_taken(own, going, lock);
  }
  for (auto& call : calls) {
    const double priority = call->priority();
    waiting_.push(Waiting{priority, seq_++, std::move(call)});
  }
  lock.unlock();
  pump();
}

void Limiter::set_max_in_flight(uint32_t n) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    max_ = n;
  }
  pump();
}

uint32_t Limiter::max_in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return max_;
}

void Limiter::set_rates(uint64_t requests_per_minute, uint64_t tokens_per_minute) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    // A newly limited rate starts with a full bucket; a changed one keeps
    // its level within the new capacity.
    requests_level_ = rpm_ ? std::min(requests_level_, capacity(requests_per_minute))
                           : capacity(requests_per_minute);
    tokens_level_ =
        tpm_ ? std::min(tokens_level_, capacity(tokens_per_minute)) : capacity(tokens_per_minute);
    rpm_ = requests_per_minute;
    tpm_ = tokens_per_minute;
    refilled_ns_ = now_ns();
  }
  pump();
}

uint64_t Limiter::requests_per_minute() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rpm_;
}

uint64_t Limiter::tokens_per_minute() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tpm_;
}

void Limiter::pause(int64_t ms) {
  std::lock_guard<std::mutex> lock(mu_);
  paused_until_ns_ = std::max(paused_until_ns_, now_ns() + std::max<int64_t>(ms, 0) * 1000000);
}

Limiter::Stats Limiter::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  Stats s = stats_;
  s.in_flight = in_flight_;
  s.queued = uint32_t(waiting_.size());
  return s;
}

void Limiter::FreeSlots::put(int slot) {
  const auto word = size_t(slot) / 64;
  if (word >= words_.size()) {
    words_.resize(word + 1, 0);
    summary_.resize(words_.size() / 64 + 1, 0);
  }
  words_[word] |= uint64_t(1) << (size_t(slot) % 64);
  summary_[word / 64] |= uint64_t(1) << (word % 64);
  first_ = std::min(first_, word / 64);
  ++free_;
}

int Limiter::FreeSlots::take() {
  while (summary_[first_] == 0) ++first_;
  const size_t word = first_ * 64 + size_t(std::countr_zero(summary_[first_]));
  const auto bit = size_t(std::countr_zero(words_[word]));
  words_[word] &= words_[word] - 1;  // clears the lowest set bit
  if (words_[word] == 0) summary_[first_] &= summary_[first_] - 1;
  --free_;
  return int(word * 64 + bit);
}

void Limiter::release(Call& call, bool completed) {
  bool waiting;  // only then is there anything for the freed slot to start
  {
    std::lock_guard<std::mutex> lock(mu_);
    --in_flight_;
    ++stats_.finished;
    // Usage only of a completed call: the provider set it on the thread that
    // completed it. A call failed or cancelled elsewhere may still be having
    // its usage written by the provider, so it is not read.
    if (completed) {
      stats_.prompt_tokens += call.prompt_tokens;
      stats_.completion_tokens += call.completion_tokens;
      // The reply's usage replaces the estimate the start was charged. The
      // bucket's debt is at most its capacity (a second's worth): whatever a
      // server claims its replies used, the provider waits at most about
      // two seconds for it.
      uint64_t used = call.prompt_tokens + call.completion_tokens;
      if (tpm_ && call.rate_tokens_ && used) {
        tokens_level_ = std::clamp(tokens_level_ + double(call.rate_tokens_) - double(used), -capacity(tpm_),
                                   capacity(tpm_));
      }
    }
    free_slots_.put(call.slot);
    started_[size_t(call.slot)].reset();
    waiting = !waiting_.empty();
  }
  if (waiting) pump();
}

int64_t Limiter::rate_wait_until(const Call& call) {
  if (!rpm_ && !tpm_ && !paused_until_ns_) return 0;  // no limit: no clock read per call
  int64_t now = now_ns();
  if (refilled_ns_ && now > refilled_ns_) {
    double minutes = double(now - refilled_ns_) / kNsPerMinute;
    if (rpm_) requests_level_ = std::min(capacity(rpm_), requests_level_ + minutes * double(rpm_));
    if (tpm_) tokens_level_ = std::min(capacity(tpm_), tokens_level_ + minutes * double(tpm_));
  }
  refilled_ns_ = now;
  if (paused_until_ns_ <= now) paused_until_ns_ = 0;  // over: starts read no clock for it again
  int64_t at = paused_until_ns_;
  // The time until a bucket holds `need` (+1 ns: never earlier than that),
  // at most a day away (a wait is converted to int64 only within range).
  auto when = [&](double level, double need, uint64_t per_minute) {
    if (level >= need) return int64_t(0);
    const double wait_ns = (need - level) / double(per_minute) * kNsPerMinute;
    return now + int64_t(std::min(wait_ns, 24 * 60 * kNsPerMinute)) + 1;
  };
  if (rpm_) at = std::max(at, when(requests_level_, 1.0, rpm_));
  // A request larger than the bucket starts when the bucket is full.
  if (tpm_)
    at = std::max(
        at, when(tokens_level_, std::min(double(call.request().estimated_tokens()), capacity(tpm_)),
                 tpm_));
  return at;
}

void Limiter::wake_at(int64_t at) {
  if (wake_ns_ && wake_ns_ <= at) return;  // an earlier pump is due anyway
  wake_ns_ = at;
  std::weak_ptr<Limiter> weak = weak_from_this();
  wake_timer().schedule(at, [weak, at] {
    if (auto l = weak.lock()) {
      {
        std::lock_guard<std::mutex> lock(l->mu_);
        if (l->wake_ns_ == at) l->wake_ns_ = 0;
      }
      l->pump();
    }
  });
}

Limiter::Starting Limiter::take_slot(std::shared_ptr<Call> call, uint64_t tokens) {
  int slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.take();
  } else {
    slot = next_slot_++;
    started_.resize(size_t(next_slot_));
  }
  started_[size_t(slot)] = call;
  ++in_flight_;
  ++starting_;
  ++stats_.started;
  if (in_flight_ > stats_.peak_in_flight) stats_.peak_in_flight = in_flight_;
  return Starting{std::move(call), slot, tokens};
}

template <class Taken, class Going>
void Limiter::start_taken(Taken& taken, Going& going, std::unique_lock<std::mutex>& lock) {
  // detach() waits for starting_ to reach 0: the provider outlives the round.
  Provider* p = provider_;
  lock.unlock();
  const int64_t started = now_ns();  // the round's calls start together
  // A call holds the limiter (to release its slot however late it
  // finishes); a large round's calls through a count of their own.
  std::shared_ptr<Limiter> self = shared_from_this();
  if (taken.size() >= kOwnCountFrom) self = own_count(std::move(self));
  size_t raced = 0;
  for (Starting& s : taken) {
    Call& call = *s.call;
    {
      std::lock_guard<std::mutex> cl(call.mu_);
      if (call.finished()) {
        ++raced;
        continue;  // keeps s.call: its slot is freed below
      }
      call.slot = s.slot;
      call.limiter_ = self;
      call.rate_tokens_ = s.tokens;
      call.started_ns = started;
      call.provider_name = p->name();
    }
    going.push_back(std::move(s.call));
  }
  ++t_starting;
  p->start_all(std::span<std::shared_ptr<Call>>(going.data(), going.size()));
  --t_starting;
  going.clear();
  lock.lock();
  if (raced)
    for (Starting& s : taken)
      if (s.call) {
        --in_flight_;
        ++stats_.finished;
        free_slots_.put(s.slot);
        started_[size_t(s.slot)].reset();
      }
  starting_ -= uint32_t(taken.size());
  if (starting_ == 0) idle_.notify_all();
}

// One thread at a time starts waiting calls while slots are free; a thread
// that finds another pumping leaves the work to it (the pumper re-checks the
// state under the lock before it stops), so completions that happen inside
// start() never recurse. A call the rates or a pause hold back stops the
// pump until a timer wakes it. Each round takes every call that may start
// under the lock and starts them outside it: a batch's requests take the
// lock once per round, not once each.
void Limiter::pump() {
  std::unique_lock<std::mutex> lock(mu_);
  if (pumping_) return;
  pumping_ = true;
  for (;;) {
    while (provider_ && !waiting_.empty() && (max_ == 0 || in_flight_ < max_)) {
      Call& call = *waiting_.top().call;
      if (call.finished()) {  // cancelled while it waited
        waiting_.pop();
        continue;
      }
      if (int64_t at = rate_wait_until(call)) {
        if (!call.rate_held_) ++stats_.rate_waits;
        call.rate_held_ = true;
        wake_at(at);
        break;
      }
      uint64_t tokens = 0;
      if (rpm_) requests_level_ -= 1.0;
      if (tpm_) {
        tokens = call.request().estimated_tokens();
        tokens_level_ -= double(tokens);
      }
      round_.push_back(take_slot(waiting_.pop().call, tokens));
    }
    if (round_.empty()) break;
    start_taken(round_, going_, lock);
    round_.clear();
  }
  pumping_ = false;
}

void Limiter::detach(const Error& why) {
  OrderedQueue<Waiting, Waiting::Before> left;
  std::vector<std::shared_ptr<Call>> running;
  {
    std::unique_lock<std::mutex> lock(mu_);
    provider_ = nullptr;
    std::swap(left, waiting_);
    idle_.wait(lock, [&] { return starting_ == 0; });
    for (const auto& w : started_)
      if (auto c = w.lock()) running.push_back(std::move(c));
  }
  while (!left.empty()) left.pop().call->fail(why);
  // Cancelled (not dropped): the provider's cancel hooks stop its work while
  // the provider still exists, and nobody waits on a request it will never
  // finish.
  for (const auto& c : running) c->cancel(why);
}

Provider::Provider(std::string name, uint32_t max_in_flight)
    : name_(std::move(name)), limiter_(std::make_shared<Limiter>(this, max_in_flight)) {}

Provider::~Provider() { shutdown(); }

void Provider::shutdown() {
  if (shut_) return;
  shut_ = true;
  limiter_->detach(Error(Code::Cancelled, "provider " + name_ + " was freed"));
}

void Provider::configure(const Value& options) {
  CommonOptions current{limiter_->max_in_flight(), limiter_->requests_per_minute(),
                        limiter_->tokens_per_minute(), schema_retries()};
  read_provider_set_options(options, current, "provider " + name_).apply(*this);
}

CommonOptions read_provider_set_options(const Value& options, const CommonOptions& current, std::string what) {
  Options o(options, std::move(what));
  CommonOptions c = read_common_options(o, current);
  o.finish();
  return c;
}

void CommonOptions::apply(Provider& p) const {
  p.set_schema_retries(schema_retries);
  p.limiter().set_rates(requests_per_minute, tokens_per_minute);
  p.limiter().set_max_in_flight(max_in_flight);
}

CommonOptions read_common_options(Options& o, const CommonOptions& d) {
  CommonOptions c;
  c.max_in_flight = uint32_t(o.integer("max_in_flight", d.max_in_flight, 0, 1 << 30, "At most this many requests in flight, shared by every context the provider is routed in (0 = unlimited)."));
  c.requests_per_minute =
      uint64_t(o.integer("requests_per_minute", int64_t(d.requests_per_minute), 0, 1000000000, "A rate limit on requests started (0 = none)."));
  c.tokens_per_minute =
      uint64_t(o.integer("tokens_per_minute", int64_t(d.tokens_per_minute), 0, 1000000000000LL, "A rate limit on tokens used, as the server counts them (0 = none)."));
  c.schema_retries = uint32_t(o.integer("schema_retries", d.schema_retries, 0, 10, "Structured calls: asks again, this many times, when a reply does not validate."));
  return c;
}

}  // namespace af::lm
