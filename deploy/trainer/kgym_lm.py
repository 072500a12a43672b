"""What kgym's reference model server and reference trainer share: loading a causal LM
(a Hugging Face model directory), its tokenizer, the prompt's token ids, and the log-probs of
a response. One module, so the server's rollout log-probs and the trainer's are computed the
same way (MRS compares them).

A model directory holds a transformers model (config.json + weights) and either a Hugging Face
tokenizer or kgym_vocab.json (the small piece vocabulary of make_tiny_model.py).
"""
import json
import os

import torch
from transformers import AutoModelForCausalLM

SPECIALS = ["<eos>", "<system>", "<user>", "<assistant>"]


class PieceTokenizer:
    """Greedy longest match over a vocabulary of text pieces, with a byte for anything else.
    Ids: the specials, then 256 bytes, then the pieces."""

    def __init__(self, pieces):
        self.pieces = pieces
        self.byte_base = len(SPECIALS)
        self.piece_base = self.byte_base + 256
        self.by_text = {p: self.piece_base + i for i, p in enumerate(pieces)}
        self.max_len = max((len(p) for p in pieces), default=1)
        self.first_chars = {}
        for p in pieces:
            self.first_chars.setdefault(p[0], []).append(p)
        for options in self.first_chars.values():
            options.sort(key=len, reverse=True)
        self.eos_token_id = 0
        self.vocab_size = self.piece_base + len(pieces)

    def encode(self, text):
        ids, i = [], 0
        while i < len(text):
            match = next((p for p in self.first_chars.get(text[i], []) if text.startswith(p, i)), None)
            if match:
                ids.append(self.by_text[match])
                i += len(match)
            else:
                ids.extend(self.byte_base + b for b in text[i].encode())
                i += 1
        return ids

    def decode(self, ids):
        out = bytearray()
        for t in ids:
            if t >= self.piece_base:
                out += self.pieces[t - self.piece_base].encode()
            elif t >= self.byte_base:
                out.append(t - self.byte_base)
        return out.decode("utf-8", errors="replace")

    def chat_ids(self, system, prompt):
        return [1] + self.encode(system) + [2] + self.encode(prompt) + [3]


class HfTokenizer:
    """A Hugging Face tokenizer with its chat template."""

    def __init__(self, path):
        from transformers import AutoTokenizer
        self.tok = AutoTokenizer.from_pretrained(path)
        self.eos_token_id = self.tok.eos_token_id
        self.vocab_size = len(self.tok)

    def encode(self, text):
        return self.tok.encode(text, add_special_tokens=False)

    def decode(self, ids):
        return self.tok.decode(ids, skip_special_tokens=True)

    def chat_ids(self, system, prompt):
        messages = [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
        if getattr(self.tok, "chat_template", None):
            ids = self.tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
            return list(ids["input_ids"] if isinstance(ids, dict) else ids)
        return self.encode(system + "\n\n" + prompt + "\n\n")


def load_tokenizer(path):
    vocab = os.path.join(path, "kgym_vocab.json")
    if os.path.exists(vocab):
        return PieceTokenizer(json.load(open(vocab))["pieces"])
    return HfTokenizer(path)


def pick_device(name):
    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return name


def load_model(path, device):
    try:
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)  # transformers >= 4.56
    except TypeError:
        model = AutoModelForCausalLM.from_pretrained(path, torch_dtype=torch.float32)
    return model.to(device)


def max_positions(model):
    config = model.config
    return getattr(config, "n_positions", None) or getattr(config, "max_position_embeddings", 4096)


def response_logprobs(model, prompt_ids, response_ids, device):
    """log p(response token | everything before it), one per response token; differentiable."""
    ids = torch.tensor([prompt_ids + response_ids], device=device)
    logits = model(ids).logits[0, len(prompt_ids) - 1:-1].float()
    logp = torch.log_softmax(logits, dim=-1)
    return logp.gather(1, torch.tensor(response_ids, device=device).unsqueeze(1)).squeeze(1)


def read_version(path):
    """The policy version a weights directory holds (kgym_version.json), 0 if none."""
    try:
        return int(json.load(open(os.path.join(path, "kgym_version.json")))["version"])
    except (OSError, ValueError, KeyError):
        return 0


def save_weights(model, source_dir, out_dir, version):
    """The model's weights plus the tokenizer files of `source_dir`, and the version."""
    import shutil
    os.makedirs(out_dir, exist_ok=True)
    model.save_pretrained(out_dir)
    for name in os.listdir(source_dir):
        if ("token" in name or name in ("kgym_vocab.json", "vocab.json", "merges.txt")) and \
                not os.path.exists(os.path.join(out_dir, name)):
            shutil.copy(os.path.join(source_dir, name), out_dir)
    with open(os.path.join(out_dir, "kgym_version.json"), "w") as f:
        json.dump({"version": version}, f)
