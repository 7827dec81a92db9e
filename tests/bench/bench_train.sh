#!/usr/bin/env bash
# Training benchmark (issue #4): ShareLens's LibTorch trainer beside eager PyTorch on the same ~10M-parameter
# model, initialisation, batch, threads and fp32; tokens/s ratio and MFU against each side's measured sgemm
# peak. This VM's throughput drifts by +-15% over minutes, so the two sides alternate for ROUNDS rounds and
# the medians are compared. PyTorch runs twice per round: as configured with torch.set_num_threads(THREADS),
# and with torch.set_num_threads(1), the thread arrangement ShareLens picks where the matmuls run on
# OpenBLAS's own pool (trainer/torch_compat.hpp), so the ratio that comes from the arrangement alone is shown.
# Usage: tests/bench/bench_train.sh BUILD_DIR [THREADS] [ROUNDS] [STEPS] [--cycle U --lora-rank R]
# (the flags after STEPS go to both sides: the same model as a Cycle of U shared blocks with per-layer LoRA)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/blas_env.sh"
BUILD="${1:-build}"
THREADS="${2:-2}"
ROUNDS="${3:-3}"
STEPS="${4:-6}"
shift $(($# < 4 ? $# : 4))
SHARING=("$@")
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OUT="$(mktemp -d)"
for round in $(seq "$ROUNDS"); do
  "$BUILD/tests/bench_train" --threads "$THREADS" --steps "$STEPS" "${SHARING[@]}" --json "$OUT/ours-$round.json"
  for side in torch torch1; do  # torch.set_num_threads(THREADS), then (1)
    intra=$([ "$side" = torch ] && echo "$THREADS" || echo 1)
    OPENBLAS_NUM_THREADS="$THREADS" /usr/bin/python3 "$HERE/torch_train_peer.py" --threads "$THREADS" \
      --intra-op-threads "$intra" --steps "$STEPS" "${SHARING[@]}" --json "$OUT/$side-$round.json"
  done
done
python3 - "$OUT" "$ROUNDS" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
load = lambda side: [json.load(open(f"{out}/{side}-{r}.json")) for r in range(1, rounds + 1)]
ours, peer, peer1 = load("ours"), load("torch"), load("torch1")
med = lambda runs, key: statistics.median(r[key] for r in runs)
print("rounds (tokens/s, ShareLens / PyTorch / PyTorch with one intra-op thread): " +
      ", ".join(f"{o['tokens_per_s']:.0f} / {p['tokens_per_s']:.0f} / {q['tokens_per_s']:.0f}"
                for o, p, q in zip(ours, peer, peer1)))
print(f"median tokens/s ratio (ShareLens / PyTorch eager): {med(ours, 'tokens_per_s') / med(peer, 'tokens_per_s'):.2f}x; "
      f"median MFU ShareLens {100 * med(ours, 'mfu'):.1f}%, PyTorch {100 * med(peer, 'mfu'):.1f}%")
print(f"against PyTorch with one intra-op thread: {med(ours, 'tokens_per_s') / med(peer1, 'tokens_per_s'):.2f}x; "
      f"its median MFU {100 * med(peer1, 'mfu'):.1f}%")
PY
