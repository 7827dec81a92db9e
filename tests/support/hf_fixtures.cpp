#include "tests/support/hf_fixtures.hpp"

#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cmath>
#include <cstring>
#include <fstream>
#include <random>

#include "core/atomic_file.hpp"
#include "core/json_util.hpp"
#include "core/safetensors.hpp"

namespace fs = std::filesystem;

namespace sharelens::testing {
namespace {

enum class Init { Normal, OnesPlusNoise, SmallNoise, CausalMask };

// "model.layers.3.mlp.up_proj.weight" -> ("model.layers.*.mlp.up_proj.weight", 3); no layer -> (name, -1).
std::pair<std::string, int64_t> layerPattern(const std::string& name) {
  for (const char* marker : {"layers.", "h."}) {
    const size_t at = name.find(marker);
    if (at == std::string::npos) continue;
    size_t i = at + std::strlen(marker), j = i;
    while (j < name.size() && std::isdigit(static_cast<unsigned char>(name[j]))) ++j;
    if (j == i || j >= name.size() || name[j] != '.') continue;
    return {name.substr(0, i) + "*" + name.substr(j), std::stoll(name.substr(i, j - i))};
  }
  return {name, -1};
}

// Shared base (same for every layer of a projection) + rank-(2 + 3l mod 7) delta + noise. rows x cols.
std::vector<float> structuredMatrix(const std::string& name, int64_t rows, int64_t cols, uint64_t seed) {
  const auto [pattern, layer] = layerPattern(name);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t k = std::min(rows, cols);
  const float scale = 1.0f / std::sqrt(static_cast<float>(cols));
  auto lowRank = [&](std::mt19937_64& rng, int64_t rank, float decay, float amplitude) {
    std::vector<float> a(static_cast<size_t>(rows * rank)), b(static_cast<size_t>(rank * cols));
    for (float& x : a) x = normal(rng);
    for (float& x : b) x = normal(rng);
    std::vector<float> out(static_cast<size_t>(rows * cols), 0.0f);
    for (int64_t r = 0; r < rank; ++r) {
      const float w =
          amplitude * std::pow(decay, static_cast<float>(r)) * scale / std::sqrt(static_cast<float>(rows));
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j)
          out[static_cast<size_t>(i * cols + j)] += w * a[i * rank + r] * b[r * cols + j];
    }
    return out;
  };
  std::mt19937_64 baseRng(seed ^ std::hash<std::string>{}(pattern));
  std::vector<float> w = lowRank(baseRng, k, 0.97f, 4.0f);
  if (layer >= 0) {
    std::mt19937_64 deltaRng(seed * 7919 + static_cast<uint64_t>(layer) * 104729 +
                             std::hash<std::string>{}(pattern));
    const std::vector<float> delta = lowRank(deltaRng, std::min<int64_t>(k, 2 + (3 * layer) % 7), 0.8f, 2.0f);
    for (size_t i = 0; i < w.size(); ++i) w[i] += delta[i];
  }
  std::mt19937_64 noiseRng(seed + static_cast<uint64_t>(layer + 2) * 31 + std::hash<std::string>{}(name));
  for (float& x : w) x += 1e-3f * scale * normal(noiseRng);
  return w;
}

struct TensorPlan {
  std::string name;
  std::vector<int64_t> shape;
  Init init = Init::Normal;
  DType dtype;  // the spec's dtype for parameters; F32 for buffers
};

class Planner {
 public:
  explicit Planner(const FixtureSpec& spec) : m_spec(spec) {}
  void add(std::string name, std::vector<int64_t> shape, Init init = Init::Normal) {
    m_plans.push_back(
        {std::move(name), std::move(shape), init, init == Init::CausalMask ? DType::F32 : m_spec.dtype});
  }
  std::vector<TensorPlan>& plans() { return m_plans; }

