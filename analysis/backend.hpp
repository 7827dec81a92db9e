// Linear-algebra backends for the analyses: the batched operations every analysis reduces to. The CPU
// backend (LAPACK/OpenBLAS, parallel over matrices) always exists; the CUDA backend (cuBLAS + cuSOLVER)
// exists when ShareLens was built with the CUDA toolkit and a device is present at runtime.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "analysis/spectrum.hpp"
#include "core/float_matrix.hpp"
#include "core/task.hpp"

namespace sharelens {

// Thread-safety contract: one instance serves one job at a time (its methods may use several threads inside,
// through ctx). Jobs that run at the same time each use their own instance: the CUDA backend's streams,
// handles and device buffers belong to the instance. The GUI leases one per running job (app/gui/workspace).
class LinalgBackend {
 public:
  virtual ~LinalgBackend() = default;
  virtual std::string name() const = 0;

  // The Gram spectrum of every matrix.
  virtual std::vector<GramSpectrum> gramSpectra(std::span<const FloatMatrix* const> matrices,
                                                const TaskContext& ctx) = 0;

  // `stacked` holds N blocks of `blockRows` rows each (block i = rows [i*r, (i+1)*r)). Returns the Gram
  // spectrum of block_a - block_b for every a < b, in the order (0,1), (0,2), ..., (N-2,N-1); each from
  // the r x r Gram G_aa + G_bb - G_ab - G_ba of one shared cross-Gram S S^T.
  virtual std::vector<GramSpectrum> blockPairDifferenceSpectra(const FloatMatrix& stacked, int64_t blockRows,
                                                               const TaskContext& ctx) = 0;

  // Equal-shape matrices: the Gram spectrum of m_a - m_b for every a < b, same pair order.
  virtual std::vector<GramSpectrum> pairDifferenceSpectra(std::span<const FloatMatrix* const> matrices,
                                                          const TaskContext& ctx) = 0;
};

enum class Device { Cpu, Cuda };

std::unique_ptr<LinalgBackend> makeCpuBackend();

// The CUDA backend, or nullptr with `whyNot` filled ("built without CUDA", "no CUDA device: ...").
std::unique_ptr<LinalgBackend> makeCudaBackend(std::string* whyNot);

// The backend for a requested device. Asking for CUDA where it cannot run gives the CPU backend and a note
// saying why, never an error.
std::unique_ptr<LinalgBackend> selectBackend(Device requested, std::string* note);

// Every pair a < b among n items, in the order above; pairIndex(a, b, n) is a pair's position in it.
inline std::vector<std::pair<size_t, size_t>> allPairs(size_t n) {
  std::vector<std::pair<size_t, size_t>> pairs;
  pairs.reserve(n < 2 ? 0 : n * (n - 1) / 2);
  for (size_t a = 0; a < n; ++a)
    for (size_t b = a + 1; b < n; ++b) pairs.emplace_back(a, b);
  return pairs;
}
inline size_t pairIndex(size_t a, size_t b, size_t n) {
  return a * n - a * (a + 1) / 2 + (b - a - 1);
}

}  // namespace sharelens
