// The LibTorch decoder built from a topology (trainer-internal: this header includes torch).
//
// Llama-3 style: RMSNorm, SwiGLU, RoPE (rotate-half, as Hugging Face's Llama), grouped-query causal
// attention. Parameters are a flat list named exactly as in the checkpoint (core/sharelens_names.hpp); a
// shared block is one tensor referenced by every layer that uses it, so it exists once in memory and its
// gradient accumulates over those layers. Each layer's effective matrices are composed in forward():
//   W_l = W_u (+ B_l A_l)            layer sharing with LoRA
//   W_{l,head i} = W_base + A_i B_i  head sharing / QKV sharing
//   W_l = sum_s c_{l,s} D_s          MASA (c from a table, or from an MLP of a block embedding)
//   tied units (DirectShare): a target unit's Q, K and V rows are its source unit's rows
#pragma once

#include <torch/types.h>

#include <map>
#include <string>
#include <vector>

#include "core/topology.hpp"

namespace sharelens {

struct NamedParameter {
  std::string name;
  torch::Tensor tensor;      // requires_grad
  bool decay = true;         // weight decay applies (not to norms)
  bool inCheckpoint = true;  // false for training-only parameters (the MASA coefficient MLP)
};

class SharedTransformer {
 public:
  SharedTransformer(const Topology& topology, torch::Device device, uint64_t seed);

  // tokens [B, T] (int64) -> logits [B, T, V]
  torch::Tensor forward(const torch::Tensor& tokens) const;
  // tokens [B, T + 1]: mean next-token cross-entropy over B x T positions
  torch::Tensor loss(const torch::Tensor& tokens) const;
  // PostShare (Eq. 4-5): gamma * (1/|pairs|) sum_pairs sum_{p in q,k,v} ||W_p(target) - W_p(source)||_F (0
  // when unused)
  torch::Tensor postSharePenalty() const;

  std::vector<NamedParameter>& parameters() { return m_params; }
  const std::vector<NamedParameter>& parameters() const { return m_params; }
  const torch::Tensor& parameter(const std::string& name) const;
  const Topology& topology() const { return m_topology; }
  int64_t parameterCount() const;  // unique elements, training-only MLP included

  // The layer's effective projection (out x in), composed as in forward().
  torch::Tensor effectiveWeight(int64_t layer, Proj p) const;
  // MASA coefficients [L, S] for projection p (the table, or the MLP's output).
  torch::Tensor masaCoefficients(Proj p) const;

  // The checkpoint's tensors (CPU float32): ShareLens names with MASA MLPs folded into coefficient tables,
  // or Hugging Face Llama names for unshared topologies.
  std::vector<std::pair<std::string, torch::Tensor>> checkpointTensors(bool hfLayout) const;
  // Copies values into parameters by (internal) name; every parameter must be present.
  void load(const std::map<std::string, torch::Tensor>& values, const std::string& source);

 private:
  torch::Tensor attentionWeight(int64_t layer, Proj p, const std::map<Proj, torch::Tensor>& masa) const;
  torch::Tensor feedForwardWeight(int64_t layer, Proj p) const;
  torch::Tensor withLayerLora(torch::Tensor w, int64_t layer, Proj p, const BlockSharing& sharing) const;
  torch::Tensor unitRowsOf(int64_t layer,
                           Proj p) const;  // Q, K or V of a layer with tied units, from compact storage

  Topology m_topology;
  torch::Device m_device;
  std::vector<NamedParameter> m_params;
  std::map<std::string, size_t> m_index;
  torch::Tensor m_cos, m_sin;  // [context, head_dim] RoPE tables
};

// Name of a parameter in the Hugging Face layout of an unshared model ("" when it has none).
std::string hfNameOf(const std::string& internalName);
std::string internalNameOfHf(const std::string& hfName);

}  // namespace sharelens
