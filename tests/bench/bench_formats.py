#!/usr/bin/python3
"""Read speed of each checkpoint format ShareLens opens, beside safetensors, on the same tensors (warm cache).

One random Llama-shaped model (llama2.c's 110M shape by default: 12 layers x 768, 12 heads, FFN 2048, vocab
32000; float32) is written as safetensors + config.json, as pytorch_model.bin (torch.save), as a llama2.c
legacy file and as GGUF (F32; Q8_0; Q4_K, random blocks of the same shapes: the dequantisation's cost). Each is then opened and read whole as float32 by `bench_checkpoint_io --read` (Checkpoint::open and readFloat
of every tensor, as the analyses read them), best of 5 rounds alternated over the formats after a round
that warms the page cache; Debian's torch.load of the .bin is timed beside it.
Usage: bench_formats.py --bench build/tests/bench_checkpoint_io [--workdir /tmp/bench-formats] [--layers 12]
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "peer"))
from peer_llama2c import write_legacy  # noqa: E402
from peer_gguf import F32, Q4_K, Q8_0, STRING, U32, quantize_q8_0, random_raw, write_gguf  # noqa: E402


def write_safetensors(path, tensors):
    header, offset, blobs = {}, 0, []
    for name, a in tensors.items():
        b = np.ascontiguousarray(a, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + len(b)]}
        offset += len(b)
        blobs.append(b)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True, help="build/tests/bench_checkpoint_io")
    ap.add_argument("--workdir", default="/tmp/bench-formats")
    ap.add_argument("--layers", type=int, default=12)
    args = ap.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    dim, hidden, heads, vocab, seq, L = 768, 2048, 12, 32000, 1024, args.layers
    hd = dim // heads
    rng = np.random.default_rng(0)
    g = lambda *s: rng.standard_normal(s, dtype=np.float32) * 0.02  # noqa: E731
    w = {"cfg": dict(dim=dim, hidden=hidden, layers=L, heads=heads, kv_heads=heads, vocab=vocab, seq_len=seq),
         "emb": g(vocab, dim), "attn_norm": np.ones((L, dim), np.float32), "wq": g(L, dim, dim),
         "wk": g(L, dim, dim), "wv": g(L, dim, dim), "wo": g(L, dim, dim), "ffn_norm": np.ones((L, dim), np.float32),
         "w1": g(L, hidden, dim), "w2": g(L, dim, hidden), "w3": g(L, hidden, dim), "norm": np.ones(dim, np.float32),
         "cos": np.ones((seq, hd // 2), np.float32), "sin": np.zeros((seq, hd // 2), np.float32)}
    hf = {"model.embed_tokens.weight": w["emb"], "model.norm.weight": w["norm"]}
    for l in range(L):
        p = f"model.layers.{l}."
        hf.update({p + "input_layernorm.weight": w["attn_norm"][l], p + "post_attention_layernorm.weight": w["ffn_norm"][l],
                   p + "self_attn.q_proj.weight": w["wq"][l], p + "self_attn.k_proj.weight": w["wk"][l],
                   p + "self_attn.v_proj.weight": w["wv"][l], p + "self_attn.o_proj.weight": w["wo"][l],
                   p + "mlp.gate_proj.weight": w["w1"][l], p + "mlp.down_proj.weight": w["w2"][l],
                   p + "mlp.up_proj.weight": w["w3"][l]})
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": dim,
              "intermediate_size": hidden, "num_hidden_layers": L, "num_attention_heads": heads,
              "num_key_value_heads": heads, "vocab_size": vocab, "max_position_embeddings": seq,
              "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": True}
    inputs = {}
    for fmt in ["safetensors", "pytorch"]:
        d = os.path.join(args.workdir, fmt)
        os.makedirs(d)
        json.dump(config, open(os.path.join(d, "config.json"), "w"))
        if fmt == "safetensors":
            write_safetensors(os.path.join(d, "model.safetensors"), hf)
        else:
            torch.save({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in hf.items()},
                       os.path.join(d, "pytorch_model.bin"))
        inputs[fmt] = d
    os.makedirs(os.path.join(args.workdir, "llama2c"))
    inputs["llama2.c"] = os.path.join(args.workdir, "llama2c", "model.bin")
    write_legacy(inputs["llama2.c"], {k: (v.astype(np.float64) if isinstance(v, np.ndarray) else v) for k, v in w.items()} | {"out": w["emb"]})
    gguf_names = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight"}
    parts = {"input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm", "self_attn.q_proj": "attn_q",
             "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
             "mlp.gate_proj": "ffn_gate", "mlp.down_proj": "ffn_down", "mlp.up_proj": "ffn_up"}
    for name in hf:
        if name.startswith("model.layers."):
            _, _, layer, *part, _ = name.split(".")
            gguf_names[name] = f"blk.{layer}.{parts['.'.join(part)]}.weight"
    meta = [("general.architecture", STRING, "llama"), ("llama.embedding_length", U32, dim),
            ("llama.block_count", U32, L), ("llama.feed_forward_length", U32, hidden),
            ("llama.attention.head_count", U32, heads), ("llama.context_length", U32, seq)]
    for label, gtype in [("gguf F32", F32), ("gguf Q8_0", Q8_0), ("gguf Q4_K", Q4_K)]:
        tensors = []
        for name, a in hf.items():
            t = F32 if a.ndim == 1 else gtype
            raw = (a.astype("<f4").tobytes() if t == F32 else quantize_q8_0(a) if t == Q8_0
                   else random_raw(rng, Q4_K, a.size))
            tensors.append((gguf_names[name], list(a.shape), t, raw))
        inputs[label] = os.path.join(args.workdir, label.replace(" ", "-") + ".gguf")
        write_gguf(inputs[label], meta, tensors)
    params = sum(a.size for a in hf.values())
    print(f"{params / 1e6:.1f}M float32 parameters ({params * 4 / 2**20:.0f} MiB), warm, best of 5 alternated rounds")
    r = subprocess.run([args.bench, "--read", *inputs.values()],
                       check=True, capture_output=True, text=True)
    print("| format | seconds | GB/s of float32 | / safetensors |")
    print("|---|---|---|---|")
    for fmt, line in zip(inputs, r.stdout.strip().splitlines()):
        _, _, seconds, rate, ratio = line.split("\t")
        print(f"| {fmt} | {seconds.split()[0]} | {rate.split()[0]} | {ratio} |")
    best = 1e30
    for _ in range(6):
        t = time.perf_counter()
        state = torch.load(os.path.join(inputs["pytorch"], "pytorch_model.bin"))
        _ = [float(v.view(-1)[-1]) for v in state.values()]  # every tensor in memory, as torch.load leaves it
        best = min(best, time.perf_counter() - t)
    print(f"| torch.load of the .bin (peer, Debian PyTorch) | {best:.3f} | {params * 4 / best / 1e9:.2f} | |")


if __name__ == "__main__":
    main()
