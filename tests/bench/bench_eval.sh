#!/usr/bin/env bash
# Held-out evaluation against training's forward pass (issue 37 item 3): `sharelens eval --tokens all` (every
# held-out document of Brown, batched windows, per-window and per-document sums) on a run of each claims size
# (bench_train --size 0.3m, 1m, 3m: the same shapes, trained a few steps), beside bench_train --mode forward
# (the training model's forward and loss without autograd, batch 16 x 128) on the same threads, in alternating
# rounds. eval's tokens/s counts its whole command (tokenising the held-out text and loading the checkpoint
# included). The ratio eval / forward is the goal's measure: >= 1 means evaluation is not the bottleneck.
# Usage: tests/bench/bench_eval.sh BUILD_DIR [THREADS] [ROUNDS] [SIZES...]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/blas_env.sh"
BUILD="${1:-build}"
THREADS="${2:-2}"
ROUNDS="${3:-3}"
shift $(($# < 3 ? $# : 3))
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(0.3m 1m 3m)
SL="$BUILD/sharelens"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/bench_sizes.sh"
for size in "${SIZES[@]}"; do
  # shellcheck disable=SC2046
  "$SL" topology --preset vanilla $(bench_size_flags "$size") --vocab 1024 --context 128 --out "$OUT/$size.json" >/dev/null
  "$SL" train --topology "$OUT/$size.json" --corpus brown --out "$OUT/run-$size" --steps 4 --batch 16 \
    --threads "$THREADS" --eval-every 1000 --checkpoint-every 4 >/dev/null 2>&1
done
for round in $(seq "$ROUNDS"); do
  for size in "${SIZES[@]}"; do
    "$BUILD/tests/bench_train" --size "$size" --mode forward --threads "$THREADS" --steps 40 \
      --json "$OUT/forward-$size-$round.json" >/dev/null
    "$SL" eval "$OUT/run-$size" --tokens all --threads "$THREADS" --json "$OUT/eval-$size-$round.json" >/dev/null 2>&1
  done
done
/usr/bin/python3 - "$OUT" "$ROUNDS" "$THREADS" "${SIZES[@]}" <<'PY'
import json, statistics, sys
out, rounds, threads, sizes = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
print("| size | training forward tok/s | eval --tokens all tok/s | eval / forward (median of %d rounds) | held-out tokens |" % rounds)
print("|---|---|---|---|---|")
for size in sizes:
    fwd = [json.load(open("%s/forward-%s-%d.json" % (out, size, r)))["tokens_per_s"] for r in range(1, rounds + 1)]
    ev = [json.load(open("%s/eval-%s-%d.json" % (out, size, r))) for r in range(1, rounds + 1)]
    etps = [e["tokens"] / e["seconds"] for e in ev]
    ratios = [e / f for e, f in zip(etps, fwd)]
    print("| %s | %.0f | %.0f | %.2f (%.2f-%.2f) | %d |" % (size, statistics.median(fwd), statistics.median(etps),
          statistics.median(ratios), min(ratios), max(ratios), ev[0]["tokens"]))
print("\n%s threads; eval's time includes tokenising the held-out documents and loading the checkpoint." % threads)
PY
