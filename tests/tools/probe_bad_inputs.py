#!/usr/bin/python3
"""The bad-input probe (offline; not part of CI): mutate real checkpoints and run the real CLI on each.

    probe_bad_inputs.py --sharelens build/sharelens --make-fixtures build/tests/make_fixtures \\
                        --workdir /tmp/probe --inputs 10000 [--jobs 2] [--json summary.json]

Every input is one thing a user hands ShareLens, with one mutation:
  checkpoints (70%)  a fixture checkpoint (all families): header bytes flipped, the file cut short, the header
                     length changed, a JSON-level edit (shape, offsets, dtype, field removed or added, tensor
                     renamed to a huge or odd layer index), a config.json edit (field removed, wrong type, huge or
                     negative value), a NaN/Inf written into tensor data, or a shard index edit; run through
                     `sharelens inspect` and `sharelens analyze --spectra --heads`;
  topologies (15%)   a topology file with a field changed (sizes of 10^6..10^18, negative, wrong type, missing,
                     assignments out of range, MASA and LoRA settings that do not fit); through `sharelens params`
                     and `sharelens export --view topology`;
  metrics logs (15%) a run directory whose metrics.jsonl is torn, holds negative or 2^64 steps, NaN, huge or
                     wrongly typed values or binary junk; through `sharelens export --view training`.
Before them, a fixed list of ~60 bad command lines (unknown commands and flags, out-of-range, non-finite and
wrongly typed values, unwritable outputs) runs once each. Outcomes:

  crash          killed by a signal, "terminate called", a sanitizer report, or any exit status but 0, 1, 2
  hang           no exit within the timeout
  memory         a real allocation failure ("out of memory") or more than 2 GiB resident for these tiny inputs:
                 a size read from the input was trusted before it was checked
  wrong exit     exit 1 (internal error), or exit 2 without a named error ("error: WHERE: WHAT")
  silent garbage exit 0 although the independent strict reader below (written from the format's
                 specification and the reference implementation's rules) rejects the file, or an exit-0
                 report that holds a non-finite number (written as null by the JSON writer)
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
import tempfile
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


WIDTHS = {"F32": ["I32", "U32"], "F16": ["I16", "U16"], "BF16": ["I16", "U16"], "F64": ["I64", "U64"]}


def m_integer_dtype(rng, d):
    """A weight relabelled as an integer dtype of the same width: a valid file, but its numbers are not the
    weights (analyze must refuse it: it was read as the integers it holds)."""
    path = rng.choice(st_files(d))
    blob, n, header = header_of(path)
    names = [k for k, v in header.items() if k != "__metadata__" and v["dtype"] in WIDTHS and len(v["shape"]) == 2]
    if not names:
        return "no 2-D floating tensor"
    name = rng.choice(names)
    header[name]["dtype"] = rng.choice(WIDTHS[header[name]["dtype"]])
    write_with_header(path, header, blob[8 + n:])
    return "integer weight: %s as %s" % (name, header[name]["dtype"])


MUTATIONS = [(m_flip_header, 30), (m_truncate, 8), (m_header_length, 6), (m_json, 26), (m_config, 16),
             (m_nonfinite, 8), (m_index, 6), (m_integer_dtype, 6)]


ALLOWED_NULLS = {"proj", "head", "layer", "nll_standard_error", "sibling", "init"}


def holds_nonfinite(report_text):
    """True when a JSON report holds a null where a number belongs (nlohmann writes NaN and Inf as null)."""
    try:
        report = json.loads(report_text)
    except ValueError:
        return True

    def walk(x, key):
        if x is None:
            return key not in ALLOWED_NULLS
        if isinstance(x, float):
            return not math.isfinite(x)
        if isinstance(x, dict):
            return any(walk(v, k) for k, v in x.items())
        if isinstance(x, list):
            return any(walk(v, key) for v in x)
        return False
    return walk(report, "")


MEMORY_LIMIT = 2 << 30  # resident bytes no run on these tiny inputs needs


def classify(result, oracle_invalid, report=None):
    code, out, err, seconds, peak = result
    if code is None:
        return "hang"
    if code < 0 or code not in (0, 1, 2) or any(s in err for s in ("terminate called", "Assertion", "Sanitizer", "Segmentation")):
        return "crash"
    if "out of memory" in err or peak > MEMORY_LIMIT:
        return "memory"
    if code == 1:
        return "wrong exit"
    if code == 2:  # a named error on a line of its own (progress lines may come before it)
        named = [line for line in err.replace("\r", "\n").splitlines() if line.startswith("error: ")]
        return "ok" if named and ": " in named[-1][7:] else "wrong exit"
    # exit 0
    if oracle_invalid and oracle_invalid != "duplicate":
        return "silent garbage"
    if report is not None and holds_nonfinite(report):
        return "silent garbage"
    return "ok"


def limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))


def run(cmd, timeout):
    """(exit status -- negative for a signal, None on timeout --, stdout, stderr, seconds, peak resident bytes)."""
    start = time.monotonic()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen(cmd, stdout=out, stderr=err, preexec_fn=limit_memory)
        while True:  # wait4 gives this child's own peak resident size
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - start > timeout:
                p.kill()
                os.wait4(p.pid, 0)
                p.returncode = 0  # reaped here; keep Popen from waiting again
                return None, "", "", timeout, 0
            time.sleep(0.005)
        p.returncode = 0
        code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        out.seek(0)
        err.seek(0)
        return (code, out.read().decode(errors="replace"), err.read().decode(errors="replace"), time.monotonic() - start,
                usage.ru_maxrss * 1024)


def probe_checkpoint(args, fixtures, rng, d):
    src = rng.choice(fixtures)
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
    integer = desc.startswith("integer weight:")  # valid for inspect, which lists; wrong for any reader of weights
    for name, cmd in (("inspect", [args.sharelens, "inspect", d, "--json", os.path.join(d, "inspect.json")]),
                      ("analyze", [args.sharelens, "analyze", d, "--spectra", "--heads", "--json", report])):
        r = run(cmd, args.timeout)
        text = open(report).read() if r[0] == 0 and name == "analyze" and os.path.exists(report) else None
        wrong = oracle or ("integer weight" if integer and name == "analyze" else None)
        outcomes[name] = (classify(r, wrong, text), r[0], r[2][:300], round(r[3], 2), r[4])
    return os.path.basename(src), desc, oracle, outcomes


TOPOLOGY_EDITS = [
    ("model", "n_layers"), ("model", "d_model"), ("model", "ffn_dim"), ("model", "context"), ("model", "vocab"),
    ("model", "n_heads"), ("model", "n_kv_heads"), ("model", "head_dim"), ("attention", "assign"), ("ffn", "assign"),
    ("attention", "lora_rank"), ("ffn", "lora_rank"), ("embedding", "factor_rank"), ("embedding", "tied"),
    ("masa", "atoms"), ("masa", "enabled"), ("head_sharing", "lora_rank"), ("head_sharing", "mode"), ("schema", None),
    ("tied_heads", None), ("postshare", "gamma")]
TOPOLOGY_VALUES = [None, -1, 0, 1, 3, 10 ** 6, 10 ** 9, 10 ** 10, 2 ** 63, 10 ** 18, 1e308, 0.5, "x", True, [], {}, [0, 99], [-1]]


def probe_topology(args, base, rng, d):
    os.makedirs(d)
    t = json.loads(json.dumps(base))
    descs = []
    for _ in range(rng.choice([1, 1, 2])):
        section, key = rng.choice(TOPOLOGY_EDITS)
        value = rng.choice(TOPOLOGY_VALUES)
        if key is None:
            t[section] = value
        elif rng.random() < 0.15:
            (t.get(section) if isinstance(t.get(section), dict) else {}).pop(key, None)
            value = "<removed>"
        else:
            if not isinstance(t.get(section), dict):
                t[section] = {}
            t[section][key] = value
        descs.append("%s.%s = %r" % (section, key, value))
    path = os.path.join(d, "t.json")
    text = json.dumps(t)
    if rng.random() < 0.05:
        text = text[:rng.randrange(len(text))]  # a torn file
        descs.append("torn")
    open(path, "w").write(text)
    outcomes = {}
    for name, cmd in (("params", [args.sharelens, "params", path, "--json", os.path.join(d, "p.json")]),
                      ("export-topology", [args.sharelens, "export", "--view", "topology", "--input", path,
                                           "--out", os.path.join(d, "t.svg")])):
        r = run(cmd, args.timeout)
        text = open(os.path.join(d, "p.json")).read() if name == "params" and r[0] == 0 else None
        outcomes[name] = (classify(r, None, text), r[0], r[2][:300], round(r[3], 2), r[4])
    return "topology", "; ".join(descs), None, outcomes


def mutate_metrics_line(rng, line):
    try:
        j = json.loads(line)
    except ValueError:
        j = None
    if not isinstance(j, dict):  # already broken by an earlier edit: break it further
        return line[:len(line) // 2] + "\x00" + line[len(line) // 2:]
    kind = rng.randrange(8)
    if kind == 0:
        return line[:rng.randrange(len(line))]  # torn
    if kind == 1:
        j["step"] = rng.choice([-1, -(2 ** 63), 2 ** 64 - 1, 2 ** 53 + 1, 1e300, "7", None])
    elif kind == 2:
        j[rng.choice(["loss", "val_loss", "lr", "grad_norm", "tokens_per_s", "elapsed", "tokens"])] = rng.choice(
            ["NaN", 1e308, -1e308, "x", None, [], {}])
    elif kind == 3:
        return "".join(chr(rng.randrange(1, 256)) for _ in range(rng.randrange(1, 200)))
    elif kind == 4:
        return json.dumps(rng.choice([[], 3, "x", None]))
    elif kind == 5:
        j["event"] = rng.choice(["finish", "resume", "skip", 3, None, "x" * 1000])
    elif kind == 6:
        j["world_size"], j["rank_tokens_per_s"] = rng.choice([(2, [1.0]), (-5, "x"), (10 ** 9, [None])])
    else:
        j.pop(rng.choice(list(j)), None)
    return json.dumps(j)


def probe_metrics(args, run_dir, rng, d):
    shutil.copytree(run_dir, d)
    path = os.path.join(d, "metrics.jsonl")
    lines = open(path).read().splitlines()
    descs = []
    for _ in range(rng.choice([1, 2, 4])):
        i = rng.randrange(len(lines))
        lines[i] = mutate_metrics_line(rng, lines[i])
        descs.append("line %d" % i)
    open(path, "w", errors="surrogateescape").write("\n".join(lines) + ("\n" if rng.random() < 0.8 else ""))
    r = run([args.sharelens, "export", "--view", "training", "--input", d, "--out", os.path.join(d, "t.png")], args.timeout)
    return "metrics", "metrics.jsonl edits at " + ", ".join(descs), None, {"export-training": (classify(r, None), r[0], r[2][:300], round(r[3], 2), r[4])}


EXPERIMENT = {"schema": "sharelens.experiment/1", "name": "tiny", "corpus": "brown", "seeds": 2, "tokens": 512,
              "eval_tokens": 256, "train": {"batch_size": 2, "eval_every": 10, "checkpoint_every": 10},
              "reference": "base", "arms": [{"name": "cycle", "topology": None}, {"name": "base", "matched_baseline_of": "cycle"}]}
# (path, value, must_refuse): a misspelt key anywhere, values out of range or of the wrong type.
EXPERIMENT_EDITS = [
    (("stpes",), 10, True), (("referance",), "cycle", True), (("seeds",), 1, True), (("seeds",), [3, 3], True),
    (("seeds",), 2 ** 40, True), (("tokens",), 2 ** 63 - 1, True), (("tokens",), -5, True), (("tokens",), "many", True),
    (("tokens",), 1e300, True), (("eval_tokens",), 0, True), (("train", "learning_rate"), 0.1, True),
    (("train", "lr"), -1, True), (("train", "lr"), "fast", True), (("train", "steps"), 5, True),
    (("train", "batch_size"), 0, True), (("arms", 0, "expcet"), "better", True), (("arms", 0, "expect"), "faster", True),
    (("arms", 1, "matched_baseline_of"), "nope", True), (("arms", 0, "margin"), 0.1, True), (("reference",), "nope", True),
    (("claim",), {"papr": "x"}, True), (("arms",), [], True), (("corpus",), "/no/such/corpus", True),
    (("name",), "renamed", False), (("description",), "fine", False), (("train", "lr"), 1e-3, False)]


def probe_experiment(args, topology, rng, d):
    os.makedirs(d)
    e = json.loads(json.dumps(EXPERIMENT))
    e["arms"][0]["topology"] = topology
    descs, refuse = [], False
    for _ in range(rng.choice([1, 1, 2])):
        path, value, must = rng.choice(EXPERIMENT_EDITS)
        target = e
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        descs.append("%s = %r" % (".".join(map(str, path)), value))
        refuse = refuse or must
    path = os.path.join(d, "e.json")
    json.dump(e, open(path, "w"))
    r = run([args.sharelens, "experiment", "run", path, "--out", os.path.join(d, "out"), "--steps", "1", "--threads", "1"],
            args.timeout)
    outcome = classify(r, "must refuse" if refuse else None)
    if outcome == "ok" and r[0] == 2 and not refuse and "corpus" not in r[2]:
        outcome = "wrong exit"  # a valid experiment refused
    if r[0] != 0 and os.path.exists(os.path.join(d, "out", "experiment.json")) and not any(
            os.path.exists(os.path.join(d, "out", a["name"])) for a in e["arms"] if isinstance(a, dict) and "name" in a):
        outcome = "litter"  # a refused experiment left its record behind, blocking the corrected rerun
    return "experiment", "; ".join(descs), None, {"experiment": (outcome, r[0], r[2][:300], round(r[3], 2), r[4])}


def tree_digest(path):
    h = []
    for root, _, files in sorted(os.walk(path)):
        for f in sorted(files):
            with open(os.path.join(root, f), "rb") as fh:
                h.append((os.path.relpath(os.path.join(root, f), path), hash(fh.read())))
    return h


def probe_outputs(args, run_dir, rng, d):
    """The newer commands, given an output they must refuse before any work: inside the run they read, inside
    its checkpoint, a folder where a file goes, a missing folder, an empty path, a listed projection twice, a
    calibration beyond any corpus, a held-out share that takes in training documents. Refused by name (exit 2)
    with the run byte-identical and nothing written; exit 0 is a silent wrong result, a changed run data lost."""
    os.makedirs(d)
    run_copy = os.path.join(d, "run")
    shutil.copytree(run_dir, run_copy)
    ckpt = os.path.join(run_copy, "checkpoints", sorted(os.listdir(os.path.join(run_copy, "checkpoints")))[-1])
    before = tree_digest(run_copy)
    # Each a place no output may go: the run or checkpoint read, inside them, an empty path, a folder holding
    # them, a weights file of theirs. (A directory output under missing parents is made, as mkdir -p would.)
    out_dir = rng.choice([run_copy, ckpt, os.path.join(run_copy, "x"), os.path.join(ckpt, "x"), "", d,
                          os.path.join(ckpt, "model.safetensors")])
    sl = args.sharelens
    choices = [
        ["export-hf", rng.choice([run_copy, ckpt, os.path.join(ckpt, "model.safetensors")]), out_dir],
        ["compress", run_copy, "--ratio", "0.8", "--groups", "0-1,2-3", "--calibration", "brown:64", "--out", out_dir],
        ["compress", run_copy, "--ratio", "0.8", "--groups", "0-1,2-3", "--calibration", "brown:64", "--out",
         os.path.join(d, "ok"), "--json", out_dir],
        ["compress", run_copy, "--ratio", "0.8", "--projections", rng.choice(["q,q", "k,v,k", "o,o,o"]), "--out",
         os.path.join(d, "ok")],
        ["compress", run_copy, "--ratio", "0.8", "--calibration", "brown:%d" % rng.choice([2 ** 40, 2 ** 63 - 1]), "--out",
         os.path.join(d, "ok")],
        ["eval", run_copy, "--json", out_dir if out_dir else os.path.join(ckpt, "e.json")],
        ["eval", run_copy, "--json", os.path.join(d, "no", "such", "e.json")],
        ["eval", run_copy, "--validation-fraction", str(rng.choice([0.5, 0.9, 1.0]))],
        ["analyze", ckpt, "--spectra", "--json", out_dir],
        ["convert", ckpt, out_dir or os.path.join(ckpt, "f.safetensors")],
        ["train", "--init", run_copy, "--context", str(rng.choice([128, 4096, 1048576])), "--steps", "1", "--out",
         os.path.join(d, "post")],
        ["analyze", ckpt, "--spectra", "--json", os.path.join(d, "a.json"), "--json", os.path.join(d, "b.json")],
    ]
    cmd = rng.choice(choices)
    r = run([sl] + cmd, args.timeout)
    outcome = classify(r, "must refuse")
    if tree_digest(run_copy) != before:
        outcome = "data lost"
    elif r[0] != 0 and os.path.exists(os.path.join(d, "ok")) or any(".tmp" in n for n in os.listdir(d)):
        outcome = "litter"
    return "outputs", " ".join(cmd).replace(d, "D"), None, {cmd[0]: (outcome, r[0], r[2][:300], round(r[3], 2), r[4])}


def probe_one(args, fixtures, topology, run_dir, i):
    rng = random.Random(args.seed * 1_000_003 + i)
    d = os.path.join(args.workdir, "in-%06d" % i)
    family = rng.random()
    if family < 0.55:
        source, desc, oracle, outcomes = probe_checkpoint(args, fixtures, rng, d)
    elif family < 0.67:
        source, desc, oracle, outcomes = probe_topology(args, topology, rng, d)
    elif family < 0.78:
        source, desc, oracle, outcomes = probe_metrics(args, run_dir, rng, d)
    elif family < 0.88:
        source, desc, oracle, outcomes = probe_experiment(args, topology, rng, d)
    else:
        source, desc, oracle, outcomes = probe_outputs(args, run_dir, rng, d)
    shutil.rmtree(d, ignore_errors=True)
    return {"input": i, "fixture": source, "mutation": desc, "oracle": oracle, "outcomes": outcomes}


def bad_command_lines(sb, work, topology, run_dir, fixture):
    """Command lines a user may mistype: each must end in a named error (exit 2), never a crash."""
    t, o = topology, os.path.join(work, "cli-out")
    lines = [
        ["frobnicate"], ["inspect"], ["inspect", "/no/such/path"], ["inspect", fixture, "--json"], ["analyze", fixture],
        ["analyze", fixture, "--json", o + ".json", "--threshold", "nan"], ["analyze", fixture, "--json", o + ".json", "--threshold", "2"],
        ["analyze", fixture, "--json", o + ".json", "--ratio", "1"], ["analyze", fixture, "--json", o + ".json", "--ratio", "-0.5"],
        ["analyze", fixture, "--json", o + ".json", "--masa-groups", "0-99"], ["analyze", fixture, "--json", o + ".json", "--masa-groups", "kl:0"],
        ["analyze", fixture, "--json", o + ".json", "--tokens", "-3"], ["analyze", fixture, "--json", o + ".json", "--device", "tpu"],
        ["analyze", fixture, "--json", "/proc/x/report.json", "--spectra"], ["analyze", fixture, "--json", o + ".json", "--threads", "0"],
        ["analyze", fixture, "--json", o + ".json", "--logit-lens", "sideways"], ["analyze", fixture, "--bogus-flag", "--json", o + ".json"],
        ["train"], ["train", "--topology", t], ["train", "--topology", t, "--out", "/proc/x"], ["train", "--topology", t, "--out", "/dev/null/x"],
        ["train", "--topology", t, "--out", o, "--lr", "nan"], ["train", "--topology", t, "--out", o, "--lr", "inf"],
        ["train", "--topology", t, "--out", o, "--lr", "-1"], ["train", "--topology", t, "--out", o, "--lr", "1e308"],
        ["train", "--topology", t, "--out", o, "--steps", "0"], ["train", "--topology", t, "--out", o, "--steps", "1e99"],
        ["train", "--topology", t, "--out", o, "--batch", "-4"], ["train", "--topology", t, "--out", o, "--seed", "-1"],
        ["train", "--topology", t, "--out", o, "--device", "cuda"], ["train", "--topology", t, "--out", o, "--nproc", "0"],
        ["train", "--topology", t, "--out", o, "--corpus", "/no/such/corpus"], ["train", "--resume", "--out", "/no/such/run"],
        ["train", "--init", "/no/such/ckpt", "--out", o], ["train", "--init", fixture, "--postshare", "2", "--gamma", "0.1", "--out", o],
        ["topology", "--preset", "cycle", "--layers", "4", "--unique", "9", "--out", o + ".json"],
        ["topology", "--preset", "zigzag", "--layers", "4", "--unique", "2", "--out", o + ".json"],
        ["topology", "--preset", "cycle", "--layers", "1000000000", "--unique", "2", "--out", o + ".json"],
        ["topology", "--preset", "cycle", "--layers", "4", "--unique", "2", "--d-model", "1e9", "--out", o + ".json"],
        ["topology", "--preset", "cycle", "--layers", "4", "--unique", "2", "--depth", "9", "--out", o + ".json"],
        ["params", "/no/such.json"], ["params", t, "--batch", "0"], ["params", t, "--solve-lora-rank", "-1", "--out", o + ".json"],
        ["params", t, "--budget-of", "/no/such.json", "--out", o + ".json"],
        ["eval", fixture], ["eval", fixture, "--tokens", "0"], ["eval", fixture, "--validation-fraction", "1.5"],
        ["eval", fixture, "--window", "-1"], ["eval", "/no/such/ckpt"],
        ["export", "--view", "nosuch", "--input", fixture, "--out", o + ".png"], ["export", "--view", "heads", "--input", fixture, "--out", o + ".bmp"],
        ["export", "--view", "heads", "--input", fixture, "--out", o + ".png", "--layer", "99"],
        ["export", "--view", "training", "--input", fixture, "--out", o + ".png"], ["export", "--view", "heads", "--out", o + ".png"],
        ["hidden-states", fixture, "--token-ids", "/no/such.txt", "--out", o + ".st"], ["tokenize", fixture, "--text"],
        ["convert", fixture, o + ".st", "--dtype", "F7"], ["dump-view", fixture], ["export-hf", fixture],
        ["experiment", "run", "/no/such.json", "--out", o], ["experiment", "report", "/no/such/dir"], ["experiment", "fly"],
        ["compress", fixture, "--method", "masa", "--ratio", "1.5", "--out", o], ["compress", fixture, "--method", "zip", "--ratio", "0.8", "--out", o],
    ]
    counts = {k: 0 for k in ("ok", "crash", "hang", "memory", "wrong exit", "silent garbage")}
    failures = []
    for line in lines:
        r = run([sb] + line, 120)
        outcome = classify(r, None)
        if r[0] == 0:  # a bad command line must not succeed
            outcome = "silent garbage"
        counts[outcome] += 1
        if outcome != "ok":
            failures.append({"command": " ".join(line), "outcome": outcome, "exit": r[0], "stderr": r[2][:300]})
        shutil.rmtree(o, ignore_errors=True)
    return len(lines), counts, failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sharelens", required=True)
    ap.add_argument("--make-fixtures", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--inputs", type=int, default=10000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--first", type=int, default=0, help="the first input's index (inputs are reproducible by index)")
    ap.add_argument("--json")
    args = ap.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    listed = subprocess.run([args.make_fixtures, os.path.join(args.workdir, "fixtures")], check=True, capture_output=True, text=True)
    fixtures = listed.stdout.split()
    # A valid topology and a short real run to mutate.
    topo_path = os.path.join(args.workdir, "base-topology.json")
    subprocess.run([args.sharelens, "topology", "--preset", "cycle", "--layers", "4", "--unique", "2", "--d-model", "64",
                    "--heads", "4", "--kv-heads", "2", "--ffn", "128", "--vocab", "512", "--context", "32", "--lora-rank", "4",
                    "--out", topo_path], check=True, capture_output=True)
    run_dir = os.path.join(args.workdir, "base-run")
    subprocess.run([args.sharelens, "train", "--topology", topo_path, "--corpus", "brown", "--out", run_dir, "--steps", "12",
                    "--batch", "2", "--threads", "1", "--eval-every", "4", "--checkpoint-every", "6"], check=True, capture_output=True)
    topology = json.load(open(topo_path))
    start = time.monotonic()
    cli_lines, cli_counts, cli_failures = bad_command_lines(args.sharelens, args.workdir, topo_path, run_dir, fixtures[0])
    print("bad command lines: %d, %s" % (cli_lines, cli_counts), flush=True)
    counts = {k: 0 for k in ("ok", "crash", "hang", "memory", "wrong exit", "silent garbage", "data lost", "litter")}
    families = {}
    exits = {}
    failures = []
    runs = 0
    peak = 0
    with futures.ThreadPoolExecutor(args.jobs) as pool:
        for n, r in enumerate(pool.map(lambda i: probe_one(args, fixtures, topology, run_dir, i), range(args.first, args.first + args.inputs)), 1):
            family = r["fixture"] if r["fixture"] in ("topology", "metrics", "experiment", "outputs") else "checkpoint"
            families[family] = families.get(family, 0) + 1
            for cmd, (outcome, code, err, secs, rss) in r["outcomes"].items():
                runs += 1
                peak = max(peak, rss)
                counts[outcome] += 1
                exits["%s exit %s" % (cmd, code)] = exits.get("%s exit %s" % (cmd, code), 0) + 1
                if outcome != "ok":
                    failures.append({"input": r["input"], "command": cmd, "outcome": outcome, "mutation": r["mutation"],
                                     "fixture": r["fixture"], "oracle": r["oracle"], "exit": code, "stderr": err})
                    print("FAILURE " + json.dumps(failures[-1]), flush=True)  # at once: a long probe may be stopped
            if n % 500 == 0:
                print("%d inputs, %s, %.0f s" % (n, counts, time.monotonic() - start), flush=True)
    summary = {"inputs": args.inputs, "families": families, "runs": runs, "seconds": round(time.monotonic() - start),
               "counts": counts, "exits": exits, "failures": failures[:200], "peak_resident_bytes": peak,
               "command_lines": {"lines": cli_lines, "counts": cli_counts, "failures": cli_failures}}
    print("| inputs | runs | crashes | hangs | memory blow-ups | wrong exits | silent garbage | data lost | litter |")
    print("| %d (%s) | %d | %d | %d | %d | %d | %d | %d | %d |" % (
        args.inputs, ", ".join("%d %s" % (v, k) for k, v in sorted(families.items())), runs, counts["crash"], counts["hang"],
        counts["memory"], counts["wrong exit"], counts["silent garbage"], counts["data lost"], counts["litter"]))
    print("| %d bad command lines | %d | %d | %d | %d | %d | %d | - | - |" % (
        cli_lines, cli_lines, cli_counts["crash"], cli_counts["hang"], cli_counts["memory"], cli_counts["wrong exit"],
        cli_counts["silent garbage"]))
    print("largest resident size of any run: %.0f MiB" % (peak / 2 ** 20))
    print("exit statuses:", json.dumps(exits, sort_keys=True))
    for f in (cli_failures + failures)[:20]:
        print(json.dumps(f))
    if args.json:
        json.dump(summary, open(args.json, "w"), indent=1)
    return 0 if not failures and not cli_failures else 1


if __name__ == "__main__":
    sys.exit(main())
