#!/usr/bin/env bash
# Runs every shipped experiment (assets/experiments, one per claim of the papers) on this machine and writes
# docs/CLAIMS.md from their reports, with each claim's bar chart in docs/claims/, then the MASA compression
# comparison (tests/tools/claim_compression.sh). Resumable: a killed run continues where it stopped. About two
# hours on two cores.
# Usage: tests/tools/run_claims.sh BUILD_DIR [OUT_DIR]
set -euo pipefail
BUILD="$(cd "${1:-build}" && pwd)"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT="${2:-$ROOT/out/claims}"
mkdir -p "$OUT" "$ROOT/docs/claims"
order=(head_sharing layer_sharing depth embeddings masa ffn_tying postshare)
for name in "${order[@]}"; do
  echo "== $name" >&2
  "$BUILD/sharelens" experiment run "$ROOT/assets/experiments/$name.json" --out "$OUT/$name" --parallel 2 --threads 2
done
{
  cat <<'MD'
# Claims, checked at small scale

Each section is one claim of the papers ShareLens implements, run as an experiment on this machine (two CPU
cores, Debian 12) with `tests/tools/run_claims.sh build`: every arm trained from scratch with 3 seeds on the Brown
corpus (1-3M parameters, a 1,024-token vocabulary so that embeddings do not dominate, 0.5M training tokens per
run), then scored on the same held-out documents. Intervals are 95% Student t over seeds; differences are paired
by seed against the reference arm; a verdict is "better" or "worse" only when the whole interval of the paired
difference is on one side of zero. A paper's "no-worse" claim is non-inferiority: it holds only when the whole
interval is at or below the arm's margin (0.02 nats/token unless the experiment gives one), fails when the whole
interval is above it, and is otherwise inconclusive. These are small models trained briefly: a claim made at 100M-1B parameters
and billions of tokens can fail to show here, and where it does, the section says so plainly.

MD
  for name in "${order[@]}"; do
    "$BUILD/sharelens" experiment report "$OUT/$name" --md "$OUT/$name.md" --figures "$OUT/$name-figures" \
      --reproduce "sharelens experiment run assets/experiments/$name.json --out runs/$name --parallel 2 && sharelens experiment report runs/$name --md $name.md" >/dev/null
    cat "$OUT/$name.md"
    stem=$(python3 -c "import json; print(json.load(open('$ROOT/assets/experiments/$name.json'))['name'])")
    cp "$OUT/$name-figures/$stem-forest.png" "$ROOT/docs/claims/$stem.png"
    echo "![$stem: each arm minus the reference, paired by seed, 95% intervals over seeds and over documents, the paper's difference in red](claims/$stem.png)"
    echo
  done
  "$ROOT/tests/tools/claim_compression.sh" "$BUILD" "$OUT/compression"
} > "$ROOT/docs/CLAIMS.md.tmp"
mv "$ROOT/docs/CLAIMS.md.tmp" "$ROOT/docs/CLAIMS.md"  # whole or not at all: a kill leaves the old file
echo "wrote $ROOT/docs/CLAIMS.md" >&2
