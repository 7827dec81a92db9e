#include "trainer/inference_model.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include "core/error.hpp"
#include "core/json_util.hpp"
#include "core/sharelens_names.hpp"
#include "core/topology.hpp"
#include "trainer/cpu_attention.hpp"
#include "trainer/fused_ops.hpp"
#include "trainer/torch_compat.hpp"

namespace sharelens {
namespace {

// The matrix as a tensor without a copy on the CPU: the tensor owns the FloatMatrix's storage (a 1 GB
// embedding would otherwise exist twice while it is converted).
torch::Tensor tensorOf(FloatMatrix&& m, torch::Device device) {
  auto owner = std::make_shared<FloatMatrix>(std::move(m));
  const torch::Tensor t = at::from_blob(
      owner->data.data(), {owner->rows, owner->cols}, [owner](void*) mutable { owner.reset(); },
      at::TensorOptions().dtype(at::kFloat));
  return device.is_cpu() ? t : t.to(device);
}

// A weight for the forward pass: read (checked finite), converted, and its mapped pages dropped from the
// resident set -- the float copy is what the model keeps. `keepPages`: a fused tensor (Phi-3's qkv_proj,
// gate_up_proj) is read once per projection it holds, so its pages are dropped by the caller after the last.
torch::Tensor weightOf(const Checkpoint& ckpt, const MatrixExpr& expr, torch::Device device,
                       bool keepPages = false) {
  torch::Tensor t = tensorOf(materializeFinite(ckpt, expr), device);
  if (!keepPages)
    for (const std::string& name : expr.tensorNames()) ckpt.releasePages(name);
  return t;
}

torch::Tensor vectorOf(const std::vector<float>& v, torch::Device device) {
  return at::from_blob(const_cast<float*>(v.data()), {static_cast<int64_t>(v.size())}, at::kFloat)
      .clone()
      .to(device);
}

// The text part of a config (Gemma 3 nests it under text_config).
const Json& textConfig(const Json& config) {
  if (auto it = config.find("text_config"); it != config.end() && it->is_object()) return *it;
  return config;
}

// A numeric config field: absent or null takes transformers' default; any other type, a non-finite or a
// non-positive value is refused with the field named (a silent default would run a different model).
double number(const Json& j, const char* key, double fallback, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_number())
    throw Error({.what = "wrong type",
                 .where = where + " field '" + key + "'",
                 .expected = "a number",
                 .found = jsonTypeName(*it),
                 .hint = "fix config.json; it must come from the model's own export"});
  const double v = it->get<double>();
  if (!std::isfinite(v) || v <= 0)
    throw Error({.what = "out of range",
                 .where = where + " field '" + key + "'",
                 .expected = "a positive number",
                 .found = std::to_string(v)});
  return v;
}

// HF's RoPE inverse frequencies (float32, as transformers computes them), with llama3 / linear scaling.
// RoPE's inverse frequencies theta^(-2i/hd), i < hd/2, with the config's rope_scaling when `scaled`.
// longrope divides each by its short factor, or by its long one for windows beyond the original context.
torch::Tensor inverseFrequencies(int64_t headDim, double theta, const ArchitectureParams& p, bool scaled,
                                 bool beyondOriginalContext = false) {
  torch::Tensor inv =
      1.0 / at::pow(at::scalar_tensor(theta, at::kFloat),
                    at::arange(0, headDim, 2, at::kLong).to(at::kFloat) / static_cast<double>(headDim));
  if (!scaled || p.ropeScaling.empty()) return inv;
  if (p.ropeScaling == "linear") return inv / p.ropeFactor;
  if (p.ropeScaling == "longrope")  // 1 / (ext theta^(2i/hd)) = inv / ext
    return inv /
           torch::tensor(beyondOriginalContext ? p.longFactors : p.shortFactors, at::kDouble).to(at::kFloat);
  // llama3: keep high frequencies, divide low ones by the factor, blend smoothly in between.
  const double lowWavelen = p.originalContext / p.lowFreqFactor,
               highWavelen = p.originalContext / p.highFreqFactor;
  const torch::Tensor wavelen = 2.0 * M_PI / inv;
  torch::Tensor out = at::where(wavelen > lowWavelen, inv / p.ropeFactor, inv);
  const torch::Tensor smooth =
      (p.originalContext / wavelen - p.lowFreqFactor) / (p.highFreqFactor - p.lowFreqFactor);
  const torch::Tensor blended = (1 - smooth) * out / p.ropeFactor + smooth * out;
  const torch::Tensor medium = (wavelen >= highWavelen).logical_and(wavelen <= lowWavelen);
  return at::where(medium, blended, out);
}

// cos and sin [context, hd] of positions x frequencies, each half repeated (rotate_half's layout), scaled by
// `attentionFactor` (longrope's; 1 otherwise).
std::pair<torch::Tensor, torch::Tensor> ropeTables(int64_t context, const torch::Tensor& inv,
                                                   torch::Device device, double attentionFactor = 1.0) {
  const torch::Tensor freqs = at::outer(at::arange(context, at::kFloat), inv);
  const torch::Tensor emb = at::cat({freqs, freqs}, -1);
  if (attentionFactor == 1.0) return {emb.cos().to(device), emb.sin().to(device)};
  return {(emb.cos() * attentionFactor).to(device), (emb.sin() * attentionFactor).to(device)};
}

// longrope's short_factor or long_factor: hd/2 positive numbers (transformers' Phi3Config checks the length).
std::vector<double> longropeFactors(const Json& scaling, const char* key, int64_t headDim,
                                    const std::string& where) {
  const auto it = scaling.find(key);
  const size_t want = static_cast<size_t>(headDim / 2);
  const bool numbers = it != scaling.end() && it->is_array() &&
                       std::all_of(it->begin(), it->end(), [](const Json& x) { return x.is_number(); });
  if (!numbers || it->size() != want)
    throw Error({.what = "longrope factors of the wrong form",
                 .where = where + " field 'rope_scaling." + key + "'",
                 .expected = "a list of " + std::to_string(want) + " numbers (head_dim / 2)",
                 .found = it == scaling.end()
                              ? "no such field"
                              : jsonTypeName(*it) + " of " + std::to_string(it->size()) + " entries",
                 .hint = "rope_scaling must come from the model's own config.json"});
  std::vector<double> factors;
  for (const Json& x : *it) {
    const double f = x.get<double>();
    if (!std::isfinite(f) || f <= 0)
      throw Error({.what = "out of range",
                   .where = where + " field 'rope_scaling." + key + "'",
                   .expected = "positive numbers",
                   .found = x.dump()});
    factors.push_back(f);
  }
  return factors;
}

}  // namespace

