#include "trainer/model.hpp"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <regex>

#include "core/error.hpp"
#include "core/sharelens_names.hpp"
#include "trainer/cpu_attention.hpp"
#include "trainer/cpu_linear.hpp"
#include "trainer/fused_ops.hpp"
#include "trainer/torch_compat.hpp"

namespace sharelens {
namespace {

namespace n = names;

bool headShares(const Topology& t, Proj p) {
  const auto& ps = t.headSharing.projections;
  return t.headSharing.mode != HeadSharingMode::None && std::find(ps.begin(), ps.end(), p) != ps.end();
}

std::string masaMlp(Proj p, const char* part) {
  return "masa." + std::string(projName(p)) + ".mlp." + part;
}

}  // namespace

SharedTransformer::SharedTransformer(const Topology& topology, torch::Device device, uint64_t seed)
    : m_topology(topology), m_device(device) {
  validateTopology(m_topology);
  const Topology& t = m_topology;
  const ModelDims& m = t.model;
  at::Generator gen = at::detail::createCPUGenerator(seed);
  auto make = [&](const std::string& name, std::vector<int64_t> shape, double stddev, bool decay,
                  bool inCheckpoint) {
    torch::Tensor value = stddev > 0 ? at::randn(shape, gen, at::TensorOptions().dtype(at::kFloat)) * stddev
                                     : at::zeros(shape, at::TensorOptions().dtype(at::kFloat));
    m_index[name] = m_params.size();
    m_params.push_back({name, value.to(m_device).set_requires_grad(true), decay, inCheckpoint});
  };
  const double init = 0.02, residual = 0.02 / std::sqrt(2.0 * static_cast<double>(m.layers));
  const int64_t hd = m.headDim, d = m.dModel;

  if (t.embedding.factorRank > 0) {
    make(n::kEmbeddingE, {m.vocab, t.embedding.factorRank}, init, true, true);
    make(n::kEmbeddingP, {t.embedding.factorRank, d},
         1.0 / std::sqrt(static_cast<double>(t.embedding.factorRank)), true, true);
  } else {
    make(n::kEmbedding, {m.vocab, d}, init, true, true);
  }
  if (!t.embedding.tied && t.embedding.factorRank > 0) {
    make(n::kOutputE, {m.vocab, t.embedding.factorRank}, init, true, true);
    make(n::kOutputP, {t.embedding.factorRank, d},
         1.0 / std::sqrt(static_cast<double>(t.embedding.factorRank)), true, true);
  } else if (!t.embedding.tied) {
    make(n::kOutput, {m.vocab, d}, init, true, true);
  }
  for (int64_t l = 0; l < m.layers; ++l) {
    m_params.push_back({n::attnNorm(l), at::ones({d}).to(m_device).set_requires_grad(true), false, true});
    m_index[n::attnNorm(l)] = m_params.size() - 1;
    m_params.push_back({n::ffnNorm(l), at::ones({d}).to(m_device).set_requires_grad(true), false, true});
    m_index[n::ffnNorm(l)] = m_params.size() - 1;
  }
  m_params.push_back({n::kFinalNorm, at::ones({d}).to(m_device).set_requires_grad(true), false, true});
  m_index[n::kFinalNorm] = m_params.size() - 1;

  const Proj attnProjs[] = {Proj::Q, Proj::K, Proj::V, Proj::O};
  for (int64_t u = 0; u < t.attention.uniqueBlocks(); ++u) {
    for (Proj p : attnProjs) {
      if (t.masaCovers(p)) continue;
      const auto [out, in] = projShape(m, p);
      if (headShares(t, p)) {
        const std::string base =
            t.headSharing.mode == HeadSharingMode::QkvShared ? n::qkvBase(u) : n::headBase(u, p);
        if (!m_index.count(base)) make(base, {hd, in}, init, true, true);
        const int64_t r = t.headSharing.loraRank;
        if (r > 0) {  // both factors random: heads start different, so they can specialise
          make(n::headLoraA(u, p), {headsOf(m, p), hd, r}, init, true, true);
          make(n::headLoraB(u, p), {headsOf(m, p), r, in}, init, true, true);
        }
        continue;
      }
      const int64_t rows = storesCompactRows(t, p) ? out - tiedUnitsIn(t, u) * unitRows(m, p) : out;
      make(n::attnWeight(u, p), {rows, in}, p == Proj::O ? residual : init, true, true);
    }
  }
  for (int64_t l = 0; l < m.layers; ++l)
    if (t.attention.loraRank > 0 && t.attention.usersOf(t.attention.assign[static_cast<size_t>(l)]) >= 2)
      for (Proj p : attnProjs) {
        if (t.masaCovers(p)) continue;
        const auto [out, in] = projShape(m, p);
        make(n::layerLoraA(l, p), {t.attention.loraRank, in}, 1.0 / std::sqrt(static_cast<double>(in)), true,
             true);
        make(n::layerLoraB(l, p), {out, t.attention.loraRank}, 0.0, true, true);  // starts as strict sharing
      }
  for (int64_t u = 0; u < t.ffn.uniqueBlocks(); ++u)
    for (Proj p : {Proj::Gate, Proj::Up, Proj::Down}) {
      const auto [out, in] = projShape(m, p);
      make(n::ffnWeight(u, p), {out, in}, p == Proj::Down ? residual : init, true, true);
    }
  for (int64_t l = 0; l < m.layers; ++l)
    if (t.ffn.loraRank > 0 && t.ffn.usersOf(t.ffn.assign[static_cast<size_t>(l)]) >= 2)
      for (Proj p : {Proj::Gate, Proj::Up, Proj::Down}) {
        const auto [out, in] = projShape(m, p);
        make(n::layerLoraA(l, p), {t.ffn.loraRank, in}, 1.0 / std::sqrt(static_cast<double>(in)), true, true);
        make(n::layerLoraB(l, p), {out, t.ffn.loraRank}, 0.0, true, true);
      }
  if (t.masa.enabled) {
    const auto groups = t.masa.effectiveGroups(m.layers);
    const int64_t s = t.masa.atoms;
    for (Proj p : t.masa.projections) {
      const auto [out, in] = projShape(m, p);
      for (size_t g = 0; g < groups.size(); ++g)
        make(n::masaAtoms(p, static_cast<int64_t>(g)), {s, out, in}, init, true, true);
      if (t.masa.mlpCoefficients) {
        const int64_t e = t.masa.blockEmbeddingDim, h = t.masa.mlpHidden;
        make(masaMlp(p, "embedding"), {m.layers, e}, 1.0, false, false);
        make(masaMlp(p, "w1"), {h, e}, 1.0 / std::sqrt(static_cast<double>(e)), true, false);
        make(masaMlp(p, "b1"), {h}, 0.0, false, false);
        make(masaMlp(p, "w2"), {h, h}, 1.0 / std::sqrt(static_cast<double>(h)), true, false);
        make(masaMlp(p, "b2"), {h}, 0.0, false, false);
        make(masaMlp(p, "w3"), {s, h}, 1.0 / std::sqrt(static_cast<double>(h * s)), true, false);
        make(masaMlp(p, "b3"), {s}, 0.0, false, false);
      } else {
        make(n::masaCoefficients(p), {m.layers, s}, 1.0 / std::sqrt(static_cast<double>(s)), false, true);
      }
    }
  }
  // RoPE tables (rotate-half layout, as Hugging Face's Llama).
  const auto inv = at::pow(m.ropeTheta, -at::arange(0, hd, 2, at::kDouble) / static_cast<double>(hd));
  const auto freqs = at::outer(at::arange(m.context, at::kDouble), inv);
  const auto emb = at::cat({freqs, freqs}, -1);
  m_cos = emb.cos().to(at::kFloat).to(m_device);
  m_sin = emb.sin().to(at::kFloat).to(m_device);
}

const torch::Tensor& SharedTransformer::parameter(const std::string& name) const {
  auto it = m_index.find(name);
  if (it == m_index.end())
    throw Error({.what = "no such parameter", .where = "model '" + m_topology.name + "'", .found = name});
  return m_params[it->second].tensor;
}

int64_t SharedTransformer::parameterCount() const {
  int64_t n = 0;
  for (const NamedParameter& p : m_params) n += p.tensor.numel();
  return n;
}

torch::Tensor SharedTransformer::masaCoefficients(Proj p) const {
  if (!m_topology.masa.mlpCoefficients) return parameter(n::masaCoefficients(p));
  auto h = at::silu(at::linear(parameter(masaMlp(p, "embedding")), parameter(masaMlp(p, "w1")),
                               parameter(masaMlp(p, "b1"))));
  h = at::silu(at::linear(h, parameter(masaMlp(p, "w2")), parameter(masaMlp(p, "b2"))));
  return at::linear(h, parameter(masaMlp(p, "w3")), parameter(masaMlp(p, "b3")));
}

torch::Tensor SharedTransformer::withLayerLora(torch::Tensor w, int64_t layer, Proj p,
                                               const BlockSharing& s) const {
  if (s.loraRank == 0 || s.usersOf(s.assign[static_cast<size_t>(layer)]) < 2) return w;
  return w + at::matmul(parameter(n::layerLoraB(layer, p)), parameter(n::layerLoraA(layer, p)));
}

torch::Tensor SharedTransformer::unitRowsOf(int64_t layer, Proj p) const {
  const int64_t rows = unitRows(m_topology.model, p);
  std::vector<torch::Tensor> blocks;
  for (int64_t u = 0; u < m_topology.model.kvHeads; ++u) {
    const HeadTie* tie = tieOf(m_topology, layer, u);
    const int64_t srcLayer = tie ? tie->sourceLayer : layer, srcUnit = tie ? tie->sourceUnit : u;
    blocks.push_back(parameter(n::attnWeight(srcLayer, p))
                         .narrow(0, compactUnitIndex(m_topology, srcLayer, srcUnit) * rows, rows));
  }
  return at::cat(blocks, 0);
}

torch::Tensor SharedTransformer::attentionWeight(int64_t layer, Proj p,
                                                 const std::map<Proj, torch::Tensor>& masa) const {
  const Topology& t = m_topology;
  const auto [out, in] = projShape(t.model, p);
  if (t.masaCovers(p)) {
    const auto groups = t.masa.effectiveGroups(t.model.layers);
    int64_t group = 0;
    for (size_t g = 0; g < groups.size(); ++g)
      if (std::find(groups[g].begin(), groups[g].end(), layer) != groups[g].end())
        group = static_cast<int64_t>(g);
    const torch::Tensor& atoms = parameter(n::masaAtoms(p, group));  // [S, out, in]
    const torch::Tensor c = masa.at(p).select(0, layer);             // [S]
    return at::matmul(c.unsqueeze(0), atoms.reshape({t.masa.atoms, out * in})).reshape({out, in});
  }
  const int64_t block = t.attention.assign[static_cast<size_t>(layer)];
  torch::Tensor w;
  if (headShares(t, p)) {
    const std::string base =
        t.headSharing.mode == HeadSharingMode::QkvShared ? n::qkvBase(block) : n::headBase(block, p);
    const int64_t heads = headsOf(t.model, p);
    torch::Tensor perHead = parameter(base).unsqueeze(0).expand({heads, t.model.headDim, in});
    if (t.headSharing.loraRank > 0)
      perHead = perHead + at::bmm(parameter(n::headLoraA(block, p)), parameter(n::headLoraB(block, p)));
    w = perHead.reshape({out, in});
  } else if (storesCompactRows(t, p)) {
    w = unitRowsOf(layer, p);
  } else {
    w = parameter(n::attnWeight(block, p));
  }
  return withLayerLora(w, layer, p, t.attention);
}

torch::Tensor SharedTransformer::feedForwardWeight(int64_t layer, Proj p) const {
  return withLayerLora(parameter(n::ffnWeight(m_topology.ffn.assign[static_cast<size_t>(layer)], p)), layer,
                       p, m_topology.ffn);
}

torch::Tensor SharedTransformer::effectiveWeight(int64_t layer, Proj p) const {
  if (!isAttentionProj(p)) return feedForwardWeight(layer, p);
  std::map<Proj, torch::Tensor> masa;
  if (m_topology.masaCovers(p)) masa[p] = masaCoefficients(p);
  return attentionWeight(layer, p, masa);
}

torch::Tensor SharedTransformer::forward(const torch::Tensor& tokens) const {
  const Topology& t = m_topology;
  const ModelDims& m = t.model;
  const int64_t batch = tokens.size(0), time = tokens.size(1), hd = m.headDim;
  if (time > m.context)
    throw Error({.what = "sequence longer than the model's context",
                 .where = "forward",
                 .expected = "<= " + std::to_string(m.context) + " tokens",
                 .found = std::to_string(time)});
  torch::Tensor x = t.embedding.factorRank > 0 ? at::matmul(at::embedding(parameter(n::kEmbeddingE), tokens),
                                                            parameter(n::kEmbeddingP))
                                               : at::embedding(parameter(n::kEmbedding), tokens);
  std::map<Proj, torch::Tensor> masa;
  for (Proj p : t.masa.projections)
    if (t.masaCovers(p)) masa[p] = masaCoefficients(p);
  for (int64_t l = 0; l < m.layers; ++l) {
    torch::Tensor h = rmsNorm(x, parameter(n::attnNorm(l)), m.normEps);
    // Q, K and V read the same input: one GEMM over their stacked weights [(H + 2 Hkv) hd, d] packs it once,
    // and the backward takes one input-gradient GEMM instead of three and their sum. Each weight stays its
    // own parameter (shared, factored or adapted as the topology says); only the product is taken at once.
    const torch::Tensor qkvWeight =
        at::cat({attentionWeight(l, Proj::Q, masa), attentionWeight(l, Proj::K, masa),
                 attentionWeight(l, Proj::V, masa)});
    // q, k, v: [B, T, H or Hkv, hd], each (token, head) row contiguous, RoPE applied to q and k.
    const auto [q, k, v] = splitQkvWithRope(projection(h, qkvWeight), m_cos, m_sin, m.heads, m.kvHeads);
    // [B, T, H, hd]: on the CPU in that layout directly; elsewhere with heads moved before time and back.
    const torch::Tensor attn =
        tokenMajorAttentionApplies(q, k, v)
            ? tokenMajorCausalAttention(q, k, v, 1.0 / std::sqrt(static_cast<double>(hd)))
            : causalAttention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)).transpose(1, 2);
    x = x + projection(attn.reshape({batch, time, m.heads * hd}), attentionWeight(l, Proj::O, masa));
    h = rmsNorm(x, parameter(n::ffnNorm(l)), m.normEps);
    // Gate and up, likewise one GEMM: [B, T, 2F], gate first.
    const torch::Tensor gateUp =
        projection(h, at::cat({feedForwardWeight(l, Proj::Gate), feedForwardWeight(l, Proj::Up)}));
    x = x + projection(stackedSwiglu(gateUp), feedForwardWeight(l, Proj::Down));
  }
  x = rmsNorm(x, parameter(n::kFinalNorm), m.normEps);
  if (t.embedding.factorRank >
      0) {  // logits = x (E P)^T = (x P^T) E^T, with the output's own factors if untied
    const bool tied = t.embedding.tied;
    return projection(projection(x, parameter(tied ? n::kEmbeddingP : n::kOutputP)),
                      parameter(tied ? n::kEmbeddingE : n::kOutputE));
  }
  return projection(x, parameter(t.embedding.tied ? n::kEmbedding : n::kOutput));
}

