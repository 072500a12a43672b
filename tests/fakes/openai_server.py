#!/usr/bin/env python3
"""A scripted OpenAI-compatible server for kgym's tests: the real protocol (HTTP/1.1, JSON,
/v1/chat/completions and /v1/completions with log-probs and vLLM's token ids) with answers
decided by a script instead of a model.

The script (JSON) maps "<task id>/<turn>" to a list of behaviours, one per attempt (the last
one repeats):  {"answer": TEXT} | {"status": 500} | {"malformed": true} | {"delay_s": S, ...}.
The turn is 1 + the number of earlier answers the prompt shows. Every request is logged as a
JSON line (path, body, headers of interest) to --log.

usage: openai_server.py --script FILE --port-file FILE --log FILE [--fingerprint kgym-v0]
                        [--tls-cert PEM --tls-key KEY]   (https instead of http)
"""
import argparse
import json
import re
import select
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--script", required=True)
parser.add_argument("--port-file", required=True)
parser.add_argument("--log", required=True)
parser.add_argument("--fingerprint", default="kgym-v0")
parser.add_argument("--tls-cert", help="serve https with this certificate (and --tls-key)")
parser.add_argument("--tls-key")
args = parser.parse_args()

script = json.load(open(args.script))
attempts = {}
lock = threading.Lock()
open_requests = set()  # completions whose client still waits (its concurrency limit shows here)


def tokens_of(text):
    """4-byte pieces: what this fake calls tokens (ids 1000, 1001, ... by position)."""
    return [text[i:i + 4] for i in range(0, len(text), 4)]


def key_of(prompt):
    task = re.search(r"^## Task (\S+)", prompt, re.M)
    turn = 1 + len(re.findall(r"^## Your answer in turn \d+", prompt, re.M))
    return f"{task.group(1) if task else '?'}/{turn}"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def leave(self):
        """Out of `open_requests` before the answer's bytes go out: a client that reads them
        and asks again at once must not find this request still counted."""
        with lock:
            open_requests.discard(self)

    def reply(self, status, body):
        self.leave()
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        try:
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (its timeout): what a real server sees too

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        if self.path == "/update_weights_from_disk":
            with lock:
                self.log_request_line(None, body)
            return self.reply(200, json.dumps({"success": True, "message": "loaded"}))
        chat = self.path == "/v1/chat/completions"
        if not chat and self.path != "/v1/completions":
            return self.reply(404, json.dumps({"error": {"message": f"no route {self.path}"}}))
        prompt = body["messages"][-1]["content"] if chat else body["prompt"]
        key = key_of(prompt)
        with lock:
            n = attempts.get(key, 0)
            attempts[key] = n + 1
            # A request whose client gave up (closed) no longer counts, even before its
            # handler, still sleeping, notices.
            for other in [r for r in open_requests if r.client_gone()]:
                open_requests.discard(other)
            open_requests.add(self)
            self.log_request_line(key, body, len(open_requests))
        steps = script.get(key, [{"answer": "I have no script for " + key}])
        step = steps[min(n, len(steps) - 1)]
        try:
            self.answer_step(chat, key, body, step)
        finally:
            self.leave()

    def client_gone(self):
        readable, _, _ = select.select([self.connection], [], [], 0)
        return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""

    def answer_step(self, chat, key, body, step):
        deadline = time.time() + step.get("delay_s", 0)
        while time.time() < deadline:  # a slow answer; a client that gave up is no longer in flight
            if self.client_gone():
                return
            time.sleep(0.02)
        if "status" in step:
            return self.reply(step["status"], json.dumps({"error": {"message": "scripted failure", "code": step["status"]}}))
        if step.get("malformed"):
            return self.reply(200, '{"choices": [{"message": {"content": "trunc')
        text = step["answer"]
        pieces = tokens_of(text)
        choice = {"index": 0, "finish_reason": "stop"}
        if chat:
            choice["message"] = {"role": "assistant", "content": text}
            choice["logprobs"] = {"content": [{"token": p, "logprob": -0.5, "bytes": list(p.encode())} for p in pieces]}
        else:
            choice["text"] = text
            choice["logprobs"] = {"tokens": pieces, "token_logprobs": [-0.5] * len(pieces)}
        response = {"id": "cmpl-" + key, "object": "chat.completion", "model": body.get("model"),
                    "system_fingerprint": args.fingerprint, "choices": [choice],
                    "usage": {"completion_tokens": len(pieces)}}
        if body.get("return_token_ids"):
            choice["token_ids"] = [1000 + i for i in range(len(pieces))]
            response["prompt_token_ids"] = [1, 2, 3]
        self.reply(200, json.dumps(response))

    def log_request_line(self, key, body, in_flight_now=0):
        with open(args.log, "a") as log:
            log.write(json.dumps({"path": self.path, "key": key, "body": body, "in_flight": in_flight_now,
                                  "authorization": self.headers.get("Authorization")}) + "\n")


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
if args.tls_cert:
    import ssl
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.tls_cert, args.tls_key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
with open(args.port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]) + "\n")
import os  # noqa: E402
os.replace(args.port_file + ".tmp", args.port_file)
server.serve_forever()