namespace {

// KL(p_l || p_{l+1}) between consecutive rows of log-probabilities [layers, V] (double).
std::vector<double> consecutiveKl(torch::Tensor logp) {
  logp = logp.to(at::kCPU);
  std::vector<double> drift;
  for (int64_t l = 0; l + 1 < logp.size(0); ++l)
    drift.push_back((logp[l].exp() * (logp[l] - logp[l + 1])).sum().item<double>());
  return drift;
}

// The grouping probe's log p_l [layers, V] from block means [layers, d] or [samples, layers, d]; `logitsOf`
// maps rows of means [n, d] to logits [n, V] in double. Several samples: log of the mean over samples of each
// sample's softmax (MASA: "average across samples"), folded a block of samples at a time with logaddexp so
// that about 256 MiB of logits are held at once, whatever the calibration size.
torch::Tensor probeLogProbabilities(const torch::Tensor& means, int64_t vocab,
                                    const std::function<torch::Tensor(const torch::Tensor&)>& logitsOf) {
  if (means.dim() == 2) return at::log_softmax(logitsOf(means), -1);
  const int64_t samples = means.size(0), layers = means.size(1), d = means.size(2);
  const int64_t block = std::max<int64_t>(1, (int64_t{1} << 25) / std::max<int64_t>(1, layers * vocab));
  torch::Tensor total;
  for (int64_t s0 = 0; s0 < samples; s0 += block) {
    const int64_t n = std::min(block, samples - s0);
    const torch::Tensor logp =
        at::log_softmax(logitsOf(means.narrow(0, s0, n).reshape({n * layers, d})), -1).view({n, layers, -1});
    const torch::Tensor folded = at::logsumexp(logp, 0);
    total = total.defined() ? at::logaddexp(total, folded) : folded;
  }
  return total - std::log(static_cast<double>(samples));
}

constexpr int64_t kVocabSlice = 8192;  // rows of W_U converted to double at a time

// causalAttention()'s result the plain way, keeping the probabilities softmax(scale q k^T + mask) it is made
// of ([B, H, T, T]) for the attention maps. q: [B, H, T, hd]; k, v: [B, KV, T, hd].
torch::Tensor attentionWithProbabilities(const torch::Tensor& q, torch::Tensor k, torch::Tensor v,
                                         const AttentionMask& mask, torch::Tensor& probs) {
  const int64_t t = q.size(2), hd = q.size(3), group = q.size(1) / k.size(1);
  if (group > 1) {
    k = k.repeat_interleave(group, 1);
    v = v.repeat_interleave(group, 1);
  }
  probs = at::softmax((at::matmul(q, k.transpose(-2, -1)) * mask.scaleFor(hd))
                          .masked_fill(mask.hiddenKeys(t, q.device()), -INFINITY),
                      -1);
  return at::matmul(probs, v);
}

}  // namespace