torch::Tensor SharedTransformer::loss(const torch::Tensor& tokens) const {
  const int64_t time = tokens.size(1) - 1;
  const torch::Tensor logits = forward(tokens.narrow(1, 0, time));
  return crossEntropy(logits.reshape({-1, logits.size(-1)}), tokens.narrow(1, 1, time).reshape({-1}));
}

torch::Tensor SharedTransformer::postSharePenalty() const {
  // PostShare, Eq. 4-5: gamma * (1/|N|) sum over pairs of sum over p in {q, k, v} of ||W_p(target) -
  // W_p(source)||_F, the norm taken per projection on the unit's rows.
  const PostShare& ps = m_topology.postShare;
  if (ps.gamma == 0.0 || ps.pairs.empty()) return at::zeros({}, at::TensorOptions().device(m_device));
  std::vector<torch::Tensor> distances;
  for (const HeadTie& pair : ps.pairs)
    for (Proj p : {Proj::Q, Proj::K, Proj::V}) {
      const int64_t rows = unitRows(m_topology.model, p);
      distances.push_back((effectiveWeight(pair.targetLayer, p).narrow(0, pair.targetUnit * rows, rows) -
                           effectiveWeight(pair.sourceLayer, p).narrow(0, pair.sourceUnit * rows, rows))
                              .norm());
    }
  return at::stack(distances).sum() * (ps.gamma / static_cast<double>(ps.pairs.size()));
}

