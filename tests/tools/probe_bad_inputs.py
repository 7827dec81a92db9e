#!/usr/bin/python3
"""The bad-input probe (offline; not part of CI): mutate real checkpoints and run the real CLI on each.

    probe_bad_inputs.py --sharelens build/sharelens --make-fixtures build/tests/make_fixtures \\
                        --workdir /tmp/probe --inputs 10000 [--jobs 2] [--json summary.json]

Every input is one fixture checkpoint (all families) with one mutation: header bytes flipped, the file cut
short, the header length changed, a JSON-level edit (shape, offsets, dtype, field removed or added, tensor
renamed to a huge or odd layer index), a config.json edit (field removed, wrong type, huge or negative value),
a NaN/Inf written into tensor data, or a shard index edit. Each input goes through `sharelens inspect` and
`sharelens analyze --spectra --heads`. Outcomes:

  crash          killed by a signal, "terminate called", a sanitizer report, or any exit status but 0, 1, 2
  hang           no exit within the timeout
  wrong exit     exit 1 (internal error), or exit 2 without a named error ("error: WHERE: WHAT")
  silent garbage exit 0 although the independent strict reader below (written from the format's
                 specification and the reference implementation's rules) rejects the file, or an exit-0
                 report that holds a non-finite number
The strict reader is stricter than nothing and no stricter than the reference: duplicate keys, which the
reference's map silently collapses, are refused by ShareLens on purpose and are not counted against it.
"""
import argparse
import concurrent.futures as futures
import json
import math
import os
import random
import resource
import shutil
import struct
import subprocess
import sys
import time

DTYPE_SIZES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
               "I32": 4, "U32": 4, "F32": 4, "F64": 8, "I64": 8, "U64": 8}
MAX_HEADER = 100_000_000


class Invalid(Exception):
    pass


