// An LM request and the Call that carries it through a provider. A Call is
// finished exactly once — complete(), fail() or cancel() — from any thread;
// whatever comes later is ignored. Its done hook (set by whoever submitted
// it) receives the reply or the error.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "value/error.h"
#include "value/small_vec.h"
#include "value/value.h"

namespace af::lm {

class Schema;
class Tools;
struct ToolTurn;

// A part of a message's content: text, or an image by URL or as base64
// data (af.h, af_lm_call: content parts).
struct ContentPart {
  enum class Type : uint8_t { Text, ImageUrl, ImageData };
  Type type = Type::Text;
  std::string media_type;  // ImageData's: "image/png", "image/jpeg", "image/gif", "image/webp"
  Value value;             // a str: the text, the URL, or the base64 data
};

struct Message {
  std::string role;
  // A str Value: a request shares its prompt's bytes with the run that made
  // it (a prompt is not copied per request, however long).
  Value content;
  // Tool calling (lm/tools.h): an assistant turn's tool calls, or the call a
  // "tool" message answers; null for a plain message.
  std::shared_ptr<const ToolTurn> tool = nullptr;
  // A message given as parts (text and images), in order; null for a
  // message of text alone. `content` is then its text parts joined by
  // blank lines (what a provider that reads text alone, echo, and token
  // estimates see); a provider that cannot send an image refuses it.
  std::shared_ptr<const std::vector<ContentPart>> parts = nullptr;
};

struct Request {
  // A str Value, shared with the run that asked (like a message's content):
  // a request does not copy its model's name.
  Value model;
  // Inline for up to two (a prompt, or a system turn and a prompt): a
  // request allocates no array of its own.
  SmallVec<Message, 2> messages;
  // lm_schema_call: the parsed schema (lm/schema.h: its node tree, the JSON
  // Schema sent as response_format, the reply's parser); null for lm_call.
  // Shared: every request of an equation holds the same one.
  std::shared_ptr<const Schema> schema;
  // lm_tool_call: the tools offered (lm/tools.h); the provider answers with
  // the tool reply JSON. Null otherwise. Shared like the schema.
  std::shared_ptr<const Tools> tools;
  // lm_tool_call's tool_choice (lm/tools.h: "required", "none" or a tool's
  // name), a str; null for "auto".
  Value tool_choice;
  std::shared_ptr<const std::vector<std::string>> tags;  // may be null
  // The call's sampling parameters (temperature, max_tokens, stop, seed,
  // top_p: the equation's params), a dict, or null when it sets none. A
  // provider merges them over its own defaults.
  Value sampling;
  // The run wants the reply's text as it arrives (Call::delta).
  bool stream = false;
  // 0 for a call's first asking; k for its k-th re-ask after an invalid
  // structured reply (sampling_for steps the sampling with it).
  uint32_t reask = 0;

  // {"model":..., "messages":[{"role","content"}...], "schema":..., "json_schema":..., "params":{...},
  // "stream":true, "tags":[...]} (schema keys only for schema calls, the others only when set).
  std::string to_json() const;
  // A key equal for equal (model, messages, schema, sampling): what replay
  // matches on ("params" only when set, so older recordings still match).
  std::string key() const;
  // A rough token count for rate limits before the reply's usage is known:
  // a token per 4 bytes of every message, 4 per message, plus max_tokens.
  uint64_t estimated_tokens() const;
};

// The sampling params a provider sends for r: its own defaults (a dict or
// null) with the call's params over them, and for a re-ask (r.reask = k >= 1)
// the draw stepped, since a greedy model asked again gives the same reply:
// "temperature", when set, at least min(1, 0.3 k); "seed", when set, plus k.
// A dict, or null when nothing is set.
Value sampling_for(const Value& defaults, const Request& r);

class Limiter;

// A media type an image part may have: image/png, image/jpeg, image/gif or
// image/webp (what every provider with images takes).
bool image_media_type(std::string_view t) noexcept;
// s is non-empty base64 (the standard alphabet, "=" padding only at its end).
bool valid_base64(std::string_view s) noexcept;

int64_t now_ns() noexcept;  // steady clock

// Many requests made together (a batch, a round of starts; from this many
// on) share what they point to through a count of their own: copies of
// one count that every request of a program takes, and another thread
// drops, made each request wait for that count's cache line.
inline constexpr size_t kOwnCountFrom = 64;
// p behind a count of its own: copies of the result count there, not in
// p's shared count (which the result holds once).
template <class T>
std::shared_ptr<T> own_count(std::shared_ptr<T> p) {
  if (!p) return p;
  T* raw = p.get();
  return std::shared_ptr<T>(std::make_shared<const std::shared_ptr<T>>(std::move(p)), raw);
}

class Call {
 public:
  // content != nullptr on success (the hook may move the reply out of it),
  // else err != nullptr. Runs once.
  using Done = std::function<void(Call& call, std::string* content, const Error* err)>;
  // Streaming: a piece of the reply text, or (data == nullptr) "forget what
  // was streamed so far" (a retry starts the reply over).
  using Delta = std::function<void(const char* data, size_t len)>;

