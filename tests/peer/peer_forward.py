#!/usr/bin/python3
"""Peer check of ShareLens's forward pass against an independent PyTorch implementation.

The reference below is written from the transformers modeling code's conventions for each family (Llama
with llama3 RoPE scaling, Qwen2 with q/k/v biases, Gemma 3 with (1 + w) RMSNorms, QK norms, sandwich norms,
GeGLU, query_pre_attn_scalar and sliding-window layers, Phi-3 with fused qkv_proj and gate_up_proj, a sliding
window on every layer and longrope's short and long factors, GPT-2 with LayerNorm, learned positions and
Conv1D weights). On the same checkpoint files and the same token ids:
  * hidden states after every layer and the logits agree within 1e-4 relative (Frobenius), also for a Llama
    and a GPT-2 whose config.json names another FFN activation (exact GELU, ReLU; transformers' ACT2FN), and a
    name ShareLens cannot compute is refused by name;
  * the effective ranks of the layer-output differences dh_l - dh_m (sharelens analyze --activations) equal
    those from float64 SVDs of the reference's own dh, except where the cumulative energy lies within 1e-5 of
    the threshold (two float32 forward passes agree to ~1e-6, so closer calls are not decidable);
  * a ShareLens checkpoint of a shared topology (run from `sharelens train`) gives the same hidden states as
    the reference run on its `sharelens export-hf` export;
  * the logit-lens KL drift behind MASA's layer groups (Zhussip et al., "Share Your Attention", Sec. "Grouping
    Strategy"): each block's output averaged over the tokens, mapped to the vocabulary by the model's output
    projection, p_l = softmax(W_U h_mean_l), drift_l = KL(p_l || p_{l+1}) -- computed here in float64 from
    `sharelens hidden-states` -- equals `analyze --activations`'s within 1e-6 relative, and "kl:G" groups
    split after the G-1 largest drifts;
  * `sharelens eval` on the same ids gives the reference's mean next-token negative log-likelihood, evaluated
    as fixed-length models are (windows of W + 1 tokens, stride W: every token after the first predicted once
    from the tokens before it in its window), within 1e-5 relative.
"""
import json
import math
import os
import shutil
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_np import read_checkpoint, read_file  # noqa: E402
from peer_common import check, finish, make_fixtures, parse_args  # noqa: E402

THRESHOLD = 0.95


# ---- the reference forward pass ------------------------------------------------------------------------

# transformers' ACT2FN by name (activations.py): "gelu" is the exact (erf) GELU; gelu_new, gelu_pytorch_tanh and
# gelu_fast are the tanh approximation 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); silu = swish = x sigmoid(x).
ACTIVATIONS = {
    "silu": torch.nn.functional.silu,
    "swish": torch.nn.functional.silu,
    "gelu": lambda x: 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0))),
    "gelu_new": lambda x: 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3)))),
    "relu": torch.relu,
}
ACTIVATIONS["gelu_pytorch_tanh"] = ACTIVATIONS["gelu_fast"] = ACTIVATIONS["gelu_new"]


def rms_norm(x, w, eps, gemma=False):
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return y * (1.0 + w) if gemma else y * w


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def inv_freq(head_dim, theta, scaling):
    inv = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
    if not scaling:
        return inv
    kind = scaling.get("rope_type", scaling.get("type"))
    if kind == "linear":
        return inv / scaling["factor"]
    if kind == "llama3":
        factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
        old = scaling["original_max_position_embeddings"]
        low_wavelen, high_wavelen = old / low, old / high
        wavelen = 2 * math.pi / inv
        scaled = torch.where(wavelen > low_wavelen, inv / factor, inv)
        smooth = (old / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelen < high_wavelen) * ~(wavelen > low_wavelen)
        return torch.where(medium, smoothed, scaled)
    return inv


def cos_sin(inv, length):
    freqs = torch.outer(torch.arange(length).float(), inv)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def attend(q, k, v, scale, window=None, maps=None):
    """q [H, T, hd], k/v [H, T, hd] (already repeated for GQA): causal, optionally sliding-window. The
    attention probabilities [H, T, T] are appended to `maps` when it is given."""
    t = q.shape[1]
    scores = (q @ k.transpose(-1, -2)) * scale
    i = torch.arange(t).unsqueeze(1)
    j = torch.arange(t).unsqueeze(0)
    mask = j > i
    if window:
        mask = mask | ((i - j) >= window)
    probs = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
    if maps is not None:
        maps.append(probs)
    return probs @ v


