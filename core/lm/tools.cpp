#include "lm/tools.h"

#include <cctype>
#include <mutex>
#include <unordered_map>

#include "lm/call.h"
#include "lm/schema.h"
#include "value/error.h"

namespace af::lm {

namespace {

// The names OpenAI, Anthropic and Ollama all accept.
bool valid_tool_name(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  return true;
}

// A container root: the arguments object a tool takes.
bool container_root(const Value& tree) {
  if (tree.kind() != Kind::Dict) return false;
  const Value* type = tree.find("type");
  return !type || (type->kind() == Kind::Str && type->as_str() == "dict");
}

const Value* str_field(const Value& obj, const char* key) {
  const Value* v = obj.find(key);
  return v && v->kind() == Kind::Str ? v : nullptr;
}

[[noreturn]] void schema_error(const std::string& what) { throw Error(Code::Schema, what); }

// A tool call's arguments (an object, or the JSON text of one) as compact
// JSON text, checked against the tool.
std::string checked_arguments(const Tools::Tool& tool, const Value& given, const std::string& at) {
  Value args = given;
  if (given.kind() == Kind::Str) {
    try {
      args = given.as_str().empty() ? Value::dict({}) : from_json(given.as_str());
    } catch (const Error& e) {
      schema_error(at + ": the arguments are not JSON: " + e.what());
    }
  }
  if (args.kind() != Kind::Dict) schema_error(at + ": the arguments must be a JSON object, found " + kind_name(args.kind()));
  std::string text = to_json(args);
  if (!tool.parameters) {
    if (args.size() != 0) schema_error(at + ": tool \"" + tool.name + "\" takes no arguments, found " + text);
    return text;
  }
  try {
    tool.parameters->parse_reply(text);
  } catch (const Error& e) {
    schema_error(at + " (tool \"" + tool.name + "\"): " + e.what());
  }
  return text;
}

void append_call(std::string& s, const ToolCall& c) {
  s += "{\"id\":";
  append_json_string(s, c.id);
  s += ",\"name\":";
  append_json_string(s, c.name);
  s += ",\"arguments\":";
  append_json_string(s, c.arguments);
  s += '}';
}

// One message of a history, checked: `at` names it in errors.
Message history_message(const Value& m, const std::string& at) {
  if (m.kind() != Kind::Dict) invalid(at + " must be an object, found " + kind_name(m.kind()));
  for (const auto& [k, _] : m.entries())
    if (k != "role" && k != "content" && k != "tool_calls" && k != "tool_call_id" && k != "name")
      invalid(at + " has an unknown key \"" + k + "\" (allowed: role, content, tool_calls, tool_call_id, name)");
  const Value* role = str_field(m, "role");
  if (!role) invalid(at + " needs a str \"role\"");
  const std::string& r = role->as_str();
  if (r != "system" && r != "user" && r != "assistant" && r != "tool")
    invalid(at + ": the role is \"" + r + "\"; a history holds system, user, assistant and tool messages");
  const Value* content = m.find("content");
  if (content && !content->is_null() && content->kind() != Kind::Str)
    invalid(at + ": the content must be str or null, found " + kind_name(content->kind()));
  Message out{r, content && !content->is_null() ? *content : Value::str("")};
  if (const Value* calls = m.find("tool_calls")) {
    if (r != "assistant") invalid(at + ": only an assistant message has tool_calls");
    if (calls->kind() != Kind::List) invalid(at + ": tool_calls must be a list");
    auto turn = std::make_shared<ToolTurn>();
    for (size_t i = 0; i < calls->size(); ++i) {
      const Value& c = calls->items()[i];
      const std::string ca = at + ".tool_calls[" + std::to_string(i) + "]";
      const Value *id = c.kind() == Kind::Dict ? str_field(c, "id") : nullptr,
                  *name = c.kind() == Kind::Dict ? str_field(c, "name") : nullptr,
                  *args = c.kind() == Kind::Dict ? str_field(c, "arguments") : nullptr;
      if (!id || !name || !args || c.size() != 3)
        invalid(ca + " must be {\"id\": str, \"name\": str, \"arguments\": str}");
      turn->calls.push_back(ToolCall{id->as_str(), name->as_str(), args->as_str()});
    }
    out.tool = std::move(turn);
  }
  if (r == "tool") {
    const Value *id = str_field(m, "tool_call_id"), *name = str_field(m, "name");
    if (!id || !name) invalid(at + ": a tool message needs str \"tool_call_id\" and \"name\"");
    auto turn = std::make_shared<ToolTurn>();
    turn->call_id = id->as_str();
    turn->name = name->as_str();
    out.tool = std::move(turn);
  } else if (m.find("tool_call_id") || m.find("name")) {
    invalid(at + ": only a tool message has tool_call_id and name");
  }
  return out;
}

Value parsed_history(const char* op, std::string_view history) {
  if (history.empty()) return Value::list({});
  Value v;
  try {
    v = from_json(history);
  } catch (const Error& e) {
    invalid(std::string(op) + ": the history is not JSON (give \"\" or the str af_tool_results made): " + e.what());
  }
  if (v.kind() != Kind::List) invalid(std::string(op) + ": the history must be a JSON array of messages, found " + kind_name(v.kind()));
  return v;
}

}  // namespace

Tools Tools::parse(const Value& list) {
  if (list.kind() != Kind::List || list.size() == 0)
    invalid("tools: give a non-empty list of {\"name\", \"description\", \"parameters\"} dicts");
  if (list.has_placeholder()) invalid("tools: the tools are static; they cannot hold traced values");
  Tools t;
  t.tree_ = list;
  for (size_t i = 0; i < list.size(); ++i) {
    const Value& d = list.items()[i];
    const std::string at = "tools[" + std::to_string(i) + "]";
    if (d.kind() != Kind::Dict) invalid(at + " must be a dict {\"name\", \"description\", \"parameters\"}");
    for (const auto& [k, _] : d.entries())
      if (k != "name" && k != "description" && k != "parameters")
        invalid(at + " has an unknown key \"" + k + "\" (allowed: name, description, parameters)");
    const Value* name = str_field(d, "name");
    if (!name || !valid_tool_name(name->as_str()))
      invalid(at + ": \"name\" must be 1 to 64 of A-Z a-z 0-9 _ -");
    if (t.find(name->as_str())) invalid(at + ": the name \"" + name->as_str() + "\" is taken by an earlier tool");
    Tool tool;
    tool.name = name->as_str();
    if (const Value* desc = d.find("description")) {
      if (desc->kind() != Kind::Str) invalid(at + ": \"description\" must be a str");
      tool.description = desc->as_str();
    }
    if (const Value* params = d.find("parameters")) {
      if (!container_root(*params))
        invalid(at + ": \"parameters\" must be a schema whose root is a dict of fields (the arguments object), "
                     "e.g. {\"query\": {\"type\": \"str\"}}");
      try {
        tool.parameters = schema_of(*params);
      } catch (const Error& e) {
        invalid(at + ".parameters: " + e.what());
      }
      tool.parameters_json = tool.parameters->json_schema();
    } else {
      tool.parameters_json = "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}";
    }
    t.tools_.push_back(std::move(tool));
  }
  return t;
}

const Tools::Tool* Tools::find(std::string_view name) const {
  for (const Tool& t : tools_)
    if (t.name == name) return &t;
  return nullptr;
}

void Tools::check_choice(const Value& choice) const {
  if (choice.is_null()) return;
  if (choice.kind() == Kind::Str) {
    const std::string& c = choice.as_str();
    if (c == "auto" || c == "required" || c == "none" || find(c)) return;
  }
  std::string known;
  for (const Tool& t : tools_) known += ", \"" + t.name + "\"";
  invalid("tool_choice must be \"auto\", \"required\", \"none\" or a tool's name (" + known.substr(2) + "), found " +
          to_json(choice));
}

void Tools::parse_reply(std::string_view reply, std::span<Value> out, const Value& choice) const {
  Value v;
  try {
    v = from_json(reply);
  } catch (const Error& e) {
    schema_error(std::string("the tool reply is not JSON: ") + e.what());
  }
  if (v.kind() != Kind::Dict) schema_error("the tool reply must be an object {\"content\", \"tool_calls\"}");
  const Value* content = v.find("content");
  if (content && !content->is_null() && content->kind() != Kind::Str)
    schema_error("the tool reply's content must be str or null");
  std::vector<ToolCall> calls;
  if (const Value* list = v.find("tool_calls"); list && !list->is_null()) {
    if (list->kind() != Kind::List) schema_error("the tool reply's tool_calls must be a list");
    for (size_t i = 0; i < list->size(); ++i) {
      const Value& c = list->items()[i];
      const std::string at = "tool call " + std::to_string(i);
      const Value* name = c.kind() == Kind::Dict ? str_field(c, "name") : nullptr;
      if (!name) schema_error(at + " has no str \"name\"");
      const Tool* tool = find(name->as_str());
      if (!tool) {
        std::string known;
        for (const Tool& t : tools_) known += (known.empty() ? "" : ", ") + t.name;
        schema_error(at + " calls an unknown tool " + json_quoted(name->as_str()) + " (the tools: " + known + ")");
      }
      const Value* args = c.find("arguments");
      std::string id;
      if (const Value* given = str_field(c, "id"); given && !given->as_str().empty()) id = given->as_str();
      else id = "call_" + std::to_string(i);
      calls.push_back(ToolCall{std::move(id), tool->name, checked_arguments(*tool, args ? *args : Value::str(""), at)});
    }
  }
  if (choice.kind() == Kind::Str) {  // what the call's tool_choice allows
    const std::string& c = choice.as_str();
    if (c == "none" && !calls.empty())
      schema_error("the model called tool \"" + calls[0].name + "\" though tool_choice is \"none\"");
    if (c != "auto" && c != "none" && calls.empty())
      schema_error("the model answered without calling " +
                   (c == "required" ? std::string("a tool") : "tool \"" + c + "\"") + " (tool_choice " + json_quoted(c) + ")");
    if (c != "auto" && c != "none" && c != "required")
      for (const ToolCall& call : calls)
        if (call.name != c) schema_error("the model called tool \"" + call.name + "\" though tool_choice is \"" + c + "\"");
  }
  const std::string text = content && content->kind() == Kind::Str ? content->as_str() : "";
  std::vector<Value> names, arguments;
  for (const ToolCall& c : calls) {
    names.push_back(Value::str(c.name));
    arguments.push_back(Value::str(c.arguments));
  }
  std::string turn = "{\"role\":\"assistant\",\"content\":";
  append_json_string(turn, text);
  if (!calls.empty()) {
    turn += ",\"tool_calls\":[";
    for (size_t i = 0; i < calls.size(); ++i) {
      if (i) turn += ',';
      append_call(turn, calls[i]);
    }
    turn += ']';
  }
  turn += '}';
  out[kArguments] = Value::list(std::move(arguments));
  out[kCalled] = Value::boolean(!calls.empty());
  out[kNames] = Value::list(std::move(names));
  out[kText] = Value::str(text);
  out[kTurn] = Value::str(std::move(turn));
}

std::shared_ptr<const Tools> tools_of(const Value& list) {
  static std::mutex mu;
  static std::unordered_map<uint64_t, std::vector<std::shared_ptr<const Tools>>> cache;
  const uint64_t h = list.hash();
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = cache.find(h); it != cache.end())
      for (const auto& t : it->second)
        if (t->tree() == list) return t;
  }
  auto t = std::make_shared<const Tools>(Tools::parse(list));
  std::lock_guard<std::mutex> lock(mu);
  if (cache.size() > 4096) cache.clear();  // bounded; re-parsing is cheap
  cache[h].push_back(t);
  return t;
}

