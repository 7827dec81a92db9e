// The CUDA backend: cuBLAS dsyrk for Gram matrices, cuSOLVER for eigenvalues (values only).
//   - many small Grams (per-head matrices, head pairs): one batched call, cusolverDnXsyevBatched;
//   - large Grams (whole projections, layer pairs): cusolverDnXsyevd, several in flight on streams.
// Matrices travel as float and are widened to double on the device; all arithmetic is double, as on CPU.
// Built as a plugin (libsharelens_cuda.so) so that the sharelens binary itself needs no CUDA libraries.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>

#include <algorithm>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

#include "analysis/backend.hpp"
#include "core/error.hpp"

namespace sharelens {
namespace {

[[noreturn]] void fail(const std::string& what, const std::string& found) {
  throw Error({.what = what,
               .where = "CUDA backend",
               .found = found,
               .hint = "rerun with --device cpu; if it persists, check the driver with nvidia-smi"});
}
void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) fail(what, cudaGetErrorString(e));
}
void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) fail(what, "cuBLAS status " + std::to_string(static_cast<int>(s)));
}
void check(cusolverStatus_t s, const char* what) {
  if (s != CUSOLVER_STATUS_SUCCESS) fail(what, "cuSOLVER status " + std::to_string(static_cast<int>(s)));
}

