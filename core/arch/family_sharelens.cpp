// ShareLens checkpoints of shared topologies (names in core/sharelens_names.hpp, topology in the metadata).
// Each layer's effective matrix is a MatrixExpr over the unique tensors:
//   shared block + LoRA      W_l = W_u + B_l A_l
//   head sharing             rows of head i = W_base + A_i B_i
//   MASA                     W_l = sum_s c_{l,s} D_s
//   tied units (DirectShare)  rows of a target unit = the source unit's rows in its layer's compact Q, K, V
// Unshared topologies are saved in Hugging Face Llama layout with a config.json and read by the Llama family.
#include <algorithm>

#include "core/arch/family.hpp"
#include "core/error.hpp"
#include "core/naming.hpp"
#include "core/sharelens_names.hpp"
#include "core/topology.hpp"

namespace sharelens {
namespace {

namespace n = names;

TensorSlice whole(std::string tensor, int64_t rows, int64_t cols, int64_t batch = -1) {
  return TensorSlice{std::move(tensor), false, batch, 0, rows, 0, cols};
}

class ShareLensViewBuilder {
 public:
  ShareLensViewBuilder(const Checkpoint& ckpt, Topology topology) : m_ckpt(ckpt), m_t(std::move(topology)) {}

  ModelView build() {
    const ModelDims& m = m_t.model;
    m_view.source = m_ckpt.path().string();
    m_view.family = Family::ShareLens;
    m_view.modelType = "sharelens:" + m_t.name;
    m_view.shape = ModelShape{m.vocab, m.dModel,  m.layers,           m.heads, m.kvHeads, m.headDim,
                              m.ffn,   m.context, m_t.embedding.tied, true};
    buildEmbedding();
    claim(n::kFinalNorm, TensorRole::Norm);
    m_view.finalNorm = NormRef{n::kFinalNorm, std::nullopt};
    for (int64_t l = 0; l < m.layers; ++l) m_view.layers.push_back(buildLayer(l));
    for (const std::string& name : m_ckpt.tensorNames())
      if (!m_view.roles.count(name)) m_view.unexpected.push_back(name);
    m_view.notes.push_back("ShareLens topology '" + m_t.name +
                           "': per-layer matrices are composed from its unique weights");
    return std::move(m_view);
  }

 private:
  // Records the tensor's role (missing tensors are listed, not fatal, so inspect can still report).
  bool claim(const std::string& name, TensorRole role) {
    if (!m_ckpt.find(name)) {
      if (std::find(m_view.missing.begin(), m_view.missing.end(), name) == m_view.missing.end())
        m_view.missing.push_back(name);
      return false;
    }
    m_view.roles[name] = role;
    return true;
  }

  // V x d as a stored table, or E P (V x r, r x d).
  MatrixExpr table(const char* plain, const char* e, const char* p, TensorRole role) {
    const ModelDims& m = m_t.model;
    const int64_t r = m_t.embedding.factorRank;
    if (r == 0) {
      claim(plain, role);
      return MatrixExpr::fromTensor(plain, m.vocab, m.dModel);
    }
    claim(e, role);
    claim(p, role);
    MatrixExpr expr;
    expr.rows = m.vocab;
    expr.cols = m.dModel;
    MatrixTerm term;
    term.left = whole(e, m.vocab, r);
    term.right = whole(p, r, m.dModel);
    expr.terms.push_back(term);
    return expr;
  }

  void buildEmbedding() {
    m_view.embedding = table(n::kEmbedding, n::kEmbeddingE, n::kEmbeddingP, TensorRole::Embedding);
    m_view.outputHead = m_t.embedding.tied
                            ? *m_view.embedding
                            : table(n::kOutput, n::kOutputE, n::kOutputP, TensorRole::OutputHead);
  }

  // + B_l A_l when layer l's block is shared by several layers and LoRA is on.
  void addLayerLora(MatrixExpr& e, int64_t layer, Proj p, const BlockSharing& sharing) {
    const int64_t block = sharing.assign[static_cast<size_t>(layer)];
    if (sharing.loraRank == 0 || sharing.usersOf(block) < 2) return;
    const auto [out, in] = projShape(m_t.model, p);
    const std::string a = n::layerLoraA(layer, p), b = n::layerLoraB(layer, p);
    claim(a, TensorRole::Lora);
    claim(b, TensorRole::Lora);
    MatrixTerm term;
    term.left = whole(b, out, sharing.loraRank);
    term.right = whole(a, sharing.loraRank, in);
    e.terms.push_back(term);
  }

