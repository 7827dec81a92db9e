#!/usr/bin/python3
"""Peer check of `sharelens compress` against references written from the papers' equations (numpy/torch in
float64), on real fixture checkpoints and the same calibration token ids:

  calibration   X_l = sum_t x_t x_t^T of each projection's input -- the normed residual for Q, K, V and the heads'
                output for O -- collected here by recording the inputs of the independent PyTorch forward of
                peer_forward.py (not ShareLens's), in windows of min(512, context) tokens as ShareLens runs them;
  SVD baseline  SVD-LLM (Wang et al. 2024, Sec. 3.1): S = cholesky(X) lower, W S = U Sigma V^T, the rank-r
                W' = U_r Sigma_r V_r^T S^-1 (the rank read from the written record);
  MASA          "Share Your Attention" (Eq. 4): the atoms of a layer group are the leading eigenvectors of W W^T for
                W = [vec W_l ...], c_ls = tr(D_s^T W_l); local refinement: the residual dW_l = W_l - sum_s c_ls D_s
                approximated by the whitened rank-r term as above; single-layer groups are exact; the ranks from
                Algorithm 1 (its start r = floor(beta m n / (m + n)), then rank moved from Q to K and from O to
                V while the tail energy of Eq. 17 of the whitened residuals falls), written here from the
                paper's pseudo-code;
  and the refinement's claim: the whitened residual term has a lower activation-weighted error
  sum_t ||(dW - M) x_t||^2 than the plain truncated SVD of dW at the same rank.
The effective matrices of the compressed checkpoint (`sharelens dump-view`) must agree within 1e-4 relative.
A GPT-2 checkpoint (packed c_attn) compressed and exported back (`export-hf`) runs in the reference forward to
the same hidden states as ShareLens runs the compressed checkpoint, and every checkpoint holds exactly the
parameters its record claims.
"""
import json
import os
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_forward as pf  # noqa: E402
from safetensors_np import read_checkpoint, read_file  # noqa: E402
from peer_common import check, finish, make_fixtures, parse_args  # noqa: E402


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    check(r.returncode == 0, f"{' '.join(map(str, cmd[:3]))} failed: {r.stderr[-500:]}")
    return r


def calibration_inputs(directory, ids):
    """Per layer: X for the Q/K/V input and for the O input, from the reference forward's own activations."""
    raw = read_checkpoint(directory)
    cfg = json.load(open(os.path.join(directory, "config.json")))
    layers = cfg["num_hidden_layers"]
    watch = {}
    for l in range(layers):
        for proj, kind in (("q", "attn"), ("o", "out")):
            arr = np.ascontiguousarray(raw[f"model.layers.{l}.self_attn.{proj}_proj.weight"])
            raw[f"model.layers.{l}.self_attn.{proj}_proj.weight"] = arr
            watch[arr.__array_interface__["data"][0]] = (l, kind)
    x = {}
    linear = torch.nn.functional.linear

    def recording(inp, w, b=None):
        key = watch.get(w.data_ptr())
        if key:
            a = inp.detach().reshape(-1, inp.shape[-1]).double()
            x[key] = x.get(key, 0) + a.t() @ a
        return linear(inp, w, b)

    chunk = min(512, pf.context_of(cfg))
    torch.nn.functional.linear = recording
    try:
        with torch.no_grad():
            for start in range(0, len(ids), chunk):
                pf.decoder_reference(raw, cfg, ids[start:start + chunk])
    finally:
        torch.nn.functional.linear = linear
    return {k: v.numpy() for k, v in x.items()}, raw, cfg


def whitened(w, x, rank):
    """SVD-LLM: the rank-r term minimising ||(w - m) S||_F with X = S S^T."""
    s = np.linalg.cholesky(x)
    u, sv, vt = np.linalg.svd(w @ s, full_matrices=False)
    return (u[:, :rank] * sv[:rank]) @ np.linalg.solve(s.T, vt[:rank].T).T


def plain(w, rank):
    u, sv, vt = np.linalg.svd(w, full_matrices=False)
    return (u[:, :rank] * sv[:rank]) @ vt[:rank]


def algorithm1(sigma_a, sigma_b, r_a, r_b):
    """MASA supplementary, Algorithm 1 ("Balanced SVD-Based Matrix Compression with Adaptive Ratio
    Adjustment"): from the initial (r_A, r_B), repeatedly r_A -= 1, r_B += 1, stopping when r_A < 1 or
    r_B > min(m, k); keep the pair of least E = sum_{i > r_A} sigma_i^A^2 + sum_{j > r_B} sigma_j^B^2 (Eq. 17;
    its printed index into flip(cumsum(flip(sigma^2))) counts from the other end, the sums are what it means)."""
    def error(ra, rb):
        return float(np.sum(sigma_a[ra:] ** 2) + np.sum(sigma_b[rb:] ** 2))
    best, e_min = (r_a, r_b), error(r_a, r_b)
    while True:
        r_a, r_b = r_a - 1, r_b + 1
        if r_a < 1 or r_b > len(sigma_b):
            break
        e = error(r_a, r_b)
        if e < e_min:
            e_min, best = e, (r_a, r_b)
    return best


