#!/usr/bin/env bash
# Runs every benchmark beside its peer (PyTorch / numpy on the same machine and inputs) and prints ratios.
# Usage: tests/bench/run_benchmarks.sh BUILD_DIR
set -euo pipefail
BUILD="${1:-build}"
echo "== checkpoint I/O (1 GiB BF16 checkpoint)"
"$BUILD/tests/bench_checkpoint_io"
