#!/usr/bin/env bash
# Distributed training benchmark (issue 12): the ~11.7M-parameter benchmark model (bench_train's shape) trained
# with 1 rank x 2 threads and with 2 ranks x 1 thread (`sharelens train --nproc 2`, Gloo over loopback), same
# global batch; the median tokens/s after warm-up; the Gloo all-reduce cost of its gradients (bench_allreduce);
# and the scaling those numbers predict on N machines: step time = compute / N + ring all-reduce time
# 2 (N - 1) / N x gradient bytes / link bandwidth (compute and communication not overlapped: the pessimistic end).
# Usage: tests/bench/bench_distributed.sh BUILD_DIR [STEPS]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/blas_env.sh"
BUILD="${1:-build}"
STEPS="${2:-12}"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
"$BUILD/sharelens" topology --preset vanilla --layers 8 --unique 8 --d-model 320 --heads 8 --kv-heads 4 --ffn 864 \
  --vocab 8192 --context 256 --out "$OUT/t.json" >/dev/null
common=(train --topology "$OUT/t.json" --corpus brown --steps "$STEPS" --batch 16 --eval-every 100000 --checkpoint-every 100000)
"$BUILD/sharelens" "${common[@]}" --out "$OUT/one" --threads 2 >/dev/null 2>&1
"$BUILD/sharelens" "${common[@]}" --out "$OUT/two" --nproc 2 >/dev/null 2>&1
"$BUILD/tests/bench_allreduce" --json "$OUT/allreduce.json"
python3 - "$OUT" <<'PY'
import json, statistics, sys
out = sys.argv[1]
def rate(run):
    pts = [json.loads(l) for l in open(f"{out}/{run}/metrics.jsonl") if '"tokens_per_s"' in l]
    return statistics.median(p["tokens_per_s"] for p in pts[2:])
one, two = rate("one"), rate("two")
ar = json.load(open(f"{out}/allreduce.json"))
tokens = 16 * 256
compute = tokens / one                      # seconds per global step on this machine's 2 cores
print(f"1 rank x 2 threads: {one:.0f} tokens/s;  2 ranks x 1 thread: {two:.0f} tokens/s ({two / one:.2f}x)")
print(f"Gloo all-reduce of {ar['bytes'] / 1e6:.1f} MB over loopback: {1e3 * ar['seconds_per_step']:.1f} ms per step, "
      f"bus bandwidth {ar['bus_bandwidth_bytes_per_s'] / 1e9:.2f} GB/s; one step computes in {1e3 * compute:.0f} ms")
print("expected tokens/s on N machines like this one (compute / N + ring all-reduce, no overlap):")
for gbit in (10, 100):
    link = gbit / 8 * 1e9
    cells = []
    for n in (1, 2, 4, 8, 16):
        comm = 0 if n == 1 else 2 * (n - 1) / n * ar["bytes"] / link
        cells.append(f"N={n}: {tokens / (compute / n + comm):.0f}")
    print(f"  {gbit:>3} Gb/s links: " + ", ".join(cells))
PY
