#include "rt/host_pool.h"

#include <string>

#include "value/error.h"

namespace af {

namespace {
thread_local const HostPool* t_pool = nullptr;
}  // namespace

bool HostPool::on_pool_thread() const noexcept { return t_pool == this; }

HostPool::~HostPool() {
  std::deque<Job> dropped;
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    dropped.swap(queue_);
    threads.swap(threads_);
  }
  cv_.notify_all();
  const Error why(Code::Cancelled, "the context was freed before this blocking host function started");
  for (Job& j : dropped) j.op->fail(why);
  for (std::thread& t : threads) {
    if (t.get_id() == std::this_thread::get_id()) t.detach();  // freed from its own callback
    else t.join();
  }
}

void HostPool::set_max_threads(size_t n) {
  if (n < 1 || n > kMaxThreads)
    invalid("host pool: max threads must be in 1.." + std::to_string(kMaxThreads) + ", got " + std::to_string(n));
  std::lock_guard<std::mutex> lock(mu_);
  max_ = n;
}

size_t HostPool::max_threads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return max_;
}

void HostPool::submit(std::shared_ptr<AsyncOp> op, std::function<void()> work) {
  std::unique_lock<std::mutex> lock(mu_);
  if (stop_) {
    lock.unlock();
    op->fail(Error(Code::Cancelled, "the context is being freed; no host function can start"));
    return;
  }
  queue_.push_back(Job{std::move(op), std::move(work)});
  if (idle_ > 0) cv_.notify_one();
  else if (threads_.size() < max_) threads_.emplace_back([this] { loop(); });
}

void HostPool::loop() {
  t_pool = this;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    while (!stop_ && queue_.empty()) {
      ++idle_;
      cv_.wait(lock);
      --idle_;
    }
    if (stop_) return;
    Job job = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    if (!job.op->finished()) job.work();  // work never throws (it finishes op)
    job = Job{};                          // released outside the lock
    lock.lock();
  }
}

}  // namespace af
