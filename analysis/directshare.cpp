#include "analysis/directshare.hpp"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "core/atomic_file.hpp"
#include "core/derived_checkpoint.hpp"
#include "core/error.hpp"
#include "core/json_util.hpp"

namespace fs = std::filesystem;

namespace sharelens {
namespace {

constexpr size_t kCandidatesPerUnit = 8;  // fallbacks when a unit's best source is itself replaced

// The unit's rows of a projection: Q holds G query heads per unit, K and V one head each.
int64_t unitRows(const ModelView& view, Proj p) {
  return (p == Proj::Q ? view.shape.heads / view.shape.kvHeads : 1) * view.shape.headDim;
}

MatrixExpr unitMatrix(const ModelView& view, int64_t layer, Proj p, int64_t unit) {
  const int64_t rows = unitRows(view, p);
  return view.layers.at(static_cast<size_t>(layer)).at(p).sliceRows(unit * rows, rows);
}

std::optional<VectorSlice> unitBias(const ModelView& view, int64_t layer, Proj p, int64_t unit) {
  const auto& bias = view.layers.at(static_cast<size_t>(layer)).bias[static_cast<int>(p)];
  if (!bias) return std::nullopt;
  const int64_t rows = unitRows(view, p);
  return VectorSlice{bias->tensor, bias->offset + unit * rows, rows};
}

}  // namespace

UnitParameters unitParameters(int64_t heads, int64_t kvHeads, int64_t headDim, int64_t hidden) {
  const int64_t qRows = heads / kvHeads * headDim;
  return {(qRows + 2 * headDim) * hidden, hidden * qRows};
}

DirectShareCount directShareCount(int64_t layers, int64_t heads, int64_t kvHeads, int64_t headDim,
                                  int64_t hidden, double alpha) {
  const UnitParameters unit = unitParameters(heads, kvHeads, headDim, hidden);
  const int64_t units = std::llround(alpha * static_cast<double>(layers * kvHeads));
  return {units, units * unit.qkv, units * (unit.qkv + unit.o)};
}

void chooseSharedPairs(DirectShareResult& r, double ratio) {
  // Algorithm 2: take the best-scoring matches until alpha of all units share; a unit that gives its weights
  // away cannot be a source, and a source cannot be replaced (no chains), so each unit's next-best earlier
  // unit stands in when its best is taken (kCandidatesPerUnit of them are kept per unit).
  r.ratio = ratio;
  r.chosen.clear();
  std::vector<UnitMatch> candidates;
  for (int64_t l = 1; l < r.layers; ++l)
    for (int64_t u = 0; u < r.units; ++u) {
      std::vector<UnitMatch> mine;
      for (int64_t sl = 0; sl < l; ++sl)
        for (int64_t su = 0; su < r.units; ++su)
          mine.push_back({{l, u}, {sl, su}, r.similarityOf({l, u}, {sl, su})});
      const size_t keep = std::min(mine.size(), kCandidatesPerUnit);
      std::partial_sort(mine.begin(), mine.begin() + static_cast<std::ptrdiff_t>(keep), mine.end(),
                        [](const UnitMatch& a, const UnitMatch& b) { return a.similarity > b.similarity; });
      candidates.insert(candidates.end(), mine.begin(), mine.begin() + static_cast<std::ptrdiff_t>(keep));
    }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const UnitMatch& a, const UnitMatch& b) { return a.similarity > b.similarity; });
  const int64_t wanted = std::llround(ratio * static_cast<double>(r.layers * r.units));
  std::set<std::pair<int64_t, int64_t>> targets, sources;
  for (const UnitMatch& m : candidates) {
    if (static_cast<int64_t>(r.chosen.size()) >= wanted) break;
    const auto t = std::pair{m.target.layer, m.target.unit}, s = std::pair{m.source.layer, m.source.unit};
    if (targets.count(t) || sources.count(t) || targets.count(s)) continue;
    r.chosen.push_back(m);
    targets.insert(t);
    sources.insert(s);
  }
  r.parametersSaved = r.parametersPerUnit * static_cast<int64_t>(r.chosen.size());
}

