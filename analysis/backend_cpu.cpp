// The CPU backend: double-precision Gram + dsyevd, parallel over matrices with single-threaded BLAS inside.
#include <algorithm>

#include "analysis/backend.hpp"
#include "analysis/linalg_cpu.hpp"
#include "core/blas_threads.hpp"
#include "core/parallel.hpp"

namespace sharelens {
namespace {

class CpuBackend : public LinalgBackend {
 public:
  std::string name() const override { return "cpu (LAPACK dsyevd on double-precision Gram matrices)"; }

  std::vector<GramSpectrum> gramSpectra(std::span<const FloatMatrix* const> matrices,
                                        const TaskContext& ctx) override {
    SingleThreadedBlas single;
    std::vector<GramSpectrum> out(matrices.size());
    parallelFor(matrices.size(), ctx, [&](size_t i) {
      SymmetricMatrix g = gramOfSmallerSide(*matrices[i]);
      out[i].trace = g.trace();
      out[i].eigenvalues = eigenvaluesDescending(std::move(g));
    });
    return out;
  }

  std::vector<GramSpectrum> blockPairDifferenceSpectra(const FloatMatrix& stacked, int64_t r,
                                                       const TaskContext& ctx) override {
    const int64_t blocks = stacked.rows / r;
    // One cross-Gram for every pair: multithreaded BLAS, it is one large product.
    const SymmetricMatrix cross = rowGram(stacked);
    const int64_t n = cross.n;
    auto at = [&](int64_t i, int64_t j) {  // symmetric read of the upper triangle
      return i <= j ? cross.a[static_cast<size_t>(i * n + j)] : cross.a[static_cast<size_t>(j * n + i)];
    };
    SingleThreadedBlas single;
    const auto pairs = allPairs(static_cast<size_t>(blocks));
    std::vector<GramSpectrum> out(pairs.size());
    parallelFor(out.size(), ctx, [&](size_t p) {
      const auto [a, b] = pairs[p];
      SymmetricMatrix g;
      g.n = r;
      g.a.resize(static_cast<size_t>(r * r));
      const int64_t oa = static_cast<int64_t>(a) * r, ob = static_cast<int64_t>(b) * r;
      for (int64_t i = 0; i < r; ++i)
        for (int64_t j = i; j < r; ++j)
          g.a[static_cast<size_t>(i * r + j)] =
              at(oa + i, oa + j) + at(ob + i, ob + j) - at(oa + i, ob + j) - at(ob + i, oa + j);
      out[p].trace = g.trace();
      out[p].eigenvalues = eigenvaluesDescending(std::move(g));
    });
    return out;
  }

  std::vector<GramSpectrum> pairDifferenceSpectra(std::span<const FloatMatrix* const> matrices,
                                                  const TaskContext& ctx) override {
    const auto pairs = allPairs(matrices.size());
    SingleThreadedBlas single;
    std::vector<GramSpectrum> out(pairs.size());
    parallelFor(pairs.size(), ctx, [&](size_t p) {
      SymmetricMatrix g = gramOfDifference(*matrices[pairs[p].first], *matrices[pairs[p].second]);
      out[p].trace = g.trace();
      out[p].eigenvalues = eigenvaluesDescending(std::move(g));
    });
    return out;
  }
};

}  // namespace

std::unique_ptr<LinalgBackend> makeCpuBackend() {
  return std::make_unique<CpuBackend>();
}

std::unique_ptr<LinalgBackend> selectBackend(Device requested, std::string* note) {
  if (requested == Device::Cuda) {
    std::string whyNot;
    if (auto cuda = makeCudaBackend(&whyNot)) return cuda;
    if (note) *note = "CUDA requested but unavailable (" + whyNot + "); using the CPU backend";
  }
  return makeCpuBackend();
}

}  // namespace sharelens
