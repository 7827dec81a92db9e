// DirectShare (head-wise shareable attention, DESIGN.md section 4): score head pairs across layers by the
// cosine similarity of [W_q || W_k] (GQA: the query head with its group's key head), find each head's best
// match in earlier layers, and choose pairs for a sharing ratio alpha: the later head reuses the earlier
// one's weights. The shared model can be written as a checkpoint the model views open.
#pragma once

#include <filesystem>
#include <vector>

#include "analysis/weights.hpp"

namespace sharelens {

struct HeadRef {
  int64_t layer = 0, head = 0;
};

struct HeadMatch {
  HeadRef target;  // the later head, which gives up its weights
  HeadRef source;  // the earlier head, which is kept
  float similarity = 0;
};

struct DirectShareResult {
  int64_t layers = 0, heads = 0;
  std::vector<float> similarity;         // (layers*heads)^2, row-major; index = layer * heads + head
  std::vector<HeadMatch> bestMatches;    // each head of layer >= 1 with its best earlier head, best first
  double ratio = 0;                      // requested: the fraction of all heads that become shared
  std::vector<HeadMatch> chosen;         // no head is both a target and a source
  int64_t parametersPerPair = 0;         // Q slice (+ K slice when every query head has its own key head)
  int64_t parametersSaved = 0;
  int64_t parametersTotal = 0;
  std::string sharedProjections;         // "q,k" (MHA) or "q" (GQA: key heads serve whole groups)

  float similarityOf(const HeadRef& a, const HeadRef& b) const {
    return similarity[static_cast<size_t>((a.layer * heads + a.head) * layers * heads + b.layer * heads + b.head)];
  }
};

DirectShareResult computeDirectShare(const Checkpoint& ckpt, const ModelView& view, double ratio,
                                     const TaskContext& ctx);

// Writes OUT_DIR/model.safetensors (+ config.json) with each chosen target head's Q (and K, for MHA) rows
// replaced by its source's, in the original dtype; the pairs are recorded in the file's metadata under
// "sharelens.directshare".
void writeDirectSharedCheckpoint(const Checkpoint& ckpt, const ModelView& view, const DirectShareResult& result,
                                 const std::filesystem::path& outDir);

}  // namespace sharelens