DirectShareResult computeDirectShare(const Checkpoint& ckpt, const ModelView& view, double ratio,
                                     const TaskContext& ctx) {
  if (!view.hasHeads() || view.shape.kvHeads <= 0)
    throw Error({.what = "DirectShare needs the head counts and head_dim",
                 .where = view.source,
                 .hint = "put the model's config.json next to the weights"});
  if (!(ratio > 0.0 && ratio < 1.0))
    throw Error({.what = "sharing ratio out of range",
                 .where = "DirectShare ratio",
                 .expected = "a fraction in (0, 1)",
                 .found = std::to_string(ratio),
                 .hint = "alpha = shared units / all units, e.g. 0.25"});
  if (view.layers.size() < 2)
    throw Error({.what = "DirectShare needs at least two layers",
                 .where = view.source,
                 .found = std::to_string(view.layers.size()) + " layer",
                 .hint = "a unit shares with an earlier layer's"});
  DirectShareResult r;
  r.layers = static_cast<int64_t>(view.layers.size());
  r.units = view.shape.kvHeads;
  r.queryHeadsPerUnit = view.shape.heads / view.shape.kvHeads;
  r.unitKind = r.queryHeadsPerUnit == 1 ? "head" : "kv_group";
  const int64_t d = view.shape.hidden, qRows = unitRows(view, Proj::Q), kRows = unitRows(view, Proj::K);
  const int64_t width = (qRows + kRows) * d, count = r.layers * r.units;

  // X: one normalised vec([W_q ; W_k]) row per unit (Eq. 3's cosine is then one GEMM, X X^T).
  std::vector<float> x(static_cast<size_t>(count * width));
  const Proj qk[] = {Proj::Q, Proj::K};
  for (int64_t l = 0; l < r.layers; ++l) {
    ctx.throwIfCancelled();
    const LayerWeights w = loadLayer(ckpt, view, l, ctx, qk);
    for (int64_t u = 0; u < r.units; ++u) {
      float* row = x.data() + (l * r.units + u) * width;
      std::copy(w.at(Proj::Q).row(u * qRows), w.at(Proj::Q).row((u + 1) * qRows), row);
      std::copy(w.at(Proj::K).row(u * kRows), w.at(Proj::K).row((u + 1) * kRows), row + qRows * d);
      double norm = 0;
      for (int64_t i = 0; i < width; ++i) norm += static_cast<double>(row[i]) * row[i];
      const float scale = norm > 0 ? static_cast<float>(1.0 / std::sqrt(norm)) : 0.0f;
      for (int64_t i = 0; i < width; ++i) row[i] *= scale;
    }
    ctx.report(0.8 * static_cast<double>(l + 1) / static_cast<double>(r.layers),
               "DirectShare: reading heads");
  }
  r.similarity.assign(static_cast<size_t>(count * count), 0.0f);
  cblas_ssyrk(CblasRowMajor, CblasUpper, CblasNoTrans, static_cast<int>(count), static_cast<int>(width), 1.0f,
              x.data(), static_cast<int>(width), 0.0f, r.similarity.data(), static_cast<int>(count));
  for (int64_t i = 0; i < count; ++i)
    for (int64_t j = 0; j < i; ++j)
      r.similarity[static_cast<size_t>(i * count + j)] = r.similarity[static_cast<size_t>(j * count + i)];

  // Algorithm 1: each unit of a later layer with its most similar unit of the earlier layers.
  for (int64_t l = 1; l < r.layers; ++l)
    for (int64_t u = 0; u < r.units; ++u) {
      UnitMatch best{{l, u}, {0, 0}, -2.0f};
      for (int64_t sl = 0; sl < l; ++sl)
        for (int64_t su = 0; su < r.units; ++su)
          if (const float s = r.similarityOf({l, u}, {sl, su}); s > best.similarity)
            best = {{l, u}, {sl, su}, s};
      r.bestMatches.push_back(best);
    }
  std::stable_sort(r.bestMatches.begin(), r.bestMatches.end(),
                   [](const UnitMatch& a, const UnitMatch& b) { return a.similarity > b.similarity; });

  // Parameters of one unit: its Q, K and V rows, and their biases where the family has them.
  const UnitParameters unit = unitParameters(view.shape.heads, view.shape.kvHeads, view.shape.headDim, d);
  r.parametersPerUnit = unit.qkv;
  r.oParametersPerUnit = unit.o;
  for (Proj p : {Proj::Q, Proj::K, Proj::V})
    if (view.layers[0].bias[static_cast<int>(p)]) r.parametersPerUnit += unitRows(view, p);
  r.attentionParameters = r.layers * r.units * (r.parametersPerUnit + r.oParametersPerUnit);
  if (view.layers[0].bias[static_cast<int>(Proj::O)]) r.attentionParameters += r.layers * d;
  r.parametersTotal = countParameters(ckpt, view).total;
  chooseSharedPairs(r, ratio);
  ctx.report(1.0, "DirectShare: done");
  return r;
}

