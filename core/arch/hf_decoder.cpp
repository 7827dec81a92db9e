#include "core/arch/hf_decoder.hpp"

#include <algorithm>
#include <numeric>
#include <set>

#include "core/error.hpp"
#include "core/naming.hpp"

namespace sharelens {
namespace {

std::string configFile(const Checkpoint& ckpt) {
  return ckpt.configPath() ? ckpt.configPath()->string() : std::string("config.json");
}

const TensorInfo* tensorInfo(const Checkpoint& ckpt, const std::string& name) {
  const TensorRef* ref = ckpt.find(name);
  return ref ? ref->info : nullptr;
}

// The view under construction: the claims it makes on tensor names.
class ViewBuilder {
 public:
  ViewBuilder(const Checkpoint& ckpt, ModelView& view) : m_ckpt(ckpt), m_view(view) {}

  // Claims `name` with `role` if present; records it as missing when required and absent.
  const TensorInfo* claim(const std::string& name, TensorRole role, bool required) {
    const TensorInfo* info = tensorInfo(m_ckpt, name);
    if (info)
      m_view.roles[name] = role;
    else if (required)
      m_view.missing.push_back(name);
    return info;
  }

  void finish(const std::vector<std::string_view>& ignoredPrefixes) {
    for (const std::string& name : m_ckpt.tensorNames()) {
      if (m_view.roles.count(name)) continue;
      const bool ignored = endsWith(name, ".rotary_emb.inv_freq") ||
                           std::any_of(ignoredPrefixes.begin(), ignoredPrefixes.end(),
                                       [&](std::string_view p) { return startsWith(name, p); });
      (ignored ? m_view.ignored : m_view.unexpected).push_back(name);
    }
  }