def decoder_reference(t, cfg, ids, capture=None):
    """Llama, Qwen2, Qwen3 and Gemma 3: hidden states [embeddings, after layer 0, ...] and logits. With a
    `capture` dict: its "attention" gets each layer's probabilities, its "lens" the logits of each layer's
    output (the final norm and the head applied to it)."""
    text = cfg.get("text_config", cfg)
    gemma = cfg["model_type"] in ("gemma3", "gemma3_text")
    prefix = next(p for p in ["model.", "model.language_model.", "language_model.model."] if p + "embed_tokens.weight" in t)
    heads, layers = text["num_attention_heads"], text["num_hidden_layers"]
    kv = text.get("num_key_value_heads", heads)
    hd = text.get("head_dim") or text["hidden_size"] // heads
    eps = text.get("rms_norm_eps", 1e-6)
    T = lambda name: torch.from_numpy(np.ascontiguousarray(t[name]))  # noqa: E731
    n = len(ids)
    theta = text.get("rope_theta", 1e6 if gemma else 10000.0)
    cos_g, sin_g = cos_sin(inv_freq(hd, theta, text.get("rope_scaling")), n)
    cos_l, sin_l = cos_sin(inv_freq(hd, text.get("rope_local_base_freq", 10000.0), None), n)
    pattern = text.get("sliding_window_pattern", 6)
    act_fn = ACTIVATIONS[text.get("hidden_activation") or text.get("hidden_act") or "gelu_pytorch_tanh"] if gemma \
        else ACTIVATIONS[text.get("hidden_act", "silu")]
    x = T(prefix + "embed_tokens.weight")[torch.tensor(ids)]
    if gemma:
        x = x * torch.tensor(text["hidden_size"] ** 0.5, dtype=x.dtype)
    states = [x]
    for l in range(layers):
        b = f"{prefix}layers.{l}."
        sliding = gemma and (l + 1) % pattern != 0
        cos, sin = (cos_l, sin_l) if sliding else (cos_g, sin_g)

        def proj(name, h, count):
            w = T(b + f"self_attn.{name}_proj.weight")
            bias = T(b + f"self_attn.{name}_proj.bias") if b + f"self_attn.{name}_proj.bias" in t else None
            return torch.nn.functional.linear(h, w, bias).view(n, count, hd)

        h = rms_norm(x, T(b + "input_layernorm.weight"), eps, gemma)
        q, k, v = proj("q", h, heads), proj("k", h, kv), proj("v", h, kv)
        if b + "self_attn.q_norm.weight" in t:  # QK-Norm (Gemma 3, Qwen3): per head over head_dim, before RoPE
            q = rms_norm(q, T(b + "self_attn.q_norm.weight"), eps, gemma)
            k = rms_norm(k, T(b + "self_attn.k_norm.weight"), eps, gemma)
        q, k, v = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k, v = k.repeat_interleave(heads // kv, 0), v.repeat_interleave(heads // kv, 0)
        scale = text.get("query_pre_attn_scalar", hd) ** -0.5 if gemma else hd ** -0.5
        maps = capture.setdefault("attention", []) if capture is not None else None
        # Gemma 3's local layers; every layer of a Mistral (transformers' MistralModel; its Llama ignores the field)
        window = text.get("sliding_window") if sliding or cfg["model_type"] == "mistral" else None
        a = attend(q, k, v, scale, window, maps).transpose(0, 1).reshape(n, heads * hd)
        a = torch.nn.functional.linear(a, T(b + "self_attn.o_proj.weight"))
        if gemma:
            a = rms_norm(a, T(b + "post_attention_layernorm.weight"), eps, True)
            x = x + a
            h = rms_norm(x, T(b + "pre_feedforward_layernorm.weight"), eps, True)
            act = act_fn(h @ T(b + "mlp.gate_proj.weight").t())
            m = (act * (h @ T(b + "mlp.up_proj.weight").t())) @ T(b + "mlp.down_proj.weight").t()
            x = x + rms_norm(m, T(b + "post_feedforward_layernorm.weight"), eps, True)
        else:
            x = x + a
            h = rms_norm(x, T(b + "post_attention_layernorm.weight"), eps)
            act = act_fn(h @ T(b + "mlp.gate_proj.weight").t())
            x = x + (act * (h @ T(b + "mlp.up_proj.weight").t())) @ T(b + "mlp.down_proj.weight").t()
        states.append(x)
    head = T("lm_head.weight") if "lm_head.weight" in t else T(prefix + "embed_tokens.weight")
    final = lambda s: rms_norm(s, T(prefix + "norm.weight"), eps, gemma) @ head.t()  # noqa: E731
    if capture is not None:
        capture["lens"] = [final(s) for s in states[1:]]
    return states, final(x)


def gpt2_reference(t, cfg, ids, capture=None):
    p = "transformer." if "transformer.wte.weight" in t else ""
    T = lambda name: torch.from_numpy(np.ascontiguousarray(t[name]))  # noqa: E731
    d, heads, eps = cfg["n_embd"], cfg["n_head"], cfg.get("layer_norm_epsilon", 1e-5)
    hd, n = d // heads, len(ids)
    x = T(p + "wte.weight")[torch.tensor(ids)] + T(p + "wpe.weight")[:n]
    states = [x]
    ln = lambda x, name: torch.nn.functional.layer_norm(x, (d,), T(name + ".weight"), T(name + ".bias"), eps)  # noqa: E731
    for l in range(cfg["n_layer"]):
        b = f"{p}h.{l}."
        qkv = ln(x, b + "ln_1") @ T(b + "attn.c_attn.weight") + T(b + "attn.c_attn.bias")  # Conv1D: x @ W + b
        q, k, v = (qkv[:, i * d:(i + 1) * d].view(n, heads, hd).transpose(0, 1) for i in range(3))
        maps = capture.setdefault("attention", []) if capture is not None else None
        a = attend(q, k, v, hd ** -0.5, None, maps).transpose(0, 1).reshape(n, d)
        x = x + a @ T(b + "attn.c_proj.weight") + T(b + "attn.c_proj.bias")
        h = ACTIVATIONS[cfg.get("activation_function", "gelu_new")](ln(x, b + "ln_2") @ T(b + "mlp.c_fc.weight") + T(b + "mlp.c_fc.bias"))
        x = x + h @ T(b + "mlp.c_proj.weight") + T(b + "mlp.c_proj.bias")
        states.append(x)
    head = T("lm_head.weight") if "lm_head.weight" in t else T(p + "wte.weight")
    final = lambda s: ln(s, p + "ln_f") @ head.t()  # noqa: E731
    if capture is not None:
        capture["lens"] = [final(s) for s in states[1:]]
    return states, final(x)


def phi3_reference(t, cfg, ids, capture=None):
    """Phi-3 as transformers' modeling_phi3.py and modeling_rope_utils.py describe it, written from their text:
    qkv = qkv_proj(h), query = qkv[..., :H hd], key = the next KV hd, value = the rest; head_dim = hidden / H;
    gate, up = gate_up_proj(h).chunk(2, dim=-1), down(up * silu(gate)); pre-norm residual blocks with RMSNorms
    input_layernorm and post_attention_layernorm; one sliding-window causal mask (key j seen from query i iff
    i - W < j <= i) on every layer when sliding_window is set. longrope ("su"): inv_freq = 1 / (ext *
    theta^(2i/hd)), ext = long_factor when the sequence is longer than original_max_position_embeddings, else
    short_factor; cos and sin times sqrt(1 + ln(factor) / ln(original)), factor = max_position_embeddings /
    original."""
    heads, d = cfg["num_attention_heads"], cfg["hidden_size"]
    kv = cfg.get("num_key_value_heads") or heads
    hd, n, eps = d // heads, len(ids), cfg.get("rms_norm_eps", 1e-5)
    theta = cfg.get("rope_theta", 10000.0)
    ext, attention_factor = torch.ones(hd // 2), 1.0
    scaling = cfg.get("rope_scaling")
    if scaling:
        assert scaling.get("rope_type", scaling.get("type")) in ("longrope", "su"), scaling
        original = cfg["original_max_position_embeddings"]
        factor = scaling.get("factor") or cfg["max_position_embeddings"] / original
        attention_factor = 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(original))
        ext = torch.tensor(scaling["long_factor"] if n > original else scaling["short_factor"], dtype=torch.float32)
    inv = 1.0 / (ext * theta ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
    cos, sin = (c * attention_factor for c in cos_sin(inv, n))
    T = lambda name: torch.from_numpy(np.ascontiguousarray(t[name]))  # noqa: E731
    x = T("model.embed_tokens.weight")[torch.tensor(ids)]
    states = [x]
    for l in range(cfg["num_hidden_layers"]):
        b = f"model.layers.{l}."
        qkv = rms_norm(x, T(b + "input_layernorm.weight"), eps) @ T(b + "self_attn.qkv_proj.weight").t()
        q = qkv[:, :heads * hd].reshape(n, heads, hd).transpose(0, 1)
        k = qkv[:, heads * hd:(heads + kv) * hd].reshape(n, kv, hd).transpose(0, 1)
        v = qkv[:, (heads + kv) * hd:].reshape(n, kv, hd).transpose(0, 1)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        k, v = k.repeat_interleave(heads // kv, 0), v.repeat_interleave(heads // kv, 0)
        maps = capture.setdefault("attention", []) if capture is not None else None
        a = attend(q, k, v, hd ** -0.5, cfg.get("sliding_window"), maps).transpose(0, 1).reshape(n, heads * hd)
        x = x + a @ T(b + "self_attn.o_proj.weight").t()
        gate, up = (rms_norm(x, T(b + "post_attention_layernorm.weight"), eps) @ T(b + "mlp.gate_up_proj.weight").t()).chunk(2, dim=-1)
        x = x + (up * torch.nn.functional.silu(gate)) @ T(b + "mlp.down_proj.weight").t()
        states.append(x)
    head = T("lm_head.weight") if "lm_head.weight" in t else T("model.embed_tokens.weight")
    final = lambda s: rms_norm(s, T("model.norm.weight"), eps) @ head.t()  # noqa: E731
    if capture is not None:
        capture["lens"] = [final(s) for s in states[1:]]
    return states, final(x)


def reference_of(cfg):
    return {"gpt2": gpt2_reference, "phi3": phi3_reference}.get(cfg["model_type"], decoder_reference)


def reference(directory, ids, capture=None):
    with open(os.path.join(directory, "config.json")) as f:
        cfg = json.load(f)
    raw = read_checkpoint(directory)
    return reference_of(cfg)(raw, cfg, ids, capture), cfg


# ---- comparisons -----------------------------------------------------------------------------------------

def context_of(cfg):
    text = cfg.get("text_config", cfg)
    return text.get("n_positions") or text.get("max_position_embeddings")


def compare_hidden(name, directory, ids, sharelens, work):
    ids_file = os.path.join(work, name + ".ids")
    with open(ids_file, "w") as f:
        f.write(",".join(map(str, ids)))
    out = os.path.join(work, name + ".hidden.safetensors")
    subprocess.run([sharelens, "hidden-states", directory, "--token-ids", ids_file, "--out", out], check=True, capture_output=True)
    ours, _ = read_file(out)
    with torch.no_grad():
        (states, logits), cfg = reference(directory, ids)
    worst = 0.0
    for i, ref in enumerate(states):
        mine = torch.from_numpy(ours[f"hidden.{i}"])
        rel = ((mine - ref).norm() / ref.norm()).item()
        worst = max(worst, rel)
        check(rel < 1e-4, f"{name}: hidden state {i} differs by {rel:.2e} relative")
    rel = ((torch.from_numpy(ours["logits"]) - logits).norm() / logits.norm()).item()
    check(rel < 1e-4, f"{name}: logits differ by {rel:.2e} relative")
    print(f"   {name}: {len(states)} hidden states and logits, worst relative difference {max(worst, rel):.1e}")
    return states, cfg, ids_file


def output_projection(directory):
    """W_U [V, d]: the output head, or the token embedding when the model ties them."""
    raw = read_checkpoint(directory)
    for name in ("lm_head.weight", "language_model.lm_head.weight"):
        if name in raw:
            return raw[name].astype(np.float64)
    return next(t for k, t in raw.items() if k.endswith("embed_tokens.weight") or k.endswith("wte.weight")).astype(np.float64)


def kl_groups(drift, layers, g):
    """Groups of consecutive layers, cut after the g - 1 largest drifts (ties to the earlier layer)."""
    cuts = set(sorted(range(len(drift)), key=lambda i: (-drift[i], i))[:g - 1])
    groups = [[]]
    for layer in range(layers):
        groups[-1].append(layer)
        if layer in cuts and layer + 1 < layers:
            groups.append([])
    return groups


def softmax64(z):
    z = z - z.max()
    e = np.exp(z)
    return e / e.sum()


def drift_of(p):
    """KL(p_l || p_(l+1)) between consecutive distributions, in float64."""
    return [float((p[l] * (np.log(p[l]) - np.log(p[l + 1]))).sum()) for l in range(len(p) - 1)]


def mean_state_drift(means, w_u):
    """`--logit-lens mean-state`: p_l = softmax(W_U h_l) of each block's output averaged over all the tokens
    (no final norm), and KL(p_l || p_(l+1)) between consecutive blocks, in float64."""
    return drift_of([softmax64(w_u @ mean) for mean in means])


def per_sample_drift(sample_means, w_u):
    """The MASA paper's grouping probe from its text ("Grouping Method"): for each sample, y_l = its tokens'
    mean output of block l and p_l = softmax(W_out^T y_l); "average across samples" to p_l; then
    KL(p_l || p_(l+1)). sample_means[s][l] is sample s's mean output of block l."""
    layers = len(sample_means[0])
    p = [np.mean([softmax64(w_u @ sample[l]) for sample in sample_means], axis=0) for l in range(layers)]
    return drift_of(p)


def check_logit_lens(name, what, directory, ids_file, drift, tolerance, sharelens, work, lens_name):
    """ShareLens's drift (`--logit-lens lens_name`) and kl:G groups over the ids against `drift`, the
    reference's, within `tolerance` relative."""
    layers = len(drift) + 1
    g = min(3, layers)
    what = f"{what}, {lens_name}"
    out = os.path.join(work, name + "." + what.replace(" ", "_").replace(",", "") + ".lens.json")
    subprocess.run([sharelens, "analyze", directory, "--activations", "--token-ids", ids_file, "--masa-groups", f"kl:{g}",
                    "--logit-lens", lens_name, "--json", out, "--threads", "2"], check=True, capture_output=True)
    lens = json.load(open(out))["activations"]["logit_lens"]
    check(lens["lens"] == lens_name, f"{name}: logit lens {lens['lens']}")
    worst = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(lens["kl_drift"], drift))
    check(len(lens["kl_drift"]) == layers - 1 and worst < tolerance,
          f"{name} ({what}): KL drift {lens['kl_drift']} vs reference {drift} ({worst:.1e} relative)")
    check(lens["groups"] == kl_groups(drift, layers, g), f"{name} ({what}): kl:{g} groups {lens['groups']} vs {kl_groups(drift, layers, g)}")
    print(f"   {name} ({what}): logit-lens KL drift of {layers - 1} layer pairs within {worst:.1e} relative; kl:{g} groups agree")


def compare_logit_lens(name, directory, ids_file, sharelens, work):
    """One window: the block outputs from `sharelens hidden-states` (itself checked against the reference)."""
    hidden = os.path.join(work, name + ".lens.hidden.safetensors")
    subprocess.run([sharelens, "hidden-states", directory, "--token-ids", ids_file, "--out", hidden], check=True, capture_output=True)
    states, _ = read_file(hidden)
    layers = len([k for k in states if k.startswith("hidden.")]) - 1
    means = [states[f"hidden.{l}"].astype(np.float64).mean(0) for l in range(1, layers + 1)]  # hidden.0: embedding
    # The same states on both sides: only the lens's own arithmetic differs. One window is one sample, so
    # both lenses are the same numbers.
    for lens in ("per-sample", "mean-state"):
        check_logit_lens(name, "one window", directory, ids_file, mean_state_drift(means, output_projection(directory)),
                         1e-6, sharelens, work, lens)


def compare_logit_lens_over_windows(name, directory, ids, ids_file, cfg, sharelens, work):
    """Several windows of min(512, context) tokens, as ShareLens runs them: each block's output averaged over
    every token of every window, from the independent reference forward."""
    chunk = min(512, context_of(cfg))
    sums, count, sample_means = None, 0, []
    with torch.no_grad():
        for start in range(0, len(ids), chunk):
            (states, _), _ = reference(directory, ids[start:start + chunk])
            window = [s.double().sum(0) for s in states[1:]]  # block outputs; states[0] is the embedding
            sums = window if sums is None else [a + b for a, b in zip(sums, window)]
            count += states[0].shape[0]
            sample_means.append([(s / states[0].shape[0]).numpy() for s in window])
    check(len(ids) > chunk, f"{name}: {len(ids)} ids fit one window of {chunk}: the windows' average is not tested")
    means = [(s / count).numpy() for s in sums]
    w_u = output_projection(directory)
    # Two float32 forwards (states within ~1e-6 relative): the drift agrees to 1e-5 (3.4e-6 the worst seen,
    # six layers of llama_structured), the groups exactly.
    what = f"{len(sample_means)} windows"
    per_sample, mean_state = per_sample_drift(sample_means, w_u), mean_state_drift(means, w_u)
    # Each window's mean averages fewer tokens (the last window may be short), so the float32 difference of
    # the two forwards shows more in the per-sample lens: 1.3e-5 the worst seen, hence 3e-5. The two lenses
    # must differ by far more than that, or this check could not tell them apart.
    apart = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(per_sample, mean_state))
    check(apart > 1e-3, f"{name}: the per-sample and mean-state references differ by only {apart:.1e}")
    check_logit_lens(name, what, directory, ids_file, per_sample, 3e-5, sharelens, work, "per-sample")
    check_logit_lens(name, what, directory, ids_file, mean_state, 1e-5, sharelens, work, "mean-state")


def ranks_with_margin(delta_a, delta_b):
    s = torch.linalg.svdvals((delta_a - delta_b).double())
    c = torch.cumsum(s ** 2, 0) / (s ** 2).sum()
    k = int((c < THRESHOLD).sum().item())
    margin = min(abs(c[k].item() - THRESHOLD), abs(c[k - 1].item() - THRESHOLD) if k > 0 else 1.0)
    return k + 1, margin


def compare_rank_map(name, directory, ids, ids_file, cfg, sharelens, work):
    """Layer-output differences over the ids, chunked as ShareLens chunks them (min(512, context))."""
    out = os.path.join(work, name + ".activations.json")
    subprocess.run([sharelens, "analyze", directory, "--activations", "--token-ids", ids_file, "--json", out,
                    "--threads", "2"], check=True, capture_output=True)
    ours = json.load(open(out))["activations"]["layer_output_differences"]["effective_rank"]
    chunk = min(512, context_of(cfg))
    deltas = None
    with torch.no_grad():
        for start in range(0, len(ids), chunk):
            (states, _), _ = reference(directory, ids[start:start + chunk])
            d = [states[l + 1] - states[l] for l in range(len(states) - 1)]
            deltas = d if deltas is None else [torch.cat([a, b]) for a, b in zip(deltas, d)]
    compared = skipped = 0
    for a in range(len(deltas)):
        for b in range(a + 1, len(deltas)):
            rank, margin = ranks_with_margin(deltas[a], deltas[b])
            if margin < 1e-5:
                skipped += 1
                continue
            compared += 1
            check(ours[a][b] == rank, f"{name}: layer-output rank {a}-{b}: ours {ours[a][b]}, reference {rank}")
    check(compared > 0, f"{name}: every layer-output rank was within 1e-5 of the threshold: none compared")
    print(f"   {name}: {compared} layer-output ranks identical ({skipped} within 1e-5 of the threshold skipped)")


def compare_token_lens_and_attention(name, directory, ids, ids_file, cfg, sharelens, work, lens_tokens=100):
    """DESIGN.md section 4's named older lens, `--logit-lens per-token`: the mean over the first tokens of
    KL(softmax(W_U norm(h_l,t)) || softmax(W_U norm(h_{l+1},t))) between consecutive layer outputs, over whole
    windows (min(512, context) tokens, each its own sequence) until lens_tokens are covered; and the attention
    similarity: the cosine between the flattened attention maps of every pair of (layer, head) over one sample
    sequence, the first min(128, context, N) tokens. Both from the reference forward, in double."""
    out = os.path.join(work, name + ".token-lens.json")
    subprocess.run([sharelens, "analyze", directory, "--activations", "--token-ids", ids_file, "--logit-lens", "per-token",
                    "--logit-lens-tokens", str(lens_tokens), "--json", out, "--threads", "2"], check=True, capture_output=True)
    ours = json.load(open(out))["activations"]
    chunk = min(512, context_of(cfg))
    kl, covered = None, 0
    with torch.no_grad():
        for start in range(0, len(ids), chunk):
            if covered >= lens_tokens:
                break
            capture = {}
            reference(directory, ids[start:start + chunk], capture)
            logp = [torch.log_softmax(z.double(), dim=-1) for z in capture["lens"]]
            step = [float((lp.exp() * (lp - nxt)).sum()) for lp, nxt in zip(logp, logp[1:])]
            kl = step if kl is None else [a + b for a, b in zip(kl, step)]
            covered += len(ids[start:start + chunk])
        drift = [v / covered for v in kl]
        lens = ours["logit_lens"]
        worst = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(lens["kl_drift"], drift))
        check(lens["lens"] == "per-token" and lens["tokens"] == covered, f"{name}: lens {lens['lens']} over {lens['tokens']} tokens, expected per-token over {covered}")
        check(len(lens["kl_drift"]) == len(drift) and worst < 1e-4,
              f"{name}: per-token KL drift {lens['kl_drift']} vs reference {drift} ({worst:.1e} relative)")

        sample = min(128, context_of(cfg), len(ids))
        capture = {}
        reference(directory, ids[:sample], capture)
        maps = torch.cat([a.double().reshape(a.shape[0], -1) for a in capture["attention"]])  # (layer, head) rows
        unit = maps / maps.norm(dim=1, keepdim=True)
        expected = unit @ unit.t()
    att = ours["attention_similarity"]
    got = torch.tensor(att["similarity"], dtype=torch.float64)
    check(att["tokens"] == sample and got.shape == expected.shape, f"{name}: attention similarity {tuple(got.shape)} over {att['tokens']} tokens, expected {tuple(expected.shape)} over {sample}")
    diff = (got - expected).abs().max().item()
    check(diff < 1e-4, f"{name}: attention similarity differs by {diff:.1e}")
    print(f"   {name}: per-token KL drift within {worst:.1e} relative over {covered} tokens; attention similarity of "
          f"{got.shape[0]} heads within {diff:.1e}")


