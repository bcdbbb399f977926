#include "lm/provider.h"

namespace af::lm {

void Limiter::submit(std::shared_ptr<Call> call) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!provider_) {
      // fall through to fail outside the lock
    } else {
      waiting_.push(Waiting{call->priority(), seq_++, std::move(call)});
      ++stats_.submitted;
      call = nullptr;
    }
  }
  if (call) {
    call->fail(Error(Code::Provider, "the provider was freed before the request could start"));
    return;
  }
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

Limiter::Stats Limiter::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  Stats s = stats_;
  s.in_flight = in_flight_;
  s.queued = uint32_t(waiting_.size());
  return s;
}

void Limiter::release(int slot, uint64_t prompt_tokens, uint64_t completion_tokens) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    --in_flight_;
    ++stats_.finished;
    stats_.prompt_tokens += prompt_tokens;
    stats_.completion_tokens += completion_tokens;
    free_slots_.push(slot);
    started_[size_t(slot)].reset();
  }
  pump();
}

// One thread at a time starts waiting calls while slots are free; a thread
// that finds another pumping leaves the work to it (the pumper re-checks the
// state under the lock before it stops), so completions that happen inside
// start() never recurse.
void Limiter::pump() {
  std::unique_lock<std::mutex> lock(mu_);
  if (pumping_) return;
  pumping_ = true;
  while (provider_ && !waiting_.empty() && (max_ == 0 || in_flight_ < max_)) {
    std::shared_ptr<Call> call = waiting_.top().call;
    waiting_.pop();
    if (call->finished()) continue;  // cancelled while it waited
    int slot;
    if (!free_slots_.empty()) {
      // Lowest free slot first keeps profile tracks compact.
      slot = free_slots_.top();
      free_slots_.pop();
    } else {
      slot = next_slot_++;
      started_.resize(size_t(next_slot_));
    }
    started_[size_t(slot)] = call;
    ++in_flight_;
    ++starting_;
    ++stats_.started;
    if (in_flight_ > stats_.peak_in_flight) stats_.peak_in_flight = in_flight_;
    Provider* p = provider_;
    lock.unlock();
    bool raced;
    {
      std::lock_guard<std::mutex> cl(call->mu_);
      raced = call->finished();
      if (!raced) {
        call->slot = slot;
        call->limiter_ = shared_from_this();
        call->started_ns = now_ns();
        call->provider_name = p->name();
      }
    }
    if (raced) {
      lock.lock();
      --in_flight_;
      ++stats_.finished;
      free_slots_.push(slot);
      started_[size_t(slot)].reset();
    } else {
      p->start(std::move(call));
      lock.lock();
    }
    if (--starting_ == 0) idle_.notify_all();
  }
  pumping_ = false;
}

void Limiter::detach(const Error& why) {
  std::priority_queue<Waiting> left;
  std::vector<std::shared_ptr<Call>> running;
  {
    std::unique_lock<std::mutex> lock(mu_);
    provider_ = nullptr;
    left.swap(waiting_);
    idle_.wait(lock, [&] { return starting_ == 0; });
    for (const auto& w : started_)
      if (auto c = w.lock()) running.push_back(std::move(c));
  }
  while (!left.empty()) {
    left.top().call->fail(why);
    left.pop();
  }
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

}  // namespace af::lm
