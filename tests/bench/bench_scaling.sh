#!/usr/bin/env bash
# How the analysis's cost grows (issue 16, item 6): the full analysis (spectra + head and layer difference
# maps) of the GPT-2 124M, GPT-2 350M and Llama-3.2-1B shapes, ShareLens beside PyTorch float32, through
# bench_analysis.sh; then a table (time, peak memory, ratios, the growth exponent between neighbouring shapes)
# and a log-log figure drawn by plot_scaling.
# Usage: tests/bench/bench_scaling.sh BUILD_DIR [FIGURE_PREFIX]   (default: the repository's docs/scaling;
#        writes .svg and .png)
#        COLLECT_ONLY=1 skips the runs and uses the measurements already in $SHARELENS_BENCH_DIR.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/blas_env.sh"
BUILD="$(cd "${1:-build}" && pwd)"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PREFIX="${2:-$HERE/../../docs/scaling}"
WORK="${SHARELENS_BENCH_DIR:-/tmp/sharelens-bench}"
SHAPES="gpt2-124m gpt2-350m llama-3.2-1b"
if [ -z "${COLLECT_ONLY:-}" ]; then
  PEER_DTYPES=float32 "$HERE/bench_analysis.sh" "$BUILD" $SHAPES
fi
for shape in $SHAPES; do
  "$BUILD/sharelens" inspect "$WORK/$shape" --json "$WORK/$shape.inspect.json" >/dev/null
done
/usr/bin/python3 - "$WORK" "$WORK/scaling.json" $SHAPES <<'PY'
import json, math, sys
work, out, shapes = sys.argv[1], sys.argv[2], sys.argv[3:]
parts = ("spectra_s", "heads_s", "layers_s")

def side(shape, name, label):
    timing = json.load(open(f"{work}/{shape}.{name}.json"))["timing"]
    wall, peak = open(f"{work}/{shape}.{name}.time").read().split()
    return label, {"seconds": sum(timing[p] for p in parts), "peak_kib": int(peak), "wall_s": float(wall),
                   **{p: timing[p] for p in parts}}

rows = []
for shape in shapes:
    params = json.load(open(f"{work}/{shape}.inspect.json"))["parameters"]["total"]
    rows.append({"shape": shape, "parameters": params,
                 "sides": dict([side(shape, "ours", "ShareLens"), side(shape, "torch-float32", "PyTorch float32")])})
json.dump({"shapes": rows}, open(out, "w"), indent=2)

print("| shape | parameters | ShareLens s (spectra / heads / layers) | PyTorch float32 s | ratio "
      "| ShareLens peak GiB | PyTorch peak GiB |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for r in rows:
    o, t = r["sides"]["ShareLens"], r["sides"]["PyTorch float32"]
    print(f"| {r['shape']} | {r['parameters'] / 1e6:.0f}M | {o['seconds']:.1f} ({o['spectra_s']:.1f} / "
          f"{o['heads_s']:.1f} / {o['layers_s']:.1f}) | {t['seconds']:.1f} | "
          f"{o['seconds'] / t['seconds']:.2f}x | {o['peak_kib'] / 2**20:.2f} | {t['peak_kib'] / 2**20:.2f} |")
print("growth exponents k in time ~ parameters^k between neighbouring shapes:")
for a, b in zip(rows, rows[1:]):
    dp = math.log(b["parameters"] / a["parameters"])
    for name in ("ShareLens", "PyTorch float32"):
        sa, sb = a["sides"][name], b["sides"][name]
        ks = ", ".join(f"{p[:-2]} {math.log(sb[p] / sa[p]) / dp:.2f}" for p in parts)
        print(f"  {a['shape']} -> {b['shape']} {name}: total {math.log(sb['seconds'] / sa['seconds']) / dp:.2f} ({ks})")
PY
mkdir -p "$(dirname "$PREFIX")"
"$BUILD/tests/plot_scaling" "$WORK/scaling.json" "$PREFIX.svg" "$PREFIX.png"