std::vector<std::pair<std::string, torch::Tensor>> SharedTransformer::checkpointTensors(bool hfLayout) const {
  torch::NoGradGuard noGrad;
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const NamedParameter& p : m_params) {
    if (!p.inCheckpoint) continue;
    out.emplace_back(hfLayout ? hfNameOf(p.name) : p.name,
                     p.tensor.detach().to(at::kCPU, at::kFloat).contiguous());
  }
  if (m_topology.masa.enabled && m_topology.masa.mlpCoefficients)
    for (Proj p : m_topology.masa.projections)
      out.emplace_back(n::masaCoefficients(p),
                       masaCoefficients(p).detach().to(at::kCPU, at::kFloat).contiguous());
  return out;
}

void SharedTransformer::load(const std::map<std::string, torch::Tensor>& values, const std::string& source) {
  torch::NoGradGuard noGrad;
  for (NamedParameter& p : m_params) {
    auto it = values.find(p.name);
    if (it == values.end())
      throw Error({.what = "checkpoint lacks a parameter of the topology",
                   .where = source,
                   .expected = "tensor '" + p.name + "'",
                   .found = "nothing",
                   .hint = "the checkpoint was written for a different topology"});
    if (it->second.sizes() != p.tensor.sizes())
      throw Error({.what = "parameter shape differs",
                   .where = source + ": tensor '" + p.name + "'",
                   .expected = c10::str(p.tensor.sizes()),
                   .found = c10::str(it->second.sizes())});
    p.tensor.copy_(it->second.to(p.tensor.device(), p.tensor.scalar_type()));
  }
}

