#include "core/param_count.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <tuple>

#include "core/error.hpp"

namespace sharelens {
namespace {

constexpr std::string_view kGroupNames[kParamGroupCount] = {
    "embedding", "output_head", "attention", "ffn", "lora", "masa_atoms", "masa_coefficients", "norms"};

}  // namespace

std::string_view paramGroupName(ParamGroup g) {
  return kGroupNames[static_cast<int>(g)];
}

ParamBudget countParameters(const Topology& t) {
  ParamBudget b;
  auto add = [&](ParamGroup g, int64_t n) { b.groups[static_cast<int>(g)] += n; };
  const ModelDims& m = t.model;
  const int64_t d = m.dModel, hd = m.headDim;

  const int64_t table = t.embedding.factorRank > 0 ? t.embedding.factorRank * (m.vocab + d) : m.vocab * d;
  add(ParamGroup::Embedding, table);
  if (!t.embedding.tied) add(ParamGroup::OutputHead, table);
  add(ParamGroup::Norms, (2 * m.layers + 1) * d);

  const Proj attnProjs[] = {Proj::Q, Proj::K, Proj::V, Proj::O};
  // Attention blocks (projections not under MASA).
  for (int64_t u = 0; u < t.attention.uniqueBlocks(); ++u) {
    const HeadSharing& hs = t.headSharing;
    bool qkvBaseCounted = false;
    for (Proj p : attnProjs) {
      if (t.masaCovers(p)) continue;
      const auto [out, in] = projShape(m, p);
      const bool headShared =
          hs.mode != HeadSharingMode::None &&
          std::find(hs.projections.begin(), hs.projections.end(), p) != hs.projections.end();
      if (!headShared) {
        int64_t rows = out;
        if (storesCompactRows(t, p)) rows -= tiedUnitsIn(t, u) * unitRows(m, p);
        add(ParamGroup::Attention, rows * in);
        continue;
      }
      if (hs.mode == HeadSharingMode::SharedBase || !qkvBaseCounted) add(ParamGroup::Attention, hd * d);
      qkvBaseCounted = true;
      add(ParamGroup::Lora, headsOf(m, p) * hs.loraRank * (hd + d));
    }
  }
  // Per-layer LoRA on shared attention blocks.
  for (int64_t l = 0; l < m.layers; ++l) {
    if (t.attention.loraRank == 0 || t.attention.usersOf(t.attention.assign[static_cast<size_t>(l)]) < 2)
      continue;
    for (Proj p : attnProjs) {
      if (t.masaCovers(p)) continue;
      const auto [out, in] = projShape(m, p);
      add(ParamGroup::Lora, t.attention.loraRank * (out + in));
    }
  }
  // FFN blocks and their per-layer LoRA.
  add(ParamGroup::Ffn, t.ffn.uniqueBlocks() * 3 * m.ffn * d);
  for (int64_t l = 0; l < m.layers; ++l)
    if (t.ffn.loraRank > 0 && t.ffn.usersOf(t.ffn.assign[static_cast<size_t>(l)]) >= 2)
      add(ParamGroup::Lora, 3 * t.ffn.loraRank * (d + m.ffn));
  // MASA atoms and coefficients.
  if (t.masa.enabled) {
    const auto groups = t.masa.effectiveGroups(m.layers);
    const int64_t s = t.masa.atoms;
    for (Proj p : t.masa.projections) {
      const auto [out, in] = projShape(m, p);
      add(ParamGroup::MasaAtoms, static_cast<int64_t>(groups.size()) * s * out * in);
      if (t.masa.mlpCoefficients) {
        const int64_t e = t.masa.blockEmbeddingDim, h = t.masa.mlpHidden;
        add(ParamGroup::MasaCoefficients, m.layers * e + (e * h + h) + (h * h + h) + (h * s + s));
      } else {
        add(ParamGroup::MasaCoefficients, m.layers * s);
      }
    }
  }
  for (int64_t n : b.groups) b.total += n;
  b.nonEmbedding = b.total - b.of(ParamGroup::Embedding) - b.of(ParamGroup::OutputHead);

  // What each token multiplies through: every layer's full projections and the output projection.
  int64_t applied = 0;
  for (Proj p : kAllProjs) {
    const auto [out, in] = projShape(m, p);
    applied += m.layers * out * in;
  }
  applied += t.embedding.factorRank > 0 ? t.embedding.factorRank * (m.vocab + d)
                                        : m.vocab * d;  // the output projection
  b.trainFlopsPerToken =
      6.0 * static_cast<double>(applied) + 12.0 * static_cast<double>(m.layers * m.heads * hd * m.context);
  b.forwardFlopsPerToken = b.trainFlopsPerToken / 3.0;
  b.denseEquivalent = m.vocab * d * (t.embedding.tied ? 1 : 2) + (2 * m.layers + 1) * d;
  for (Proj p : kAllProjs) {
    const auto [out, in] = projShape(m, p);
    b.denseEquivalent += m.layers * out * in;
  }
  b.rho = b.total > 0 ? static_cast<double>(b.of(ParamGroup::Embedding) + b.of(ParamGroup::OutputHead)) /
                            static_cast<double>(b.total)
                      : 0.0;
  return b;
}

MemoryEstimate estimateTrainingMemory(const Topology& t, int64_t batch) {
  MemoryEstimate e;
  const ModelDims& m = t.model;
  e.parameterBytes = 16.0 * static_cast<double>(countParameters(t).total);
  // The tensors the training step keeps for the backward (trainer/model.cpp), counted in floats for the
  // n = batch x context tokens of a full batch. Per layer:
  //   attention RMSNorm: its input x [n, d] and 1/rms [n]; the stacked QKV GEMM: its input h [n, d];
  //   attention: q, k, v [n, (H + 2 Hkv) hd] and the causal probabilities [batch, H, T, T]; the output
  //   projection: its input [n, H hd]; FFN RMSNorm: x [n, d] and 1/rms [n]; the stacked gate | up GEMM: its
  //   input [n, d]; SwiGLU: gate | up [n, 2F]; the down projection: its input [n, F].
  const double n = static_cast<double>(batch) * static_cast<double>(m.context);
  const double d = static_cast<double>(m.dModel), hd = static_cast<double>(m.headDim),
               heads = static_cast<double>(m.heads), kvHeads = static_cast<double>(m.kvHeads),
               f = static_cast<double>(m.ffn), vocab = static_cast<double>(m.vocab),
               time = static_cast<double>(m.context);
  const double perLayer = n * (4.0 * d + 2.0 + (heads + 2.0 * kvHeads) * hd + heads * hd + 3.0 * f) +
                          static_cast<double>(batch) * heads * time * time;
  // Each layer's effective weights that the GEMMs keep: the stacked QKV and gate | up always (a new tensor
  // each step), the output and down projections when they are computed (LoRA on a shared block, MASA).
  const double stacked = (heads + 2.0 * kvHeads) * hd * d + 2.0 * f * d;
  double computed = 0;
  for (int64_t l = 0; l < m.layers; ++l) {
    const auto shared = [&](const BlockSharing& b) {
      return b.loraRank > 0 && b.usersOf(b.assign[static_cast<size_t>(l)]) > 1;
    };
    if (shared(t.attention) || t.masaCovers(Proj::O)) computed += d * heads * hd;
    if (shared(t.ffn)) computed += d * f;
  }
  // Around the layers: a factorised embedding's [n, r] lookup before its projection; the final RMSNorm's
  // input and output [n, d] (and [n, r] through a factorised output); the logits [n, V] the loss keeps, and
  // the logits' gradient [n, V] at the backward's start. (PostShare's per-pair differences are not counted:
  // a few rows of d each.)
  const double head = n * (2.0 * d + 2.0 * vocab + 2.0 * static_cast<double>(t.embedding.factorRank));
  e.activationBytes = 4.0 * (perLayer * static_cast<double>(m.layers) +
                             stacked * static_cast<double>(m.layers) + computed + head);
  return e;
}

double depthFactor(const std::string& m) {
  if (m == "skinny") return 3.0;
  try {
    size_t used = 0;
    const double f = std::stod(m, &used);
    if (used == m.size() && f >= 1.0 && f <= 8.0) return f;
  } catch (const std::exception&) {
  }
  throw Error({.what = "unknown depth multiplier",
               .where = "provenance.depth_multiplier",
               .expected = "1..8 or skinny",
               .found = "'" + m + "'"});
}

int64_t referenceDepth(const Topology& t) {
  const double factor = depthFactor(t.provenance.depthMultiplier);
  return std::max<int64_t>(1, std::llround(static_cast<double>(t.model.layers) / factor));
}

Topology parameterMatchedBaseline(const Topology& t) {
  const int64_t target = countParameters(t).nonEmbedding;
  Topology base;
  base.name = t.name + "-baseline";
  base.model = t.model;
  base.model.layers = referenceDepth(t);
  base.embedding = t.embedding;  // tying and factor rank carried over, never silently dropped
  base.attention.assign.resize(static_cast<size_t>(base.model.layers));
  for (int64_t l = 0; l < base.model.layers; ++l) base.attention.assign[static_cast<size_t>(l)] = l;
  base.ffn.assign = base.attention.assign;
  const bool square = t.model.heads * t.model.headDim == t.model.dModel;  // the usual d = heads x head_dim
  // Width at shrink factor s: head_dim even; d_model = heads x head_dim, or scaled on its own (Gemma 3
  // shapes).
  auto widths = [&](double s) {
    const int64_t hd = std::max<int64_t>(2, std::llround(static_cast<double>(t.model.headDim) * s / 2.0) * 2);
    const int64_t d = square ? hd * t.model.heads
                             : std::max<int64_t>(8, std::llround(static_cast<double>(t.model.dModel) * s));
    return std::pair{hd, d};
  };
  auto countFor = [&](int64_t headDim, int64_t dModel, int64_t ffn) {
    base.model.headDim = headDim;
    base.model.dModel = dModel;
    base.model.ffn = ffn;
    return countParameters(base).nonEmbedding;
  };
  auto continuous = [&](double s) {
    const auto [hd, d] = widths(s);
    return countFor(hd, d, std::max<int64_t>(1, std::llround(static_cast<double>(t.model.ffn) * s)));
  };
  // Common shrink factor s with count(s) = target, by bisection (the count grows with s).
  double lo = 0.0, hi = 1.5;
  while (continuous(hi) < target && hi < 64) hi *= 2;
  for (int i = 0; i < 60; ++i) {
    const double mid = 0.5 * (lo + hi);
    (continuous(mid) < target ? lo : hi) = mid;
  }
  // Exact FFN width for a width: the count is linear in ffn (below 1 where attention and norms alone exceed
  // the target).
  auto exactFfn = [&](int64_t headDim, int64_t dModel) {
    const int64_t withoutFfn = countFor(headDim, dModel, 0);
    const int64_t perFfnUnit = countFor(headDim, dModel, 1) - withoutFfn;
    return std::llround(static_cast<double>(target - withoutFfn) / static_cast<double>(perFfnUnit));
  };
  // head_dim moves in steps of 2 (and d_model by whole units where it is scaled on its own), so s lands where
  // the count jumps: the narrower width (at lo) leaves the FFN to grow past s, the wider one (at hi) to
  // shrink below it. Of the two, the shape nearer a uniform shrink -- the FFN's factor nearest the width's,
  // as log ratios -- is the baseline (the wider one alone starved the FFN: 48 wide, FFN 128 -> 40, FFN 66
  // where 32, FFN 100 is nearer uniform).
  const auto uniformity = [&](int64_t dModel, int64_t ffn) {
    return std::abs(std::log(static_cast<double>(ffn) / static_cast<double>(t.model.ffn)) -
                    std::log(static_cast<double>(dModel) / static_cast<double>(t.model.dModel)));
  };
  // A shape the baseline can take: an FFN, the count within 0.5%, a factorised embedding's rank below d_model
  // (the errors below name what the wider one lacks when neither fits).
  const auto fits = [&](int64_t headDim, int64_t dModel, int64_t ffnDim) {
    if (ffnDim < 1 || t.embedding.factorRank >= dModel) return false;
    const int64_t c = countFor(headDim, dModel, ffnDim);
    return std::abs(static_cast<double>(c - target)) / static_cast<double>(target) <= 0.005;
  };
  auto [hd, d] = widths(hi);
  int64_t ffn = exactFfn(hd, d);
  if (const auto [narrowHd, narrowD] = widths(lo); narrowHd != hd || narrowD != d) {
    const int64_t narrowFfn = exactFfn(narrowHd, narrowD);
    if (fits(narrowHd, narrowD, narrowFfn) &&
        (!fits(hd, d, ffn) || uniformity(narrowD, narrowFfn) < uniformity(d, ffn)))
      std::tie(hd, d, ffn) = std::tuple{narrowHd, narrowD, narrowFfn};
  }
  if (ffn < 1)
    throw Error({.what = "no unshared model with these heads is that small",
                 .where = "parameter-matched baseline of '" + t.name + "'",
                 .expected = std::to_string(target) + " non-embedding parameters",
                 .found = "attention and norms alone need " + std::to_string(countFor(hd, d, 0)),
                 .hint = "use fewer heads, or compare against a deeper shared model"});
  const int64_t count = countFor(hd, d, ffn);
  const double error = std::abs(static_cast<double>(count - target)) / static_cast<double>(target);
  if (error > 0.005)
    throw Error({.what = "cannot match the non-embedding parameter count within 0.5%",
                 .where = "baseline of '" + t.name + "'",
                 .expected = std::to_string(target),
                 .found = std::to_string(count)});
  if (base.embedding.factorRank >= base.model.dModel)
    throw Error({.what = "the factorised embedding's rank does not fit the narrower baseline",
                 .where = "baseline of '" + t.name + "'",
                 .expected = "factor rank < d_model " + std::to_string(base.model.dModel),
                 .found = std::to_string(base.embedding.factorRank),
                 .hint = "lower the embedding factor rank"});
  const ParamBudget b = countParameters(base);
  base.provenance = {
      "vanilla", base.model.layers, "1",
      "parameter-matched baseline of " + t.name + ": " + std::to_string(count) +
          " non-embedding parameters (target " + std::to_string(target) + "), at depth " +
          std::to_string(base.model.layers) + "; d_model, head_dim and ffn_dim shrunk uniformly; embedding " +
          (base.embedding.tied ? "tied" : "untied") +
          (base.embedding.factorRank > 0 ? ", factorised at rank " + std::to_string(base.embedding.factorRank)
                                         : "") +
          " (" + std::to_string(b.of(ParamGroup::Embedding) + b.of(ParamGroup::OutputHead)) + " parameters)"};
  validateTopology(base, "baseline of " + t.name);
  return base;
}

Topology solveLoraRank(const Topology& t, int64_t budget, const std::string& which, ParameterScope scope) {
  if (which != "layer" && which != "head")
    throw Error(
        {.what = "unknown LoRA kind", .where = "--lora", .expected = "layer or head", .found = which});
  Topology out = t;
  auto withRank = [&](int64_t r) {
    if (which == "head") {
      out.headSharing.loraRank = r;
    } else {
      out.attention.loraRank = out.attention.uniqueBlocks() < out.model.layers ? r : 0;
      out.ffn.loraRank = out.ffn.uniqueBlocks() < out.model.layers ? r : 0;
    }
    const ParamBudget b = countParameters(out);
    return scope == ParameterScope::Total ? b.total : b.nonEmbedding;
  };
  if (which == "head" && t.headSharing.mode == HeadSharingMode::None)
    throw Error({.what = "no head sharing to give a LoRA rank",
                 .where = "topology '" + t.name + "'",
                 .hint = "turn on head sharing (shared base or QKV) first, or solve the layer LoRA rank"});
  if (which == "layer" && t.attention.uniqueBlocks() == t.model.layers &&
      t.ffn.uniqueBlocks() == t.model.layers)
    throw Error({.what = "no shared layers to give a LoRA rank",
                 .where = "topology '" + t.name + "'",
                 .hint = "share layers (a sharing pattern) first, or solve the head LoRA rank"});
  const int64_t zero = withRank(0), perRank = withRank(1) - zero;
  // The largest rank validation allows: half the smallest matrix side (layer LoRA), d_model (head LoRA:
  // [LRS] Table 1 uses ranks up to 192, past a small model's head_dim).
  const int64_t maxRank = which == "head"
                              ? t.model.dModel
                              : std::min({t.model.dModel, t.model.heads * t.model.headDim, t.model.ffn}) / 2;
  const int64_t rank = std::clamp<int64_t>(
      std::llround(static_cast<double>(budget - zero) / static_cast<double>(perRank)), 0, maxRank);
  const int64_t count = withRank(rank);
  const double error =
      std::abs(static_cast<double>(count - budget)) / static_cast<double>(std::max<int64_t>(budget, 1));
  // Within 0.5%, or as close as ranks can come: half a rank's parameters (a deep small model gains several
  // percent per rank, so a tighter match does not exist).
  const double step = 0.5 * static_cast<double>(perRank) / static_cast<double>(std::max<int64_t>(budget, 1));
  if (error > std::max(0.005, step + 1e-12))
    throw Error({.what = "no " + which + " LoRA rank comes within 0.5% (or half a rank) of the budget",
                 .where = "topology '" + t.name + "'",
                 .expected = std::to_string(budget) +
                             (scope == ParameterScope::Total ? " parameters" : " non-embedding parameters"),
                 .found = "rank 0 gives " + std::to_string(zero) + ", rank " + std::to_string(maxRank) +
                          " gives " + std::to_string(withRank(maxRank)) + ", each rank adds " +
                          std::to_string(perRank) + "; the nearest is rank " + std::to_string(rank) +
                          " with " + std::to_string(count),
                 .hint = "change the budget, the sharing pattern or the width"});
  out.name = t.name + "-r" + std::to_string(rank);
  validateTopology(out, "topology with solved LoRA rank");
  return out;
}

}  // namespace sharelens