  // queued_at: when the request was made (a batch's requests share one
  // clock read).
  Call(Request&& req, Done done, double priority, int64_t queued_at = now_ns());
  // A call dropped unfinished (its provider went away) fails with PROVIDER,
  // so nobody waits for it forever.
  ~Call();
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  const Request& request() const noexcept { return req_; }
  double priority() const noexcept { return priority_; }

  // Provider side. Return false if the call was already finished.
  bool complete(std::string content) noexcept;
  bool fail(const Error& err) noexcept;
  // The provider's way to stop its work when the caller cancels. A hook set
  // after cancellation runs at once.
  void on_cancel(std::function<void()> hook);
  bool cancelled() const noexcept { return cancelled_.load(std::memory_order_acquire); }
  bool finished() const noexcept { return done_.load(std::memory_order_acquire); }

  // Caller side: finishes with `why` (CANCELLED, TIMEOUT) and stops the work.
  void cancel(const Error& why) noexcept;

  // Streaming, for requests with request().stream. The submitter sets the
  // hook before submitting; the provider reports the text as it arrives,
  // from one thread at a time, in order, before it completes the call (the
  // pieces since the last restart() make up the completed text). Ignored
  // once the call finished.
  void set_on_delta(Delta hook) { delta_hook_ = std::move(hook); }
  void delta(std::string_view text) noexcept;
  void restart() noexcept;

  // Set by the limiter and providers; read for profiles.
  int slot = -1;
  std::atomic<uint32_t> attempts{1};
  int64_t queued_ns = 0;
  int64_t started_ns = 0;
  int64_t finished_ns = 0;  // 0 unless `timed`
  // Whether finishing reads the clock for finished_ns: the submitter turns
  // it off when no profile reads it (a clock read is ~3 % of an LM call's
  // CPU here).
  bool timed = true;
  std::string provider_name;
  // Token usage the provider reports (the OpenAI usage block; echo counts
  // words), set by the provider before complete(), and read only for a
  // completed call (a call failed elsewhere may still be having them
  // written); the limiter adds it to the provider's stats when the call
  // releases its slot. 0 when unknown.
  uint64_t prompt_tokens = 0;
  uint64_t completion_tokens = 0;

  // A token count a server reports, as a provider may store it above: a
  // count below 1 is unknown (0), and one beyond any model's context is
  // clamped (a server's number is never trusted whole: one reply claiming
  // 10^18 tokens would wrap the stats and stall a rate-limited provider).
  static constexpr uint64_t kMaxReplyTokens = uint64_t(1) << 24;
  static uint64_t reply_tokens(int64_t n) noexcept {
    return n <= 0 ? 0 : std::min(uint64_t(n), kMaxReplyTokens);
  }

 private:
  friend class Limiter;
  void finish(std::string* content, const Error* err) noexcept;
  Request req_;
  Done done_hook_;
  Delta delta_hook_;
  double priority_;
  std::atomic<bool> done_{false};
  std::atomic<bool> cancelled_{false};
  std::mutex mu_;
  std::function<void()> cancel_hook_;
  std::shared_ptr<Limiter> limiter_;  // holds the slot while started
  uint64_t rate_tokens_ = 0;  // what the limiter charged for the start
  bool rate_held_ = false;    // a rate limit or pause held its start back
};

}  // namespace af::lm
