// Exact parameter accounting of a topology, by group, plus the estimates a designer needs: FLOPs per token,
// training memory, and the parameter-matched unshared baseline. The trainer's tests check that the counts
// equal the element counts of the LibTorch model built from the same topology.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/topology.hpp"

namespace sharelens {

enum class ParamGroup : uint8_t {
  Embedding,
  OutputHead,
  Attention,
  Ffn,
  Lora,
  MasaAtoms,
  MasaCoefficients,
  Norms
};
inline constexpr int kParamGroupCount = 8;
std::string_view paramGroupName(ParamGroup g);  // "embedding", "output_head", ...

struct ParamBudget {
  std::array<int64_t, kParamGroupCount> groups{};
  int64_t total = 0;  // unique parameters: what the model holds and the checkpoint stores
  int64_t nonEmbedding =
      0;  // total minus the embedding and output head: the low-rank sharing paper's model size
  int64_t denseEquivalent =
      0;           // parameters of the vanilla model with the same dims (what sharing saves against)
  double rho = 0;  // embedding proportion (embedding + output head) / total
  double trainFlopsPerToken = 0;  // 6 N_applied + 12 L H hd T (PaLM's convention), N_applied excludes lookups
  double forwardFlopsPerToken = 0;
  int64_t of(ParamGroup g) const { return groups[static_cast<int>(g)]; }
};

ParamBudget countParameters(const Topology& topology);

// Training memory in bytes for fp32 AdamW: weights, gradients and two moments (16 B per parameter), plus
// what the CPU training step keeps for the backward for `batch` sequences of the full context: each layer's
// saved activations and effective weights, and the logits with their gradient (the tensors are listed in
// the definition). It is the CPU step's: on CUDA the composite RMSNorm, RoPE and SwiGLU keep more
// intermediates, and LibTorch's fused attention no probabilities.
struct MemoryEstimate {
  double parameterBytes = 0;
  double activationBytes = 0;
  double total() const { return parameterBytes + activationBytes; }
};
MemoryEstimate estimateTrainingMemory(const Topology& topology, int64_t batch);

// The parameter-matched baseline as the low-rank sharing paper builds it: the unshared model (vanilla layers,
// no LoRA, head sharing, MASA or ties) at the depth of the unshared reference (the 1x depth of a
// depth-multiplied preset), with the same heads, vocab, context and embedding treatment (tied or not, and a
// factorised embedding's rank carried over), whose NON-EMBEDDING parameter count matches `topology`'s within
// 0.5%: d_model, head_dim and ffn_dim shrink by one common factor ("uniformly shrinking model dimensions",
// [LRS] Sec. 4; head_dim even, d_model = heads x head_dim when the topology has that shape), then ffn_dim is
// solved exactly for the width just below and just above that factor (head_dim even), and of those that fit
// (within 0.5%, a factorised embedding's rank below d_model) the one whose FFN shrinks by the factor nearest
// the width's is kept. Throws a named Error when no such model exists.
Topology parameterMatchedBaseline(const Topology& topology);

// The depth of the unshared model a (possibly depth-multiplied) topology is compared with.
int64_t referenceDepth(const Topology& topology);

// Which parameters a budget counts: the transformer's alone (the paper's model sizes), or all of them (its
// Table 3 matches a narrower skinny model, whose embeddings are smaller, on the total).
enum class ParameterScope { NonEmbedding, Total };

// The inverse problem the paper also solves: the LoRA rank that brings `topology`'s parameters (in `scope`)
// to `budget` within 0.5%, or within half a rank's parameters where one rank is worth more than 1% (deep
// small models). `which`: "layer" (the per-layer LoRA of shared attention and FFN blocks) or "head"
// (the per-head LoRA of head sharing). Returns the topology with that rank; throws a named Error (with the
// nearest reachable counts) when no rank meets the budget.
Topology solveLoraRank(const Topology& topology, int64_t budget, const std::string& which,
                       ParameterScope scope = ParameterScope::NonEmbedding);

// "1" -> 1, "1.5" -> 1.5, "skinny" -> 3 (Table 3's skinny rows are 3-3.75x deep; ours 3x); throws a named
// Error for anything else.
double depthFactor(const std::string& multiplier);

}  // namespace sharelens