const Value& tool_output_prototype() {
  // One leaf per output (names and arguments are list<str> leaves).
  static const Value v = Value::dict({{"called", Value::str("")},
                                      {"text", Value::str("")},
                                      {"names", Value::str("")},
                                      {"arguments", Value::str("")},
                                      {"turn", Value::str("")}});
  return v;
}

std::string tool_reply(std::string_view content, const std::vector<ToolCall>& calls) {
  std::string s = "{\"content\":";
  if (content.empty() && !calls.empty()) s += "null";
  else append_json_string(s, content);
  s += ",\"tool_calls\":[";
  for (size_t i = 0; i < calls.size(); ++i) {
    if (i) s += ',';
    append_call(s, calls[i]);
  }
  s += "]}";
  return s;
}

std::vector<Message> history_messages(const char* op, std::string_view history) {
  const Value v = parsed_history(op, history);
  std::vector<Message> out;
  out.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    out.push_back(history_message(v.items()[i], std::string(op) + ": history[" + std::to_string(i) + "]"));
  return out;
}

std::string history_with(std::string_view history, std::string_view turn, const Value& results) {
  const char* op = "tool_results";
  const Value h = parsed_history(op, history);
  for (size_t i = 0; i < h.size(); ++i)  // checked: a malformed history fails here, not at the next call
    history_message(h.items()[i], std::string(op) + ": history[" + std::to_string(i) + "]");
  Value t;
  try {
    t = from_json(turn);
  } catch (const Error& e) {
    invalid(std::string(op) + ": the turn is not JSON (give lm_tool_call's \"turn\"): " + e.what());
  }
  const Message m = history_message(t, std::string(op) + ": the turn");
  if (m.role != "assistant") invalid(std::string(op) + ": the turn must be an assistant message (lm_tool_call's \"turn\")");
  const size_t n_calls = m.tool ? m.tool->calls.size() : 0;
  if (results.kind() != Kind::List || results.size() != n_calls)
    invalid(std::string(op) + ": the turn made " + std::to_string(n_calls) + " tool call(s) but " +
            (results.kind() == Kind::List ? std::to_string(results.size()) + " result(s) were" : std::string("no list was")) +
            " given; give one str per call, in order");
  std::string s = "[";
  for (size_t i = 0; i < h.size(); ++i) {
    if (i) s += ',';
    append_json(s, h.items()[i]);
  }
  if (s.size() > 1) s += ',';
  append_json(s, t);
  for (size_t i = 0; i < n_calls; ++i) {
    const Value& r = results.items()[i];
    if (r.kind() != Kind::Str)
      invalid(std::string(op) + ": result " + std::to_string(i) + " is " + kind_name(r.kind()) + ", expected str");
    const ToolCall& c = m.tool->calls[i];
    s += ",{\"role\":\"tool\",\"tool_call_id\":";
    append_json_string(s, c.id);
    s += ",\"name\":";
    append_json_string(s, c.name);
    s += ",\"content\":";
    append_json_string(s, r.as_str());
    s += '}';
  }
  s += ']';
  return s;
}

void append_tool_parts(std::string& s, const Message& m) {
  if (!m.tool) return;
  if (m.role == "tool") {
    s += ",\"tool_call_id\":";
    append_json_string(s, m.tool->call_id);
    s += ",\"name\":";
    append_json_string(s, m.tool->name);
    return;
  }
  s += ",\"tool_calls\":[";
  for (size_t i = 0; i < m.tool->calls.size(); ++i) {
    if (i) s += ',';
    append_call(s, m.tool->calls[i]);
  }
  s += ']';
}

}  // namespace af::lm
