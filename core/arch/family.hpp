// Architecture families. Each family is one adapter that recognises a checkpoint and builds its ModelView;
// the adapters are listed in one registry, and openModelView() picks the best match.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/checkpoint.hpp"
#include "core/model_view.hpp"

namespace sharelens {

// How a family's forward pass computes, kept beside its tensor-name table (llama.cpp's per-architecture
// tables are the model): the forward pass reads these instead of switching on the family, so a new family is
// its adapter file and nothing else.
struct ForwardTraits {
  enum class Norm : uint8_t { Rms, Layer };
  enum class Positions : uint8_t { Rope, Learned };
  // The FFN's form with the family's default activation: gated SiLU, gated tanh-GELU, ungated tanh-GELU. A
  // config.json's own activation (activationFields) replaces the default; the gating stays the family's.
  enum class Mlp : uint8_t { SwiGlu, GeGluTanh, GeluTanh };
  Norm norm = Norm::Rms;
  bool normWeightPlusOne = false;           // RMSNorm scales by (1 + w) (Gemma)
  bool scaleEmbeddingBySqrtHidden = false;  // embeddings x sqrt(d), in the weights' dtype (Gemma)
  Positions positions = Positions::Rope;
  Mlp mlp = Mlp::SwiGlu;
  bool sandwichNorms = false;        // a norm after attention and after the FFN as well (Gemma 3)
  bool slidingWindowLayers = false;  // some layers attend within a window with their own RoPE base (Gemma 3)
  // Every layer attends within config.json's sliding_window when it is set and not null, unless
  // use_sliding_window is false (Phi-3, Mistral) -- for the model_type slidingWindowModelType only when it is
  // set (transformers' Llama ignores a sliding_window; its Mistral applies it).
  bool slidingWindowAllLayers = false;
  std::string_view slidingWindowModelType;
  bool queryPreAttnScalar = false;  // attention scale 1 / sqrt(query_pre_attn_scalar) (Gemma 3)
  std::string_view normEpsField = "rms_norm_eps";
  double normEpsDefault = 1e-6;
  double ropeThetaDefault = 10000.0;
  // config.json fields naming the FFN activation, first found wins (Hugging Face: hidden_act; Gemma 3:
  // hidden_activation; GPT-2: activation_function).
  std::array<std::string_view, 2> activationFields = {"hidden_act", ""};
};

class FamilyAdapter {
 public:
  virtual ~FamilyAdapter() = default;
  virtual Family family() const = 0;
  virtual std::string_view name() const = 0;  // familyName(): "llama", "phi3", ...
  virtual const ForwardTraits& traits() const = 0;
  // The config.json model_type values this family claims (for messages; ShareLens's own has none).
  virtual std::vector<std::string_view> modelTypes() const = 0;
  // How well this family explains the checkpoint: 0 = not at all; a config.json model_type match scores
  // 100, tensor-name evidence 10..30. The highest score wins.
  virtual int score(const Checkpoint& checkpoint) const = 0;
  virtual ModelView build(const Checkpoint& checkpoint) const = 0;
};

const std::vector<const FamilyAdapter*>& familyAdapters();

// The best-scoring adapter, or nullptr when no family recognises the checkpoint.
const FamilyAdapter* detectFamily(const Checkpoint& checkpoint);

// The forward traits of a family (from its adapter).
const ForwardTraits& forwardTraits(Family family);

// The window every layer attends within (ForwardTraits::slidingWindowAllLayers: Mistral, Phi-3):
// config.json's sliding_window when the family applies it to this model_type, it is set and not null, and
// use_sliding_window is not false; nullopt otherwise. `config` is the (text) config; a window that is not a
// positive number of tokens is a named Error at `where`. The forward pass applies it and post-training
// refuses it, from here.
std::optional<int64_t> everyLayerSlidingWindow(const ModelView& view, const Json& config,
                                               const std::string& where);

// Detects the family and builds the view. Throws a named Error when no family fits.
ModelView openModelView(const Checkpoint& checkpoint);

// The families' adapters (defined one per file in core/arch/).
#define SHARELENS_FAMILY(id, adapter) const FamilyAdapter& adapter();
#include "core/arch/family_list.def"
#undef SHARELENS_FAMILY

// config.json's model_type, looking inside text_config too; empty when absent.
std::string configModelType(const Checkpoint& checkpoint);

}  // namespace sharelens
