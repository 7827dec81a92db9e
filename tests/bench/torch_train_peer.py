#!/usr/bin/python3
"""Eager PyTorch peer of bench_train: the same Llama-style model (RMSNorm, SwiGLU, rotate-half RoPE, GQA,
causal attention as ShareLens's LibTorch computes it: F.scaled_dot_product_attention where the torch has it,
the explicit masked softmax on torch 1.13), the same shapes, batch, threads and fp32, trained with
torch.optim.AdamW and clip_grad_norm_. Prints tokens/s and MFU against the sgemm peak measured here.
--device cuda trains on the GPU as bench_train --device cuda does: the forward and loss under bf16 autocast,
fp32 weights and optimizer (torch.optim.AdamW's default implementation there), MFU against the card's bf16
matmul peak."""
import argparse
import contextlib
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


class Weights(nn.Module):
    """One block's seven projection weights (out x in, as nn.Linear keeps them)."""

    def __init__(self, d, heads, kv, ffn):
        super().__init__()
        hd = d // heads
        shapes = {"q": (heads * hd, d), "k": (kv * hd, d), "v": (kv * hd, d), "o": (d, heads * hd),
                  "gate": (ffn, d), "up": (ffn, d), "down": (d, ffn)}
        for name, shape in shapes.items():
            self.register_parameter(name, nn.Parameter(torch.empty(shape)))


