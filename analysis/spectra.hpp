// Singular-value spectra of every weight matrix: per layer and projection, per head (Q/K/V/O, GQA-aware),
// and the token embedding / untied output head. Each with effective rank, spectral and Frobenius norms and
// stable rank (DESIGN.md section 4).
#pragma once

#include <vector>

#include "analysis/analysis_ids.hpp"
#include "analysis/backend.hpp"
#include "analysis/weights.hpp"

namespace sharelens {

struct SpectraOptions {
  double threshold = 0.95;
  bool perHead = true;
  bool embeddings = true;
};

struct MatrixSpectrum {
  MatrixId id;
  Spectrum spectrum;
};

std::vector<MatrixSpectrum> computeSpectra(const Checkpoint& ckpt, const ModelView& view,
                                           LinalgBackend& backend, const SpectraOptions& options,
                                           const TaskContext& ctx);

// The spectrum of one matrix (the GUI's "open this cell's spectrum").
Spectrum computeSpectrum(const FloatMatrix& m, LinalgBackend& backend, double threshold,
                         const TaskContext& ctx);

// Its typed id (AnalysisId<T>: analysis_ids.hpp), from which registry.cpp builds its entry and by which
// views and the CLI ask for its result (`results.get(analyses::kX)` is the result typed).
namespace analyses {
inline constexpr AnalysisId<std::vector<MatrixSpectrum>> kSpectra{"spectra"};
}  // namespace analyses

}  // namespace sharelens
