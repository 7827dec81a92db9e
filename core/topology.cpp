#include "core/topology.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/atomic_file.hpp"
#include "core/error.hpp"

namespace sharelens {
namespace {

constexpr std::string_view kHeadSharingNames[] = {"none", "shared_base", "qkv_shared"};

[[noreturn]] void invalid(const std::string& where, const std::string& what, const std::string& expected,
                          const std::string& found, const std::string& hint = {}) {
  throw Error({.what = what, .where = where, .expected = expected, .found = found, .hint = hint});
}

void validateAssignment(const BlockSharing& s, int64_t layers, const std::string& where) {
  if (static_cast<int64_t>(s.assign.size()) != layers)
    invalid(where + ".assign", "one block per layer", std::to_string(layers) + " entries",
            std::to_string(s.assign.size()) + " entries", "regenerate it from a preset or fix its length");
  const int64_t unique = s.uniqueBlocks();
  for (size_t l = 0; l < s.assign.size(); ++l)
    if (s.assign[l] < 0 || s.assign[l] >= layers)
      invalid(where + ".assign[" + std::to_string(l) + "]", "block index out of range",
              "0.." + std::to_string(layers - 1), std::to_string(s.assign[l]));
  std::vector<bool> used(static_cast<size_t>(unique), false);
  for (int64_t b : s.assign) used[static_cast<size_t>(b)] = true;
  for (int64_t b = 0; b < unique; ++b)
    if (!used[static_cast<size_t>(b)])
      invalid(where + ".assign", "block " + std::to_string(b) + " is never used",
              "blocks numbered 0..U-1, all used", "a gap at " + std::to_string(b),
              "renumber the blocks so that they are contiguous");
  if (s.loraRank < 0) invalid(where + ".lora_rank", "negative LoRA rank", ">= 0", std::to_string(s.loraRank));
}

void validateHeadTie(const HeadTie& t, const ModelDims& m, const std::string& where) {
  auto inRange = [&](int64_t layer, int64_t unit, const std::string& which) {
    if (layer < 0 || layer >= m.layers || unit < 0 || unit >= m.kvHeads)
      invalid(where + "." + which, "unit out of range",
              "layer 0.." + std::to_string(m.layers - 1) + ", unit 0.." + std::to_string(m.kvHeads - 1) +
                  (m.kvHeads < m.heads ? " (a unit is a KV group)" : " (a unit is a head)"),
              "[" + std::to_string(layer) + ", " + std::to_string(unit) + "]");
  };
  inRange(t.targetLayer, t.targetUnit, "target");
  inRange(t.sourceLayer, t.sourceUnit, "source");
  if (t.sourceLayer >= t.targetLayer)
    invalid(where, "a tied unit's source must be in an earlier layer", "source layer < target layer",
            std::to_string(t.sourceLayer) + " >= " + std::to_string(t.targetLayer));
}

Json projList(const std::vector<Proj>& ps) {
  Json out = Json::array();
  for (Proj p : ps) out.push_back(projName(p));
  return out;
}

std::vector<Proj> parseProjList(const JsonObject& obj, std::string_view key, std::vector<Proj> fallback) {
  if (!obj.has(key)) return fallback;
  std::vector<Proj> out;
  for (const Json& v : obj.requireArray(key)) {
    const auto p = v.is_string() ? parseProj(v.get<std::string>()) : std::nullopt;
    if (!p) obj.fail(key, "unknown projection", "one of q k v o gate up down", jsonTypeName(v));
    out.push_back(*p);
  }
  return out;
}

Json tieJson(const HeadTie& t) {
  return {{"target", {t.targetLayer, t.targetUnit}}, {"source", {t.sourceLayer, t.sourceUnit}}};
}

HeadTie tieFromJson(const Json& j, const std::string& where) {
  auto pairOf = [&](const char* key) {
    if (!j.is_object() || !j.contains(key) || !j[key].is_array() || j[key].size() != 2 ||
        !j[key][0].is_number_integer() || !j[key][1].is_number_integer())
      invalid(where + "." + key, "expected [layer, unit]", "two integers",
              j.is_object() && j.contains(key) ? jsonTypeName(j[key]) : "nothing");
    return std::pair{j[key][0].get<int64_t>(), j[key][1].get<int64_t>()};
  };
  const auto [tl, th] = pairOf("target");
  const auto [sl, sh] = pairOf("source");
  return {tl, th, sl, sh};
}

std::vector<std::vector<int64_t>> groupsFromJson(const JsonObject& obj, std::string_view key) {
  std::vector<std::vector<int64_t>> groups;
  if (!obj.has(key)) return groups;
  for (const Json& g : obj.requireArray(key)) {
    if (!g.is_array())
      obj.fail(key, "each group must be a list of layers", "[[0,1,2],[3,4,5]]", jsonTypeName(g));
    std::vector<int64_t> group;
    for (const Json& l : g) {
      if (!l.is_number_integer())
        obj.fail(key, "layer indices must be integers", "an integer", jsonTypeName(l));
      group.push_back(l.get<int64_t>());
    }
    groups.push_back(std::move(group));
  }
  return groups;
}

BlockSharing blockSharingFromJson(const JsonObject& obj) {
  obj.allowOnly({"assign", "lora_rank"});
  BlockSharing s;
  for (const Json& v : obj.requireArray("assign")) {
    if (!v.is_number_integer())
      obj.fail("assign", "block indices must be integers", "an integer", jsonTypeName(v));
    s.assign.push_back(v.get<int64_t>());
  }
  s.loraRank = obj.optionalInt("lora_rank", 0).value_or(0);
  return s;
}

}  // namespace

std::string_view headSharingName(HeadSharingMode m) {
  return kHeadSharingNames[static_cast<int>(m)];
}

int64_t BlockSharing::uniqueBlocks() const {
  int64_t top = -1;
  for (int64_t b : assign) top = std::max(top, b);
  return top + 1;
}

int64_t BlockSharing::usersOf(int64_t block) const {
  return std::count(assign.begin(), assign.end(), block);
}

std::vector<std::vector<int64_t>> Masa::effectiveGroups(int64_t layers) const {
  if (!groups.empty()) return groups;
  std::vector<int64_t> all(static_cast<size_t>(layers));
  for (int64_t l = 0; l < layers; ++l) all[static_cast<size_t>(l)] = l;
  return {all};
}

bool Topology::masaCovers(Proj p) const {
  return masa.enabled &&
         std::find(masa.projections.begin(), masa.projections.end(), p) != masa.projections.end();
}

int64_t unitRows(const ModelDims& m, Proj p) {
  return (p == Proj::Q ? m.heads / m.kvHeads : 1) * m.headDim;
}

const HeadTie* tieOf(const Topology& t, int64_t layer, int64_t unit) {
  for (const HeadTie& tie : t.tiedHeads)
    if (tie.targetLayer == layer && tie.targetUnit == unit) return &tie;
  return nullptr;
}

int64_t tiedUnitsIn(const Topology& t, int64_t layer) {
  return std::count_if(t.tiedHeads.begin(), t.tiedHeads.end(),
                       [&](const HeadTie& x) { return x.targetLayer == layer; });
}

bool storesCompactRows(const Topology& t, Proj p) {
  return !t.tiedHeads.empty() && (p == Proj::Q || p == Proj::K || p == Proj::V);
}

int64_t compactUnitIndex(const Topology& t, int64_t layer, int64_t unit) {
  int64_t index = 0;
  for (int64_t u = 0; u < unit; ++u)
    if (!tieOf(t, layer, u)) ++index;
  return index;
}

bool Topology::isUnshared() const {
  for (const BlockSharing* s : {&attention, &ffn})
    for (int64_t l = 0; l < model.layers; ++l)
      if (s->assign[static_cast<size_t>(l)] != l) return false;
  return headSharing.mode == HeadSharingMode::None && !masa.enabled && embedding.factorRank == 0 &&
         tiedHeads.empty();
}

ModelDims modelDimsOf(const ModelShape& s, int64_t context) {
  return ModelDims{.vocab = s.vocab,
                   .dModel = s.hidden,
                   .layers = s.layers,
                   .heads = s.heads,
                   .kvHeads = s.kvHeads,
                   .headDim = s.headDim,
                   .ffn = s.ffn,
                   .context = context};
}

int64_t headsOf(const ModelDims& dims, Proj p) {
  return p == Proj::K || p == Proj::V ? dims.kvHeads : dims.heads;
}

std::pair<int64_t, int64_t> projShape(const ModelDims& m, Proj p) {
  switch (p) {
    case Proj::Q:
      return {m.heads * m.headDim, m.dModel};
    case Proj::K:
    case Proj::V:
      return {m.kvHeads * m.headDim, m.dModel};
    case Proj::O:
      return {m.dModel, m.heads * m.headDim};
    case Proj::Gate:
    case Proj::Up:
      return {m.ffn, m.dModel};
    case Proj::Down:
      return {m.dModel, m.ffn};
  }
  return {0, 0};
}

void validateTopology(const Topology& t, const std::string& where) {
  const ModelDims& m = t.model;
  // Bounds that keep every size computation far from overflow and every allocation conceivable; a model
  // past them is a typo, not a design (the largest open models sit well inside).
  auto inRange = [&](const char* field, int64_t v, int64_t minimum, int64_t maximum) {
    if (v < minimum)
      invalid(where + ".model." + field, "value too small", ">= " + std::to_string(minimum),
              std::to_string(v));
    if (v > maximum)
      invalid(where + ".model." + field, "value too large", "<= " + std::to_string(maximum),
              std::to_string(v), "no model ShareLens can build or train is this large");
  };
  inRange("vocab", m.vocab, 16, int64_t{1} << 22);
  inRange("d_model", m.dModel, 8, int64_t{1} << 16);
  inRange("n_layers", m.layers, 1, 1024);
  inRange("n_heads", m.heads, 1, 1024);
  inRange("n_kv_heads", m.kvHeads, 1, 1024);
  inRange("head_dim", m.headDim, 2, 1024);
  inRange("ffn_dim", m.ffn, 1, int64_t{1} << 20);
  inRange("context", m.context, 2, int64_t{1} << 20);
  if (m.heads % m.kvHeads != 0)
    invalid(where + ".model.n_kv_heads", "must divide n_heads (GQA groups)",
            "a divisor of " + std::to_string(m.heads), std::to_string(m.kvHeads));
  if (m.headDim % 2 != 0)
    invalid(where + ".model.head_dim", "RoPE needs an even head_dim", "an even number",
            std::to_string(m.headDim));
  // n_heads x head_dim may differ from d_model (Gemma 3 shapes): Q/K/V project d_model to heads x head_dim
  // and O projects back (projShape).
  if (!(m.ropeTheta > 0 && std::isfinite(m.ropeTheta)))
    invalid(where + ".model.rope_theta", "must be positive and finite", "> 0", std::to_string(m.ropeTheta));
  if (!(m.normEps > 0 && m.normEps < 1))
    invalid(where + ".model.norm_eps", "out of range", "(0, 1)", std::to_string(m.normEps));

  validateAssignment(t.attention, m.layers, where + ".attention");
  validateAssignment(t.ffn, m.layers, where + ".ffn");
  const int64_t minAttn = std::min(m.dModel, m.heads * m.headDim);
  if (t.attention.loraRank > minAttn / 2)
    invalid(where + ".attention.lora_rank", "LoRA rank above half the matrix dimensions",
            "<= " + std::to_string(minAttn / 2), std::to_string(t.attention.loraRank),
            "a LoRA that large costs more than the weights it adapts");
  if (t.ffn.loraRank > std::min(m.dModel, m.ffn) / 2)
    invalid(where + ".ffn.lora_rank", "LoRA rank above half the matrix dimensions",
            "<= " + std::to_string(std::min(m.dModel, m.ffn) / 2), std::to_string(t.ffn.loraRank));

  if (t.embedding.factorRank < 0 || t.embedding.factorRank >= m.dModel)
    invalid(where + ".embedding.factor_rank", "factor rank out of range",
            "0 (no factorisation) .. d_model - 1", std::to_string(t.embedding.factorRank));

  const HeadSharing& hs = t.headSharing;
  if (hs.mode != HeadSharingMode::None) {
    // [LRS, Eq. 1]: W_i = W_base + A_i B_i, A_i d x r, B_i r x d_head. Any r the paper uses is accepted
    // (Table 1: 22 to 192); one of d_head or more adds parameters and no expressiveness (topologyNotes).
    if (hs.loraRank < 0 || hs.loraRank > m.dModel)
      invalid(where + ".head_sharing.lora_rank", "per-head LoRA rank out of range",
              "0.." + std::to_string(m.dModel) + " (d_model)", std::to_string(hs.loraRank));
    for (Proj p : hs.projections)
      if (p != Proj::Q && p != Proj::K && p != Proj::V)
        invalid(where + ".head_sharing.projections", "heads share a base only in q, k or v", "q, k, v",
                std::string(projName(p)));
  }
  if (t.masa.enabled) {
    if (hs.mode != HeadSharingMode::None)
      invalid(where + ".masa", "MASA and head sharing cannot be combined", "one of them", "both",
              "MASA already shares whole projections through its atoms");
    for (Proj p : t.masa.projections)
      if (!isAttentionProj(p))
        invalid(where + ".masa.projections", "MASA applies to attention projections", "q, k, v or o",
                std::string(projName(p)));
    const auto groups = t.masa.effectiveGroups(m.layers);
    std::set<int64_t> seen;
    for (const auto& g : groups) {
      if (g.empty()) invalid(where + ".masa.groups", "empty layer group", "at least one layer", "[]");
      for (int64_t l : g) {
        if (l < 0 || l >= m.layers)
          invalid(where + ".masa.groups", "layer out of range", "0.." + std::to_string(m.layers - 1),
                  std::to_string(l));
        if (!seen.insert(l).second)
          invalid(where + ".masa.groups", "layer in two groups", "each layer once", std::to_string(l));
      }
      if (t.masa.atoms < 1 || t.masa.atoms > static_cast<int64_t>(g.size()))
        invalid(where + ".masa.atoms", "atoms per group out of range",
                "1.." + std::to_string(g.size()) + " (the group's size)", std::to_string(t.masa.atoms),
                "more atoms than layers shares nothing");
    }
    if (static_cast<int64_t>(seen.size()) != m.layers)
      invalid(where + ".masa.groups", "every layer needs a group", std::to_string(m.layers) + " layers",
              std::to_string(seen.size()) + " covered");
    if (t.masa.mlpCoefficients && (t.masa.blockEmbeddingDim < 1 || t.masa.mlpHidden < 1 ||
                                   t.masa.blockEmbeddingDim > 4096 || t.masa.mlpHidden > 4096))
      invalid(where + ".masa", "MLP coefficient sizes out of range", "1..4096",
              std::to_string(t.masa.blockEmbeddingDim) + ", " + std::to_string(t.masa.mlpHidden));
  }
  if (!t.tiedHeads.empty()) {
    for (int64_t l = 0; l < m.layers; ++l)
      if (t.attention.assign[static_cast<size_t>(l)] != l || hs.mode != HeadSharingMode::None ||
          t.masaCovers(Proj::Q))
        invalid(where + ".tied_heads", "tied units need unshared attention",
                "every layer its own attention block", "layer sharing, head sharing or MASA on q",
                "tie heads in an unshared model (DirectShare)");
    std::set<std::pair<int64_t, int64_t>> targets;
    for (size_t i = 0; i < t.tiedHeads.size(); ++i) {
      const HeadTie& tie = t.tiedHeads[i];
      validateHeadTie(tie, m, where + ".tied_heads[" + std::to_string(i) + "]");
      if (!targets.insert({tie.targetLayer, tie.targetUnit}).second)
        invalid(where + ".tied_heads[" + std::to_string(i) + "]", "unit tied twice", "one source per target",
                "[" + std::to_string(tie.targetLayer) + ", " + std::to_string(tie.targetUnit) + "] again");
    }
    for (const HeadTie& tie : t.tiedHeads)
      if (targets.count({tie.sourceLayer, tie.sourceUnit}))
        invalid(where + ".tied_heads", "a tied unit's source is itself tied",
                "sources that keep their weights",
                "[" + std::to_string(tie.sourceLayer) + ", " + std::to_string(tie.sourceUnit) + "]",
                "point the tie at the original source");
  }
  if (!(t.postShare.gamma >= 0 && std::isfinite(t.postShare.gamma)))
    invalid(where + ".postshare.gamma", "penalty weight must be finite and >= 0", ">= 0",
            std::to_string(t.postShare.gamma));
  for (size_t i = 0; i < t.postShare.pairs.size(); ++i)
    validateHeadTie(t.postShare.pairs[i], m, where + ".postshare.pairs[" + std::to_string(i) + "]");
  if (t.postShare.gamma > 0 && t.postShare.pairs.empty())
    invalid(where + ".postshare", "a PostShare penalty needs head pairs", "pairs", "none");
}

std::vector<std::string> topologyNotes(const Topology& t) {
  std::vector<std::string> notes;
  const HeadSharing& hs = t.headSharing;
  if (hs.mode != HeadSharingMode::None && hs.loraRank >= t.model.headDim)
    notes.push_back("per-head LoRA rank " + std::to_string(hs.loraRank) + " >= head_dim " +
                    std::to_string(t.model.headDim) +
                    ": A_i B_i has rank at most head_dim, so the heads are already independent and the extra "
                    "rank only adds parameters (LRS Eq. 1)");
  return notes;
}

Json topologyToJson(const Topology& t) {
  Json masa = {{"enabled", t.masa.enabled},
               {"projections", projList(t.masa.projections)},
               {"atoms", t.masa.atoms},
               {"mlp_coefficients", t.masa.mlpCoefficients},
               {"block_embedding_dim", t.masa.blockEmbeddingDim},
               {"mlp_hidden", t.masa.mlpHidden}};
  if (!t.masa.groups.empty()) masa["groups"] = t.masa.groups;
  Json ties = Json::array(), post = Json::array();
  for (const HeadTie& tie : t.tiedHeads) ties.push_back(tieJson(tie));
  for (const HeadTie& tie : t.postShare.pairs) post.push_back(tieJson(tie));
  return {{"schema", kTopologySchema},
          {"name", t.name},
          {"model",
           {{"vocab", t.model.vocab},
            {"d_model", t.model.dModel},
            {"n_layers", t.model.layers},
            {"n_heads", t.model.heads},
            {"n_kv_heads", t.model.kvHeads},
            {"head_dim", t.model.headDim},
            {"ffn_dim", t.model.ffn},
            {"context", t.model.context},
            {"norm", "rmsnorm"},
            {"activation", "swiglu"},
            {"rope_theta", t.model.ropeTheta},
            {"norm_eps", t.model.normEps}}},
          {"embedding", {{"tied", t.embedding.tied}, {"factor_rank", t.embedding.factorRank}}},
          {"attention", {{"assign", t.attention.assign}, {"lora_rank", t.attention.loraRank}}},
          {"ffn", {{"assign", t.ffn.assign}, {"lora_rank", t.ffn.loraRank}}},
          {"head_sharing",
           {{"mode", headSharingName(t.headSharing.mode)},
            {"lora_rank", t.headSharing.loraRank},
            {"projections", projList(t.headSharing.projections)}}},
          {"masa", masa},
          {"tied_heads", ties},
          {"postshare", {{"gamma", t.postShare.gamma}, {"pairs", post}}},
          {"provenance",
           {{"pattern", t.provenance.pattern},
            {"unique_blocks", t.provenance.uniqueBlocks},
            {"depth_multiplier", t.provenance.depthMultiplier},
            {"note", t.provenance.note}}}};
}

Topology topologyFromJson(const Json& json, const std::string& where) {
  const JsonObject root(json, where);
  root.allowOnly({"schema", "name", "model", "embedding", "attention", "ffn", "head_sharing", "masa",
                  "tied_heads", "postshare", "provenance"});
  if (root.has("schema") && root.requireString("schema") != kTopologySchema)
    root.fail("schema", "unsupported topology schema", kTopologySchema, root.requireString("schema"),
              "this ShareLens reads sharelens.topology/1 files");
  Topology t;
  t.name = root.optionalString("name").value_or("untitled");
  const JsonObject m = root.requireObject("model");
  m.allowOnly({"vocab", "d_model", "n_layers", "n_heads", "n_kv_heads", "head_dim", "ffn_dim", "context",
               "norm", "activation", "rope_theta", "norm_eps"});
  t.model.vocab = m.requireInt("vocab");
  t.model.dModel = m.requireInt("d_model");
  t.model.layers = m.requireInt("n_layers");
  t.model.heads = m.requireInt("n_heads");
  t.model.kvHeads = m.optionalInt("n_kv_heads").value_or(t.model.heads);
  t.model.headDim =
      m.optionalInt("head_dim").value_or(t.model.heads > 0 ? t.model.dModel / t.model.heads : 0);
  t.model.ffn = m.requireInt("ffn_dim");
  t.model.context = m.requireInt("context");
  t.model.ropeTheta = m.optionalNumber("rope_theta").value_or(10000.0);
  t.model.normEps = m.optionalNumber("norm_eps").value_or(1e-5);
  if (auto norm = m.optionalString("norm"); norm && *norm != "rmsnorm")
    m.fail("norm", "unsupported normalisation", "rmsnorm", *norm);
  if (auto act = m.optionalString("activation"); act && *act != "swiglu")
    m.fail("activation", "unsupported activation", "swiglu", *act);
  if (auto e = root.optionalObject("embedding")) {
    e->allowOnly({"tied", "factor_rank"});
    t.embedding.tied = e->optionalBool("tied").value_or(true);
    t.embedding.factorRank = e->optionalInt("factor_rank").value_or(0);
  }
  auto identity = [&] {
    BlockSharing s;
    for (int64_t l = 0; l < t.model.layers; ++l) s.assign.push_back(l);
    return s;
  };
  t.attention = root.has("attention") ? blockSharingFromJson(root.requireObject("attention")) : identity();
  t.ffn = root.has("ffn") ? blockSharingFromJson(root.requireObject("ffn")) : identity();
  if (auto hs = root.optionalObject("head_sharing")) {
    hs->allowOnly({"mode", "lora_rank", "projections"});
    const std::string mode = hs->optionalString("mode").value_or("none");
    const auto* it = std::find(std::begin(kHeadSharingNames), std::end(kHeadSharingNames), mode);
    if (it == std::end(kHeadSharingNames))
      hs->fail("mode", "unknown head-sharing mode", "none, shared_base or qkv_shared", mode);
    t.headSharing.mode = static_cast<HeadSharingMode>(it - std::begin(kHeadSharingNames));
    t.headSharing.loraRank = hs->optionalInt("lora_rank").value_or(0);
    t.headSharing.projections = parseProjList(*hs, "projections", t.headSharing.projections);
  }
  if (auto masa = root.optionalObject("masa")) {
    masa->allowOnly({"enabled", "projections", "atoms", "groups", "mlp_coefficients", "block_embedding_dim",
                     "mlp_hidden"});
    t.masa.enabled = masa->optionalBool("enabled").value_or(false);
    t.masa.projections = parseProjList(*masa, "projections", t.masa.projections);
    t.masa.atoms = masa->optionalInt("atoms").value_or(t.masa.atoms);
    t.masa.groups = groupsFromJson(*masa, "groups");
    t.masa.mlpCoefficients = masa->optionalBool("mlp_coefficients").value_or(false);
    t.masa.blockEmbeddingDim = masa->optionalInt("block_embedding_dim").value_or(t.masa.blockEmbeddingDim);
    t.masa.mlpHidden = masa->optionalInt("mlp_hidden").value_or(t.masa.mlpHidden);
  }
  if (root.has("tied_heads")) {
    const Json& ties = root.requireArray("tied_heads");
    for (size_t i = 0; i < ties.size(); ++i)
      t.tiedHeads.push_back(tieFromJson(ties[i], where + ".tied_heads[" + std::to_string(i) + "]"));
  }
  if (auto post = root.optionalObject("postshare")) {
    post->allowOnly({"gamma", "pairs"});
    t.postShare.gamma = post->optionalNumber("gamma").value_or(0.0);
    if (post->has("pairs")) {
      const Json& pairs = post->requireArray("pairs");
      for (size_t i = 0; i < pairs.size(); ++i)
        t.postShare.pairs.push_back(
            tieFromJson(pairs[i], where + ".postshare.pairs[" + std::to_string(i) + "]"));
    }
  }
  if (auto p = root.optionalObject("provenance")) {
    p->allowOnly({"pattern", "unique_blocks", "depth_multiplier", "note"});
    t.provenance.pattern = p->optionalString("pattern").value_or("custom");
    t.provenance.uniqueBlocks = p->optionalInt("unique_blocks").value_or(0);
    t.provenance.depthMultiplier = p->optionalString("depth_multiplier").value_or("1");
    t.provenance.note = p->optionalString("note").value_or("");
  }
  validateTopology(t, where);
  return t;
}

Topology readTopologyFile(const std::filesystem::path& path) {
  return topologyFromJson(readJsonFile(path), path.string());
}

void writeTopologyFile(const Topology& topology, const std::filesystem::path& path) {
  validateTopology(topology, path.string());
  writeFileAtomically(path, topologyToJson(topology).dump(2) + "\n");
}

}  // namespace sharelens