// A device allocation that frees itself.
template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t count) { resize(count); }
  ~DeviceBuffer() { cudaFree(m_ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void resize(size_t count) {
    if (count <= m_count) return;
    cudaFree(m_ptr);
    m_ptr = nullptr;
    check(cudaMalloc(&m_ptr, std::max<size_t>(count, 1) * sizeof(T)), "cudaMalloc");
    m_count = count;
  }
  T* get() const { return m_ptr; }

 private:
  T* m_ptr = nullptr;
  size_t m_count = 0;
};

__global__ void widen(const float* in, double* out, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    out[i] = in[i];
}

__global__ void difference(const float* a, const float* b, double* out, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    out[i] = double(a[i]) - double(b[i]);
}

// cross: column-major N*r square whose lower triangle is valid (dsyrk fill). For pair p = (a, b):
// out[p] = G_aa + G_bb - G_ab - G_ba (r x r, column-major, full).
__global__ void assemblePairGrams(const double* cross, int64_t n, int64_t r, const int2* pairs, double* out,
                                  size_t pairCount) {
  const size_t total = pairCount * r * r;
  for (size_t idx = blockIdx.x * blockDim.x + threadIdx.x; idx < total;
       idx += size_t(gridDim.x) * blockDim.x) {
    const size_t p = idx / (r * r);
    const int64_t i = (idx % (r * r)) % r, j = (idx % (r * r)) / r;
    const int64_t oa = int64_t(pairs[p].x) * r, ob = int64_t(pairs[p].y) * r;
    auto at = [&](int64_t row, int64_t col) {  // lower triangle, column-major
      return row >= col ? cross[col * n + row] : cross[row * n + col];
    };
    out[idx] = at(oa + i, oa + j) + at(ob + i, ob + j) - at(oa + i, ob + j) - at(ob + i, oa + j);
  }
}

// trace of each n x n matrix in a batch
__global__ void batchTrace(const double* m, int64_t n, size_t batch, double* out) {
  for (size_t b = blockIdx.x * blockDim.x + threadIdx.x; b < batch; b += size_t(gridDim.x) * blockDim.x) {
    double t = 0;
    for (int64_t i = 0; i < n; ++i) t += m[b * n * n + i * n + i];
    out[b] = t;
  }
}

int gridFor(size_t n) {
  return static_cast<int>(std::min<size_t>((n + 255) / 256, 4096));
}

// One stream with its own cuBLAS/cuSOLVER handles and scratch space.
struct Lane {
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  cusolverDnHandle_t solver = nullptr;
  cusolverDnParams_t params = nullptr;
  DeviceBuffer<float> a;
  DeviceBuffer<double> wide, gram, eig, work, trace;
  DeviceBuffer<int> info;
  std::vector<char> hostWork;
  double* pinned = nullptr;  // eigenvalues (ascending) then the trace, copied back asynchronously
  size_t pinnedCount = 0;

  Lane() {
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cublasCreate(&blas), "cublasCreate");
    check(cublasSetStream(blas, stream), "cublasSetStream");
    check(cusolverDnCreate(&solver), "cusolverDnCreate");
    check(cusolverDnSetStream(solver, stream), "cusolverDnSetStream");
    check(cusolverDnCreateParams(&params), "cusolverDnCreateParams");
    info.resize(1);
    trace.resize(1);
  }
  ~Lane() {
    cudaFreeHost(pinned);
    cusolverDnDestroyParams(params);
    cusolverDnDestroy(solver);
    cublasDestroy(blas);
    cudaStreamDestroy(stream);
  }

  // Gram of the smaller side of the row-major m x n double matrix in `wide` into `gram` (column-major,
  // lower triangle). Row-major A is column-major A^T (n x m).
  // The Gram of the m x n row-major matrix in `wide`: the smaller of A A^T and A^T A, or A A^T (m x m)
  // whatever the shape when `rowGram` (the stacked heads' cross-Gram, whose blocks are rows).
  int64_t gramOfWide(int64_t m, int64_t n, bool rowGram = false) {
    const bool rows = rowGram || m <= n;
    const int64_t k = rows ? m : n;
    gram.resize(static_cast<size_t>(k * k));
    const double one = 1.0, zero = 0.0;
    if (rows)  // A A^T = (A^T)^T (A^T): op = T on the n x m column-major operand
      check(cublasDsyrk(blas, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_T, static_cast<int>(m), static_cast<int>(n),
                        &one, wide.get(), static_cast<int>(n), &zero, gram.get(), static_cast<int>(m)),
            "cublasDsyrk");
    else  // A^T A = (A^T)(A^T)^T
      check(cublasDsyrk(blas, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
                        &one, wide.get(), static_cast<int>(n), &zero, gram.get(), static_cast<int>(n)),
            "cublasDsyrk");
    return k;
  }

  // Eigenvalues (ascending, on device in `eig`) of the k x k lower-triangle Gram in `gram`.
  void eigenvalues(int64_t k) {
    eig.resize(static_cast<size_t>(k));
    size_t deviceBytes = 0, hostBytes = 0;
    check(cusolverDnXsyevd_bufferSize(solver, params, CUSOLVER_EIG_MODE_NOVECTOR, CUBLAS_FILL_MODE_LOWER, k,
                                      CUDA_R_64F, gram.get(), k, CUDA_R_64F, eig.get(), CUDA_R_64F,
                                      &deviceBytes, &hostBytes),
          "cusolverDnXsyevd_bufferSize");
    work.resize(deviceBytes / sizeof(double) + 1);
    hostWork.resize(std::max<size_t>(hostBytes, 1));
    check(cusolverDnXsyevd(solver, params, CUSOLVER_EIG_MODE_NOVECTOR, CUBLAS_FILL_MODE_LOWER, k, CUDA_R_64F,
                           gram.get(), k, CUDA_R_64F, eig.get(), CUDA_R_64F, work.get(), deviceBytes,
                           hostWork.data(), hostBytes, info.get()),
          "cusolverDnXsyevd");
  }

  // Enqueues trace + eigenvalues of the k x k Gram in `gram` and their copy to pinned host memory.
  void launchSpectrum(int64_t k) {
    batchTrace<<<1, 32, 0, stream>>>(gram.get(), k, 1, trace.get());
    eigenvalues(k);
    if (pinnedCount < static_cast<size_t>(k) + 1) {
      cudaFreeHost(pinned);
      check(cudaMallocHost(&pinned, (k + 1) * sizeof(double)), "cudaMallocHost");
      pinnedCount = static_cast<size_t>(k) + 1;
    }
    check(cudaMemcpyAsync(pinned, eig.get(), k * sizeof(double), cudaMemcpyDeviceToHost, stream),
          "cudaMemcpy eig");
    check(cudaMemcpyAsync(pinned + k, trace.get(), sizeof(double), cudaMemcpyDeviceToHost, stream),
          "cudaMemcpy tr");
  }

  // Waits for the stream and moves the result (descending, clamped) into `out`.
  void collect(int64_t k, GramSpectrum& out) {
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    out.eigenvalues.assign(std::reverse_iterator<double*>(pinned + k),
                           std::reverse_iterator<double*>(pinned));
    for (double& x : out.eigenvalues) x = std::max(x, 0.0);
    out.trace = pinned[k];
  }
};