std::vector<double> meanStateKlDrift(const torch::Tensor& means, const torch::Tensor& outputTable) {
  const int64_t vocab = outputTable.size(0);
  return consecutiveKl(probeLogProbabilities(means, vocab, [&](const torch::Tensor& layerMeans) {
    std::vector<torch::Tensor> parts;
    const torch::Tensor m = layerMeans.to(outputTable.device(), at::kDouble);
    for (int64_t v0 = 0; v0 < vocab; v0 += kVocabSlice)
      parts.push_back(
          at::matmul(m, outputTable.narrow(0, v0, std::min(kVocabSlice, vocab - v0)).to(at::kDouble).t()));
    return at::cat(parts, -1);
  }));
}

void checkLogitLens(const std::string& lens) {
  if (lens != "per-sample" && lens != "mean-state" && lens != "per-token")
    throw Error({.what = "unknown logit lens",
                 .where = "--logit-lens",
                 .expected = "per-sample (the MASA paper's), mean-state or per-token",
                 .found = lens});
}

torch::Tensor lensMeans(const torch::Tensor& windowMeans, const std::vector<int64_t>& windowTokens,
                        const std::string& lens) {
  checkLogitLens(lens);
  if (lens == "per-sample") return windowMeans;
  const torch::Tensor weights =
      torch::tensor(std::vector<double>(windowTokens.begin(), windowTokens.end()), at::kDouble)
          .to(windowMeans.device())
          .view({-1, 1, 1});
  return (windowMeans * weights).sum(0) / weights.sum();
}

namespace {

// The activation a config.json names in the family's field (a named Error for one the forward cannot run),
// else the family's default.
Activation activationOf(const Json& config, const ForwardTraits& t, const std::string& where) {
  static const std::pair<std::string_view, Activation> kNames[] = {
      {"silu", Activation::Silu},
      {"swish", Activation::Silu},
      {"gelu", Activation::GeluErf},
      {"gelu_new", Activation::GeluTanh},
      {"gelu_pytorch_tanh", Activation::GeluTanh},
      {"gelu_fast", Activation::GeluTanh},
      {"relu", Activation::Relu}};
  for (std::string_view field : t.activationFields) {
    if (field.empty()) continue;
    const auto it = config.find(std::string(field));
    if (it == config.end() || it->is_null()) continue;
    const std::string name = it->is_string() ? it->get<std::string>() : it->dump();
    for (const auto& [known, activation] : kNames)
      if (it->is_string() && name == known) return activation;
    std::string list;
    for (const auto& [known, activation] : kNames) list += (list.empty() ? "" : ", ") + std::string(known);
    throw Error(
        {.what = "unsupported FFN activation",
         .where = where + " field '" + std::string(field) + "'",
         .expected = "one of " + list,
         .found = name,
         .hint = "the forward pass would compute another model than the one these weights belong to"});
  }
  return t.mlp == ForwardTraits::Mlp::SwiGlu ? Activation::Silu : Activation::GeluTanh;
}

}  // namespace

