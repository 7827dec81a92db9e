// The training step's projection GEMMs on one thread, OpenBLAS's cblas_sgemm beside oneDNN's dnnl_sgemm on
// the same inputs (the choice trainer/cpu_gemm.cpp makes for a run of one thread; docs/PERFORMANCE.md). For
// each of the benchmarks' model sizes (bench_models.hpp), every projection's three GEMMs at batch 16 x the
// context (2,048 rows at the claims' sizes):
//   forward  y [M, N] = x [M, K] W^T    (W [N, K])
//   dx       [M, K]   = dy [M, N] W
//   dW       [N, K]   = dy^T x
// for Q|K|V stacked, O, gate|up stacked, down and the output head; then causal attention's row-panel GEMMs
// for one (batch, head) pair (trainer/cpu_attention.cpp: panels of 32 queries over the keys they see, on the
// strided q, k, v rows of the token-major layout), in a separate total. Best of --rounds timings of --reps
// calls, the two libraries alternated per shape; GFLOP/s per shape and over each set (time-weighted).
// usage: bench_gemm [--size 0.3m|1m|3m|10m|gpu] [--reps N] [--rounds N]
#include <cblas.h>
#include <dnnl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_models.hpp"
#include "trainer/causal_panels.hpp"

extern "C" void openblas_set_num_threads(int);
extern "C" void omp_set_num_threads(int);

namespace {

struct Gemm {
  const char* what;
  char opA, opB;
  int64_t m, n, k;
  int64_t lda = 0, ldb = 0, ldc = 0;  // 0: the tight leading dimension
  float beta = 0.0f;
};

std::vector<Gemm> stepGemms(const sharelens::ModelDims& s, int64_t rows) {
  struct Projection {
    const char* name;
    int64_t out, in;
  };
  const Projection projections[] = {{"qkv", (s.heads + 2 * s.kvHeads) * s.headDim, s.dModel},
                                    {"o", s.dModel, s.heads * s.headDim},
                                    {"gate|up", 2 * s.ffn, s.dModel},
                                    {"down", s.dModel, s.ffn},
                                    {"head", s.vocab, s.dModel}};
  std::vector<Gemm> gemms;
  for (const Projection& p : projections) {
    gemms.push_back({p.name, 'N', 'T', rows, p.out, p.in});
    gemms.push_back({p.name, 'N', 'N', rows, p.in, p.out});
    gemms.push_back({p.name, 'T', 'N', p.out, p.in, rows});
  }
  return gemms;
}

// One (batch, head) pair's causal attention GEMMs, as cpu_attention.cpp calls them: per row panel [r0, r0 +
// rows) of queries over the keys [0, seen) they see, q and the gradient of the output strided by H hd, k and
// v by KV hd, probabilities by T.
std::vector<Gemm> attentionGemms(const sharelens::ModelDims& s) {
  const int64_t t = s.context, hd = s.headDim, qRow = s.heads * hd, kvRow = s.kvHeads * hd;
  std::vector<Gemm> gemms;
  sharelens::forEachCausalPanel(t, [&](int64_t, int64_t rows, int64_t seen) {
    gemms.push_back({"S=QK'", 'N', 'T', rows, seen, hd, qRow, kvRow, t});
    gemms.push_back({"O=PV", 'N', 'N', rows, hd, seen, t, kvRow, qRow});
    gemms.push_back({"dV+=P'dO", 'T', 'N', seen, hd, rows, t, qRow, kvRow, 1.0f});
    gemms.push_back({"dP=dOV'", 'N', 'T', rows, seen, hd, qRow, kvRow, t});
    gemms.push_back({"dQ=dSK", 'N', 'N', rows, hd, seen, t, kvRow, qRow});
    gemms.push_back({"dK+=dS'Q", 'T', 'N', seen, hd, rows, t, qRow, kvRow, 1.0f});
  });
  return gemms;
}

template <class F>
double bestSeconds(const F& call, int reps, int rounds) {
  call();
  double best = 1e30;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) call();
    best =
        std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps);
  }
  return best;
}

