// What running a model over text measures (trainer/forward_probe.cpp fills it; analysis/activations.cpp
// turns it into rank maps and MASA groups): one type from the forward pass to the report, so a new field is
// added once (issue 38: it was copied field by field through three structs). Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/float_matrix.hpp"

namespace sharelens {

// Everything but the residual contributions: what a report keeps of the pass.
struct ActivationSummary {
  std::string corpus;         // the text's corpus, or "token ids" when the caller gave the ids
  std::string tokenizer;      // what tokenised the text
  std::vector<int> tokenIds;  // the tokens that went through the model
  int64_t tokens = 0, layers = 0, hidden = 0, heads = 0;
  std::vector<double> klDrift;          // KL(p_l || p_{l+1}), l = 0..layers-2, over layer outputs
  int64_t logitLensTokens = 0;          // the tokens the drift was computed over
  FloatMatrix attentionSimilarity;      // (layers * heads)^2 cosine similarity of attention maps
  std::vector<std::string> headLabels;  // "L3.h5"
  int64_t attentionTokens = 0;          // the sample's length: min(attentionTokens, context, tokens)
  double forwardSeconds = 0, logitLensSeconds = 0;
  int64_t peakResidentBytes = 0;  // of the process, after the forward passes
};

// The whole measurement: the summary plus each layer's contribution to the residual stream (large: layers x
// tokens x hidden floats, not kept in reports).
struct ActivationData : ActivationSummary {
  std::vector<FloatMatrix> residualDeltas;  // layers x [tokens, hidden]: dh_l = h_l - h_{l-1}
};

}  // namespace sharelens
