// ChatStream: reads a streamed chat completion — server-sent events whose
// data are chat.completion.chunk objects — as its bytes arrive. Each piece
// of choices[0].delta.content goes to on_text at once; the stream has ended
// after "data: [DONE]" or a chunk with a finish_reason (servers differ in
// which they send; a stream cut off has neither). A usage object (sent with
// stream_options.include_usage, after the finish_reason) is kept. With
// tools (set_tools), delta.tool_calls pieces make up the calls.
#pragma once

#include "lm/stream_parser.h"

namespace af::lm {

class ChatStream final : public SseParser {
 public:
  using SseParser::SseParser;
  bool ended() const noexcept override { return done_ || finished_; }
  const char* end_marker() const noexcept override { return "finish_reason or [DONE]"; }

 protected:
  bool closed() const noexcept override { return done_; }
  bool event(std::string data) override;

 private:
  bool tool_deltas(const Value& calls, const std::string& data);
  bool done_ = false;      // [DONE] read: nothing more is read
  bool finished_ = false;  // a finish_reason read (a usage chunk may follow)
};

}  // namespace af::lm
