#!/usr/bin/env bash
# The GPU checks of issue 37 goal 4, on a machine with an NVIDIA GPU, PyTorch (with CUDA) and its bundled
# LibTorch, CMake and a C++ compiler, but none of ShareLens's Debian packages and no network (a machine lent
# through the tool library's `device` tool). Builds the parts that need no GUI (core, analysis, trainer, the
# cuSOLVER plugin, the tests and benchmarks below) against that LibTorch, then:
#   1. test_cuda_backend: the cuSOLVER backend against the CPU one;
#   2. test_model: every topology family, its GPU training against the CPU's (EveryFamily.OnAGpuTrainsAsOnTheCpu)
#      and the rest of the model tests on LibTorch 2; test_distributed_group: a one-rank NCCL group's scalar
#      collectives and bucketed gradient all-reduce (the one GPU lent allows no second rank);
#   3. bench_analysis_backend (cuSOLVER) beside torch_analysis_peer.py --device cuda (torch.linalg.svdvals) on
#      a checkpoint with GPT-2 124M's shapes;
#   4. bench_train --device cuda --size gpu (the experiments' GPU profile) beside torch_train_peer.py, rounds
#      alternated.
# The Debian packages it builds against travel with it, unpacked into a prefix (never into /):
#   tests/tools/device_check.sh --fetch      (here, where apt works: downloads them into .device/debs)
# and on the GPU machine, from the repository's root, with .device carried:
#   [ROUNDS=N (0: no training benchmark)] [SKIP_ANALYSIS=1] tests/tools/device_check.sh [OUT_DIR]    (OUT_DIR/results.tgz: the logs and JSON results, packed after each
#                                             step, since the device tool returns at most 8 files; default $OUT)
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DEVICE_DIR="$HERE/.device"
PACKAGES=(nlohmann-json3-dev libsentencepiece-dev libsentencepiece0 libopenblas-dev libopenblas-pthread-dev
  libopenblas0-pthread libgfortran5 liblapacke-dev liblapacke libtmglib3 libeigen3-dev libicu-dev libicu72
  libgtest-dev libgmock-dev libbenchmark-dev libbenchmark1debian)

if [ "${1:-}" = "--fetch" ]; then
  mkdir -p "$DEVICE_DIR/debs" && cd "$DEVICE_DIR/debs" && apt-get download "${PACKAGES[@]}"
  exit $?
fi

RESULTS="${1:-${OUT:?give an output directory}}"
OUT_DIR=/tmp/sharelens-device-check
rm -rf "$OUT_DIR" && mkdir -p "$OUT_DIR" "$RESULTS"
exec > >(tee "$OUT_DIR/device_check.log") 2>&1
step() {
  tar -C "$OUT_DIR" -czf "$RESULTS/results.tgz" .
  echo "== $(date +%T) $*"
}

step "machine"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))'
g++ --version | head -1
cmake --version | head -1
nvcc --version | tail -1

step "unpacking ${#PACKAGES[@]} Debian packages into a prefix"
if ! compgen -G "$DEVICE_DIR/debs/*.deb" >/dev/null; then
  echo "no packages in $DEVICE_DIR/debs: run tests/tools/device_check.sh --fetch where apt works, and carry .device"
  exit 1
