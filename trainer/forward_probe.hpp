// Runs a checkpoint forward over real text and hands back what the activation analyses need (DESIGN.md
// section 4): each layer's contribution to the residual stream dh_l = h_l - h_{l-1} over N tokens, the
// logit-lens KL drift between consecutive layers, and the similarity of attention maps between heads over
// sample text. Torch-free interface; the effective-rank maps are computed by analysis/.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/activation_data.hpp"
#include "core/float_matrix.hpp"
#include "core/task.hpp"

namespace sharelens {

class Checkpoint;

struct ProbeOptions {
  int64_t tokens = 25000;        // tokens of text for the layer-output differences
  std::string corpus = "brown";  // a named corpus (core/corpus.hpp) or a directory of .txt files
  int64_t chunk = 512;           // tokens per forward pass (capped at the model's context)
  // The logit lens behind the KL drift between consecutive layers (DESIGN.md section 4):
  //   "per-sample"  the MASA paper's grouping probe (default): for each sample (a window of `chunk` tokens)
  //                 p_{s,l} = softmax(W_U h̄_{s,l}), the output projection applied to block l's output
  //                 averaged over the sample's tokens; p_l = the mean over samples ("average across
  //                 samples"); drift_l = KL(p_l || p_{l+1})
  //   "mean-state"  ours, earlier default: one p_l = softmax(W_U h̄_l) of the mean over all the tokens
  //   "per-token"   the older reading: the mean over the first whole windows that hold at least
  //                 logitLensTokens tokens of the per-token KL between softmax(W_U norm(h_l,t)) and
  //                 softmax(W_U norm(h_{l+1},t)), final norm applied. Their residual streams after every
  //                 layer are kept until the last layer (layers x tokens x d floats: 268 MB for 2,048 tokens
  //                 of a 1B model), and each window's logits read the output head once per layer
  std::string logitLens = "per-sample";
  int64_t logitLensTokens = 2048;  // "per-token" only: how many tokens go through the V-wide softmaxes
  int64_t attentionTokens = 128;   // one sample sequence for the attention maps
  std::string device = "cpu";
  int threads = 0;
  std::vector<int> tokenIds;  // when given: these tokens instead of the corpus text
};

ActivationData probeCheckpoint(const std::filesystem::path& checkpointPath, const ProbeOptions& options,
                               const TaskContext& ctx);

// Hidden states (embeddings, then after each layer) and, last, the logits of one token sequence.
std::vector<FloatMatrix> hiddenStates(const Checkpoint& ckpt, const std::vector<int>& tokens);

}  // namespace sharelens
