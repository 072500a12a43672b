#!/usr/bin/env python3
"""kgym's reference trainer: the other end of kgym's `zmq` trainer backend. It holds a causal
LM (a Hugging Face model directory), answers kgym's learner over ZeroMQ (REP socket; frames
are the JSON mapping of kgym.TrainerRequest / kgym.TrainerReply, see messages/kgym.proto):

  score  -> the log-probs of each sampled response under the trainer's weights (kgym's MRS
            compares them with the server's rollout log-probs)
  train  -> one PPO-clip update with kgym's per-token advantages (MRS/PRS already applied;
            the ratio's denominator is the scored log-probs), then the new weights are saved
            to OUT_DIR/v<N> and the answer is a PolicyVersion pointing there

usage: reference_trainer.py MODEL_DIR --out-dir DIR [--endpoint tcp://127.0.0.1:5600]
                            [--lr 1e-4] [--epochs 1] [--device auto|cpu|cuda] [--endpoint-file F]
"""
import argparse
import json
import os
import sys
import time

import torch
import zmq

import kgym_lm


class Trainer:
    def __init__(self, args):
        self.args = args
        self.device = kgym_lm.pick_device(args.device)
        self.source = args.model_dir
        self.model = kgym_lm.load_model(args.model_dir, self.device)
        self.model.eval()  # no dropout: the log-probs PPO compares must be deterministic
        self.tokenizer = kgym_lm.load_tokenizer(args.model_dir)
        self.version = kgym_lm.read_version(args.model_dir)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=args.lr, weight_decay=0.0)

    def prompt_ids(self, sample):
        ids = sample.get("prompt_token_ids")
        if ids:
            return [int(i) for i in ids]
        return self.tokenizer.chat_ids(sample.get("system_prompt", ""), sample.get("prompt", ""))

    def response(self, sample):
        return [int(i) for i in sample.get("response_token_ids", [])]

    @torch.no_grad()
    def score(self, request):
        out = []
        for s in request.get("samples", []):
            response = self.response(s)
            logp = kgym_lm.response_logprobs(self.model, self.prompt_ids(s), response, self.device) if response else []
            out.append({"sample_id": s["sample_id"], "trainer_logprobs": [float(x) for x in logp]})
        return {"score": {"samples": out}}

    def train(self, batch):
        started = time.time()
        clip = float(batch.get("clip") or 0.2)
        samples = [s for s in batch.get("samples", []) if self.response(s)]
        tokens = sum(len(self.response(s)) for s in samples)
        loss_total = 0.0
        for _ in range(self.args.epochs):
            self.optimizer.zero_grad()
            for s in samples:
                new = kgym_lm.response_logprobs(self.model, self.prompt_ids(s), self.response(s), self.device)
                old = torch.tensor(s["trainer_logprobs"], device=self.device)
                advantage = torch.tensor(s["advantages"], device=self.device)
                ratio = torch.exp(new - old)
                # PPO-clip, token-level: every token of the batch weighs the same.
                loss = -torch.min(ratio * advantage, torch.clamp(ratio, 1 - clip, 1 + clip) * advantage).sum() / tokens
                loss.backward()
                loss_total += float(loss.detach())
            self.optimizer.step()
        self.version += 1
        out_dir = os.path.join(self.args.out_dir, f"v{self.version}")
        kgym_lm.save_weights(self.model, self.source, out_dir, self.version)
        return {"version": {"version": self.version, "weights_path": os.path.abspath(out_dir),
                            "model": f"{self.args.name}-v{self.version}", "loss": loss_total / self.args.epochs,
                            "tokens": tokens, "train_s": time.time() - started}}

    def handle(self, frame):
        try:
            request = json.loads(frame)
        except ValueError as e:
            return {"error": f"the request is not JSON: {e}"}
        if "score" in request:
            return self.score(request["score"])
        if "train" in request:
            return self.train(request["train"])
        return {"error": "the request has neither score nor train (see kgym.TrainerRequest)"}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model_dir")
    parser.add_argument("--out-dir", required=True, help="where each new version's weights go (v<N>/)")
    parser.add_argument("--endpoint", default="tcp://127.0.0.1:5600", help="ZeroMQ endpoint to bind (port * picks one)")
    parser.add_argument("--endpoint-file", help="write the bound endpoint here")
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--name", default="kgym-policy", help="model name prefix reported with each version")
    parser.add_argument("--device", default="auto")
    args = parser.parse_args()
    trainer = Trainer(args)
    socket = zmq.Context().socket(zmq.REP)
    socket.bind(args.endpoint)
    endpoint = socket.getsockopt_string(zmq.LAST_ENDPOINT)
    print(f"reference_trainer: {args.model_dir} (version {trainer.version}) on {trainer.device}, "
          f"listening at {endpoint}", flush=True)
    if args.endpoint_file:
        with open(args.endpoint_file + ".tmp", "w") as f:
            f.write(endpoint + "\n")
        os.replace(args.endpoint_file + ".tmp", args.endpoint_file)
    while True:
        frame = socket.recv_string()
        started = time.time()
        try:
            reply = trainer.handle(frame)
        except Exception as e:  # an answer, never a dead trainer: the learner logs it and goes on
            reply = {"error": f"{type(e).__name__}: {e}"}
        kind = "score" if "score" in reply else "train" if "version" in reply else "error"
        print(f"reference_trainer: {kind} in {time.time() - started:.2f} s"
              + (f" -> version {reply['version']['version']}, loss {reply['version']['loss']:.5f}"
                 if kind == "train" else f": {reply['error']}" if kind == "error" else ""), flush=True)
        socket.send_string(json.dumps(reply))


if __name__ == "__main__":
    sys.exit(main())