fi
ROOT="$DEVICE_DIR/root"
LIB="$ROOT/usr/lib/x86_64-linux-gnu"
for deb in "$DEVICE_DIR"/debs/*.deb; do dpkg -x "$deb" "$ROOT" || exit 1; done
# What Debian's alternatives would link (dpkg -x runs no maintainer scripts): OpenBLAS as BLAS and LAPACK.
for f in libopenblas.so libopenblas.so.0 libblas.so.3 liblapack.so.3; do
  ln -sf "openblas-pthread/$f" "$LIB/$f"
done
for f in cblas.h f77blas.h openblas_config.h; do
  ln -sf "openblas-pthread/$f" "$ROOT/usr/include/x86_64-linux-gnu/$f"
done
export CPATH="$ROOT/usr/include/x86_64-linux-gnu:$ROOT/usr/include"
# NCCL's header, for the NCCL process group (trainer/distributed.cpp): a pip PyTorch has it in nvidia-nccl.
NCCL_H="$(find "$(python3 -c 'import nvidia; print(list(nvidia.__path__)[0])' 2>/dev/null)" -name nccl.h 2>/dev/null | head -1)"
[ -n "$NCCL_H" ] && CPATH="$CPATH:$(dirname "$NCCL_H")" && echo "NCCL header: $NCCL_H" && export SHARELENS_EXPECT_NCCL=1
export LD_LIBRARY_PATH="$LIB:$LIB/openblas-pthread:${LD_LIBRARY_PATH:-}"
export LIBRARY_PATH="$LIB:$LIB/openblas-pthread"

step "configuring against PyTorch's LibTorch"
TORCH_PREFIX="$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')"
BUILD=/tmp/sharelens-device-build
cmake -S "$HERE" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSHARELENS_BUILD_APP=OFF -DSHARELENS_CUDA=AUTO \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH="$TORCH_PREFIX;$ROOT/usr" -DICU_ROOT="$ROOT/usr" \
  -DCMAKE_BUILD_RPATH="$LIB;$LIB/openblas-pthread" >"$OUT_DIR/configure.log" 2>&1
configured=$?
tail -25 "$OUT_DIR/configure.log"
[ $configured -eq 0 ] || exit 1

step "building"
TARGETS=(test_cuda_backend test_model test_distributed_group bench_analysis_backend bench_train make_fixtures)
ninja -C "$BUILD" -t query sharelens_cuda >/dev/null 2>&1 && TARGETS+=(sharelens_cuda)  # nvcc and cuSOLVER found
timeout 330 ninja -C "$BUILD" -k 0 "${TARGETS[@]}" >"$OUT_DIR/build.log" 2>&1
built=$?
grep -E "error|FAILED" "$OUT_DIR/build.log" | head -60
tail -3 "$OUT_DIR/build.log"
echo "build status $built"

failures=0
run() {  # run NAME SECONDS COMMAND...: the command's output in OUT_DIR/NAME.log, its status echoed and counted
  step "$1"
  local name="$1" seconds="$2"
  shift 2
  timeout "$seconds" "$@" >"$OUT_DIR/$name.log" 2>&1
  local rc=$?
  tail -30 "$OUT_DIR/$name.log"
  echo "$name: status $rc"
  [ $rc -eq 0 ] || failures=$((failures + 1))
}

[ -x "$BUILD/tests/test_cuda_backend" ] && run cuda_backend_tests 60 "$BUILD/tests/test_cuda_backend"
[ -x "$BUILD/tests/test_model" ] && run model_tests 120 env SHARELENS_CACHE=/tmp/sharelens-cache "$BUILD/tests/test_model" \
  --gtest_filter='*OnAGpu*:*CountsBuildsRunsAndLearns*:FusedOps.*:AdamW.*:WeightSharing.*'

[ -x "$BUILD/tests/test_distributed_group" ] && run distributed_group_tests 120 "$BUILD/tests/test_distributed_group"

if [ -x "$BUILD/tests/bench_train" ]; then
  for round in $(seq "${ROUNDS:-2}"); do
    run "train_ours_$round" 60 "$BUILD/tests/bench_train" --device cuda --size gpu --batch 64 --steps 30 \
      --json "$OUT_DIR/train_ours_$round.json"
    run "train_torch_$round" 60 python3 "$HERE/tests/bench/torch_train_peer.py" --device cuda --size gpu --batch 64 \
      --steps 30 --json "$OUT_DIR/train_torch_$round.json"
  done
fi
if [ -z "${SKIP_ANALYSIS:-}" ] && [ -x "$BUILD/tests/bench_analysis_backend" ] && [ -x "$BUILD/tests/make_fixtures" ]; then
  step "analysis: cuSOLVER beside torch.linalg on GPT-2 124M's shapes"
  FIX=/tmp/gpt2-124m
  run gpt2_fixture 120 "$BUILD/tests/make_fixtures" --bench-shape gpt2-124m "$FIX"
  export SHARELENS_CUDA_PLUGIN="$BUILD/libsharelens_cuda.so"
  run analysis_cuda 60 "$BUILD/tests/bench_analysis_backend" "$FIX" --device cuda --repeat 3 \
    --json "$OUT_DIR/analysis_cuda.json"
  run analysis_cpu16 60 "$BUILD/tests/bench_analysis_backend" "$FIX" --device cpu --threads 16 \
    --json "$OUT_DIR/analysis_cpu16.json"
  for dtype in float32 float64; do
    run "analysis_torch_cuda_$dtype" 90 python3 "$HERE/tests/bench/torch_analysis_peer.py" "$FIX" \
      "$OUT_DIR/analysis_cuda.json" --device cuda --dtype "$dtype" --json "$OUT_DIR/analysis_torch_cuda_$dtype.json" \
      $([ "$dtype" = float64 ] && echo --max-layer-pairs 8)
  done
fi

step "done: $failures step(s) failed, build status $built"
exec >&- 2>&-  # close the pipe into tee, wait for it, and pack its last lines too
wait
tar -C "$OUT_DIR" -czf "$RESULTS/results.tgz" .
[ $failures -eq 0 ] && [ $built -eq 0 ]
