#!/usr/bin/python3
"""Peer check of ShareLens's PyTorch checkpoint reader (core/torch_zip) against PyTorch's own writer.

Debian's PyTorch writes the files here with torch.save, from each family fixture's tensors (make_fixtures):
  * `pytorch_model.bin` beside config.json, and a sharded copy with `pytorch_model.bin.index.json`, give the
    same `sharelens hidden-states` as the safetensors fixture they came from, bit for bit;
  * every tensor of a state dict that mixes dtypes (F32, F16, BF16, F64, I64, I8, bool), shares one storage
    between two names (tied weights), holds a tensor at an offset into a larger storage, wraps an
    nn.Parameter and nests a dict reads back as torch holds it (`sharelens convert`, compared here);
  * what ShareLens refuses is refused by name, with nothing run: a pickle that asks for another global
    (os.system), the pre-1.6 format (_use_new_zipfile_serialization=False), a compressed zip, a truncated
    file, a non-contiguous tensor.
"""
import json
import os
import shutil
import subprocess
import sys
import zipfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_np import read_checkpoint, read_file  # noqa: E402
from peer_common import check, finish, make_fixtures, parse_args  # noqa: E402


def run(sharelens, *argv):
    return subprocess.run([sharelens, *argv], capture_output=True, text=True)


def hidden(sharelens, model, ids_file, out):
    r = run(sharelens, "hidden-states", model, "--token-ids", ids_file, "--out", out)
    check(r.returncode == 0, f"hidden-states {model}: {r.stderr.strip()}")
    return read_file(out)[0] if r.returncode == 0 else None


def as_torch(raw):
    return {name: torch.from_numpy(np.ascontiguousarray(a)) for name, a in raw.items()}


