#!/usr/bin/env bash
# Activation benchmark (issue #6): 25,000 tokens through a Llama-3.2-1B-shaped checkpoint (random weights,
# random token ids), streamed in chunks of 512: layer-output differences, logit-lens drift, attention
# similarity. Reports time per stage and peak resident memory.
# Usage: tests/bench/bench_activations.sh BUILD_DIR [TOKENS]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/blas_env.sh"
BUILD="$(cd "${1:-build}" && pwd)"
TOKENS="${2:-25000}"
WORK="${SHARELENS_BENCH_DIR:-/tmp/sharelens-bench}"
mkdir -p "$WORK"
dir="$WORK/llama-3.2-1b"
[ -f "$dir/config.json" ] || "$BUILD/tests/make_fixtures" --bench-shape llama-3.2-1b "$dir"
python3 -c "import random; random.seed(1); print(' '.join(str(random.randrange(128256)) for _ in range($TOKENS)))" > "$WORK/ids.txt"
/usr/bin/time -f "%e s wall, %M KiB peak" "$BUILD/sharelens" analyze "$dir" --activations --token-ids "$WORK/ids.txt" \
  --logit-lens-tokens 512 --json "$WORK/activations.json"
python3 - "$WORK/activations.json" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))["activations"]
t = a["timing"]
print(f"{a['tokens']} tokens: forward {t['forward_s']:.0f} s, logit lens {t['logit_lens_s']:.0f} s, "
      f"rank map {t['rank_map_s']:.0f} s, peak resident {a['peak_resident_bytes'] / 2**30:.1f} GiB")
PY
