// The figures of the analyses, in one table: each names the analysis result it draws (analysis/registry.hpp)
// and builds its Figure from that result and the few choices a view makes (layer, projection, colormap).
// `sharelens export --view ID`, the views' export buttons and the GUI's generic analysis view iterate it,
// so a view and its export always agree. Training curves and topologies are figures of runs and topology
// files, not of analyses (figures.hpp builds them).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/registry.hpp"
#include "app/plot/colormap.hpp"
#include "app/plot/figure.hpp"

namespace sharelens::plot {

// The choices a figure depends on, each with its default.
struct FigureParams {
  std::optional<int64_t> layer;  // head maps and ESD (0 when not given); spectra: only this layer's
  Proj proj = Proj::Q;           // layer maps, spectra, MASA figures
  size_t group = 0;              // MASA coefficient map: which layer group of the projection
  bool normalised = true;        // spectra divided by sigma_1
  bool logY = true;              // spectra: a log y axis (singular values span decades)
  Colormap colormap = Colormap::Viridis;
  std::vector<std::string> matrices;  // spectra of these matrices (MatrixId names); empty: the projection at
                                      // the first, middle and last layer
  std::optional<Proj> headProj;       // head maps: one projection's heads (none: every pair, as the paper)
  bool fitRange = false;              // head maps: colours span the shown ranks, not 0..max
};

// A figure of the registry, named in code by one of the constants below, never by a string literal: the
// registry's table and the views use the same constant (a user's text, `export --view NAME`, is looked up by
// name).
struct FigureId {
  std::string_view name;
};
namespace figure_ids {
inline constexpr FigureId kSpectrum{"spectrum"};
inline constexpr FigureId kHeads{"heads"};
inline constexpr FigureId kLayers{"layers"};
inline constexpr FigureId kLayerOutputs{"layer-outputs"};
inline constexpr FigureId kKlDrift{"kl-drift"};
inline constexpr FigureId kAttentionSimilarity{"attention-similarity"};
inline constexpr FigureId kMasaCoefficients{"masa-coefficients"};
inline constexpr FigureId kMasaVariance{"masa-variance"};
inline constexpr FigureId kMasaCorrelation{"masa-correlation"};
inline constexpr FigureId kDirectShare{"directshare"};
inline constexpr FigureId kEmbeddingSpectrum{"embedding-spectrum"};
inline constexpr FigureId kEmbeddingLoss{"embedding-loss"};
inline constexpr FigureId kFactorization{"factorization"};
inline constexpr FigureId kEsd{"esd"};
inline constexpr FigureId kEsdAlpha{"esd-alpha"};
}  // namespace figure_ids

struct FigureKind {
  std::string_view id;        // "heads": the --view name and the export file stem
  std::string_view analysis;  // the registry id of the result it draws
  std::string_view summary;
  // Throws a named Error when the result cannot give this figure for these params (no such layer, ...).
  std::function<Figure(const AnalysisResult&, const FigureParams&)> build;
};

const std::vector<FigureKind>& figureKinds();
const FigureKind& figureKind(std::string_view id);  // a named Error listing the ids for an unknown one
const FigureKind& figureKind(FigureId id);
std::string figureIds();  // "spectrum, heads, ..." for usage and errors

}  // namespace sharelens::plot
