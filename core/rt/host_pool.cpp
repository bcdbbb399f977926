#include "rt/host_pool.h"

#include <chrono>
#include <string>

#include "value/error.h"

namespace af {

namespace {
thread_local const void* t_pool = nullptr;  // the State of the pool this thread serves
}  // namespace

bool HostPool::on_pool_thread() const noexcept { return t_pool == s_.get(); }

HostPool::~HostPool() {
  std::deque<Job> dropped;
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(s_->mu);
    s_->stop = true;
    dropped.swap(s_->queue);
    threads.swap(threads_);
  }
  s_->work.notify_all();
  const Error why(Code::Cancelled, "the context was freed before this blocking host function started");
  for (Job& j : dropped) j.op->fail(why);
  // The calls still running: waited for, at most wait_ms when set. A pool
  // freed from one of its own calls does not wait for that one.
  const size_t self = on_pool_thread() ? 1 : 0;
  bool all_out = true;
  {
    std::unique_lock<std::mutex> lock(s_->mu);
    auto out = [&] { return s_->live <= self; };
    if (s_->wait_ms > 0) all_out = s_->exited.wait_for(lock, std::chrono::milliseconds(s_->wait_ms), out);
    else s_->exited.wait(lock, out);
  }
  for (std::thread& t : threads) {
    if (all_out && t.get_id() != std::this_thread::get_id()) t.join();
    else t.detach();  // its call goes on; the thread ends when it returns
  }
}

void HostPool::set_max_threads(size_t n) {
  if (n < 1 || n > kMaxThreads)
    invalid("host pool: max threads must be in 1.." + std::to_string(kMaxThreads) + ", got " + std::to_string(n));
  std::lock_guard<std::mutex> lock(s_->mu);
  s_->max = n;
}

size_t HostPool::max_threads() const {
  std::lock_guard<std::mutex> lock(s_->mu);
  return s_->max;
}

void HostPool::set_wait_ms(int64_t ms) {
  std::lock_guard<std::mutex> lock(s_->mu);
  s_->wait_ms = ms;
}

void HostPool::submit(std::shared_ptr<AsyncOp> op, std::function<void()> work) {
  std::unique_lock<std::mutex> lock(s_->mu);
  if (s_->stop) {
    lock.unlock();
    op->fail(Error(Code::Cancelled, "the context is being freed; no host function can start"));
    return;
  }
  s_->queue.push_back(Job{std::move(op), std::move(work)});
  if (s_->idle > 0) {
    s_->work.notify_one();
  } else if (threads_.size() < s_->max) {
    threads_.emplace_back([s = s_] { loop(s); });
    ++s_->live;
  }
}

void HostPool::loop(const std::shared_ptr<State>& s) {
  t_pool = s.get();
  std::unique_lock<std::mutex> lock(s->mu);
  for (;;) {
    while (!s->stop && s->queue.empty()) {
      ++s->idle;
      s->work.wait(lock);
      --s->idle;
    }
    if (s->stop) break;
    Job job = std::move(s->queue.front());
    s->queue.pop_front();
    lock.unlock();
    if (!job.op->finished()) job.work();  // work never throws (it finishes op)
    job = Job{};                          // released outside the lock
    lock.lock();
  }
  --s->live;
  s->exited.notify_all();
}

}  // namespace af
