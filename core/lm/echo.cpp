// echo: deterministic and offline. lm_call answers "<model>|<content of the
// last message>"; lm_schema_call answers the smallest valid instance of the
// schema, or with "schema_replies": "varied" an instance whose enum values,
// bools and bounded ints are drawn from a hash of the last message (so a
// demo's tickets take different branches, reproducibly). lm_tool_call
// calls each tool once, in order, with its smallest (or varied) arguments —
// the k-th request of a conversation, k counted by the assistant turns with
// tool calls it holds, calls tool k as "call_<k>" — and then answers as
// lm_call does (so the answer echoes the last tool's result); a tool_choice
// is obeyed ("none" answers, a tool's name calls that tool, "required"
// calls tool k modulo the number of tools). Optional latency (fixed, or
// drawn per request from a seeded hash of the request, so a run is
// reproducible) simulates a real endpoint. A
// streamed request gets its answer in pieces (each word with the spaces
// after it) just before it completes.
#include <bit>
#include <cstring>

#include "lm/options.h"
#include "lm/providers.h"
#include "lm/schema.h"
#include "lm/timer.h"
#include "lm/tools.h"

namespace af::lm {

namespace {

uint64_t mix(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

uint64_t fnv(std::string_view s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

class Echo final : public Provider {
 public:
  Echo(std::string name, uint32_t max, double lat, double lo, double hi, uint64_t seed, bool varied)
      : Provider(std::move(name), max), fixed_ms_(lat), min_ms_(lo), max_ms_(hi), seed_(seed), varied_(varied) {}
  ~Echo() override { shutdown(); }

  template <bool Varied>
  static std::string answer(const Request& r) {
    if (r.tools) return tool_answer<Varied>(r);
    if (r.schema) {
      if constexpr (Varied)
        return r.schema->varied_reply(r.messages.empty() ? 0 : fnv(r.messages.back().content.as_str()));
      return r.schema->smallest_reply();
    }
    const std::string& model = r.model.as_str();
    const std::string* last = r.messages.empty() ? nullptr : &r.messages.back().content.as_str();
    std::string s;
    s.reserve(model.size() + 1 + (last ? last->size() : 0));  // one allocation
    s += model;
    s += '|';
    if (last) s += *last;
    return s;
  }

  template <bool Varied>
  static std::string tool_answer(const Request& r) {
    size_t k = 0;
    for (const Message& m : r.messages) k += m.role == "assistant" && m.tool && !m.tool->calls.empty();
    const auto& tools = r.tools->list();
    const std::string& choice = r.tool_choice.is_null() ? std::string() : r.tool_choice.as_str();
    const Tools::Tool* named = choice.empty() ? nullptr : r.tools->find(choice);
    if (choice == "required") k %= tools.size();
    if (choice == "none" || (!named && k >= tools.size())) {
      Request plain;  // the text answer, as lm_call's
      plain.model = r.model;
      plain.messages = r.messages;
      return tool_reply(answer<Varied>(plain), {});
    }
    const Tools::Tool& t = named ? *named : tools[k];
    std::string args = "{}";
    if (t.parameters) {
      if constexpr (Varied)
        args = t.parameters->varied_reply(r.messages.empty() ? 0 : fnv(r.messages.back().content.as_str()));
      else
        args = t.parameters->smallest_reply();
    }
    return tool_reply("", {ToolCall{"call_" + std::to_string(k), t.name, std::move(args)}});
  }

  // Words: runs of bytes above ' ' (spaces and control characters split
  // them), echo's stand-in for tokens. Eight bytes at a time: a chain's
  // prompt grows with every call, and a byte-by-byte count cost more than
  // the engine's own work per call.
  static uint64_t words(std::string_view s) {
    constexpr uint64_t k01 = 0x0101010101010101ULL, k7f = k01 * 0x7f, k80 = k01 * 0x80;
    // 0x80 in each byte <= ' ': adding 0x5f carries into bit 7 from 0x21 up.
    auto blanks = [](uint64_t x) { return ~(((x & k7f) + k01 * 0x5f) | x) & k80; };
    uint64_t n = 0;
    uint64_t before = 0x80;  // 0x80 when the byte before is blank (the start counts as one)
    size_t i = 0;
    if constexpr (std::endian::native == std::endian::little)
      for (; i + 8 <= s.size(); i += 8) {
        uint64_t w;
        std::memcpy(&w, s.data() + i, 8);
        uint64_t b = blanks(w);
        uint64_t starts = ~b & ((b << 8) | before) & k80;  // one bit per byte: count by a multiply
        n += ((starts >> 7) * k01) >> 56;
        before = b >> 56;
      }
    for (; i < s.size(); ++i) {
      uint64_t b = uint8_t(s[i]) <= ' ' ? 0x80 : 0;
      n += !b && before;
      before = b;
    }
    return n;
  }

  // Streams the answer in pieces, then completes the call.
  static void answer_call(Call& call, std::string content) {
    if (call.request().stream) {
      size_t from = 0;
      while (from < content.size()) {
        size_t to = content.find(' ', from);
        to = to == std::string::npos ? content.size() : content.find_first_not_of(' ', to);
        if (to == std::string::npos) to = content.size();
        call.delta(std::string_view(content).substr(from, to - from));
        from = to;
      }
    }
    call.complete(std::move(content));
  }

  double latency_ms(const Request& r) const {
    if (max_ms_ <= 0) return fixed_ms_;
    uint64_t h = mix(fnv(r.key()) ^ mix(seed_));
    double u = double(h >> 11) / double(1ULL << 53);
    return min_ms_ + u * (max_ms_ - min_ms_);
  }

 protected:
  void start(std::shared_ptr<Call> call) noexcept override { start_all({&call, 1}); }

  // A round's replies are queued on the timer under one lock.
  void start_all(std::span<std::shared_ptr<Call>> calls) noexcept override {
    SmallVec<int64_t, 1> due;  // calls[k]'s reply is due at due[k] (inline for one start)
    try {
      due.reserve(calls.size());
    } catch (...) {
      for (auto& call : calls) call->fail(Error(Code::OutOfMemory, "echo: out of memory"));
      return;
    }
    size_t waits = 0;  // the calls that wait go first in `calls`, in order
    for (auto& call : calls) {
      // The prompt's usage is counted here, the reply's when it is made: the
      // thread that makes every reply does no more than that.
      for (const Message& m : call->request().messages) call->prompt_tokens += words(m.content.as_str());
      const double ms = latency_ms(call->request());
      if (ms <= 0) {
        (varied_ ? reply<true> : reply<false>)(*call);
        call.reset();
        continue;
      }
      // From the start the limiter stamped on it (one clock read less per call).
      due.push_back(call->started_ns + int64_t(ms * 1e6));
      calls[waits++] = std::move(call);
    }
    // The reply is made when it is due, on the timer's thread, as a server
    // would make it: issuing a request costs the caller no more than that.
    // A cancelled call is finished at once (its caller goes on); like a
    // server that does not see the client leave, echo keeps it until due
    // and then drops it. (A cancel hook per call cost an allocation and
    // ~9 % of the engine's instructions per LM call.)
    try {
      timer_->schedule({due.data(), due.size()}, calls.first(waits), varied_ ? reply<true> : reply<false>);
    } catch (...) {
      for (auto& call : calls.first(waits))
        if (call) call->fail(Error(Code::OutOfMemory, "echo: out of memory"));
    }
  }

 private:
  // Answers the call, with the reply's usage (set on the thread that completes it).
  template <bool Varied>
  static void reply(Call& call) noexcept {
    if (call.finished()) return;  // cancelled while it waited
    std::string content;
    try {
      content = answer<Varied>(call.request());
    } catch (const Error& e) {
      call.fail(e);
      return;
    } catch (...) {
      call.fail(Error(Code::Internal, "echo: unexpected failure"));
      return;
    }
    // Deterministic usage: words of every message in (counted at the
    // start), words of the reply out.
    call.completion_tokens = words(content);
    answer_call(call, std::move(content));
  }

  double fixed_ms_, min_ms_, max_ms_;
  uint64_t seed_;
  bool varied_;
  std::shared_ptr<TimerQueue> timer_ = std::make_shared<TimerQueue>();
};

}  // namespace

ProviderPtr make_echo(const Value& options) {
  Options o(options, "echo provider");
  std::string name = o.str("name", "echo", "The provider's name in profiles and error messages.");
  CommonOptions common = read_common_options(o, CommonOptions{0});
  double lat = o.number("latency_ms", 0, 0, 3.6e6, "A fixed delay before each reply, in milliseconds.");
  double lo = o.number("latency_min_ms", 0, 0, 3.6e6, "With latency_max_ms: a delay drawn uniformly between the two (seeded by seed).");
  double hi = o.number("latency_max_ms", 0, 0, 3.6e6, "See latency_min_ms (0 = no drawn delay).");
  auto seed = uint64_t(o.integer("seed", 0, INT64_MIN, INT64_MAX, "Seeds the drawn delays and varied schema replies."));
  const std::string replies = o.str("schema_replies", "smallest", "Structured replies: \"smallest\" (the least value the schema allows) or \"varied\" (seeded values).");
  o.finish();
  if (replies != "smallest" && replies != "varied")
    invalid("echo provider: \"schema_replies\" is \"smallest\" or \"varied\", not " + json_quoted(replies));
  if (hi > 0 && lo > hi) invalid("echo provider: latency_min_ms is greater than latency_max_ms");
  if (hi > 0 && lat > 0) invalid("echo provider: give latency_ms or latency_min_ms/latency_max_ms, not both");
  auto p = std::make_shared<Echo>(std::move(name), common.max_in_flight, lat, lo, hi, seed, replies == "varied");
  common.apply(*p);
  return p;
}

}  // namespace af::lm
