#!/usr/bin/env bash
# The kernel floor of the layer-difference maps (issue 16, items 1-2): times the CPU backend's two kernels
# on each benchmark shape's projection sizes (build/tests/bench_gram_floor: two matrices at once, one BLAS
# thread each, as `analyze --layers --threads 2` runs them) and multiplies them out over every layer pair:
# the layer maps' time at their kernels' measured rates. Two runs of the same kernel at once contend for
# memory more than the backend's mix of Grams and eigensolves does, so the maps can come in a little under
# it. The hard bound beside it counts the same flops (Gram m n^2, tridiagonal reduction 4/3 n^3) at
# dgemm's rate on both cores throughout, which no double-precision method of these Grams and eigensolves
# beats. Where tests/bench/bench_analysis.sh left a report for the shape (run with its default THREADS=2),
# its measured layers time is printed beside them.
# Usage: tests/bench/bench_gram_floor.sh BUILD_DIR [SHAPES...]   (default: gpt2-124m llama-3.2-1b)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/blas_env.sh"
BUILD="$(cd "${1:-build}" && pwd)"
shift || true
SHAPES=("${@:-gpt2-124m llama-3.2-1b}")
WORK="${SHARELENS_BENCH_DIR:-/tmp/sharelens-bench}"
for shape in ${SHAPES[@]}; do
  # Layers, then each projection's (rows x cols) in the checkpoint's layout; GPT-2's fused c_attn is three
  # 768 x 768 projections to the analysis, as it is to the layer maps.
  case "$shape" in
    gpt2-124m) layers=12 projections="768x768 768x768 768x768 768x768 768x3072 3072x768" ;;
    gpt2-350m) layers=24 projections="1024x1024 1024x1024 1024x1024 1024x1024 1024x4096 4096x1024" ;;
    llama-3.2-1b) layers=16 projections="2048x2048 512x2048 512x2048 2048x2048 8192x2048 8192x2048 2048x8192" ;;
    *) echo "bench_gram_floor.sh: unknown shape '$shape' (gpt2-124m, gpt2-350m, llama-3.2-1b)" >&2; exit 2 ;;
  esac
  echo "== $shape: $layers layers, projections $projections"
  out="$("$BUILD/tests/bench_gram_floor" --repeat 5 $(echo "$projections" | tr ' ' '\n' | sort -u))"
  echo "$out"
  python3 - "$layers" "$projections" "$WORK/$shape.ours.json" <<PY
import json, os, sys
layers, projections, report = int(sys.argv[1]), sys.argv[2].split(), sys.argv[3]
rows, dgemm = {}, None
for line in """$out""".splitlines()[1:]:
    f = line.split()
    if line.startswith("dgemm"):
        dgemm = float(f[-2])  # GFLOP/s a stream
    elif "x" in f[0]:
        rows[f[0]] = (float(f[2]), float(f[4]))
pairs = layers * (layers - 1) // 2
gram = sum(pairs * rows[p][0] for p in projections) / 2  # two streams at once
eig = sum(pairs * rows[p][1] for p in projections) / 2
def flops(p):
    r, c = map(int, p.split("x"))
    n, m = min(r, c), max(r, c)
    return m * n * n + 4 / 3 * n ** 3  # the Gram (dsyrk) and the tridiagonal reduction (dsytrd)
bound = pairs * sum(flops(p) for p in projections) / (2 * dgemm * 1e9)
print(f"  layer maps at the kernels' rates: {gram + eig:.1f} s ({pairs} pairs x {len(projections)} projections; "
      f"Grams {gram:.1f} s, eigensolves {eig:.1f} s)")
print(f"  hard bound, every flop at dgemm's {dgemm:.1f} GFLOP/s on each of 2 streams: {bound:.1f} s")
if os.path.exists(report):
    t = json.load(open(report))["timing"]
    total = t["spectra_s"] + t["heads_s"] + t["layers_s"]
    print(f"  last measured ({report}): layers {t['layers_s']:.1f} s = {t['layers_s'] / (gram + eig):.2f}x the kernels' "
          f"time, {t['layers_s'] / bound:.2f}x the hard bound; analysis total {total:.1f} s")
PY
done
