#!/usr/bin/env bash
# The MASA paper's compression claim at small scale (issue 36 item 7): Matrix PCA + local refinement against
# SVD-LLM at the same attention compression ratios (MASA, Table 3: 20% and 30% of the attention removed), on a
# model ShareLens pretrains here, with the paper's numbers beside ours. Prints a CLAIMS.md section (markdown) on
# stdout. Resumable: the pretraining resumes, and a finished sweep is reused.
# Usage: tests/tools/claim_compression.sh BUILD_DIR OUT_DIR
set -euo pipefail
BUILD="$(cd "${1:-build}" && pwd)"
OUT="${2:?OUT_DIR}"
mkdir -p "$OUT"
SL="$BUILD/sharelens"
STEPS=1200
# A GQA model (4 query heads, 2 KV heads), so that Algorithm 1's rank moves between Q and K, O and V matter.
[ -f "$OUT/topology.json" ] || "$SL" topology --preset vanilla --layers 8 --unique 8 --d-model 128 --heads 4 \
  --kv-heads 2 --ffn 384 --vocab 1024 --context 128 --out "$OUT/topology.json" >/dev/null
if [ -d "$OUT/run" ]; then
  "$SL" train --topology "$OUT/topology.json" --corpus brown --out "$OUT/run" --steps "$STEPS" --lr 0.003 --resume >&2
else
  "$SL" train --topology "$OUT/topology.json" --corpus brown --out "$OUT/run" --steps "$STEPS" --lr 0.003 >&2
fi
[ -f "$OUT/sweep/sweep.md" ] || "$SL" compress "$OUT/run" --sweep 0.8,0.7,0.5,0.4 --methods masa,svd,masa-noref \
  --eval-tokens 32768 --out "$OUT/sweep" >&2
# The same with one group of all layers (no single-layer group stored whole): does the grouping explain it?
[ -f "$OUT/one-group/sweep.md" ] || "$SL" compress "$OUT/run" --sweep 0.8,0.7,0.5,0.4 --methods masa \
  --groups 0-7 --eval-tokens 32768 --out "$OUT/one-group" >&2
# MASA Table 6 (its grouping ablation: Llama 3.2 1B at 20% removed, 3-7 groups of one atom each): the number of
# groups kl:G at ratio 0.8. A G whose atoms alone exceed the budget cannot be made; that error is kept and
# reported. Any other failure stops the script (and is retried when it runs again).
for G in 1 2 3 4 5 6; do
  dir="$OUT/groups-$G"
  [ -f "$dir/finished" ] && continue
  mkdir -p "$dir"
  if "$SL" compress "$OUT/run" --method masa --ratio 0.8 --groups "kl:$G" --eval --eval-tokens 32768 \
    --out "$dir/model" --json "$dir/compress.json" > "$dir/log" 2>&1; then
    echo ok > "$dir/finished.tmp" && mv "$dir/finished.tmp" "$dir/finished"  # a kill leaves no half marker
  elif grep -q "the atoms alone exceed the target" "$dir/log"; then
    tail -n 1 "$dir/log" > "$dir/finished.tmp" && mv "$dir/finished.tmp" "$dir/finished"
  else
    cat "$dir/log" >&2
    exit 1
  fi
done
cat <<'MD'
## MASA compression against SVD-LLM (MASA, Table 3)

**Claim** (Share Your Attention (MASA), Table 3): compressing a pretrained model's attention by Matrix PCA
atoms per layer group with the local, data-aware refinement of the residuals beats SVD-LLM at the same
compression ratio. The paper reports, WikiText perplexity (uncompressed / SVD-LLM / Matrix PCA): Llama 3.2 1B
at 20% of the attention removed 11.57 / 15.08 / 12.61, at 30% 11.57 / 17.89 / 14.91; Llama 3.2 3B at 20%
9.26 / 11.50 / 10.08; Llama 3.1 8B at 20% 7.33 / 9.05 / 7.84. So the ordering is Matrix PCA < SVD-LLM at
every ratio and size.