std::string hfNameOf(const std::string& name) {
  static const std::regex attn(R"(attn_blocks\.(\d+)\.w(q|k|v|o))"),
      ffn(R"(ffn_blocks\.(\d+)\.w_(gate|up|down))"), attnNorm(R"(layers\.(\d+)\.attention_norm\.weight)"),
      ffnNorm(R"(layers\.(\d+)\.ffn_norm\.weight)");
  std::smatch m;
  if (name == n::kEmbedding) return n::hf::kEmbedding;
  if (name == n::kOutput) return n::hf::kOutput;
  if (name == n::kFinalNorm) return n::hf::kFinalNorm;
  if (std::regex_match(name, m, attn)) return n::hf::proj(std::stoll(m[1]), *parseProj(m[2].str()));
  if (std::regex_match(name, m, ffn)) return n::hf::proj(std::stoll(m[1]), *parseProj(m[2].str()));
  if (std::regex_match(name, m, attnNorm)) return n::hf::attnNorm(std::stoll(m[1]));
  if (std::regex_match(name, m, ffnNorm)) return n::hf::ffnNorm(std::stoll(m[1]));
  return {};
}

std::string internalNameOfHf(const std::string& hf) {
  static const std::regex proj(R"(model\.layers\.(\d+)\.(self_attn|mlp)\.(\w+)_proj\.weight)"),
      norm(R"(model\.layers\.(\d+)\.(input_layernorm|post_attention_layernorm)\.weight)");
  std::smatch m;
  if (hf == n::hf::kEmbedding) return n::kEmbedding;
  if (hf == n::hf::kOutput) return n::kOutput;
  if (hf == n::hf::kFinalNorm) return n::kFinalNorm;
  if (std::regex_match(hf, m, proj)) {
    const int64_t l = std::stoll(m[1]);
    const Proj p = *parseProj(m[3].str());
    return isAttentionProj(p) ? n::attnWeight(l, p) : n::ffnWeight(l, p);
  }
  if (std::regex_match(hf, m, norm)) {
    const int64_t l = std::stoll(m[1]);
    return m[2] == "input_layernorm" ? n::attnNorm(l) : n::ffnNorm(l);
  }
  return {};
}

}  // namespace sharelens
