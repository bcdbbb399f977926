#!/usr/bin/env python3
"""A local chat-completions server with fault injection, for libaf's tests.

Speaks three wire formats, told apart by the path:
  POST <base>/chat/completions  OpenAI-compatible chat completions
  POST /v1/messages             Anthropic's Messages API
  POST /api/chat                Ollama's native chat API
The Anthropic and Ollama paths check what they receive as strictly as the
real servers do, or more, so a client that sends the wrong format fails:
Anthropic wants the anthropic-version header 2023-06-01, an x-api-key
header and no Authorization header, "max_tokens", the system prompt in
"system" (a "system" role among the messages is a 400) and no field the API
does not know (a "seed", a "response_format": 400 "Extra inputs are not
permitted"); Ollama wants "stream" set explicitly to true or false
(Ollama streams unless told not to), sampling params inside "options" under
Ollama's names (no "max_tokens", no top-level "temperature"), and "format"
a JSON Schema object or "json". Their errors have those APIs' shapes
({"type": "error", "error": {"type", "message"}} and {"error": "..."}).

The model name picks the behaviour (counters are kept per model + last
message, so tests do not disturb each other); every format serves these
unless said otherwise:

  ok              200, content "<model>|<last message content>"
  429xN           N times 429 with Retry-After: 1, then ok
  retry-after:V   once 429 with Retry-After: V (any text), then ok
  500xN           N times 500, then ok
  500always       always 500
  slow            answers after 3 s (longer than the tests' timeouts)
  hang            answers after 30 s (for cancellation)
  malformed       200 with a body that is not JSON
  nocontent       200 with JSON lacking choices[0].message.content
  refusal         200, content null and message.refusal "not this one"
  schema-bad      200, content {"answer": "x", "score": 99}
  schema-ok       200, content {"answer": "fine", "score": 7}
  show-request    200, content = the request body it received
  show-auth       200, content = the Authorization header ("" if none)
  huge-body       200 with a 65 MiB body (over libaf's 64 MiB reply cap)
  echo-auth-error 400 with a plain-text body echoing the Authorization header
                  between terminal escapes and other control characters
  show-format     200, content {"answer": <the request's response_format as
                  JSON text>, "score": 1} (valid for the tests' schema)
  chaos           a fault drawn at random for each attempt (seeded by the
                  model, content and attempt, so a run repeats), in 105
                  parts: ok 40, 429 (Retry-After: 1), 500, a connection
                  reset, a body sent slowly, a garbage body, a body cut
                  short, a hang of 5 s (10 each), an answer whose usage
                  claims 2^63-1 tokens each way (5)
  show-messages   200, content {"answer": <the request's messages as JSON
                  text>, "score": 1}
  html            200 with an HTML page (Content-Type text/html)
  schema-fix      schema-bad, then (once the request carries a correction
                  turn: an assistant message) the schema-ok reply
  schema-huge-bad schema-bad with a 1 MiB "answer" (non-ASCII characters)
  529xN           N times 529 (Anthropic's "overloaded"), then ok
  bad-request     400 with the format's error body, its message holding a
                  terminal escape
  error-200       200 whose body is the format's error object (Anthropic and
                  Ollama)
  usage-huge      ok, with a usage block claiming 10^9 prompt tokens
  usage-max       ok, with a usage block claiming 2^63-1 prompt and
                  completion tokens
  latency-MS      ok, after MS milliseconds (a provider's latency)
  schema-greedy   a greedy model: schema-bad while the request's
                  "temperature" is 0 or absent (whatever the messages say),
                  schema-ok once it is above 0

The OpenAI-only models: chaos, refusal (Anthropic has its own: content []
with stop_reason "refusal"), usage-huge, usage-max. Where a model shows
what it received (show-format), Anthropic shows the "system" field and
Ollama the "format" field; show-auth shows the x-api-key header for
Anthropic, and echo-auth-error echoes it.

An Anthropic reply has a thinking block and the text in two text blocks
(the client must join the text blocks only); usage is input_tokens =
len(model), output_tokens = len(reply). An Ollama reply has the counts in
prompt_eval_count and eval_count.

A request with "stream": true gets its reply in pieces of 4 characters:
OpenAI as server-sent events (a finish_reason chunk, a usage chunk, then
"data: [DONE]"); Anthropic as its events (message_start with the input
tokens, a thinking block's delta, the text block's text_delta events, a
ping, message_delta with the output tokens, message_stop); Ollama as
newline-delimited JSON (Content-Type application/x-ndjson; the last line
"done": true with the counts). These models misbehave mid-stream, in each
format's own way:

  stream-cutxN    N times: two pieces, then the connection closes (no end)
  stream-garbage  one piece, then an event that is not JSON
  stream-error    one piece, then an error ({"error": {...}} as an event;
                  Anthropic's "error" event, overloaded_error; Ollama's
                  {"error": "..."} line)
  stream-forever  a piece every 0.1 s for 30 s (never ends in a test)
  stream-html     200 with an HTML page (not an event stream)

A request that offers tools ("tools": OpenAI's and Ollama's function
form, Anthropic's input_schema form) is answered by a script, whatever the
model (the faults above that come before an answer still apply): while the
conversation holds no tool result, a call of the FIRST tool with arguments
made from its JSON Schema (per property: "x" for a string, the minimum or 1
for a number, true for a boolean, the first enum value, an object's own
properties); once it does, the text "done: " + the last tool result. The
tool turns are checked as strictly as the real APIs do, or more (a 400 in
the format's error shape): OpenAI's tool messages answer, by tool_call_id,
the calls of the assistant turn just before them, all of them;
Anthropic's tool_result blocks come first in the user message right after
the assistant's tool_use turn, one per tool_use_id, and roles alternate;
Ollama's tool messages name a tool the turn before called ("tool_name").
The call comes in each format's form: OpenAI tool_calls with arguments as
a string (content null; streamed as a first delta with the id and name,
then the arguments in at least 2 fragments), Anthropic a text block and a
tool_use block (streamed as content_block_start and input_json_delta
pieces), Ollama tool_calls with arguments as an object and no ids (whole in
one line when streamed). Models for tool calling:

  bad-args        the call's arguments lack the first required property,
                  until the request carries a correction turn (a plain
                  assistant message): then valid ones
  bad-tool        a call of the tool "no_such_tool", until then
  hostile-entry   a malformed call: OpenAI and Ollama a tool_calls entry
                  that is not an object, Anthropic a tool_use id that is
                  not a string
  hostile-noname  a call without its name
  hostile-args    arguments that are neither a string nor an object (42)

Images (content parts) are checked in each format's form, strictly, a
400 in the format's error shape otherwise: OpenAI's content lists of
{"type": "text", "text"} and {"type": "image_url", "image_url": {"url"}}
parts (images in user messages only; a URL https://, http:// or
data:image/<png|jpeg|gif|webp>;base64,<data>), Anthropic's image blocks
{"type": "image", "source": {"type": "url", "url": http(s)} or {"type":
"base64", "media_type": one of those four, "data"}} (in user messages
only), Ollama's "images" list of base64 strings on a message. Base64 must
decode, and bytes of a known image format must match the media type said.
A request with images that the other rules answer with the plain reply
(ok, latency-MS, ...: not tools, not a model's own content) gets
"<model>|<last message's text>|saw N image(s): <kinds>", the kinds in
order: "url" for an image by http(s) URL, else the image's format (png,
jpeg, gif, webp: from its bytes when known, else its media type; "data"
for Ollama's unknown bytes). The last message's text is its text parts
(or blocks) joined by blank lines.

GET /stats?key=<model>|<content> returns {"attempts": N, "aborted": N,
"times": [seconds since the server started, per attempt], "max_body": the
largest request body received for <model>, in bytes}. GET /requests
returns {"total": N}: every chat request received, of any model and format.
Prints "PORT <n>" on stdout once listening on 127.0.0.1 (port 0 = any free
port). Bounded: exits after --lifetime seconds, when its parent process
goes away, or on POST /shutdown.
"""
import argparse
import base64
import binascii
import json
import os
import random
import socket
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

