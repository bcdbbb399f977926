#include "rt/scopes.h"

#include <algorithm>
#include <initializer_list>
#include <thread>
#include <unordered_map>
#include <variant>

#include "rt/context.h"
#include "ir/effects.h"
#include "ir/prim.h"
#include "ir/registry.h"
#include "value/error.h"

namespace af {

// ---- program order

RankPtr run_rank() {
  static std::atomic<uint64_t> next_run{0};
  return std::make_shared<const Rank>(1, next_run.fetch_add(1, std::memory_order_relaxed));
}

namespace {

// env's level path (a new run's when env has none) followed by `steps`.
Rank extended(const RunEnv& env, std::initializer_list<uint64_t> steps) {
  const RankPtr level = env.rank ? env.rank : run_rank();
  Rank r;
  r.reserve(level->size() + steps.size());
  r.insert(r.end(), level->begin(), level->end());
  r.insert(r.end(), steps);
  return r;
}

}  // namespace

RankPtr sub_rank(const RunEnv& env, uint64_t index) {
  return std::make_shared<const Rank>(extended(env, {env.eqn, index}));
}

Rank hit_rank(const RunEnv& env) { return extended(env, {env.eqn}); }

namespace {

// Scans sub-IRs once each (a sub-IR may be shared by several equations).
struct InjectScan {
  const std::vector<std::pair<std::string, std::string>>& keys;
  std::unordered_map<const IR*, bool> seen;

  bool eqn(const Eqn& e) {
    static const Prim& checkpoint = prim("checkpoint");
    if (e.prim == &checkpoint) {
      const std::string& c = e.params.value("collection").as_str();
      const std::string& k = e.params.value("key").as_str();
      return std::any_of(keys.begin(), keys.end(),
                         [&](const auto& p) { return p.first == c && p.second == k; });
    }
    return e.params.any_ir([&](const IR& sub) { return ir(sub); });
  }
  bool ir(const IR& sub) {
    auto [it, fresh] = seen.try_emplace(&sub, false);
    if (!fresh) return it->second;
    const bool hit =
        std::any_of(sub.eqns.begin(), sub.eqns.end(), [&](const Eqn& e) { return eqn(e); });
    seen[&sub] = hit;
    return hit;
  }
};

}  // namespace

bool InjectedKeys::hit_by(const Eqn& e) const {
  return !keys_.empty() && InjectScan{keys_, {}}.eqn(e);
}
bool InjectedKeys::hit_by(const IR& ir) const {
  return !keys_.empty() && InjectScan{keys_, {}}.ir(ir);
}

// ---- collect

void RunScopes::push_collect(std::string collection) {
  std::lock_guard<std::mutex> lock(mu_);
  collects_.push_back(Collect{std::move(collection), {}});
  checkpoint_scopes_.fetch_add(1, std::memory_order_acq_rel);
}

Value RunScopes::pop_collect() {
  Collect c;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (collects_.empty()) invalid("collect pop without a matching push");
    c = std::move(collects_.back());
    collects_.pop_back();
    checkpoint_scopes_.fetch_sub(1, std::memory_order_acq_rel);
  }
  // Hits mostly come in order already (sequential parts, map items).
  auto by_rank = [](const Hit& a, const Hit& b) { return a.rank < b.rank; };
  if (!std::is_sorted(c.hits.begin(), c.hits.end(), by_rank))
    std::stable_sort(c.hits.begin(), c.hits.end(), by_rank);
  std::vector<std::string> order;  // keys by first hit
  std::unordered_map<std::string, std::vector<Value>> values;
  for (Hit& h : c.hits) {
    auto [it, fresh] = values.try_emplace(h.key);
    if (fresh) order.push_back(h.key);
    it->second.push_back(std::move(h.value));
  }
  std::vector<Entry> entries;
  entries.reserve(order.size());
  for (const std::string& key : order)
    entries.emplace_back(key, Value::list(std::move(values[key])));
  return Value::dict(std::move(entries));
}

// ---- inject

