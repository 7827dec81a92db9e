// Gemma 3: explicit head_dim (not hidden / heads), q/k RMS norms, four norms per layer, tied embeddings.
// The multimodal checkpoints (Gemma3ForConditionalGeneration) nest the text model's config under
// "text_config" and its tensors under "model.language_model." (transformers >= 4.52) or
// "language_model.model." (earlier); the vision tower is ignored.
#include "core/arch/hf_decoder.hpp"

namespace sharelens {

const FamilyAdapter& gemma3Adapter() {
  static const DecoderAdapter adapter(DecoderLayout{
      .family = Family::Gemma3,
      .name = "gemma3",
      .modelTypes = {"gemma3", "gemma3_text"},
      .prefixes = {"model.", "model.language_model.", "language_model.model."},
      .embedding = "embed_tokens.weight",
      .finalNorm = "norm.weight",
      .outputHeads = {"lm_head.weight", "language_model.lm_head.weight"},
      .proj = kHfDecoderProj,
      .qkvBias = {},
      // NormSlot order: AttnIn, AttnOut, FfnIn, FfnOut, QNorm, KNorm
      .norms = {"input_layernorm.weight", "post_attention_layernorm.weight",
                "pre_feedforward_layernorm.weight", "post_feedforward_layernorm.weight",
                "self_attn.q_norm.weight", "self_attn.k_norm.weight"},
      .evidence = {"self_attn.q_norm.weight", "pre_feedforward_layernorm.weight"},
      .ignoredPrefixes = {"vision_tower.", "multi_modal_projector.", "model.vision_tower.",
                          "model.multi_modal_projector."},
      .textConfigKey = "text_config",
      .tiedByDefault = true,
      // Gemma3TextConfig's defaults; the multimodal checkpoints' text_config relies on them.
      .defaults = {{"vocab_size", 262208},
                   {"hidden_size", 2304},
                   {"intermediate_size", 9216},
                   {"num_hidden_layers", 26},
                   {"num_attention_heads", 8},
                   {"num_key_value_heads", 4},
                   {"head_dim", 256},
                   {"max_position_embeddings", 131072}},
      .traits = {.normWeightPlusOne = true,
                 .scaleEmbeddingBySqrtHidden = true,
                 .mlp = ForwardTraits::Mlp::GeGluTanh,
                 .sandwichNorms = true,
                 .slidingWindowLayers = true,
                 .queryPreAttnScalar = true,
                 .ropeThetaDefault = 1e6,
                 .activationFields = {"hidden_activation", "hidden_act"}},
  });
  return adapter;
}

}  // namespace sharelens