Topology tiedHeadTopology(const ModelView& view, const DirectShareResult& r, const std::string& name) {
  const ModelShape& s = view.shape;
  Topology t;
  t.name = name;
  t.model = modelDimsOf(s, std::clamp<int64_t>(s.context, 2, 2048));
  for (int64_t l = 0; l < s.layers; ++l) t.attention.assign.push_back(l);
  t.ffn.assign = t.attention.assign;
  t.embedding.tied = s.tiedEmbeddings;
  for (const UnitMatch& p : r.chosen)
    t.tiedHeads.push_back({p.target.layer, p.target.unit, p.source.layer, p.source.unit});
  char ratio[16];
  std::snprintf(ratio, sizeof ratio, "%.2f", r.ratio);
  t.provenance = {"vanilla", s.layers, "1",
                  std::string("DirectShare at ratio ") + ratio + " of " + view.source};
  validateTopology(t, "DirectShare topology");
  return t;
}

void checkDirectShareWritable(const Checkpoint& ckpt, const ModelView& view) {
  // Each layer's Q, K and V must be its own stored rows: an edit through a composed matrix (LoRA, MASA) is
  // impossible, and one through a tensor that several layers read (strict layer sharing, a shared head
  // base) would silently change every layer that uses it, the sources included.
  std::map<std::string, int64_t> owner;  // stored tensor -> the layer whose Q/K/V read it
  for (const LayerView& layer : view.layers)
    for (Proj p : {Proj::Q, Proj::K, Proj::V}) {
      if (!layer.has(p)) continue;
      const std::string where = ckpt.path().string() + ": layer " + std::to_string(layer.index) + " " +
                                std::string(projName(p)) + " = " + layer.at(p).describe();
      if (!isPlainSlice(layer.at(p)))
        throw Error(
            {.what = "cannot write a DirectShare model of a checkpoint whose attention weights are composed",
             .where = where,
             .expected = "plain per-layer weights, as Hugging Face checkpoints store them",
             .hint = "`sharelens export-hf` materialises a shared ShareLens model; run DirectShare on its "
                     "output"});
      const std::string& tensor = layer.at(p).terms[0].left.tensor;
      const auto [it, fresh] = owner.emplace(tensor, layer.index);
      if (!fresh && it->second != layer.index)
        throw Error(
            {.what = "cannot write a DirectShare model of a checkpoint whose layers share attention weights",
             .where = where,
             .expected = "one stored tensor per layer",
             .found = "'" + tensor + "' also holds layer " + std::to_string(it->second) + "'s weights",
             .hint = "`sharelens export-hf` materialises a shared ShareLens model; run DirectShare on its "
                     "output"});
    }
}

void writeDirectSharedCheckpoint(const Checkpoint& ckpt, const ModelView& view,
                                 const DirectShareResult& result, const fs::path& outDir) {
  checkDirectShareWritable(ckpt, view);  // before anything is created
  StagedDirectory out(outDir);  // refuses a non-empty directory; removed again unless everything is written
  TensorEditor editor(ckpt);
  Json pairs = Json::array();
  for (const UnitMatch& m : result.chosen) {
    for (Proj p : {Proj::Q, Proj::K, Proj::V}) {
      editor.write(unitMatrix(view, m.target.layer, p, m.target.unit),
                   materializeFinite(ckpt, unitMatrix(view, m.source.layer, p, m.source.unit)));
      if (const auto target = unitBias(view, m.target.layer, p, m.target.unit))
        editor.write(*target, materialize(ckpt, *unitBias(view, m.source.layer, p, m.source.unit)));
    }
    pairs.push_back({{"target", {m.target.layer, m.target.unit}},
                     {"source", {m.source.layer, m.source.unit}},
                     {"similarity", m.similarity}});
  }
  const Json record = {{"ratio", result.ratio},
                       {"achieved_ratio", result.achievedRatio()},
                       {"unit", result.unitKind},
                       {"query_heads_per_unit", result.queryHeadsPerUnit},
                       {"shared", "q,k,v"},
                       {"pairs", pairs},
                       {"parameters_saved", result.parametersSaved},
                       {"saved_share_of_attention", result.savedShareOfAttention(false)},
                       {"parameters_unique", result.parametersTotal - result.parametersSaved}};
  auto metadata = ckpt.metadata();
  metadata["sharelens.directshare"] = record.dump();
  editor.save(out.path() / "model.safetensors", metadata);
  copyCompanionFiles(ckpt, out.path());
  out.commit();
}

}  // namespace sharelens
