// Causal attention of the training step alone (issue 37): forward + backward of the token-major CPU kernel
// (trainer/cpu_attention.hpp) against the composite formula LibTorch runs otherwise (causalAttention in
// trainer/torch_compat.hpp, with the head transposes the model needs around it), on one layer's shapes;
// the two alternate for ROUNDS rounds and the medians are compared.
// usage: bench_attention [--threads N] [--batch B] [--time T] [--heads H] [--kv-heads KV] [--head-dim D]
//                        [--reps N] [--rounds N] [--only kernel|composite]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "core/heap.hpp"
#include "trainer/cpu_attention.hpp"
#include "trainer/torch_compat.hpp"

using namespace sharelens;
using clock_type = std::chrono::steady_clock;

int main(int argc, char** argv) {
  int threads = 2;
  int64_t batch = 16, time = 128, heads = 4, kvHeads = 4, headDim = 32, reps = 20, rounds = 5;
  std::string only;  // "kernel" or "composite": time one side only (for a profiler)
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--only") {
      only = argv[i + 1];
      continue;
    }
    const int64_t v = std::stoll(argv[i + 1]);
    if (a == "--threads") threads = static_cast<int>(v);
    if (a == "--batch") batch = v;
    if (a == "--time") time = v;
    if (a == "--heads") heads = v;
    if (a == "--kv-heads") kvHeads = v;
    if (a == "--head-dim") headDim = v;
    if (a == "--reps") reps = v;
    if (a == "--rounds") rounds = v;
  }
  keepLargeBuffersInHeap();  // as `sharelens train` runs (app/main.cpp)
  const ComputeThreads computeThreads(threads);
  auto leaf = [](std::vector<int64_t> shape) { return at::randn(shape).requires_grad_(true); };
  const torch::Tensor q = leaf({batch, time, heads, headDim}), k = leaf({batch, time, kvHeads, headDim}),
                      v = leaf({batch, time, kvHeads, headDim}), g = at::randn({batch, time, heads, headDim});
  const double scale = 1.0 / std::sqrt(static_cast<double>(headDim));
  auto fused = [&] { tokenMajorCausalAttention(q, k, v, scale).backward(g); };
  auto composite = [&] {
    causalAttention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)).transpose(1, 2).backward(g);
  };
  auto seconds = [&](const auto& step) {
    step();
    const auto start = clock_type::now();
    for (int64_t r = 0; r < reps; ++r) step();
    return std::chrono::duration<double>(clock_type::now() - start).count() / static_cast<double>(reps);
  };
  std::vector<double> ours, theirs;
  for (int64_t r = 0; r < rounds; ++r) {
    ours.push_back(only == "composite" ? 1.0 : seconds(fused));
    theirs.push_back(only == "kernel" ? 1.0 : seconds(composite));
  }
  std::sort(ours.begin(), ours.end());
  std::sort(theirs.begin(), theirs.end());
  const double flops = 4.0 * 2.0 * static_cast<double>(batch * heads * time * time * headDim) * 3.0 / 2.0;
  std::printf("attention B %lld T %lld H %lld KV %lld hd %lld, %d threads: forward + backward\n",
              static_cast<long long>(batch), static_cast<long long>(time), static_cast<long long>(heads),
              static_cast<long long>(kvHeads), static_cast<long long>(headDim), threads);
  std::printf("  token-major kernel %.2f ms (%.1f GFLOP/s), composite %.2f ms (%.1f GFLOP/s): %.2fx\n",
              1e3 * ours[ours.size() / 2], flops / ours[ours.size() / 2] / 1e9,
              1e3 * theirs[theirs.size() / 2], flops / theirs[theirs.size() / 2] / 1e9,
              theirs[theirs.size() / 2] / ours[ours.size() / 2]);
  return 0;
}