**Here**: a 1.6M-parameter Llama-style model (8 layers, d 128, 4 query heads over 2 KV heads, vocabulary
1024) pretrained by ShareLens on Brown for 1,200 steps of 16 x 128 tokens, compressed without training at
ratios 0.8 and 0.7 (the paper's 20% and 30% removed) and, beyond the paper, 0.5 and 0.4, with `sharelens
compress --sweep`:
calibration on the training split (its default size, max(2,048, 8 x the widest input) tokens), groups `kl:3`
from the per-sample grouping lens, one atom per group, ranks by Algorithm 1; held-out perplexity over 32,768
tokens of the held-out documents. One model and one calibration: there is no interval here, only an ordering.

MD
sed "1d" "$OUT/sweep/sweep.md"  # its heading names this machine's path
echo
/usr/bin/python3 - "$OUT/sweep/sweep.json" "$OUT/one-group/sweep.json" <<'PY'
import json, math, sys
def nlls(path):
    return {(p["method"], p["ratio"]): (p["eval"]["nll"], p["eval"]["perplexity"]) for p in json.load(open(path))["points"]}
nll, one = nlls(sys.argv[1]), nlls(sys.argv[2])
sweep = json.load(open(sys.argv[1]))
groups = sweep["groups"]
evals = {(p["method"], p["ratio"]): p["eval"] for p in sweep["points"]}
ratios = sorted({r for _, r in nll}, reverse=True)
lower = lambda r: "Matrix PCA" if nll[("masa", r)][0] < nll[("svd", r)][0] else "SVD-LLM"
def paired(r):
    # Matrix PCA minus SVD-LLM on the same evaluation windows (each window's mean NLL; the difference of the
    # token-weighted means is their token-weighted mean): mean +- 1.96 standard errors over windows, and how
    # many held-out documents lean each way. Windows of one document are not independent, so the documents'
    # signs are the firmer half of this.
    a, b = evals[("masa", r)], evals[("svd", r)]
    assert a["window_tokens"] == b["window_tokens"] and a["document_ids"] == b["document_ids"]
    t = a["window_tokens"]
    d = [(x - y) / n for x, y, n in zip(a["window_nll"], b["window_nll"], t)]
    w = [n / sum(t) for n in t]
    mean = sum(wi * di for wi, di in zip(w, d))
    se = (sum(wi * wi * (di - mean) ** 2 for wi, di in zip(w, d)) * len(d) / (len(d) - 1)) ** 0.5
    docs = [x / n - y / n for x, y, n in zip(a["document_nll"], b["document_nll"], a["document_tokens"])]
    above = sum(x > 0 for x in docs)
    return f"{mean:+.4f} ± {1.96 * se:.4f} nats over {len(d)} windows, {above} of {len(docs)} documents above 0"
rows = ", ".join(f"{r:.1f}: {lower(r)} (Matrix PCA minus SVD-LLM {paired(r)})" for r in ratios)
held = all(lower(r) == "Matrix PCA" for r in ratios if r >= 0.7)
single = sum(len(g) == 1 for g in groups)
alt = ", ".join(f"{r:.1f}: {one[('masa', r)][1]:.2f}" for r in ratios)
print(f"**Verdict**: lower held-out NLL at each ratio: {rows}. The paper's ordering (Matrix PCA below SVD-LLM at "
      f"20% and 30% removed) {'holds' if held else 'does not hold'} here. Each paired ± is 1.96 standard "
      f"errors of the difference over the same windows (the table's ± is each NLL's own standard error). `kl:3` made the groups "
      f"{groups}, {single} of them single layers stored whole; with one group of all layers instead (`--groups "
      f"0-7`) Matrix PCA's perplexity is {alt}, so the grouping alone does not explain the gap: at this size one "
      "atom costs a whole matrix of the budget, which SVD-LLM spends on rank in every layer instead.")
