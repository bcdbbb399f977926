// AnthropicStream: a streamed Messages API reply — server-sent events whose
// data carry their "type" — read as its bytes arrive. The text is the
// text_delta pieces of content_block_delta events (thinking and tool input
// deltas are not reply text); usage comes from message_start (input_tokens)
// and message_delta (the cumulative output_tokens); the reply has ended at
// message_stop. An "error" event (e.g. overloaded_error mid-stream) and an
// event without a type are errors; other types (ping, content_block_start,
// content_block_stop, types added later) are ignored. With tools
// (set_tools), a content_block_start of a tool_use block starts a call and
// its input_json_delta pieces make up the arguments.
#pragma once

#include "lm/stream_parser.h"

namespace af::lm {

class AnthropicStream final : public SseParser {
 public:
  using SseParser::SseParser;
  bool ended() const noexcept override { return stopped_; }
  const char* end_marker() const noexcept override { return "message_stop event"; }

 protected:
  bool closed() const noexcept override { return stopped_; }
  bool event(std::string data) override;

 private:
  void usage(const Value& v);
  ToolCall* block_call(const Value& v, const std::string& data);
  bool stopped_ = false;
};

}  // namespace af::lm
