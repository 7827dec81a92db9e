#include "core/topology_edit.hpp"

#include <algorithm>
#include <map>
#include <optional>

#include "core/error.hpp"

namespace sharelens {

void renumberBlocks(BlockSharing& s) {
  std::map<int64_t, int64_t> renamed;
  for (int64_t& b : s.assign) {
    auto [it, inserted] = renamed.emplace(b, static_cast<int64_t>(renamed.size()));
    b = it->second;
  }
}

int64_t paintBlock(Topology& t, DesignColumn column, int64_t layer, int64_t block) {
  BlockSharing& s = column == DesignColumn::Attention ? t.attention : t.ffn;
  if (layer < 0 || layer >= static_cast<int64_t>(s.assign.size())) return block;
  s.assign[static_cast<size_t>(layer)] = std::clamp<int64_t>(block, 0, s.uniqueBlocks());
  renumberBlocks(s);
  const std::optional<SharingPattern> pattern =
      recognizePattern(t.attention, t.model.layers, parsePattern(t.provenance.pattern));
  t.provenance.pattern =
      pattern && t.ffn.assign == t.attention.assign ? std::string(patternName(*pattern)) : "custom";
  t.provenance.note = "painted in the designer";
  return s.assign[static_cast<size_t>(layer)];
}

std::optional<SharingPattern> recognizePattern(const BlockSharing& s, int64_t layers,
                                               std::optional<SharingPattern> preferred) {
  if (static_cast<int64_t>(s.assign.size()) != layers) return std::nullopt;
  auto is = [&](SharingPattern p) {
    try {
      return patternAssignment(p, layers, s.uniqueBlocks()) == s.assign;
    } catch (const Error&) {  // not a U this pattern can have
      return false;
    }
  };
  if (preferred && is(*preferred)) return preferred;
  for (SharingPattern p : kAllPatterns)
    if (is(p)) return p;
  return std::nullopt;
}

std::optional<int64_t> recognizeInteriorTie(const Topology& t) {
  const int64_t layers = t.model.layers;
  if (t.ffn.assign == t.attention.assign) return std::nullopt;
  for (int64_t k = 0; layers - 2 * k >= 2; ++k)  // two interior layers at least: one is no tying
    if (interiorTieAssignment(layers, k) == t.ffn.assign) return k;
  return std::nullopt;
}

std::string describeDesign(const Topology& t) {
  const std::optional<SharingPattern> pattern =
      recognizePattern(t.attention, t.model.layers, parsePattern(t.provenance.pattern));
  std::string name = std::string(pattern ? patternName(*pattern) : "custom") + "-L" +
                     std::to_string(t.model.layers) + "-U" + std::to_string(t.attention.uniqueBlocks());
  if (const auto k = recognizeInteriorTie(t))
    name += "-ffn-tied" + std::to_string(*k);
  else if (t.ffn.assign != t.attention.assign)
    name += "-ffnU" + std::to_string(t.ffn.uniqueBlocks());
  if (t.attention.loraRank > 0) name += "-lora" + std::to_string(t.attention.loraRank);
  if (t.ffn.loraRank > 0 && t.ffn.loraRank != t.attention.loraRank)
    name += "-ffnlora" + std::to_string(t.ffn.loraRank);
  if (t.headSharing.mode == HeadSharingMode::SharedBase)
    name += "-heads-r" + std::to_string(t.headSharing.loraRank);
  if (t.headSharing.mode == HeadSharingMode::QkvShared)
    name += "-qkv-r" + std::to_string(t.headSharing.loraRank);
  if (t.masa.enabled) {
    name += "-masa" + std::to_string(t.masa.atoms) + "-";
    for (Proj p : {Proj::Q, Proj::K, Proj::V, Proj::O})
      if (std::find(t.masa.projections.begin(), t.masa.projections.end(), p) != t.masa.projections.end())
        name += projName(p);
  }
  if (!t.tiedHeads.empty()) name += "-ties" + std::to_string(t.tiedHeads.size());
  if (t.embedding.tied) name += "-tied";
  if (t.embedding.factorRank > 0) name += "-emb" + std::to_string(t.embedding.factorRank);
  return name;
}

std::string applyPattern(Topology& t, SharingPattern pattern, int64_t unique) {
  const std::optional<int64_t> interiorTie = recognizeInteriorTie(t);
  t.attention.assign =
      patternAssignment(pattern, t.model.layers, std::clamp<int64_t>(unique, 1, t.model.layers));
  t.ffn.assign = interiorTie && 2 * *interiorTie < t.model.layers
                     ? interiorTieAssignment(t.model.layers, *interiorTie)
                     : t.attention.assign;
  t.provenance.pattern = std::string(patternName(pattern));
  t.provenance.uniqueBlocks = t.attention.uniqueBlocks();
  t.provenance.note = std::string(patternNote(pattern)) + (interiorTie ? "; interior FFN tied" : "");
  t.name = describeDesign(t);
  if (t.tiedHeads.empty() || t.attention.uniqueBlocks() == t.model.layers) return "";
  const size_t dropped = t.tiedHeads.size();
  t.tiedHeads.clear();  // ties need unshared attention
  t.name = describeDesign(t);
  return std::to_string(dropped) + " tied head pair" + (dropped == 1 ? "" : "s") +
         " dropped: tying heads needs every layer's attention unshared, and this pattern shares it";
}

int64_t mergeTiedHeads(Topology& design, const Topology& incoming) {
  const ModelDims &a = design.model, &b = incoming.model;
  if (a.layers != b.layers || a.heads != b.heads || a.kvHeads != b.kvHeads || a.headDim != b.headDim ||
      a.dModel != b.dModel)
    throw Error({.what = "the tied heads belong to a model of another shape",
                 .where = "merge into the design '" + design.name + "'",
                 .expected = std::to_string(a.layers) + " layers, " + std::to_string(a.heads) + " heads (" +
                             std::to_string(a.kvHeads) + " KV) of " + std::to_string(a.headDim),
                 .found = std::to_string(b.layers) + " layers, " + std::to_string(b.heads) + " heads (" +
                          std::to_string(b.kvHeads) + " KV) of " + std::to_string(b.headDim),
                 .hint = "replace the design instead, or load a design of the model's shape"});
  if (design.attention.uniqueBlocks() != design.model.layers)
    throw Error({.what = "the design shares attention between layers",
                 .where = "merge into the design '" + design.name + "'",
                 .hint = "tied head pairs need every layer's attention unshared; choose the vanilla pattern "
                         "first, or replace the design"});
  int64_t added = 0;
  for (const HeadTie& tie : incoming.tiedHeads) {
    const bool taken = std::any_of(design.tiedHeads.begin(), design.tiedHeads.end(), [&](const HeadTie& h) {
      return h.targetLayer == tie.targetLayer && h.targetUnit == tie.targetUnit;
    });
    if (taken) continue;
    design.tiedHeads.push_back(tie);
    ++added;
  }
  return added;
}

void resizeLayers(Topology& t, int64_t layers) {
  layers = std::max<int64_t>(1, layers);
  const std::optional<SharingPattern> named =
      recognizePattern(t.attention, t.model.layers, parsePattern(t.provenance.pattern));
  const std::optional<int64_t> interiorTie = recognizeInteriorTie(t);
  const bool rebuild = named.has_value() && (t.ffn.assign == t.attention.assign || interiorTie);
  const SharingPattern pattern = named.value_or(SharingPattern::Vanilla);
  const int64_t unique = t.attention.uniqueBlocks();
  for (BlockSharing* s : {&t.attention, &t.ffn}) {
    while (static_cast<int64_t>(s->assign.size()) < layers) s->assign.push_back(s->uniqueBlocks());
    s->assign.resize(static_cast<size_t>(layers));
    renumberBlocks(*s);
  }
  t.model.layers = layers;
  std::erase_if(t.tiedHeads,
                [&](const HeadTie& h) { return h.targetLayer >= layers || h.sourceLayer >= layers; });
  std::erase_if(t.postShare.pairs,
                [&](const HeadTie& h) { return h.targetLayer >= layers || h.sourceLayer >= layers; });
  t.masa.groups.clear();
  if (rebuild) {
    if (interiorTie && layers - 2 * *interiorTie >= 2)
      t.ffn.assign = interiorTieAssignment(layers, *interiorTie);
    try {
      applyPattern(t, pattern, pattern == SharingPattern::Vanilla ? layers : std::min(unique, layers));
    } catch (const Error&) {  // not a depth the pattern has (Bulge under 3 blocks): extended or cut as is
    }
  }
  t.name = describeDesign(t);
}

void syncHeadDim(ModelDims& m) {
  m.heads = std::max<int64_t>(1, m.heads);
  m.kvHeads = std::clamp<int64_t>(m.kvHeads, 1, m.heads);
  while (m.heads % m.kvHeads != 0) --m.kvHeads;
  m.headDim = std::max<int64_t>(2, m.dModel / m.heads / 2 * 2);
  m.dModel = m.headDim * m.heads;
}

}  // namespace sharelens