# The regime: what each method costs against the uncompressed model, here and in the paper's Table 3 (Llama
# 3.2 1B, 20% removed: perplexity 11.57 uncompressed, 15.08 SVD-LLM, 12.61 Matrix PCA).
original = json.load(open(sys.argv[1].replace("sweep.json", "original-eval.json")))["nll"]
cost = lambda method: nll[(method, 0.8)][0] - original
print(f"\nThe regime differs from the paper's: at 20% removed, SVD-LLM costs this model {cost('svd'):+.4f} nats and "
      f"Matrix PCA {cost('masa'):+.4f}, where the paper's 1B model pays {math.log(15.08 / 11.57):+.4f} and "
      f"{math.log(12.61 / 11.57):+.4f}. On this small, briefly trained model a whitened per-layer low rank loses "
      "almost nothing, while an atom shared across layers pays for a whole dense matrix; the paper's premise, full-rank weights that share directions across layers, may not be what "
      "this model has. Read the ordering as one about small, undertrained attention, not as a refutation of "
      "Table 3; a model whose SVD-LLM cost at 0.8 is tenths of a nat, as the paper's, would test it.")
PY
echo
/usr/bin/python3 - "$OUT" <<'PY'
import json, math, os, sys
out = sys.argv[1]
# The paper's Table 6: WikiText perplexity of Llama 3.2 1B (16 layers) compressed by 20%, by number of groups.
paper = {3: 12.55, 4: 12.61, 5: 12.61, 6: 12.61, 7: 12.65}
print("### The number of layer groups (MASA, Table 6)\n")
print("**The paper** (Table 6, Llama 3.2 1B, 20% of the attention removed, one atom per group, WikiText perplexity; "
      "uncompressed 11.56): 3 groups 12.55, 4 12.61, 5 12.61, 6 12.61, 7 12.65, \"performance remains relatively "
      "stable across different grouping configurations\" (0.008 nats from best to worst), three groups the lowest; "
      "with three, \"the optimal partition isolates the first layer as Group 1, the last layer as Group 2, and all "
      "intermediate layers as Group 3\".\n")
print("**Here**: the same model at ratio 0.8 with groups `kl:G` (G = 1 to 6 of its 8 layers; the paper's 3-7 of 16 "
      "are 19-44% of its layers, 1.5-3.5 of ours), held-out NLL over the same 32,768 tokens.\n")
print("| groups | layers per group | achieved ratio | NLL | ± | perplexity | the paper's perplexity |")
print("|---|---|---|---|---|---|---|")
fitted = {}
for g in range(1, 7):
    d = os.path.join(out, f"groups-{g}")
    status = open(os.path.join(d, "finished")).read().strip()
    if status != "ok":
        print(f"| {g} | not made: {status.replace('|', '/')} | | | | | {paper.get(g, '')} |")
        continue
    j = json.load(open(os.path.join(d, "compress.json")))
    e = j["eval"]["compressed"]
    fitted[g] = e["nll"]
    groups = " / ".join(f"{grp[0]}-{grp[-1]}" if len(grp) > 1 else str(grp[0]) for grp in j["groups"])
    print(f"| {g} | {groups} | {j['achieved_ratio']:.4f} | {e['nll']:.4f} | {e['nll_standard_error']:.4f} | "
          f"{e['perplexity']:.3f} | {paper.get(g, '')} |")
if not fitted:
    sys.exit("no grouping fitted the budget at ratio 0.8")
best = min(fitted, key=fitted.get)
spread = max(fitted.values()) - min(fitted.values())
print(f"\nFrom best to worst of the groupings that fit, {spread:.4f} nats (the paper's {math.log(12.65 / 12.55):.4f}); "
      f"the lowest NLL at {best} group{'s' if best > 1 else ''}. The ± is each NLL's standard error over windows; "
      "the groupings are scored on the same windows, so their differences are more certain than these. The "
      "achieved ratios differ (an atom is a whole matrix, so the budget left to the residuals' ranks moves in "
      "steps): a grouping that keeps more parameters has that much of an advantage.\n")
PY
echo
echo "Reproduce: \`tests/tools/claim_compression.sh build out/compression\`."
echo