 private:
  const FixtureSpec& m_spec;
  std::vector<TensorPlan> m_plans;
};

void planDecoder(const FixtureSpec& s, Planner& p) {
  const bool gemma = s.family == Family::Gemma3, phi3 = s.family == Family::Phi3;
  const std::string prefix = gemma && s.gemmaMultimodal ? "model.language_model." : "model.";
  const int64_t q = s.heads * s.headDim, kv = s.kvHeads * s.headDim;
  p.add(prefix + "embed_tokens.weight", {s.vocab, s.hidden});
  for (int64_t l = 0; l < s.layers; ++l) {
    const std::string b = prefix + "layers." + std::to_string(l) + ".";
    const Init norm = gemma ? Init::SmallNoise : Init::OnesPlusNoise;  // Gemma's RMSNorm scales by (1 + w)
    p.add(b + "input_layernorm.weight", {s.hidden}, norm);
    if (phi3) {
      p.add(b + "self_attn.qkv_proj.weight", {q + 2 * kv, s.hidden});  // [Q; K; V]
    } else {
      p.add(b + "self_attn.q_proj.weight", {q, s.hidden});
      p.add(b + "self_attn.k_proj.weight", {kv, s.hidden});
      p.add(b + "self_attn.v_proj.weight", {kv, s.hidden});
    }
    if (s.family == Family::Qwen2) {
      p.add(b + "self_attn.q_proj.bias", {q}, Init::SmallNoise);
      p.add(b + "self_attn.k_proj.bias", {kv}, Init::SmallNoise);
      p.add(b + "self_attn.v_proj.bias", {kv}, Init::SmallNoise);
    }
    if (gemma || s.family == Family::Qwen3) {  // QK-Norm: one RMSNorm over head_dim, shared by the heads
      p.add(b + "self_attn.q_norm.weight", {s.headDim}, norm);
      p.add(b + "self_attn.k_norm.weight", {s.headDim}, norm);
    }
    p.add(b + "self_attn.o_proj.weight", {s.hidden, q});
    p.add(b + "post_attention_layernorm.weight", {s.hidden}, norm);
    if (gemma) {
      p.add(b + "pre_feedforward_layernorm.weight", {s.hidden}, norm);
      p.add(b + "post_feedforward_layernorm.weight", {s.hidden}, norm);
    }
    if (phi3) {
      p.add(b + "mlp.gate_up_proj.weight", {2 * s.ffn, s.hidden});  // [gate; up]
    } else {
      p.add(b + "mlp.gate_proj.weight", {s.ffn, s.hidden});
      p.add(b + "mlp.up_proj.weight", {s.ffn, s.hidden});
    }
    p.add(b + "mlp.down_proj.weight", {s.hidden, s.ffn});
  }
  p.add(prefix + "norm.weight", {s.hidden}, gemma ? Init::SmallNoise : Init::OnesPlusNoise);
  if (!s.tied) p.add("lm_head.weight", {s.vocab, s.hidden});
  if (gemma && s.gemmaMultimodal) {  // a token vision tower, ignored by the text view
    p.add("model.vision_tower.vision_model.embeddings.patch_embedding.weight", {32, 3, 4, 4});
    p.add("model.multi_modal_projector.mm_input_projection_weight", {32, s.hidden});
  }
}

void planGpt2(const FixtureSpec& s, Planner& p) {
  const std::string prefix = s.gpt2TransformerPrefix ? "transformer." : "";
  const int64_t d = s.hidden, inner = s.ffn;
  p.add(prefix + "wte.weight", {s.vocab, d});
  p.add(prefix + "wpe.weight", {s.context, d});
  for (int64_t l = 0; l < s.layers; ++l) {
    const std::string b = prefix + "h." + std::to_string(l) + ".";
    p.add(b + "ln_1.weight", {d}, Init::OnesPlusNoise);
    p.add(b + "ln_1.bias", {d}, Init::SmallNoise);
    p.add(b + "attn.bias", {1, 1, s.context, s.context}, Init::CausalMask);
    p.add(b + "attn.c_attn.weight", {d, 3 * d});  // Conv1D: [in, out]
    p.add(b + "attn.c_attn.bias", {3 * d}, Init::SmallNoise);
    p.add(b + "attn.c_proj.weight", {d, d});
    p.add(b + "attn.c_proj.bias", {d}, Init::SmallNoise);
    p.add(b + "ln_2.weight", {d}, Init::OnesPlusNoise);
    p.add(b + "ln_2.bias", {d}, Init::SmallNoise);
    p.add(b + "mlp.c_fc.weight", {d, inner});
    p.add(b + "mlp.c_fc.bias", {inner}, Init::SmallNoise);
    p.add(b + "mlp.c_proj.weight", {inner, d});
    p.add(b + "mlp.c_proj.bias", {d}, Init::SmallNoise);
  }
  p.add(prefix + "ln_f.weight", {d}, Init::OnesPlusNoise);
  p.add(prefix + "ln_f.bias", {d}, Init::SmallNoise);
  if (!s.tied) p.add("lm_head.weight", {s.vocab, d});
}

Json configFor(const FixtureSpec& s) {
  switch (s.family) {
    case Family::Llama:
      return {{"architectures", {"LlamaForCausalLM"}},
              {"attention_bias", false},
              {"attention_dropout", 0.0},
              {"bos_token_id", 128000},
              {"eos_token_id", 128001},
              {"head_dim", s.headDim},
              {"hidden_act", "silu"},
              {"hidden_size", s.hidden},
              {"initializer_range", 0.02},
              {"intermediate_size", s.ffn},
              {"max_position_embeddings", s.context},
              {"mlp_bias", false},
              {"model_type", "llama"},
              {"num_attention_heads", s.heads},
              {"num_hidden_layers", s.layers},
              {"num_key_value_heads", s.kvHeads},
              {"pretraining_tp", 1},
              {"rms_norm_eps", 1e-05},
              {"rope_scaling",
               {{"factor", 32.0},
                {"high_freq_factor", 4.0},
                {"low_freq_factor", 1.0},
                {"original_max_position_embeddings", 8192},
                {"rope_type", "llama3"}}},
              {"rope_theta", 500000.0},
              {"tie_word_embeddings", s.tied},
              {"torch_dtype", "bfloat16"},
              {"transformers_version", "4.45.0"},
              {"use_cache", true},
              {"vocab_size", s.vocab}};
    case Family::Qwen2:
      return {{"architectures", {"Qwen2ForCausalLM"}},
              {"attention_dropout", 0.0},
              {"bos_token_id", 151643},
              {"eos_token_id", 151643},
              {"hidden_act", "silu"},
              {"hidden_size", s.hidden},
              {"initializer_range", 0.02},
              {"intermediate_size", s.ffn},
              {"max_position_embeddings", s.context},
              {"max_window_layers", s.layers},
              {"model_type", "qwen2"},
              {"num_attention_heads", s.heads},
              {"num_hidden_layers", s.layers},
              {"num_key_value_heads", s.kvHeads},
              {"rms_norm_eps", 1e-06},
              {"rope_theta", 1000000.0},
              {"sliding_window", s.context},
              {"tie_word_embeddings", s.tied},
              {"torch_dtype", "bfloat16"},
              {"transformers_version", "4.43.1"},
              {"use_cache", true},
              {"use_sliding_window", false},
              {"vocab_size", s.vocab}};
    case Family::Qwen3:  // Qwen3-0.6B's config.json, at test size
      return {{"architectures", {"Qwen3ForCausalLM"}},
              {"attention_bias", false},
              {"attention_dropout", 0.0},
              {"bos_token_id", 151643},
              {"eos_token_id", 151645},
              {"head_dim", s.headDim},
              {"hidden_act", "silu"},
              {"hidden_size", s.hidden},
              {"initializer_range", 0.02},
              {"intermediate_size", s.ffn},
              {"max_position_embeddings", s.context},
              {"max_window_layers", s.layers},
              {"model_type", "qwen3"},
              {"num_attention_heads", s.heads},
              {"num_hidden_layers", s.layers},
              {"num_key_value_heads", s.kvHeads},
              {"rms_norm_eps", 1e-06},
              {"rope_scaling", nullptr},
              {"rope_theta", 1000000},
              {"sliding_window", nullptr},
              {"tie_word_embeddings", s.tied},
              {"torch_dtype", "bfloat16"},
              {"transformers_version", "4.51.0"},
              {"use_cache", true},
              {"use_sliding_window", false},
              {"vocab_size", s.vocab}};
    case Family::Gemma3: {
      Json text = {{"architectures", {"Gemma3ForCausalLM"}},
                   {"attention_bias", false},
                   {"attention_dropout", 0.0},
                   {"attn_logit_softcapping", nullptr},
                   {"bos_token_id", 2},
                   {"cache_implementation", "hybrid"},
                   {"eos_token_id", {1, 106}},
                   {"final_logit_softcapping", nullptr},
                   {"head_dim", s.headDim},
                   {"hidden_activation", "gelu_pytorch_tanh"},
                   {"hidden_size", s.hidden},
                   {"initializer_range", 0.02},
                   {"intermediate_size", s.ffn},
                   {"max_position_embeddings", s.context},
                   {"model_type", "gemma3_text"},
                   {"num_attention_heads", s.heads},
                   {"num_hidden_layers", s.layers},
                   {"num_key_value_heads", s.kvHeads},
                   {"pad_token_id", 0},
                   {"query_pre_attn_scalar", s.headDim},
                   {"rms_norm_eps", 1e-06},
                   {"rope_local_base_freq", 10000.0},
                   {"rope_scaling", nullptr},
                   {"rope_theta", 1000000.0},
                   {"sliding_window", 512},
                   {"sliding_window_pattern", 6},
                   {"torch_dtype", "bfloat16"},
                   {"transformers_version", "4.50.0.dev0"},
                   {"use_cache", true},
                   {"vocab_size", s.vocab}};
      if (!s.gemmaMultimodal) return text;
      text.erase("architectures");
      return {{"architectures", {"Gemma3ForConditionalGeneration"}},
              {"boi_token_index", 255999},
              {"eoi_token_index", 256000},
              {"eos_token_id", {1, 106}},
              {"image_token_index", 262144},
              {"initializer_range", 0.02},
              {"mm_tokens_per_image", 256},
              {"model_type", "gemma3"},
              {"text_config", text},
              {"torch_dtype", "bfloat16"},
              {"transformers_version", "4.50.0.dev0"},
              {"vision_config",
               {{"hidden_size", 32},
                {"image_size", 32},
                {"intermediate_size", 64},
                {"model_type", "siglip_vision_model"},
                {"num_attention_heads", 2},
                {"num_hidden_layers", 1},
                {"patch_size", 16},
                {"vision_use_head", false}}}};
    }
    case Family::Gpt2:
      return {{"activation_function", "gelu_new"},
              {"architectures", {"GPT2LMHeadModel"}},
              {"attn_pdrop", 0.1},
              {"bos_token_id", 50256},
              {"embd_pdrop", 0.1},
              {"eos_token_id", 50256},
              {"initializer_range", 0.02},
              {"layer_norm_epsilon", 1e-05},
              {"model_type", "gpt2"},
              {"n_ctx", s.context},
              {"n_embd", s.hidden},
              {"n_head", s.heads},
              {"n_inner", s.ffn == 4 * s.hidden ? Json(nullptr) : Json(s.ffn)},
              {"n_layer", s.layers},
              {"n_positions", s.context},
              {"reorder_and_upcast_attn", false},
              {"resid_pdrop", 0.1},
              {"scale_attn_by_inverse_layer_idx", false},
              {"scale_attn_weights", true},
              {"summary_activation", nullptr},
              {"summary_first_dropout", 0.1},
              {"summary_proj_to_labels", true},
              {"summary_type", "cls_index"},
              {"summary_use_proj", true},
              {"vocab_size", s.vocab}};
    case Family::Phi3:  // Phi-3-mini-4k-instruct's config.json, at test size; a window shorter than the
                        // context
      return {{"architectures", {"Phi3ForCausalLM"}},
              {"attention_bias", false},
              {"attention_dropout", 0.0},
              {"bos_token_id", 1},
              {"embd_pdrop", 0.0},
              {"eos_token_id", 32000},
              {"hidden_act", "silu"},
              {"hidden_size", s.hidden},
              {"initializer_range", 0.02},
              {"intermediate_size", s.ffn},
              {"max_position_embeddings", s.context},
              {"model_type", "phi3"},
              {"num_attention_heads", s.heads},
              {"num_hidden_layers", s.layers},
              {"num_key_value_heads", s.kvHeads},
              {"original_max_position_embeddings", s.context},
              {"pad_token_id", 32000},
              {"resid_pdrop", 0.0},
              {"rms_norm_eps", 1e-05},
              {"rope_scaling", nullptr},
              {"rope_theta", 10000.0},
              {"sliding_window", s.context / 2 - 1},
              {"tie_word_embeddings", s.tied},
              {"torch_dtype", "bfloat16"},
              {"transformers_version", "4.40.2"},
              {"use_cache", true},
              {"vocab_size", s.vocab}};
    case Family::ShareLens:
      break;
  }
  return Json::object();
}

std::vector<float> initialValues(const TensorPlan& plan, std::mt19937_64& rng, const FixtureSpec& spec) {
  if (spec.structured && plan.init == Init::Normal && plan.shape.size() == 2)
    return structuredMatrix(plan.name, plan.shape[0], plan.shape[1], spec.seed);
  int64_t n = 1;
  for (int64_t d : plan.shape) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const float fanIn = plan.shape.size() >= 2 ? static_cast<float>(plan.shape.back()) : 1.0f;
  switch (plan.init) {
    case Init::Normal:
      for (float& x : v) x = normal(rng) / std::sqrt(fanIn);
      break;
    case Init::OnesPlusNoise:
      for (float& x : v) x = 1.0f + 0.1f * normal(rng);
      break;
    case Init::SmallNoise:
      for (float& x : v) x = 0.1f * normal(rng);
      break;
    case Init::CausalMask: {
      const int64_t t = plan.shape.back();
      for (int64_t i = 0; i < t; ++i)
        for (int64_t j = 0; j < t; ++j) v[static_cast<size_t>(i * t + j)] = j <= i ? 1.0f : 0.0f;
      break;
    }
  }
  return v;
}

std::string shardName(int i, int n) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "model-%05d-of-%05d.safetensors", i + 1, n);
  return buf;
}

}  // namespace

