#!/usr/bin/python3
"""Peer check of ShareLens's llama2.c reader (core/llama2c) on a real trained model.

The reference here shares no code with ShareLens. It reads ../shared/data/stories260K.bin (llama2.c's legacy
format) as export.py's legacy_export writes it, and runs the model as llama2.c's model.py does: Meta's
interleaved RoPE pairs on the stored wq and wk, with the RoPE tables the file itself carries, RMSNorm
eps 1e-5, SwiGLU w2(silu(w1 x) * w3 x), grouped KV heads, and the classifier tied to the token embedding.
ShareLens reads the same file through its Llama forward (wq and wk rows presented in Hugging Face's
rotate-half order), so any error in the layout, the permutation or the config shows in the logits:
  * `sharelens hidden-states FILE` gives the reference's logits within 1e-4 relative (float32 forward
    passes), on the legacy file, on a version 1 file and a legacy file with an untied classifier written
    here from the same weights (export.py's version1_export and legacy_export), and on a version 2 (Q8_0)
    file, whose reference runs on the weights dequantised from the file as llama2.c's run.c does;
  * `sharelens convert` writes safetensors + config.json that give the same logits;
  * `sharelens inspect --json` counts the weights without the RoPE tables.
Skipped (exit status 77) when the model file is absent.
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_np import read_file  # noqa: E402
from peer_common import check, finish  # noqa: E402

SKIP = 77


def read_legacy(path):
    """export.py legacy_export: 7 int32, then float32 arrays in its order."""
    blob = open(path, "rb").read()
    dim, hidden, layers, heads, kv_heads, vocab, seq_len = struct.unpack("<7i", blob[:28])
    shared = vocab > 0
    vocab = abs(vocab)
    hd = dim // heads
    data = np.frombuffer(blob[28:], dtype="<f4")
    at = 0

    def take(*shape):
        nonlocal at
        n = int(np.prod(shape))
        out = data[at:at + n].reshape(shape).astype(np.float64)
        at += n
        return out

    w = {"cfg": dict(dim=dim, hidden=hidden, layers=layers, heads=heads, kv_heads=kv_heads, vocab=vocab,
                     seq_len=seq_len)}
    w["emb"] = take(vocab, dim)
    w["attn_norm"] = take(layers, dim)
    w["wq"] = take(layers, dim, dim)
    w["wk"] = take(layers, kv_heads * hd, dim)
    w["wv"] = take(layers, kv_heads * hd, dim)
    w["wo"] = take(layers, dim, dim)
    w["ffn_norm"] = take(layers, dim)
    w["w1"] = take(layers, hidden, dim)
    w["w2"] = take(layers, dim, hidden)
    w["w3"] = take(layers, hidden, dim)
    w["norm"] = take(dim)
    w["cos"] = take(seq_len, hd // 2)
    w["sin"] = take(seq_len, hd // 2)
    w["out"] = w["emb"] if shared else take(vocab, dim)
    check(at == data.size, f"{path}: {data.size - at} floats left over after the legacy layout")
    return w


def write_legacy(path, w, untied_out=None):
    c = w["cfg"]
    with open(path, "wb") as f:
        vocab = c["vocab"] if untied_out is None else -c["vocab"]
        f.write(struct.pack("<7i", c["dim"], c["hidden"], c["layers"], c["heads"], c["kv_heads"], vocab,
                            c["seq_len"]))
        for key in ["emb", "attn_norm", "wq", "wk", "wv", "wo", "ffn_norm", "w1", "w2", "w3", "norm", "cos",
                    "sin"]:
            f.write(w[key].astype("<f4").tobytes())
        if untied_out is not None:
            f.write(untied_out.astype("<f4").tobytes())


def header_v(f, version, c, shared, group=None):
    """export.py version1/2_export: magic, version, 7 int32, the flag (and the group size), padded to 256."""
    f.write(struct.pack("<I", 0x616B3432))
    f.write(struct.pack("<i", version))
    f.write(struct.pack("<7i", c["dim"], c["hidden"], c["layers"], c["heads"], c["kv_heads"], c["vocab"],
                        c["seq_len"]))
    f.write(struct.pack("<B", int(shared)))
    if group is not None:
        f.write(struct.pack("<i", group))
    f.write(b"\0" * (256 - f.tell()))


def matrices(w):
    return [w["emb"], *w["wq"], *w["wk"], *w["wv"], *w["wo"], *w["w1"], *w["w2"], *w["w3"]]


def write_v1(path, w):
    with open(path, "wb") as f:
        header_v(f, 1, w["cfg"], True)
        for a in [*w["attn_norm"], *w["ffn_norm"], w["norm"], *matrices(w)]:
            f.write(a.astype("<f4").tobytes())


def quantize_q80(a, group):
    """export.py quantize_q80: symmetric int8 per group of `group` values, scale = max|w| / 127."""
    g = a.astype(np.float32).reshape(-1, group)
    scale = np.abs(g).max(axis=1) / np.float32(127.0)
    q = np.round(g / scale[:, None]).astype(np.int8)
    return q, scale.astype(np.float32)


def write_v2(path, w, group):
    """export.py version2_export; returns the weights as run.c dequantises them (int8 * scale)."""
    deq = dict(w)
    mats = []
    with open(path, "wb") as f:
        header_v(f, 2, w["cfg"], True, group)
        for a in [*w["attn_norm"], *w["ffn_norm"], w["norm"]]:
            f.write(a.astype("<f4").tobytes())
        for a in matrices(w):
            q, s = quantize_q80(a, group)
            f.write(q.tobytes())
            f.write(s.astype("<f4").tobytes())
            mats.append((q.astype(np.float64) * s[:, None].astype(np.float64)).reshape(a.shape))
    L = w["cfg"]["layers"]
    deq["emb"] = deq["out"] = mats[0]
    for k, key in enumerate(["wq", "wk", "wv", "wo", "w1", "w2", "w3"]):
        deq[key] = np.stack(mats[1 + k * L:1 + (k + 1) * L])
    return deq


def reference_logits(w, ids):
    """llama2.c model.py Transformer.forward on all positions, in float64."""
    c = w["cfg"]
    t = lambda a: torch.from_numpy(np.ascontiguousarray(a))  # noqa: E731
    heads, kv, hd = c["heads"], c["kv_heads"], c["dim"] // c["heads"]
    T = len(ids)
    cos, sin = t(w["cos"][:T]), t(w["sin"][:T])

    def rms(x, g):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * g

    def rope(x):  # x: [T, H, hd]; pairs (2i, 2i+1) rotated by position
        r, i = x.reshape(T, x.shape[1], hd // 2, 2).unbind(-1)
        cs, sn = cos[:, None, :], sin[:, None, :]
        return torch.stack([r * cs - i * sn, r * sn + i * cs], dim=-1).flatten(2)

    h = t(w["emb"])[torch.tensor(ids)]
    mask = torch.triu(torch.full((T, T), float("-inf"), dtype=torch.float64), diagonal=1)
    for l in range(c["layers"]):
        x = rms(h, t(w["attn_norm"][l]))
        q = rope((x @ t(w["wq"][l]).T).reshape(T, heads, hd))
        k = rope((x @ t(w["wk"][l]).T).reshape(T, kv, hd))
        v = (x @ t(w["wv"][l]).T).reshape(T, kv, hd)
        k = k.repeat_interleave(heads // kv, dim=1)
        v = v.repeat_interleave(heads // kv, dim=1)
        scores = torch.einsum("thd,shd->hts", q, k) / np.sqrt(hd) + mask
        out = torch.einsum("hts,shd->thd", torch.softmax(scores, dim=-1), v).reshape(T, heads * hd)
        h = h + out @ t(w["wo"][l]).T
        x = rms(h, t(w["ffn_norm"][l]))
        h = h + (torch.nn.functional.silu(x @ t(w["w1"][l]).T) * (x @ t(w["w3"][l]).T)) @ t(w["w2"][l]).T
    return (rms(h, t(w["norm"])) @ t(w["out"]).T).numpy()


def sharelens_logits(sharelens, path, ids_file, work, name):
    out = os.path.join(work, "out", name + ".hidden.safetensors")  # never beside the model read
    r = subprocess.run([sharelens, "hidden-states", path, "--token-ids", ids_file, "--out", out],
                       capture_output=True, text=True)
    check(r.returncode == 0, f"{name}: hidden-states failed: {r.stderr.strip()}")
    return read_file(out)[0]["logits"].astype(np.float64) if r.returncode == 0 else None


def compare(name, ours, ref, tolerance=1e-4):
    if ours is None:
        return
    rel = np.linalg.norm(ours - ref) / np.linalg.norm(ref)
    check(rel < tolerance, f"{name}: logits differ by {rel:.2e} relative")
    print(f"   {name}: logits of {ref.shape[0]} positions within {rel:.1e} relative of llama2.c's forward")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sharelens", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    if not os.path.exists(args.model):
        print(f"skipped: {args.model} is absent")
        return SKIP
    shutil.rmtree(args.workdir, ignore_errors=True)
    models = os.path.join(args.workdir, "models")
    os.makedirs(models, exist_ok=True)
    os.makedirs(os.path.join(args.workdir, "out"), exist_ok=True)
    w = read_legacy(args.model)
    c = w["cfg"]
    ids = np.random.default_rng(7).integers(0, c["vocab"], size=96).tolist()
    ids_file = os.path.join(args.workdir, "ids.txt")
    with open(ids_file, "w") as f:
        f.write(",".join(map(str, ids)))
    ref = reference_logits(w, ids)
    compare("legacy (stories260K.bin)", sharelens_logits(args.sharelens, args.model, ids_file, args.workdir, "legacy"), ref)

    v1 = os.path.join(models, "stories260K-v1.bin")
    write_v1(v1, w)
    compare("version 1", sharelens_logits(args.sharelens, v1, ids_file, args.workdir, "v1"), ref)

    untied = dict(w)
    untied["out"] = w["emb"] * 0.5 + 0.01 * np.random.default_rng(3).standard_normal(w["emb"].shape)
    legacy_untied = os.path.join(models, "stories260K-untied.bin")
    write_legacy(legacy_untied, w, untied_out=untied["out"])
    compare("legacy, untied classifier", sharelens_logits(args.sharelens, legacy_untied, ids_file, args.workdir, "untied"),
            reference_logits(untied, ids))

    v2 = os.path.join(models, "stories260K-v2.bin")
    dequantised = write_v2(v2, w, group=32)
    compare("version 2 (Q8_0, groups of 32)", sharelens_logits(args.sharelens, v2, ids_file, args.workdir, "v2"),
            reference_logits(dequantised, ids))

    converted = os.path.join(args.workdir, "converted")
    os.makedirs(converted)
    r = subprocess.run([args.sharelens, "convert", args.model, os.path.join(converted, "model.safetensors")],
                       capture_output=True, text=True)
    check(r.returncode == 0, f"convert failed: {r.stderr.strip()}")
    compare("converted to safetensors + config.json", sharelens_logits(args.sharelens, converted, ids_file, args.workdir,
                                                                       "converted"), ref)

    report = os.path.join(args.workdir, "out", "inspect.json")
    r = subprocess.run([args.sharelens, "inspect", args.model, "--json", report], capture_output=True, text=True)
    check(r.returncode == 0, f"inspect --json failed: {r.stderr.strip()}")
    if r.returncode == 0:
        total = json.load(open(report))["parameters"]["total"]
        weights = sum(w[k].size for k in ["emb", "attn_norm", "wq", "wk", "wv", "wo", "ffn_norm", "w1", "w2", "w3",
                                          "norm"])
        check(total == weights, f"parameters: {total}, expected {weights} (the RoPE tables are not weights)")
        print(f"   parameters: {total} (RoPE tables excluded)")
    return finish("llama2.c reader agrees with llama2.c's own forward")


if __name__ == "__main__":
    sys.exit(main())
