#!/usr/bin/python3
"""Peer checks of the weight-sharing methods against references written from the papers' text (numpy/torch),
not from ShareLens's code. Each check names what it follows:

  Cycle (Rev)        Takase & Kiyono, "Lessons on Parameter Sharing across Layers in Transformers", Sec. 2:
                     layers 1..M(ceil(N/M) - 1) cycle through the M blocks, the remaining layers use them in
                     reverse order.
  DirectShare        Cao et al., "Head-wise Shareable Attention", Eq. 3 and Algorithms 1-2: the written model's
                     target units carry their source units' W_q, W_k, W_v; nothing else changes.
  PostShare          the same paper, Eq. 4-5: the penalty gamma * (1/|N|) sum_pairs sum_{p in q,k,v}
                     ||W_p^i - W_p^j||_F logged at step s equals the one computed here from the checkpoint of
                     step s - 1 (the weights that step saw).
  matched baseline   the low-rank sharing paper's protocol: non-embedding parameters, counted here from the two
                     trained checkpoints' tensors, agree within 0.5%; the baseline keeps the embedding treatment.
"""
import json
import math
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_np import read_checkpoint, read_file  # noqa: E402
from peer_common import check, finish, parse_args  # noqa: E402


def cycle_rev(n, m):
    """Takase & Kiyono's CYCLE (REV), 1-based in the paper, returned 0-based."""
    out = []
    for i in range(1, n + 1):
        if i <= m * (math.ceil(n / m) - 1):
            out.append((i - 1) % m)
        else:
            out.append(m - ((i - 1) % m) - 1)
    return out


def check_cycle_rev(sharelens, work):
    for n, m in [(12, 4), (12, 3), (6, 3), (8, 4), (9, 4), (6, 4), (5, 5), (7, 2)]:
        path = os.path.join(work, f"cr-{n}-{m}.json")
        subprocess.run([sharelens, "topology", "--preset", "cycle-rev", "--layers", str(n), "--unique", str(m), "--out", path],
                       check=True, capture_output=True)
        assign = json.load(open(path))["attention"]["assign"]
        check(assign == cycle_rev(n, m), f"cycle-rev N={n} M={m}: {assign} vs {cycle_rev(n, m)}")
    print("   Cycle (Rev): 8 (N, M) pairs agree with Takase & Kiyono's definition")


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    check(r.returncode == 0, f"{' '.join(cmd[:3])} failed: {r.stderr[-400:]}")
    return r