ArchitectureParams architectureParams(const Checkpoint& ckpt, const ModelView& view) {
  ArchitectureParams p;
  p.family = view.family;
  p.traits = forwardTraits(view.family);
  const ForwardTraits& t = p.traits;
  p.activation = t.mlp == ForwardTraits::Mlp::SwiGlu ? Activation::Silu : Activation::GeluTanh;
  p.slidingLayers.assign(view.layers.size(), false);
  if (view.family == Family::ShareLens) {  // its hyper-parameters live in the topology, not a config.json
    const auto it = ckpt.metadata().find(names::kTopologyMetadataKey);
    const Topology topology =
        topologyFromJson(parseJsonStrict(it->second, "topology metadata"), "topology metadata");
    p.normEps = topology.model.normEps;
    p.ropeTheta = topology.model.ropeTheta;
    return p;
  }
  const Json empty = Json::object();
  const Json& config = ckpt.config() ? *ckpt.config() : empty;
  const std::string where = ckpt.configPath() ? ckpt.configPath()->string() : std::string("config.json");
  const Json& c = textConfig(config);
  p.activation = activationOf(c, t, where);
  p.normEps = number(c, std::string(t.normEpsField).c_str(), t.normEpsDefault, where);
  if (t.positions != ForwardTraits::Positions::Rope) return p;
  p.ropeTheta = number(c, "rope_theta", t.ropeThetaDefault, where);
  if (const double partial = number(c, "partial_rotary_factor", 1.0, where); partial != 1.0)
    throw Error({.what = "partial rotary embeddings are not supported",
                 .where = where + " field 'partial_rotary_factor'",
                 .expected = "1 (every dimension of a head rotated)",
                 .found = std::to_string(partial),
                 .hint = "the forward pass would rotate dimensions the model leaves alone"});
  if (auto it = c.find("rope_scaling"); it != c.end() && !it->is_null() && !it->is_object())
    throw Error(
        {.what = "config.json field of the wrong type",
         .where = where + " field 'rope_scaling'",
         .expected = "an object such as {\"rope_type\": \"llama3\", ...} or null",
         .found = jsonTypeName(*it) + " " + it->dump(),
         .hint = "a rope_scaling that cannot be read would be ignored, and the positions would be wrong"});
  if (auto it = c.find("rope_scaling"); it != c.end() && it->is_object()) {
    p.ropeScaling = it->value("rope_type", it->value("type", ""));
    if (p.ropeScaling == "default") p.ropeScaling.clear();
    if (p.ropeScaling == "su") p.ropeScaling = "longrope";  // Phi-3's first name for it (configuration_phi3)
    if (!p.ropeScaling.empty() && p.ropeScaling != "llama3" && p.ropeScaling != "linear" &&
        p.ropeScaling != "longrope")
      throw Error({.what = "unsupported rope_scaling",
                   .where = "config.json field 'rope_scaling'",
                   .expected = "llama3, linear or longrope",
                   .found = p.ropeScaling,
                   .hint = "hidden states would not match the model's own implementation"});
    p.ropeFactor = number(*it, "factor", 1.0, where);
    p.lowFreqFactor = number(*it, "low_freq_factor", 1.0, where);
    p.highFreqFactor = number(*it, "high_freq_factor", 4.0, where);
    p.originalContext = number(*it, "original_max_position_embeddings", 8192, where);
    if (p.ropeScaling == "longrope") {
      // transformers' _compute_longrope_parameters: the config's own original_max_position_embeddings
      // (Phi3Config's field) wins; factor = max_position_embeddings / original unless given; attention factor
      // sqrt(1 + ln(factor) / ln(original)) for factor > 1, else 1.
      const double context = number(c, "max_position_embeddings", 4096, where);
      p.originalContext = number(c, "original_max_position_embeddings",
                                 number(*it, "original_max_position_embeddings", context, where), where);
      p.ropeFactor = number(*it, "factor", context / p.originalContext, where);
      p.ropeAttentionFactor = number(
          *it, "attention_factor",
          p.ropeFactor <= 1.0 ? 1.0 : std::sqrt(1.0 + std::log(p.ropeFactor) / std::log(p.originalContext)),
          where);
      p.shortFactors = longropeFactors(*it, "short_factor", view.shape.headDim, where);
      p.longFactors = longropeFactors(*it, "long_factor", view.shape.headDim, where);
    }
  }
  if (t.queryPreAttnScalar)
    p.attentionScale = 1.0 / std::sqrt(number(c, "query_pre_attn_scalar", 256.0, where));
  if (const auto window = everyLayerSlidingWindow(view, c, where)) {
    p.slidingWindow = *window;
    p.slidingLayers.assign(view.layers.size(), true);
  }
  if (t.slidingWindowLayers) {
    p.ropeLocalTheta = number(c, "rope_local_base_freq", 10000.0, where);
    p.slidingWindow = static_cast<int64_t>(number(c, "sliding_window", 4096, where));
    if (auto it = c.find("layer_types");
        it != c.end() && it->is_array() && it->size() == view.layers.size()) {
      for (size_t l = 0; l < it->size(); ++l) p.slidingLayers[l] = (*it)[l] == "sliding_attention";
    } else {
      const int64_t pattern = static_cast<int64_t>(number(c, "sliding_window_pattern", 6, where));
      for (size_t l = 0; l < view.layers.size(); ++l)
        p.slidingLayers[l] = pattern > 0 && (static_cast<int64_t>(l) + 1) % pattern != 0;
    }
  }
  return p;
}

