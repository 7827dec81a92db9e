#!/usr/bin/python3
"""The PyTorch peer of `sharelens analyze --spectra --heads --layers` for the benchmark: the same work done
the way a PyTorch user would -- torch.linalg.svdvals, batched over equal shapes, with the same number of
threads -- on the same checkpoint. Prints its timings, and compares its effective ranks with ShareLens's
report (identical except where the cumulative energy lies within 1e-9 of the threshold).

usage: torch_analysis_peer.py CHECKPOINT_DIR OURS.json [--threads 2] [--dtype float64|float32] [--json OUT]
                              [--max-layer-pairs K] [--device cpu|cuda]

--max-layer-pairs K runs only the first K layer pairs of each projection and scales the measured time to
all L(L-1)/2 pairs (every pair of a projection is the same shape, so each costs the same); the report says
so. On a 2-core machine PyTorch needs over half an hour for Llama-3.2-1B's 840 layer-difference SVDs.

--device cuda runs torch.linalg.svdvals on the GPU (the weights are moved there before the clock starts; each
timing ends with torch.cuda.synchronize()), the peer of bench_analysis_backend --device cuda (cuSOLVER).
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "peer"))
from hf_layout import expected_view, shape_of  # noqa: E402
from safetensors_np import read_checkpoint  # noqa: E402

THRESHOLD = 0.95


def ranks_of(sigma):
    e = torch.cumsum(sigma.double() ** 2, dim=-1)
    c = e / e[..., -1:].clamp_min(1e-300)
    rank = (c < THRESHOLD).sum(-1) + 1
    below = torch.gather(c, -1, (rank - 2).clamp_min(0).unsqueeze(-1)).squeeze(-1)
    at = torch.gather(c, -1, (rank - 1).clamp_max(c.shape[-1] - 1).unsqueeze(-1)).squeeze(-1)
    near = ((at - THRESHOLD).abs() < 1e-9) | (((below - THRESHOLD).abs() < 1e-9) & (rank > 1))
    return rank.tolist(), near.tolist()


def batched_svdvals(mats, dtype, max_bytes=1 << 30):
    """svdvals of a list of equal-shape tensors, in batches of at most ~1 GiB."""
    out = []
    per = mats[0].numel() * torch.tensor([], dtype=dtype).element_size()
    step = max(1, max_bytes // per)
    for i in range(0, len(mats), step):
        out.append(torch.linalg.svdvals(torch.stack(mats[i:i + step]).to(dtype)))
    return torch.cat(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("checkpoint")
    ap.add_argument("ours")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--dtype", default="float64")
    ap.add_argument("--json")
    ap.add_argument("--max-layer-pairs", type=int, default=0)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    args = ap.parse_args()
    device = torch.device(args.device)
    sync = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)
    if args.device == "cuda":  # the context and cuSOLVER's handle are made before any clock starts
        torch.linalg.svdvals(torch.randn(2, 64, 64, device=device, dtype=getattr(torch, args.dtype)))
        sync()
    torch.set_num_threads(args.threads)
    dtype = getattr(torch, args.dtype)
    with open(os.path.join(args.checkpoint, "config.json")) as f:
        cfg = json.load(f)
    with open(args.ours) as f:
        ours = json.load(f)
    raw = read_checkpoint(args.checkpoint)
    view = {k: torch.from_numpy(np.ascontiguousarray(v)).to(device)
            for k, v in expected_view("gpt2" if cfg["model_type"] == "gpt2" else "decoder", raw, cfg).items()}
    del raw
    layers, heads, kv, hd = shape_of(cfg)
    timing, mismatches, compared, skipped = {}, [], 0, 0

    def compare(ours_rank, sigma, what):
        nonlocal compared, skipped
        r, near = ranks_of(sigma.unsqueeze(0))
        if near[0]:
            skipped += 1
        else:
            compared += 1
            if r[0] != ours_rank:
                mismatches.append(f"{what}: ours {ours_rank}, torch {r[0]}")

    # spectra: every matrix, batched by shape
    t = time.time()
    names = [k for k in view if not k.endswith(".bias") and k != "position_embedding"]
    by_shape = {}
    for k in names:
        by_shape.setdefault(tuple(view[k].shape), []).append(k)
    spectra = {}
    for shape, keys in by_shape.items():
        for k, s in zip(keys, batched_svdvals([view[k] for k in keys], dtype)):
            spectra[k] = s
    sync()
    timing["spectra_s"] = time.time() - t
    ours_spectra = {s["name"]: s for s in ours.get("spectra", [])}
    for k, s in spectra.items():
        if k in ours_spectra:
            compare(ours_spectra[k]["effective_rank"], s, "spectrum " + k)

    # head differences: every pair among a layer's Q, K, V heads
    t = time.time()
    head_sigmas = []
    for l in range(layers):
        labels = [("q", h) for h in range(heads)] + [("k", h) for h in range(kv)] + [("v", h) for h in range(kv)]
        mats = [view[f"layers.{l}.{p}.head.{h}"] for p, h in labels]
        pairs = [(a, b) for a in range(len(mats)) for b in range(a + 1, len(mats))]
        head_sigmas.append((pairs, batched_svdvals([mats[a].to(dtype) - mats[b].to(dtype) for a, b in pairs], dtype)))
    sync()
    timing["heads_s"] = time.time() - t
    if "head_differences" in ours:
        for l, (pairs, sig) in enumerate(head_sigmas):
            entry = ours["head_differences"]["layers"][l]["effective_rank"]
            for (a, b), s in zip(pairs, sig):
                compare(entry[a][b], s, f"heads layer {l} {a}-{b}")

    # layer differences: every projection, every pair of layers
    layer_sigmas = {}
    timing["layers_s"] = 0.0
    for p in ["q", "k", "v", "o", "gate", "up", "down"]:
        if f"layers.0.{p}" not in view:
            continue
        t = time.time()
        mats = [view[f"layers.{l}.{p}"] for l in range(layers)]
        all_pairs = [(a, b) for a in range(layers) for b in range(a + 1, layers)]
        pairs = all_pairs[:args.max_layer_pairs] if args.max_layer_pairs > 0 else all_pairs
        sig = []
        for a, b in pairs:  # one difference at a time bounds memory; svdvals batches within the chunk
            sig.append(batched_svdvals([mats[a].to(dtype) - mats[b].to(dtype)], dtype)[0])
        layer_sigmas[p] = (pairs, sig)
        sync()
        timing["layers_s"] += (time.time() - t) * len(all_pairs) / len(pairs)
    if "layer_differences" in ours:
        by_proj = {m["proj"]: m for m in ours["layer_differences"]["maps"]}
        for p, (pairs, sig) in layer_sigmas.items():
            for (a, b), s in zip(pairs, sig):
                compare(by_proj[p]["effective_rank"][a][b], s, f"layers {p} {a}-{b}")

    result = {"torch": torch.__version__, "dtype": args.dtype, "device": args.device, "threads": args.threads, "timing": timing,
              "layer_differences_extrapolated_from_pairs": args.max_layer_pairs or None,
              "ranks_compared": compared, "ranks_near_threshold_skipped": skipped, "rank_mismatches": len(mismatches),
              "first_mismatches": mismatches[:10]}
    print(json.dumps(result, indent=2))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
