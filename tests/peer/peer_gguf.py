#!/usr/bin/python3
"""Peer check of ShareLens's GGUF reader (core/gguf, core/ggml_blocks).

No GGUF reader is packaged for Debian (gguf-py is not), so the reference here is numpy written from the format's
public description and shares no code with ShareLens: a GGUF writer (ggml's docs/gguf.md: header, typed metadata,
tensor infos, aligned data), dequantisation of ggml's blocks as ggml-common.h lays them out and ggml-quants.c's
dequantize_row_* decodes them (vectorised over blocks here, block by block there), and llama.cpp's
convert_hf_to_gguf.py conventions undone (llama's permuted attn_q / attn_k rows, Gemma's 1 + w norms).
  * For llama, qwen2 and gemma3, a file of random tensors in every type ShareLens reads (F32, F16, BF16, Q8_0,
    Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K) goes through `sharelens convert`; each tensor must come out under
    its Hugging Face name with the values the reference decodes, within float32 rounding.
  * When ../shared/data/stories260K.bin is present: the trained model written as llama.cpp's "llama" GGUF (F32,
    then Q8_0 where rows allow) gives, through `sharelens hidden-states`, the logits of llama2.c's own forward
    (tests/peer/peer_llama2c.py) on the same weights, within 1e-4 relative.
"""
import argparse
import os
import shutil
import struct
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_np import read_file  # noqa: E402
from peer_common import check, finish  # noqa: E402

# ggml type numbers (ggml.h) -> (values per block, bytes per block)
F32, F16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K, BF16 = 0, 1, 2, 3, 6, 7, 8, 12, 13, 14, 30
BLOCKS = {F32: (1, 4), F16: (1, 2), BF16: (1, 2), Q8_0: (32, 34), Q4_0: (32, 18), Q4_1: (32, 20), Q5_0: (32, 22),
          Q5_1: (32, 24), Q4_K: (256, 144), Q5_K: (256, 176), Q6_K: (256, 210)}
NAMES = {F32: "F32", F16: "F16", BF16: "BF16", Q8_0: "Q8_0", Q4_0: "Q4_0", Q4_1: "Q4_1", Q5_0: "Q5_0", Q5_1: "Q5_1",
         Q4_K: "Q4_K", Q5_K: "Q5_K", Q6_K: "Q6_K"}
U32, F32V, STRING = 4, 6, 8  # metadata value types


