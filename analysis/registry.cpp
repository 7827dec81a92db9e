#include "analysis/registry.hpp"

#include <chrono>
#include <type_traits>

#include "analysis/activations.hpp"
#include "analysis/analysis_ids.hpp"
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

// The entry of analysis `id` (analysis_ids.hpp): `run` returns its result type T, and T's JSON both ways
// (toJson, Parse) goes with it, so that the table's type-erased functions agree with the id's type by
// construction. `kind` gives the rest (JSON key, title, availability).
template <auto Parse, class T, class Run>
AnalysisKind entry(AnalysisId<T> id, AnalysisKind kind, Run run) {
  static_assert(std::is_same_v<decltype(Parse), T (*)(const Json&)>, "Parse reads the id's result type");
  kind.id = id.id;
  kind.run = [run](const AnalysisInput& in, const AnalysisParams& p, const TaskContext& ctx) {
    return makeResult<T>(run(in, p, ctx));
  };
  kind.toJson = [](const AnalysisResult& r) { return toJson(*resultAs<T>(r)); };
  kind.fromJson = [](const Json& j) { return makeResult<T>(Parse(j)); };
  return kind;
}

std::string needsHeads(const AnalysisInput& in) {
  return in.view.hasHeads()
             ? ""
             : "the head count and head_dim are unknown (put the model's config.json next to the weights)";
}

std::vector<AnalysisKind> makeKinds() {
  std::vector<AnalysisKind> k;
  // Running the model over text comes first: the MASA groups may be taken from its logit-lens drift.
  k.push_back(entry<activationResultsFromJson>(
      analyses::kActivations,
      {.jsonKey = "activations",
       .title = "layer outputs over text",
       .inDefaultSet = false,
       .unavailable =
           [](const AnalysisInput& in) {
             if (!in.services.runModel)
               return std::string("running the model over text is not available here");
             return needsHeads(in);
           }},
      [](const AnalysisInput& in, const AnalysisParams& p, const TaskContext& ctx) {
        return analyseActivations(in.services.runModel(p, ctx), in.backend, p, ctx);
      }));
  k.push_back(
      entry<spectraFromJson>(analyses::kSpectra,
                             {.jsonKey = "spectra",
                              .title = "singular-value spectra",
                              .unavailable = [](const AnalysisInput&) { return std::string(); }},
                             [](const AnalysisInput& in, const AnalysisParams& p, const TaskContext& ctx) {
                               return computeSpectra(in.checkpoint, in.view, in.backend, {p.threshold}, ctx);
                             }));
  k.push_back(entry<headDiffFromJson>(
      analyses::kHeads,
      {.jsonKey = "head_differences", .title = "head differences", .unavailable = needsHeads},
      [](const AnalysisInput& in, const AnalysisParams& p, const TaskContext& ctx) {
        return computeHeadDifferences(
            in.checkpoint, in.view, in.backend,
            {.threshold = p.threshold, .lowestCount = p.lowestPairs, .includeOutput = p.headsIncludeOutput},
            ctx);
      }));
  k.push_back(entry<layerDiffFromJson>(
      analyses::kLayers,
      {.jsonKey = "layer_differences",
       .title = "layer differences",
       .unavailable =
           [](const AnalysisInput& in) {
             return in.view.layers.size() < 2 ? std::string("one layer only") : "";
           }},
      [](const AnalysisInput& in, const AnalysisParams& p, const TaskContext& ctx) {
        return computeLayerDifferences(in.checkpoint, in.view, in.backend, p.threshold, kAllProjs, ctx);
      }));
  k.push_back(
      entry<matrixPcaFromJson>(analyses::kMasa,
                               {.jsonKey = "matrix_pca",
                                .title = "Matrix PCA (MASA atoms)",
                                .unavailable =
                                    [](const AnalysisInput& in) {
                                      return in.view.layers.size() < 2 ? std::string("one layer only") : "";
                                    }},
                               [](const AnalysisInput& in, const AnalysisParams& p, const TaskContext& ctx) {
                                 MatrixPcaOptions o;
                                 o.groups = p.masaGroups;
                                 return computeMatrixPca(in.checkpoint, in.view, o, ctx);
                               }));
  k.push_back(entry<learnedDictionaryMapsFromJson>(
      analyses::kMasaTrained,
      {.jsonKey = "masa_trained",
       .title = "learned MASA dictionaries",
       .unavailable =
           [](const AnalysisInput& in) {
             return in.view.family == Family::ShareLens
                        ? ""
                        : std::string("only ShareLens checkpoints trained with MASA have learned atoms");
           }},
      [](const AnalysisInput& in, const AnalysisParams&, const TaskContext&) {
        return learnedDictionaryMaps(in.checkpoint);
      }));
  k.push_back(entry<directShareFromJson>(
      analyses::kDirectShare,
      {.jsonKey = "directshare",
       .title = "DirectShare head matches",
       .unavailable =
           [](const AnalysisInput& in) {
             if (std::string why = needsHeads(in); !why.empty()) return why;
             return in.view.layers.size() < 2 ? std::string("one layer only") : std::string();
           }},
      [](const AnalysisInput& in, const AnalysisParams& p, const TaskContext& ctx) {
        return computeDirectShare(in.checkpoint, in.view, p.directShareRatio, ctx);
      }));
  k.push_back(entry<embeddingFromJson>(
      analyses::kEmbedding,
      {.jsonKey = "embedding",
       .title = "embedding study",
       .unavailable =
           [](const AnalysisInput& in) {
             return in.view.embedding ? "" : std::string("no token embedding");
           }},
      [](const AnalysisInput& in, const AnalysisParams& p, const TaskContext& ctx) {
        return computeEmbeddingStudy(in.checkpoint, in.view, in.backend, p.threshold, ctx);
      }));
  k.push_back(entry<embeddingFromJson>(
      analyses::kEmbeddingLoss,
      {.jsonKey = "embedding_loss",
       .title = "held-out loss per embedding rank (Fig. 2c)",
       .inDefaultSet = false,
       .unavailable =
           [](const AnalysisInput& in) {
             if (!in.view.embedding) return std::string("no token embedding");
             if (!in.services.scoreTruncatedEmbedding)
               return std::string("running the model is not available here");
             return needsHeads(in);
           }},
      [](const AnalysisInput& in, const AnalysisParams& p, const TaskContext& ctx) {
        EmbeddingStudy study = computeEmbeddingStudy(in.checkpoint, in.view, in.backend, p.threshold, ctx);
        std::vector<int64_t> ranks;
        for (const FactorizationPoint& point : study.curve) ranks.push_back(point.rank);
        const TruncatedEmbeddingScores scores = in.services.scoreTruncatedEmbedding(ranks, p, ctx);
        study.fullRankValidationNll = scores.storedNll;
        study.validationText = scores.text;
        for (size_t i = 0; i < study.curve.size(); ++i) study.curve[i].validationNll = scores.nll.at(i);
        return study;
      }));
  k.push_back(entry<esdFromJson>(analyses::kEsd,
                                 {.jsonKey = "esd",
                                  .title = "empirical spectral densities (power-law alpha)",
                                  .unavailable = [](const AnalysisInput&) { return std::string(); }},
                                 [](const AnalysisInput& in, const AnalysisParams&, const TaskContext& ctx) {
                                   return computeEsd(in.checkpoint, in.view, in.backend, ctx);
                                 }));
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
