// OllamaStream: a streamed /api/chat reply — newline-delimited JSON, one
// object per line — read as its bytes arrive. Each line's
// message.content is a piece of the text; the line with "done": true ends
// the reply and carries the counts (prompt_eval_count, eval_count). A line
// with "error" (the server failed mid-reply) is an error, and so is a line
// that is not a JSON object. With tools (set_tools), message.tool_calls
// come whole, each in some line.
#pragma once

#include <simdjson.h>

#include "lm/stream_parser.h"

namespace af::lm {

class OllamaStream final : public StreamParser {
 public:
  using StreamParser::StreamParser;
  bool ended() const noexcept override { return done_; }
  const char* end_marker() const noexcept override { return "line with \"done\": true"; }

 protected:
  bool line(std::string_view l) override;
  bool closed() const noexcept override { return done_; }
  const char* line_name() const noexcept override { return "a line"; }

 private:
  bool whole_calls(const Value& list);
  bool done_ = false;
  simdjson::dom::parser parser_;  // the tool calls (read as a whole reply's)
};

}  // namespace af::lm
