// Qwen3 (0.6B .. 32B dense): the Llama layout without q/k/v biases, plus a per-head RMSNorm on the queries
// and keys (self_attn.q_norm / k_norm, weight of size head_dim, applied before RoPE) -- Qwen3 Technical
// Report (2025), section 2: "we remove QKV-bias used in Qwen2 and introduce QK-Norm". head_dim is its own
// config field (128), not hidden_size / heads.
#include "core/arch/hf_decoder.hpp"

namespace sharelens {

const FamilyAdapter& qwen3Adapter() {
  static const DecoderAdapter adapter(DecoderLayout{
      .family = Family::Qwen3,
      .name = "qwen3",
      .modelTypes = {"qwen3"},
      .prefixes = {"model."},
      .embedding = "embed_tokens.weight",
      .finalNorm = "norm.weight",
      .outputHeads = {"lm_head.weight"},
      .proj = kHfDecoderProj,
      .qkvBias = {},
      // NormSlot order: AttnIn, AttnOut, FfnIn, FfnOut, QNorm, KNorm
      .norms = {"input_layernorm.weight", "", "post_attention_layernorm.weight", "",
                "self_attn.q_norm.weight", "self_attn.k_norm.weight"},
      .evidence = {"self_attn.q_norm.weight"},
      .tiedByDefault = false,
      // Qwen3Config's defaults (transformers 4.51).
      .defaults = {{"vocab_size", 151936},
                   {"hidden_size", 4096},
                   {"intermediate_size", 22016},
                   {"num_hidden_layers", 32},
                   {"num_attention_heads", 32},
                   {"num_key_value_heads", 32},
                   {"head_dim", 128},
                   {"max_position_embeddings", 32768}},
  });
  return adapter;
}

}  // namespace sharelens
