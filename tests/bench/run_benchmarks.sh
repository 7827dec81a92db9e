#!/usr/bin/env bash
# Runs every benchmark beside its peer (PyTorch / numpy on the same machine and inputs) and prints ratios.
# The analysis and activation benchmarks on Llama-3.2-1B shapes take about an hour on 2 cores.
# Usage: tests/bench/run_benchmarks.sh BUILD_DIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/blas_env.sh"
BUILD="${1:-build}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
echo "== checkpoint I/O (1 GiB BF16 checkpoint)"
"$BUILD/tests/bench_checkpoint_io"
echo "== analysis engine vs torch.linalg.svdvals"
"$HERE/bench_analysis.sh" "$BUILD" gpt2-124m llama-3.2-1b
echo "== the kernel floor of the layer-difference maps (Gram + eigensolve per pair, as the backend runs them)"
"$HERE/bench_gram_floor.sh" "$BUILD" gpt2-124m llama-3.2-1b
echo "== how the analysis cost grows: adds GPT-2 medium (PyTorch float32), then the table and docs/scaling.*"
PEER_DTYPES=float32 "$HERE/bench_analysis.sh" "$BUILD" gpt2-350m
COLLECT_ONLY=1 "$HERE/bench_scaling.sh" "$BUILD"
echo "== training throughput vs eager PyTorch"
"$HERE/bench_train.sh" "$BUILD"
echo "== training throughput of a shared topology (Cycle of 4 blocks, LoRA rank 8) vs its eager PyTorch equivalent"
"$HERE/bench_train.sh" "$BUILD" 2 2 6 --cycle 4 --lora-rank 8
echo "== training at the claims experiments' sizes, and the attention kernel alone"
"$HERE/bench_train_sizes.sh" "$BUILD" 2 3 20
"$BUILD/tests/bench_attention"
echo "== compression: MASA at ratio 0.8 with 2,048 calibration tokens"
"$HERE/bench_compress.sh" "$BUILD"
echo "== distributed training: 1 vs 2 ranks, Gloo all-reduce over loopback, expected scaling"
"$HERE/bench_distributed.sh" "$BUILD"
echo "== activations: 25,000 tokens through a Llama-3.2-1B shape"
"$HERE/bench_activations.sh" "$BUILD"
echo "== UI-thread frame time: a 4096 x 4096 heatmap and the Training panels with 10 runs of 20,000 steps, while a run trains"
for scene in "" --bench-live; do
  for cache in "" --no-figure-cache; do
    echo "-- scene: ${scene:-static} ${cache}"
    xvfb-run -a -s "-screen 0 1600x1000x24" "$BUILD/sharelens" --bench-ui $scene $cache --frames 2000 \
      --frame-stats /tmp/sharelens-ui.json
  done
done