class CudaBackend : public LinalgBackend {
 public:
  explicit CudaBackend(std::string deviceName) : m_deviceName(std::move(deviceName)) {
    for (int i = 0; i < kLanes; ++i) m_lanes.push_back(std::make_unique<Lane>());
  }

  std::string name() const override { return "cuda (" + m_deviceName + ", cuBLAS dsyrk + cuSOLVER syevd)"; }

  std::vector<GramSpectrum> gramSpectra(std::span<const FloatMatrix* const> matrices,
                                        const TaskContext& ctx) override {
    std::vector<GramSpectrum> out(matrices.size());
    // Small Grams of one shape go through one batched solve; the rest one by one on the lanes.
    std::map<std::pair<int64_t, int64_t>, std::vector<size_t>> smallByShape;
    std::vector<size_t> large;
    for (size_t i = 0; i < matrices.size(); ++i) {
      const int64_t k = std::min(matrices[i]->rows, matrices[i]->cols);
      if (k <= kBatchedMax)
        smallByShape[{matrices[i]->rows, matrices[i]->cols}].push_back(i);
      else
        large.push_back(i);
    }
    for (const auto& [shape, indices] : smallByShape) {
      ctx.throwIfCancelled();
      batchedSmallGrams(matrices, indices, out);
    }
    runOnLanes(
        large.size(), ctx,
        [&](Lane& lane, size_t j) {
          const FloatMatrix& m = *matrices[large[j]];
          upload(lane, m, lane.a);
          lane.wide.resize(m.data.size());
          widen<<<gridFor(m.data.size()), 256, 0, lane.stream>>>(lane.a.get(), lane.wide.get(),
                                                                 m.data.size());
          const int64_t k = lane.gramOfWide(m.rows, m.cols);
          lane.launchSpectrum(k);
          return k;
        },
        [&](size_t j) -> GramSpectrum& { return out[large[j]]; });
    return out;
  }

  std::vector<GramSpectrum> blockPairDifferenceSpectra(const FloatMatrix& stacked, int64_t r,
                                                       const TaskContext& ctx) override {
    Lane& lane = *m_lanes[0];
    const int64_t blocks = stacked.rows / r;
    const auto pairs = allPairs(static_cast<size_t>(blocks));
    std::vector<GramSpectrum> out(pairs.size());
    if (pairs.empty()) return out;
    upload(lane, stacked, lane.a);
    lane.wide.resize(stacked.data.size());
    widen<<<gridFor(stacked.data.size()), 256, 0, lane.stream>>>(lane.a.get(), lane.wide.get(),
                                                                 stacked.data.size());
    // S S^T, N r x N r, however the stacked rows compare with the columns (GPT-2's 36 heads of 64 rows are
    // 2304 rows of 768)
    const int64_t n = lane.gramOfWide(stacked.rows, stacked.cols, /*rowGram=*/true);
    std::vector<int2> hostPairs;
    for (const auto& [a, b] : pairs) hostPairs.push_back(make_int2(static_cast<int>(a), static_cast<int>(b)));
    DeviceBuffer<int2> devicePairs(hostPairs.size());
    check(cudaMemcpyAsync(devicePairs.get(), hostPairs.data(), hostPairs.size() * sizeof(int2),
                          cudaMemcpyHostToDevice, lane.stream),
          "cudaMemcpy pairs");
    // Solve in chunks so the batch of r x r matrices stays within ~1 GiB.
    const size_t chunk = std::max<size_t>(1, (size_t(1) << 27) / static_cast<size_t>(r * r));
    for (size_t start = 0; start < pairs.size(); start += chunk) {
      ctx.throwIfCancelled();
      const size_t count = std::min(chunk, pairs.size() - start);
      DeviceBuffer<double> batch(count * r * r);
      assemblePairGrams<<<gridFor(count * r * r), 256, 0, lane.stream>>>(
          lane.gram.get(), n, r, devicePairs.get() + start, batch.get(), count);
      solveBatch(lane, batch, r, count, out.data() + start);
    }
    return out;
  }

