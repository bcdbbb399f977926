"""A stand-in for llama-cpp-python's server, for tests/local_model/script_test.sh.

It takes the real server's command line, listens like it, and answers /v1/models;
its first chat completion is answered as AF_STANDIN_MODE says: "ok" (a completion),
"error" (HTTP 500, the process stays up) or "sigill" (the process dies of SIGILL,
as a llama.cpp build using an instruction the CPU lacks does).
"""
import argparse
import json
import os
import signal
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

parser = argparse.ArgumentParser()
parser.add_argument("--model", required=True)
parser.add_argument("--host", required=True)
parser.add_argument("--port", type=int, required=True)
args, _ = parser.parse_known_args()
MODE = os.environ.get("AF_STANDIN_MODE", "ok")


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def reply(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/v1/models":
            self.reply(200, {"object": "list", "data": [{"id": args.model, "object": "model"}]})
        else:
            self.reply(404, {"error": "not found"})

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path != "/v1/chat/completions":
            return self.reply(404, {"error": "not found"})
        if MODE == "sigill":
            print("stand-in: computing the first completion", flush=True)
            os.kill(os.getpid(), signal.SIGILL)
        if MODE == "error":
            return self.reply(500, {"error": {"message": "stand-in failure"}})
        self.reply(200, {"object": "chat.completion", "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]})


print(f"stand-in server for {args.model} on {args.host}:{args.port}", flush=True)
HTTPServer((args.host, args.port), Handler).serve_forever()