InferenceModel::InferenceModel(const Checkpoint& ckpt, const ModelView& view, torch::Device device,
                               Weights weights)
    : m_ckpt(ckpt),
      m_view(view),
      m_mode(weights),
      m_shape(view.shape),
      m_params(architectureParams(ckpt, view)),
      m_device(device) {
  if (!view.hasHeads())
    throw Error({.what = "a forward pass needs the head count and head_dim",
                 .where = view.source,
                 .hint = "put the model's config.json next to the weights"});
  if (!view.embedding || !view.outputHead || !view.finalNorm)
    throw Error({.what = "a forward pass needs the embedding, the final norm and the output head",
                 .where = view.source});
  if (!view.missing.empty())
    throw Error({.what = "the checkpoint lacks tensors the forward pass needs",
                 .where = view.source,
                 .found = view.missing.front() + (view.missing.size() > 1 ? " and more" : ""),
                 .hint = "run `sharelens inspect` to list what is missing"});
  if (m_shape.context == 0) m_shape.context = 4096;
  // RoPE tables for the positions a window can reach: analyses and eval run windows of at most a few thousand
  // tokens, and a 128k-context model's full tables would cost hundreds of MB for nothing.
  m_ropeLength = std::min<int64_t>(m_shape.context, kMaxRopeTable);
  auto normOf = [&](const std::optional<NormRef>& ref) -> std::optional<Norm> {
    if (!ref) return std::nullopt;
    Norm n{vectorOf(ckpt.readFloat(ref->weight), device), {}};
    if (ref->bias) n.bias = vectorOf(ckpt.readFloat(*ref->bias), device);
    return n;
  };
  if (weights == Weights::Resident) {
    m_embedding = weightOf(ckpt, *view.embedding, device);
    m_outputHead = view.shape.tiedEmbeddings ? m_embedding : weightOf(ckpt, *view.outputHead, device);
  }
  if (view.positionEmbedding) m_positions = weightOf(ckpt, *view.positionEmbedding, device);
  m_finalNorm = *normOf(view.finalNorm);
  // Gemma 3's sliding-window layers have RoPE tables of their own (rope_local_base_freq, unscaled).
  const bool localRopeLayers = m_params.traits.slidingWindowLayers &&
                               std::find(m_params.slidingLayers.begin(), m_params.slidingLayers.end(),
                                         true) != m_params.slidingLayers.end();
  const auto globalRope =
      ropeTables(m_ropeLength, inverseFrequencies(m_shape.headDim, m_params.ropeTheta, m_params, true),
                 device, m_params.ropeAttentionFactor);
  const auto localRope =
      localRopeLayers
          ? ropeTables(m_ropeLength,
                       inverseFrequencies(m_shape.headDim, m_params.ropeLocalTheta, m_params, false), device)
          : globalRope;
  if (m_params.ropeScaling == "longrope" && m_ropeLength > m_params.originalContext)
    std::tie(m_longRope.cos, m_longRope.sin) = ropeTables(
        m_ropeLength, inverseFrequencies(m_shape.headDim, m_params.ropeTheta, m_params, true, true), device,
        m_params.ropeAttentionFactor);
  for (const LayerView& lv : view.layers) {
    Layer layer;
    if (weights == Weights::Resident) loadWeights(layer, lv);
    layer.attnIn = normOf(lv.normAt(NormSlot::AttnIn));
    layer.attnOut = normOf(lv.normAt(NormSlot::AttnOut));
    layer.ffnIn = normOf(lv.normAt(NormSlot::FfnIn));
    layer.ffnOut = normOf(lv.normAt(NormSlot::FfnOut));
    layer.qNorm = normOf(lv.normAt(NormSlot::QNorm));
    layer.kNorm = normOf(lv.normAt(NormSlot::KNorm));
    layer.sliding = m_params.slidingLayers[static_cast<size_t>(lv.index)];
    std::tie(layer.cos, layer.sin) = layer.sliding ? localRope : globalRope;
    m_layers.push_back(std::move(layer));
  }
}