def strict_read(path):
    """Raises Invalid when the reference implementation would refuse the file."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise Invalid("shorter than 8 bytes")
    (n,) = struct.unpack("<Q", blob[:8])
    if n > MAX_HEADER or n + 8 > len(blob):
        raise Invalid("header length")
    try:
        text = blob[8:8 + n].decode("utf-8")
    except UnicodeDecodeError:
        raise Invalid("not UTF-8")

    def no_constants(name):
        raise Invalid("JSON constant " + name)

    try:
        header = json.loads(text, parse_constant=no_constants)
    except (ValueError, RecursionError) as e:
        raise Invalid("JSON: %s" % e)
    if not isinstance(header, dict):
        raise Invalid("not an object")
    meta = header.pop("__metadata__", None)
    if meta is not None and (not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values())):
        raise Invalid("metadata")
    entries = []
    for name, e in header.items():
        if not isinstance(e, dict):
            raise Invalid("entry")
        dtype, shape, offsets = e.get("dtype"), e.get("shape"), e.get("data_offsets")
        if dtype not in DTYPE_SIZES:
            raise Invalid("dtype")
        if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
            raise Invalid("shape")
        if (not isinstance(offsets, list) or len(offsets) != 2 or
                not all(isinstance(o, int) and not isinstance(o, bool) and o >= 0 for o in offsets)):
            raise Invalid("offsets")
        if max(shape + [0]) >= 2 ** 64 or max(offsets) >= 2 ** 64:
            raise Invalid("overflow")
        entries.append((offsets[0], offsets[1], name, dtype, shape))
    entries.sort()
    start = 0
    for b, e, name, dtype, shape in entries:
        if b != start or e < b:
            raise Invalid("offsets of " + name)
        numel = 1
        for d in shape:
            numel *= d
        if numel * DTYPE_SIZES[dtype] >= 2 ** 64:
            raise Invalid("overflow")
        if numel * DTYPE_SIZES[dtype] != e - b:
            raise Invalid("size of " + name)
        start = e
    if start + 8 + n != len(blob):
        raise Invalid("data length")


def header_of(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    return blob, n, json.loads(blob[8:8 + n])


def write_with_header(path, header, data):
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


# ---- mutations: each takes (rng, checkpoint directory) and edits it in place; returns a description -------

def st_files(d):
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".safetensors"))


def m_flip_header(rng, d):
    path = rng.choice(st_files(d))
    blob, n, _ = header_of(path)
    b = bytearray(blob)
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(8, 8 + n)
        b[i] = rng.randrange(256) if rng.random() < 0.5 else b[i] ^ (1 << rng.randrange(8))
    open(path, "wb").write(bytes(b))
    return "flip header bytes of " + os.path.basename(path)


def m_truncate(rng, d):
    path = rng.choice(st_files(d))
    size = os.path.getsize(path)
    cut = rng.choice([rng.randrange(0, min(size, 64)), rng.randrange(0, size)])
    os.truncate(path, cut)
    return "truncate %s to %d" % (os.path.basename(path), cut)


def m_header_length(rng, d):
    path = rng.choice(st_files(d))
    blob, n, _ = header_of(path)
    new = rng.choice([0, n - 1, n + 1, n + 8, 2 ** 63, 2 ** 64 - 1, MAX_HEADER + 1, rng.randrange(2 ** 32)])
    open(path, "wb").write(struct.pack("<Q", new) + blob[8:])
    return "header length %d" % new


def m_json(rng, d):
    path = rng.choice(st_files(d))
    blob, n, header = header_of(path)
    data = blob[8 + n:]
    names = [k for k in header if k != "__metadata__"]
    name = rng.choice(names)
    e = header[name]
    kind = rng.randrange(9)
    if kind == 0:
        e["shape"] = [rng.choice([0, 1, 3, 2 ** 31, 2 ** 40, -1]) for _ in e["shape"]] or [7]
    elif kind == 1:
        e["data_offsets"] = [e["data_offsets"][0], e["data_offsets"][1] + rng.choice([-4, 4, 2 ** 40])]
    elif kind == 2:
        e["dtype"] = rng.choice(["F32", "F16", "BF16", "I64", "U8", "F4", "", 3])
    elif kind == 3:
        del e[rng.choice(list(e.keys()))]
    elif kind == 4:
        e["extra"] = {"nested": [1, 2]}
    elif kind == 5:  # rename to a huge or odd layer index
        idx = rng.choice(["4294967296", "99999", "-1", "01", "1e3", "\u0661"])
        header[name.replace(".0.", "." + idx + ".", 1) if ".0." in name else name + "." + idx] = header.pop(name)
    elif kind == 6:
        header[name] = rng.choice([None, 3, "x", [], {}])
    elif kind == 7:
        header["__metadata__"] = rng.choice([{"a": 1}, "x", {"sharelens.topology": "{broken"}, {"format": "pt"}])
    else:
        header.pop(name)
    write_with_header(path, header, data)
    return "JSON edit %d of tensor %s" % (kind, name)


CONFIG_FIELDS = ["hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
                 "intermediate_size", "vocab_size", "max_position_embeddings", "rms_norm_eps", "rope_theta",
                 "tie_word_embeddings", "model_type", "n_embd", "n_layer", "n_head", "n_positions", "text_config",
                 "rope_scaling", "sliding_window", "query_pre_attn_scalar", "layer_norm_epsilon"]


def m_config(rng, d):
    path = os.path.join(d, "config.json")
    if not os.path.exists(path) or rng.random() < 0.05:
        open(path, "w").write(rng.choice(["", "{", "[]", "null", '{"model_type": "llama",}']))
        return "config.json replaced by junk"
    cfg = json.load(open(path))
    target = cfg["text_config"] if "text_config" in cfg and rng.random() < 0.5 else cfg
    field = rng.choice(CONFIG_FIELDS)
    value = rng.choice([None, "llama", -1, 0, 1, 3, 2 ** 31, 2 ** 63, 1e308, 1.5, True, [], {}])
    if rng.random() < 0.2:
        target.pop(field, None)
        desc = "config.json without " + field
    else:
        target[field] = value
        desc = "config.json %s = %r" % (field, value)
    json.dump(cfg, open(path, "w"))
    return desc


def m_nonfinite(rng, d):
    path = rng.choice(st_files(d))
    blob, n, header = header_of(path)
    floats = [(k, e) for k, e in header.items() if k != "__metadata__" and e.get("dtype") == "F32"
              and e["data_offsets"][1] > e["data_offsets"][0]]
    if not floats:
        return m_truncate(rng, d)
    name, e = rng.choice(floats)
    b = bytearray(blob)
    at = 8 + n + e["data_offsets"][0] + 4 * rng.randrange((e["data_offsets"][1] - e["data_offsets"][0]) // 4)
    b[at:at + 4] = struct.pack("<f", rng.choice([math.nan, math.inf, -math.inf]))
    open(path, "wb").write(bytes(b))
    return "non-finite value in " + name


def m_index(rng, d):
    path = os.path.join(d, "model.safetensors.index.json")
    if not os.path.exists(path):
        return m_json(rng, d)
    idx = json.load(open(path))
    wm = idx["weight_map"]
    k = rng.choice(list(wm))
    kind = rng.randrange(5)
    if kind == 0:
        wm[k] = rng.choice(["../model.safetensors", "/etc/passwd", "", "missing.safetensors", 3])
    elif kind == 1:
        wm.pop(k)
    elif kind == 2:
        wm["model.layers.4294967296.mlp.up_proj.weight"] = wm[k]
    elif kind == 3:  # a shard that is a symbolic link loop
        shard = os.path.join(d, wm[k])
        os.remove(shard)
        os.symlink(os.path.basename(shard), shard)
    else:
        idx["weight_map"] = rng.choice([[], "x", None])
    json.dump(idx, open(path, "w"))
    return "index edit %d" % kind


MUTATIONS = [(m_flip_header, 30), (m_truncate, 8), (m_header_length, 6), (m_json, 26), (m_config, 16),
             (m_nonfinite, 8), (m_index, 6)]


def classify(result, path, oracle_invalid):
    code, out, err, seconds = result
    if code is None:
        return "hang"
    if code < 0 or code not in (0, 1, 2) or any(s in err for s in ("terminate called", "Assertion", "Sanitizer", "Segmentation")):
        return "crash"
    if code == 1:
        return "wrong exit"
    if code == 2:
        return "ok" if err.startswith("error: ") and ": " in err[7:] else "wrong exit"
    # exit 0
    if oracle_invalid and oracle_invalid != "duplicate":
        return "silent garbage"
    if any(t in out for t in ("NaN", "Infinity")):
        return "silent garbage"
    return "ok"


def limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))


def run(cmd, timeout):
    start = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=timeout, preexec_fn=limit_memory)
        return p.returncode, p.stdout, p.stderr, time.monotonic() - start
    except subprocess.TimeoutExpired:
        return None, "", "", timeout


def probe_one(args, fixtures, i):
    rng = random.Random(args.seed * 1_000_003 + i)
    src = rng.choice(fixtures)
    d = os.path.join(args.workdir, "in-%06d" % i)
    shutil.copytree(src, d, symlinks=True)
    weights = [m for m, w in MUTATIONS for _ in range(w)]
    desc = rng.choice(weights)(rng, d)
    oracle = None
    for f in st_files(d):
        try:
            strict_read(f)
        except Invalid as e:
            oracle = str(e)
        except OSError as e:
            oracle = "unreadable: %s" % e
    outcomes = {}
    report = os.path.join(d, "report.json")
    for name, cmd in (("inspect", [args.sharelens, "inspect", d, "--json", os.path.join(d, "inspect.json")]),
                      ("analyze", [args.sharelens, "analyze", d, "--spectra", "--heads", "--json", report])):
        r = run(cmd, args.timeout)
        out = r[1]
        if r[0] == 0 and name == "analyze" and os.path.exists(report):
            out += open(report).read()
        outcomes[name] = (classify((r[0], out, r[2], r[3]), d, oracle), r[0], r[2][:300], round(r[3], 2))
    shutil.rmtree(d, ignore_errors=True)
    return {"input": i, "fixture": os.path.basename(src), "mutation": desc, "oracle": oracle, "outcomes": outcomes}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sharelens", required=True)
    ap.add_argument("--make-fixtures", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--inputs", type=int, default=10000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json")
    args = ap.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    listed = subprocess.run([args.make_fixtures, os.path.join(args.workdir, "fixtures")], check=True, capture_output=True, text=True)
    fixtures = listed.stdout.split()
    counts = {k: 0 for k in ("ok", "crash", "hang", "wrong exit", "silent garbage")}
    exits = {}
    failures = []
    start = time.monotonic()
    with futures.ThreadPoolExecutor(args.jobs) as pool:
        for n, r in enumerate(pool.map(lambda i: probe_one(args, fixtures, i), range(args.inputs)), 1):
            for cmd, (outcome, code, err, secs) in r["outcomes"].items():
                counts[outcome] += 1
                exits["%s exit %s" % (cmd, code)] = exits.get("%s exit %s" % (cmd, code), 0) + 1
                if outcome != "ok":
                    failures.append({"input": r["input"], "command": cmd, "outcome": outcome, "mutation": r["mutation"],
                                     "fixture": r["fixture"], "oracle": r["oracle"], "exit": code, "stderr": err})
            if n % 500 == 0:
                print("%d inputs, %s, %.0f s" % (n, counts, time.monotonic() - start), flush=True)
    summary = {"inputs": args.inputs, "runs": 2 * args.inputs, "seconds": round(time.monotonic() - start),
               "counts": counts, "exits": exits, "failures": failures[:200]}
    print("| inputs | runs | crashes | hangs | wrong exits | silent garbage |")
    print("| %d | %d | %d | %d | %d | %d |" % (args.inputs, 2 * args.inputs, counts["crash"], counts["hang"],
                                              counts["wrong exit"], counts["silent garbage"]))
    print("exit statuses:", json.dumps(exits, sort_keys=True))
    for f in failures[:20]:
        print(json.dumps(f))
    if args.json:
        json.dump(summary, open(args.json, "w"), indent=1)
    return 0 if len(failures) == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