FixtureSpec defaultSpec(Family family) {
  FixtureSpec s;
  s.family = family;
  switch (family) {
    case Family::Llama:
      s.tied = true;
      break;  // Llama 3.2 1B ties its embeddings
    case Family::Qwen2:
      s.heads = 4;
      s.kvHeads = 1;
      break;
    case Family::Qwen3:
      s.headDim = 32;  // 4 * 32 != 64, as Qwen3-0.6B's 16 * 128 != 1024
      s.tied = true;
      break;
    case Family::Gemma3:
      s.heads = 4;
      s.kvHeads = 1;
      s.headDim = 24;
      s.tied = true;
      break;  // 4 * 24 != 64
    case Family::Gpt2:
      s.heads = 4;
      s.kvHeads = 4;
      s.ffn = 4 * s.hidden;
      s.tied = true;
      break;
    case Family::Phi3:  // head_dim = hidden / heads (Phi3Config has no head_dim); GQA as Phi-3-medium
      s.heads = 4;
      s.kvHeads = 2;
      s.headDim = 16;
      break;
    case Family::ShareLens:
      break;
  }
  return s;
}

fs::path writeHfFixture(const fs::path& dir, const FixtureSpec& spec) {
  fs::create_directories(dir);
  Planner planner(spec);
  if (spec.family == Family::Gpt2)
    planGpt2(spec, planner);
  else
    planDecoder(spec, planner);

  std::mt19937_64 rng(spec.seed);
  std::vector<EncodedTensor> tensors;
  for (const TensorPlan& plan : planner.plans())
    tensors.push_back(
        EncodedTensor::fromFloats(plan.name, plan.dtype, plan.shape, initialValues(plan, rng, spec)));

  const std::map<std::string, std::string> metadata = {{"format", "pt"}};
  if (spec.shards <= 1) {
    writeSafetensors(dir / "model.safetensors", tensors, metadata);
  } else {
    Json weightMap = Json::object();
    uint64_t totalSize = 0;
    const size_t perShard = (tensors.size() + spec.shards - 1) / spec.shards;
    for (int shard = 0; shard < spec.shards; ++shard) {
      const size_t begin = shard * perShard, end = std::min(tensors.size(), begin + perShard);
      std::vector<EncodedTensor> part(tensors.begin() + static_cast<std::ptrdiff_t>(begin),
                                      tensors.begin() + static_cast<std::ptrdiff_t>(end));
      for (const EncodedTensor& t : part) {
        weightMap[t.name] = shardName(shard, spec.shards);
        totalSize += t.bytes.size();
      }
      writeSafetensors(dir / shardName(shard, spec.shards), part, metadata);
    }
    const Json index = {{"metadata", {{"total_size", totalSize}}}, {"weight_map", weightMap}};
    writeFileAtomically(dir / "model.safetensors.index.json", index.dump(2));
  }
  if (spec.writeConfig) writeFileAtomically(dir / "config.json", configFor(spec).dump(2));
  return dir;
}

fs::path writeFixtureRun(const fs::path& dir) {
  fs::create_directories(dir);
  std::ofstream(dir / "run.json") << "{}";
  for (const char* step : {"step-0000004", "step-0000006"}) {
    writeHfFixture(dir / "checkpoints" / step, defaultSpec(Family::Llama));
    std::ofstream(dir / "checkpoints" / step / "COMPLETE") << "step\n";
  }
  return dir;
}

fs::path makeTempDir(const std::string& tag) {
  static std::atomic<int> counter{0};
  const fs::path dir = fs::temp_directory_path() / ("sharelens-" + tag + "-" + std::to_string(::getpid()) +
                                                    "-" + std::to_string(counter++));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

}  // namespace sharelens::testing