void InferenceModel::loadWeights(Layer& layer, const LayerView& lv) const {
  std::set<std::string> read;  // the tensors read, released once every projection is loaded
  auto weight = [&](Proj p) {
    if (!lv.has(p)) return torch::Tensor();
    for (const std::string& name : lv.at(p).tensorNames()) read.insert(name);
    return weightOf(m_ckpt, lv.at(p), m_device, /*keepPages=*/true);
  };
  auto bias = [&](Proj p) {
    const auto& b = lv.bias[static_cast<int>(p)];
    return b ? vectorOf(materialize(m_ckpt, *b), m_device) : torch::Tensor();
  };
  layer.q = weight(Proj::Q), layer.k = weight(Proj::K), layer.v = weight(Proj::V), layer.o = weight(Proj::O);
  layer.gate = weight(Proj::Gate), layer.up = weight(Proj::Up), layer.down = weight(Proj::Down);
  layer.bq = bias(Proj::Q), layer.bk = bias(Proj::K), layer.bv = bias(Proj::V), layer.bo = bias(Proj::O);
  layer.bup = bias(Proj::Up), layer.bdown = bias(Proj::Down);
  for (const std::string& name : read) m_ckpt.releasePages(name);
}

void InferenceModel::loadLayer(int64_t l) {
  Layer& layer = m_layers.at(static_cast<size_t>(l));
  if (m_mode == Weights::Streamed && !layer.q.defined())
    loadWeights(layer, m_view.layers[static_cast<size_t>(l)]);
}

void InferenceModel::unloadLayer(int64_t l) {
  if (m_mode != Weights::Streamed) return;
  Layer& layer = m_layers.at(static_cast<size_t>(l));
  for (torch::Tensor* t : {&layer.q, &layer.k, &layer.v, &layer.o, &layer.gate, &layer.up, &layer.down,
                           &layer.bq, &layer.bk, &layer.bv, &layer.bo, &layer.bup, &layer.bdown})
    *t = torch::Tensor();
}

torch::Tensor InferenceModel::norm(const torch::Tensor& x, const Norm& n) const {
  const ForwardTraits& t = m_params.traits;
  if (t.norm == ForwardTraits::Norm::Layer)
    return at::layer_norm(x, {x.size(-1)}, n.weight, n.bias, m_params.normEps);
  return rmsNorm(x, t.normWeightPlusOne ? 1.0 + n.weight : n.weight, m_params.normEps);
}

torch::Tensor InferenceModel::attention(const Layer& layer, const torch::Tensor& h, torch::Tensor* probs,
                                        torch::Tensor* outputInput) const {
  const int64_t b = h.size(0), t = h.size(1), hd = m_shape.headDim, heads = m_shape.heads,
                kv = m_shape.kvHeads;
  auto project = [&](const torch::Tensor& w, const torch::Tensor& bias, int64_t count) {
    return at::linear(h, w, bias.defined() ? c10::optional<torch::Tensor>(bias) : c10::nullopt)
        .view({b, t, count, hd});
  };
  torch::Tensor q = project(layer.q, layer.bq, heads), k = project(layer.k, layer.bk, kv),
                v = project(layer.v, layer.bv, kv);
  if (layer.qNorm) q = norm(q, *layer.qNorm);
  if (layer.kNorm) k = norm(k, *layer.kNorm);
  if (m_params.traits.positions == ForwardTraits::Positions::Rope) {  // on [B, T, H, hd]
    // longrope switches to its long factors for a window beyond the original context (transformers:
    // max(position_ids) + 1 > original_max_position_embeddings).
    const bool longWindow = m_longRope.cos.defined() && static_cast<double>(t) > m_params.originalContext;
    const torch::Tensor& cos = longWindow ? m_longRope.cos : layer.cos;
    const torch::Tensor& sin = longWindow ? m_longRope.sin : layer.sin;
    q = applyRope(q, cos, sin);
    k = applyRope(k, cos, sin);
  }
  // A window at least as long as the sequence masks nothing (keys i - W < j <= i are seen).
  const AttentionMask mask{
      .scale = m_params.attentionScale,
      .slidingWindow = layer.sliding && t > m_params.slidingWindow ? m_params.slidingWindow : 0};
  torch::Tensor out;  // [B, T, H hd]
  q = q.contiguous(), k = k.contiguous(), v = v.contiguous();
  if (!probs && mask.slidingWindow == 0 && tokenMajorAttentionApplies(q, k, v)) {
    // The training forward's CPU kernel (trainer/cpu_attention.hpp), on [B, T, H, hd] as projected.
    out = tokenMajorCausalAttention(q, k, v, mask.scaleFor(hd)).view({b, t, heads * hd});
  } else {
    // The probabilities themselves only where asked for; otherwise the grouped formula that never writes
    // them. On [B, H, T, hd].
    q = q.transpose(1, 2), k = k.transpose(1, 2), v = v.transpose(1, 2);
    out = (probs ? attentionWithProbabilities(q, k, v, mask, *probs)
                 : causalAttention(q.contiguous(), k.contiguous(), v.contiguous(), mask))
              .transpose(1, 2)
              .reshape({b, t, heads * hd});
  }
  if (outputInput) *outputInput = out;
  return at::linear(out, layer.o, layer.bo.defined() ? c10::optional<torch::Tensor>(layer.bo) : c10::nullopt);
}