  std::vector<GramSpectrum> pairDifferenceSpectra(std::span<const FloatMatrix* const> matrices,
                                                  const TaskContext& ctx) override {
    const auto pairs = allPairs(matrices.size());
    std::vector<GramSpectrum> out(pairs.size());
    if (pairs.empty()) return out;
    // Every matrix once on the device (float), differences formed in double per pair.
    const size_t elements = matrices[0]->data.size();
    DeviceBuffer<float> all(elements * matrices.size());
    for (size_t i = 0; i < matrices.size(); ++i)
      check(cudaMemcpy(all.get() + i * elements, matrices[i]->data.data(), elements * sizeof(float),
                       cudaMemcpyHostToDevice),
            "cudaMemcpy matrices");
    const int64_t rows = matrices[0]->rows, cols = matrices[0]->cols;
    runOnLanes(
        pairs.size(), ctx,
        [&](Lane& lane, size_t p) {
          lane.wide.resize(elements);
          difference<<<gridFor(elements), 256, 0, lane.stream>>>(all.get() + pairs[p].first * elements,
                                                                 all.get() + pairs[p].second * elements,
                                                                 lane.wide.get(), elements);
          const int64_t k = lane.gramOfWide(rows, cols);
          lane.launchSpectrum(k);
          return k;
        },
        [&](size_t p) -> GramSpectrum& { return out[p]; });
    return out;
  }

 private:
  static constexpr int kLanes = 4;
  static constexpr int64_t kBatchedMax = 512;

  void upload(Lane& lane, const FloatMatrix& m, DeviceBuffer<float>& dst) {
    dst.resize(m.data.size());
    check(cudaMemcpyAsync(dst.get(), m.data.data(), m.data.size() * sizeof(float), cudaMemcpyHostToDevice,
                          lane.stream),
          "cudaMemcpy matrix");
  }

  // Eigenvalues of `count` full k x k matrices in `batch` (column-major, contiguous) with one batched call.
  void solveBatch(Lane& lane, DeviceBuffer<double>& batch, int64_t k, size_t count, GramSpectrum* out) {
    DeviceBuffer<double> traces(count), values(count * k);
    batchTrace<<<gridFor(count), 256, 0, lane.stream>>>(batch.get(), k, count, traces.get());
    DeviceBuffer<int> infos(count);
    size_t deviceBytes = 0, hostBytes = 0;
    check(cusolverDnXsyevBatched_bufferSize(lane.solver, lane.params, CUSOLVER_EIG_MODE_NOVECTOR,
                                            CUBLAS_FILL_MODE_LOWER, k, CUDA_R_64F, batch.get(), k, CUDA_R_64F,
                                            values.get(), CUDA_R_64F, &deviceBytes, &hostBytes,
                                            static_cast<int64_t>(count)),
          "cusolverDnXsyevBatched_bufferSize");
    DeviceBuffer<char> work(deviceBytes);
    std::vector<char> hostWork(std::max<size_t>(hostBytes, 1));
    check(cusolverDnXsyevBatched(lane.solver, lane.params, CUSOLVER_EIG_MODE_NOVECTOR, CUBLAS_FILL_MODE_LOWER,
                                 k, CUDA_R_64F, batch.get(), k, CUDA_R_64F, values.get(), CUDA_R_64F,
                                 work.get(), deviceBytes, hostWork.data(), hostBytes, infos.get(),
                                 static_cast<int64_t>(count)),
          "cusolverDnXsyevBatched");
    std::vector<double> hostValues(count * k), hostTraces(count);
    check(cudaMemcpyAsync(hostValues.data(), values.get(), hostValues.size() * sizeof(double),
                          cudaMemcpyDeviceToHost, lane.stream),
          "cudaMemcpy eigenvalues");
    check(cudaMemcpyAsync(hostTraces.data(), traces.get(), count * sizeof(double), cudaMemcpyDeviceToHost,
                          lane.stream),
          "cudaMemcpy traces");
    check(cudaStreamSynchronize(lane.stream), "cudaStreamSynchronize");
    for (size_t i = 0; i < count; ++i) {
      out[i].trace = hostTraces[i];
      out[i].eigenvalues.assign(hostValues.rbegin() + (count - 1 - i) * k,
                                hostValues.rbegin() + (count - i) * k);
      for (double& x : out[i].eigenvalues) x = std::max(x, 0.0);
    }
  }

