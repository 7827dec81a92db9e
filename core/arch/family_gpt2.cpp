// GPT-2: Conv1D weights stored [in, out] (so every canonical matrix is a transposed slice), Q/K/V packed
// column-wise in attn.c_attn ([hidden, 3*hidden]), learned positions in wpe, LayerNorm with biases,
// a GELU MLP (c_fc up, c_proj down) with no gate, tied output head. Tensors may carry a "transformer."
// prefix (GPT2LMHeadModel) or not (GPT2Model). attn.bias / attn.masked_bias are causal-mask buffers.
#include <set>

#include "core/arch/hf_decoder.hpp"
#include "core/error.hpp"
#include "core/naming.hpp"

namespace sharelens {
namespace {

const ConfigFieldNames kGpt2Config{.hidden = "n_embd",
                                   .layers = "n_layer",
                                   .heads = "n_head",
                                   .kvHeads = "n_head",
                                   .headDim = "head_dim",
                                   .ffn = "n_inner",
                                   .vocab = "vocab_size",
                                   .context = "n_positions",
                                   .tie = "tie_word_embeddings"};

// Per-layer tensors relative to "<prefix>h.{L}.".
constexpr std::string_view kCAttnW = "attn.c_attn.weight", kCAttnB = "attn.c_attn.bias";
constexpr std::string_view kAttnProjW = "attn.c_proj.weight", kAttnProjB = "attn.c_proj.bias";
constexpr std::string_view kFcW = "mlp.c_fc.weight", kFcB = "mlp.c_fc.bias";
constexpr std::string_view kMlpProjW = "mlp.c_proj.weight", kMlpProjB = "mlp.c_proj.bias";

class Gpt2Adapter : public FamilyAdapter {
 public:
  Family family() const override { return Family::Gpt2; }
  std::string_view name() const override { return "gpt2"; }
  // LayerNorm with bias, learned positions, a tanh-GELU MLP (GPT2MLP).
  const ForwardTraits& traits() const override {
    static const ForwardTraits t{.norm = ForwardTraits::Norm::Layer,
                                 .positions = ForwardTraits::Positions::Learned,
                                 .mlp = ForwardTraits::Mlp::GeluTanh,
                                 .normEpsField = "layer_norm_epsilon",
                                 .normEpsDefault = 1e-5,
                                 .activationFields = {"activation_function", ""}};
    return t;
  }

  std::vector<std::string_view> modelTypes() const override { return {"gpt2"}; }

  int score(const Checkpoint& ckpt) const override {
    if (configModelType(ckpt) == "gpt2") return 100;
    return prefixOf(ckpt) ? 30 : 0;
  }

