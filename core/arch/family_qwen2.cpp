// Qwen2 / Qwen2.5: the Llama layout plus biases on the q, k and v projections.
#include "core/arch/hf_decoder.hpp"

namespace sharelens {

const FamilyAdapter& qwen2Adapter() {
  static const DecoderAdapter adapter(DecoderLayout{
      .family = Family::Qwen2,
      .name = "qwen2",
      .modelTypes = {"qwen2"},
      .prefixes = {"model."},
      .embedding = "embed_tokens.weight",
      .finalNorm = "norm.weight",
      .outputHeads = {"lm_head.weight"},
      .proj = kHfDecoderProj,
      .qkvBias = {"self_attn.q_proj.bias", "self_attn.k_proj.bias", "self_attn.v_proj.bias"},
      .qkvBiasExpected = true,
      // NormSlot order: AttnIn, AttnOut, FfnIn, FfnOut, QNorm, KNorm
      .norms = {"input_layernorm.weight", "", "post_attention_layernorm.weight", "", "", ""},
      .evidence = {"self_attn.q_proj.bias"},
      .tiedByDefault = false,
      .defaults = {{"vocab_size", 151936},
                   {"hidden_size", 4096},
                   {"intermediate_size", 22016},
                   {"num_hidden_layers", 32},
                   {"num_attention_heads", 32},
                   {"num_key_value_heads", 32},
                   {"max_position_embeddings", 32768}},
  });
  return adapter;
}

}  // namespace sharelens
