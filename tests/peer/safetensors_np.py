"""A minimal, independent safetensors reader for the peer tests (numpy + torch for the 16-bit floats).

It shares no code with ShareLens: it follows the format's documentation directly.
"""
import json
import os
import struct

import numpy as np
import torch

_NUMPY = {"F64": np.float64, "F32": np.float32, "I64": np.int64, "I32": np.int32, "I16": np.int16,
          "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}
_TORCH16 = {"F16": torch.float16, "BF16": torch.bfloat16}


def read_file(path):
    """Returns ({name: float32 ndarray}, metadata) for one safetensors file."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    data = blob[8 + n:]
    metadata = header.pop("__metadata__", {})
    tensors = {}
    for name, entry in header.items():
        begin, end = entry["data_offsets"]
        raw = data[begin:end]
        shape = entry["shape"]
        dtype = entry["dtype"]
        if dtype in _TORCH16:
            t = torch.frombuffer(bytearray(raw), dtype=_TORCH16[dtype]) if raw else torch.empty(0, dtype=_TORCH16[dtype])
            arr = t.float().numpy().reshape(shape)
        else:
            arr = np.frombuffer(raw, dtype=_NUMPY[dtype]).astype(np.float32).reshape(shape)
        tensors[name] = arr
    return tensors, metadata


def read_checkpoint(directory):
    """All tensors of a checkpoint directory (single file or sharded with an index)."""
    index = os.path.join(directory, "model.safetensors.index.json")
    files = []
    if os.path.exists(index):
        with open(index) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    tensors = {}
    for name in files:
        part, _ = read_file(os.path.join(directory, name))
        tensors.update(part)
    return tensors