class Layer(nn.Module):
    """A layer's norms, its block's weights (its own, or a block several layers share) and, when shared, its
    low-rank correction of each weight: W_l = W_block + B_l A_l (A_l ~ N(0, 1/in), B_l = 0 at the start)."""

    def __init__(self, d, heads, kv, weights, lora_rank):
        super().__init__()
        self.heads, self.kv, self.hd = heads, kv, d // heads
        self.attn_norm, self.ffn_norm = RMSNorm(d), RMSNorm(d)
        self.weights = weights  # shared modules appear once in parameters()
        self.lora_a, self.lora_b = nn.ParameterDict(), nn.ParameterDict()
        for name, w in weights.named_parameters():
            if lora_rank:
                out, inp = w.shape
                self.lora_a[name] = nn.Parameter(torch.randn(lora_rank, inp) / math.sqrt(inp))
                self.lora_b[name] = nn.Parameter(torch.zeros(out, lora_rank))

    def w(self, name):
        base = getattr(self.weights, name)
        return base + self.lora_b[name] @ self.lora_a[name] if name in self.lora_a else base

    def forward(self, x, cos, sin, mask):
        b, t, _ = x.shape
        h = self.attn_norm(x)
        rot = lambda v: torch.cat((-v[..., self.hd // 2:], v[..., :self.hd // 2]), -1)  # noqa: E731
        q = F.linear(h, self.w("q")).view(b, t, self.heads, self.hd).transpose(1, 2)
        k = F.linear(h, self.w("k")).view(b, t, self.kv, self.hd).transpose(1, 2)
        v = F.linear(h, self.w("v")).view(b, t, self.kv, self.hd).transpose(1, 2)
        q, k = q * cos + rot(q) * sin, k * cos + rot(k) * sin
        k, v = k.repeat_interleave(self.heads // self.kv, 1), v.repeat_interleave(self.heads // self.kv, 1)
        if hasattr(F, "scaled_dot_product_attention"):
            att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = torch.softmax((q @ k.transpose(-2, -1) / math.sqrt(self.hd)).masked_fill(mask, float("-inf")),
                                -1) @ v
        x = x + F.linear(att.transpose(1, 2).reshape(b, t, -1), self.w("o"))
        h = self.ffn_norm(x)
        return x + F.linear(F.silu(F.linear(h, self.w("gate"))) * F.linear(h, self.w("up")), self.w("down"))


class Model(nn.Module):
    def __init__(self, vocab, d, layers, heads, kv, ffn, context, unique_blocks=0, lora_rank=0):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        # Cycle sharing: layer l uses block l mod U; LoRA only where a block has several users.
        unique = unique_blocks or layers
        if unique > layers:
            raise SystemExit(f"--cycle {unique}: more unique blocks than the {layers} layers")
        users = lambda block: sum(j % unique == block for j in range(layers))  # noqa: E731
        self.shared = nn.ModuleList(Weights(d, heads, kv, ffn) for _ in range(unique))
        self.blocks = nn.ModuleList(
            Layer(d, heads, kv, self.shared[l % unique], lora_rank if users(l % unique) >= 2 else 0)
            for l in range(layers))
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
            if p.dim() >= 2 and "lora" not in name:
                std = 0.02 / math.sqrt(2 * layers) if name.endswith((".o", ".down")) else 0.02
                nn.init.normal_(p, 0.0, std)

    def forward(self, tokens):
        t = tokens.shape[1]
        x = self.embed(tokens)
        for blk in self.blocks:
            x = blk(x, self.cos[:t], self.sin[:t], self.mask[:t, :t])
        return self.norm(x) @ self.embed.weight.t()  # tied output head


# (vocab, d, layers, heads, kv heads, FFN, context), as bench_train's benchTopology().
SIZES = {"10m": (8192, 320, 8, 8, 4, 864, 256), "0.3m": (1024, 80, 4, 4, 2, 216, 128),
         "1m": (1024, 128, 6, 4, 4, 344, 128), "3m": (1024, 192, 7, 6, 3, 512, 128),
         "gpu": (1024, 512, 12, 8, 4, 1376, 512)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--intra-op-threads", type=int,
                    help="torch.set_num_threads (default: --threads); the matmuls run on OpenBLAS's own pool of "
                         "OPENBLAS_NUM_THREADS (bench_train.sh sets it to --threads) either way in Debian's PyTorch")
    ap.add_argument("--cycle", type=int, default=0, help="unique blocks U of a Cycle (layer l uses l mod U)")
    ap.add_argument("--lora-rank", type=int, default=0, help="per-layer LoRA rank on the shared blocks")
    ap.add_argument("--size", default="10m", choices=sorted(SIZES), help="the model (bench_train --size)")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--json")
    args = ap.parse_args()
    device = torch.device(args.device)
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: this torch sees no CUDA device")
    intra = args.intra_op_threads or args.threads
    torch.set_num_threads(intra)
    torch.manual_seed(1)
    vocab, d, layers, heads, kv, ffn, context = SIZES[args.size]
    model = Model(vocab, d, layers, heads, kv, ffn, context, args.cycle, args.lora_rank).to(device)
    params = sum(p.numel() for n, p in model.named_parameters())
    decay = [p for p in model.parameters() if p.dim() >= 2]
    other = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": other, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.95), eps=1e-8)
    tokens = torch.randint(0, vocab, (args.batch, context + 1), generator=torch.Generator().manual_seed(3)).to(device)
    gpu = args.device == "cuda"
    sync = torch.cuda.synchronize if gpu else (lambda: None)

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16) if gpu else contextlib.nullcontext():
            logits = model(tokens[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, vocab), tokens[:, 1:].reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=False)

    for _ in range(3):
        step()
    sync()
    start = time.time()
    for _ in range(args.steps):
        step()
    sync()
    seconds = time.time() - start
    tps = args.steps * args.batch * context / seconds
    applied = layers * (2 * d * d + 2 * d * kv * (d // heads) + 3 * d * ffn) + vocab * d
    flops = 6 * applied + 12 * layers * heads * (d // heads) * context
    n, reps = (8192, 20) if gpu else (2048, 6)
    a, b = (torch.randn(n, n, device=device, dtype=torch.bfloat16 if gpu else torch.float32) for _ in range(2))
    for _ in range(2):
        a @ b
    sync()
    t = time.time()
    for _ in range(reps):
        a @ b
    sync()
    peak = 2 * n ** 3 * reps / (time.time() - t)
    print(f"PyTorch {torch.__version__} eager: {params} parameters, batch {args.batch} x {context}, {args.threads} threads "
          f"(torch.set_num_threads({intra})), on {'CUDA (bf16 autocast)' if gpu else 'the CPU'}")
    print(f"  {tps:.0f} tokens/s, {tps * flops / 1e9:.2f} GFLOP/s, {'bf16 matmul' if gpu else 'sgemm'} peak {peak / 1e9:.1f} GFLOP/s, "
          f"MFU {100 * tps * flops / peak:.1f}%")
    if args.json:
        json.dump({"tokens_per_s": tps, "mfu": tps * flops / peak, "matmul_peak_flops": peak, "device": args.device, "parameters": params},
                  open(args.json, "w"))


if __name__ == "__main__":
    main()
