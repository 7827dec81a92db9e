// The kernel floor of the layer-difference maps (issue 16, items 1-2): what the CPU backend's two kernels
// -- the double Gram of a difference (dsyrk) and its eigenvalues (dsyevd) -- cost on this machine, run as
// the backend runs them (two matrices at once, one BLAS thread each), beside dgemm's rate in the same
// arrangement. tests/bench/bench_gram_floor.sh multiplies them out over a shape's layer pairs (its layer
// maps' time at these rates) and counts the same flops at dgemm's rate (a bound no double-precision Gram
// and eigensolve beats).
//
// Usage: bench_gram_floor [--repeat N] ROWSxCOLS...   e.g. bench_gram_floor 768x768 768x3072
// Prints one line per shape: the Gram side n, seconds per Gram and per eigensolve (each the median over N
// rounds of two concurrent runs), and their rates in GFLOP/s (Gram m n^2, dsytrd 4/3 n^3), then dgemm's.
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "analysis/linalg_cpu.hpp"
#include "core/blas_threads.hpp"

namespace {

using sharelens::FloatMatrix;
using Clock = std::chrono::steady_clock;

FloatMatrix randomMatrix(int64_t rows, int64_t cols, unsigned seed) {
  FloatMatrix m(rows, cols);
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.02f);  // the scale of trained projection weights
  for (float& x : m.data) x = normal(rng);
  return m;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Runs work(stream) on two threads at once, `repeat` times; each round's time is the slower stream's.
template <typename Work>
double concurrentSeconds(int repeat, Work work) {
  std::vector<double> rounds;
  for (int r = 0; r < repeat; ++r) {
    double seconds[2] = {0, 0};
    std::thread other([&] {
      const auto t0 = Clock::now();
      work(1);
      seconds[1] = std::chrono::duration<double>(Clock::now() - t0).count();
    });
    const auto t0 = Clock::now();
    work(0);
    seconds[0] = std::chrono::duration<double>(Clock::now() - t0).count();
    other.join();
    rounds.push_back(std::max(seconds[0], seconds[1]));
  }
  return median(rounds);
}

struct Shape {
  int64_t rows = 0, cols = 0;
};

bool parseShape(const std::string& text, Shape& out) {
  const size_t x = text.find('x');
  if (x == std::string::npos) return false;
  try {
    out.rows = std::stoll(text.substr(0, x));
    out.cols = std::stoll(text.substr(x + 1));
  } catch (const std::exception&) {
    return false;
  }
  return out.rows > 0 && out.cols > 0;
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 5;
  std::vector<Shape> shapes;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--repeat" && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
      continue;
    }
    Shape s;
    if (!parseShape(arg, s)) {
      std::fprintf(stderr, "bench_gram_floor: '%s' is not ROWSxCOLS (e.g. 768x3072)\n", arg.c_str());
      return 2;
    }
    shapes.push_back(s);
  }
  if (shapes.empty()) {
    std::fprintf(stderr, "usage: bench_gram_floor [--repeat N] ROWSxCOLS...\n");
    return 2;
  }
  const sharelens::SingleThreadedBlas single;  // the backend's arrangement: one BLAS thread per matrix
  std::printf("%-11s %6s %12s %12s %12s %12s\n", "shape", "n", "gram_s", "gram_gflops", "eig_s",
              "eig_gflops");
  int64_t widest = 0;
  for (const Shape& s : shapes) {
    const FloatMatrix a[2] = {randomMatrix(s.rows, s.cols, 1), randomMatrix(s.rows, s.cols, 3)};
    const FloatMatrix b[2] = {randomMatrix(s.rows, s.cols, 2), randomMatrix(s.rows, s.cols, 4)};
    const int64_t n = std::min(s.rows, s.cols), m = std::max(s.rows, s.cols);
    widest = std::max(widest, n);
    sharelens::SymmetricMatrix grams[2];
    const double gram = concurrentSeconds(repeat, [&](int k) { grams[k] = gramOfDifference(a[k], b[k]); });
    const double eig = concurrentSeconds(repeat, [&](int k) {
      sharelens::SymmetricMatrix g = grams[k];
      (void)sharelens::eigenvaluesDescending(std::move(g));
    });
    const double nd = static_cast<double>(n), md = static_cast<double>(m);
    std::printf("%5lldx%-5lld %6lld %12.4f %12.1f %12.4f %12.1f\n", static_cast<long long>(s.rows),
                static_cast<long long>(s.cols), static_cast<long long>(n), gram, md * nd * nd / gram / 1e9,
                eig, 4.0 / 3.0 * nd * nd * nd / eig / 1e9);
  }
  // dgemm's rate per stream at the widest Gram side, two streams at once: the ceiling for BLAS3 work here.
  const int dim = static_cast<int>(widest);
  std::vector<double> x(static_cast<size_t>(dim) * dim, 0.5), y[2], z[2];
  for (int k = 0; k < 2; ++k) y[k] = x, z[k].assign(x.size(), 0.0);
  const double gemm = concurrentSeconds(repeat, [&](int k) {
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, dim, dim, dim, 1.0, x.data(), dim, y[k].data(),
                dim, 0.0, z[k].data(), dim);
  });
  std::printf("dgemm %dx%d per stream, two at once: %.4f s, %.1f GFLOP/s\n", dim, dim, gemm,
              2.0 * dim * static_cast<double>(dim) * dim / gemm / 1e9);
  return 0;
}