def compare_eval(name, directory, ids, ids_file, sharelens, work, window=32):
    out = os.path.join(work, name + ".eval.json")
    subprocess.run([sharelens, "eval", directory, "--token-ids", ids_file, "--window", str(window), "--json", out],
                   check=True, capture_output=True)
    ours = json.load(open(out))
    total, count = 0.0, 0
    with torch.no_grad():
        for start in range(0, len(ids) - 1, window):
            chunk = ids[start:start + window + 1]
            (_, logits), _ = reference(directory, chunk[:-1])
            logp = torch.log_softmax(logits.double(), dim=-1)
            total -= logp[torch.arange(len(chunk) - 1), torch.tensor(chunk[1:])].sum().item()
            count += len(chunk) - 1
    check(ours["tokens"] == count, f"{name}: eval scored {ours['tokens']} tokens, reference {count}")
    rel = abs(ours["nll"] - total / count) / (total / count)
    check(rel < 1e-5, f"{name}: eval NLL {ours['nll']:.6f} vs reference {total / count:.6f}")
    print(f"   {name}: eval NLL {ours['nll']:.5f} over {count} tokens, relative difference {rel:.1e}")


def truncated(table, r):
    """The best rank-r approximation of a V x d table (Eckart-Young), from numpy's SVD in float64."""
    u, s, vh = np.linalg.svd(table.astype(np.float64), full_matrices=False)
    return ((u[:, :r] * s[:r]) @ vh[:r]).astype(np.float32)


