#!/usr/bin/env python3
"""Writes a small causal LM with random weights for kgym's end-to-end runs (CPU tests, GPU
smoke runs): a transformers GPT-2 of a few layers and a piece vocabulary (kgym_vocab.json)
whose pieces include every built-in task's hand-written programs as fenced code blocks, so a
random model's answers sometimes hold a program and rewards differ between answers.

usage: make_tiny_model.py OUT_DIR [--tasks-dir tasks] [--layers 2] [--width 64] [--seed 0]
"""
import argparse
import glob
import json
import os

import torch
from transformers import GPT2Config, GPT2LMHeadModel

import kgym_lm

WORDS = ["Here is my Triton implementation.\n\n", "I fused the whole computation into one kernel.\n",
         "The kernel is already optimal; no changes needed.\n", "Let me think about the memory traffic.\n",
         "```python\n", "```\n", "import torch\n", "import triton\n", "class ModelNew", "\n", " "]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir")
    parser.add_argument("--tasks-dir", default=os.path.join(os.path.dirname(__file__), "..", "..", "tasks"))
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--positions", type=int, default=8192)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    programs = []
    for path in sorted(glob.glob(os.path.join(args.tasks_dir, "*", "candidates", "*.py"))):
        programs.append("```python\n" + open(path).read() + "```\n")
    pieces = sorted(set(programs)) + WORDS
    tokenizer = kgym_lm.PieceTokenizer(pieces)
    torch.manual_seed(args.seed)
    config = GPT2Config(vocab_size=tokenizer.vocab_size, n_embd=args.width, n_layer=args.layers, n_head=2,
                        n_positions=args.positions, bos_token_id=0, eos_token_id=0,
                        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)  # RL: no dropout noise in log-probs
    model = GPT2LMHeadModel(config)
    os.makedirs(args.out_dir, exist_ok=True)
    json.dump({"pieces": pieces}, open(os.path.join(args.out_dir, "kgym_vocab.json"), "w"))
    kgym_lm.save_weights(model, args.out_dir, args.out_dir, 0)
    print(f"wrote {args.out_dir}: GPT-2 {args.layers} layers x {args.width}, vocabulary {tokenizer.vocab_size} "
          f"({len(programs)} programs as pieces), {sum(p.numel() for p in model.parameters())} parameters")


if __name__ == "__main__":
    main()
