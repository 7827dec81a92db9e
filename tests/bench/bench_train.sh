#!/usr/bin/env bash
# Training benchmark (issue #4): ShareLens's LibTorch trainer beside eager PyTorch on the same ~10M-parameter
# model, initialisation, batch, threads and fp32; tokens/s ratio and MFU against each side's measured sgemm
# peak. This VM's throughput drifts by +-15% over minutes, so the two sides alternate for ROUNDS rounds and
# the medians are compared.
# Usage: tests/bench/bench_train.sh BUILD_DIR [THREADS] [ROUNDS] [STEPS]
set -euo pipefail
BUILD="${1:-build}"
THREADS="${2:-2}"
ROUNDS="${3:-3}"
STEPS="${4:-6}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OUT="$(mktemp -d)"
for round in $(seq "$ROUNDS"); do
  "$BUILD/tests/bench_train" --threads "$THREADS" --steps "$STEPS" --json "$OUT/ours-$round.json"
  /usr/bin/python3 "$HERE/torch_train_peer.py" --threads "$THREADS" --steps "$STEPS" --json "$OUT/torch-$round.json"
done
python3 - "$OUT" "$ROUNDS" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
load = lambda side: [json.load(open(f"{out}/{side}-{r}.json")) for r in range(1, rounds + 1)]
ours, peer = load("ours"), load("torch")
med = lambda runs, key: statistics.median(r[key] for r in runs)
print("rounds (tokens/s, ShareLens / PyTorch): " +
      ", ".join(f"{o['tokens_per_s']:.0f} / {p['tokens_per_s']:.0f}" for o, p in zip(ours, peer)))
print(f"median tokens/s ratio (ShareLens / PyTorch eager): {med(ours, 'tokens_per_s') / med(peer, 'tokens_per_s'):.2f}x; "
      f"median MFU ShareLens {100 * med(ours, 'mfu'):.1f}%, PyTorch {100 * med(peer, 'mfu'):.1f}%")
PY
