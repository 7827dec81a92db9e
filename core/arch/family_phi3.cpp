// Phi-3 (Phi-3-mini/-small-style Phi3ForCausalLM, model_type "phi3"): the Llama decoder with Q, K and V
// row-stacked in one self_attn.qkv_proj ([Q; K; V]: heads x head_dim, then kv_heads x head_dim twice) and
// the FFN's gate and up halves in one mlp.gate_up_proj ([gate; up], SiLU(gate) * up); every layer attends
// within config.json's sliding_window, and rope_scaling may be "longrope" (the 128k models' short and long
// per-frequency factors). transformers' modeling_phi3.py and configuration_phi3.py are the description.
#include "core/arch/hf_decoder.hpp"

namespace sharelens {

const FamilyAdapter& phi3Adapter() {
  static const DecoderAdapter adapter(DecoderLayout{
      .family = Family::Phi3,
      .name = "phi3",
      .modelTypes = {"phi3"},
      .prefixes = {"model."},
      .embedding = "embed_tokens.weight",
      .finalNorm = "norm.weight",
      .outputHeads = {"lm_head.weight"},
      .proj = {"", "", "", "self_attn.o_proj.weight", "", "", "mlp.down_proj.weight"},
      .packed = {{"self_attn.qkv_proj.weight", {Proj::Q, Proj::K, Proj::V}},
                 {"mlp.gate_up_proj.weight", {Proj::Gate, Proj::Up}}},
      .qkvBias = {},
      // NormSlot order: AttnIn, AttnOut, FfnIn, FfnOut, QNorm, KNorm
      .norms = {"input_layernorm.weight", "", "post_attention_layernorm.weight", "", "", ""},
      .evidence = {"self_attn.qkv_proj.weight"},
      .tiedByDefault = false,
      // Phi3Config's defaults (Phi-3-mini).
      .defaults = {{"vocab_size", 32064},
                   {"hidden_size", 3072},
                   {"intermediate_size", 8192},
                   {"num_hidden_layers", 32},
                   {"num_attention_heads", 32},
                   {"max_position_embeddings", 4096}},
      .traits = {.slidingWindowAllLayers = true, .normEpsDefault = 1e-5},
  });
  return adapter;
}

}  // namespace sharelens