void RunScopes::push_inject(std::string collection, const Value& values) {
  if (values.kind() != Kind::Dict)
    invalid(std::string("inject: the values must be a dict {key: [values...]}, found ") +
            kind_name(values.kind()));
  Inject inj{std::move(collection), {}, {}};
  for (const Entry& e : values.entries()) {
    if (e.second.kind() != Kind::List)
      invalid("inject: the values under key \"" + e.first + "\" must be a list (a queue, one value per hit), found " +
              kind_name(e.second.kind()));
    inj.queues[e.first] = e.second.items();
  }
  std::lock_guard<std::mutex> lock(mu_);
  injects_.push_back(std::move(inj));
  checkpoint_scopes_.fetch_add(1, std::memory_order_acq_rel);
}

void RunScopes::pop_inject() {
  std::lock_guard<std::mutex> lock(mu_);
  if (injects_.empty()) invalid("inject pop without a matching push");
  injects_.pop_back();
  checkpoint_scopes_.fetch_sub(1, std::memory_order_acq_rel);
}

std::optional<Value> RunScopes::take_locked(const std::string& collection, const std::string& key) {
  for (auto it = injects_.rbegin(); it != injects_.rend(); ++it) {
    if (it->collection != collection) continue;
    auto q = it->queues.find(key);
    if (q == it->queues.end()) continue;
    size_t& next = it->next[key];
    if (next < q->second.size()) return q->second[next++];
  }
  return std::nullopt;
}

std::optional<Value> RunScopes::take_injected(const std::string& collection, const std::string& key) {
  if (!any_checkpoint_scope()) return std::nullopt;
  std::lock_guard<std::mutex> lock(mu_);
  return take_locked(collection, key);
}

InjectedKeys RunScopes::injected() const {
  InjectedKeys keys;
  if (!any_checkpoint_scope()) return keys;
  std::lock_guard<std::mutex> lock(mu_);
  for (const Inject& inj : injects_)
    for (const auto& [key, queue] : inj.queues) keys.keys_.emplace_back(inj.collection, key);
  return keys;
}

Value RunScopes::checkpoint(const std::string& collection, const std::string& key,
                            const Value& value, Rank rank,
                            const std::function<void(const Value&)>& check) {
  if (!any_checkpoint_scope()) return value;
  std::lock_guard<std::mutex> lock(mu_);
  Value result = value;
  if (std::optional<Value> injected = take_locked(collection, key)) {
    if (check) check(*injected);
    result = std::move(*injected);
  }
  for (Collect& c : collects_)
    if (c.collection == collection) c.hits.push_back(Hit{rank, key, result});
  return result;
}

// ---- memoize

namespace {

uint64_t memo_key(const Eqn& e, std::span<const Value> in) {
  uint64_t h = std::hash<std::string>{}(e.prim->name) ^ (uint64_t(e.prim->version) << 32);
  h = h * 1099511628211ULL ^ e.params.hash();
  for (const Value& v : in) h = h * 1099511628211ULL ^ v.hash();
  return h;
}

}  // namespace

bool memoizable(const Eqn& e) {
  if (eqn_flags(e) & (kEffectful | kNoMerge)) return false;
  for (const auto& [name, p] : e.params.items())
    if (!std::holds_alternative<Value>(p)) return false;  // sub-IRs memoize their own equations
  return true;
}

void RunScopes::push_memo() {
  std::lock_guard<std::mutex> lock(mu_);
  memos_.emplace_back();
  memo_scopes_.fetch_add(1, std::memory_order_acq_rel);
}

void RunScopes::pop_memo() {
  std::lock_guard<std::mutex> lock(mu_);
  if (memos_.empty()) invalid("memoize pop without a matching push");
  memos_.pop_back();
  memo_scopes_.fetch_sub(1, std::memory_order_acq_rel);
}

void RunScopes::push_cancel(std::shared_ptr<CancelFlag> token) {
  std::lock_guard<std::mutex> lock(mu_);
  cancels_.push_back(std::move(token));
  cancel_scopes_.fetch_add(1, std::memory_order_acq_rel);
}

void RunScopes::pop_cancel() {
  std::lock_guard<std::mutex> lock(mu_);
  if (cancels_.empty()) invalid("cancel scope pop without a matching push");
  cancels_.pop_back();
  cancel_scopes_.fetch_sub(1, std::memory_order_acq_rel);
}

std::vector<std::shared_ptr<CancelFlag>> RunScopes::cancels() const {
  if (cancel_scopes_.load(std::memory_order_acquire) == 0) return {};
  std::lock_guard<std::mutex> lock(mu_);
  return cancels_;
}

