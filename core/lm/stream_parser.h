// StreamParser: a streamed reply read as its bytes arrive, in any split.
// The framing shared by the wire formats lives here (lines, and the events
// of server-sent events); what a line or an event means is each format's
// (lm/chat_stream.h for OpenAI chunks, lm/anthropic_stream.h, lm/ollama_stream.h).
// Text pieces go to on_text at once; the text, the usage counts and the
// end are kept for the provider to complete the call with. For a request
// that offers tools (set_tools), the tool calls are assembled too, and the
// call completes with reply(): the tool reply JSON (lm/tools.h).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "lm/tools.h"
#include "value/value.h"

namespace af::lm {

// The most tool calls one reply may make (a hostile stream of ever new
// call indices is refused, not kept).
inline constexpr size_t kMaxToolCalls = 1024;

class StreamParser {
 public:
  // max_bytes caps the text and any one line or event (a runaway stream is
  // refused).
  StreamParser(std::function<void(std::string_view)> on_text, size_t max_bytes)
      : on_text_(std::move(on_text)), max_bytes_(max_bytes) {}
  virtual ~StreamParser() = default;
  StreamParser(const StreamParser&) = delete;
  StreamParser& operator=(const StreamParser&) = delete;

  // Feeds body bytes (any split). false once the stream is unusable: then
  // error() says why. Bytes after the stream's own end are ignored.
  bool feed(std::string_view bytes);
  // The reply is whole (a stream cut off before this is retried).
  virtual bool ended() const noexcept = 0;
  // What marks the end in this format, for the message about a stream cut
  // off before it ("message_stop", ...).
  virtual const char* end_marker() const noexcept = 0;
  const std::string& error() const noexcept { return error_; }
  const std::string& text() const noexcept { return text_; }
  uint64_t prompt_tokens() const noexcept { return prompt_tokens_; }
  uint64_t completion_tokens() const noexcept { return completion_tokens_; }

  // The request offers tools: the format reads the tool calls in the
  // stream (otherwise they are not looked at, as before tools existed).
  void set_tools(bool on) noexcept { tools_ = on; }
  const std::vector<ToolCall>& tool_calls() const noexcept { return calls_; }
  // What the call completes with, once ended(): the text, or with tools
  // tool_reply(text, calls) (a call streamed without arguments has "{}").
  // false with why when a call never got its name.
  bool reply(std::string& out, std::string& why) const;

 protected:
  // One line, without its "\n" (a "\r" before it is the format's to strip).
  virtual bool line(std::string_view l) = 0;
  // Nothing more is read (the format's end marker came).
  virtual bool closed() const noexcept = 0;
  // What a line is called in messages ("an event line", "a line").
  virtual const char* line_name() const noexcept = 0;
  // Appends a piece of the reply (at most max_bytes in all) and reports it.
  bool add_text(std::string_view piece);
  // data as a JSON object, or false (error() says that `what` — "an event",
  // "a line" — is not one, quoting it).
  bool parse_object(const char* what, const std::string& data, Value& out);
  bool bad(std::string why) {
    error_ = std::move(why);
    return false;
  }
  size_t max_bytes() const noexcept { return max_bytes_; }
  bool tools() const noexcept { return tools_; }
  // The tool call the stream names `key` (OpenAI's index, Anthropic's
  // content block index), made on first sight; null (error() says why)
  // past kMaxToolCalls.
  ToolCall* tool_call(int64_t key);
  // Appends a piece to one of a call's fields: the text's cap counts the
  // tool calls' bytes too.
  bool add_tool_piece(std::string& field, std::string_view piece);
  uint64_t prompt_tokens_ = 0, completion_tokens_ = 0;

 private:
  std::function<void(std::string_view)> on_text_;
  size_t max_bytes_;
  std::string pending_;  // an incomplete line
  std::string text_;
  std::string error_;
  bool tools_ = false;
  std::vector<ToolCall> calls_;
  std::vector<int64_t> keys_;  // the stream's key of each call
  size_t tool_bytes_ = 0;      // the calls' ids, names and arguments
};

// "64 MiB" or "200 bytes": a cap as messages show it.
std::string size_text(size_t n);

// Server-sent events (text/event-stream): "data:" lines make up an event, a
// blank line dispatches it to event(), ":" comments and the other fields
// (event, id, retry) are ignored — every format here repeats an event's
// type inside its data.
class SseParser : public StreamParser {
 public:
  using StreamParser::StreamParser;

 protected:
  bool line(std::string_view l) final;
  const char* line_name() const noexcept final { return "an event line"; }
  virtual bool event(std::string data) = 0;

 private:
  std::string data_;  // the data lines of the event being read
  bool has_data_ = false;
};

}  // namespace af::lm
