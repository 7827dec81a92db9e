// The analyses ShareLens runs on a checkpoint, in one table. Everything that lists analyses -- `sharelens
// analyze` (its flags and its report), `sharelens export`, the GUI's workspace and views -- iterates it, so
// adding an analysis is one entry in registry.cpp beside its computation, and every parameter has one
// default.
#pragma once

#include <any>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/analysis_ids.hpp"
#include "analysis/backend.hpp"
#include "analysis/matrix_pca.hpp"
#include "core/activation_data.hpp"
#include "core/json_util.hpp"
#include "core/model_view.hpp"
#include "core/task.hpp"

namespace sharelens {

// Every analysis parameter, once, with its default.
struct AnalysisParams {
  double threshold = 0.95;                       // effective-rank energy threshold
  size_t lowestPairs = 50;                       // head pairs listed in head_differences.lowest_pairs
  bool headsIncludeOutput = true;                // O heads beside Q, K, V in the head maps
  double directShareRatio = 0.25;                // alpha of the DirectShare pairs
  std::vector<std::vector<int64_t>> masaGroups;  // Matrix PCA layer groups; empty: one group of all layers
  int64_t activationTokens = 25000;              // tokens of text the model runs over
  // "per-sample" (the MASA paper's), "mean-state" or "per-token" (trainer/forward_probe.hpp)
  std::string logitLens = "per-sample";
  int64_t logitLensTokens = 2048;       // "per-token" only
  int64_t klGroups = kKlDefaultGroups;  // MASA groups from the drift: at the G-1 largest; 0: local maxima
  int64_t attentionTokens = 128;
  int64_t embeddingLossTokens = 8192;  // held-out tokens scored at each embedding rank
  std::string corpus = "brown";
  std::vector<int> tokenIds;  // when given: run over these instead of corpus text
};

// What running the model over text gives the analyses (filled by the trainer's forward probe, which the
// caller supplies: analysis/ does not run models).
using ModelRunner = std::function<ActivationData(const AnalysisParams&, const TaskContext&)>;

// Held-out NLL of the checkpoint with its token embedding (and an untied output head) replaced by its best
// rank-r approximation, for each rank (the low-rank sharing paper's Fig. 2c), beside the NLL as stored.
struct TruncatedEmbeddingScores {
  double storedNll = 0;     // the checkpoint as it is
  std::vector<double> nll;  // one per requested rank
  std::string text;         // what was scored ("held-out split of brown ..., 8192 tokens")
};
using EmbeddingScorer = std::function<TruncatedEmbeddingScores(const std::vector<int64_t>& ranks,
                                                               const AnalysisParams&, const TaskContext&)>;

// What the analyses may ask of a model beyond its weights; analysis/ runs no models, the caller supplies
// these (app/workflows/model_runner.hpp). Either may be empty: analyses that need it then say why they cannot
// run.
struct ModelServices {
  ModelRunner runModel;  // the model over text (activations)
  EmbeddingScorer scoreTruncatedEmbedding;
};

struct AnalysisInput {
  const Checkpoint& checkpoint;
  const ModelView& view;
  LinalgBackend& backend;
  ModelServices services;
};

// An immutable result of any kind, shared between threads; resultAs<T>() gives it typed (nullptr when it is
// empty or of another kind).
using AnalysisResult = std::shared_ptr<const std::any>;
template <class T>
const T* resultAs(const AnalysisResult& r) {
  return r ? std::any_cast<T>(r.get()) : nullptr;
}
template <class T>
AnalysisResult makeResult(T value) {
  return std::make_shared<const std::any>(std::in_place_type<T>, std::move(value));
}

struct AnalysisKind {
  std::string_view id;       // "spectra": the CLI flag --spectra, and the name results are kept under
  std::string_view jsonKey;  // its section of the report ("spectra", "head_differences", ...)
  std::string_view title;    // for people: "singular-value spectra"
  bool inDefaultSet = true;  // run by `analyze` without flags and by the GUI when a model opens
  // Why it cannot run on this model ("" when it can): heads unknown, one layer, no model runner, ...
  std::function<std::string(const AnalysisInput&)> unavailable;
  std::function<AnalysisResult(const AnalysisInput&, const AnalysisParams&, const TaskContext&)> run;
  std::function<Json(const AnalysisResult&)> toJson;
  std::function<AnalysisResult(const Json&)> fromJson;
};

const std::vector<AnalysisKind>& analysisKinds();
const AnalysisKind* findAnalysis(std::string_view id);  // by id or by JSON key
const AnalysisKind& analysis(std::string_view id);      // throws a named Error listing the ids

}  // namespace sharelens
