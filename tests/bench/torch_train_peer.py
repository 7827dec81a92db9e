#!/usr/bin/python3
"""Eager PyTorch peer of bench_train: the same Llama-style model (RMSNorm, SwiGLU, rotate-half RoPE, GQA,
causal attention as torch 1.13 computes it), the same shapes, batch, threads and fp32, trained with
torch.optim.AdamW and clip_grad_norm_. Prints tokens/s and MFU against the sgemm peak measured here."""
import argparse
import json
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Block(nn.Module):
    def __init__(self, d, heads, kv, ffn):
        super().__init__()
        hd = d // heads
        self.heads, self.kv, self.hd = heads, kv, hd
        self.attn_norm, self.ffn_norm = RMSNorm(d), RMSNorm(d)
        self.q = nn.Linear(d, heads * hd, bias=False)
        self.k = nn.Linear(d, kv * hd, bias=False)
        self.v = nn.Linear(d, kv * hd, bias=False)
        self.o = nn.Linear(heads * hd, d, bias=False)
        self.gate = nn.Linear(d, ffn, bias=False)
        self.up = nn.Linear(d, ffn, bias=False)
        self.down = nn.Linear(ffn, d, bias=False)

    def forward(self, x, cos, sin, mask):
        b, t, _ = x.shape
        h = self.attn_norm(x)
        rot = lambda v: torch.cat((-v[..., self.hd // 2:], v[..., :self.hd // 2]), -1)  # noqa: E731
        q = self.q(h).view(b, t, self.heads, self.hd).transpose(1, 2)
        k = self.k(h).view(b, t, self.kv, self.hd).transpose(1, 2)
        v = self.v(h).view(b, t, self.kv, self.hd).transpose(1, 2)
        q, k = q * cos + rot(q) * sin, k * cos + rot(k) * sin
        k, v = k.repeat_interleave(self.heads // self.kv, 1), v.repeat_interleave(self.heads // self.kv, 1)
        att = torch.softmax((q @ k.transpose(-2, -1) / math.sqrt(self.hd)).masked_fill(mask, float("-inf")), -1) @ v
        x = x + self.o(att.transpose(1, 2).reshape(b, t, -1))
        h = self.ffn_norm(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class Model(nn.Module):
    def __init__(self, vocab, d, layers, heads, kv, ffn, context):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(Block(d, heads, kv, ffn) for _ in range(layers))
        self.norm = RMSNorm(d)
        hd = d // heads
        inv = 1.0 / (10000.0 ** (torch.arange(0, hd, 2).float() / hd))
        emb = torch.cat([torch.outer(torch.arange(context).float(), inv)] * 2, -1)
        self.register_buffer("cos", emb.cos())
        self.register_buffer("sin", emb.sin())
        self.register_buffer("mask", torch.ones(context, context, dtype=torch.bool).triu(1))
        # ShareLens's initialisation (nanoGPT's): N(0, 0.02), residual outputs N(0, 0.02 / sqrt(2 L)). PyTorch's
        # defaults (N(0, 1) embeddings, tied) saturate the softmax and drive the step into denormals.
        for name, p in self.named_parameters():
            if p.dim() >= 2:
                std = 0.02 / math.sqrt(2 * layers) if name.endswith(("o.weight", "down.weight")) else 0.02
                nn.init.normal_(p, 0.0, std)

    def forward(self, tokens):
        t = tokens.shape[1]
        x = self.embed(tokens)
        for blk in self.blocks:
            x = blk(x, self.cos[:t], self.sin[:t], self.mask[:t, :t])
        return self.norm(x) @ self.embed.weight.t()  # tied output head


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--json")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    vocab, d, layers, heads, kv, ffn, context = 8192, 320, 8, 8, 4, 864, 256
    model = Model(vocab, d, layers, heads, kv, ffn, context)
    params = sum(p.numel() for n, p in model.named_parameters())
    decay = [p for p in model.parameters() if p.dim() >= 2]
    other = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": other, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.95), eps=1e-8)
    tokens = torch.randint(0, vocab, (args.batch, context + 1), generator=torch.Generator().manual_seed(3))

    def step():
        logits = model(tokens[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, vocab), tokens[:, 1:].reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=False)

    for _ in range(3):
        step()
    start = time.time()
    for _ in range(args.steps):
        step()
    seconds = time.time() - start
    tps = args.steps * args.batch * context / seconds
    applied = layers * (2 * d * d + 2 * d * kv * (d // heads) + 3 * d * ffn) + vocab * d
    flops = 6 * applied + 12 * layers * heads * (d // heads) * context
    a, b = torch.randn(2048, 2048), torch.randn(2048, 2048)
    for _ in range(2):
        a @ b
    t = time.time()
    for _ in range(6):
        a @ b
    peak = 2 * 2048 ** 3 * 6 / (time.time() - t)
    print(f"PyTorch {torch.__version__} eager: {params} parameters, batch {args.batch} x {context}, {args.threads} threads")
    print(f"  {tps:.0f} tokens/s, {tps * flops / 1e9:.2f} GFLOP/s, sgemm peak {peak / 1e9:.1f} GFLOP/s, "
          f"MFU {100 * tps * flops / peak:.1f}%")
    if args.json:
        json.dump({"tokens_per_s": tps, "mfu": tps * flops / peak, "sgemm_peak_flops": peak, "parameters": params},
                  open(args.json, "w"))


if __name__ == "__main__":
    main()