// Times each GEMM of the set with both libraries and prints its rates, then the set's time-weighted total.
void measureSet(const char* name, const std::vector<Gemm>& gemms, int reps, int rounds) {
  std::mt19937 gen(1);
  std::normal_distribution<float> normal;
  double blasTotal = 0, dnnlTotal = 0, flopsTotal = 0, worstDiff = 0;
  for (const Gemm& g : gemms) {
    const int64_t lda = g.lda > 0 ? g.lda : (g.opA == 'N' ? g.k : g.m);
    const int64_t ldb = g.ldb > 0 ? g.ldb : (g.opB == 'N' ? g.n : g.k);
    const int64_t ldc = g.ldc > 0 ? g.ldc : g.n;
    const int64_t aRows = g.opA == 'N' ? g.m : g.k, bRows = g.opB == 'N' ? g.k : g.n;
    std::vector<float> a(static_cast<size_t>(aRows * lda)), b(static_cast<size_t>(bRows * ldb)),
        cBlas(static_cast<size_t>(g.m * ldc)), cDnnl(cBlas.size());
    for (float& x : a) x = normal(gen);
    for (float& x : b) x = normal(gen);
    // With beta = 1 each call adds to C; both start from zeros and run the same number of calls.
    const auto blas = [&] {
      cblas_sgemm(CblasRowMajor, g.opA == 'N' ? CblasNoTrans : CblasTrans,
                  g.opB == 'N' ? CblasNoTrans : CblasTrans, static_cast<int>(g.m), static_cast<int>(g.n),
                  static_cast<int>(g.k), 1.0f, a.data(), static_cast<int>(lda), b.data(),
                  static_cast<int>(ldb), g.beta, cBlas.data(), static_cast<int>(ldc));
    };
    const auto dnnl = [&] {
      if (dnnl_sgemm(g.opA, g.opB, g.m, g.n, g.k, 1.0f, a.data(), lda, b.data(), ldb, g.beta, cDnnl.data(),
                     ldc) != dnnl_success)
        throw std::runtime_error("dnnl_sgemm failed");
    };
    double tBlas = 1e30, tDnnl = 1e30;
    for (int pass = 0; pass < 2; ++pass) {  // alternated: each library measured twice
      tBlas = std::min(tBlas, bestSeconds(blas, reps, rounds));
      tDnnl = std::min(tDnnl, bestSeconds(dnnl, reps, rounds));
    }
    double scale = 0, diff = 0;  // this product's largest difference, relative to its largest entry
    for (size_t i = 0; i < cBlas.size(); ++i) {
      diff = std::max(diff, static_cast<double>(std::abs(cBlas[i] - cDnnl[i])));
      scale = std::max(scale, static_cast<double>(std::abs(cBlas[i])));
    }
    worstDiff = std::max(worstDiff, diff / std::max(scale, 1e-30));
    const double flops = 2.0 * static_cast<double>(g.m * g.n * g.k);
    blasTotal += tBlas;
    dnnlTotal += tDnnl;
    flopsTotal += flops;
    std::printf("%-9s %c%c  %6lld %6lld %6lld %9.1f %9.1f\n", g.what, g.opA, g.opB,
                static_cast<long long>(g.m), static_cast<long long>(g.n), static_cast<long long>(g.k),
                flops / tBlas * 1e-9, flops / tDnnl * 1e-9);
  }
  std::printf(
      "%s: %.1f and %.1f GFLOP/s: oneDNN %.2fx OpenBLAS (largest difference %.1e of the output's scale)\n",
      name, flopsTotal / blasTotal * 1e-9, flopsTotal / dnnlTotal * 1e-9, blasTotal / dnnlTotal, worstDiff);
}

}  // namespace

int main(int argc, char** argv) {
  std::string size = "1m";
  int reps = 20, rounds = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--size")
      size = argv[i + 1];
    else if (a == "--reps")
      reps = std::atoi(argv[i + 1]);
    else if (a == "--rounds")
      rounds = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  openblas_set_num_threads(1);
  omp_set_num_threads(1);
  const sharelens::ModelDims dims = sharelens::benchModelDims(size);
  std::printf("%s, one thread; GFLOP/s\n%-9s %-3s %6s %6s %6s %9s %9s\n", size.c_str(), "matrix", "op", "M",
              "N", "K", "OpenBLAS", "oneDNN");
  measureSet("projections", stepGemms(dims, 16 * dims.context), reps, rounds);
  measureSet("attention", attentionGemms(dims), reps, rounds);
  return 0;
}