  ModelView build(const Checkpoint& ckpt) const override {
    const auto prefixOpt = prefixOf(ckpt);
    if (!prefixOpt)
      throw Error({.what = "no GPT-2 blocks found",
                   .where = ckpt.path().string(),
                   .expected = "a tensor named h.0.attn.c_attn.weight or transformer.h.0.attn.c_attn.weight",
                   .hint = "run `sharelens inspect` to see the tensor names"});
    const std::string prefix = *prefixOpt;
    ModelView view;
    view.source = ckpt.path().string();
    view.family = Family::Gpt2;
    view.modelType = "gpt2";
    const std::string configName = ckpt.configPath() ? ckpt.configPath()->string() : "config.json";
    if (ckpt.config()) {
      view.shape = readConfigShape(
          JsonObject(*ckpt.config(), configName), kGpt2Config, /*tiedByDefault=*/true,
          {{"vocab_size", 50257}, {"n_positions", 1024}, {"n_embd", 768}, {"n_layer", 12}, {"n_head", 12}});
    } else {
      view.notes.push_back("no config.json: shape inferred from tensor shapes");
    }
    view.shape.gatedFfn = false;
    ModelShape& s = view.shape;

    auto claim = [&](const std::string& name, TensorRole role) -> const TensorInfo* {
      const TensorRef* ref = ckpt.find(name);
      if (!ref) {
        view.missing.push_back(name);
        return nullptr;
      }
      view.roles[name] = role;
      return ref->info;
    };
    auto require2d = [&](const TensorInfo* t) {
      if (t && t->rank() != 2)
        throw Error({.what = "Conv1D weight must be 2-D",
                     .where = ckpt.path().string() + ": tensor '" + t->name + "'",
                     .expected = "[in, out]",
                     .found = shapeToString(t->shape)});
      return t;
    };

    if (const TensorInfo* wte = require2d(claim(prefix + "wte.weight", TensorRole::Embedding))) {
      checkDimension(ckpt, kGpt2Config.vocab, s.vocab, wte->name, 0, wte->dim(0), "vocab_size");
      checkDimension(ckpt, kGpt2Config.hidden, s.hidden, wte->name, 1, wte->dim(1), "n_embd");
      s.vocab = wte->dim(0);
      s.hidden = wte->dim(1);
      view.embedding = MatrixExpr::fromTensor(wte->name, s.vocab, s.hidden);
    }
    if (const TensorInfo* wpe = require2d(claim(prefix + "wpe.weight", TensorRole::Position))) {
      checkDimension(ckpt, kGpt2Config.context, s.context, wpe->name, 0, wpe->dim(0), "n_positions");
      s.context = wpe->dim(0);
      view.positionEmbedding = MatrixExpr::fromTensor(wpe->name, wpe->dim(0), wpe->dim(1));
    }
    if (claim(prefix + "ln_f.weight", TensorRole::Norm) && claim(prefix + "ln_f.bias", TensorRole::Norm))
      view.finalNorm = NormRef{prefix + "ln_f.weight", prefix + "ln_f.bias"};
    if (const TensorRef* head = ckpt.find("lm_head.weight")) {
      require2d(head->info);
      view.roles[head->info->name] = TensorRole::OutputHead;
      view.outputHead = MatrixExpr::fromTensor(head->info->name, head->info->dim(0), head->info->dim(1));
      s.tiedEmbeddings = false;
    } else {
      s.tiedEmbeddings = true;
      view.outputHead = view.embedding;
    }

    std::set<int64_t> indices;
    for (const std::string& name : ckpt.tensorNames())
      if (auto idx = layerIndexAfter(name, prefix + "h.")) indices.insert(*idx);
    const int64_t tensorLayers = contiguousLayerCount(ckpt, indices, prefix + "h.");
    if (s.layers != 0 && s.layers != tensorLayers)
      throw Error({.what = "layer count contradicts the tensors",
                   .where = configName + " field 'n_layer'",
                   .expected = std::to_string(s.layers) + " blocks",
                   .found = "tensors for " + std::to_string(tensorLayers) + " blocks",
                   .hint = "config.json belongs to a different model, or shards are missing"});
    s.layers = tensorLayers;
    if (s.ffn == 0) s.ffn = 4 * s.hidden;  // n_inner: null means 4 * n_embd

    const int64_t d = s.hidden;
    for (int64_t l = 0; l < tensorLayers; ++l) {
      const std::string base = prefix + "h." + std::to_string(l) + ".";
      LayerView layer;
      layer.index = l;
      auto layerNorm = [&](const std::string& name) -> std::optional<NormRef> {
        if (claim(base + name + ".weight", TensorRole::Norm) &&
            claim(base + name + ".bias", TensorRole::Norm))
          return NormRef{base + name + ".weight", base + name + ".bias"};
        return std::nullopt;
      };
      layer.norm[static_cast<int>(NormSlot::AttnIn)] = layerNorm("ln_1");
      layer.norm[static_cast<int>(NormSlot::FfnIn)] = layerNorm("ln_2");

      if (const TensorInfo* cAttn = require2d(claim(base + std::string(kCAttnW), TensorRole::Attention))) {
        checkDimension(ckpt, kGpt2Config.hidden, d, cAttn->name, 0, cAttn->dim(0), "n_embd");
        checkDimension(ckpt, kGpt2Config.hidden, 3 * d, cAttn->name, 1, cAttn->dim(1), "3 x n_embd");
        // canonical c_attn^T is [3d, d]: Q rows [0, d), K rows [d, 2d), V rows [2d, 3d).
        const MatrixExpr packed = MatrixExpr::fromTensor(cAttn->name, 3 * d, d, /*transposed=*/true);
        for (int i = 0; i < 3; ++i) layer.proj[i] = packed.sliceRows(i * d, d);
      }
      if (const TensorInfo* b = claim(base + std::string(kCAttnB), TensorRole::Attention))
        for (int i = 0; i < 3; ++i) layer.bias[i] = VectorSlice{b->name, i * d, d};
      if (const TensorInfo* o = require2d(claim(base + std::string(kAttnProjW), TensorRole::Attention))) {
        // Conv1D stores [in, out]: n_head x head_dim = n_embd inputs (the heads), n_embd outputs.
        checkDimension(ckpt, kGpt2Config.hidden, d, o->name, 0, o->dim(0), "n_embd");
        checkDimension(ckpt, kGpt2Config.hidden, d, o->name, 1, o->dim(1), "n_embd");
        layer.proj[static_cast<int>(Proj::O)] = MatrixExpr::fromTensor(o->name, o->dim(1), o->dim(0), true);
      }
      if (const TensorInfo* b = claim(base + std::string(kAttnProjB), TensorRole::Attention))
        layer.bias[static_cast<int>(Proj::O)] = VectorSlice{b->name, 0, static_cast<int64_t>(b->numel)};
      if (const TensorInfo* fc = require2d(claim(base + std::string(kFcW), TensorRole::Ffn))) {
        checkDimension(ckpt, kGpt2Config.hidden, d, fc->name, 0, fc->dim(0), "n_embd");
        checkDimension(ckpt, kGpt2Config.ffn, s.ffn, fc->name, 1, fc->dim(1), "n_inner");
        layer.proj[static_cast<int>(Proj::Up)] =
            MatrixExpr::fromTensor(fc->name, fc->dim(1), fc->dim(0), true);
      }
      if (const TensorInfo* b = claim(base + std::string(kFcB), TensorRole::Ffn))
        layer.bias[static_cast<int>(Proj::Up)] = VectorSlice{b->name, 0, static_cast<int64_t>(b->numel)};
      if (const TensorInfo* down = require2d(claim(base + std::string(kMlpProjW), TensorRole::Ffn))) {
        checkDimension(ckpt, kGpt2Config.ffn, s.ffn, down->name, 0, down->dim(0), "n_inner");
        checkDimension(ckpt, kGpt2Config.hidden, d, down->name, 1, down->dim(1), "n_embd");
        layer.proj[static_cast<int>(Proj::Down)] =
            MatrixExpr::fromTensor(down->name, down->dim(1), down->dim(0), true);
      }
      if (const TensorInfo* b = claim(base + std::string(kMlpProjB), TensorRole::Ffn))
        layer.bias[static_cast<int>(Proj::Down)] = VectorSlice{b->name, 0, static_cast<int64_t>(b->numel)};
      view.layers.push_back(std::move(layer));
    }

    if (s.heads > 0) {
      if (d % s.heads != 0)
        throw Error({.what = "n_head does not divide n_embd",
                     .where = configName + " field 'n_head'",
                     .expected = "a divisor of " + std::to_string(d),
                     .found = std::to_string(s.heads)});
      s.kvHeads = s.heads;
      s.headDim = d / s.heads;
    } else {
      view.notes.push_back("head count unknown: per-head views need config.json (n_head)");
    }
    for (const std::string& name : ckpt.tensorNames()) {
      if (view.roles.count(name)) continue;
      const bool maskBuffer = endsWith(name, ".attn.bias") || endsWith(name, ".attn.masked_bias");
      (maskBuffer ? view.ignored : view.unexpected).push_back(name);
    }
    return view;
  }

 private:
  static std::optional<std::string> prefixOf(const Checkpoint& ckpt) {
    // c_attn or, in a compressed checkpoint that dropped it, the first block's norm.
    for (const char* prefix : {"", "transformer."})
      if (ckpt.find(std::string(prefix) + "h.0." + std::string(kCAttnW)) ||
          ckpt.find(std::string(prefix) + "h.0.ln_1.weight"))
        return std::string(prefix);
    return std::nullopt;
  }
};

}  // namespace

const FamilyAdapter& gpt2Adapter() {
  static const Gpt2Adapter adapter;
  return adapter;
}

}  // namespace sharelens
