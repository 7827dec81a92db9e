#include "app/gui/designer_logic.hpp"

#include <algorithm>
#include <map>

namespace sharelens::gui {

void renumberBlocks(BlockSharing& s) {
  std::map<int64_t, int64_t> renamed;
  for (int64_t& b : s.assign) {
    auto [it, inserted] = renamed.emplace(b, static_cast<int64_t>(renamed.size()));
    b = it->second;
  }
}

void paintBlock(Topology& t, DesignColumn column, int64_t layer, int64_t block) {
  BlockSharing& s = column == DesignColumn::Attention ? t.attention : t.ffn;
  if (layer < 0 || layer >= static_cast<int64_t>(s.assign.size())) return;
  s.assign[static_cast<size_t>(layer)] = std::clamp<int64_t>(block, 0, s.uniqueBlocks());
  renumberBlocks(s);
  t.provenance.pattern = "custom";
  t.provenance.note = "painted in the designer";
}

void applyPattern(Topology& t, SharingPattern pattern, int64_t unique) {
  t.attention.assign = patternAssignment(pattern, t.model.layers, std::clamp<int64_t>(unique, 1, t.model.layers));
  t.ffn.assign = t.attention.assign;
  t.provenance.pattern = std::string(patternName(pattern));
  t.provenance.uniqueBlocks = t.attention.uniqueBlocks();
  t.provenance.note = std::string(patternNote(pattern));
  t.tiedHeads.clear();  // ties need unshared attention
}

void resizeLayers(Topology& t, int64_t layers) {
  layers = std::max<int64_t>(1, layers);
  for (BlockSharing* s : {&t.attention, &t.ffn}) {
    while (static_cast<int64_t>(s->assign.size()) < layers) s->assign.push_back(s->uniqueBlocks());
    s->assign.resize(static_cast<size_t>(layers));
    renumberBlocks(*s);
  }
  t.model.layers = layers;
  std::erase_if(t.tiedHeads, [&](const HeadTie& h) { return h.targetLayer >= layers || h.sourceLayer >= layers; });
  std::erase_if(t.postShare.pairs, [&](const HeadTie& h) { return h.targetLayer >= layers || h.sourceLayer >= layers; });
  t.masa.groups.clear();
}

void syncHeadDim(ModelDims& m) {
  m.heads = std::max<int64_t>(1, m.heads);
  m.kvHeads = std::clamp<int64_t>(m.kvHeads, 1, m.heads);
  while (m.heads % m.kvHeads != 0) --m.kvHeads;
  m.headDim = std::max<int64_t>(2, m.dModel / m.heads / 2 * 2);
  m.dModel = m.headDim * m.heads;
}

}  // namespace sharelens::gui
