// A topology's figures: its layer -> block map and the same assignment as a graph.
#include <algorithm>
#include <cmath>
#include <map>

#include "app/plot/figures.hpp"

namespace sharelens::plot {

Figure topologyFigure(const Topology& t) {
  Figure f;
  f.title = "Topology " + t.name;
  f.subtitle = t.provenance.pattern + ": " + t.provenance.note;
  Heatmap h;
  h.rows = t.model.layers;
  h.cols = 2;
  const int64_t blocks = std::max(t.attention.uniqueBlocks(), t.ffn.uniqueBlocks());
  for (int64_t l = 0; l < t.model.layers; ++l) {
    h.values.push_back(static_cast<float>(t.attention.assign[static_cast<size_t>(l)]));
    h.values.push_back(static_cast<float>(t.ffn.assign[static_cast<size_t>(l)]));
  }
  h.colormap = Colormap::Viridis;
  h.vmin = 0;
  h.vmax = static_cast<double>(std::max<int64_t>(1, blocks - 1));
  h.colorbarLabel = "unique block";
  for (int64_t b = 0; b < blocks; ++b) h.categories.push_back("block " + std::to_string(b));
  h.colLabels = {"attention", "FFN"};
  h.rowLabels = numberedLabels("layer ", t.model.layers);
  h.squareCells = false;  // two columns of kinds beside L layers: square cells would leave a thin strip
  f.heatmap = std::move(h);
  return f;
}

Figure topologyGraphFigure(const Topology& t) {
  Figure f;
  f.title = "Blocks of " + t.name;
  const auto lora = [](const BlockSharing& s) {
    return s.loraRank > 0 ? " + LoRA r" + std::to_string(s.loraRank) : std::string();
  };
  f.subtitle = std::to_string(t.attention.uniqueBlocks()) + " attention blocks" + lora(t.attention) + ", " +
               std::to_string(t.ffn.uniqueBlocks()) + " FFN blocks" + lora(t.ffn) + " for " +
               std::to_string(t.model.layers) + " layers";
  f.xCategories = {"attention blocks", "layers", "FFN blocks"};
  f.yLabel = "layer";
  f.xRange = Range{-0.4, 2.4};
  const double layers = static_cast<double>(t.model.layers);
  f.yRange = Range{-0.6, layers - 0.4};
  f.yDown = true;  // layer 0 at the top, as the Designer's column lists them
  f.hoverNearestOnly = true;
  f.legend = false;
  // Block b in the colour the topology map gives it (topologyFigure's categories).
  const int64_t blocks = std::max(t.attention.uniqueBlocks(), t.ffn.uniqueBlocks());
  auto colorOf = [&](int64_t b) { return categoryColor(b, blocks, Colormap::Viridis); };  // topologyFigure's
  for (int side = 0; side < 2; ++side) {
    const BlockSharing& s = side == 0 ? t.attention : t.ffn;
    const int64_t unique = s.uniqueBlocks();
    const double blockX = side == 0 ? 0.0 : 2.0;
    // Block b sits at the height of the middle of the b-th of `unique` equal bands of the layers' column.
    auto blockY = [&](int64_t b) {
      return (static_cast<double>(b) + 0.5) * layers / static_cast<double>(unique) - 0.5;
    };
    for (int64_t l = 0; l < t.model.layers; ++l) {
      const int64_t b = s.assign[static_cast<size_t>(l)];
      Series edge;
      edge.label = (side == 0 ? "A" : "F") + std::to_string(b) + " - layer " + std::to_string(l);
      edge.x = side == 0 ? std::vector<double>{blockX, 1.0} : std::vector<double>{1.0, blockX};
      edge.y = side == 0 ? std::vector<double>{blockY(b), static_cast<double>(l)}
                         : std::vector<double>{static_cast<double>(l), blockY(b)};
      edge.color = colorOf(b);
      edge.width = 1.8f;
      f.series.push_back(std::move(edge));
    }
    for (int64_t b = 0; b < unique; ++b) {
      Series node;
      node.label = std::string(side == 0 ? "attention" : "FFN") + " block " + std::to_string(b) +
                   ", used by " + std::to_string(s.usersOf(b)) + (s.usersOf(b) == 1 ? " layer" : " layers");
      node.x = {blockX};
      node.y = {blockY(b)};
      node.style = SeriesStyle::Markers;
      node.color = colorOf(b);
      f.series.push_back(std::move(node));
    }
  }
  for (int64_t l = 0; l < t.model.layers; ++l) {  // one series each: markers in one pixel column would
    Series node;                                  // be drawn as that column's two extremes only
    node.label = "layer " + std::to_string(l) + ": A" +
                 std::to_string(t.attention.assign[static_cast<size_t>(l)]) + ", F" +
                 std::to_string(t.ffn.assign[static_cast<size_t>(l)]);
    node.x = {1.0};
    node.y = {static_cast<double>(l)};
    node.style = SeriesStyle::Markers;
    node.color = Rgb{150, 150, 150};
    f.series.push_back(std::move(node));
  }
  return f;
}

}  // namespace sharelens::plot
