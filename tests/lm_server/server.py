#!/usr/bin/env python3
"""A local chat-completions server with fault injection, for libaf's tests.

Speaks POST <base>/chat/completions like an OpenAI-compatible endpoint. The
model name picks the behaviour (counters are kept per model + last message,
so tests do not disturb each other):

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
  usage-huge      ok, with a usage block claiming 10^9 prompt tokens
  usage-max       ok, with a usage block claiming 2^63-1 prompt and
                  completion tokens
  latency-MS      ok, after MS milliseconds (a provider's latency)
  schema-greedy   a greedy model: schema-bad while the request's
                  "temperature" is 0 or absent (whatever the messages say),
                  schema-ok once it is above 0

A request with "stream": true gets its reply as server-sent events (the
content in pieces of 4 characters, a finish_reason chunk, a usage chunk,
then "data: [DONE]"), and these models misbehave mid-stream:

  stream-cutxN    N times: two pieces, then the connection closes (no end)
  stream-garbage  one piece, then an event that is not JSON
  stream-error    one piece, then {"error": {...}} as an event
  stream-forever  a piece every 0.1 s for 30 s (never ends in a test)
  stream-html     200 with an HTML page (not an event stream)

GET /stats?key=<model>|<content> returns {"attempts": N, "aborted": N,
"times": [seconds since the server started, per attempt], "max_body": the
largest request body received for <model>, in bytes}. GET /requests
returns {"total": N}: every chat completion request received, of any model.
Prints "PORT <n>" on stdout once listening on 127.0.0.1 (port 0 = any free
port). Bounded: exits after --lifetime seconds, when its parent process
goes away, or on POST /shutdown.
"""
import argparse
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

    def reply(self, model, content):
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

    def start_stream(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
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
        self.send(404, json.dumps({"error": {"message": "not found"}}))

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
            self.send(429, json.dumps({"error": {"message": "rate limited"}}), {"Retry-After": "1"})
        elif fault == "500":
            self.send(500, json.dumps({"error": {"message": "internal failure"}}))
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

    def do_POST(self):
        if self.path == "/shutdown":
            self.send(200, "{}")
            threading.Thread(target=self.server.shutdown, daemon=True).start()
            return
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length).decode("utf-8")
        if not self.path.endswith("/chat/completions"):
            self.send(404, json.dumps({"error": {"message": "no such path " + self.path}}))
            return
        try:
            req = json.loads(raw)
            model = req["model"]
            last = req["messages"][-1]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            self.send(400, json.dumps({"error": {"message": "bad request body"}}))
            return
        key = model + "|" + last
        with LOCK:
            MAX_BODY[model] = max(MAX_BODY.get(model, 0), length)
        n = count(key)
        self.streaming = req.get("stream") is True
        if model == "chaos":
            self.chaos(model, last, key, n)
            return
        if self.streaming and self.stream_fault(model, n, key):
            return
        if model.startswith("latency-"):
            time.sleep(int(model[len("latency-"):]) / 1000)
            self.reply(model, model + "|" + last)
            return
        if model.startswith("429x"):
            if n <= int(model[4:]):
                self.send(429, json.dumps({"error": {"message": "rate limited"}}), {"Retry-After": "1"})
                return
        elif model.startswith("retry-after:"):
            if n == 1:
                self.send(429, json.dumps({"error": {"message": "rate limited"}}),
                          {"Retry-After": model[len("retry-after:"):]})
                return
        elif model == "huge-body":
            self.send(200, b"x" * (65 << 20))
            return
        elif model == "echo-auth-error":
            body = ("\x1b[2J\x1b[31mbad key: " + self.headers.get("Authorization", "") +
                    "\r\n\x07\u009b31m (8-bit CSI)\x1b[0m")
            self.send(400, body, ctype="text/plain")
            return
        elif model.startswith("500x"):
            if n <= int(model[4:]):
                self.send(500, json.dumps({"error": {"message": "internal failure"}}))
                return
        elif model == "500always":
            self.send(500, json.dumps({"error": {"message": "always failing"}}))
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
            self.send(200, json.dumps({"choices": []}))
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
            sampled = (req.get("temperature") or 0) > 0
            self.reply(model, json.dumps({"answer": "fine", "score": 7} if sampled else {"answer": "x", "score": 99}))
            return
        elif model == "html":
            self.send(200, "<html><body>Gateway says hello</body></html>", ctype="text/html")
            return
        elif model == "show-request":
            self.reply(model, raw)
            return
        elif model == "show-format":
            fmt = json.dumps(req.get("response_format"))
            self.reply(model, json.dumps({"answer": fmt, "score": 1}))
            return
        elif model == "show-messages":
            self.reply(model, json.dumps({"answer": json.dumps(req["messages"]), "score": 1}))
            return
        elif model == "show-auth":
            self.reply(model, self.headers.get("Authorization", ""))
            return
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