def weighted_error(d, x):
    return float(np.trace(d @ x @ d.T))


def effective(sharelens, directory, work, name):
    out = os.path.join(work, name + ".view.safetensors")
    run([sharelens, "dump-view", directory, out])
    return read_file(out)[0]


def record_of(directory):
    _, meta = read_file(os.path.join(directory, "model.safetensors"))
    return json.loads(meta["sharelens.compressed"])


def stored_parameters(directory):
    tensors, _ = read_file(os.path.join(directory, "model.safetensors"))
    return sum(t.size for n, t in tensors.items() if n.startswith("compressed."))


def compare(label, mine, reference):
    rel = np.linalg.norm(mine - reference) / np.linalg.norm(reference)
    check(rel < 1e-4, f"{label}: relative difference {rel:.2e}")
    return rel


def check_llama(sharelens, fixture, work):
    rng = np.random.default_rng(11)
    cfg = json.load(open(os.path.join(fixture, "config.json")))
    ids = [int(i) for i in rng.integers(0, cfg["vocab_size"], size=150)]
    ids_file = os.path.join(work, "calibration.ids")
    open(ids_file, "w").write(" ".join(map(str, ids)))
    x, raw, cfg = calibration_inputs(fixture, ids)
    layers = cfg["num_hidden_layers"]
    weight = lambda l, p: raw[f"model.layers.{l}.self_attn.{p}_proj.weight"].astype(np.float64)  # noqa: E731
    inputs = lambda l, p: x[(l, "out" if p == "o" else "attn")]  # noqa: E731

    # SVD-LLM baseline.
    svd_dir = os.path.join(work, "svd")
    run([sharelens, "compress", fixture, "--method", "svd", "--ratio", "0.5", "--calibration-ids", ids_file, "--out", svd_dir])
    rec = record_of(svd_dir)
    view = effective(sharelens, svd_dir, work, "svd")
    worst = 0.0
    for l in range(layers):
        for p in "qkvo":
            r = rec["ranks"][p][l]
            worst = max(worst, compare(f"svd layer {l} {p} (rank {r})", view[f"layers.{l}.{p}"].astype(np.float64),
                                       whitened(weight(l, p), inputs(l, p), r)))
    check(stored_parameters(svd_dir) == rec["parameters"], "svd: stored parameters equal the record's")
    print(f"   SVD-LLM baseline: {4 * layers} matrices agree with S = chol(X), W S = U S V^T within {worst:.1e}")

    # MASA: groups 0-0 and 1-2, one atom, refined residuals.
    masa_dir = os.path.join(work, "masa")
    alpha = 0.8
    run([sharelens, "compress", fixture, "--method", "masa", "--ratio", str(alpha), "--groups", "0-0,1-2", "--atoms", "1",
         "--calibration-ids", ids_file, "--out", masa_dir])
    rec = record_of(masa_dir)
    view = effective(sharelens, masa_dir, work, "masa")
    # The budget: floor(alpha N) less the atoms (a whole layer for group 0-0, one atom + 2 coefficients per
    # projection for 1-2) is what the residuals of layers 1 and 2 may keep: beta of their parameters.
    sizes = {p: weight(0, p).size for p in "qkvo"}
    target = int(np.floor(alpha * layers * sum(sizes.values())))
    atoms = sum(sizes.values()) + 4 + sum(sizes.values()) + 4 * 2
    beta = (target - atoms) / (2 * sum(sizes.values()))
    check(abs(rec["beta"][1] - beta) < 1e-12, f"masa: beta {rec['beta']} vs {beta}")
    worst, wins, moved = 0.0, 0, 0
    residuals = {}
    for p in "qkvo":
        worst = max(worst, compare(f"masa layer 0 {p} (single-layer group: exact)", view[f"layers.0.{p}"].astype(np.float64), weight(0, p)))
        stacked = np.stack([weight(l, p).ravel() for l in (1, 2)], axis=1)   # W = [vec W_1, vec W_2]
        lam, vec = np.linalg.eigh(stacked.T @ stacked)                        # eigenvectors of W^T W ...
        u = stacked @ vec[:, -1] / np.sqrt(lam[-1])                           # ... give those of W W^T: D_1
        atom = u.reshape(weight(1, p).shape)
        for l in (1, 2):
            c = float((atom * weight(l, p)).sum())                            # c_l1 = tr(D_1^T W_l)
            residuals[(l, p)] = (c * atom, weight(l, p) - c * atom)
    for l in (1, 2):
        ranks = {}
        for p in "qkvo":
            m, n = weight(l, p).shape
            ranks[p] = min(min(m, n), int(np.floor(beta * m * n / (m + n))))   # Algorithm 1's start
        sigma = {p: np.linalg.svd(residuals[(l, p)][1] @ np.linalg.cholesky(inputs(l, p)), compute_uv=False) for p in "qkvo"}
        for a, b in (("q", "k"), ("o", "v")):
            start = (ranks[a], ranks[b])
            ranks[a], ranks[b] = algorithm1(sigma[a], sigma[b], *start)
            moved += start != (ranks[a], ranks[b])
        for p in "qkvo":
            check(rec["ranks"][p][l] == ranks[p], f"masa layer {l} {p}: rank {rec['ranks'][p][l]}, Algorithm 1 gives {ranks[p]}")
            approx, residual = residuals[(l, p)]
            r = ranks[p]
            term = whitened(residual, inputs(l, p), r)
            worst = max(worst, compare(f"masa layer {l} {p} (rank {r})", view[f"layers.{l}.{p}"].astype(np.float64), approx + term))
            if r > 0:
                better = weighted_error(residual - term, inputs(l, p)) < weighted_error(residual - plain(residual, r), inputs(l, p))
                check(better, f"masa layer {l} {p}: the whitened residual term is not better than the plain SVD's")
                wins += better
    check(stored_parameters(masa_dir) == rec["parameters"], "masa: stored parameters equal the record's")
    print(f"   MASA: atoms, coefficients and refined residuals of {4 * layers} matrices agree within {worst:.1e}; "
          f"Algorithm 1's ranks identical ({moved} of 4 pairs moved from their start); whitening beat the plain SVD on the activation-weighted error in {wins} of {wins} residuals")