def compare_embedding_loss(name, directory, ids, ids_file, sharelens, work):
    """The low-rank sharing paper's Fig. 2c experiment: the trained embedding truncated to rank r (a tied
    table changes input and output together; an untied model truncates both), evaluated on the same tokens."""
    out = os.path.join(work, name + ".embedding.json")
    subprocess.run([sharelens, "analyze", directory, "--embedding-loss", "--token-ids", ids_file,
                    "--json", out], check=True, capture_output=True)
    ours = json.load(open(out))["embedding_loss"]
    cfg = json.load(open(os.path.join(directory, "config.json")))
    window = min(context_of(cfg), 1024)  # eval's default window
    raw = read_checkpoint(directory)
    emb_name = next(k for k in raw if k.endswith("embed_tokens.weight") or k.endswith("wte.weight"))
    head_name = next((k for k in raw if k == "lm_head.weight"), None)
    points = ours["factorization"]
    for p in (points[0], points[len(points) // 2]):
        r = p["rank"]
        changed = dict(raw)
        changed[emb_name] = truncated(raw[emb_name], r)
        if head_name:
            changed[head_name] = truncated(raw[head_name], r)
        total, count = 0.0, 0
        with torch.no_grad():
            for start in range(0, len(ids) - 1, window):
                chunk = ids[start:start + window + 1]
                states, logits = reference_of(cfg)(changed, cfg, chunk[:-1])
                logp = torch.log_softmax(logits.double(), dim=-1)
                total -= logp[torch.arange(len(chunk) - 1), torch.tensor(chunk[1:])].sum().item()
                count += len(chunk) - 1
        rel = abs(p["validation_nll"] - total / count) / (total / count)
        check(rel < 1e-4, f"{name}: embedding at rank {r}: NLL {p['validation_nll']:.6f} vs reference {total / count:.6f}")
    print(f"   {name}: truncated-embedding NLL at ranks {points[0]['rank']} and {points[len(points) // 2]['rank']} agree")


def main():
    args = parse_args()
    torch.set_num_threads(2)
    listed = make_fixtures(args)
    # A Gemma 3 copy with a short sliding window, so that local layers really mask.
    sliding = os.path.join(args.workdir, "fixtures", "gemma3_sliding")
    shutil.copytree(next(f for f in listed if f.endswith("/gemma3")), sliding)
    cfg = json.load(open(os.path.join(sliding, "config.json")))
    cfg["sliding_window"], cfg["sliding_window_pattern"] = 8, 2
    json.dump(cfg, open(os.path.join(sliding, "config.json"), "w"))
    listed.append(sliding)
    # A Phi-3 with longrope (the 128k models' rope_scaling) at a test-sized original context of 32 positions:
    # the 48-token windows below take the long factors; a 24-token one after the loop, the short ones.
    longrope = os.path.join(args.workdir, "fixtures", "phi3_longrope")
    shutil.rmtree(longrope, ignore_errors=True)
    shutil.copytree(next(f for f in listed if f.endswith("/phi3")), longrope)
    cfg = json.load(open(os.path.join(longrope, "config.json")))
    half = cfg["hidden_size"] // cfg["num_attention_heads"] // 2
    cfg["original_max_position_embeddings"] = 32
    cfg["rope_scaling"] = {"type": "su", "short_factor": [1.0 + 0.1 * i for i in range(half)],
                           "long_factor": [1.0 + 3.0 * i for i in range(half)]}
    json.dump(cfg, open(os.path.join(longrope, "config.json"), "w"))
    listed.append(longrope)
    rng = np.random.default_rng(7)
    for directory in listed:
        name = os.path.basename(directory)
        cfg = json.load(open(os.path.join(directory, "config.json")))
        vocab = cfg.get("text_config", cfg)["vocab_size"]
        ids = [int(i) for i in rng.integers(0, vocab, size=min(48, context_of(cfg)))]
        states, cfg, ids_file = compare_hidden(name, directory, ids, args.sharelens, args.workdir)
        compare_logit_lens(name, directory, ids_file, args.sharelens, args.workdir)
        long_ids = [int(i) for i in rng.integers(0, vocab, size=150)]
        long_file = os.path.join(args.workdir, name + ".long.ids")
        with open(long_file, "w") as f:
            f.write(" ".join(map(str, long_ids)))
        compare_rank_map(name, directory, long_ids, long_file, cfg, args.sharelens, args.workdir)
        compare_logit_lens_over_windows(name, directory, long_ids, long_file, cfg, args.sharelens, args.workdir)
        compare_token_lens_and_attention(name, directory, long_ids, long_file, cfg, args.sharelens, args.workdir)
        compare_eval(name, directory, long_ids, long_file, args.sharelens, args.workdir)
        if name in ("llama", "qwen2_f16", "gpt2_transformer_prefix_untied"):
            compare_embedding_loss(name, directory, long_ids, long_file, args.sharelens, args.workdir)

    ids = [int(i) for i in rng.integers(0, 101, size=24)]
    compare_hidden("phi3_longrope (24 tokens: short factors)", longrope, ids, args.sharelens, args.workdir)

    # A Mistral (the Llama layout, every layer within sliding_window) and a Llama whose config carries a
    # sliding_window, which transformers' Llama ignores: 48 tokens, a window of 16.
    for model_type in ("mistral", "llama"):
        variant = os.path.join(args.workdir, "fixtures", f"{model_type}_window16")
        shutil.rmtree(variant, ignore_errors=True)
        shutil.copytree(next(f for f in listed if f.endswith("/llama")), variant)
        cfg = json.load(open(os.path.join(variant, "config.json")))
        cfg["model_type"], cfg["sliding_window"], cfg["rope_scaling"] = model_type, 16, None
        json.dump(cfg, open(os.path.join(variant, "config.json"), "w"))
        ids = [int(i) for i in rng.integers(0, cfg["vocab_size"], size=48)]
        compare_hidden(f"{model_type} with sliding_window 16", variant, ids, args.sharelens, args.workdir)

    # The FFN activation a config.json names is the one computed (it was SiLU whatever the config said): exact
    # GELU and ReLU in a Llama and a GPT-2, against the reference's ACT2FN; a name ShareLens cannot run is
    # refused by name.
    for family, field, acts in (("llama", "hidden_act", ("gelu", "relu", "weird")),
                                ("gpt2_transformer_prefix_untied", "activation_function", ("relu", "gelu"))):
        source = next(f for f in listed if os.path.basename(f) == family)
        for act in acts:
            variant = os.path.join(args.workdir, "fixtures", f"{family}_{act}")
            shutil.rmtree(variant, ignore_errors=True)
            shutil.copytree(source, variant)
            cfg = json.load(open(os.path.join(variant, "config.json")))
            cfg[field] = act
            json.dump(cfg, open(os.path.join(variant, "config.json"), "w"))
            ids = [int(i) for i in rng.integers(0, cfg["vocab_size"], size=min(48, context_of(cfg)))]
            if act in ACTIVATIONS:
                compare_hidden(f"{family} with {field} {act}", variant, ids, args.sharelens, args.workdir)
                continue
            ids_file = os.path.join(args.workdir, "weird.ids")
            with open(ids_file, "w") as f:
                f.write(",".join(map(str, ids)))
            r = subprocess.run([args.sharelens, "hidden-states", variant, "--token-ids", ids_file, "--out",
                                os.path.join(args.workdir, "weird.safetensors")], capture_output=True, text=True)
            check(r.returncode == 2 and "unsupported FFN activation" in r.stderr and "found weird" in r.stderr,
                  f"{family} with {field} {act}: expected a named refusal, got {r.returncode}: {r.stderr}")
            print(f"   {family} with {field} {act}: refused ({r.stderr.strip().splitlines()[-1][:100]})")

    # ShareLens checkpoints of shared topologies: their composed weights, run forward by ShareLens, against the
    # reference on their Hugging Face exports. A tied factorised embedding (E P, output (E P)^T) and an untied one
    # (input E P, output its own E' P') -- the low-rank sharing paper's "untied at r vs tied at 2r" comparison.
    for label, extra in (("cycle-rev run (LoRA, tied factorised embedding)", ["--embedding-rank", "32"]),
                         ("cycle run (LoRA, untied factorised embedding)", ["--embedding-rank", "16", "--untied-embeddings"])):
        stem = label.split()[0] + ("-untied" if "untied" in label else "")
        run = os.path.join(args.workdir, "sharelens-" + stem)
        topology = os.path.join(args.workdir, stem + ".json")
        subprocess.run([args.sharelens, "topology", "--preset", label.split()[0], "--layers", "4", "--unique", "2", "--d-model", "64",
                        "--heads", "4", "--kv-heads", "2", "--ffn", "160", "--vocab", "512", "--context", "64", "--lora-rank", "4",
                        "--out", topology] + extra, check=True, capture_output=True)
        subprocess.run([args.sharelens, "train", "--topology", topology, "--corpus", "brown", "--out", run, "--steps", "4",
                        "--batch", "2", "--checkpoint-every", "4", "--threads", "2"], check=True, capture_output=True)
        export = os.path.join(args.workdir, "sharelens-export-" + stem)
        subprocess.run([args.sharelens, "export-hf", run, export], check=True, capture_output=True)
        ids = [int(i) for i in rng.integers(0, 512, size=40)]
        ids_file = os.path.join(args.workdir, stem + ".ids")
        with open(ids_file, "w") as f:
            f.write(",".join(map(str, ids)))
        out = os.path.join(args.workdir, stem + ".hidden.safetensors")
        subprocess.run([args.sharelens, "hidden-states", run, "--token-ids", ids_file, "--out", out], check=True, capture_output=True)
        ours, _ = read_file(out)
        with torch.no_grad():
            (states, logits), _ = reference(export, ids)
        worst = max(((torch.from_numpy(ours[f"hidden.{i}"]) - s).norm() / s.norm()).item() for i, s in enumerate(states))
        rel = ((torch.from_numpy(ours["logits"]) - logits).norm() / logits.norm()).item()
        check(worst < 1e-4 and rel < 1e-4, f"ShareLens {label}: hidden states differ by {worst:.2e}, logits by {rel:.2e}")
        print(f"   sharelens {label}: worst relative difference {max(worst, rel):.1e}")

    return finish("all forward-pass peer checks passed")


if __name__ == "__main__":
    sys.exit(main())
