#!/usr/bin/env bash
# Compression benchmark (issue 10): MASA (Matrix PCA + refined residuals, groups kl:3) at ratio 0.8 with 2,048
# calibration tokens, on a GPT-2-124M-shaped and a Llama-3.2-1B-shaped checkpoint (random weights, random ids):
# wall time, the calibration and compression stages, and peak resident memory beside the model's float32 size.
# Usage: tests/bench/bench_compress.sh BUILD_DIR [SHAPES...]   (default: gpt2-124m llama-3.2-1b)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/blas_env.sh"
BUILD="$(cd "${1:-build}" && pwd)"
shift || true
SHAPES=("${@:-gpt2-124m llama-3.2-1b}")
WORK="${SHARELENS_BENCH_DIR:-/tmp/sharelens-bench}"
mkdir -p "$WORK"
for shape in ${SHAPES[@]}; do
  dir="$WORK/$shape"
  [ -f "$dir/config.json" ] || "$BUILD/tests/make_fixtures" --bench-shape "$shape" "$dir"
  vocab=$(python3 -c "import json; print(json.load(open('$dir/config.json'))['vocab_size'])")
  python3 -c "import random; random.seed(2); print(' '.join(str(random.randrange($vocab)) for _ in range(2048)))" > "$WORK/calibration.ids"
  out="$WORK/$shape-masa-0.8"
  rm -rf "$out"
  /usr/bin/time -f "%e %M" -o "$WORK/time.txt" "$BUILD/sharelens" compress "$dir" --method masa --ratio 0.8 --groups kl:3 \
    --calibration-ids "$WORK/calibration.ids" --out "$out" --json "$WORK/compress.json" >/dev/null
  python3 - "$WORK/compress.json" "$WORK/time.txt" "$dir" "$shape" <<'PY'
import json, os, struct, sys
r = json.load(open(sys.argv[1]))
wall, kib = open(sys.argv[2]).read().split()
# The model's float32 size: every tensor's elements x 4 bytes, from the safetensors headers.
elements = 0
for f in os.listdir(sys.argv[3]):
    if f.endswith(".safetensors"):
        with open(os.path.join(sys.argv[3], f), "rb") as fh:
            n = struct.unpack("<Q", fh.read(8))[0]
            header = json.loads(fh.read(n))
        for k, v in header.items():
            if k != "__metadata__":
                count = 1
                for d in v["shape"]:
                    count *= d
                elements += count
f32 = elements * 4
peak = int(kib) * 1024
t = r["timing"]
print(f"{sys.argv[4]}: {float(wall):.0f} s wall (calibration {t['calibration_s']:.0f} s, compression {t['compression_s']:.0f} s), "
      f"peak resident {peak / 2**30:.2f} GiB vs float32 model {f32 / 2**30:.2f} GiB + 1 GiB = {(f32 + 2**30) / 2**30:.2f} GiB "
      f"({'within' if peak <= f32 + 2**30 else 'OVER'}); {r['parameters']} of {r['original_parameters']} attention parameters kept "
      f"(target {r['target_parameters']}), groups {r['groups']}")
PY
done
