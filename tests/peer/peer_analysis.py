#!/usr/bin/python3
"""Peer check of `sharelens analyze` against an independent PyTorch/numpy implementation (float64 SVDs).

On the same checkpoint files, for every family fixture:
  spectra           torch.linalg.svdvals (float64) of every matrix: identical effective ranks, singular values
                    within 1e-4 relative where sigma / sigma_1 > 1e-3;
  head differences  svdvals of every pair difference among all of a layer's attention heads -- Q, K, V heads
                    (head_dim x hidden) and O heads (hidden x head_dim, compared transposed), as the low-rank
                    sharing paper compares every pair of a layer's attention weight matrices: identical ranks;
  layer differences svdvals of W_l - W_m for every projection and pair: identical ranks;
  matrix PCA        numpy SVD of the stacked vec(W_l): singular values and explained variance;
  DirectShare       cosine similarities of [W_q || W_k] and the best earlier match of every head;
  embedding         factorisation errors (Eckart-Young from numpy's SVD), rho, tying-gap cosine;
  ESD               eigenvalues of W^T W from numpy's SVD and the power-law fit of Clauset, Shalizi & Newman
                    (2009): MLE alpha for every x_min leaving >= 10 values, the x_min of least KS distance.
A rank may differ only where the cumulative energy lies within 1e-9 of the threshold.
"""
import json
import os
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_layout import expected_view, shape_of  # noqa: E402
from safetensors_np import read_checkpoint  # noqa: E402
from peer_common import check, finish, make_fixtures, parse_args  # noqa: E402

THRESHOLD = 0.95
NEAR = 1e-9
STATS = {"ranks": 0, "near_threshold_skipped": 0, "sigmas": 0}


def svdvals(matrices):
    """float64 singular values of a list of equal-shape matrices (batched), or one matrix."""
    x = torch.from_numpy(np.stack([np.asarray(m, dtype=np.float64) for m in matrices]))
    return torch.linalg.svdvals(x).numpy()


def rank_and_margin(sigma):
    """Effective rank at THRESHOLD, and whether the cumulative energy sits within NEAR of it."""
    energy = np.cumsum(sigma.astype(np.float64) ** 2)
    total = energy[-1] if len(energy) else 0.0
    if total <= 0:
        return 0, False
    c = energy / total
    k = int(np.searchsorted(c, THRESHOLD - 0.0, side="left"))  # first index with c >= THRESHOLD
    while k < len(c) and c[k] < THRESHOLD:
        k += 1
    near = abs(c[min(k, len(c) - 1)] - THRESHOLD) < NEAR or (k > 0 and abs(c[k - 1] - THRESHOLD) < NEAR)
    return k + 1, near


def compare_rank(ours, sigma, what):
    want, near = rank_and_margin(sigma)
    if near:
        STATS["near_threshold_skipped"] += 1
        return
    STATS["ranks"] += 1
    check(ours == want, f"{what}: effective rank {ours} vs torch {want}")


def check_spectra(report, view, name):
    by_name = {s["name"]: s for s in report["spectra"]}
    for key, matrix in view.items():
        if key.endswith(".bias") or key == "position_embedding":
            continue
        ours = by_name.get(key)
        check(ours is not None, f"{name}: no spectrum for {key}")
        if ours is None:
            continue
        sigma = svdvals([matrix])[0]
        compare_rank(ours["effective_rank"], sigma, f"{name} spectrum {key}")
        mine = np.array(ours["singular_values"])
        check(mine.shape == sigma.shape, f"{name} {key}: {mine.shape} singular values vs {sigma.shape}")
        keep = sigma / sigma[0] > 1e-3
        rel = np.abs(mine[keep] - sigma[keep]) / sigma[keep]
        STATS["sigmas"] += int(keep.sum())
        check(rel.max() < 1e-4, f"{name} {key}: singular values off by {rel.max():.2e} relative")
        frob = np.sqrt((np.asarray(matrix, dtype=np.float64) ** 2).sum())
        check(abs(ours["frobenius_norm"] - frob) < 1e-9 * frob + 1e-12, f"{name} {key}: Frobenius norm")


def check_head_differences(report, view, cfg, name):
    layers, heads, kv, _ = shape_of(cfg)
    for entry in report["head_differences"]["layers"]:
        l = entry["layer"]
        labels = ([f"q{h}" for h in range(heads)] + [f"k{h}" for h in range(kv)] + [f"v{h}" for h in range(kv)] +
                  [f"o{h}" for h in range(heads)])
        check(entry["labels"] == labels, f"{name} layer {l}: head labels {entry['labels']}")
        mats = [view[f"layers.{l}.{lab[0]}.head.{lab[1:]}"] for lab in labels]
        mats = [m.T if lab[0] == "o" else m for m, lab in zip(mats, labels)]  # O heads: hidden x head_dim
        pairs = [(a, b) for a in range(len(mats)) for b in range(a + 1, len(mats))]
        sig = svdvals([mats[a].astype(np.float64) - mats[b].astype(np.float64) for a, b in pairs])
        for (a, b), s in zip(pairs, sig):
            compare_rank(entry["effective_rank"][a][b], s, f"{name} heads layer {l} {labels[a]}-{labels[b]}")
            check(entry["effective_rank"][a][b] == entry["effective_rank"][b][a], f"{name}: head map not symmetric")