bool RunScopes::memo_find(const Eqn& e, std::span<const Value> in, std::span<Value> out) {
  uint64_t h = memo_key(e, in);
  std::lock_guard<std::mutex> lock(mu_);
  if (memos_.empty()) return false;
  Memo& m = memos_.back();
  auto [lo, hi] = m.entries.equal_range(h);
  for (auto it = lo; it != hi; ++it) {
    const MemoEntry& entry = it->second;
    if (entry.prim != e.prim || entry.in.size() != in.size() || entry.out.size() != out.size() ||
        !(entry.params == e.params))
      continue;
    bool same = true;
    for (size_t i = 0; same && i < in.size(); ++i) same = entry.in[i] == in[i];
    if (!same) continue;
    for (size_t i = 0; i < out.size(); ++i) out[i] = entry.out[i];
    ++m.hits;
    return true;
  }
  return false;
}

void RunScopes::memo_store(const Eqn& e, std::span<const Value> in, std::span<const Value> out) {
  uint64_t h = memo_key(e, in);
  std::lock_guard<std::mutex> lock(mu_);
  if (memos_.empty()) return;
  memos_.back().entries.emplace(
      h, MemoEntry{e.prim, e.params, std::vector<Value>(in.begin(), in.end()),
                   std::vector<Value>(out.begin(), out.end())});
}

uint64_t RunScopes::memo_hits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return memos_.empty() ? 0 : memos_.back().hits;
}

bool RunScopes::empty() const {
  std::lock_guard<std::mutex> lock(mu_);
  return collects_.empty() && injects_.empty() && memos_.empty() && cancels_.empty();
}

// ---- per thread

RunScopes& ThreadScopes::mine() {
  std::lock_guard<std::mutex> lock(mu_);
  std::shared_ptr<RunScopes>& s = by_thread_[std::this_thread::get_id()];
  if (!s) s = std::make_shared<RunScopes>();
  threads_.store(by_thread_.size(), std::memory_order_release);
  return *s;  // only this thread pushes or pops it, so it outlives the call
}

RunScopes* ThreadScopes::of_this_thread() {
  if (threads_.load(std::memory_order_acquire) == 0) return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_thread_.find(std::this_thread::get_id());
  return it == by_thread_.end() ? nullptr : it->second.get();
}

std::shared_ptr<RunScopes> ThreadScopes::current() {
  if (threads_.load(std::memory_order_acquire) == 0) return none_;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_thread_.find(std::this_thread::get_id());
  return it == by_thread_.end() ? none_ : it->second;
}

void ThreadScopes::release_if_empty() {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_thread_.find(std::this_thread::get_id());
  if (it != by_thread_.end() && it->second->empty()) by_thread_.erase(it);
  threads_.store(by_thread_.size(), std::memory_order_release);
}

Value ThreadScopes::pop_collect() {
  Value v = mine().pop_collect();
  release_if_empty();
  return v;
}

void ThreadScopes::pop_inject() {
  mine().pop_inject();
  release_if_empty();
}

void ThreadScopes::pop_memo() {
  mine().pop_memo();
  release_if_empty();
}

void ThreadScopes::pop_cancel() {
  mine().pop_cancel();
  release_if_empty();
}

uint64_t ThreadScopes::memo_hits() {
  RunScopes* s = of_this_thread();
  return s ? s->memo_hits() : 0;
}

RunScopes* scopes_of(const RunEnv& env) {
  if (env.scopes) return env.scopes.get();
  return env.context ? env.context->scopes.of_this_thread() : nullptr;
}

void run_eqn(const Eqn& e, std::span<const Value> in, std::span<Value> out, RunEnv& env) {
  if (e.prim->impl) e.prim->impl(e, in, out, env);
  else run_async_blocking(e, in, out, env);
}

void invoke(const Eqn& e, std::span<const Value> in, std::span<Value> out, RunEnv& env) {
  RunScopes* s = scopes_of(env);
  if (s && s->memo_open() && memoizable(e)) {
    if (s->memo_find(e, in, out)) return;
    run_eqn(e, in, out, env);
    s->memo_store(e, in, out);
    return;
  }
  run_eqn(e, in, out, env);
}

}  // namespace af
