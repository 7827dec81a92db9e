#include "app/plot/figure_registry.hpp"

#include <algorithm>

#include "analysis/activations.hpp"
#include "analysis/difference_maps.hpp"
#include "analysis/directshare.hpp"
#include "analysis/embedding_study.hpp"
#include "analysis/matrix_pca.hpp"
#include "analysis/spectra.hpp"
#include "app/plot/figures.hpp"
#include "core/error.hpp"

namespace sharelens::plot {
namespace {

[[noreturn]] void noSuch(const std::string& what, const std::string& expected, const std::string& found) {
  throw Error({.what = what, .where = "figure", .expected = expected, .found = found});
}

std::vector<const MatrixPcaGroup*> groupsOf(const std::vector<MatrixPcaGroup>& all, Proj p) {
  std::vector<const MatrixPcaGroup*> out;
  for (const MatrixPcaGroup& g : all)
    if (g.proj == p) out.push_back(&g);
  if (out.empty()) noSuch("no matrix PCA for this projection", "one of the analysed projections", std::string(projName(p)));
  return out;
}

std::vector<FigureKind> makeKinds() {
  std::vector<FigureKind> k;
  k.push_back({"spectrum", "spectra", "singular values of chosen matrices (log y)",
               [](const AnalysisResult& r, const FigureParams& p) {
                 const auto& spectra = *resultAs<std::vector<MatrixSpectrum>>(r);
                 int64_t layers = 0;
                 for (const MatrixSpectrum& s : spectra) layers = std::max(layers, s.id.layer + 1);
                 std::vector<const MatrixSpectrum*> chosen;
                 for (const MatrixSpectrum& s : spectra) {
                   const bool named = std::find(p.matrices.begin(), p.matrices.end(), s.id.name) != p.matrices.end();
                   const bool byDefault = p.matrices.empty() && s.id.proj == p.proj && s.id.head < 0 &&
                                          (s.id.layer == 0 || s.id.layer == layers / 2 || s.id.layer == layers - 1);
                   if (named || byDefault) chosen.push_back(&s);
                 }
                 return spectrumFigure(chosen, p.normalised, "Singular-value spectra");
               }});
  k.push_back({"heads", "heads", "effective rank of W_a - W_b for the heads of one layer",
               [](const AnalysisResult& r, const FigureParams& p) {
                 const auto& h = *resultAs<HeadDiffResult>(r);
                 if (p.layer < 0 || p.layer >= static_cast<int64_t>(h.layers.size()))
                   noSuch("layer out of range", "0.." + std::to_string(h.layers.size() - 1), std::to_string(p.layer));
                 return headDifferenceFigure(h.layers[static_cast<size_t>(p.layer)], h.threshold, p.colormap);
               }});
  k.push_back({"layers", "layers", "effective rank of W_l - W_m for one projection",
               [](const AnalysisResult& r, const FigureParams& p) {
                 const auto& l = *resultAs<LayerDiffResult>(r);
                 const auto it = std::find_if(l.maps.begin(), l.maps.end(), [&](const LayerDiffMap& m) { return m.proj == p.proj; });
                 if (it == l.maps.end()) noSuch("no layer map for this projection", "an analysed projection", std::string(projName(p.proj)));
                 return layerDifferenceFigure(*it, l.threshold, p.colormap);
               }});
  k.push_back({"layer-outputs", "activations", "effective rank of dh_l - dh_m over text",
               [](const AnalysisResult& r, const FigureParams& p) {
                 const auto& a = *resultAs<ActivationResults>(r);
                 return layerOutputDifferenceFigure(a.layerOutputs, a.tokens, a.threshold, p.colormap);
               }});
  k.push_back({"kl-drift", "activations", "logit-lens KL drift between consecutive layers and its MASA groups",
               [](const AnalysisResult& r, const FigureParams&) {
                 const auto& a = *resultAs<ActivationResults>(r);
                 return klDriftFigure(a.klDrift, a.groups);
               }});
  k.push_back({"attention-similarity", "activations", "cosine similarity of heads' attention maps over text",
               [](const AnalysisResult& r, const FigureParams& p) {
                 const auto& a = *resultAs<ActivationResults>(r);
                 return attentionSimilarityFigure(a.attentionSimilarity, a.headLabels, p.colormap);
               }});
  k.push_back({"masa-coefficients", "masa", "Matrix PCA coefficients of one projection's layer group",
               [](const AnalysisResult& r, const FigureParams& p) {
                 const auto groups = groupsOf(*resultAs<std::vector<MatrixPcaGroup>>(r), p.proj);
                 return masaCoefficientFigure(*groups[std::min(p.group, groups.size() - 1)]);
               }});
  k.push_back({"masa-variance", "masa", "variance explained against the number of atoms",
               [](const AnalysisResult& r, const FigureParams& p) {
                 return masaVarianceFigure(groupsOf(*resultAs<std::vector<MatrixPcaGroup>>(r), p.proj));
               }});
  k.push_back({"masa-correlation", "masa-trained", "atom correlation of a learned MASA dictionary",
               [](const AnalysisResult& r, const FigureParams& p) {
                 const auto& maps = *resultAs<std::vector<LearnedDictionaryMap>>(r);
                 const auto it = std::find_if(maps.begin(), maps.end(), [&](const LearnedDictionaryMap& m) { return m.proj == p.proj; });
                 if (it == maps.end())
                   throw Error({.what = "no learned MASA atoms for this projection", .where = "figure masa-correlation",
                                .found = std::string(projName(p.proj)),
                                .hint = "the atom-correlation map needs a ShareLens checkpoint trained with MASA on it"});
                 return atomCorrelationFigure(it->correlation, "(learned atoms, " + std::string(projName(p.proj)) + ")");
               }});
  k.push_back({"directshare", "directshare", "cosine similarity of [W_q ; W_k] between units",
               [](const AnalysisResult& r, const FigureParams&) { return directShareFigure(*resultAs<DirectShareResult>(r)); }});
  k.push_back({"embedding-spectrum", "embedding", "singular values of the token embedding",
               [](const AnalysisResult& r, const FigureParams&) { return embeddingSpectrumFigure(*resultAs<EmbeddingStudy>(r)); }});
  k.push_back({"factorization", "embedding", "factorisation error (and validation loss) against the rank",
               [](const AnalysisResult& r, const FigureParams&) { return factorizationFigure(*resultAs<EmbeddingStudy>(r)); }});
  return k;
}

}  // namespace

const std::vector<FigureKind>& figureKinds() {
  static const std::vector<FigureKind> kinds = makeKinds();
  return kinds;
}

std::string figureIds() {
  std::string ids;
  for (const FigureKind& k : figureKinds()) ids += (ids.empty() ? "" : ", ") + std::string(k.id);
  return ids;
}

const FigureKind& figureKind(std::string_view id) {
  for (const FigureKind& k : figureKinds())
    if (k.id == id) return k;
  throw Error({.what = "unknown view", .where = "--view", .expected = figureIds() + ", training or topology",
               .found = "'" + std::string(id) + "'"});
}

}  // namespace sharelens::plot
