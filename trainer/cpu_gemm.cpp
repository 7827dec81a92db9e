#include "trainer/cpu_gemm.hpp"

#include <cblas.h>
#include <pthread.h>
#include <signal.h>

#ifdef SHARELENS_HAVE_ONEDNN
#include <dnnl.h>
extern "C" int omp_get_max_threads(void);  // libgomp, which oneDNN's OpenMP build brings
#endif

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "core/blas_threads.hpp"

namespace sharelens {

#ifdef SHARELENS_HAVE_ONEDNN
namespace {

// oneDNN 2.6's JIT sgemm keeps data below the stack pointer, past the 128 bytes the x86-64 ABI keeps from
// signal handlers: a signal handled on the thread during the call writes its frame over them. Measured: a
// SIGTERM to `sharelens train --threads 1` during a step ended 3 of 10 runs in "corrupted size vs. prev_size"
// (0 of 10 with OpenBLAS, and 0 of 10 with the handler moved to an alternate stack). So every signal that can
// wait is held back from this thread for the call (two system calls, under a microsecond, against a GEMM's
// 50 us or more) and delivered when it returns; faults (SIGSEGV, SIGBUS, SIGFPE, SIGILL) and SIGABRT are not
// held, so a crash still reports.
class SignalsHeldBack {
 public:
  SignalsHeldBack() {
    sigset_t held;
    sigfillset(&held);
    for (int fault : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP}) sigdelset(&held, fault);
    pthread_sigmask(SIG_BLOCK, &held, &m_before);
  }
  ~SignalsHeldBack() { pthread_sigmask(SIG_SETMASK, &m_before, nullptr); }
  SignalsHeldBack(const SignalsHeldBack&) = delete;
  SignalsHeldBack& operator=(const SignalsHeldBack&) = delete;

 private:
  sigset_t m_before;
};

}  // namespace
#endif

bool sgemmUsesOneDnn() {
#ifdef SHARELENS_HAVE_ONEDNN
  // oneDNN's sgemm parallelises over the calling thread's OpenMP team; beside OpenBLAS's pthread pool and the
  // run's own split loops a team of more than one would spin between calls (DESIGN §2), so only a run of one
  // thread (the experiments' arrangement) takes it.
  // SHARELENS_ONEDNN=0 keeps every GEMM on OpenBLAS (benchmarks compare the two in one binary).
  static const bool enabled = [] {
    const char* value = std::getenv("SHARELENS_ONEDNN");
    return value == nullptr || std::strcmp(value, "0") != 0;
  }();
  return enabled && currentBlasThreads() == 1 && omp_get_max_threads() == 1;
#else
  return false;
#endif
}

void sgemm(Op opA, Op opB, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k ==
      0) {  // an empty sum: C = beta C (both libraries would refuse the leading dimensions of empty A, B)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
    return;
  }
#ifdef SHARELENS_HAVE_ONEDNN
  if (sgemmUsesOneDnn()) {
    const SignalsHeldBack signalsHeldBack;
    const dnnl_status_t status =
        dnnl_sgemm(opA == Op::Transpose ? 'T' : 'N', opB == Op::Transpose ? 'T' : 'N', m, n, k, alpha, a, lda,
                   b, ldb, beta, c, ldc);
    if (status != dnnl_success)
      throw std::invalid_argument("dnnl_sgemm refused a " + std::to_string(m) + " x " + std::to_string(n) +
                                  " x " + std::to_string(k) + " product (status " + std::to_string(status) +
                                  ")");
    return;
  }
#endif
  constexpr int64_t kIntMax = std::numeric_limits<int>::max();
  if (std::max({m, n, k, lda, ldb, ldc}) > kIntMax)
    throw std::invalid_argument("a " + std::to_string(m) + " x " + std::to_string(n) + " x " +
                                std::to_string(k) + " product exceeds OpenBLAS's 32-bit dimensions");
  cblas_sgemm(CblasRowMajor, opA == Op::Transpose ? CblasTrans : CblasNoTrans,
              opB == Op::Transpose ? CblasTrans : CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta, c,
              static_cast<int>(ldc));
}

}  // namespace sharelens