 private:
  const Checkpoint& m_ckpt;
  ModelView& m_view;
};

}  // namespace

ModelShape readConfigShape(const JsonObject& cfg, const ConfigFieldNames& names, bool tiedByDefault,
                           const ConfigDefaults& defaults) {
  auto field = [&](std::string_view name, int64_t fallback) {
    if (auto v = cfg.optionalInt(name, 1)) return *v;
    for (const auto& [key, value] : defaults)
      if (key == name) return value;
    return fallback;
  };
  ModelShape s;
  s.hidden = field(names.hidden, 0);
  s.layers = field(names.layers, 0);
  s.heads = field(names.heads, 0);
  s.kvHeads = field(names.kvHeads, s.heads);
  s.headDim = field(names.headDim, 0);
  s.ffn = field(names.ffn, 0);
  s.vocab = field(names.vocab, 0);
  s.context = field(names.context, 0);
  // A context is only read, never allocated in full (the forward pass builds position tables for the windows
  // it runs), but an absurd one is a broken config, not a model.
  if (s.context > kMaxConfigContext)
    cfg.fail(names.context, "out of range", "at most " + std::to_string(kMaxConfigContext) + " positions",
             std::to_string(s.context), "fix config.json; it must come from the model's own export");
  s.tiedEmbeddings = cfg.optionalBool(names.tie).value_or(tiedByDefault);
  if (s.headDim == 0 && s.heads > 0 && s.hidden > 0) {
    if (s.hidden % s.heads != 0)
      cfg.fail(names.heads,
               "does not divide " + std::string(names.hidden) + " and no " + std::string(names.headDim) +
                   " is given",
               "a divisor of " + std::to_string(s.hidden), std::to_string(s.heads),
               "set " + std::string(names.headDim) + " explicitly");
    s.headDim = s.hidden / s.heads;
  }
  if (s.heads > 0 && s.kvHeads > 0 && s.heads % s.kvHeads != 0)
    cfg.fail(names.kvHeads, "must divide the number of query heads (GQA groups)",
             "a divisor of " + std::to_string(s.heads), std::to_string(s.kvHeads));
  return s;
}

int64_t contiguousLayerCount(const Checkpoint& ckpt, const std::set<int64_t>& indices,
                             const std::string& prefix) {
  if (indices.empty()) return 0;
  const int64_t count = static_cast<int64_t>(indices.size()), top = *indices.rbegin();
  if (top == count - 1) return count;
  int64_t gap = 0;
  while (indices.count(gap)) ++gap;
  throw Error(
      {.what = "layer indices are not contiguous",
       .where = ckpt.path().string(),
       .expected = "tensors for layers " + prefix + "0.." + prefix + std::to_string(count - 1),
       .found = std::to_string(count) + " layers with indices up to " + std::to_string(top) +
                "; none for layer " + std::to_string(gap),
       .hint = "a shard is missing or a tensor is misnamed; `sharelens inspect` lists the tensor names"});
}

void checkDimension(const Checkpoint& ckpt, std::string_view configField, int64_t configValue,
                    const std::string& tensor, int dim, int64_t tensorValue, const std::string& relation) {
  if (configValue == 0 || configValue == tensorValue) return;
  const TensorInfo* info = tensorInfo(ckpt, tensor);
  throw Error({.what = "contradicts tensor '" + tensor + "'",
               .where = configFile(ckpt) + " field '" + std::string(configField) + "'",
               .expected = relation + " = " + std::to_string(configValue) + " in dim " + std::to_string(dim),
               .found = info ? shapeToString(info->shape) : std::to_string(tensorValue),
               .hint = "config.json belongs to a different model; use the one that came with these weights"});
}

std::string_view DecoderAdapter::queryTensor() const {
  if (!m_layout.proj[0].empty()) return m_layout.proj[0];
  for (const PackedProjections& packed : m_layout.packed)
    if (std::find(packed.parts.begin(), packed.parts.end(), Proj::Q) != packed.parts.end())
      return packed.tensor;
  return {};
}

std::string DecoderAdapter::findPrefix(const Checkpoint& ckpt) const {
  // The first layer's q projection (or the tensor packing it) or, in a compressed checkpoint that dropped
  // it, its FFN's last matrix.
  for (std::string_view prefix : m_layout.prefixes)
    for (std::string_view probe : {queryTensor(), m_layout.proj[static_cast<int>(Proj::Down)]})
      if (!probe.empty() && ckpt.find(std::string(prefix) + "layers.0." + std::string(probe)))
        return std::string(prefix);
  return {};
}

// The rows of `part` in a packed tensor: Q heads x head_dim, K and V kv_heads x head_dim, gate and up the
// FFN width; 0 when the shape does not say.
static int64_t packedRows(const ModelShape& s, Proj part) {
  switch (part) {
    case Proj::Q:
      return s.heads * s.headDim;
    case Proj::K:
    case Proj::V:
      return s.kvHeads * s.headDim;
    case Proj::Gate:
    case Proj::Up:
      return s.ffn;
    default:
      return 0;
  }
}

void DecoderAdapter::splitPacked(const Checkpoint& ckpt, const PackedProjections& packed,
                                 const std::string& name, const TensorInfo& tensor, ModelShape& s,
                                 LayerView& layer) const {
  if (tensor.rank() != 2)
    throw Error({.what = "fused projection weight must be 2-D",
                 .where = ckpt.path().string() + ": tensor '" + name + "'",
                 .expected = "[out, in]",
                 .found = shapeToString(tensor.shape)});
  // Without config.json, parts of one kind (gate and up) split the rows evenly.
  const bool allFfn =
      std::all_of(packed.parts.begin(), packed.parts.end(), [](Proj p) { return !isAttentionProj(p); });
  if (allFfn && s.ffn == 0 && tensor.dim(0) % static_cast<int64_t>(packed.parts.size()) == 0)
    s.ffn = tensor.dim(0) / static_cast<int64_t>(packed.parts.size());
  std::vector<int64_t> rows;
  for (Proj part : packed.parts) rows.push_back(packedRows(s, part));
  // Without the head counts (no config.json): Q has the hidden size's rows (head_dim = hidden / heads, as in
  // every family without a head_dim field), and the other attention parts share the rest evenly.
  if (std::count(rows.begin(), rows.end(), 0) > 0) {
    for (size_t i = 0; i < rows.size(); ++i)
      if (rows[i] == 0 && packed.parts[i] == Proj::Q) rows[i] = tensor.dim(1);
    const auto unknown = std::count(rows.begin(), rows.end(), 0);
    const int64_t rest = tensor.dim(0) - std::accumulate(rows.begin(), rows.end(), int64_t{0});
    if (unknown > 0 && rest > 0 && rest % unknown == 0)
      for (int64_t& r : rows)
        if (r == 0) r = rest / unknown;
  }
  int64_t offset = 0;
  std::string layout;
  for (size_t i = 0; i < rows.size(); ++i) {
    layout += (layout.empty() ? "" : " + ") + std::string(projName(packed.parts[i])) + " " +
              std::to_string(rows[i]);
    offset += rows[i];
  }
  if (std::count(rows.begin(), rows.end(), 0) > 0 || offset != tensor.dim(0))
    throw Error({.what = "fused projection does not split into its parts",
                 .where = ckpt.path().string() + ": tensor '" + name + "'",
                 .expected = "rows " + layout + " = " + std::to_string(offset) + " (from " +
                             configFile(ckpt) + ": heads, key-value heads, head_dim, intermediate_size)",
                 .found = shapeToString(tensor.shape),
                 .hint = ckpt.config() ? "config.json belongs to a different model"
                                       : "put the model's config.json next to the weights"});
  const MatrixExpr whole = MatrixExpr::fromTensor(name, tensor.dim(0), tensor.dim(1));
  offset = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    layer.proj[static_cast<int>(packed.parts[i])] = whole.sliceRows(offset, rows[i]);
    offset += rows[i];
  }
}