  MatrixExpr attention(int64_t layer, Proj p) {
    const ModelDims& m = m_t.model;
    const auto [out, in] = projShape(m, p);
    MatrixExpr e;
    e.rows = out;
    e.cols = in;
    const int64_t hd = m.headDim;
    if (m_t.masaCovers(p)) {
      const auto groups = m_t.masa.effectiveGroups(m.layers);
      int64_t group = 0;
      for (size_t g = 0; g < groups.size(); ++g)
        if (std::find(groups[g].begin(), groups[g].end(), layer) != groups[g].end())
          group = static_cast<int64_t>(g);
      const std::string atoms = n::masaAtoms(p, group), coeff = n::masaCoefficients(p);
      claim(atoms, TensorRole::Masa);
      claim(coeff, TensorRole::Masa);
      for (int64_t s = 0; s < m_t.masa.atoms; ++s) {
        MatrixTerm term;
        term.coefficient = ScalarRef{coeff, layer * m_t.masa.atoms + s};
        term.left = whole(atoms, out, in, s);
        e.terms.push_back(term);
      }
      return e;
    }
    const int64_t block = m_t.attention.assign[static_cast<size_t>(layer)];
    const HeadSharing& hs = m_t.headSharing;
    const bool headShared =
        hs.mode != HeadSharingMode::None &&
        std::find(hs.projections.begin(), hs.projections.end(), p) != hs.projections.end();
    if (headShared) {
      const std::string base =
          hs.mode == HeadSharingMode::QkvShared ? n::qkvBase(block) : n::headBase(block, p);
      claim(base, TensorRole::Attention);
      const std::string a = n::headLoraA(block, p), b = n::headLoraB(block, p);
      if (hs.loraRank > 0) {
        claim(a, TensorRole::Lora);
        claim(b, TensorRole::Lora);
      }
      for (int64_t h = 0; h < headsOf(m, p); ++h) {
        MatrixTerm baseTerm;
        baseTerm.left = whole(base, hd, in);
        baseTerm.atRow = h * hd;
        e.terms.push_back(baseTerm);
        if (hs.loraRank == 0) continue;
        MatrixTerm lora;
        lora.left = whole(a, hd, hs.loraRank, h);
        lora.right = whole(b, hs.loraRank, in, h);
        lora.atRow = h * hd;
        e.terms.push_back(lora);
      }
    } else {
      claim(n::attnWeight(block, p), TensorRole::Attention);
      if (!storesCompactRows(m_t, p)) {
        e.terms.push_back(MatrixExpr::fromTensor(n::attnWeight(block, p), out, in).terms[0]);
      } else {  // tied units: each unit's rows from its own or its source's compact tensor
        const int64_t rows = unitRows(m, p);
        for (int64_t u = 0; u < m.kvHeads; ++u) {
          const HeadTie* tie = tieOf(m_t, layer, u);
          const int64_t srcLayer = tie ? tie->sourceLayer : layer, srcUnit = tie ? tie->sourceUnit : u;
          const std::string tensor = n::attnWeight(m_t.attention.assign[static_cast<size_t>(srcLayer)], p);
          MatrixTerm term;
          term.left =
              TensorSlice{tensor, false, -1, compactUnitIndex(m_t, srcLayer, srcUnit) * rows, rows, 0, in};
          term.atRow = u * rows;
          e.terms.push_back(term);
        }
      }
    }
    addLayerLora(e, layer, p, m_t.attention);
    return e;
  }

  MatrixExpr feedForward(int64_t layer, Proj p) {
    const auto [out, in] = projShape(m_t.model, p);
    const std::string tensor = n::ffnWeight(m_t.ffn.assign[static_cast<size_t>(layer)], p);
    claim(tensor, TensorRole::Ffn);
    MatrixExpr e = MatrixExpr::fromTensor(tensor, out, in);
    addLayerLora(e, layer, p, m_t.ffn);
    return e;
  }

  LayerView buildLayer(int64_t layer) {
    LayerView v;
    v.index = layer;
    for (Proj p : {Proj::Q, Proj::K, Proj::V, Proj::O}) v.proj[static_cast<int>(p)] = attention(layer, p);
    for (Proj p : {Proj::Gate, Proj::Up, Proj::Down}) v.proj[static_cast<int>(p)] = feedForward(layer, p);
    if (claim(n::attnNorm(layer), TensorRole::Norm))
      v.norm[static_cast<int>(NormSlot::AttnIn)] = NormRef{n::attnNorm(layer), std::nullopt};
    if (claim(n::ffnNorm(layer), TensorRole::Norm))
      v.norm[static_cast<int>(NormSlot::FfnIn)] = NormRef{n::ffnNorm(layer), std::nullopt};
    return v;
  }

  const Checkpoint& m_ckpt;
  Topology m_t;
  ModelView m_view;
};

class ShareLensAdapter : public FamilyAdapter {
 public:
  Family family() const override { return Family::ShareLens; }
  std::string_view name() const override { return "sharelens"; }
  // A Llama-3-style decoder (RMSNorm, SwiGLU, RoPE); eps and theta come from the topology.
  const ForwardTraits& traits() const override {
    static const ForwardTraits t{};
    return t;
  }

  std::vector<std::string_view> modelTypes() const override { return {}; }  // recognised by its metadata

  int score(const Checkpoint& ckpt) const override {
    return ckpt.metadata().count(names::kTopologyMetadataKey) && ckpt.find(names::kFinalNorm) ? 200 : 0;
  }

  ModelView build(const Checkpoint& ckpt) const override {
    const auto it = ckpt.metadata().find(names::kTopologyMetadataKey);
    if (it == ckpt.metadata().end())
      throw Error({.what = "no ShareLens topology in the checkpoint's metadata",
                   .where = ckpt.path().string(),
                   .expected = "__metadata__['" + std::string(names::kTopologyMetadataKey) + "']",
                   .hint = "this is not a ShareLens checkpoint"});
    const std::string where = ckpt.path().string() + ": __metadata__['" + names::kTopologyMetadataKey + "']";
    Topology topology = topologyFromJson(parseJsonStrict(it->second, where), where);
    return ShareLensViewBuilder(ckpt, std::move(topology)).build();
  }
};

}  // namespace

const FamilyAdapter& sharelensAdapter() {
  static const ShareLensAdapter adapter;
  return adapter;
}

}  // namespace sharelens
