// The analysis report: one JSON document (schema "sharelens.analysis/1", documented in the README) that
// `sharelens analyze` writes and the GUI and `sharelens export` read.
#pragma once

#include <optional>
#include <vector>

#include "analysis/activations.hpp"
#include "analysis/difference_maps.hpp"
#include "analysis/directshare.hpp"
#include "analysis/embedding_study.hpp"
#include "analysis/matrix_pca.hpp"
#include "analysis/spectra.hpp"
#include "core/json_util.hpp"

namespace sharelens {

inline constexpr const char* kAnalysisSchema = "sharelens.analysis/1";

Json toJson(const std::vector<MatrixSpectrum>& spectra);
Json toJson(const HeadDiffResult& heads);
Json toJson(const LayerDiffResult& layers);
Json toJson(const std::vector<MatrixPcaGroup>& groups);
Json toJson(const DirectShareResult& share);
Json toJson(const EmbeddingStudy& embedding);
Json toJson(const Spectrum& spectrum);
Json toJson(const ActivationResults& activations);
Json toJson(const std::vector<LearnedDictionaryMap>& dictionaries);

// Reading back (for the GUI and `sharelens export`); errors name the field.
HeadDiffResult headDiffFromJson(const Json& j);
LayerDiffResult layerDiffFromJson(const Json& j);
std::vector<MatrixSpectrum> spectraFromJson(const Json& j);
std::vector<MatrixPcaGroup> matrixPcaFromJson(const Json& j);
DirectShareResult directShareFromJson(const Json& j);
EmbeddingStudy embeddingFromJson(const Json& j);
ActivationResults activationResultsFromJson(const Json& j);
std::vector<LearnedDictionaryMap> learnedDictionaryMapsFromJson(const Json& j);

}  // namespace sharelens
