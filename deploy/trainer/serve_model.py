#!/usr/bin/env python3
"""kgym's reference model server: a causal LM (a Hugging Face model directory) behind the
OpenAI-compatible HTTP API that kgym's `openai` backend speaks, with what RL needs:

  POST /v1/chat/completions, /v1/completions   sampled answers with per-token log-probs
       ("logprobs"), token ids (vLLM's "return_token_ids"), the prompt's ids, and the
       policy version in "system_fingerprint" ("kgym-v<N>")
  POST /update_weights_from_disk {"model_path"}  SGLang's reload endpoint: serve new weights
  GET  /v1/models, /health

It is for small models and tests (one request at a time on one device); a real run serves
its model with vLLM or SGLang and points kgym at it (deploy/trainer/README.md).

usage: serve_model.py MODEL_DIR [--host 127.0.0.1] [--port 8000] [--port-file F]
                      [--name kgym-policy] [--device auto|cpu|cuda]
"""
import argparse
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import torch

import kgym_lm


class Policy:
    def __init__(self, path, device):
        self.device = device
        self.lock = threading.Lock()
        self.load(path)

    def load(self, path):
        model = kgym_lm.load_model(path, self.device).eval()
        tokenizer = kgym_lm.load_tokenizer(path)
        with self.lock:
            self.model, self.tokenizer, self.path = model, tokenizer, path
            self.version = kgym_lm.read_version(path)

    @torch.no_grad()
    def generate(self, prompt_ids, max_tokens, temperature, top_p, seed):
        with self.lock:
            model, device = self.model, self.device
            limit = kgym_lm.max_positions(model) - max_tokens
            prompt_ids = prompt_ids[-limit:]
            generator = torch.Generator(device=device)
            generator.manual_seed(seed if seed is not None else int(time.time_ns() % (1 << 31)))
            out = model(torch.tensor([prompt_ids], device=device), use_cache=True)
            tokens, logprobs = [], []
            finish = "length"
            for _ in range(max_tokens):
                logits = out.logits[0, -1].float()
                if temperature == 0:
                    token = int(torch.argmax(logits))
                    logp = torch.log_softmax(logits, -1)
                else:
                    logp = torch.log_softmax(logits / temperature, -1)
                    probs = logp.exp()
                    if top_p < 1.0:
                        sorted_p, order = torch.sort(probs, descending=True)
                        cut = torch.cumsum(sorted_p, 0) - sorted_p > top_p
                        probs = probs.clone()
                        probs[order[cut]] = 0
                    token = int(torch.multinomial(probs, 1, generator=generator))
                tokens.append(token)
                logprobs.append(float(logp[token]))
                if token == self.tokenizer.eos_token_id:
                    finish = "stop"
                    break
                out = model(torch.tensor([[token]], device=device), past_key_values=out.past_key_values,
                            use_cache=True)
            return prompt_ids, tokens, logprobs, finish, self.version


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    policy = None
    name = "kgym-policy"

    def log_message(self, fmt, *args):
        pass

    def answer(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def error(self, status, message):
        self.answer(status, {"error": {"message": message, "type": "invalid_request_error", "code": status}})

    def do_GET(self):
        if self.path == "/health":
            return self.answer(200, {"status": "ok", "version": self.policy.version})
        if self.path == "/v1/models":
            return self.answer(200, {"object": "list", "data": [{"id": self.name, "object": "model"}]})
        self.error(404, f"no route GET {self.path}")

    def do_POST(self):
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        except ValueError as e:
            return self.error(400, f"the body is not JSON: {e}")
        if self.path == "/update_weights_from_disk":
            path = body.get("model_path")
            if not path or not os.path.isdir(path):
                return self.error(400, f"model_path {path!r} is not a directory")
            self.policy.load(path)
            return self.answer(200, {"success": True, "message": f"serving {path} (version {self.policy.version})"})
        if self.path not in ("/v1/chat/completions", "/v1/completions"):
            return self.error(404, f"no route POST {self.path}")
        if body.get("model") != self.name:
            return self.error(404, f"the model {body.get('model')!r} does not exist (this server serves {self.name!r})")
        chat = self.path == "/v1/chat/completions"
        tokenizer = self.policy.tokenizer
        if chat:
            messages = body.get("messages") or []
            system = "\n".join(m.get("content", "") for m in messages if m.get("role") == "system")
            user = "\n".join(m.get("content", "") for m in messages if m.get("role") != "system")
            prompt_ids = tokenizer.chat_ids(system, user)
        elif isinstance(body.get("prompt"), str):
            prompt_ids = tokenizer.encode(body["prompt"])
        else:
            return self.error(400, "prompt must be a string")
        max_tokens = int(body.get("max_tokens") or 256)
        prompt_ids, tokens, logprobs, finish, version = self.policy.generate(
            prompt_ids, max_tokens, float(body.get("temperature", 1.0)), float(body.get("top_p", 1.0)),
            body.get("seed"))
        text = tokenizer.decode(tokens)
        pieces = [tokenizer.decode([t]) for t in tokens]
        choice = {"index": 0, "finish_reason": finish}
        if chat:
            choice["message"] = {"role": "assistant", "content": text}
            choice["logprobs"] = {"content": [{"token": p, "logprob": lp} for p, lp in zip(pieces, logprobs)]}
        else:
            choice["text"] = text
            choice["logprobs"] = {"tokens": pieces, "token_logprobs": logprobs}
        response = {"id": f"cmpl-{time.time_ns()}", "object": "chat.completion" if chat else "text_completion",
                    "created": int(time.time()), "model": self.name, "system_fingerprint": f"kgym-v{version}",
                    "choices": [choice],
                    "usage": {"prompt_tokens": len(prompt_ids), "completion_tokens": len(tokens),
                              "total_tokens": len(prompt_ids) + len(tokens)}}
        if body.get("return_token_ids"):
            choice["token_ids"] = tokens
            response["prompt_token_ids"] = prompt_ids
        self.answer(200, response)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model_dir")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--port-file", help="write the port here once listening (use with --port 0)")
    parser.add_argument("--name", default="kgym-policy", help="the model name clients ask for")
    parser.add_argument("--device", default="auto")
    args = parser.parse_args()
    Handler.policy = Policy(args.model_dir, kgym_lm.pick_device(args.device))
    Handler.name = args.name
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    port = server.server_address[1]
    print(f"serve_model: {args.model_dir} as {args.name!r} on http://{args.host}:{port}/v1 "
          f"({Handler.policy.device}, version {Handler.policy.version})", flush=True)
    if args.port_file:
        with open(args.port_file + ".tmp", "w") as f:
            f.write(f"{port}\n")
        os.replace(args.port_file + ".tmp", args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
