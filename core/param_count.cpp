#include "core/param_count.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/error.hpp"

namespace sharelens {
namespace {

constexpr std::string_view kGroupNames[kParamGroupCount] = {"embedding", "output_head", "attention", "ffn",
                                                            "lora", "masa_atoms", "masa_coefficients", "norms"};

// Heads of layer `l` whose Q (and, for MHA, K) come from an earlier head.
int64_t tiedTargetsIn(const Topology& t, int64_t layer) {
  return std::count_if(t.tiedHeads.begin(), t.tiedHeads.end(), [&](const HeadTie& tie) { return tie.targetLayer == layer; });
}

}  // namespace

std::string_view paramGroupName(ParamGroup g) { return kGroupNames[static_cast<int>(g)]; }

ParamBudget countParameters(const Topology& t) {
  ParamBudget b;
  auto add = [&](ParamGroup g, int64_t n) { b.groups[static_cast<int>(g)] += n; };
  const ModelDims& m = t.model;
  const int64_t d = m.dModel, hd = m.headDim;

  const int64_t table = t.embedding.factorRank > 0 ? t.embedding.factorRank * (m.vocab + d) : m.vocab * d;
  add(ParamGroup::Embedding, table);
  if (!t.embedding.tied) add(ParamGroup::OutputHead, table);
  add(ParamGroup::Norms, (2 * m.layers + 1) * d);

  const bool mha = m.heads == m.kvHeads;
  const Proj attnProjs[] = {Proj::Q, Proj::K, Proj::V, Proj::O};
  // Attention blocks (projections not under MASA).
  for (int64_t u = 0; u < t.attention.uniqueBlocks(); ++u) {
    const HeadSharing& hs = t.headSharing;
    bool qkvBaseCounted = false;
    for (Proj p : attnProjs) {
      if (t.masaCovers(p)) continue;
      const auto [out, in] = projShape(m, p);
      const bool headShared = hs.mode != HeadSharingMode::None &&
                              std::find(hs.projections.begin(), hs.projections.end(), p) != hs.projections.end();
      if (!headShared) {
        int64_t rows = out;
        if (!t.tiedHeads.empty() && (p == Proj::Q || (p == Proj::K && mha))) rows -= tiedTargetsIn(t, u) * hd;
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
    if (t.attention.loraRank == 0 || t.attention.usersOf(t.attention.assign[static_cast<size_t>(l)]) < 2) continue;
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

  // What each token multiplies through: every layer's full projections and the output projection.
  int64_t applied = 0;
  for (Proj p : kAllProjs) {
    const auto [out, in] = projShape(m, p);
    applied += m.layers * out * in;
  }
  applied += t.embedding.factorRank > 0 ? t.embedding.factorRank * (m.vocab + d) : m.vocab * d;  // the output projection
  b.trainFlopsPerToken = 6.0 * static_cast<double>(applied) +
                         12.0 * static_cast<double>(m.layers * m.heads * hd * m.context);
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
  const double s = static_cast<double>(m.context), h = static_cast<double>(m.dModel), a = static_cast<double>(m.heads);
  const double perLayer = s * static_cast<double>(batch) * h * (34.0 + 5.0 * a * s / h);  // fp16 bytes
  e.activationBytes = 2.0 * perLayer * static_cast<double>(m.layers) +                      // fp32
                      3.0 * 4.0 * s * static_cast<double>(batch) * static_cast<double>(m.vocab);  // logits
  return e;
}

Topology parameterMatchedBaseline(const Topology& t) {
  const int64_t target = countParameters(t).total;
  Topology base;
  base.name = t.name + "-baseline";
  base.model = t.model;
  base.embedding = {t.embedding.tied, 0};
  auto countFor = [&](int64_t dModel, int64_t ffn) {
    base.model.dModel = dModel;
    base.model.headDim = dModel / base.model.heads;
    base.model.ffn = ffn;
    return countParameters(base).total;
  };
  base.attention.assign.resize(static_cast<size_t>(t.model.layers));
  for (int64_t l = 0; l < t.model.layers; ++l) base.attention.assign[static_cast<size_t>(l)] = l;
  base.ffn.assign = base.attention.assign;
  // Common shrink factor s with count(d s, ffn s) = target, by bisection (the count grows with s).
  double lo = 0.0, hi = 1.5;
  const double d0 = static_cast<double>(t.model.dModel), f0 = static_cast<double>(t.model.ffn);
  auto continuous = [&](double s) {
    const int64_t d = std::max<int64_t>(2 * t.model.heads, static_cast<int64_t>(std::llround(d0 * s / (2.0 * t.model.heads))) * 2 * t.model.heads);
    return countFor(d, std::max<int64_t>(1, std::llround(f0 * s)));
  };
  while (continuous(hi) < target && hi < 64) hi *= 2;
  for (int i = 0; i < 60; ++i) {
    const double mid = 0.5 * (lo + hi);
    (continuous(mid) < target ? lo : hi) = mid;
  }
  const double s = hi;
  const int64_t step = 2 * t.model.heads;
  const int64_t d = std::max<int64_t>(step, static_cast<int64_t>(std::llround(d0 * s / static_cast<double>(step))) * step);
  // Exact FFN width for this d_model: count is linear in ffn.
  const int64_t withoutFfn = countFor(d, 0);
  const int64_t perFfnUnit = countFor(d, 1) - withoutFfn;
  const int64_t ffn = std::llround(static_cast<double>(target - withoutFfn) / static_cast<double>(perFfnUnit));
  if (ffn < 1)
    throw Error({.what = "no unshared model with these heads and vocab is that small",
                 .where = "parameter-matched baseline of '" + t.name + "'",
                 .expected = std::to_string(target) + " parameters",
                 .found = "the embedding and attention alone need " + std::to_string(withoutFfn),
                 .hint = "use fewer heads or a smaller vocab, or compare against a deeper shared model"});
  const int64_t count = countFor(d, ffn);
  const double error = std::abs(static_cast<double>(count - target)) / static_cast<double>(target);
  if (error > 0.005)
    throw Error({.what = "cannot match the parameter count within 0.5%", .where = "baseline of '" + t.name + "'",
                 .expected = std::to_string(target), .found = std::to_string(count)});
  base.provenance = {"vanilla", t.model.layers, "1",
                     "parameter-matched baseline of " + t.name + ": d_model and ffn_dim shrunk to " +
                         std::to_string(count) + " parameters (target " + std::to_string(target) + ")"};
  validateTopology(base, "baseline of " + t.name);
  return base;
}

}  // namespace sharelens
