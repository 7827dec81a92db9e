// The analyses of the registry by name and result type: `results.get(analyses::kHeads)` is a
// `const HeadDiffResult*` with no string to misspell and no type to restate at the call. The registry
// (registry.cpp) builds each entry from its constant, so an id and its result type are bound in one place;
// a view, the CLI and the figure registry name analyses only through these.
#pragma once

#include <string_view>
#include <vector>

namespace sharelens {

struct ActivationResults;
struct MatrixSpectrum;
struct HeadDiffResult;
struct LayerDiffResult;
struct MatrixPcaGroup;
struct LearnedDictionaryMap;
struct DirectShareResult;
struct EmbeddingStudy;
struct MatrixEsd;

// An analysis id whose result is a T. Converts to its id where a plain name is wanted (running it, its
// state).
template <class T>
struct AnalysisId {
  using Result = T;
  std::string_view id;
  constexpr operator std::string_view() const { return id; }  // NOLINT: an id is its name
};

namespace analyses {
inline constexpr AnalysisId<ActivationResults> kActivations{"activations"};
inline constexpr AnalysisId<std::vector<MatrixSpectrum>> kSpectra{"spectra"};
inline constexpr AnalysisId<HeadDiffResult> kHeads{"heads"};
inline constexpr AnalysisId<LayerDiffResult> kLayers{"layers"};
inline constexpr AnalysisId<std::vector<MatrixPcaGroup>> kMasa{"masa"};
inline constexpr AnalysisId<std::vector<LearnedDictionaryMap>> kMasaTrained{"masa-trained"};
inline constexpr AnalysisId<DirectShareResult> kDirectShare{"directshare"};
inline constexpr AnalysisId<EmbeddingStudy> kEmbedding{"embedding"};
inline constexpr AnalysisId<EmbeddingStudy> kEmbeddingLoss{"embedding-loss"};
inline constexpr AnalysisId<std::vector<MatrixEsd>> kEsd{"esd"};
}  // namespace analyses

}  // namespace sharelens
