// ChatStream: reads a streamed chat completion — server-sent events whose
// data are chat.completion.chunk objects — as its bytes arrive. Each piece
// of choices[0].delta.content goes to on_text at once; the stream has ended
// after "data: [DONE]" or a chunk with a finish_reason (servers differ in
// which they send; a stream cut off has neither). A usage object (sent with
// stream_options.include_usage, after the finish_reason) is kept.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace af::lm {

class ChatStream {
 public:
  // max_bytes caps the text and any one event (a runaway stream is refused).
  ChatStream(std::function<void(std::string_view)> on_text, size_t max_bytes)
      : on_text_(std::move(on_text)), max_bytes_(max_bytes) {}

  // Feeds body bytes (any split). false once the stream is unusable: then
  // error() says why (an event that is not a JSON object, an error event,
  // text over the cap). Bytes after the end are ignored.
  bool feed(std::string_view bytes);
  bool ended() const noexcept { return done_ || finished_; }
  const std::string& error() const noexcept { return error_; }
  const std::string& text() const noexcept { return text_; }
  uint64_t prompt_tokens() const noexcept { return prompt_tokens_; }
  uint64_t completion_tokens() const noexcept { return completion_tokens_; }

 private:
  bool line(std::string_view l);
  bool event();
  std::function<void(std::string_view)> on_text_;
  size_t max_bytes_;
  std::string pending_;  // an incomplete line
  std::string data_;     // the data lines of the event being read
  bool has_data_ = false;
  std::string text_;
  std::string error_;
  bool done_ = false;      // [DONE] read: nothing more is read
  bool finished_ = false;  // a finish_reason read (a usage chunk may follow)
  uint64_t prompt_tokens_ = 0, completion_tokens_ = 0;
};

}  // namespace af::lm