# ---- writing --------------------------------------------------------------------------------------------------
def gguf_string(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def write_gguf(path, metadata, tensors, alignment=32):
    """metadata: [(key, type, value)]; tensors: [(name, shape as [rows, cols] or [n], ggml type, raw bytes)]."""
    out = bytearray(b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(metadata)))
    for key, vtype, value in metadata:
        out += gguf_string(key) + struct.pack("<I", vtype)
        out += {U32: lambda v: struct.pack("<I", v), F32V: lambda v: struct.pack("<f", v), STRING: gguf_string}[vtype](value)
    offset = 0
    for name, shape, gtype, raw in tensors:
        ne = list(reversed(shape))  # ne[0] is the row length
        out += gguf_string(name) + struct.pack("<I", len(ne)) + struct.pack(f"<{len(ne)}Q", *ne)
        out += struct.pack("<IQ", gtype, offset)
        offset += -(-len(raw) // alignment) * alignment
    for _, _, _, raw in tensors:
        out += b"\0" * (-len(out) % alignment) + raw
    with open(path, "wb") as f:
        f.write(out)


def random_raw(rng, gtype, count):
    """Valid random data for `count` values: any bits, but the f16 scales finite and small."""
    per, size = BLOCKS[gtype]
    if gtype == F32:
        return rng.standard_normal(count).astype("<f4").tobytes()
    if gtype == F16:
        return rng.standard_normal(count).astype("<f2").tobytes()
    if gtype == BF16:
        return (rng.standard_normal(count).astype("<f4").view("<u4") >> 16).astype("<u2").tobytes()
    blocks = rng.integers(0, 256, size=(count // per, size), dtype=np.uint8)
    scale_at = {Q8_0: [0], Q4_0: [0], Q5_0: [0], Q4_1: [0, 2], Q5_1: [0, 2], Q4_K: [0, 2], Q5_K: [0, 2],
                Q6_K: [208]}[gtype]
    for at in scale_at:
        blocks[:, at:at + 2] = rng.uniform(0.001, 0.05, size=count // per).astype("<f2").view(np.uint8).reshape(-1, 2)
    return blocks.tobytes()


# ---- decoding (ggml-common.h layouts, ggml-quants.c dequantize_row_*) ------------------------------------------
def f16(cols):
    return np.ascontiguousarray(cols).view("<f2").astype(np.float64).reshape(-1)


def decode(raw, gtype, count):
    if gtype == F32:
        return np.frombuffer(raw, "<f4").astype(np.float64)
    if gtype == F16:
        return np.frombuffer(raw, "<f2").astype(np.float64)
    if gtype == BF16:
        return (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view("<f4").astype(np.float64)
    per, size = BLOCKS[gtype]
    b = np.frombuffer(raw, np.uint8).reshape(count // per, size)
    if gtype == Q8_0:  # d, then 32 signed bytes
        return (f16(b[:, 0:2])[:, None] * b[:, 2:].view(np.int8)).reshape(-1)
    if gtype == Q4_0:  # d, then 16 bytes: value j in the low nibble of byte j, value 16 + j in its high nibble
        qs = b[:, 2:].astype(np.int64)
        q = np.concatenate([(qs & 0xF) - 8, (qs >> 4) - 8], axis=1)
        return (f16(b[:, 0:2])[:, None] * q).reshape(-1)
    if gtype in (Q4_1, Q5_0, Q5_1):  # d [, m] [, u32 qh: bit v is value v's fifth bit], 16 bytes of nibbles
        has_min, five = gtype != Q5_0, gtype != Q4_1
        d = f16(b[:, 0:2])
        m = f16(b[:, 2:4]) if has_min else np.zeros_like(d)
        at = 4 if has_min else 2
        qs = b[:, at + 4 * five:].astype(np.int64)
        q = np.concatenate([qs & 0xF, qs >> 4], axis=1)
        if five:
            qh = np.ascontiguousarray(b[:, at:at + 4]).view("<u4").astype(np.int64).reshape(-1)
            q = q | (((qh[:, None] >> np.arange(32)) & 1) << 4)
        if gtype == Q5_0:
            q = q - 16
        return (d[:, None] * q + m[:, None]).reshape(-1)
    if gtype in (Q4_K, Q5_K):  # d, dmin, 12 bytes of packed 6-bit (scale, min) x 8, [32 bytes qh,] 128 of nibbles
        d, dmin = f16(b[:, 0:2]), f16(b[:, 2:4])
        s = b[:, 4:16].astype(np.int64)
        scale = np.concatenate([s[:, 0:4] & 63, (s[:, 8:12] & 0xF) | ((s[:, 0:4] >> 6) << 4)], axis=1)
        mins = np.concatenate([s[:, 4:8] & 63, (s[:, 8:12] >> 4) | ((s[:, 4:8] >> 6) << 4)], axis=1)
        qs = b[:, -128:].astype(np.int64).reshape(-1, 4, 32)  # 4 groups of 32 bytes: sub-blocks 2g (low), 2g+1 (high)
        q = np.stack([qs & 0xF, qs >> 4], axis=2).reshape(-1, 8, 32)
        if gtype == Q5_K:  # bit s of qh[l] is value l of sub-block s's fifth bit
            qh = b[:, 16:48].astype(np.int64)
            q = q + (((qh[:, None, :] >> np.arange(8)[None, :, None]) & 1) << 4)
        return (d[:, None, None] * scale[:, :, None] * q - dmin[:, None, None] * mins[:, :, None]).reshape(-1)
    if gtype == Q6_K:  # 128 bytes low nibbles, 64 bytes high 2-bit pairs, 16 signed scales, d
        ql = b[:, 0:128].astype(np.int64).reshape(-1, 2, 64)
        qh = b[:, 128:192].astype(np.int64).reshape(-1, 2, 32)
        sc = b[:, 192:208].view(np.int8).astype(np.int64).reshape(-1, 2, 8)
        d = f16(b[:, 208:210])
        q = np.stack([(ql[:, :, :32] & 0xF) | ((qh & 3) << 4),
                      (ql[:, :, 32:] & 0xF) | (((qh >> 2) & 3) << 4),
                      (ql[:, :, :32] >> 4) | (((qh >> 4) & 3) << 4),
                      (ql[:, :, 32:] >> 4) | (((qh >> 6) & 3) << 4)], axis=2) - 32  # [n, half, k, l]
        l16 = np.arange(32) // 16
        scale = np.stack([sc[:, :, l16 + 2 * k] for k in range(4)], axis=2)  # [n, half, k, l]
        return (d[:, None, None, None] * scale * q).reshape(-1)
    raise ValueError(gtype)


def unpermute(w, heads):
    """llama.cpp's LlamaModel.permute undone: per head, rows interleaved [hd/2][2] back to halves [2][hd/2]."""
    rows = w.shape[0]
    return w.reshape(heads, rows // heads // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


# ---- part A: random tensors of every type ------------------------------------------------------------------------
ARCH_NAMES = {  # GGUF part -> Hugging Face part, from llama.cpp's tensor map
    "llama": {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm"},
    "qwen2": {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm"},
    "gemma3": {"attn_norm": "input_layernorm", "post_attention_norm": "post_attention_layernorm",
               "ffn_norm": "pre_feedforward_layernorm", "post_ffw_norm": "post_feedforward_layernorm",
               "attn_q_norm": "self_attn.q_norm", "attn_k_norm": "self_attn.k_norm"},
}
COMMON = {"attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
          "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
          "ffn_down": "mlp.down_proj"}


def hf_name(arch, name):
    top = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
           "output.weight": "lm_head.weight"}
    if name in top:
        return top[name]
    _, layer, part, suffix = name.split(".")
    return f"model.layers.{layer}.{({**COMMON, **ARCH_NAMES[arch]})[part]}.{suffix}"


def part_a(args, rng):
    hidden, heads, kv, ffn, vocab = 256, 4, 2, 256, 8
    hd = hidden // heads
    for arch in ["llama", "qwen2", "gemma3"]:
        meta = [("general.architecture", STRING, arch), (f"{arch}.embedding_length", U32, hidden),
                (f"{arch}.block_count", U32, 1), (f"{arch}.feed_forward_length", U32, ffn),
                (f"{arch}.attention.head_count", U32, heads), (f"{arch}.attention.head_count_kv", U32, kv),
                (f"{arch}.attention.layer_norm_rms_epsilon", F32V, 1e-6), (f"{arch}.vocab_size", U32, vocab)]
        if arch == "gemma3":
            meta.append((f"{arch}.attention.key_length", U32, hd))
        layout = [("token_embd.weight", [vocab, hidden], Q4_K), ("output.weight", [vocab, hidden], Q6_K),
                  ("output_norm.weight", [hidden], BF16), ("blk.0.attn_q.weight", [hidden, hidden], Q6_K),
                  ("blk.0.attn_k.weight", [kv * hd, hidden], Q8_0), ("blk.0.attn_v.weight", [kv * hd, hidden], Q4_0),
                  ("blk.0.attn_output.weight", [hidden, hidden], Q4_1), ("blk.0.ffn_gate.weight", [ffn, hidden], Q5_K),
                  ("blk.0.ffn_up.weight", [ffn, hidden], Q5_1), ("blk.0.ffn_down.weight", [hidden, ffn], Q5_0),
                  ("blk.0.attn_norm.weight", [hidden], F32), ("blk.0.ffn_norm.weight", [hidden], F16)]
        if arch == "qwen2":
            layout += [("blk.0.attn_q.bias", [hidden], F32), ("blk.0.attn_k.bias", [kv * hd], F32)]
        if arch == "gemma3":
            layout += [("blk.0.post_attention_norm.weight", [hidden], F32), ("blk.0.post_ffw_norm.weight", [hidden], F32),
                       ("blk.0.attn_q_norm.weight", [hd], F32), ("blk.0.attn_k_norm.weight", [hd], F32)]
        tensors, expected = [], {}
        for name, shape, gtype in layout:
            count = int(np.prod(shape))
            raw = random_raw(rng, gtype, count)
            tensors.append((name, shape, gtype, raw))
            w = decode(raw, gtype, count).reshape(shape)
            if arch == "llama" and name.endswith("attn_q.weight"):
                w = unpermute(w, heads)
            if arch == "llama" and name.endswith("attn_k.weight"):
                w = unpermute(w, kv)
            if arch == "gemma3" and name.endswith("norm.weight"):
                w = w - 1.0
            expected[hf_name(arch, name)] = w
        path = os.path.join(args.workdir, "models", f"{arch}.gguf")  # the model's directory holds no output
        write_gguf(path, meta, tensors)
        out = os.path.join(args.workdir, f"{arch}-converted")
        os.makedirs(out)
        r = subprocess.run([args.sharelens, "convert", path, os.path.join(out, "model.safetensors"), "--dtype", "F32"],
                           capture_output=True, text=True)
        check(r.returncode == 0, f"{arch}: convert failed: {r.stderr.strip()}")
        if r.returncode != 0:
            continue
        got, _ = read_file(os.path.join(out, "model.safetensors"))
        check(sorted(got) == sorted(expected), f"{arch}: names {sorted(got)} != {sorted(expected)}")
        worst = 0.0
        for name, want in expected.items():
            if name not in got:
                continue
            check(list(got[name].shape) == list(want.shape), f"{arch} {name}: shape {got[name].shape} != {want.shape}")
            if got[name].shape != want.shape:
                continue
            err = np.abs(got[name].astype(np.float64) - want).max() / max(np.abs(want).max(), 1e-30)
            worst = max(worst, err)
            check(err <= 1e-6, f"{arch} {name}: max relative difference {err:.2e}")
        types = " ".join(sorted({NAMES[t] for _, _, t in layout}))
        print(f"   {arch}: {len(expected)} tensors ({types}), worst relative {worst:.1e}")


# ---- part B: the trained model -----------------------------------------------------------------------------------
def quantize_q8_0(a):
    """Q8_0 as ggml's quantize_row_q8_0_ref: d = max|x| / 127 (stored f16), q = round(x / d)."""
    g = a.astype(np.float32).reshape(-1, 32)
    d = (np.abs(g).max(axis=1) / 127.0).astype("<f2")
    inv = np.where(d.astype(np.float32) > 0, 1.0 / d.astype(np.float32), 0.0)
    q = np.round(g * inv[:, None]).astype(np.int8)
    blocks = np.concatenate([d.view(np.uint8).reshape(-1, 2), q.view(np.uint8)], axis=1)
    return blocks.tobytes()


def part_b(args):
    from peer_llama2c import read_legacy, reference_logits, sharelens_logits, compare  # noqa: E402
    w = read_legacy(args.model)
    c = w["cfg"]
    ids = np.random.default_rng(7).integers(0, c["vocab"], size=64).tolist()
    ids_file = os.path.join(args.workdir, "ids.txt")
    with open(ids_file, "w") as f:
        f.write(",".join(map(str, ids)))
    os.makedirs(os.path.join(args.workdir, "out"), exist_ok=True)
    for label, quantise in [("F32", False), ("Q8_0", True)]:
        meta = [("general.architecture", STRING, "llama"), ("llama.embedding_length", U32, c["dim"]),
                ("llama.block_count", U32, c["layers"]), ("llama.feed_forward_length", U32, c["hidden"]),
                ("llama.attention.head_count", U32, c["heads"]), ("llama.attention.head_count_kv", U32, c["kv_heads"]),
                ("llama.context_length", U32, c["seq_len"]), ("llama.attention.layer_norm_rms_epsilon", F32V, 1e-5),
                ("llama.rope.freq_base", F32V, 10000.0), ("llama.vocab_size", U32, c["vocab"])]
        used = {k: (np.array(v) if isinstance(v, np.ndarray) else v) for k, v in w.items()}
        tensors = []

        def add(name, a, key=None, layer=None):
            # llama2.c's wq / wk rows are Meta's interleaved pairs: what llama.cpp stores for "llama" already.
            if quantise and a.ndim == 2 and a.shape[1] % 32 == 0:
                raw = quantize_q8_0(a)
                deq = decode(raw, Q8_0, a.size).reshape(a.shape)
                tensors.append((name, list(a.shape), Q8_0, raw))
            else:
                deq = a.astype(np.float32).astype(np.float64)
                tensors.append((name, list(a.shape), F32, a.astype("<f4").tobytes()))
            if key is not None:
                if layer is None:
                    used[key] = deq
                else:
                    used[key][layer] = deq

        add("token_embd.weight", w["emb"], "emb")
        for l in range(c["layers"]):
            for gg, key in [("attn_norm", "attn_norm"), ("attn_q", "wq"), ("attn_k", "wk"), ("attn_v", "wv"),
                            ("attn_output", "wo"), ("ffn_norm", "ffn_norm"), ("ffn_gate", "w1"), ("ffn_down", "w2"),
                            ("ffn_up", "w3")]:
                add(f"blk.{l}.{gg}.weight", w[key][l], key, l)
        add("output_norm.weight", w["norm"], "norm")
        used["out"] = used["emb"]
        path = os.path.join(args.workdir, "models", f"stories260K-{label}.gguf")
        write_gguf(path, meta, tensors)
        compare(f"stories260K as GGUF {label}", sharelens_logits(args.sharelens, path, ids_file, args.workdir, label),
                reference_logits(used, ids))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sharelens", required=True)
    ap.add_argument("--model", required=True, help="stories260K.bin (part B is skipped when absent)")
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(os.path.join(args.workdir, "models"))
    part_a(args, np.random.default_rng(11))
    if os.path.exists(args.model):
        part_b(args)
    else:
        print(f"   stories260K part skipped: {args.model} is absent")
    return finish("GGUF reader agrees with the numpy reference")


if __name__ == "__main__":
    sys.exit(main())