int DecoderAdapter::score(const Checkpoint& ckpt) const {
  const std::string modelType = configModelType(ckpt);
  if (!modelType.empty() && std::find(m_layout.modelTypes.begin(), m_layout.modelTypes.end(), modelType) !=
                                m_layout.modelTypes.end())
    return 100;
  const std::string prefix = findPrefix(ckpt);
  if (prefix.empty()) return 0;
  int s = 10;
  for (std::string_view e : m_layout.evidence)
    if (ckpt.find(prefix + "layers.0." + std::string(e))) s += 10;
  return s;
}

ModelView DecoderAdapter::build(const Checkpoint& ckpt) const {
  const DecoderLayout& L = m_layout;
  const std::string prefix = findPrefix(ckpt);
  if (prefix.empty())
    throw Error({.what = "no decoder layers found for family " + std::string(familyName(L.family)),
                 .where = ckpt.path().string(),
                 .expected = "a tensor named " + std::string(L.prefixes.front()) + "layers.0." +
                             std::string(queryTensor()),
                 .found = std::to_string(ckpt.tensorCount()) + " tensors without it",
                 .hint = "run `sharelens inspect` to see the tensor names"});

  ModelView view;
  view.source = ckpt.path().string();
  view.family = L.family;
  view.modelType = configModelType(ckpt);
  if (view.modelType.empty()) view.modelType = std::string(familyName(L.family));

  // Shape from config.json (nested text config when the family has one).
  if (ckpt.config()) {
    const JsonObject root(*ckpt.config(), configFile(ckpt));
    std::optional<JsonObject> text;
    if (!L.textConfigKey.empty()) text = root.optionalObject(L.textConfigKey);
    view.shape = readConfigShape(text ? *text : root, L.config, L.tiedByDefault, L.defaults);
    if (text && !text->has(L.config.tie) && root.has(L.config.tie))
      view.shape.tiedEmbeddings = *root.optionalBool(L.config.tie);
  } else {
    view.notes.push_back("no config.json: shape inferred from tensor shapes");
  }

  // Layers present in the tensors, sorted numerically.
  const std::string layersPrefix = prefix + "layers.";
  std::set<int64_t> layerIndices;
  for (const std::string& name : ckpt.tensorNames())
    if (auto idx = layerIndexAfter(name, layersPrefix)) layerIndices.insert(*idx);
  const int64_t tensorLayers = contiguousLayerCount(ckpt, layerIndices, layersPrefix);
  if (view.shape.layers != 0 && view.shape.layers != tensorLayers)
    throw Error({.what = "layer count contradicts the tensors",
                 .where = configFile(ckpt) + " field '" + std::string(L.config.layers) + "'",
                 .expected = std::to_string(view.shape.layers) + " layers",
                 .found = "tensors for " + std::to_string(tensorLayers) + " layers (" + layersPrefix + "0.." +
                          std::to_string(tensorLayers - 1) + ")",
                 .hint = "config.json belongs to a different model, or shards are missing"});
  view.shape.layers = tensorLayers;

  ViewBuilder claims(ckpt, view);
  const std::string embeddingName = prefix + std::string(L.embedding);
  if (const TensorInfo* e = claims.claim(embeddingName, TensorRole::Embedding, true)) {
    if (e->rank() != 2)
      throw Error({.what = "embedding must be 2-D",
                   .where = ckpt.path().string() + ": tensor '" + embeddingName + "'",
                   .expected = "[vocab, hidden]",
                   .found = shapeToString(e->shape)});
    if (view.shape.vocab == 0) view.shape.vocab = e->dim(0);
    if (view.shape.hidden == 0) view.shape.hidden = e->dim(1);
    checkDimension(ckpt, L.config.vocab, view.shape.vocab, embeddingName, 0, e->dim(0), "vocab_size");
    checkDimension(ckpt, L.config.hidden, view.shape.hidden, embeddingName, 1, e->dim(1), "hidden_size");
    view.embedding = MatrixExpr::fromTensor(embeddingName, e->dim(0), e->dim(1));
  }
  if (claims.claim(prefix + std::string(L.finalNorm), TensorRole::Norm, true))
    view.finalNorm = NormRef{prefix + std::string(L.finalNorm), std::nullopt};

  // Output head: the first candidate name present; absent means tied.
  std::string headName;
  for (std::string_view candidate : L.outputHeads)
    if (ckpt.find(candidate)) {
      headName = std::string(candidate);
      break;
    }
  if (!headName.empty()) {
    const TensorInfo* h = claims.claim(headName, TensorRole::OutputHead, true);
    if (h->rank() != 2)
      throw Error({.what = "output head must be 2-D",
                   .where = ckpt.path().string() + ": tensor '" + headName + "'",
                   .expected = "[vocab, hidden]",
                   .found = shapeToString(h->shape)});
    view.outputHead = MatrixExpr::fromTensor(headName, h->dim(0), h->dim(1));
    if (ckpt.config() && view.shape.tiedEmbeddings)
      view.notes.push_back("config says tied embeddings, but the checkpoint stores an output head; using it");
    view.shape.tiedEmbeddings = false;
  } else {
    if (ckpt.config() && !view.shape.tiedEmbeddings)
      view.notes.push_back(
          "config says untied embeddings (" + std::string(L.config.tie) +
          " false), but the checkpoint stores no output head; using the embedding as the output head "
          "(transformers would start a random one)");
    view.shape.tiedEmbeddings = true;
    view.outputHead = view.embedding;
  }

  // Head geometry without config: Gemma's q_norm is [head_dim].
  const std::string layer0 = layersPrefix + "0.";
  const std::string_view qNorm = L.norms[static_cast<int>(NormSlot::QNorm)];
  if (view.shape.headDim == 0 && !qNorm.empty())
    if (const TensorInfo* qn = tensorInfo(ckpt, layer0 + std::string(qNorm))) view.shape.headDim = qn->dim(0);

  for (int64_t l = 0; l < tensorLayers; ++l) {
    LayerView layer;
    layer.index = l;
    const std::string base = layersPrefix + std::to_string(l) + ".";
    for (Proj p : kAllProjs) {
      if (L.proj[static_cast<int>(p)].empty()) continue;  // packed in a fused tensor
      const std::string name = base + std::string(L.proj[static_cast<int>(p)]);
      const TensorInfo* t =
          claims.claim(name, isAttentionProj(p) ? TensorRole::Attention : TensorRole::Ffn, true);
      if (!t) continue;
      if (t->rank() != 2)
        throw Error({.what = "projection weight must be 2-D",
                     .where = ckpt.path().string() + ": tensor '" + name + "'",
                     .expected = "[out, in]",
                     .found = shapeToString(t->shape)});
      layer.proj[static_cast<int>(p)] = MatrixExpr::fromTensor(name, t->dim(0), t->dim(1));
    }
    for (const PackedProjections& packed : L.packed) {
      const std::string name = base + std::string(packed.tensor);
      const bool attention = isAttentionProj(packed.parts.front());
      if (const TensorInfo* t = claims.claim(name, attention ? TensorRole::Attention : TensorRole::Ffn, true))
        splitPacked(ckpt, packed, name, *t, view.shape, layer);
    }
    for (int i = 0; i < 3; ++i) {
      if (L.qkvBias[i].empty()) continue;
      const std::string name = base + std::string(L.qkvBias[i]);
      if (const TensorInfo* b = claims.claim(name, TensorRole::Attention, L.qkvBiasExpected))
        layer.bias[i] = VectorSlice{name, 0, static_cast<int64_t>(b->numel)};
    }
    for (int slot = 0; slot < kNormSlotCount; ++slot) {
      if (L.norms[slot].empty()) continue;
      const std::string name = base + std::string(L.norms[slot]);
      if (claims.claim(name, TensorRole::Norm, true)) layer.norm[slot] = NormRef{name, std::nullopt};
    }
    view.layers.push_back(std::move(layer));
  }

  // Infer what config.json did not give, then check every projection against the shape.
  ModelShape& s = view.shape;
  if (!view.layers.empty()) {
    const LayerView& first = view.layers.front();
    if (s.ffn == 0 && first.has(Proj::Up)) s.ffn = first.at(Proj::Up).rows;
    if (s.hidden == 0 && first.has(Proj::Q)) s.hidden = first.at(Proj::Q).cols;
    if (s.heads == 0 && s.headDim > 0 && first.has(Proj::Q)) s.heads = first.at(Proj::Q).rows / s.headDim;
    if (s.kvHeads == 0 && s.headDim > 0 && first.has(Proj::K)) s.kvHeads = first.at(Proj::K).rows / s.headDim;
  }
  if (s.heads == 0 || s.headDim == 0)
    view.notes.push_back("head count unknown: per-head views need config.json");
  for (const LayerView& layer : view.layers) {
    auto check = [&](Proj p, int dim, std::string_view field, int64_t want, const std::string& relation) {
      if (!layer.has(p)) return;
      const MatrixExpr& m = layer.at(p);
      checkDimension(ckpt, field, want, m.terms[0].left.tensor, dim, dim == 0 ? m.rows : m.cols, relation);
    };
    const int64_t qRows = s.heads * s.headDim, kvRows = s.kvHeads * s.headDim;
    const std::string hd = std::to_string(s.headDim);
    check(Proj::Q, 0, L.config.heads, qRows, "num_attention_heads x head_dim " + hd);
    check(Proj::K, 0, L.config.kvHeads, kvRows, "num_key_value_heads x head_dim " + hd);
    check(Proj::V, 0, L.config.kvHeads, kvRows, "num_key_value_heads x head_dim " + hd);
    check(Proj::O, 1, L.config.heads, qRows, "num_attention_heads x head_dim " + hd);
    for (Proj p : {Proj::Q, Proj::K, Proj::V, Proj::Gate, Proj::Up})
      check(p, 1, L.config.hidden, s.hidden, "hidden_size");
    check(Proj::O, 0, L.config.hidden, s.hidden, "hidden_size");
    check(Proj::Down, 0, L.config.hidden, s.hidden, "hidden_size");
    check(Proj::Gate, 0, L.config.ffn, s.ffn, "intermediate_size");
    check(Proj::Up, 0, L.config.ffn, s.ffn, "intermediate_size");
    check(Proj::Down, 1, L.config.ffn, s.ffn, "intermediate_size");
  }
  claims.finish(L.ignoredPrefixes);
  return view;
}

}  // namespace sharelens
