// Tensor names of ShareLens's own checkpoints: every unique weight once, shaped as trained, and the
// topology in the safetensors metadata under kTopologyMetadataKey. The trainer writes these names and
// core/arch/family_sharelens.cpp reads them back into the canonical view; both use this one table.
//
//   tok_embeddings.weight            [V, d]            (or .E [V, r_e] and .P [r_e, d] when factorised)
//   output.weight                    [V, d]            untied output head (or .E [V, r_e] and .P [r_e, d]:
//   its own
//                                                      factorisation when the untied embedding is factorised)
//   norm.weight                      [d]               final RMSNorm
//   layers.{l}.attention_norm.weight [d]               per layer, never shared
//   layers.{l}.ffn_norm.weight       [d]
//   attn_blocks.{u}.w{q,k,v,o}       [out, in]         a unique attention block (Q/K compact with tied heads)
//   attn_blocks.{u}.{q,k,v}_base     [hd, d]           head sharing: the base every head adds its LoRA to
//   attn_blocks.{u}.qkv_base         [hd, d]           QKV sharing: one base for Q, K and V
//   attn_blocks.{u}.{p}_head_lora_A  [heads, hd, r]    W_i = W_base + A_i B_i
//   attn_blocks.{u}.{p}_head_lora_B  [heads, r, d]
//   ffn_blocks.{u}.w_{gate,up,down}  [out, in]
//   layers.{l}.lora_{p}.A            [r, in]           per-layer LoRA on a shared block: W_l = W_u + B A
//   layers.{l}.lora_{p}.B            [out, r]
//   masa.{p}.group{g}.atoms          [S, out, in]      MASA dictionary of group g
//   masa.{p}.coefficients            [L, S]            W_l = sum_s c_{l,s} D_s (MLP coefficients folded)
#pragma once

#include <string>

#include "core/model_view.hpp"

namespace sharelens::names {

inline constexpr const char* kTopologyMetadataKey = "sharelens.topology";
inline constexpr const char* kEmbedding = "tok_embeddings.weight";
inline constexpr const char* kEmbeddingE = "tok_embeddings.E";
inline constexpr const char* kEmbeddingP = "tok_embeddings.P";
inline constexpr const char* kOutput = "output.weight";
inline constexpr const char* kOutputE = "output.E";
inline constexpr const char* kOutputP = "output.P";
inline constexpr const char* kFinalNorm = "norm.weight";

inline std::string attnNorm(int64_t layer) {
  return "layers." + std::to_string(layer) + ".attention_norm.weight";
}
inline std::string ffnNorm(int64_t layer) {
  return "layers." + std::to_string(layer) + ".ffn_norm.weight";
}
inline std::string attnWeight(int64_t block, Proj p) {
  return "attn_blocks." + std::to_string(block) + ".w" + std::string(projName(p));
}
inline std::string headBase(int64_t block, Proj p) {
  return "attn_blocks." + std::to_string(block) + "." + std::string(projName(p)) + "_base";
}
inline std::string qkvBase(int64_t block) {
  return "attn_blocks." + std::to_string(block) + ".qkv_base";
}
inline std::string headLoraA(int64_t block, Proj p) {
  return "attn_blocks." + std::to_string(block) + "." + std::string(projName(p)) + "_head_lora_A";
}
inline std::string headLoraB(int64_t block, Proj p) {
  return "attn_blocks." + std::to_string(block) + "." + std::string(projName(p)) + "_head_lora_B";
}
inline std::string ffnWeight(int64_t block, Proj p) {
  return "ffn_blocks." + std::to_string(block) + ".w_" + std::string(projName(p));
}
inline std::string layerLoraA(int64_t layer, Proj p) {
  return "layers." + std::to_string(layer) + ".lora_" + std::string(projName(p)) + ".A";
}
inline std::string layerLoraB(int64_t layer, Proj p) {
  return "layers." + std::to_string(layer) + ".lora_" + std::string(projName(p)) + ".B";
}
inline std::string masaAtoms(Proj p, int64_t group) {
  return "masa." + std::string(projName(p)) + ".group" + std::to_string(group) + ".atoms";
}
inline std::string masaCoefficients(Proj p) {
  return "masa." + std::string(projName(p)) + ".coefficients";
}

// Hugging Face Llama names, for unshared models and for exports with materialised per-layer weights.
namespace hf {
inline constexpr const char* kEmbedding = "model.embed_tokens.weight";
inline constexpr const char* kFinalNorm = "model.norm.weight";
inline constexpr const char* kOutput = "lm_head.weight";
inline std::string layer(int64_t l) {
  return "model.layers." + std::to_string(l) + ".";
}
inline std::string proj(int64_t l, Proj p) {
  switch (p) {
    case Proj::Q:
      return layer(l) + "self_attn.q_proj.weight";
    case Proj::K:
      return layer(l) + "self_attn.k_proj.weight";
    case Proj::V:
      return layer(l) + "self_attn.v_proj.weight";
    case Proj::O:
      return layer(l) + "self_attn.o_proj.weight";
    case Proj::Gate:
      return layer(l) + "mlp.gate_proj.weight";
    case Proj::Up:
      return layer(l) + "mlp.up_proj.weight";
    case Proj::Down:
      return layer(l) + "mlp.down_proj.weight";
  }
  return {};
}
inline std::string attnNorm(int64_t l) {
  return layer(l) + "input_layernorm.weight";
}
inline std::string ffnNorm(int64_t l) {
  return layer(l) + "post_attention_layernorm.weight";
}
}  // namespace hf

}  // namespace sharelens::names
