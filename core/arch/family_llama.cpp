// Llama 2/3, Mistral and SmolLM: model.layers.{L}.self_attn.{q,k,v,o}_proj, mlp.{gate,up,down}_proj,
// input_layernorm / post_attention_layernorm, model.norm, lm_head (absent when tied).
#include "core/arch/hf_decoder.hpp"

namespace sharelens {

const FamilyAdapter& llamaAdapter() {
  static const DecoderAdapter adapter(DecoderLayout{
      .family = Family::Llama,
      .name = "llama",
      .modelTypes = {"llama", "mistral", "smollm3"},
      .prefixes = {"model."},
      .embedding = "embed_tokens.weight",
      .finalNorm = "norm.weight",
      .outputHeads = {"lm_head.weight"},
      .proj = kHfDecoderProj,
      .qkvBias = {},
      // NormSlot order: AttnIn, AttnOut, FfnIn, FfnOut, QNorm, KNorm
      .norms = {"input_layernorm.weight", "", "post_attention_layernorm.weight", "", "", ""},
      .tiedByDefault = false,
      .defaults = {{"vocab_size", 32000},
                   {"hidden_size", 4096},
                   {"intermediate_size", 11008},
                   {"num_hidden_layers", 32},
                   {"num_attention_heads", 32},
                   {"max_position_embeddings", 2048}},
      // Mistral 7B v0.1's sliding_window: 4096
      .traits = {.slidingWindowAllLayers = true, .slidingWindowModelType = "mistral"},
  });
  return adapter;
}

}  // namespace sharelens
