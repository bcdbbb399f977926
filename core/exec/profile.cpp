#include "exec/profile.h"

#include <chrono>
#include <cstdio>
#include <map>

#include "value/error.h"
#include "value/file.h"

namespace af {

int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

namespace {
thread_local int t_engine_thread = 0;

// Tags or a name path as a JSON list ([] for none).
std::string json_list(const std::shared_ptr<const std::vector<std::string>>& names) {
  std::string s = "[";
  if (names)
    for (size_t i = 0; i < names->size(); ++i) {
      if (i) s += ',';
      append_json_string(s, (*names)[i]);
    }
  return s + ']';
}

// An event's title: the primitive and equation number, then the name path.
std::string title(const Program::Node& n, const NamePath& path) {
  std::string t = n.eqn->prim->name + " #" + std::to_string(n.eqn_index);
  if (path && !path->empty()) t += " " + name_path_text(path);
  std::string q;
  append_json_string(q, t);
  return q;
}
}
int engine_thread_index() noexcept { return t_engine_thread; }
void set_engine_thread_index(int i) noexcept { t_engine_thread = i; }

Profile::Profile(size_t n_nodes) : t0_(now_ns()), n_(n_nodes), times_(new Times[n_nodes]) {}

void Profile::queued(uint32_t node) noexcept { times_[node].queued.store(now_ns(), std::memory_order_relaxed); }
void Profile::started(uint32_t node, int thread) noexcept {
  times_[node].thread.store(thread, std::memory_order_relaxed);
  times_[node].started.store(now_ns(), std::memory_order_relaxed);
}
void Profile::finished(uint32_t node, int32_t code) noexcept {
  times_[node].code.store(code, std::memory_order_relaxed);
  times_[node].finished.store(now_ns(), std::memory_order_relaxed);
}

void Profile::span(uint32_t node, const CallSpan& s) {
  std::lock_guard<std::mutex> lock(mu_);
  spans_.emplace_back(node, s);
}

void Profile::event(uint32_t node, const HostEvent& e) {
  std::lock_guard<std::mutex> lock(mu_);
  events_.emplace_back(node, e);
}

std::string Profile::to_json(const Program& prog) const {
  auto us = [&](int64_t t) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", double(t - t0_) / 1000.0);
    return std::string(buf);
  };
  auto dur = [&](int64_t a, int64_t b) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", double(std::max<int64_t>(0, b - a)) / 1000.0);
    return std::string(buf);
  };
  std::string s = "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"producer\":\"libaf\"},\"traceEvents\":[";
  bool first = true;
  auto ev = [&](const std::string& body) {
    if (!first) s += ",\n";
    first = false;
    s += body;
  };
  auto name_of = [&](uint32_t node) {
    return title(prog.nodes[node], prog.nodes[node].eqn->name_path());
  };
  ev("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"args\":{\"name\":\"engine\"}}");
  std::map<int, bool> threads;
  std::lock_guard<std::mutex> lock(mu_);
  for (uint32_t i = 0; i < n_; ++i) {
    struct {
      int64_t queued, started, finished;
      int thread;
      int32_t code;
    } t{times_[i].queued.load(), times_[i].started.load(), times_[i].finished.load(), times_[i].thread.load(),
        times_[i].code.load()};
    if (!t.started) continue;
    const Program::Node& n = prog.nodes[i];
    std::string args = "{\"eqn\":" + std::to_string(n.eqn_index) +
                       ",\"code\":" + std::to_string(t.code) +
                       ",\"priority\":" + af::to_json(Value::floating(n.priority)) +
                       ",\"tags\":" + json_list(n.eqn->tags()) +
                       ",\"name_path\":" + json_list(n.eqn->name_path()) + "}";
    std::string id = std::to_string(i);
    int64_t q = t.queued ? t.queued : t.started;
    int64_t f = t.finished ? t.finished : t.started;
    ev("{\"ph\":\"b\",\"cat\":\"eqn\",\"id\":" + id + ",\"pid\":1,\"tid\":0,\"name\":" + name_of(i) +
       ",\"ts\":" + us(q) + ",\"args\":" + args + "}");
    ev("{\"ph\":\"b\",\"cat\":\"eqn\",\"id\":" + id + ",\"pid\":1,\"tid\":0,\"name\":\"queued\",\"ts\":" + us(q) + "}");
    ev("{\"ph\":\"e\",\"cat\":\"eqn\",\"id\":" + id + ",\"pid\":1,\"tid\":0,\"name\":\"queued\",\"ts\":" +
       us(t.started) + "}");
    ev("{\"ph\":\"e\",\"cat\":\"eqn\",\"id\":" + id + ",\"pid\":1,\"tid\":0,\"name\":" + name_of(i) +
       ",\"ts\":" + us(f) + "}");
    if (!n.async) {
      threads[t.thread] = true;
      ev("{\"ph\":\"X\",\"name\":" + name_of(i) + ",\"cat\":\"run\",\"pid\":1,\"tid\":" +
         std::to_string(t.thread) + ",\"ts\":" + us(t.started) + ",\"dur\":" + dur(t.started, f) +
         ",\"args\":" + args + "}");
    }
  }
  // Host functions' events: instants on the track of the thread that added them.
  for (const auto& [node, e] : events_) {
    threads[e.thread] = true;
    std::string name;
    append_json_string(name, e.name);
    ev("{\"ph\":\"i\",\"s\":\"t\",\"name\":" + name + ",\"cat\":\"host\",\"pid\":1,\"tid\":" +
       std::to_string(e.thread) + ",\"ts\":" + us(e.at_ns) + ",\"args\":{\"eqn\":" +
       std::to_string(prog.nodes[node].eqn_index) + (e.args_json.empty() ? "" : ",\"args\":" + e.args_json) + "}}");
  }
  for (const auto& [thread, _] : threads) {
    std::string name = thread == 0 ? "caller" : "worker " + std::to_string(thread);
    ev("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":" + std::to_string(thread) +
       ",\"args\":{\"name\":\"" + name + "\"}}");
  }
  std::map<std::string, int> pids;
  std::map<std::pair<int, int>, bool> slots;
  for (const auto& [node, c] : spans_) {
    std::string prov = c.provider.empty() ? "(unknown provider)" : c.provider;
    auto it = pids.find(prov);
    if (it == pids.end()) {
      int pid = 2 + int(pids.size());
      it = pids.emplace(prov, pid).first;
      std::string q;
      append_json_string(q, "provider " + prov);
      ev("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + std::to_string(pid) + ",\"args\":{\"name\":" + q + "}}");
    }
    int pid = it->second;
    int slot = std::max(0, c.slot);
    if (!slots[{pid, slot}]) {
      slots[{pid, slot}] = true;
      ev("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + std::to_string(pid) + ",\"tid\":" +
         std::to_string(slot) + ",\"args\":{\"name\":\"slot " + std::to_string(slot) + "\"}}");
    }
    std::string model;
    append_json_string(model, c.model);
    int64_t st = c.started_ns ? c.started_ns : c.finished_ns;
    ev("{\"ph\":\"X\",\"name\":" + title(prog.nodes[node], c.name_path) +
       ",\"cat\":\"lm\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(slot) +
       ",\"ts\":" + us(st) + ",\"dur\":" + dur(st, c.finished_ns) +
       ",\"args\":{\"eqn\":" + std::to_string(prog.nodes[node].eqn_index) + ",\"model\":" + model +
       ",\"queued_us\":" + us(c.queued_ns) + ",\"wait_us\":" + dur(c.queued_ns, st) +
       ",\"attempts\":" + std::to_string(c.attempts) + ",\"code\":" + std::to_string(c.code) +
       ",\"prompt_tokens\":" + std::to_string(c.prompt_tokens) +
       ",\"completion_tokens\":" + std::to_string(c.completion_tokens) +
       ",\"tags\":" + json_list(c.tags) + ",\"name_path\":" + json_list(c.name_path) + "}}");
  }
  s += "]}\n";
  return s;
}

void Profile::write(const std::string& path, const Program& prog) const {
  write_file_atomic(path, to_json(prog), "profile");
}

}  // namespace af
