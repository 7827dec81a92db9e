// The CUDA backend against the CPU backend on the same matrices: every shape class (batched small Grams,
// large Grams on streams, head pairs from one cross-Gram, layer pairs). Skips, saying why, without a GPU.
#include <gtest/gtest.h>

#include <random>

#include "analysis/backend.hpp"

namespace sharelens {
namespace {

FloatMatrix randomMatrix(int64_t rows, int64_t cols, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal;
  FloatMatrix m(rows, cols);
  for (float& x : m.data) x = normal(rng);
  return m;
}

void expectSameSpectra(const std::vector<GramSpectrum>& cpu, const std::vector<GramSpectrum>& gpu) {
  ASSERT_EQ(cpu.size(), gpu.size());
  for (size_t i = 0; i < cpu.size(); ++i) {
    ASSERT_EQ(cpu[i].eigenvalues.size(), gpu[i].eigenvalues.size()) << i;
    EXPECT_NEAR(cpu[i].trace, gpu[i].trace, 1e-10 * cpu[i].trace) << i;
    const double top = cpu[i].eigenvalues.empty() ? 0.0 : cpu[i].eigenvalues[0];
    for (size_t k = 0; k < cpu[i].eigenvalues.size(); ++k)
      EXPECT_NEAR(cpu[i].eigenvalues[k], gpu[i].eigenvalues[k], 1e-10 * top) << i << ":" << k;
    EXPECT_EQ(effectiveRank(cpu[i].eigenvalues, cpu[i].trace, 0.95),
              effectiveRank(gpu[i].eigenvalues, gpu[i].trace, 0.95));
  }
}

class CudaBackend : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    m_gpu = makeCudaBackend(&why);
    if (!m_gpu) GTEST_SKIP() << "no CUDA backend here: " << why;
    m_cpu = makeCpuBackend();
  }
  std::unique_ptr<LinalgBackend> m_cpu, m_gpu;
};

TEST_F(CudaBackend, GramSpectraSmallBatchedAndLarge) {
  std::vector<FloatMatrix> matrices;
  for (int i = 0; i < 40; ++i) matrices.push_back(randomMatrix(64, 768, 10 + i));  // batched path
  matrices.push_back(randomMatrix(768, 3072, 1));                                  // large, row side
  matrices.push_back(randomMatrix(3072, 768, 2));                                  // large, column side
  matrices.push_back(randomMatrix(600, 600, 3));
  std::vector<const FloatMatrix*> p;
  for (const auto& m : matrices) p.push_back(&m);
  expectSameSpectra(m_cpu->gramSpectra(p, {}), m_gpu->gramSpectra(p, {}));
}

TEST_F(CudaBackend, HeadPairsAndLayerPairs) {
  const FloatMatrix stacked = randomMatrix(36 * 64, 768, 4);
  expectSameSpectra(m_cpu->blockPairDifferenceSpectra(stacked, 64, {}),
                    m_gpu->blockPairDifferenceSpectra(stacked, 64, {}));
  std::vector<FloatMatrix> layers;
  for (int l = 0; l < 5; ++l) layers.push_back(randomMatrix(1024, 384, 20 + l));
  std::vector<const FloatMatrix*> p;
  for (const auto& m : layers) p.push_back(&m);
  expectSameSpectra(m_cpu->pairDifferenceSpectra(p, {}), m_gpu->pairDifferenceSpectra(p, {}));
}

}  // namespace
}  // namespace sharelens