LOCK = threading.Lock()
ATTEMPTS = {}
ABORTED = {}
TIMES = {}
MAX_BODY = {}  # per model: the largest request body received
START = time.time()
TOTAL = [0]  # chat completion requests of any model


def count(key):
    with LOCK:
        TOTAL[0] += 1
        ATTEMPTS[key] = ATTEMPTS.get(key, 0) + 1
        TIMES.setdefault(key, []).append(round(time.time() - START, 3))
        return ATTEMPTS[key]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet
        pass

    def send(self, status, body, headers=None, ctype="application/json"):
        data = body.encode("utf-8") if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        try:
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    ANTHROPIC_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
                             429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}

    def error_body(self, status, message):
        """The format's error body for an HTTP error."""
        if self.dialect == "anthropic":
            kind = self.ANTHROPIC_ERROR_TYPES.get(status, "api_error")
            return json.dumps({"type": "error", "error": {"type": kind, "message": message}})
        if self.dialect == "ollama":
            return json.dumps({"error": message})
        return json.dumps({"error": {"message": message}})

    def fail_with(self, status, message, headers=None):
        self.send(status, self.error_body(status, message), headers)

    def reply(self, model, content):
        if self.dialect == "anthropic":
            self.anthropic_reply(model, content)
            return
        if self.dialect == "ollama":
            self.ollama_reply(model, content)
            return
        if self.streaming:
            self.stream_reply(model, content)
            return
        body = {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "model": model,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            # Deterministic and different per request, so a client's totals
            # can be checked: the model name's length in, the reply's out.
            "usage": self.usage(model, content),
        }
        self.send(200, json.dumps(body))

    def usage(self, model, content):
        if model == "usage-huge":
            return {"prompt_tokens": 10**9, "completion_tokens": 1, "total_tokens": 10**9 + 1}
        if model == "usage-max":
            return {"prompt_tokens": 2**63 - 1, "completion_tokens": 2**63 - 1, "total_tokens": 2**63 - 1}
        return {"prompt_tokens": len(model), "completion_tokens": len(content),
                "total_tokens": len(model) + len(content)}

    def anthropic_usage(self, model, content):
        return {"input_tokens": len(model), "output_tokens": len(content)}

    def anthropic_reply(self, model, content):
        if self.streaming:
            self.anthropic_stream(model, content)
            return
        half = len(content) // 2
        blocks = [{"type": "thinking", "thinking": "not the reply", "signature": "sig"}]
        blocks += [{"type": "text", "text": t} for t in (content[:half], content[half:]) if t]
        self.send(200, json.dumps({"id": "msg_test", "type": "message", "role": "assistant", "model": model,
                                   "content": blocks, "stop_reason": "end_turn", "stop_sequence": None,
                                   "usage": self.anthropic_usage(model, content)}))

    def sse(self, kind, obj):
        """One Anthropic event; False if the client went away."""
        return self.write(("event: " + kind + "\ndata: " +
                           (obj if isinstance(obj, str) else json.dumps(obj)) + "\n\n"))

    def anthropic_start(self, model):
        self.start_stream()
        self.sse("message_start", {"type": "message_start", "message": {
            "id": "msg_test", "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "usage": {"input_tokens": len(model), "output_tokens": 1}}})
        self.sse("content_block_start", {"type": "content_block_start", "index": 0,
                                         "content_block": {"type": "thinking", "thinking": ""}})
        self.sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                         "delta": {"type": "thinking_delta", "thinking": "not the reply"}})
        self.sse("content_block_stop", {"type": "content_block_stop", "index": 0})
        return self.sse("content_block_start", {"type": "content_block_start", "index": 1,
                                                "content_block": {"type": "text", "text": ""}})

    def anthropic_piece(self, piece):
        return self.sse("content_block_delta", {"type": "content_block_delta", "index": 1,
                                                "delta": {"type": "text_delta", "text": piece}})

    def anthropic_stream(self, model, content):
        self.anthropic_start(model)
        for i in range(0, len(content), 4):
            if not self.anthropic_piece(content[i:i + 4]):
                return
            if i == 4:
                self.sse("ping", {"type": "ping"})
        self.sse("content_block_stop", {"type": "content_block_stop", "index": 1})
        self.sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn",
                                                                      "stop_sequence": None},
                                   "usage": {"output_tokens": len(content)}})
        self.sse("message_stop", {"type": "message_stop"})

    def ollama_line(self, model, piece, done=False, counts=None):
        obj = {"model": model, "created_at": "2026-01-01T00:00:00Z",
               "message": {"role": "assistant", "content": piece}, "done": done}
        if done:
            obj.update({"done_reason": "stop", "total_duration": 1000, "prompt_eval_count": counts[0],
                        "eval_count": counts[1]})
        return obj

    def ollama_reply(self, model, content):
        counts = (len(model), len(content))
        if not self.streaming:
            self.send(200, json.dumps(self.ollama_line(model, content, True, counts)))
            return
        self.start_stream("application/x-ndjson")
        for i in range(0, len(content), 4):
            if not self.write(json.dumps(self.ollama_line(model, content[i:i + 4])) + "\n"):
                return
        self.write(json.dumps(self.ollama_line(model, "", True, counts)) + "\n")

    def write(self, text):
        """Writes and flushes; False if the client went away."""
        try:
            self.wfile.write(text.encode("utf-8"))
            self.wfile.flush()
            return True
        except (BrokenPipeError, ConnectionResetError):
            return False

    def start_stream(self, ctype="text/event-stream"):
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def event(self, obj):
        """Sends one event; False if the client went away."""
        data = obj if isinstance(obj, str) else json.dumps(obj)
        try:
            self.wfile.write(("data: " + data + "\n\n").encode("utf-8"))
            self.wfile.flush()
            return True
        except (BrokenPipeError, ConnectionResetError):
            return False

    def chunk(self, model, piece=None, finish=None):
        delta = {} if piece is None else {"content": piece}
        return {"id": "chatcmpl-test", "object": "chat.completion.chunk", "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    def stream_reply(self, model, content):
        self.start_stream()
        self.event(self.chunk(model, ""))  # the role chunk servers send first
        for i in range(0, len(content), 4):
            if not self.event(self.chunk(model, content[i:i + 4])):
                return
        self.event(self.chunk(model, None, "stop"))
        self.event({"id": "chatcmpl-test", "object": "chat.completion.chunk", "model": model,
                    "choices": [], "usage": self.usage(model, content)})
        self.event("[DONE]")

    def stream_fault(self, model, n, key):
        """The mid-stream faults; False if the model is not one of them."""
        if self.dialect == "anthropic":
            return self.anthropic_stream_fault(model, n, key)
        if self.dialect == "ollama":
            return self.ollama_stream_fault(model, n, key)
        if model.startswith("stream-cutx") and n <= int(model[len("stream-cutx"):]):
            self.start_stream()
            self.event(self.chunk(model, "part"))
            self.event(self.chunk(model, "ial "))
            return True  # the connection closes: no finish_reason, no [DONE]
        if model == "stream-garbage":
            self.start_stream()
            self.event(self.chunk(model, "text"))
            self.event("{this is not json")
            return True
        if model == "stream-error":
            self.start_stream()
            self.event(self.chunk(model, "text"))
            self.event({"error": {"message": "the model crashed", "type": "server_error"}})
            return True
        if model == "stream-forever":
            self.start_stream()
            end = time.time() + 30
            while time.time() < end:
                if not self.event(self.chunk(model, "more ")):
                    with LOCK:
                        ABORTED[key] = ABORTED.get(key, 0) + 1
                    return True
                time.sleep(0.1)
            return True
        if model == "stream-html":
            self.send(200, "<html><body>Gateway says hello</body></html>", ctype="text/html")
            return True
        return False

    def anthropic_stream_fault(self, model, n, key):
        if model.startswith("stream-cutx") and n <= int(model[len("stream-cutx"):]):
            self.anthropic_start(model)
            self.anthropic_piece("part")
            self.anthropic_piece("ial ")
            return True  # the connection closes: no message_stop
        if model == "stream-garbage":
            self.anthropic_start(model)
            self.anthropic_piece("text")
            self.sse("content_block_delta", "{this is not json")
            return True
        if model == "stream-error":
            self.anthropic_start(model)
            self.anthropic_piece("text")
            self.sse("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
            return True
        if model == "stream-forever":
            self.anthropic_start(model)
            return self.forever(key, lambda: self.anthropic_piece("more "))
        if model == "stream-html":
            self.send(200, "<html><body>Gateway says hello</body></html>", ctype="text/html")
            return True
        return False

    def ollama_stream_fault(self, model, n, key):
        def line(piece):
            return self.write(json.dumps(self.ollama_line(model, piece)) + "\n")
        if model.startswith("stream-cutx") and n <= int(model[len("stream-cutx"):]):
            self.start_stream("application/x-ndjson")
            line("part")
            line("ial ")
            return True  # the connection closes: no "done": true line
        if model == "stream-garbage":
            self.start_stream("application/x-ndjson")
            line("text")
            self.write("{this is not json\n")
            return True
        if model == "stream-error":
            self.start_stream("application/x-ndjson")
            line("text")
            self.write(json.dumps({"error": "the model crashed"}) + "\n")
            return True
        if model == "stream-forever":
            self.start_stream("application/x-ndjson")
            return self.forever(key, lambda: line("more "))
        if model == "stream-html":
            self.send(200, "<html><body>Gateway says hello</body></html>", ctype="text/html")
            return True
        return False

    def forever(self, key, piece):
        """A piece every 0.1 s for 30 s, or until the client goes away."""
        end = time.time() + 30
        while time.time() < end:
            if not piece():
                with LOCK:
                    ABORTED[key] = ABORTED.get(key, 0) + 1
                return True
            time.sleep(0.1)
        return True

    def anthropic_request(self, req):
        """Why req (and the headers) are not a Messages API request, or None."""
        version = self.headers.get("anthropic-version")
        if version != "2023-06-01":
            return 400, "anthropic-version: expected 2023-06-01, found %r" % version
        if not self.headers.get("x-api-key"):
            return 401, "x-api-key header is required"
        if self.headers.get("Authorization") is not None:
            return 400, "the Authorization header is not the Messages API's (use x-api-key)"
        if not isinstance(req, dict):
            return 400, "the body is not an object"
        known = {"model", "messages", "max_tokens", "system", "stream", "temperature", "top_p", "top_k",
                 "stop_sequences", "metadata", "tools", "tool_choice"}
        for k in req:
            if k not in known:
                return 400, k + ": Extra inputs are not permitted"
        if not isinstance(req.get("model"), str):
            return 400, "model: Field required"
        if not isinstance(req.get("max_tokens"), int) or req["max_tokens"] < 1:
            return 400, "max_tokens: Field required (an integer >= 1)"
        if "system" in req and not isinstance(req["system"], str):
            return 400, "system: Input should be a string"
        if "stream" in req and not isinstance(req["stream"], bool):
            return 400, "stream: Input should be a boolean"
        if "stop_sequences" in req and not (isinstance(req["stop_sequences"], list) and
                                            all(isinstance(x, str) for x in req["stop_sequences"])):
            return 400, "stop_sequences: Input should be a list of strings"
        msgs = req.get("messages")
        if not isinstance(msgs, list) or not msgs:
            return 400, "messages: at least one message is required"
        for i, m in enumerate(msgs):
            if not isinstance(m, dict) or m.get("role") not in ("user", "assistant"):
                return 400, "messages.%d.role: Unexpected role %r (the system prompt goes in \"system\")" % (
                    i, m.get("role") if isinstance(m, dict) else m)
            if not isinstance(m.get("content"), (str, list)):
                return 400, "messages.%d.content: Field required" % i
        return None

    def ollama_request(self, req):
        """Why req is not an /api/chat request (as libaf must send it), or None."""
        if not isinstance(req, dict):
            return 400, "the body is not an object"
        known = {"model", "messages", "stream", "format", "options", "keep_alive", "tools", "think"}
        for k in req:
            if k not in known:
                return 400, "unknown field %r (sampling params go in \"options\")" % k
        if not isinstance(req.get("model"), str):
            return 400, "model is required"
        if not isinstance(req.get("stream"), bool):
            return 400, "\"stream\" must be set to true or false (Ollama streams unless told not to)"
        if "format" in req and not (req["format"] == "json" or
                                    (isinstance(req["format"], dict) and "type" in req["format"])):
            return 400, "format must be \"json\" or a JSON Schema object"
        opts = req.get("options", {})
        if not isinstance(opts, dict):
            return 400, "options must be an object"
        known_opts = {"num_predict", "temperature", "top_p", "top_k", "min_p", "seed", "stop", "num_ctx",
                      "repeat_penalty", "repeat_last_n", "presence_penalty", "frequency_penalty"}
        for k in opts:
            if k not in known_opts:
                return 400, "options: unknown option %r" % k
        if "stop" in opts and not isinstance(opts["stop"], list):
            return 400, "options.stop must be a list"
        msgs = req.get("messages")
        if not isinstance(msgs, list) or not msgs:
            return 400, "messages are required"
        for i, m in enumerate(msgs):
            if not isinstance(m, dict) or m.get("role") not in ("system", "user", "assistant", "tool") or \
                    not isinstance(m.get("content"), str):
                return 400, "messages[%d] is not a {role, content} message" % i
        return None

    # ---- images --------------------------------------------------------------

    IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")

    @staticmethod
    def sniff(data):
        """The format of base64 data's bytes ("png", "jpeg", "gif", "webp",
        or None when not one of them); False if data is not base64."""
        if not isinstance(data, str) or not data:
            return False
        try:
            raw = base64.b64decode(data, validate=True)
        except (ValueError, binascii.Error):
            return False
        if not raw:
            return False
        for magic, kind in ((b"\x89PNG\r\n\x1a\n", "png"), (b"\xff\xd8\xff", "jpeg"), (b"GIF8", "gif")):
            if raw.startswith(magic):
                return kind
        if raw[:4] == b"RIFF" and raw[8:12] == b"WEBP":
            return "webp"
        return None

    def base64_image(self, media_type, data):
        """(kind, None) for base64 image data said to be of media_type, or
        (None, why not)."""
        if media_type not in self.IMAGE_TYPES:
            return None, "media_type: Input should be %s, found %r" % (" or ".join(self.IMAGE_TYPES), media_type)
        kind = self.sniff(data)
        if kind is False:
            return None, "the image data is not valid base64"
        if kind is not None and "image/" + kind != media_type:
            return None, "the image does not match the provided media type %s (its bytes are %s)" % (media_type, kind)
        return kind or media_type[len("image/"):], None

    def url_image(self, url, data_ok):
        """(kind, None) for an image URL (http(s), or when data_ok a data:
        URL of base64 image data), or (None, why not)."""
        if not isinstance(url, str):
            return None, "the url must be a string"
        if url.startswith("https://") or url.startswith("http://"):
            return "url", None
        head, sep, data = url.partition(";base64,")
        if data_ok and url.startswith("data:") and sep:
            return self.base64_image(head[len("data:"):], data)
        return None, "the url must be http(s)%s, found %r" % (
            " or data:<image media type>;base64,<data>" if data_ok else "", url[:40])

    def image_request(self, req):
        """Checks the images of req in the format's form, noting their kinds
        in self.images; (400, why) when one is malformed, else None."""
        msgs = req.get("messages") if isinstance(req, dict) else None
        if not isinstance(msgs, list):
            return None  # the format's own checks say so
        for i, m in enumerate(msgs):
            if not isinstance(m, dict):
                continue
            wrong = (self.anthropic_images(m) if self.dialect == "anthropic" else
                     self.ollama_images(m) if self.dialect == "ollama" else self.openai_images(m))
            if wrong:
                return 400, ("messages[%d]" if self.dialect == "ollama" else "messages.%d") % i + wrong
        return None

    def openai_images(self, m):
        content = m.get("content")
        if not isinstance(content, list):
            return None
        if not content:
            return ".content: a list of parts must not be empty"
        for j, part in enumerate(content):
            where = ".content.%d" % j
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "text":
                if set(part) != {"type", "text"} or not isinstance(part["text"], str):
                    return where + ": a text part is {type, text: str}, found %s" % json.dumps(part)[:200]
            elif kind == "image_url":
                if m.get("role") != "user":
                    return where + (": image URLs are only allowed for messages with role 'user', but this "
                                    "message with role %r contains an image URL" % m.get("role"))
                iu = part.get("image_url")
                if set(part) != {"type", "image_url"} or not isinstance(iu, dict) or \
                        not set(iu) <= {"url", "detail"} or "url" not in iu:
                    return where + ": an image_url part is {type, image_url: {url, detail?}}, found %s" % (
                        json.dumps(part)[:200])
                seen, why = self.url_image(iu["url"], True)
                if why:
                    return where + ".image_url.url: " + why
                self.images.append(seen)
            else:
                return where + ": unknown part %s (text or image_url)" % json.dumps(part)[:200]
        return None

    def anthropic_images(self, m):
        content = m.get("content")
        if not isinstance(content, list):
            return None
        for j, b in enumerate(content):
            if not isinstance(b, dict) or b.get("type") != "image":
                continue
            where = ".content.%d" % j
            if m.get("role") != "user":
                return where + ": image blocks are only allowed in user messages"
            source = b.get("source")
            if set(b) != {"type", "source"} or not isinstance(source, dict):
                return where + ": an image block is {type, source}, found %s" % json.dumps(b)[:200]
            if source.get("type") == "url":
                if set(source) != {"type", "url"}:
                    return where + ".source: a url source is {type, url}"
                seen, why = self.url_image(source["url"], False)
            elif source.get("type") == "base64":
                if set(source) != {"type", "media_type", "data"}:
                    return where + ".source: a base64 source is {type, media_type, data}"
                seen, why = self.base64_image(source["media_type"], source["data"])
            else:
                return where + ".source.type: Input should be 'base64' or 'url', found %r" % source.get("type")
            if why:
                return where + ".source: " + why
            self.images.append(seen)
        return None

    def ollama_images(self, m):
        if "images" not in m:
            return None
        images = m["images"]
        if not isinstance(images, list) or not images:
            return ".images: a non-empty list of base64 strings is required"
        for j, data in enumerate(images):
            kind = self.sniff(data)
            if kind is False:
                return ".images[%d]: illegal base64 data (images are base64 strings, not URLs)" % j
            self.images.append(kind or "data")
        return None

    # ---- tools ---------------------------------------------------------------

    def tool_request(self, req):
        """Why the tools or tool turns of req are not the format's, or None
        (a request without tools is the other checks' alone)."""
        if not isinstance(req, dict) or "tools" not in req:
            return None
        tools = req["tools"]
        if not isinstance(tools, list) or not tools:
            return "tools: a non-empty list is required"
        for i, t in enumerate(tools):
            wrong = (self.anthropic_tool(t) if self.dialect == "anthropic" else self.function_tool(t))
            if wrong:
                return "tools.%d: %s" % (i, wrong)
        msgs = req.get("messages")
        if not isinstance(msgs, list):
            return None  # the format's own check says so
        if self.dialect == "anthropic":
            return self.anthropic_turns(msgs)
        if self.dialect == "ollama":
            return self.ollama_turns(msgs)
        return self.openai_turns(msgs)

    @staticmethod
    def object_schema(schema):
        return isinstance(schema, dict) and schema.get("type") == "object" and \
            isinstance(schema.get("properties", {}), dict)

    def function_tool(self, t):
        """OpenAI's and Ollama's {"type": "function", "function": {...}}."""
        if not isinstance(t, dict) or set(t) != {"type", "function"} or t["type"] != "function":
            return "expected {\"type\": \"function\", \"function\": {...}}, found %s" % json.dumps(t)
        fn = t["function"]
        if not isinstance(fn, dict) or not set(fn) <= {"name", "description", "parameters"} or \
                not isinstance(fn.get("name"), str) or not self.object_schema(fn.get("parameters")):
            return "function must be {name, description, parameters: an object schema}, found %s" % json.dumps(fn)
        return None

    def anthropic_tool(self, t):
        if not isinstance(t, dict) or not set(t) <= {"name", "description", "input_schema"} or \
                not isinstance(t.get("name"), str) or not self.object_schema(t.get("input_schema")):
            return "expected {name, description, input_schema: an object schema}, found %s" % json.dumps(t)
        return None

    @staticmethod
    def json_object_text(text):
        try:
            return isinstance(json.loads(text), dict)
        except (TypeError, ValueError):
            return False

    def openai_turns(self, msgs):
        """Assistant tool_calls, each answered by the tool messages right after."""
        pending = set()  # the ids the tool messages must still answer
        for i, m in enumerate(msgs):
            if not isinstance(m, dict):
                return "messages.%d is not an object" % i
            role = m.get("role")
            if role == "tool":
                if set(m) != {"role", "tool_call_id", "content"} or not isinstance(m["content"], str):
                    return "messages.%d: a tool message is {role, tool_call_id, content: str}" % i
                if m["tool_call_id"] not in pending:
                    return ("messages.%d: tool_call_id %r does not answer a tool call of the assistant message "
                            "before it" % (i, m["tool_call_id"]))
                pending.discard(m["tool_call_id"])
                continue
            if pending:
                return ("messages.%d: an assistant message with 'tool_calls' must be followed by tool messages "
                        "responding to each 'tool_call_id' (missing %s)" % (i, sorted(pending)))
            if "tool_calls" not in m:
                continue
            calls = m["tool_calls"]
            if role != "assistant" or not isinstance(calls, list) or not calls:
                return "messages.%d: tool_calls must be a non-empty list on an assistant message" % i
            if m.get("content") is not None and not isinstance(m["content"], str):
                return "messages.%d: content must be a string or null" % i
            for j, c in enumerate(calls):
                fn = c.get("function") if isinstance(c, dict) else None
                if not isinstance(c, dict) or set(c) != {"id", "type", "function"} or c["type"] != "function" or \
                        not isinstance(c["id"], str) or not isinstance(fn, dict) or set(fn) != {"name", "arguments"} or \
                        not isinstance(fn["name"], str) or not isinstance(fn["arguments"], str) or \
                        not self.json_object_text(fn["arguments"]):
                    return ("messages.%d.tool_calls.%d: expected {id, type: \"function\", function: {name, "
                            "arguments: the JSON text of an object}}, found %s" % (i, j, json.dumps(c)))
                pending.add(c["id"])
        if pending:
            return "the tool calls %s are not answered" % sorted(pending)
        return None

    def anthropic_turns(self, msgs):
        """Alternating roles; tool_result blocks first in the user turn right
        after the tool_use turn, one per tool_use id."""
        uses = []  # the tool_use ids of the assistant turn before
        for i, m in enumerate(msgs):
            if not isinstance(m, dict):
                return "messages.%d is not an object" % i
            role = m.get("role")
            want = "user" if i % 2 == 0 else "assistant"
            if role != want:
                return "messages.%d: roles must alternate between user and assistant, starting with user" % i
            blocks = m.get("content")
            if not isinstance(blocks, list):
                blocks = []
            results = []
            for j, b in enumerate(blocks):
                where = "messages.%d.content.%d" % (i, j)
                kind = b.get("type") if isinstance(b, dict) else None
                if kind == "text":
                    if set(b) != {"type", "text"} or not isinstance(b["text"], str):
                        return where + ": a text block is {type, text: str}"
                elif kind == "image" and role == "user":
                    pass  # checked by image_request
                elif kind == "tool_use" and role == "assistant":
                    if set(b) != {"type", "id", "name", "input"} or not isinstance(b["id"], str) or \
                            not isinstance(b["name"], str) or not isinstance(b["input"], dict):
                        return where + ": a tool_use block is {type, id, name, input: object}"
                elif kind == "tool_result" and role == "user":
                    if set(b) != {"type", "tool_use_id", "content"} or not isinstance(b["tool_use_id"], str) or \
                            not isinstance(b["content"], (str, list)):
                        return where + ": a tool_result block is {type, tool_use_id, content}"
                    if j != len(results):
                        return where + ": tool_result blocks must come first in the user message"
                    results.append(b["tool_use_id"])
                else:
                    return where + ": unexpected block %s in a %s message" % (json.dumps(b), role)
            if role == "user":
                if sorted(results) != sorted(uses):
                    return ("messages.%d: the tool_use ids %s of the turn before need one tool_result block "
                            "each, found %s" % (i, uses, results))
                uses = []
            else:
                uses = [b["id"] for b in blocks if b.get("type") == "tool_use"]
        if uses:
            return "the tool_use ids %s are not answered" % uses
        return None

    def ollama_turns(self, msgs):
        """Assistant tool_calls (arguments objects); tool messages name a tool called."""
        called = []
        for i, m in enumerate(msgs):
            if not isinstance(m, dict):
                return "messages[%d] is not an object" % i
            role = m.get("role")
            if role == "tool":
                if set(m) != {"role", "content", "tool_name"} or not isinstance(m["tool_name"], str):
                    return "messages[%d]: a tool message is {role, content, tool_name}" % i
                if m["tool_name"] not in called:
                    return "messages[%d]: tool_name %r was not called by the turn before" % (i, m["tool_name"])
                continue
            called = []
            if "tool_calls" not in m:
                continue
            calls = m["tool_calls"]
            if role != "assistant" or not isinstance(calls, list) or not calls:
                return "messages[%d]: tool_calls must be a non-empty list on an assistant message" % i
            for j, c in enumerate(calls):
                fn = c.get("function") if isinstance(c, dict) else None
                if not isinstance(c, dict) or set(c) != {"function"} or not isinstance(fn, dict) or \
                        set(fn) != {"name", "arguments"} or not isinstance(fn["name"], str) or \
                        not isinstance(fn["arguments"], dict):
                    return ("messages[%d].tool_calls[%d]: expected {function: {name, arguments: an object}}, "
                            "found %s" % (i, j, json.dumps(c)))
                called.append(fn["name"])
        return None

    def tool_results(self, msgs):
        """The contents of the conversation's tool results, in order."""
        out = []
        for m in msgs:
            if self.dialect == "anthropic":
                for b in m["content"] if isinstance(m["content"], list) else []:
                    if b.get("type") == "tool_result":
                        c = b["content"]
                        out.append(c if isinstance(c, str) else "".join(x.get("text", "") for x in c))
            elif m.get("role") == "tool":
                out.append(m["content"])
        return out

    def corrected(self, msgs):
        """Whether a correction turn (a plain assistant message) was sent."""
        for m in msgs:
            if m.get("role") != "assistant":
                continue
            if self.dialect == "anthropic":
                if not any(isinstance(b, dict) and b.get("type") == "tool_use"
                           for b in (m["content"] if isinstance(m["content"], list) else [])):
                    return True
            elif "tool_calls" not in m:
                return True
        return False

    @staticmethod
    def example(schema):
        """A value valid for a JSON Schema, made simply."""
        if not isinstance(schema, dict):
            return None
        if "enum" in schema:
            return schema["enum"][0]
        kind = schema.get("type")
        if kind == "string":
            return "x" * max(1, schema.get("minLength", 1))
        if kind in ("integer", "number"):
            return schema.get("minimum", 1)
        if kind == "boolean":
            return True
        if kind == "object":
            return {k: Handler.example(v) for k, v in schema.get("properties", {}).items()}
        if kind == "array":
            return []
        return None

    def tool_answer(self, model, req):
        msgs = req["messages"]
        results = self.tool_results(msgs)
        if results:
            self.reply(model, "done: " + results[-1])
            return
        tool = req["tools"][0]
        if self.dialect == "anthropic":
            name, schema = tool["name"], tool["input_schema"]
        else:
            name, schema = tool["function"]["name"], tool["function"]["parameters"]
        args = self.example(schema)
        if not self.corrected(msgs):
            if model == "bad-args" and schema.get("required"):
                del args[schema["required"][0]]
            elif model == "bad-tool":
                name = "no_such_tool"
        n = len([m for m in msgs if m.get("role") == "assistant"]) + 1
        call = {"id": ("toolu_%02d" if self.dialect == "anthropic" else "call_%d") % n, "name": name,
                "arguments": args}
        hostile = model if model.startswith("hostile-") else None
        if self.dialect == "anthropic":
            self.anthropic_call(model, call, hostile)
        elif self.dialect == "ollama":
            self.ollama_call(model, call, hostile)
        else:
            self.openai_call(model, call, hostile)

    @staticmethod
    def fragments(text, n=3):
        """text in n pieces or more (at least 2 for any text of 2 characters)."""
        size = max(1, len(text) // n)
        return [text[i:i + size] for i in range(0, len(text), size)]

    def openai_call(self, model, call, hostile):
        fn = {"name": call["name"], "arguments": json.dumps(call["arguments"])}
        if hostile == "hostile-noname":
            del fn["name"]
        elif hostile == "hostile-args":
            fn["arguments"] = 42
        entry = 42 if hostile == "hostile-entry" else {"id": call["id"], "type": "function", "function": fn}
        if not self.streaming:
            self.send(200, json.dumps({
                "id": "chatcmpl-test", "object": "chat.completion", "model": model,
                "choices": [{"index": 0, "finish_reason": "tool_calls",
                             "message": {"role": "assistant", "content": None, "tool_calls": [entry]}}],
                "usage": self.usage(model, "")}))
            return
        self.start_stream()
        self.event(self.chunk(model, ""))

        def delta(d):
            return self.event({"id": "chatcmpl-test", "object": "chat.completion.chunk", "model": model,
                               "choices": [{"index": 0, "delta": {"tool_calls": [d]}, "finish_reason": None}]})
        if hostile:
            if isinstance(entry, dict):
                entry["index"] = 0
            delta(entry)
        else:
            first = {"index": 0, "id": call["id"], "type": "function", "function": {"name": call["name"],
                                                                                    "arguments": ""}}
            delta(first)
            for piece in self.fragments(fn["arguments"]):
                delta({"index": 0, "function": {"arguments": piece}})
        self.event(self.chunk(model, None, "tool_calls"))
        self.event({"id": "chatcmpl-test", "object": "chat.completion.chunk", "model": model,
                    "choices": [], "usage": self.usage(model, "")})
        self.event("[DONE]")

    def anthropic_call(self, model, call, hostile):
        text = "Calling " + call["name"] + "."
        block = {"type": "tool_use", "id": call["id"], "name": call["name"], "input": call["arguments"]}
        if hostile == "hostile-entry":
            block["id"] = 42
        elif hostile == "hostile-noname":
            del block["name"]
        elif hostile == "hostile-args":
            block["input"] = 42
        if not self.streaming:
            self.send(200, json.dumps({"id": "msg_test", "type": "message", "role": "assistant", "model": model,
                                       "content": [{"type": "text", "text": text}, block],
                                       "stop_reason": "tool_use", "stop_sequence": None,
                                       "usage": self.anthropic_usage(model, text)}))
            return
        self.anthropic_start(model)  # a thinking block, then the text block (index 1)
        self.anthropic_piece(text)
        self.sse("content_block_stop", {"type": "content_block_stop", "index": 1})
        partial = json.dumps(block.pop("input"))
        block["input"] = {}
        self.sse("content_block_start", {"type": "content_block_start", "index": 2, "content_block": block})
        for piece in ([42] if hostile == "hostile-args" else self.fragments(partial)):
            self.sse("content_block_delta", {"type": "content_block_delta", "index": 2,
                                             "delta": {"type": "input_json_delta", "partial_json": piece}})
        self.sse("content_block_stop", {"type": "content_block_stop", "index": 2})
        self.sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use",
                                                                      "stop_sequence": None},
                                   "usage": {"output_tokens": len(text)}})
        self.sse("message_stop", {"type": "message_stop"})

    def ollama_call(self, model, call, hostile):
        fn = {"name": call["name"], "arguments": call["arguments"]}
        if hostile == "hostile-noname":
            del fn["name"]
        elif hostile == "hostile-args":
            fn["arguments"] = 42
        entry = 42 if hostile == "hostile-entry" else {"function": fn}
        line = self.ollama_line(model, "", not self.streaming, (len(model), 0))
        line["message"]["tool_calls"] = [entry]
        if not self.streaming:
            self.send(200, json.dumps(line))
            return
        self.start_stream("application/x-ndjson")
        self.write(json.dumps(line) + "\n")
        self.write(json.dumps(self.ollama_line(model, "", True, (len(model), 0))) + "\n")

    def do_GET(self):
        url = urlparse(self.path)
        if url.path == "/requests":
            with LOCK:
                out = {"total": TOTAL[0]}
            self.send(200, json.dumps(out))
            return
        if url.path == "/stats":
            key = parse_qs(url.query).get("key", [""])[0]
            with LOCK:
                out = {"attempts": ATTEMPTS.get(key, 0), "aborted": ABORTED.get(key, 0),
                       "times": TIMES.get(key, []), "max_body": MAX_BODY.get(key.split("|")[0], 0)}
            self.send(200, json.dumps(out))
            return
        self.dialect = "openai"
        self.fail_with(404, "not found")

    def sleep_or_abort(self, seconds, key):
        """Sleeps; returns False if the client went away meanwhile."""
        end = time.time() + seconds
        self.connection.settimeout(0.05)
        while time.time() < end:
            try:
                if self.connection.recv(1, 2) == b"":  # MSG_PEEK: closed?
                    with LOCK:
                        ABORTED[key] = ABORTED.get(key, 0) + 1
                    return False
            except (BlockingIOError, TimeoutError, OSError):
                pass
            time.sleep(0.02)
        self.connection.settimeout(None)
        return True

    def chaos(self, model, last, key, n):
        """One attempt of the "chaos" model: a random fault, or an answer."""
        rng = random.Random(key + "|" + str(n))
        fault = rng.choices(["ok", "429", "500", "reset", "slow", "garbage", "cut", "hang", "usage"],
                            [40, 10, 10, 10, 10, 10, 10, 10, 5])[0]
        if fault == "429":
            self.fail_with(429, "rate limited", {"Retry-After": "1"})
        elif fault == "500":
            self.fail_with(500, "internal failure")
        elif fault == "reset":
            # RST instead of a reply: linger 0, then close.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
        elif fault == "garbage":
            self.send(200, bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200))))
        elif fault in ("slow", "cut"):
            body = json.dumps({"choices": [{"message": {"role": "assistant",
                                                        "content": model + "|" + last}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            try:
                if fault == "cut":  # half the body, then the connection closes
                    self.wfile.write(body[: len(body) // 2])
                    self.close_connection = True
                    return
                for i in range(0, len(body), 16):  # about 0.1 s in all
                    self.wfile.write(body[i:i + 16])
                    self.wfile.flush()
                    time.sleep(0.1 * 16 / len(body))
            except (BrokenPipeError, ConnectionResetError):
                pass
        elif fault == "hang":
            if self.sleep_or_abort(5, key):
                self.reply(model, model + "|" + last)
        elif fault == "usage":  # an answer claiming 2^63-1 tokens each way
            self.reply("usage-max", model + "|" + last)
        else:
            self.reply(model, model + "|" + last)

    def key_header(self):
        """The header the format carries its key in ("" if none)."""
        name = "x-api-key" if self.dialect == "anthropic" else "Authorization"
        return self.headers.get(name, "")

    def do_POST(self):
        if self.path == "/shutdown":
            self.send(200, "{}")
            threading.Thread(target=self.server.shutdown, daemon=True).start()
            return
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length).decode("utf-8")
        if self.path.endswith("/chat/completions"):
            self.dialect = "openai"
        elif self.path == "/v1/messages":
            self.dialect = "anthropic"
        elif self.path == "/api/chat":
            self.dialect = "ollama"
        else:
            self.dialect = "openai"
            self.fail_with(404, "no such path " + self.path)
            return
        self.images = []  # the kinds of the request's images, in order
        try:
            req = json.loads(raw)
            wrong = None
            if self.dialect == "anthropic":
                wrong = self.anthropic_request(req)
            elif self.dialect == "ollama":
                wrong = self.ollama_request(req)
            if not wrong:
                wrong = self.image_request(req)
            if wrong:
                self.fail_with(*wrong)
                return
            wrong = self.tool_request(req)
            if wrong:
                self.fail_with(400, wrong)
                return
            model = req["model"]
            last = req["messages"][-1]["content"]
            if isinstance(last, list):  # Anthropic content blocks, OpenAI content parts: the text's
                last = "\n\n".join(b["text"] for b in last
                                    if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str))
            if last is None:  # an assistant turn that only called tools
                last = ""
        except (ValueError, KeyError, IndexError, TypeError):
            self.fail_with(400, "bad request body")
            return
        key = model + "|" + last
        with LOCK:
            MAX_BODY[model] = max(MAX_BODY.get(model, 0), length)
        n = count(key)
        self.streaming = req.get("stream") is True
        if model == "chaos" and self.dialect == "openai":
            self.chaos(model, last, key, n)
            return
        if self.streaming and self.stream_fault(model, n, key):
            return
        if model.startswith("latency-"):
            time.sleep(int(model[len("latency-"):]) / 1000)
            self.answer(model, last, req)
            return
        if model.startswith("429x"):
            if n <= int(model[4:]):
                self.fail_with(429, "rate limited", {"Retry-After": "1"})
                return
        elif model.startswith("529x"):
            if n <= int(model[4:]):
                self.fail_with(529, "Overloaded")
                return
        elif model == "bad-request":
            self.fail_with(400, "\x1b[31mbad request\x1b[0m: the prompt is too long")
            return
        elif model == "error-200" and self.dialect != "openai":
            self.send(200, self.error_body(500, "model 'error-200' is not loaded"))
            return
        elif model.startswith("retry-after:"):
            if n == 1:
                self.fail_with(429, "rate limited", {"Retry-After": model[len("retry-after:"):]})
                return
        elif model == "huge-body":
            self.send(200, b"x" * (65 << 20))
            return
        elif model == "echo-auth-error":
            body = ("\x1b[2J\x1b[31mbad key: " + self.key_header() +
                    "\r\n\x07\u009b31m (8-bit CSI)\x1b[0m")
            self.send(400, body, ctype="text/plain")
            return
        elif model.startswith("500x"):
            if n <= int(model[4:]):
                self.fail_with(500, "internal failure")
                return
        elif model == "500always":
            self.fail_with(500, "always failing")
            return
        elif model == "slow":
            if not self.sleep_or_abort(3, key):
                return
        elif model == "hang":
            if not self.sleep_or_abort(30, key):
                return
        elif model == "malformed":
            self.send(200, "{this is not json")
            return
        elif model == "nocontent":
            if self.dialect == "anthropic":
                self.send(200, json.dumps({"id": "msg_test", "type": "message", "role": "assistant",
                                           "stop_reason": "end_turn"}))
            elif self.dialect == "ollama":
                self.send(200, json.dumps({"model": model, "done": True}))
            else:
                self.send(200, json.dumps({"choices": []}))
            return
        elif model == "refusal" and self.dialect == "anthropic":
            self.send(200, json.dumps({"id": "msg_test", "type": "message", "role": "assistant", "content": [],
                                       "stop_reason": "refusal", "usage": {"input_tokens": 1, "output_tokens": 0}}))
            return
        elif model == "refusal":
            self.send(200, json.dumps({"choices": [{"message": {"role": "assistant", "content": None,
                                                                "refusal": "not this one"}}]}))
            return
        elif model == "schema-bad":
            self.reply(model, json.dumps({"answer": "x", "score": 99}))
            return
        elif model == "schema-ok":
            self.reply(model, json.dumps({"answer": "fine", "score": 7}))
            return
        elif model == "schema-fix":
            corrected = any(m.get("role") == "assistant" for m in req["messages"])
            self.reply(model, json.dumps({"answer": "fine", "score": 7} if corrected else {"answer": "x", "score": 99}))
            return
        elif model == "schema-huge-bad":
            self.reply(model, json.dumps({"answer": "\u00e9" * (1 << 19), "score": 99}, ensure_ascii=False))
            return
        elif model == "schema-greedy":
            params = req.get("options", {}) if self.dialect == "ollama" else req
            sampled = (params.get("temperature") or 0) > 0
            self.reply(model, json.dumps({"answer": "fine", "score": 7} if sampled else {"answer": "x", "score": 99}))
            return
        elif model == "html":
            self.send(200, "<html><body>Gateway says hello</body></html>", ctype="text/html")
            return
        elif model == "show-request":
            self.reply(model, raw)
            return
        elif model == "show-format":
            if self.dialect == "anthropic":
                fmt = req.get("system", "")
            elif self.dialect == "ollama":
                fmt = json.dumps(req.get("format"))
            else:
                fmt = json.dumps(req.get("response_format"))
            self.reply(model, json.dumps({"answer": fmt, "score": 1}))
            return
        elif model == "show-messages":
            self.reply(model, json.dumps({"answer": json.dumps(req["messages"]), "score": 1}))
            return
        elif model == "show-auth":
            self.reply(model, self.key_header())
            return
        self.answer(model, last, req)

    def answer(self, model, last, req):
        """The plain answer, or with tools the script's."""
        if req.get("tools"):
            self.tool_answer(model, req)
        elif self.images:
            n = len(self.images)
            self.reply(model, "%s|%s|saw %d image%s: %s" % (model, last, n, "" if n == 1 else "s",
                                                            ",".join(self.images)))
        else:
            self.reply(model, model + "|" + last)


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # A client that aborts a transfer (libaf's reply cap, cancellation)
        # resets the connection: expected, not worth a traceback.
        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return
        super().handle_error(request, client_address)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--lifetime", type=float, default=120.0)
    args = ap.parse_args()
    server = Server(("127.0.0.1", args.port), Handler)
    parent = os.getppid()

    def watchdog():
        end = time.time() + args.lifetime
        while time.time() < end and os.getppid() == parent:
            time.sleep(0.2)
        server.shutdown()

    threading.Thread(target=watchdog, daemon=True).start()
    print("PORT %d" % server.server_address[1], flush=True)
    server.serve_forever(poll_interval=0.1)


if __name__ == "__main__":
    sys.exit(main())