def check_gpt2(sharelens, fixture, work):
    """Packed c_attn: compressed, run by ShareLens; exported back, run by the reference -- the same hidden states."""
    rng = np.random.default_rng(5)
    cfg = json.load(open(os.path.join(fixture, "config.json")))
    ids_file = os.path.join(work, "gpt2.ids")
    open(ids_file, "w").write(" ".join(str(int(i)) for i in rng.integers(0, cfg["vocab_size"], size=140)))
    out = os.path.join(work, "gpt2-masa")
    run([sharelens, "compress", fixture, "--method", "masa", "--ratio", "0.7", "--groups", "kl:2", "--calibration-ids", ids_file,
         "--out", out])
    export = os.path.join(work, "gpt2-export")
    run([sharelens, "export-hf", out, export])
    restored = read_checkpoint(export)
    check(not any(n.startswith("compressed.") for n in restored), "export-hf keeps no compressed tensor")
    check(any(n.endswith("attn.c_attn.weight") for n in restored), "export-hf restores GPT-2's packed c_attn")
    ids = [int(i) for i in rng.integers(0, cfg["vocab_size"], size=32)]
    ids_run = os.path.join(work, "gpt2-run.ids")
    open(ids_run, "w").write(",".join(map(str, ids)))
    hidden = os.path.join(work, "gpt2-hidden.safetensors")
    run([sharelens, "hidden-states", out, "--token-ids", ids_run, "--out", hidden])
    ours, _ = read_file(hidden)
    with torch.no_grad():
        (states, logits), _ = pf.reference(export, ids)
    worst = max(float(((torch.from_numpy(ours[f"hidden.{i}"]) - s).norm() / s.norm())) for i, s in enumerate(states))
    check(worst < 1e-4, f"GPT-2 compressed: hidden states differ from the reference on the export by {worst:.2e}")
    rec = record_of(out)
    check(stored_parameters(out) == rec["parameters"] <= rec["target_parameters"], "GPT-2: parameters as recorded, within the target")
    print(f"   GPT-2 (packed c_attn): compressed run and exported reference agree within {worst:.1e}; "
          f"{rec['parameters']} of {rec['original_parameters']} attention parameters (target {rec['target_parameters']})")


def main():
    args = parse_args()
    torch.set_num_threads(2)
    listed = make_fixtures(args)
    check_llama(args.sharelens, next(f for f in listed if f.endswith("/llama")), args.workdir)
    check_gpt2(args.sharelens, next(f for f in listed if f.endswith("/gpt2")), args.workdir)
    return finish("all compression peer checks passed")


if __name__ == "__main__":
    sys.exit(main())
