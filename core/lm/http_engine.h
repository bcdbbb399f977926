// The HTTP providers (openai, anthropic, ollama): one engine, many wire
// formats. The engine (http_engine.cpp) owns what every HTTP provider does
// alike: libcurl's multi interface on one thread per provider, retries with
// backoff, jitter and Retry-After, per-attempt timeouts, cancellation, the
// reply cap, streamed replies, the API key (read once, only ever in its
// header, refused over plain http except to loopback) and the redaction of
// every message. A provider supplies only its Wire: the request body, and
// how a whole reply or a stream of one is read.
#pragma once

#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <simdjson.h>

#include "lm/provider.h"
#include "lm/stream_parser.h"
#include "lm/tools.h"

namespace af::lm {

class Options;

class Wire {
 public:
  virtual ~Wire() = default;
  // The request body for r (JSON).
  virtual std::string body(const Request& r) const = 0;
  // A whole 2xx reply, parsed by the engine (root; body is its text): true
  // with its text (and the usage counts set on call), or false with why it
  // is unusable. Server text in `why` goes through safe_excerpt(..., secret)
  // (the engine also redacts the whole message, but a key cut by an
  // excerpt's end is only caught here).
  virtual bool reply(simdjson::dom::element root, std::string_view body, Call& call, std::string& text,
                     std::string& why, std::string_view secret) const = 0;
  // The Content-Type of a streamed reply ("text/event-stream"): a 200 reply
  // to a streamed request of another type is read whole, as a JSON reply.
  virtual std::string_view stream_type() const noexcept = 0;
  virtual std::unique_ptr<StreamParser> stream(std::function<void(std::string_view)> on_text,
                                               size_t max_bytes) const = 0;
};

// The CA certificates TLS checks servers against (empty = libcurl's
// default). libcurl's default is where the system that built it keeps them;
// a libaf carried to another system (the Python wheel) may find nothing
// there. So: SSL_CERT_FILE / SSL_CERT_DIR when set and readable (as OpenSSL
// reads them), else libcurl's default when it is there, else the first
// bundle found where common distributions keep one. Pure, for tests: the
// engine passes the environment, libcurl's defaults and access(2).
struct CaPaths {
  std::string file, dir;
};
CaPaths choose_ca_paths(const char* env_file, const char* env_dir, const char* curl_file, const char* curl_dir,
                        const std::function<bool(const char*)>& readable);

// What a provider type's options default to.
struct HttpDefaults {
  const char* type;          // "openai": options and messages name it
  const char* base_url;      // nullptr: the option is required
  const char* base_example;  // for the message when it is missing
  const char* path;          // appended to base_url: "/chat/completions"
  // The key: nullptr when the type takes none (no "api_key_env" or
  // "allow_insecure_http" options), else the header line before the key
  // ("Authorization: Bearer ").
  const char* key_header;
  const char* key_env;  // the default of "api_key_env" ("" = no key)
  uint32_t max_in_flight;
};

struct HttpConfig {
  std::string type;
  std::string name;
  std::string url;        // base_url + path
  std::string url_shown;  // url without user:password@, for messages
  std::vector<std::string> headers;  // besides Content-Type: the key's, the format's own
  std::string key;                   // the raw key, redacted from every message
  int64_t timeout_ms = 60000;
  uint32_t max_retries = 3;
  int64_t backoff_ms = 500;
  int64_t backoff_max_ms = 20000;
};

// The options every HTTP provider reads: "name", the common options
// (Provider::configure's), "base_url", "timeout_ms", "max_retries",
// "backoff_ms", "backoff_max_ms" and, for a type with a key, "api_key_env"
// and "allow_insecure_http". read() takes them from o before the type's own
// options; finish(), after o.finish(), checks base_url and reads the key.
class HttpOptions {
 public:
  HttpOptions(Options& o, const HttpDefaults& d);
  void finish();
  HttpConfig cfg;
  CommonOptions common;

 private:
  HttpDefaults d_;
  std::string base_;
  std::string key_env_;
  bool allow_http_ = false;
};

// Option "extra": an object (or null) of request defaults; keys libaf sets
// per request (`reserved`) are refused.
Value read_extra(Options& o, const char* type, std::initializer_list<const char*> reserved);

// Request fields built from a provider's defaults and a call's params: a
// later field of the same name replaces an earlier one (a call's
// "max_tokens" mapped to Ollama's "num_predict" wins over a default
// "num_predict"). Appended as ,"name":value... by append_to.
class Fields {
 public:
  void set(std::string name, Value v);
  bool has(std::string_view name) const;
  void append_to(std::string& json) const;

 private:
  std::vector<std::pair<std::string, Value>> fields_;
};

// A "stop" param as a list of strings (Anthropic's stop_sequences and
// Ollama's stop take only lists; libaf's params allow one string).
Value stop_list(const Value& stop);

// A schema call's instruction for servers told of the schema only in
// words (or whose grammars ignore parts of it): the JSON Schema with small
// int ranges as enums.
std::string schema_instruction(const Schema& schema);

// A reply's usage counts: the integer fields `prompt` and `completion` of
// `usage` (an object, or anything else: then no counts), clamped
// (Call::reply_tokens), into call. Wire formats name them differently.
void read_usage(simdjson::dom::element usage, const char* prompt, const char* completion, Call& call);

// Tool calling (lm/tools.h), the parts the wire formats share.
// The tools in the function form of OpenAI's and Ollama's "tools" field:
// [{"type":"function","function":{"name","description","parameters"}}].
std::string function_tools(const Tools& tools);
// Appends a call's arguments (the JSON text of an object) as the object
// itself, for formats that carry an object (Anthropic's input, Ollama's
// arguments). INVALID_ARGUMENT naming the call when it is not one.
void append_arguments_object(std::string& json, const ToolCall& call);
// Tool calls in the function form of OpenAI's and Ollama's replies:
// [{"id": "...", "function": {"name": "...", "arguments": "{...}" | {...}}}, ...]
// (arguments as JSON text, or an object kept as its compact text), appended
// to calls; an absent id is "call_<i>". false with why (naming `where`, the
// list's place: "message.tool_calls[1] has no function.name string") for a
// list a server should not send.
bool read_function_calls(simdjson::dom::element list, const char* where, std::vector<ToolCall>& calls,
                         std::string& why);

// Images (content parts, lm/call.h), the parts the wire formats share.
// The chat APIs take images from the user alone: INVALID_ARGUMENT, naming
// the provider type and the message, for an image in a message of another
// role.
void check_image_roles(const Request& r, const char* type);
// An image part as base64 data: an ImageData part's, or an ImageUrl's that
// is a data: URL ("data:<media type>;base64,<data>", the media type one of
// image_media_type's and the data base64). False for an http(s) URL (or a
// text part); INVALID_ARGUMENT, naming `type` and the message and part
// (`at`: "messages[1].content[2]"), for a data: URL not of that form.
struct ImageBytes {
  std::string_view media_type;
  std::string_view data;  // base64
};
bool image_bytes(const ContentPart& part, const char* type, const std::string& at, ImageBytes& out);

// The provider: made from the options read, sending every request in wire's format.
ProviderPtr make_http_provider(HttpOptions& opts, std::shared_ptr<const Wire> wire);

// Exposed for tests.
// The wire formats with their providers' default options.
std::shared_ptr<const Wire> openai_wire();
std::shared_ptr<const Wire> anthropic_wire();
std::shared_ptr<const Wire> ollama_wire();
int64_t retry_after_ms(const std::string& v, int64_t cap_ms);
bool loopback_url(std::string_view url);
std::string url_for_messages(const std::string& url);

}  // namespace af::lm
