#!/usr/bin/python3
"""The kill -9 probe (offline; CI runs one random kill in test_training): train a small topology once whole,
then KILLS times start the same run, SIGKILL it at a random moment -- while preparing, between steps, or
inside a checkpoint write -- and resume it (`train --resume --topology`, which also starts a run killed
before run.json existed). Each resumed run must end bit-identical to the whole one (weights and AdamW state),
record every step and the finish exactly once in metrics.jsonl, and hold no non-finite value in any checkpoint.

    probe_kill_resume.py --sharelens build/sharelens --workdir /tmp/kills --kills 30 [--steps 60]

With --jobs compress,sweep,postshare,export-hf,experiment,launcher it probes the longer jobs instead (issue 40):
each trial starts one job on a small trained model, kills it at a random moment of its measured duration
(SIGKILL, or SIGTERM for a third of the trials: a scheduler's stop), then runs the same command again -- for
the launcher (`train --nproc 2`), `train --resume` once its ranks are gone. The rerun must exit 0 with the
whole output (compress.json and the model; sweep.json and its figures; postshare.json with both shared
models; config.json and the weights; every arm's evaluation; every step once and one finish), no temporary
left anywhere (*.tmp.PID.N, .NAME.tmp-PID-N, checkpoints/.tmp-*), the input checkpoint byte-identical, and
no rank still running after its launcher died. The table: runs, killed, crashes, hangs, data lost, litter.

    probe_kill_resume.py --sharelens build/sharelens --workdir /tmp/jobkills --jobs all --kills 30
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


JOBS = ("compress", "sweep", "postshare", "export-hf", "experiment", "launcher")


def tree_hash(path):
    """Every file under path (names and bytes)."""
    h = hashlib.sha256()
    for root, dirs, files in sorted(os.walk(path)):
        dirs.sort()
        for f in sorted(files):
            full = os.path.join(root, f)
            h.update(os.path.relpath(full, path).encode())
            with open(full, "rb") as fh:
                h.update(fh.read())
    return h.hexdigest()


def litter(path):
    found = []
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            if ".tmp." in name or ".tmp-" in name or name.startswith(".tmp"):
                found.append(os.path.relpath(os.path.join(root, name), path))
    return found


def children_of(pid):
    kids = []
    try:
        for task in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/children" % (pid, task)) as f:
                kids += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return kids


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purposes
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def probe_jobs(args):
    sl = args.sharelens
    work = args.workdir
    run = lambda cmd, **kw: subprocess.run(cmd, capture_output=True, text=True, **kw)  # noqa: E731
    topo = os.path.join(work, "t.json")
    run([sl, "topology", "--preset", "vanilla", "--layers", "4", "--unique", "4", "--d-model", "64", "--heads", "4",
         "--kv-heads", "2", "--ffn", "160", "--vocab", "512", "--context", "64", "--out", topo], check=True)
    model = os.path.join(work, "pretrained")
    run([sl, "train", "--topology", topo, "--corpus", "brown", "--out", model, "--steps", "30", "--batch", "4",
         "--threads", "1", "--checkpoint-every", "30"], check=True)
    model_hash = tree_hash(model)
    experiment = os.path.join(work, "tiny.json")
    with open(experiment, "w") as f:
        json.dump({"schema": "sharelens.experiment/1", "name": "tiny", "corpus": "brown", "seeds": 2, "tokens": 5120,
                   "eval_tokens": 1024, "train": {"batch_size": 4, "eval_every": 10, "checkpoint_every": 5},
                   "reference": "vanilla", "arms": [{"name": "vanilla", "topology": "t.json"},
                                                    {"name": "cycle", "topology": {"preset": "cycle", "layers": 4, "unique": 2,
                                                     "d_model": 64, "heads": 4, "kv_heads": 2, "ffn": 160, "vocab": 512,
                                                     "context": 64, "lora_rank": 4}}]}, f)
    calib = ["--calibration", "brown:512", "--threads", "1"]
    commands = {
        "compress": lambda out: [sl, "compress", model, "--ratio", "0.7", "--groups", "0-1,2-3", "--eval", "--eval-tokens", "512",
                                 "--out", out] + calib,
        "sweep": lambda out: [sl, "compress", model, "--sweep", "0.8,0.6", "--groups", "0-1,2-3", "--eval-tokens", "512",
                              "--out", out] + calib,
        "postshare": lambda out: [sl, "train", "--init", model, "--postshare", "0.25", "--corpus", "brown", "--steps", "30",
                                  "--batch", "4", "--threads", "1", "--checkpoint-every", "5", "--eval-every", "1000",
                                  "--eval-tokens", "256", "--out", out],
        "export-hf": lambda out: [sl, "export-hf", model, out],
        "experiment": lambda out: [sl, "experiment", "run", experiment, "--out", out, "--threads", "1"],
        "launcher": lambda out: [sl, "train", "--nproc", "2", "--topology", topo, "--corpus", "brown", "--out", out,
                                 "--steps", "40", "--batch", "8", "--threads", "1", "--checkpoint-every", "5",
                                 "--eval-every", "1000"],
    }

    def complete(job, out):
        need = {"compress": ["compress.json", "model.safetensors"],
                "sweep": ["sweep.json", "sweep.md", "sweep.svg", "sweep.png", "sweep.pdf", "masa-0.80/compress.json",
                          "svd-0.60/model.safetensors"],
                "postshare": ["postshare.json", "postshare/model.safetensors", "directshare/model.safetensors"],
                "export-hf": ["config.json", "model.safetensors"],
                "experiment": ["%s/seed-%d/eval.json" % (a, s) for a in ("vanilla", "cycle") for s in (1, 2)],
                "launcher": ["checkpoints/step-0000040/COMPLETE"]}[job]
        missing = [n for n in need if not os.path.exists(os.path.join(out, n))]
        if job == "launcher" and not missing:
            steps, finishes = [], 0
            with open(os.path.join(out, "metrics.jsonl")) as f:
                for line in f:
                    j = json.loads(line)
                    finishes += j.get("event") == "finish"
                    if "event" not in j:
                        steps.append(j["step"])
            if steps != list(range(1, 41)) or finishes != 1:
                missing.append("metrics: %d step lines (%d distinct), %d finish" % (len(steps), len(set(steps)), finishes))
        return missing

    jobs = JOBS if args.jobs == "all" else tuple(args.jobs.split(","))
    durations = {}
    for job in jobs:  # each whole once: the time to draw kills from, and a check that it passes unkilled
        out = os.path.join(work, "whole-" + job)
        t0 = time.monotonic()
        r = run(commands[job](out), timeout=900)
        durations[job] = time.monotonic() - t0
        if r.returncode != 0 or complete(job, out):
            print("%s does not pass unkilled: %s %s" % (job, complete(job, out), r.stderr[-400:]))
            return 1
        print("%s: %.1f s whole" % (job, durations[job]), flush=True)
    rng = random.Random(args.seed)
    rows = {job: {"runs": 0, "killed": 0, "crashes": 0, "hangs": 0, "data_lost": 0, "litter": 0, "incomplete": 0,
                  "resumed": 0}
            for job in jobs}
    for k in range(args.kills * 3):
        if sum(r["killed"] for r in rows.values()) >= args.kills:
            break
        job = jobs[k % len(jobs)]
        row = rows[job]
        out = os.path.join(work, "kill-%03d-%s" % (k, job))
        sig = signal.SIGTERM if rng.random() < 1 / 3 else signal.SIGKILL
        delay = rng.uniform(0.05, durations[job])
        p = subprocess.Popen(commands[job](out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ranks = []
        row["runs"] += 1
        try:
            p.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            ranks = children_of(p.pid)
            p.send_signal(sig)
            try:
                p.wait(timeout=300)
            except subprocess.TimeoutExpired:
                row["hangs"] += 1
                p.kill()
                p.wait()
            row["killed"] += 1
        if p.returncode not in (0, 2, 130, 143, -signal.SIGKILL, -signal.SIGTERM):
            row["crashes"] += 1
        deadline = time.monotonic() + 60
        while any(alive(r) for r in ranks) and time.monotonic() < deadline:
            time.sleep(0.05)
        problems = []
        if any(alive(r) for r in ranks):
            problems.append("ranks outlived their launcher")
            row["data_lost"] += 1
            for r in ranks:
                try:
                    os.kill(r, signal.SIGKILL)
                except OSError:
                    pass
        again = commands[job](out)
        if job == "launcher":
            again = [sl, "train", "--resume", "--out", out, "--threads", "1"] if os.path.exists(os.path.join(out, "run.json")) else again
        try:
            # A job whose output was whole when it died (it finished, or was killed after its last write) is
            # done: running it again is refused as it should be. Only an unfinished one is run again.
            done = not complete(job, out)  # complete() lists what is missing
            r = subprocess.CompletedProcess(again, 0, "", "") if done else run(again, timeout=900)
            if r.returncode != 0:  # refused to go on ("holds", "already") is work lost; anything else a failure
                problems.append("rerun exited %d: %s" % (r.returncode, r.stderr.strip()[-300:]))
                row["crashes" if r.returncode < 0 else
                    "data_lost" if "holds" in r.stderr or "already" in r.stderr else "incomplete"] += 1
        except subprocess.TimeoutExpired:
            problems.append("rerun hung")
            row["hangs"] += 1
        missing = complete(job, out)
        if missing and not problems:
            problems.append("incomplete output: %s" % missing)
            row["incomplete"] += 1
        left = litter(work)  # the trial's output, its staging beside it, the model it read
        if left:
            problems.append("litter: %s" % left[:5])
            row["litter"] += 1
        if tree_hash(model) != model_hash:
            problems.append("the input checkpoint changed")
            row["data_lost"] += 1
            return 1
        trial = {"trial": k, "job": job, "signal": sig.name, "after_s": round(delay, 2), "exit": p.returncode,
                 "killed": p.returncode in (-signal.SIGKILL, -signal.SIGTERM, 130, 143), "problems": problems}
        if job == "sweep" and not missing:  # a sweep continues from the points it finished (issue 40)
            with open(os.path.join(out, "sweep.json")) as f:
                trial["resumed_points"] = json.load(f)["resumed_points"]
            row["resumed"] += trial["resumed_points"] > 0
        print(json.dumps(trial), flush=True)
        shutil.rmtree(out, ignore_errors=True)
    print("\n| job | runs | killed | crashes | hangs | data lost | litter | incomplete | resumed (sweep) |\n"
          "|---|---|---|---|---|---|---|---|---|")
    for job, r in rows.items():
        print("| %s | %d | %d | %d | %d | %d | %d | %d | %s |" % (job, r["runs"], r["killed"], r["crashes"], r["hangs"],
                                                                  r["data_lost"], r["litter"], r["incomplete"],
                                                                  r["resumed"] if job == "sweep" else "-"))
    bad = sum(r["crashes"] + r["hangs"] + r["data_lost"] + r["litter"] + r["incomplete"] for r in rows.values())
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sharelens", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--kills", type=int, default=30)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", default="", help="all, or some of " + ",".join(JOBS) + ": probe those jobs instead")
    args = ap.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    if args.jobs:
        return probe_jobs(args)
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
