// Exact parameter accounting of a topology, by group, plus the estimates a designer needs: FLOPs per token,
// training memory, and the parameter-matched unshared baseline. The trainer's tests check that the counts
// equal the element counts of the LibTorch model built from the same topology.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "core/topology.hpp"

namespace sharelens {

enum class ParamGroup : uint8_t { Embedding, OutputHead, Attention, Ffn, Lora, MasaAtoms, MasaCoefficients, Norms };
inline constexpr int kParamGroupCount = 8;
std::string_view paramGroupName(ParamGroup g);  // "embedding", "output_head", ...

struct ParamBudget {
  std::array<int64_t, kParamGroupCount> groups{};
  int64_t total = 0;           // unique parameters: what the model holds and the checkpoint stores
  int64_t denseEquivalent = 0; // parameters of the vanilla model with the same dims (what sharing saves against)
  double rho = 0;              // embedding proportion (embedding + output head) / total
  double trainFlopsPerToken = 0;   // 6 N_applied + 12 L H hd T (PaLM's convention), N_applied excludes lookups
  double forwardFlopsPerToken = 0;
  int64_t of(ParamGroup g) const { return groups[static_cast<int>(g)]; }
};

ParamBudget countParameters(const Topology& topology);

// Training memory in bytes for fp32 AdamW: weights, gradients and two moments (16 B per parameter), plus
// activations for `batch` sequences of the full context (Korthikanti et al.'s per-layer estimate, in fp32)
// and the logits.
struct MemoryEstimate {
  double parameterBytes = 0;
  double activationBytes = 0;
  double total() const { return parameterBytes + activationBytes; }
};
MemoryEstimate estimateTrainingMemory(const Topology& topology, int64_t batch);

// The unshared model (vanilla layers, no LoRA, no head sharing, no MASA, no ties, unfactorised embedding of the
// same tying) with the same depth, heads, vocab and context whose parameter count matches `topology`'s within
// 0.5%: d_model and ffn_dim shrink by one common factor, d_model rounds to a multiple of 2 x heads, and
// ffn_dim is then solved exactly. Throws a named Error when no such model exists.
Topology parameterMatchedBaseline(const Topology& topology);

}  // namespace sharelens
