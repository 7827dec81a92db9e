// DirectShare (head-wise shareable attention, Cao et al. 2024, Eq. 3 and Algorithms 1-2; DESIGN.md section
// 4).
//
// The unit of sharing is an attention head with its own key and value (MHA), or, for GQA/MQA models, a KV
// group: its query heads, its key head and its value head. A unit's signature is vec([W_q ; W_k]) -- the
// query rows of the unit stacked on its key rows -- and two units are scored by the cosine of their
// signatures (Eq. 3). Every unit of a layer >= 1 finds its most similar unit in the earlier layers; the
// matches are sorted by score and the best ones are taken until the sharing ratio
//     alpha = shared units / all units
// is reached. A chosen pair shares W_q, W_k and W_v (Sec. 4.1, Eq. 4): the later (target) unit reuses the
// earlier (source) unit's weights, biases included. The shared model is written as a checkpoint the model
// views open, the forward pass runs and `sharelens eval` scores.
//
// Counting: the paper's Table 3 ("30% MHA": Llama2-7B 6.74B -> 6.09B, 13B 13.02B -> 11.76B) is reproduced
// only when each shared head also gives up its columns of W_o, i.e. alpha is the share of the attention
// block's parameters removed (QKV alone gives 6.26B and 12.07B). Both counts are reported: what the written
// model saves (Q, K, V) and what Table 3 counts (Q, K, V, O); test DirectShare.Table3RowsFromShapes.
#pragma once

#include <filesystem>
#include <vector>

#include "analysis/analysis_ids.hpp"
#include "analysis/weights.hpp"
#include "core/topology.hpp"

namespace sharelens {

struct UnitRef {
  int64_t layer = 0, unit = 0;  // unit: the head (MHA) or the KV group (GQA, MQA) within the layer
};

struct UnitMatch {
  UnitRef target;  // the later unit, which gives up its Q, K and V weights
  UnitRef source;  // the earlier unit, which is kept
  float similarity = 0;
};

// Parameters of one unit under GQA-aware shapes: its Q rows (query heads x head_dim), K and V rows (head_dim
// each), all x hidden, and its columns of W_o (hidden x its query rows). Weights only.
struct UnitParameters {
  int64_t qkv = 0, o = 0;
};
UnitParameters unitParameters(int64_t heads, int64_t kvHeads, int64_t headDim, int64_t hidden);

// [HSA] Table 3 from shapes: round(alpha * layers * kvHeads) units shared; the parameters that leaves when
// they give up Q, K and V (the text), and Q, K, V and O (the table's counts).
struct DirectShareCount {
  int64_t units = 0, savedQkv = 0, savedQkvo = 0;
};
DirectShareCount directShareCount(int64_t layers, int64_t heads, int64_t kvHeads, int64_t headDim,
                                  int64_t hidden, double alpha);

struct DirectShareResult {
  int64_t layers = 0;
  int64_t units = 0;  // per layer: kv_heads (= heads for MHA)
  int64_t queryHeadsPerUnit = 1;
  std::string unitKind;                // "head" (MHA) or "kv_group" (GQA, MQA)
  std::vector<float> similarity;       // (layers * units)^2, row-major; index = layer * units + unit
  std::vector<UnitMatch> bestMatches;  // each unit of layer >= 1 with its best earlier unit, best first
  double ratio = 0;                    // requested alpha
  std::vector<UnitMatch> chosen;       // the shared pairs; no unit is both a target and a source
  int64_t parametersPerUnit = 0;       // Q, K, V weights (and biases) of one unit
  int64_t oParametersPerUnit = 0;      // its columns of W_o (counted by Table 3, not shared by the writer)
  int64_t parametersSaved = 0;         // by the written model: Q, K, V of every chosen unit
  int64_t parametersTotal = 0;
  int64_t attentionParameters = 0;  // Q, K, V and O weights and biases of every layer

  // What Table 3 counts for the same pairs: Q, K, V and O.
  int64_t parametersSavedWithO() const {
    return (parametersPerUnit + oParametersPerUnit) * static_cast<int64_t>(chosen.size());
  }
  // The share of the attention block's parameters removed (Table 3's "30% MHA" is 0.30 of it with O).
  double savedShareOfAttention(bool withO) const {
    return attentionParameters > 0 ? static_cast<double>(withO ? parametersSavedWithO() : parametersSaved) /
                                         static_cast<double>(attentionParameters)
                                   : 0.0;
  }

  double achievedRatio() const {
    return layers * units > 0 ? static_cast<double>(chosen.size()) / static_cast<double>(layers * units)
                              : 0.0;
  }
  float similarityOf(const UnitRef& a, const UnitRef& b) const {
    return similarity[static_cast<size_t>((a.layer * units + a.unit) * layers * units + b.layer * units +
                                          b.unit)];
  }
};

DirectShareResult computeDirectShare(const Checkpoint& ckpt, const ModelView& view, double ratio,
                                     const TaskContext& ctx);

// The pairs for `ratio` from a result's best matches (what the GUI's ratio slider recomputes without reading
// the weights again). Fills result.chosen, result.ratio and the parameter counts.
void chooseSharedPairs(DirectShareResult& result, double ratio);

// The unshared topology of the checkpoint's shape with the chosen pairs as tied heads (what the Designer
// receives to train a model that shares those units from the start). A named Error when the shape does not
// fit a topology.
Topology tiedHeadTopology(const ModelView& view, const DirectShareResult& result, const std::string& name);

// Checks that the checkpoint's attention weights can be edited in place (plain tensors, as Hugging Face
// checkpoints store them); a named Error before anything is written otherwise.
void checkDirectShareWritable(const Checkpoint& ckpt, const ModelView& view);

// Writes OUT_DIR/model.safetensors with each chosen target unit's Q, K and V rows (and biases) replaced by
// its source's, in the original dtypes, beside copies of config.json and the tokenizer, so that the result
// opens, runs and evaluates like the original; the pairs are recorded in the metadata under
// "sharelens.directshare".
void writeDirectSharedCheckpoint(const Checkpoint& ckpt, const ModelView& view,
                                 const DirectShareResult& result, const std::filesystem::path& outDir);

// Its typed id (AnalysisId<T>: analysis_ids.hpp), from which registry.cpp builds its entry and by which
// views and the CLI ask for its result (`results.get(analyses::kX)` is the result typed).
namespace analyses {
inline constexpr AnalysisId<DirectShareResult> kDirectShare{"directshare"};
}  // namespace analyses

}  // namespace sharelens
