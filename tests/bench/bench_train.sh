#!/usr/bin/env bash
# Training benchmark (issue #4): ShareLens's LibTorch trainer beside eager PyTorch on the same ~10M-parameter
# model, batch, threads and fp32; tokens/s ratio and MFU against each side's measured sgemm peak.
# Usage: tests/bench/bench_train.sh BUILD_DIR [THREADS]
set -euo pipefail
BUILD="${1:-build}"
THREADS="${2:-2}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OUT="$(mktemp -d)"
"$BUILD/tests/bench_train" --threads "$THREADS" --steps 10 --json "$OUT/ours.json"
/usr/bin/python3 "$HERE/torch_train_peer.py" --threads "$THREADS" --steps 10 --json "$OUT/torch.json"
python3 - "$OUT/ours.json" "$OUT/torch.json" <<'PY'
import json, sys
ours, peer = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
print(f"tokens/s ratio (ShareLens / PyTorch eager): {ours['tokens_per_s'] / peer['tokens_per_s']:.2f}x; "
      f"MFU ShareLens {100 * ours['mfu']:.1f}%, PyTorch {100 * peer['mfu']:.1f}%")
PY