torch::Tensor InferenceModel::mlp(const Layer& layer, const torch::Tensor& h) const {
  auto opt = [](const torch::Tensor& b) {
    return b.defined() ? c10::optional<torch::Tensor>(b) : c10::nullopt;
  };
  auto act = [&](const torch::Tensor& x) {
    switch (m_params.activation) {
      case Activation::GeluTanh:
        return at::gelu(x, "tanh");
      case Activation::GeluErf:
        return at::gelu(x);
      case Activation::Relu:
        return at::relu(x);
      case Activation::Silu:
        break;
    }
    return at::silu(x);
  };
  if (m_params.traits.mlp == ForwardTraits::Mlp::GeluTanh)  // ungated (GPT-2): down(act(up h))
    return at::linear(act(at::linear(h, layer.up, opt(layer.bup))), layer.down, opt(layer.bdown));
  const torch::Tensor gate = at::linear(h, layer.gate), up = at::linear(h, layer.up, opt(layer.bup));
  return at::linear(m_params.activation == Activation::Silu ? swiglu(gate, up) : act(gate) * up, layer.down,
                    opt(layer.bdown));
}

void InferenceModel::checkWindow(int64_t t) const {
  if (t > m_shape.context)
    throw Error({.what = "sequence longer than the model's context",
                 .where = "forward pass",
                 .expected = "<= " + std::to_string(m_shape.context),
                 .found = std::to_string(t)});
  if (t > m_ropeLength)
    throw Error({.what = "sequence longer than the forward pass's position tables",
                 .where = "forward pass",
                 .expected = "<= " + std::to_string(m_ropeLength) + " tokens per window",
                 .found = std::to_string(t),
                 .hint = "use shorter windows (--window)"});
}

void InferenceModel::checkTokenIds(const torch::Tensor& tokens) const {
  if (tokens.numel() == 0) return;
  const torch::Tensor flat = tokens.reshape({-1});
  const torch::Tensor outside = at::logical_or(flat < 0, flat >= m_shape.vocab).nonzero();
  if (outside.numel() == 0) return;
  const int64_t position = outside[0].item<int64_t>();
  throw Error({.what = "token id outside the model's vocabulary",
               .where = m_view.source + ": token " + std::to_string(position) + " of the input",
               .expected = "ids in [0, " + std::to_string(m_shape.vocab) + ")",
               .found = std::to_string(flat[position].item<int64_t>()),
               .hint = "the ids come from another model's tokenizer; tokenize with this checkpoint's "
                       "(sharelens tokenize PATH)"});
}

torch::Tensor InferenceModel::embed(const torch::Tensor& tokens, Trace* trace) const {
  torch::NoGradGuard noGrad;
  const int64_t t = tokens.size(1);
  checkWindow(t);
  checkTokenIds(tokens);
  torch::Tensor x;
  if (m_mode == Weights::Resident) {
    x = at::embedding(m_embedding, tokens);
  } else {  // the rows of the tokens present, read from the checkpoint
    const torch::Tensor cpu = tokens.to(at::kCPU).contiguous();
    std::vector<torch::Tensor> rows;
    for (int64_t i = 0; i < cpu.numel(); ++i)
      rows.push_back(tensorOf(
          materializeFinite(m_ckpt, m_view.embedding->sliceRows(cpu.data_ptr<int64_t>()[i], 1)), m_device));
    x = at::cat(rows, 0).view({tokens.size(0), t, m_shape.hidden});
    for (const std::string& name : m_view.embedding->tensorNames()) m_ckpt.releasePages(name);
  }
  if (m_params.traits.scaleEmbeddingBySqrtHidden)
    x = x *
        static_cast<float>(std::sqrt(static_cast<double>(m_shape.hidden)));  // as HF: sqrt(d) in the dtype
  if (m_params.traits.positions == ForwardTraits::Positions::Learned) x = x + m_positions.narrow(0, 0, t);
  if (trace) trace->residual.push_back(x);
  return x;
}

