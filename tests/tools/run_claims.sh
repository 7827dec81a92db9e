#!/usr/bin/env bash
# Runs every shipped experiment (assets/experiments, one per claim of the papers) on this machine and writes
# docs/CLAIMS.md from their reports, with each claim's forest plot in docs/claims/, then the MASA compression
# comparison (tests/tools/claim_compression.sh). Each experiment is planned first (`experiment plan`: its
# learning rates, and the tokens and seeds that reach the file's target interval), then run as planned.
# Resumable: a killed plan or run continues where it stopped. Goal: 90 minutes per experiment on two cores.
# Usage: tests/tools/run_claims.sh BUILD_DIR [OUT_DIR]
set -euo pipefail
# Started with setsid (as a background job should be), the script is in an autogroup of its own, where its
# own nice value does not yield to the rest of the machine: lower the group's share too (Linux autogroups).
[ -w /proc/self/autogroup ] && echo 19 > /proc/self/autogroup 2>/dev/null || true
BUILD="$(cd "${1:-build}" && pwd)"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT="${2:-$ROOT/out/claims}"
mkdir -p "$OUT" "$ROOT/docs/claims"
order=(head_sharing qkv_sharing layer_sharing depth embeddings embedding_tying masa ffn_tying postshare)
for name in "${order[@]}"; do
  echo "== $name" >&2
  "$BUILD/sharelens" experiment plan "$ROOT/assets/experiments/$name.json" --out "$OUT/$name-plan" --threads 2
  "$BUILD/sharelens" experiment run "$OUT/$name-plan/planned.json" --out "$OUT/$name" --threads 2
done
{
  cat <<'MD'
# Claims, checked at small scale

Each section is one claim of the papers ShareLens implements, run as an experiment on this machine (two CPU
cores, Debian 12) with `tests/tools/run_claims.sh build`: each experiment planned first (a learning-rate sweep per
arm, a pilot of the reference and its A/A arm that sizes the tokens and seeds for a paired half-width of 0.02
nats), then every arm trained from scratch with the planned seeds on the english corpus (Brown, State of the
Union, Moby-Dick; 0.4-1.2M parameters), then scored on every held-out document. Intervals are 95% Student t
over seeds, with a bootstrap over documents beside them; differences are paired by seed against the reference
arm; each experiment's A/A arm (the reference re-initialised) shows the interval containing 0 when nothing
differs; a verdict is "better" or "worse" only when the whole interval of the paired
difference is on one side of zero. A paper's "no-worse" claim is non-inferiority: it holds only when the whole
interval is at or below the arm's margin (0.02 nats/token unless the experiment gives one), fails when the whole
interval is above it, and is otherwise inconclusive. These are small models trained briefly: a claim made at 100M-1B parameters
and billions of tokens can fail to show here, and where it does, the section says so plainly.

MD
  for name in "${order[@]}"; do
    "$BUILD/sharelens" experiment report "$OUT/$name" --md "$OUT/$name.md" --figures "$OUT/$name-figures" \
      --reproduce "sharelens experiment plan assets/experiments/$name.json --out runs/$name-plan && sharelens experiment run runs/$name-plan/planned.json --out runs/$name && sharelens experiment report runs/$name --md $name.md" >/dev/null
    cat "$OUT/$name-plan/plan.md"
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
