#include "analysis/registry.hpp"

#include <chrono>

#include "analysis/activations.hpp"
#include "analysis/difference_maps.hpp"
#include "analysis/directshare.hpp"
#include "analysis/embedding_study.hpp"
#include "analysis/esd.hpp"
#include "analysis/matrix_pca.hpp"
#include "analysis/report_json.hpp"
#include "analysis/spectra.hpp"
#include "core/error.hpp"

namespace sharelens {
namespace {

// Typed adapters: an entry is written with its own result type; the table stores type-erased functions.
template <class T>
std::function<Json(const AnalysisResult&)> jsonOf() {
  return [](const AnalysisResult& r) { return toJson(*resultAs<T>(r)); };
}
template <class T, T (*Parse)(const Json&)>
std::function<AnalysisResult(const Json&)> parsed() {
  return [](const Json& j) { return makeResult(Parse(j)); };
}

std::string needsHeads(const AnalysisInput& in) {
  return in.view.hasHeads()
             ? ""
             : "the head count and head_dim are unknown (put the model's config.json next to the weights)";
}

std::vector<AnalysisKind> makeKinds() {
  std::vector<AnalysisKind> k;
  // Running the model over text comes first: the MASA groups may be taken from its logit-lens drift.
  k.push_back({.id = "activations",
               .jsonKey = "activations",
               .title = "layer outputs over text",
               .inDefaultSet = false,
               .unavailable =
                   [](const AnalysisInput& in) {
                     if (!in.services.runModel)
                       return std::string("running the model over text is not available here");
                     return needsHeads(in);
                   },
               .run =
                   [](const AnalysisInput& in, const AnalysisParams& p, const TaskContext& ctx) {
                     return makeResult(analyseActivations(in.services.runModel(p, ctx), in.backend, p, ctx));
                   },
               .toJson = jsonOf<ActivationResults>(),
               .fromJson = parsed<ActivationResults, activationResultsFromJson>()});
  k.push_back({.id = "spectra",
               .jsonKey = "spectra",
               .title = "singular-value spectra",
               .unavailable = [](const AnalysisInput&) { return std::string(); },
               .run =
                   [](const AnalysisInput& in, const AnalysisParams& p, const TaskContext& ctx) {
                     return makeResult(
                         computeSpectra(in.checkpoint, in.view, in.backend, {p.threshold}, ctx));
                   },
               .toJson = jsonOf<std::vector<MatrixSpectrum>>(),
               .fromJson = parsed<std::vector<MatrixSpectrum>, spectraFromJson>()});
  k.push_back({.id = "heads",
               .jsonKey = "head_differences",
               .title = "head differences",
               .unavailable = needsHeads,
               .run =
                   [](const AnalysisInput& in, const AnalysisParams& p, const TaskContext& ctx) {
                     return makeResult(computeHeadDifferences(in.checkpoint, in.view, in.backend,
                                                              {.threshold = p.threshold,
                                                               .lowestCount = p.lowestPairs,
                                                               .includeOutput = p.headsIncludeOutput},
                                                              ctx));
                   },
               .toJson = jsonOf<HeadDiffResult>(),
               .fromJson = parsed<HeadDiffResult, headDiffFromJson>()});
  k.push_back({.id = "layers",
               .jsonKey = "layer_differences",
               .title = "layer differences",
               .unavailable =
                   [](const AnalysisInput& in) {
                     return in.view.layers.size() < 2 ? std::string("one layer only") : "";
                   },
               .run =
                   [](const AnalysisInput& in, const AnalysisParams& p, const TaskContext& ctx) {
                     return makeResult(computeLayerDifferences(in.checkpoint, in.view, in.backend,
                                                               p.threshold, kAllProjs, ctx));
                   },
               .toJson = jsonOf<LayerDiffResult>(),
               .fromJson = parsed<LayerDiffResult, layerDiffFromJson>()});
  k.push_back({.id = "masa",
               .jsonKey = "matrix_pca",
               .title = "Matrix PCA (MASA atoms)",
               .unavailable =
                   [](const AnalysisInput& in) {
                     return in.view.layers.size() < 2 ? std::string("one layer only") : "";
                   },
               .run =
                   [](const AnalysisInput& in, const AnalysisParams& p, const TaskContext& ctx) {
                     MatrixPcaOptions o;
                     o.groups = p.masaGroups;
                     return makeResult(computeMatrixPca(in.checkpoint, in.view, o, ctx));
                   },
               .toJson = jsonOf<std::vector<MatrixPcaGroup>>(),
               .fromJson = parsed<std::vector<MatrixPcaGroup>, matrixPcaFromJson>()});
  k.push_back({.id = "masa-trained",
               .jsonKey = "masa_trained",
               .title = "learned MASA dictionaries",
               .unavailable =
                   [](const AnalysisInput& in) {
                     return in.view.family == Family::ShareLens
                                ? ""
                                : std::string(
                                      "only ShareLens checkpoints trained with MASA have learned atoms");
                   },
               .run = [](const AnalysisInput& in, const AnalysisParams&,
                         const TaskContext&) { return makeResult(learnedDictionaryMaps(in.checkpoint)); },
               .toJson = jsonOf<std::vector<LearnedDictionaryMap>>(),
               .fromJson = parsed<std::vector<LearnedDictionaryMap>, learnedDictionaryMapsFromJson>()});
  k.push_back({.id = "directshare",
               .jsonKey = "directshare",
               .title = "DirectShare head matches",
               .unavailable =
                   [](const AnalysisInput& in) {
                     if (std::string why = needsHeads(in); !why.empty()) return why;
                     return in.view.layers.size() < 2 ? std::string("one layer only") : std::string();
                   },
               .run =
                   [](const AnalysisInput& in, const AnalysisParams& p, const TaskContext& ctx) {
                     return makeResult(computeDirectShare(in.checkpoint, in.view, p.directShareRatio, ctx));
                   },
               .toJson = jsonOf<DirectShareResult>(),
               .fromJson = parsed<DirectShareResult, directShareFromJson>()});
  k.push_back(
      {.id = "embedding",
       .jsonKey = "embedding",
       .title = "embedding study",
       .unavailable =
           [](const AnalysisInput& in) { return in.view.embedding ? "" : std::string("no token embedding"); },
       .run =
           [](const AnalysisInput& in, const AnalysisParams& p, const TaskContext& ctx) {
             return makeResult(computeEmbeddingStudy(in.checkpoint, in.view, in.backend, p.threshold, ctx));
           },
       .toJson = jsonOf<EmbeddingStudy>(),
       .fromJson = parsed<EmbeddingStudy, embeddingFromJson>()});
  k.push_back({.id = "embedding-loss",
               .jsonKey = "embedding_loss",
               .title = "held-out loss per embedding rank (Fig. 2c)",
               .inDefaultSet = false,
               .unavailable =
                   [](const AnalysisInput& in) {
                     if (!in.view.embedding) return std::string("no token embedding");
                     if (!in.services.scoreTruncatedEmbedding)
                       return std::string("running the model is not available here");
                     return needsHeads(in);
                   },
               .run =
                   [](const AnalysisInput& in, const AnalysisParams& p, const TaskContext& ctx) {
                     EmbeddingStudy study =
                         computeEmbeddingStudy(in.checkpoint, in.view, in.backend, p.threshold, ctx);
                     std::vector<int64_t> ranks;
                     for (const FactorizationPoint& point : study.curve) ranks.push_back(point.rank);
                     const TruncatedEmbeddingScores scores =
                         in.services.scoreTruncatedEmbedding(ranks, p, ctx);
                     study.fullRankValidationNll = scores.storedNll;
                     study.validationText = scores.text;
                     for (size_t i = 0; i < study.curve.size(); ++i)
                       study.curve[i].validationNll = scores.nll.at(i);
                     return makeResult(std::move(study));
                   },
               .toJson = jsonOf<EmbeddingStudy>(),
               .fromJson = parsed<EmbeddingStudy, embeddingFromJson>()});
  k.push_back({.id = "esd",
               .jsonKey = "esd",
               .title = "empirical spectral densities (power-law alpha)",
               .unavailable = [](const AnalysisInput&) { return std::string(); },
               .run =
                   [](const AnalysisInput& in, const AnalysisParams&, const TaskContext& ctx) {
                     return makeResult(computeEsd(in.checkpoint, in.view, in.backend, ctx));
                   },
               .toJson = jsonOf<std::vector<MatrixEsd>>(),
               .fromJson = parsed<std::vector<MatrixEsd>, esdFromJson>()});
  return k;
}

}  // namespace

const std::vector<AnalysisKind>& analysisKinds() {
  static const std::vector<AnalysisKind> kinds = makeKinds();
  return kinds;
}

const AnalysisKind* findAnalysis(std::string_view id) {
  for (const AnalysisKind& k : analysisKinds())
    if (k.id == id || k.jsonKey == id) return &k;
  return nullptr;
}

const AnalysisKind& analysis(std::string_view id) {
  if (const AnalysisKind* k = findAnalysis(id)) return *k;
  std::string ids;
  for (const AnalysisKind& k : analysisKinds()) ids += (ids.empty() ? "" : ", ") + std::string(k.id);
  throw Error({.what = "unknown analysis",
               .where = "analysis registry",
               .expected = ids,
               .found = "'" + std::string(id) + "'"});
}

}  // namespace sharelens