std::vector<torch::Tensor> InferenceModel::embedWindows(const std::vector<int>& ids, int64_t window) const {
  std::vector<torch::Tensor> windows;
  for (size_t at = 0; at < ids.size(); at += static_cast<size_t>(window)) {
    const size_t end = std::min(ids.size(), at + static_cast<size_t>(window));
    windows.push_back(embed(at::tensor(std::vector<int64_t>(ids.begin() + at, ids.begin() + end), at::kLong)
                                .unsqueeze(0)
                                .to(m_device)));
  }
  return windows;
}

torch::Tensor InferenceModel::runLayer(int64_t l, const torch::Tensor& input, Trace* trace,
                                       bool captureAttention) const {
  torch::NoGradGuard noGrad;
  const Layer& layer = m_layers.at(static_cast<size_t>(l));
  if (!layer.q.defined())
    throw Error({.what = "internal: a streamed layer was run before it was loaded",
                 .where = "layer " + std::to_string(l)});
  checkWindow(input.size(1));
  torch::Tensor probs, outputInput, x = input;
  torch::Tensor* capture = trace && captureAttention ? &probs : nullptr;
  const bool tapped = trace && trace->tap;
  const torch::Tensor attentionInput = norm(x, *layer.attnIn);
  const torch::Tensor attended = attention(layer, attentionInput, capture, tapped ? &outputInput : nullptr);
  if (tapped) trace->tap(l, attentionInput, outputInput);
  if (m_params.traits.sandwichNorms) {
    x = x + norm(attended, *layer.attnOut);
    x = x + norm(mlp(layer, norm(x, *layer.ffnIn)), *layer.ffnOut);
  } else {
    x = x + attended;
    x = x + mlp(layer, norm(x, *layer.ffnIn));
  }
  if (trace) {
    trace->residual.push_back(x);
    if (captureAttention) trace->attention.push_back(probs);
  }
  return x;
}

torch::Tensor InferenceModel::forward(const torch::Tensor& tokens, Trace* trace,
                                      bool captureAttention) const {
  if (m_mode != Weights::Resident)
    throw Error({.what = "internal: forward() of a streamed model",
                 .where = "forward pass",
                 .hint = "run it a layer at a time"});
  torch::Tensor x = embed(tokens, trace);
  for (int64_t l = 0; l < layers(); ++l) x = runLayer(l, x, trace, captureAttention);
  return x;
}

std::vector<double> InferenceModel::klDriftOfMeans(const torch::Tensor& means) const {
  if (m_mode == Weights::Resident) return meanStateKlDrift(means, m_outputHead);
  // The output head a slice of rows at a time, in double: the same logits meanStateKlDrift() computes (for
  // many samples the head is read once per block of them).
  return consecutiveKl(
      probeLogProbabilities(means, outputHeadView().rows, [&](const torch::Tensor& layerMeans) {
        const torch::Tensor m = layerMeans.to(at::kCPU, at::kDouble);
        std::vector<torch::Tensor> parts;
        forEachOutputHeadSlice(torch::kCPU, [&](const torch::Tensor& w) {
          parts.push_back(at::matmul(m, w.to(at::kDouble).t()));
        });
        return at::cat(parts, -1);
      }));
}

torch::Tensor InferenceModel::logits(const torch::Tensor& hidden) const {
  torch::NoGradGuard noGrad;
  const torch::Tensor normed = norm(hidden, m_finalNorm);
  if (m_mode == Weights::Resident) return at::matmul(normed, m_outputHead.t());
  std::vector<torch::Tensor> parts;
  forEachOutputHeadSlice(m_device,
                         [&](const torch::Tensor& w) { parts.push_back(at::matmul(normed, w.t())); });
  return at::cat(parts, -1);
}

void InferenceModel::forEachOutputHeadSlice(torch::Device device,
                                            const std::function<void(const torch::Tensor&)>& use) const {
  const MatrixExpr& head = outputHeadView();
  for (int64_t v0 = 0; v0 < head.rows; v0 += kVocabSlice)
    use(weightOf(m_ckpt, head.sliceRows(v0, std::min(kVocabSlice, head.rows - v0)), device));
}

const MatrixExpr& InferenceModel::outputHeadView() const {
  return m_view.shape.tiedEmbeddings ? *m_view.embedding : *m_view.outputHead;
}

}  // namespace sharelens