def check_layer_differences(report, view, cfg, name):
    layers = shape_of(cfg)[0]
    for m in report["layer_differences"]["maps"]:
        p = m["proj"]
        mats = [view[f"layers.{l}.{p}"].astype(np.float64) for l in range(layers)]
        pairs = [(a, b) for a in range(layers) for b in range(a + 1, layers)]
        sig = svdvals([mats[a] - mats[b] for a, b in pairs])
        for (a, b), s in zip(pairs, sig):
            compare_rank(m["effective_rank"][a][b], s, f"{name} layers {p} {a}-{b}")
        check(all(m["effective_rank"][i][i] == 0 for i in range(layers)), f"{name} layers {p}: diagonal")


def check_matrix_pca(report, view, cfg, name):
    layers = shape_of(cfg)[0]
    for g in report["matrix_pca"]:
        x = np.stack([view[f"layers.{l}.{g['proj']}"].astype(np.float64).ravel() for l in g["layers"]], axis=1)
        s = np.linalg.svd(x, compute_uv=False)
        check(np.allclose(g["singular_values"], s, rtol=1e-6, atol=1e-9 * s[0]), f"{name} PCA {g['proj']}: s")
        explained = np.cumsum(s ** 2) / (s ** 2).sum()
        check(np.allclose(g["explained_variance"], explained, atol=1e-9), f"{name} PCA {g['proj']}: explained")
        check(len(g["layers"]) == layers, f"{name} PCA: one group of all layers by default")


