#!/usr/bin/env bash
# Training throughput at the claims experiments' sizes (issue 37): the 0.3M, 1M and 3M non-embedding-parameter
# models of bench_train --size, ShareLens beside eager PyTorch on the same model, batch, data and fp32, in
# alternating rounds (this VM drifts by +-15% over minutes; medians are compared).
#   one run:      ShareLens on THREADS threads against PyTorch's best single-run arrangement (its intra-op pool
#                 at THREADS or at 1 with OpenBLAS at THREADS, or one thread in all);
#   an experiment: THREADS runs side by side, one thread each (the experiment runner's default), against THREADS
#                 PyTorch processes of one thread each; summed tokens/s.
# Usage: tests/bench/bench_train_sizes.sh BUILD_DIR [THREADS] [ROUNDS] [STEPS] [SIZES...]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/blas_env.sh"
BUILD="${1:-build}"
THREADS="${2:-2}"
ROUNDS="${3:-3}"
STEPS="${4:-20}"
shift $(($# < 4 ? $# : 4))
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(0.3m 1m 3m)
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OUT="$(mktemp -d)"
peer() {  # peer OUT_JSON INTRA_OP_THREADS OPENBLAS_THREADS SIZE
  OPENBLAS_NUM_THREADS="$3" /usr/bin/python3 "$HERE/torch_train_peer.py" --threads "$3" --intra-op-threads "$2" \
    --steps "$STEPS" --size "$4" --json "$1" >/dev/null
}
for round in $(seq "$ROUNDS"); do
  for size in "${SIZES[@]}"; do
    d="$OUT/$size-$round"
    mkdir -p "$d"
    "$BUILD/tests/bench_train" --size "$size" --threads "$THREADS" --steps "$STEPS" --json "$d/ours.json" >/dev/null
    "$BUILD/tests/bench_train" --size "$size" --threads "$THREADS" --runs "$THREADS" --steps "$STEPS" \
      --json "$d/ours-runs.json" >/dev/null
    peer "$d/torch.json" "$THREADS" "$THREADS" "$size"
    peer "$d/torch1.json" 1 "$THREADS" "$size"
    peer "$d/torch11.json" 1 1 "$size"  # one thread in all: on some hosts OpenBLAS's hand-offs cost more than they buy
    for i in $(seq "$THREADS"); do peer "$d/torch-proc$i.json" 1 1 "$size" & done
    wait
  done
done
/usr/bin/python3 - "$OUT" "$ROUNDS" "$THREADS" "${SIZES[@]}" <<'PY'
import json, statistics, sys
out, rounds, threads, sizes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
tps = lambda path: json.load(open(path))["tokens_per_s"]
print(f"| size | ShareLens, 1 run x {threads} threads | PyTorch best single run | ratio | "
      f"ShareLens, {threads} runs x 1 thread | PyTorch, {threads} processes x 1 thread | ratio |")
print("|---|---|---|---|---|---|---|")
rounds_of = []
med = statistics.median
for size in sizes:
    d = [f"{out}/{size}-{r}" for r in range(1, rounds + 1)]
    ours = [tps(f"{x}/ours.json") for x in d]
    best = [max(tps(f"{x}/torch.json"), tps(f"{x}/torch1.json"), tps(f"{x}/torch11.json")) for x in d]
    runs = [tps(f"{x}/ours-runs.json") for x in d]
    procs = [sum(tps(f"{x}/torch-proc{i}.json") for i in range(1, threads + 1)) for x in d]
    fmt = lambda v: " / ".join(f"{x:,.0f}" for x in v)
    # The ratio of the medians, and below the table each round's own ratio (the pairs a round measured
    # back to back, which this host's drift over minutes moves together).
    print(f"| {size} | {fmt(ours)} | {fmt(best)} | **{med(ours) / med(best):.2f}x** | {fmt(runs)} | {fmt(procs)} | "
          f"**{med(runs) / med(procs):.2f}x** |")
    rounds_of.append((size, [o / b for o, b in zip(ours, best)], [r / p for r, p in zip(runs, procs)]))
for size, single, side in rounds_of:
    print(f"{size}: per round {', '.join(f'{x:.2f}' for x in single)} (median {med(single):.2f}) for one run; "
          f"{', '.join(f'{x:.2f}' for x in side)} (median {med(side):.2f}) side by side")
PY
