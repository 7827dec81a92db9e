#!/usr/bin/python3
"""The kill -9 probe (offline; CI runs one random kill in test_training): train a small topology once whole,
then KILLS times start the same run, SIGKILL it at a random moment -- while preparing, between steps, or
inside a checkpoint write -- and resume it (`train --resume --topology`, which also starts a run killed
before run.json existed). Each resumed run must end bit-identical to the whole one (weights and AdamW state),
record every step and the finish exactly once in metrics.jsonl, and hold no non-finite value in any checkpoint.

    probe_kill_resume.py --sharelens build/sharelens --workdir /tmp/kills --kills 30 [--steps 60]
"""
import argparse
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "peer"))
from safetensors_np import read_file  # noqa: E402


def tensor_hash(path):
    tensors, _ = read_file(path)
    h = hashlib.sha256()
    for name in sorted(tensors):
        h.update(name.encode())
        h.update(np.ascontiguousarray(tensors[name]).tobytes())
    return h.hexdigest()


def check_run(run, steps, whole):
    problems = []
    records, finishes = {}, 0
    with open(os.path.join(run, "metrics.jsonl")) as f:
        for line in f:
            j = json.loads(line)
            if j.get("event") == "finish":
                finishes += 1
            if "event" not in j:
                records[j["step"]] = records.get(j["step"], 0) + 1
    if finishes != 1:
        problems.append("%d finish events" % finishes)
    if sorted(records) != list(range(1, steps + 1)):
        problems.append("steps recorded: %d of %d" % (len(records), steps))
    dup = [s for s, c in records.items() if c > 1]
    if dup:
        problems.append("steps recorded twice: %s" % dup[:5])
    ckdir = os.path.join(run, "checkpoints")
    for c in sorted(os.listdir(ckdir)):
        if c.startswith(".tmp"):
            problems.append("temporary left: " + c)
            continue
        for f in ("model.safetensors", "optim.safetensors"):
            tensors, _ = read_file(os.path.join(ckdir, c, f))
            bad = [n for n, t in tensors.items() if not np.isfinite(t).all()]
            if bad:
                problems.append("non-finite %s in %s/%s" % (bad[0], c, f))
    last = os.path.join(ckdir, "step-%07d" % steps)
    for f in ("model.safetensors", "optim.safetensors"):
        if tensor_hash(os.path.join(last, f)) != whole[f]:
            problems.append(f + " differs from the uninterrupted run")
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sharelens", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--kills", type=int, default=30)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    topo = os.path.join(args.workdir, "t.json")
    subprocess.run([args.sharelens, "topology", "--preset", "cycle", "--layers", "4", "--unique", "2", "--d-model", "64",
                    "--heads", "4", "--kv-heads", "2", "--ffn", "160", "--vocab", "512", "--context", "64",
                    "--lora-rank", "4", "--out", topo], check=True, capture_output=True)

    def train(out, resume=False):
        cmd = [args.sharelens, "train", "--topology", topo, "--corpus", "brown", "--out", out, "--steps", str(args.steps),
               "--batch", "4", "--threads", "1", "--checkpoint-every", "7", "--eval-every", "10", "--keep-checkpoints", "100"]
        return cmd + (["--resume"] if resume else [])

    whole_dir = os.path.join(args.workdir, "whole")
    subprocess.run(train(whole_dir), check=True, capture_output=True)
    last = os.path.join(whole_dir, "checkpoints", "step-%07d" % args.steps)
    whole = {f: tensor_hash(os.path.join(last, f)) for f in ("model.safetensors", "optim.safetensors")}
    t0 = time.monotonic()
    subprocess.run(train(os.path.join(args.workdir, "timing")), check=True, capture_output=True)
    duration = time.monotonic() - t0

    rng = random.Random(args.seed)
    results = []
    k = 0
    # Until KILLS runs were really killed (a kill drawn after the run's end finishes it instead: counted, not
    # towards the kills), at most 3 x KILLS attempts.
    while sum(r["killed"] for r in results) < args.kills and k < 3 * args.kills:
        run = os.path.join(args.workdir, "kill-%02d" % k)
        k += 1
        delay = rng.uniform(0.0, duration)
        env = dict(os.environ)
        stage = None
        if rng.random() < 0.25:  # inside a checkpoint write (the second one), at a random stage
            stage = rng.choice(["model", "optim", "state", "marker", "rename"])
            env["SHARELENS_TEST_KILL_IN_CHECKPOINT"] = stage
        p = subprocess.Popen(train(run), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        try:
            p.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGKILL)
            p.wait()
        killed = p.returncode == -signal.SIGKILL
        r = subprocess.run(train(run, resume=True), capture_output=True, text=True)
        problems = [] if r.returncode == 0 else ["resume exited %d: %s" % (r.returncode, r.stderr[-300:])]
        if not problems:
            problems = check_run(run, args.steps, whole)
        results.append({"kill": k - 1, "after_s": round(delay, 2), "in_checkpoint": stage, "killed": killed, "problems": problems})
        print(json.dumps(results[-1]), flush=True)
        shutil.rmtree(run, ignore_errors=True)
    killed = sum(r["killed"] for r in results)
    bad = [r for r in results if r["problems"]]
    print("%d runs, %d killed by SIGKILL (the rest finished before the kill), %d resumed bit-identical with every step "
          "recorded once and no non-finite value; %d with problems" % (len(results), killed, len(results) - len(bad), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
