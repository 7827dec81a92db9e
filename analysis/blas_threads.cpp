#include "analysis/blas_threads.hpp"

extern "C" {
void openblas_set_num_threads(int);
int openblas_get_num_threads(void);
}

namespace sharelens {

ScopedBlasThreads::ScopedBlasThreads(int threads) : m_previous(openblas_get_num_threads()) {
  openblas_set_num_threads(threads);
}

ScopedBlasThreads::~ScopedBlasThreads() { openblas_set_num_threads(m_previous); }

}  // namespace sharelens