def check_directshare(report, view, cfg, name):
    """Head-wise shareable attention (Cao et al. 2024), from the paper's text: a sharing unit is a head with
    its own key (MHA) or a KV group -- its query heads and their shared key head -- under GQA; its signature is
    [W_q ; W_k] flattened, units are scored by cosine similarity (Eq. 3), and every unit of a later layer is
    matched to its most similar unit of the earlier layers (Algorithm 1). alpha = shared units / all units."""
    layers, heads, kv, hd = shape_of(cfg)
    group = heads // kv
    ds = report["directshare"]
    check(ds["units"] == kv and ds["unit"] == ("head" if group == 1 else "kv_group"), f"{name} DirectShare unit")
    rows = []
    for l in range(layers):
        for g in range(kv):
            queries = [view[f"layers.{l}.q.head.{h}"] for h in range(g * group, (g + 1) * group)]
            v = np.concatenate([q.ravel() for q in queries] + [view[f"layers.{l}.k.head.{g}"].ravel()])
            rows.append(v.astype(np.float64) / np.linalg.norm(v))
    x = np.stack(rows)
    sim = x @ x.T
    ours = np.array(ds["similarity"])
    check(ours.shape == sim.shape and np.abs(ours - sim).max() < 1e-5, f"{name} DirectShare similarity")
    check(len(ds["best_matches"]) == (layers - 1) * kv, f"{name} DirectShare: one best match per later unit")
    for m in ds["best_matches"]:
        tl, tu = m["target"]
        earlier = sim[tl * kv + tu, : tl * kv]
        best = int(np.argmax(earlier))
        margin = np.sort(earlier)[-1] - np.sort(earlier)[-2] if len(earlier) > 1 else 1.0
        if margin > 1e-5:  # not a tie
            check(m["source"] == [best // kv, best % kv], f"{name} DirectShare best match of {tl},{tu}")
    check(abs(ds["achieved_ratio"] - len(ds["chosen"]) / (layers * kv)) < 1e-12, f"{name} DirectShare alpha")
    has_bias = "layers.0.q.bias" in view
    text = cfg.get("text_config", cfg)
    hidden = text.get("hidden_size", cfg.get("n_embd"))
    per_unit = (group + 2) * hd * hidden + ((group + 2) * hd if has_bias else 0)
    check(ds["parameters_per_unit"] == per_unit, f"{name} DirectShare parameters per unit {ds['parameters_per_unit']} vs {per_unit}")


def check_embedding(report, view, raw, name):
    e = report["embedding"]
    emb = view["embedding"].astype(np.float64)
    s = np.linalg.svd(emb, compute_uv=False)
    energy = np.cumsum(s ** 2) / (s ** 2).sum()
    for p in e["factorization"]:
        want = np.sqrt(max(0.0, 1.0 - energy[p["rank"] - 1]))
        check(abs(p["relative_error"] - want) < 1e-6, f"{name} embedding error at r={p['rank']}")
        check(p["parameters"] == p["rank"] * (emb.shape[0] + emb.shape[1]), f"{name} embedding parameters")
    total = sum(int(np.prod(a.shape)) for k, a in raw.items()
                if not (k.endswith("attn.bias") and not k.endswith("c_attn.bias")) and "vision" not in k
                and "multi_modal" not in k)
    emb_params = emb.size + (view["output_head"].size if "output_head" in view else 0)
    check(abs(e["rho"] - emb_params / total) < 1e-12, f"{name} rho {e['rho']} vs {emb_params / total}")
    if "output_head" in view:
        u = view["output_head"].astype(np.float64)
        cos = (emb * u).sum(1) / np.linalg.norm(emb, axis=1) / np.linalg.norm(u, axis=1)
        check(abs(e["tying_gap"]["mean_cosine"] - cos.mean()) < 1e-9, f"{name} tying gap mean cosine")


def csn_fit(values, min_tail=10):
    """Clauset, Shalizi & Newman (2009): alpha_hat = 1 + n / sum ln(x_i / x_min) (Eq. 3.1) for each candidate
    x_min, and the x_min minimising D = max |S(x) - P(x)| over the tail (Sec. 3.3), P(x) = 1 - (x/x_min)^(1-alpha)."""
    x = np.sort(values[values > 0])
    best = (np.inf, None, None)
    for i in range(len(x) - min_tail + 1):
        if i > 0 and x[i] == x[i - 1]:
            continue
        tail = x[i:]
        k = len(tail)
        alpha = 1 + k / np.log(tail / tail[0]).sum()
        model = 1 - (tail / tail[0]) ** (1 - alpha)
        empirical_hi = np.arange(1, k + 1) / k
        empirical_lo = np.arange(0, k) / k
        d = max(np.abs(empirical_hi - model).max(), np.abs(empirical_lo - model).max())
        if d < best[0]:
            best = (d, alpha, tail[0])
    return best


def check_esd(sharelens, fixture, view, name, work):
    out = os.path.join(work, name + ".esd.json")
    run = subprocess.run([sharelens, "analyze", fixture, "--esd", "--json", out], capture_output=True, text=True)
    check(run.returncode == 0, f"{name}: analyze --esd failed: {run.stderr}")
    compared = 0
    for m in json.load(open(out))["esd"]:
        w = view[m["name"]].astype(np.float64)
        eig = np.linalg.svd(w, compute_uv=False) ** 2
        d, alpha, xmin = csn_fit(eig)
        if alpha is None:
            check(m["alpha"] is None, f"{name} {m['name']}: a fit with fewer than 10 eigenvalues")
            continue
        check(abs(m["xmin"] - xmin) <= 1e-6 * xmin, f"{name} {m['name']}: x_min {m['xmin']} vs {xmin}")
        check(abs(m["alpha"] - alpha) <= 1e-6 * alpha, f"{name} {m['name']}: alpha {m['alpha']} vs {alpha}")
        check(abs(m["ks_distance"] - d) <= 1e-6, f"{name} {m['name']}: KS distance {m['ks_distance']} vs {d}")
        compared += 1
    print(f"   {name}: {compared} power-law fits agree with Clauset-Shalizi-Newman")


def main():
    args = parse_args()
    torch.set_num_threads(2)
    for fixture in make_fixtures(args):
        name = os.path.basename(fixture)
        with open(os.path.join(fixture, "config.json")) as f:
            cfg = json.load(f)
        raw = read_checkpoint(fixture)
        view = expected_view("gpt2" if cfg["model_type"] == "gpt2" else "decoder", raw, cfg)
        out = os.path.join(args.workdir, name + ".analysis.json")
        run = subprocess.run([args.sharelens, "analyze", fixture, "--json", out], capture_output=True, text=True)
        check(run.returncode == 0, f"{name}: analyze failed: {run.stderr}")
        if run.returncode != 0:
            continue
        with open(out) as f:
            report = json.load(f)
        check_spectra(report, view, name)
        check_head_differences(report, view, cfg, name)
        check_layer_differences(report, view, cfg, name)
        check_matrix_pca(report, view, cfg, name)
        check_directshare(report, view, cfg, name)
        check_embedding(report, view, raw, name)
        if name in ("llama_structured", "gpt2"):
            check_esd(args.sharelens, fixture, view, name, args.workdir)
        print(f"== {name}: checked")
    print(f"{STATS['ranks']} effective ranks compared ({STATS['near_threshold_skipped']} within {NEAR} of the "
          f"threshold skipped), {STATS['sigmas']} singular values compared")
    return finish("all analysis peer checks passed")


if __name__ == "__main__":
    sys.exit(main())
