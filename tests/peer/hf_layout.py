"""The canonical view of a Hugging Face checkpoint, written here from the transformers modeling code's
conventions (independently of ShareLens): Linear weights are [out, in]; GPT-2's Conv1D weights are
[in, out] with Q, K and V packed column-wise in c_attn; Phi-3 stacks Q, K, V row-wise in qkv_proj and gate, up
in gate_up_proj; query head h is rows [h*hd, (h+1)*hd) of Q, KV heads
index K and V, O heads are column blocks."""
import re

import numpy as np


def expected_view(family, t, cfg):
    """The canonical matrices from raw tensors, written from the HF modeling code's conventions."""
    out = {}
    if family == "gpt2":
        p = "transformer." if "transformer.wte.weight" in t else ""
        d = cfg["n_embd"]
        heads = cfg["n_head"]
        hd = d // heads
        out["embedding"] = t[p + "wte.weight"]
        out["position_embedding"] = t[p + "wpe.weight"]
        if "lm_head.weight" in t:
            out["output_head"] = t["lm_head.weight"]
        layers = sorted({int(m.group(1)) for k in t for m in [re.match(re.escape(p) + r"h\.(\d+)\.", k)] if m})
        for l in layers:
            b = f"{p}h.{l}."
            c_attn = t[b + "attn.c_attn.weight"]          # [d, 3d]: x @ W
            bias = t[b + "attn.c_attn.bias"]
            for i, name in enumerate(["q", "k", "v"]):
                w = c_attn[:, i * d:(i + 1) * d].T          # Linear orientation [out, in]
                out[f"layers.{l}.{name}"] = w
                out[f"layers.{l}.{name}.bias"] = bias[i * d:(i + 1) * d]
                for h in range(heads):
                    out[f"layers.{l}.{name}.head.{h}"] = w[h * hd:(h + 1) * hd]
            o = t[b + "attn.c_proj.weight"].T
            out[f"layers.{l}.o"] = o
            out[f"layers.{l}.o.bias"] = t[b + "attn.c_proj.bias"]
            for h in range(heads):
                out[f"layers.{l}.o.head.{h}"] = o[:, h * hd:(h + 1) * hd]
            out[f"layers.{l}.up"] = t[b + "mlp.c_fc.weight"].T
            out[f"layers.{l}.up.bias"] = t[b + "mlp.c_fc.bias"]
            out[f"layers.{l}.down"] = t[b + "mlp.c_proj.weight"].T
            out[f"layers.{l}.down.bias"] = t[b + "mlp.c_proj.bias"]
        return out

    text = cfg.get("text_config", cfg)
    prefix = next(p for p in ["model.", "model.language_model.", "language_model.model."]
                  if p + "layers.0.self_attn.q_proj.weight" in t or p + "layers.0.self_attn.qkv_proj.weight" in t)
    heads = text["num_attention_heads"]
    kv = text.get("num_key_value_heads", heads)
    hd = text.get("head_dim") or text["hidden_size"] // heads
    out["embedding"] = t[prefix + "embed_tokens.weight"]
    if "lm_head.weight" in t:
        out["output_head"] = t["lm_head.weight"]
    layers = sorted({int(m.group(1)) for k in t for m in [re.match(re.escape(prefix) + r"layers\.(\d+)\.", k)] if m})
    for l in layers:
        b = f"{prefix}layers.{l}."
        # Phi-3 (modeling_phi3.py): qkv_proj rows are query (H hd), key (KV hd), value (the rest); gate_up_proj
        # is chunked in two along its output, gate first.
        fused = {}
        if b + "self_attn.qkv_proj.weight" in t:
            qkv = t[b + "self_attn.qkv_proj.weight"]
            fused = {"q": qkv[:heads * hd], "k": qkv[heads * hd:(heads + kv) * hd], "v": qkv[(heads + kv) * hd:]}
        if b + "mlp.gate_up_proj.weight" in t:
            fused["gate"], fused["up"] = np.split(t[b + "mlp.gate_up_proj.weight"], 2, axis=0)
        for name, count in [("q", heads), ("k", kv), ("v", kv)]:
            w = fused[name] if name in fused else t[b + f"self_attn.{name}_proj.weight"]
            out[f"layers.{l}.{name}"] = w
            for h in range(count):
                out[f"layers.{l}.{name}.head.{h}"] = w[h * hd:(h + 1) * hd]
            if b + f"self_attn.{name}_proj.bias" in t:
                out[f"layers.{l}.{name}.bias"] = t[b + f"self_attn.{name}_proj.bias"]
        o = t[b + "self_attn.o_proj.weight"]
        out[f"layers.{l}.o"] = o
        for h in range(heads):
            out[f"layers.{l}.o.head.{h}"] = o[:, h * hd:(h + 1) * hd]
        for name in ["gate", "up", "down"]:
            out[f"layers.{l}.{name}"] = fused[name] if name in fused else t[b + f"mlp.{name}_proj.weight"]
    return out


def shape_of(cfg):
    """(layers, heads, kv_heads, head_dim) from a config.json."""
    if cfg.get("model_type") == "gpt2":
        return cfg["n_layer"], cfg["n_head"], cfg["n_head"], cfg["n_embd"] // cfg["n_head"]
    text = cfg.get("text_config", cfg)
    heads = text["num_attention_heads"]
    return (text["num_hidden_layers"], heads, text.get("num_key_value_heads", heads),
            text.get("head_dim") or text["hidden_size"] // heads)
