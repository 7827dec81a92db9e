#include "analysis/matrix_metrics.hpp"

#include <cmath>
#include <cstdio>
#include <unordered_map>

#include "core/atomic_file.hpp"

namespace sharelens {
namespace {

std::string number(double v) {
  if (!std::isfinite(v)) return "";  // an empty CSV cell: no value (pandas reads NaN)
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.9g", v);
  return buffer;
}

}  // namespace

std::vector<MatrixMetrics> matrixMetrics(const std::vector<MatrixEsd>& esd,
                                         const std::vector<MatrixSpectrum>* spectra) {
  std::unordered_map<std::string, const Spectrum*> byName;
  if (spectra)
    for (const MatrixSpectrum& s : *spectra)
      if (s.id.head < 0) byName[s.id.name] = &s.spectrum;
  std::vector<MatrixMetrics> rows;
  rows.reserve(esd.size());
  for (const MatrixEsd& e : esd) {
    MatrixMetrics m;
    m.name = e.id.name;
    m.layer = e.id.layer;
    m.proj = e.id.proj ? std::string(projName(*e.id.proj)) : "";
    m.rows = e.rows;
    m.cols = e.cols;
    m.alpha = e.fit.alpha;
    m.xmin = e.fit.xmin;
    m.ks = e.fit.ks;
    m.tail = e.fit.tail;
    m.lambdaMax = e.lambdaMax();
    if (const auto it = byName.find(e.id.name); it != byName.end()) {
      m.effectiveRank = static_cast<double>(it->second->effectiveRank);
      m.stableRank = it->second->stableRank();
      m.spectralNorm = it->second->spectralNorm();
    }
    rows.push_back(std::move(m));
  }
  return rows;
}

std::string matrixMetricsCsv(const std::vector<MatrixMetrics>& rows) {
  std::string out =
      "matrix,layer,projection,rows,cols,effective_rank,stable_rank,spectral_norm,alpha,xmin,tail,ks,lambda_"
      "max\n";
  for (const MatrixMetrics& m : rows)
    out += m.name + "," + std::to_string(m.layer) + "," + m.proj + "," + std::to_string(m.rows) + "," +
           std::to_string(m.cols) + "," + number(m.effectiveRank) + "," + number(m.stableRank) + "," +
           number(m.spectralNorm) + "," + number(m.alpha) + "," + number(m.xmin) + "," +
           std::to_string(m.tail) + "," + number(m.ks) + "," + number(m.lambdaMax) + "\n";
  return out;
}

void writeMatrixMetricsCsv(const std::vector<MatrixMetrics>& rows, const std::filesystem::path& path) {
  writeFileAtomically(path, matrixMetricsCsv(rows));
}

}  // namespace sharelens
