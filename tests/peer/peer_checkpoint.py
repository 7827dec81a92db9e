#!/usr/bin/python3
"""Peer check of checkpoint loading against an independent reading with numpy/PyTorch.

For each family fixture (written by make_fixtures with the exact HF names and layouts):
  1. every stored tensor, converted to float32 by `sharelens convert`, equals torch/numpy's own conversion
     bit for bit;
  2. every canonical matrix of `sharelens dump-view` (per layer, per head, biases) equals the matrix built
     here from the raw tensors with the family's documented layout (GPT-2: Conv1D [in, out], packed c_attn);
  3. `sharelens inspect --json` parameter counts by role equal counts computed here from tensor names.
"""
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_np import read_checkpoint, read_file  # noqa: E402
from hf_layout import expected_view  # noqa: E402
from peer_common import check, finish, make_fixtures, parse_args  # noqa: E402



def same(a, b, what):
    a = np.asarray(a, dtype=np.float32)
    b = np.asarray(b, dtype=np.float32)
    if a.shape != b.shape:
        check(False, f"{what}: shape {a.shape} vs {b.shape}")
        return
    check(np.array_equal(a.view(np.uint32), b.view(np.uint32)), f"{what}: values differ")


def expected_roles(t):
    counts = {}
    for name, arr in t.items():
        n = int(np.prod(arr.shape)) if arr.shape else 1
        if name.endswith("attn.bias") and not name.endswith("c_attn.bias") or name.endswith("masked_bias"):
            continue  # GPT-2 causal-mask buffers
        if "vision_tower" in name or "multi_modal_projector" in name:
            continue
        if "embed_tokens" in name or name.endswith("wte.weight"):
            role = "embedding"
        elif name.endswith("wpe.weight"):
            role = "position"
        elif name == "lm_head.weight":
            role = "output_head"
        elif "norm" in name or ".ln_" in name or name.startswith("ln_f") or ".ln_f." in name or "layernorm" in name:
            role = "norm"
        elif "self_attn" in name or ".attn." in name:
            role = "attention"
        elif "mlp" in name:
            role = "ffn"
        else:
            role = "other"
        counts[role] = counts.get(role, 0) + n
    return counts


def main():
    args = parse_args()
    fixtures = make_fixtures(args)
    check(len(fixtures) >= 7, f"expected 7 fixtures, got {fixtures}")

    for fixture in fixtures:
        name = os.path.basename(fixture)
        print(f"== {name}")
        with open(os.path.join(fixture, "config.json")) as f:
            cfg = json.load(f)
        family = "gpt2" if cfg["model_type"] == "gpt2" else "decoder"
        raw = read_checkpoint(fixture)

        converted = os.path.join(args.workdir, name + ".f32.safetensors")
        subprocess.run([args.sharelens, "convert", fixture, converted], check=True, capture_output=True)
        ours, _ = read_file(converted)
        check(set(ours) == set(raw), f"{name}: convert tensor names differ")
        for tensor, arr in raw.items():
            same(ours[tensor], arr, f"{name}: tensor {tensor}")

        view_path = os.path.join(args.workdir, name + ".view.safetensors")
        subprocess.run([args.sharelens, "dump-view", fixture, view_path], check=True, capture_output=True)
        view, _ = read_file(view_path)
        expected = expected_view(family, raw, cfg)
        check(set(view) == set(expected), f"{name}: view names differ: "
              f"only ours {sorted(set(view) - set(expected))[:5]}, only expected {sorted(set(expected) - set(view))[:5]}")
        for key, arr in expected.items():
            if key in view:
                same(view[key], arr, f"{name}: view {key}")

        report_path = os.path.join(args.workdir, name + ".json")
        subprocess.run([args.sharelens, "inspect", fixture, "--json", report_path], check=True, capture_output=True)
        with open(report_path) as f:
            report = json.load(f)
        want = expected_roles(raw)
        got = {k: v for k, v in report["parameters"].items() if k != "total" and v}
        check(got == want, f"{name}: parameters by role {got} vs {want}")
        check(report["parameters"]["total"] == sum(want.values()), f"{name}: total parameters")
        check(report["tied_embeddings"] == ("lm_head.weight" not in raw), f"{name}: tied flag")
        print(f"   {len(raw)} tensors, {len(expected)} view matrices compared")

    return finish("all peer checks passed")


if __name__ == "__main__":
    sys.exit(main())