  // Small per-matrix Grams of one shape: widen all, one strided-batched product, one batched solve.
  void batchedSmallGrams(std::span<const FloatMatrix* const> matrices, const std::vector<size_t>& indices,
                         std::vector<GramSpectrum>& out) {
    Lane& lane = *m_lanes[0];
    const int64_t m = matrices[indices[0]]->rows, n = matrices[indices[0]]->cols, k = std::min(m, n);
    const size_t elements = static_cast<size_t>(m * n);
    std::vector<float> host(elements * indices.size());
    for (size_t j = 0; j < indices.size(); ++j)
      std::copy(matrices[indices[j]]->data.begin(), matrices[indices[j]]->data.end(),
                host.begin() + j * elements);
    DeviceBuffer<float> packed(host.size());
    check(cudaMemcpyAsync(packed.get(), host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice,
                          lane.stream),
          "cudaMemcpy");
    DeviceBuffer<double> wide(host.size()), batch(indices.size() * k * k);
    widen<<<gridFor(host.size()), 256, 0, lane.stream>>>(packed.get(), wide.get(), host.size());
    const double one = 1.0, zero = 0.0;
    // Each row-major m x n matrix is column-major X = A^T (n x m). Gram: X^T X (m <= n) or X X^T.
    const cublasOperation_t first = m <= n ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t second = m <= n ? CUBLAS_OP_N : CUBLAS_OP_T;
    check(cublasDgemmStridedBatched(lane.blas, first, second, static_cast<int>(k), static_cast<int>(k),
                                    static_cast<int>(std::max(m, n)), &one, wide.get(), static_cast<int>(n),
                                    static_cast<long long>(elements), wide.get(), static_cast<int>(n),
                                    static_cast<long long>(elements), &zero, batch.get(), static_cast<int>(k),
                                    static_cast<long long>(k * k), static_cast<int>(indices.size())),
          "cublasDgemmStridedBatched");
    std::vector<GramSpectrum> results(indices.size());
    solveBatch(lane, batch, k, indices.size(), results.data());
    for (size_t j = 0; j < indices.size(); ++j) out[indices[j]] = std::move(results[j]);
  }

  // Runs launch(lane, i) for i in [0, n) a wave of kLanes at a time -- every lane's work in flight at once --
  // then collects each lane's result into result(i).
  template <typename Launch, typename Result>
  void runOnLanes(size_t n, const TaskContext& ctx, Launch launch, Result result) {
    std::vector<int64_t> sizes(m_lanes.size());
    for (size_t start = 0; start < n; start += m_lanes.size()) {
      ctx.throwIfCancelled();
      const size_t count = std::min(m_lanes.size(), n - start);
      for (size_t j = 0; j < count; ++j) sizes[j] = launch(*m_lanes[j], start + j);
      for (size_t j = 0; j < count; ++j) m_lanes[j]->collect(sizes[j], result(start + j));
    }
  }

  std::string m_deviceName;
  std::vector<std::unique_ptr<Lane>> m_lanes;
};

}  // namespace

}  // namespace sharelens

// The plugin's entry point, found with dlsym by backend_cuda_loader.cpp.
extern "C" __attribute__((visibility("default"))) sharelens::LinalgBackend* sharelens_create_cuda_backend(
    std::string* whyNot) {
  using namespace sharelens;
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    if (whyNot)
      *whyNot = e != cudaSuccess ? std::string("no CUDA device: ") + cudaGetErrorString(e) : "no CUDA device";
    return nullptr;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  try {
    return new CudaBackend(prop.name);
  } catch (const Error& err) {
    if (whyNot) *whyNot = err.what();
    return nullptr;
  }
}
