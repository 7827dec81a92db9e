#!/usr/bin/env bash
# Analysis benchmark (issue #3): spectra + head-difference maps + layer-difference maps on checkpoints with
# the shapes of GPT-2 124M and Llama-3.2-1B, ShareLens beside PyTorch (torch.linalg.svdvals, batched, same
# threads), with the effective ranks compared.
# Usage: tests/bench/bench_analysis.sh BUILD_DIR [SHAPES...]   (default shapes: gpt2-124m llama-3.2-1b;
#        gpt2-350m is GPT-2 medium). PEER_DTYPES="float64 float32" (default) picks the peer's precisions.
# Each side's wall time and peak resident memory land in $WORK/<shape>.<side>.time ("SECONDS KIB").
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/blas_env.sh"
BUILD="$(cd "${1:-build}" && pwd)"
shift || true
SHAPES=("${@:-gpt2-124m llama-3.2-1b}")
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
WORK="${SHARELENS_BENCH_DIR:-/tmp/sharelens-bench}"
THREADS="${THREADS:-2}"
# Llama-3.2-1B's 840 layer-difference SVDs take PyTorch over half an hour here: beyond GPT-2 124M (whose 66
# pairs per projection all run, so every rank is compared) time 8 pairs per projection and scale
# (torch_analysis_peer.py --max-layer-pairs; every pair of a projection has the same shape). 0 = all pairs.
PEER_LAYER_PAIRS="${PEER_LAYER_PAIRS:-8}"
PEER_DTYPES="${PEER_DTYPES:-float64 float32}"
# Runs a command under /usr/bin/time, keeping its wall time and peak in FILE and printing them on stderr
# (a caller may discard the command's stdout).
timed() {
  local file="$1"
  shift
  /usr/bin/time -f "%e %M" -o "$file" "$@"
  awk '{ printf "%s s wall, %s KiB peak\n", $1, $2 }' "$file" >&2
}
mkdir -p "$WORK"
for shape in ${SHAPES[@]}; do
  dir="$WORK/$shape"
  [ -f "$dir/config.json" ] || "$BUILD/tests/make_fixtures" --bench-shape "$shape" "$dir"
  echo "== $shape: ShareLens ($THREADS threads)"
  timed "$WORK/$shape.ours.time" "$BUILD/sharelens" analyze "$dir" --spectra --heads --layers \
    --threads "$THREADS" --json "$WORK/$shape.ours.json"
  python3 -c "import json; print(json.dumps(json.load(open('$WORK/$shape.ours.json'))['timing']))"
  for dtype in $PEER_DTYPES; do
    echo "== $shape: PyTorch svdvals ($dtype, $THREADS threads)"
    timed "$WORK/$shape.torch-$dtype.time" /usr/bin/python3 "$HERE/torch_analysis_peer.py" "$dir" \
      "$WORK/$shape.ours.json" --threads "$THREADS" --dtype "$dtype" --json "$WORK/$shape.torch-$dtype.json" \
      $([ "$shape" != gpt2-124m ] && echo --max-layer-pairs "$PEER_LAYER_PAIRS") >/dev/null
    python3 - "$WORK/$shape.ours.json" "$WORK/$shape.torch-$dtype.json" <<'PY'
import json, sys
ours = json.load(open(sys.argv[1]))["timing"]
peer = json.load(open(sys.argv[2]))
total_o = sum(ours[k] for k in ("spectra_s", "heads_s", "layers_s"))
total_p = sum(peer["timing"][k] for k in ("spectra_s", "heads_s", "layers_s"))
for k in ("spectra_s", "heads_s", "layers_s"):
    print(f"  {k[:-2]:18s} sharelens {ours[k]:8.1f} s   torch {peer['timing'][k]:8.1f} s   ratio {ours[k] / peer['timing'][k]:.3f}")
print(f"  {'total':18s} sharelens {total_o:8.1f} s   torch {total_p:8.1f} s   ratio {total_o / total_p:.3f}")
if peer.get("layer_differences_extrapolated_from_pairs"):
    print(f"  (torch layer differences: {peer['layer_differences_extrapolated_from_pairs']} pairs per projection timed, scaled to all)")
print(f"  effective ranks: {peer['ranks_compared']} compared, {peer['rank_mismatches']} differ, "
      f"{peer['ranks_near_threshold_skipped']} within 1e-9 of the threshold skipped")
PY
  done
done