def check_family(args, fixture, work):
    name = os.path.basename(fixture)
    raw = read_checkpoint(fixture)
    state = as_torch(raw)
    single = os.path.join(work, "bin", name)
    os.makedirs(single)
    shutil.copy(os.path.join(fixture, "config.json"), single)
    torch.save(state, os.path.join(single, "pytorch_model.bin"))
    sharded = os.path.join(work, "bin-sharded", name)
    os.makedirs(sharded)
    shutil.copy(os.path.join(fixture, "config.json"), sharded)
    names = sorted(state)
    halves = [names[: len(names) // 2], names[len(names) // 2:]]
    weight_map = {}
    for i, part in enumerate(halves):
        shard = f"pytorch_model-0000{i + 1}-of-00002.bin"
        torch.save({n: state[n] for n in part}, os.path.join(sharded, shard))
        weight_map.update({n: shard for n in part})
    with open(os.path.join(sharded, "pytorch_model.bin.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": weight_map}, f)
    cfg = json.load(open(os.path.join(fixture, "config.json")))
    vocab = cfg.get("vocab_size") or cfg.get("text_config", {}).get("vocab_size")
    ids_file = os.path.join(work, "ids.txt")
    with open(ids_file, "w") as f:
        f.write(",".join(str(i % vocab) for i in range(3, 40)))
    out = os.path.join(work, "out")
    reference = hidden(args.sharelens, fixture, ids_file, os.path.join(out, name + ".st.safetensors"))
    for label, model in [("pytorch_model.bin", single), ("sharded .bin", sharded)]:
        ours = hidden(args.sharelens, model, ids_file, os.path.join(out, f"{name}.{len(label)}.safetensors"))
        if reference is not None and ours is not None:
            same = all(np.array_equal(reference[k], ours[k]) for k in reference)
            check(same, f"{name}: {label} gives other hidden states than the safetensors it came from")
    print(f"   {name}: pytorch_model.bin and its sharded copy run as the safetensors fixture, bit for bit")


def check_dtypes(args, work):
    base = torch.randn(6, 5, dtype=torch.float64)
    storage_owner = torch.arange(20, dtype=torch.float32)
    state = {
        "f32": torch.randn(3, 4),
        "f16": torch.randn(4, 2).half(),
        "bf16": torch.randn(2, 3).bfloat16(),
        "f64": base,
        "i64": torch.arange(6, dtype=torch.int64).reshape(2, 3),
        "i8": torch.tensor([-3, 0, 7], dtype=torch.int8),
        "bool": torch.tensor([True, False, True]),
        "param": torch.nn.Parameter(torch.randn(4)),
        "offset": storage_owner[5:11].view(2, 3),  # a contiguous view at an offset into a larger storage
        "nested": {"inner": torch.randn(2, 2)},
    }
    state["tied"] = state["f32"]  # one storage, two names
    path = os.path.join(work, "dtypes", "state.pt")
    os.makedirs(os.path.dirname(path))
    torch.save(state, path)
    out = os.path.join(work, "out", "dtypes.safetensors")
    r = run(args.sharelens, "convert", path, out, "--dtype", "F64")
    check(r.returncode == 0, f"convert of a mixed state dict: {r.stderr.strip()}")
    if r.returncode != 0:
        return
    ours, _ = read_file(out)
    expected = {k: v for k, v in state.items() if k != "nested"}
    expected["nested.inner"] = state["nested"]["inner"]
    check(sorted(ours) == sorted(expected), f"tensor names {sorted(ours)} != {sorted(expected)}")
    for k, t in expected.items():  # read_file gives float32: every value here is exact in it
        if k in ours:
            want = t.detach().float().numpy()
            check(ours[k].shape == want.shape and np.array_equal(ours[k], want),
                  f"{k}: read {ours[k].ravel()[:4]}, torch holds {want.ravel()[:4]}")
    print(f"   a state dict of {len(expected)} tensors (7 dtypes, tied, offset, parameter, nested) reads as torch holds it")


def expect_refused(args, path, words, label):
    r = run(args.sharelens, "inspect", path)
    check(r.returncode == 2, f"{label}: exit status {r.returncode}, expected 2: {r.stderr.strip()}")
    for w in words:
        check(w in r.stderr, f"{label}: the error does not say '{w}': {r.stderr.strip()}")


class Payload:
    def __reduce__(self):
        return (os.system, ("touch " + Payload.marker,))


def check_refusals(args, work):
    bad = os.path.join(work, "bad")
    os.makedirs(bad)
    Payload.marker = os.path.join(bad, "EXECUTED")
    torch.save({"w": torch.randn(2), "evil": Payload()}, os.path.join(bad, "evil.bin"))
    expect_refused(args, os.path.join(bad, "evil.bin"), ["global", "system"], "a pickle asking for os.system")
    check(not os.path.exists(Payload.marker), "the payload ran")
    torch.save({"w": torch.randn(3)}, os.path.join(bad, "legacy.bin"), _use_new_zipfile_serialization=False)
    expect_refused(args, os.path.join(bad, "legacy.bin"), ["legacy.bin", "torch.save"], "the pre-1.6 format")
    good = os.path.join(bad, "good.bin")
    torch.save({"w": torch.randn(64, 64)}, good)
    with zipfile.ZipFile(good) as src, zipfile.ZipFile(os.path.join(bad, "deflated.bin"), "w",
                                                        compression=zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            dst.writestr(item.filename, src.read(item.filename))
    expect_refused(args, os.path.join(bad, "deflated.bin"), ["compressed zip entry", "method 8"], "a deflated zip")
    blob = open(good, "rb").read()
    with open(os.path.join(bad, "truncated.bin"), "wb") as f:
        f.write(blob[: len(blob) // 2])
    expect_refused(args, os.path.join(bad, "truncated.bin"), ["truncated.bin"], "a truncated file")
    torch.save({"t": torch.randn(4, 3).t()}, os.path.join(bad, "transposed.bin"))
    expect_refused(args, os.path.join(bad, "transposed.bin"), ["non-contiguous tensor", "'t'"], "a transposed view")
    print("   refused by name, nothing run: os.system in the pickle, the pre-1.6 format, deflate, truncation, "
          "a transposed view")


def main():
    args = parse_args()
    os.makedirs(os.path.join(args.workdir, "out"))
    fixtures = make_fixtures(args)
    for fixture in fixtures:
        if os.path.basename(fixture) in ("llama", "qwen2_f16", "gemma3", "gpt2", "llama_bf16_sharded"):
            check_family(args, fixture, args.workdir)
    check_dtypes(args, args.workdir)
    check_refusals(args, args.workdir)
    return finish("PyTorch checkpoints read as PyTorch wrote them")


if __name__ == "__main__":
    sys.exit(main())
