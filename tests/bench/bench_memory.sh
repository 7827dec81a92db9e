#!/usr/bin/env bash
# Peak memory of training against what `sharelens params` predicts (issue 37 item 5): weights + AdamW state +
# activations at batch 16 (core/param_count.hpp estimateTrainingMemory) beside
#   - the peak RSS of one `sharelens train` process (60 steps, one validation, one checkpoint), and
#   - the marginal RSS of one more run in the same process (bench_train --runs 2 minus --runs 1, as the
#     experiment runner holds runs side by side), which is what decides how many runs fit.
# The difference between the first and the prediction is the process's fixed part (LibTorch and OpenBLAS
# mapped and touched, the corpus and its tokens), paid once per process.
# Usage: tests/bench/bench_memory.sh BUILD_DIR [SIZES...]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/blas_env.sh"
BUILD="${1:-build}"
shift $(($# < 1 ? $# : 1))
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(0.3m 1m 3m)
SL="$BUILD/sharelens"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/bench_sizes.sh"
peak_mib() {  # peak RSS in MiB of the command
  /usr/bin/time -f "%M" -o "$OUT/time" "$@" >/dev/null 2>&1
  echo $(($(cat "$OUT/time") / 1024))
}
echo "| size | predicted (params) MiB | one train process MiB | its fixed part MiB | one more run in-process MiB | marginal / predicted |"
echo "|---|---|---|---|---|---|"
for size in "${SIZES[@]}"; do
  # shellcheck disable=SC2046
  "$SL" topology --preset vanilla $(bench_size_flags "$size") --vocab 1024 --context 128 --out "$OUT/$size.json" >/dev/null
  predicted=$("$SL" params "$OUT/$size.json" | sed -n 's/.*training memory *\([0-9.]*\) MiB.*/\1/p')
  train=$(peak_mib "$SL" train --topology "$OUT/$size.json" --corpus brown --out "$OUT/run-$size" --steps 60 \
    --batch 16 --threads 2 --eval-every 60 --checkpoint-every 60)
  one=$(peak_mib "$BUILD/tests/bench_train" --size "$size" --runs 1 --steps 10 --threads 2)
  two=$(peak_mib "$BUILD/tests/bench_train" --size "$size" --runs 2 --steps 10 --threads 2)
  /usr/bin/python3 -c "p,t,o,w=$predicted,$train,$one,$two; print('| $size | %.0f | %d | %.0f | %d | %.2f |' % (p, t, t-p, w-o, (w-o)/p))"
done
