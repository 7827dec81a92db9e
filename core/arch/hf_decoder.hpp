// The Hugging Face decoder layout shared by Llama (Mistral, SmolLM), Qwen2, Qwen3, Gemma 3 and Phi-3: q/k/v/o
// and gate/up/down Linear weights under "<prefix>layers.{L}.", each its own tensor or row-stacked in a fused
// one (Phi-3's qkv_proj and gate_up_proj). A family is a DecoderLayout table; one builder reads any of them
// (llama.cpp's per-architecture name tables are the model).
#pragma once

#include <array>
#include <set>
#include <string_view>
#include <vector>

#include "core/arch/family.hpp"

namespace sharelens {

// Names of the config.json fields that give the model's shape.
struct ConfigFieldNames {
  std::string_view hidden = "hidden_size";
  std::string_view layers = "num_hidden_layers";
  std::string_view heads = "num_attention_heads";
  std::string_view kvHeads = "num_key_value_heads";
  std::string_view headDim = "head_dim";
  std::string_view ffn = "intermediate_size";
  std::string_view vocab = "vocab_size";
  std::string_view context = "max_position_embeddings";
  std::string_view tie = "tie_word_embeddings";
};

// The largest context a config may declare (2^24 positions; the longest-context models ship about 2^20).
inline constexpr int64_t kMaxConfigContext = int64_t{1} << 24;

// transformers' config-class defaults, used for fields a config.json leaves out (Gemma 3's text_config
// omits the head counts, for example).
using ConfigDefaults = std::vector<std::pair<std::string_view, int64_t>>;

// The projection names every Hugging Face decoder family here uses, relative to "<prefix>layers.{L}."
// (Proj order: q, k, v, o, gate, up, down).
inline constexpr std::array<std::string_view, kProjCount> kHfDecoderProj = {
    "self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
    "self_attn.o_proj.weight", "mlp.gate_proj.weight",    "mlp.up_proj.weight",
    "mlp.down_proj.weight"};

// Projections stored row-stacked in one [out, in] tensor, relative to "<prefix>layers.{L}.": Phi-3's
// qkv_proj = [Q; K; V] and gate_up_proj = [gate; up]. Each part's rows follow from the shape: Q heads x
// head_dim, K and V kv_heads x head_dim, gate and up the FFN width.
struct PackedProjections {
  std::string_view tensor;
  std::vector<Proj> parts;  // in row order; their `proj` entries stay empty
};

struct DecoderLayout {
  Family family;
  std::string_view name;                          // familyName(): "llama", "phi3", ...
  std::vector<std::string_view> modelTypes;       // config.json model_type values this layout claims
  std::vector<std::string_view> prefixes;         // candidates for where "layers.{L}." lives
  std::string_view embedding;                     // relative to the prefix
  std::string_view finalNorm;                     // relative to the prefix
  std::vector<std::string_view> outputHeads;      // full names; the first present wins, none = tied
  std::array<std::string_view, kProjCount> proj;  // relative to "<prefix>layers.{L}."; empty when packed
  std::vector<PackedProjections> packed;          // fused tensors holding the projections `proj` leaves out
  std::array<std::string_view, 3> qkvBias;        // empty when the family has none
  bool qkvBiasExpected = false;
  std::array<std::string_view, kNormSlotCount> norms;  // per layer by NormSlot; empty = none
  std::vector<std::string_view> evidence;         // per-layer tensors whose presence identifies the family
  std::vector<std::string_view> ignoredPrefixes;  // non-text parts (vision tower)
  std::string_view textConfigKey;                 // nested text config ("text_config"), empty if flat
  bool tiedByDefault = false;
  ConfigDefaults defaults;
  ConfigFieldNames config;
  ForwardTraits traits;  // how the forward pass computes (family.hpp)
};

class DecoderAdapter : public FamilyAdapter {
 public:
  explicit DecoderAdapter(DecoderLayout layout) : m_layout(std::move(layout)) {}
  Family family() const override { return m_layout.family; }
  std::string_view name() const override { return m_layout.name; }
  const ForwardTraits& traits() const override { return m_layout.traits; }
  std::vector<std::string_view> modelTypes() const override { return m_layout.modelTypes; }
  int score(const Checkpoint& checkpoint) const override;
  ModelView build(const Checkpoint& checkpoint) const override;
  const DecoderLayout& layout() const { return m_layout; }

 private:
  std::string findPrefix(const Checkpoint& checkpoint) const;  // "" when no layer-0 tensor is found
  std::string_view queryTensor() const;  // the tensor holding Q, relative to the layer (maybe a packed one)
  // Cuts a packed tensor into its parts' row slices (layer.proj), checking the rows add up.
  void splitPacked(const Checkpoint& checkpoint, const PackedProjections& packed, const std::string& name,
                   const TensorInfo& tensor, ModelShape& shape, LayerView& layer) const;
  DecoderLayout m_layout;
};

// Shape fields read from a config (flat or nested), validated against each other. Missing fields stay 0.
ModelShape readConfigShape(const JsonObject& config, const ConfigFieldNames& names, bool tiedByDefault,
                           const ConfigDefaults& defaults);

// The number of layers from the indices found in tensor names ("<prefix>{L}."). Indices must run 0..L-1
// without gaps; otherwise a named Error says which are missing (a lost shard, a misnamed tensor) -- never a
// count taken from a stray huge index.
int64_t contiguousLayerCount(const Checkpoint& checkpoint, const std::set<int64_t>& indices,
                             const std::string& prefix);

// Checks that config and tensor shapes agree, naming the config field and the tensor when they do not.
void checkDimension(const Checkpoint& checkpoint, std::string_view configField, int64_t configValue,
                    const std::string& tensor, int dim, int64_t tensorValue, const std::string& relation);

}  // namespace sharelens