def unit_rows(tensors, layer, proj, unit, heads, kv, hd):
    """A DirectShare unit's rows of W_proj (Hugging Face Llama layout): the query heads of KV group `unit` for
    q, its key or value head for k and v."""
    w = tensors[f"model.layers.{layer}.self_attn.{proj}_proj.weight"].astype(np.float64)
    rows = (heads // kv if proj == "q" else 1) * hd
    return w[unit * rows:(unit + 1) * rows]


def check_postshare(sharelens, work):
    topo = os.path.join(work, "vanilla.json")
    run([sharelens, "topology", "--preset", "vanilla", "--layers", "4", "--unique", "4", "--d-model", "64", "--heads", "4",
         "--kv-heads", "2", "--ffn", "128", "--vocab", "512", "--context", "64", "--out", topo])
    base = os.path.join(work, "pretrained")
    run([sharelens, "train", "--topology", topo, "--corpus", "brown", "--out", base, "--steps", "60", "--batch", "4",
         "--threads", "2", "--checkpoint-every", "60", "--eval-every", "60"])
    out = os.path.join(work, "postshare")
    gamma = 0.2
    run([sharelens, "train", "--init", base, "--postshare", "0.25", "--gamma", str(gamma), "--steps", "6", "--batch", "4",
         "--threads", "2", "--checkpoint-every", "1", "--keep-checkpoints", "100", "--eval-every", "6", "--lr", "1e-3",
         "--context", "64", "--out", out, "--eval-tokens", "4096"])
    report = json.load(open(os.path.join(out, "postshare.json")))
    pairs = report["pairs"]
    check(len(pairs) == round(0.25 * 4 * 2), f"PostShare: {len(pairs)} pairs at alpha 0.25 of 8 KV groups")
    heads, kv, hd = 4, 2, 16
    logged = {}
    for line in open(os.path.join(out, "run", "metrics.jsonl")):
        j = json.loads(line)
        if "postshare_penalty" in j:
            logged[j["step"]] = j["postshare_penalty"]
    compared = 0
    for step in range(2, 7):
        tensors, _ = read_file(os.path.join(out, "run", "checkpoints", "step-%07d" % (step - 1), "model.safetensors"))
        lw = 0.0
        for p in pairs:
            (tl, tu), (sl, su) = p["target"], p["source"]
            for proj in ("q", "k", "v"):
                d = unit_rows(tensors, tl, proj, tu, heads, kv, hd) - unit_rows(tensors, sl, proj, su, heads, kv, hd)
                lw += np.sqrt((d ** 2).sum())
        expected = gamma * lw / len(pairs)
        rel = abs(logged[step] - expected) / expected
        check(rel < 1e-4, f"PostShare penalty at step {step}: logged {logged[step]:.6f}, Eq. 4-5 gives {expected:.6f}")
        compared += 1
    # The shared model: target units carry the source units' W_q, W_k, W_v; every other tensor is the trained one.
    shared = read_checkpoint(os.path.join(out, "postshare"))
    trained, _ = read_file(os.path.join(out, "run", "checkpoints", "step-0000006", "model.safetensors"))
    targets = {(p["target"][0], p["target"][1]) for p in pairs}
    for p in pairs:
        (tl, tu), (sl, su) = p["target"], p["source"]
        for proj in ("q", "k", "v"):
            check(np.array_equal(unit_rows(shared, tl, proj, tu, heads, kv, hd), unit_rows(trained, sl, proj, su, heads, kv, hd)),
                  f"PostShare model: L{tl} unit {tu} {proj} is not its source's")
    for layer in range(4):
        for unit in range(kv):
            if (layer, unit) in targets:
                continue
            for proj in ("q", "k", "v"):
                check(np.array_equal(unit_rows(shared, layer, proj, unit, heads, kv, hd),
                                     unit_rows(trained, layer, proj, unit, heads, kv, hd)),
                      f"PostShare model: untouched L{layer} unit {unit} {proj} changed")
    evals = report["eval"]
    for key in ("original", "directshare", "post_trained", "postshare"):
        check(math.isfinite(evals[key]["nll"]) and evals[key]["tokens"] > 0, f"PostShare eval {key}")
    check(evals["original"]["tokens"] == evals["postshare"]["tokens"], "PostShare: every model scored on the same tokens")
    print(f"   PostShare: penalty matches Eq. 4-5 at {compared} steps; shared units carry their sources' Q, K, V; "
          f"NLL original {evals['original']['nll']:.4f}, DirectShare {evals['directshare']['nll']:.4f}, "
          f"PostShare {evals['postshare']['nll']:.4f}")


def non_embedding(tensors):
    skip = ("embed", "tok_embeddings", "lm_head", "output.")
    return sum(t.size for name, t in tensors.items() if not any(s in name for s in skip))


def check_baseline(sharelens, work):
    topo = os.path.join(work, "cycle.json")
    run([sharelens, "topology", "--preset", "cycle", "--layers", "6", "--unique", "3", "--d-model", "64", "--heads", "4",
         "--kv-heads", "2", "--ffn", "160", "--vocab", "512", "--context", "32", "--lora-rank", "4", "--embedding-rank", "16",
         "--untied-embeddings", "--out", topo])
    out = os.path.join(work, "compare")
    run([sharelens, "train", "--topology", topo, "--corpus", "brown", "--out", out, "--steps", "1", "--batch", "2",
         "--threads", "2", "--compare", "--checkpoint-every", "1"])
    model = read_checkpoint(os.path.join(out, "model", "checkpoints", "step-0000001"))
    base = read_checkpoint(os.path.join(out, "baseline", "checkpoints", "step-0000001"))
    a, b = non_embedding(model), non_embedding(base)
    check(abs(b / a - 1) < 0.005, f"baseline non-embedding parameters {b} vs model {a}")
    # The embedding treatment is carried over: untied, factorised at rank 16 (E [V, 16], P [16, d]).
    check("tok_embeddings.E" in model and "output.E" in model, "the shared model has untied factorised embeddings")
    base_cfg = json.load(open(os.path.join(out, "baseline", "run.json")))["topology"]
    check(base_cfg["embedding"] == {"tied": False, "factor_rank": 16}, f"baseline embedding {base_cfg['embedding']}")
    check(base_cfg["model"]["n_layers"] == 6, "the baseline has the unshared reference's depth")
    print(f"   matched baseline: non-embedding parameters {b} vs {a} ({100 * (b / a - 1):+.2f}%), embedding carried over")


def main():
    args = parse_args()
    check_cycle_rev(args.sharelens, args.workdir)
    check_postshare(args.sharelens, args.workdir)
    check_baseline(args.sharelens, args.workdir)
    return finish("all method peer checks passed")


if __name__ == "__main__":
    sys.exit(main())
