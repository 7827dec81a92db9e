// Training throughput of the LibTorch model (issue #4): tokens/s of full training steps (forward, backward,
// clipping, AdamW) of a ~10M-parameter vanilla topology in fp32, and model FLOPs utilisation against the
// machine's measured sgemm peak. Its peer, torch_train_peer.py, runs the same model in eager PyTorch.
// --cycle U --lora-rank R shares the same model's blocks as a Cycle of U with per-layer LoRA (the peer takes
// the same two flags).
// --runs N trains N models at once in one process, each on threads / N threads, and reports their summed
// tokens/s (the experiment runner's --parallel N).
// --mode forward times the training model's forward pass and loss alone, without autograd (the reference
// for held-out evaluation's speed, issue 37 item 3: tests/bench/bench_eval.sh); MFU then counts 2N + 4LHQT
// FLOPs per token, a third of training's.
// --device cuda trains on the GPU as `sharelens train --device cuda` does (forward under bf16 autocast, fp32
// weights and optimizer); MFU is then against the card's measured bf16 matmul peak. --size gpu is the
// experiments' GPU profile (assets/experiments/*.json "profiles.gpu": 12 x 512, 8 heads, 4 KV, FFN 1376,
// context 512, vocabulary 1024; ~35M non-embedding parameters).
// usage: bench_train [--threads N] [--steps N] [--batch N] [--size 10m|0.3m|1m|3m|gpu] [--runs N] [--mode
// train|forward] [--device cpu|cuda]
//                    [--topology FILE | --cycle U --lora-rank R]
// [--json OUT] [--profile TRACE.json]
#include <barrier>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/cuda.h>

#include "bench_models.hpp"
#include "core/atomic_file.hpp"
#include "core/heap.hpp"
#include "core/param_count.hpp"
#include "core/topology_presets.hpp"
#include "trainer/model.hpp"
#include "trainer/optimizer.hpp"
#include "trainer/step_shards.hpp"
#include "trainer/torch_compat.hpp"

using namespace sharelens;
using clock_type = std::chrono::steady_clock;

// An unshared model of one of the benchmark sizes (bench_models.hpp).
Topology benchTopology(const std::string& size) {
  Topology t;
  t.name = "bench-vanilla-" + size;
  t.model = benchModelDims(size);
  for (int64_t l = 0; l < t.model.layers; ++l) t.attention.assign.push_back(l);
  t.ffn.assign = t.attention.assign;
  return t;
}

// The matmul rate the MFU is against: fp32 on the CPU (2048^3), bf16 on a GPU (8192^3, the precision
// autocast gives the model's matmuls there).
double matmulPeak(torch::Device device) {
  const bool gpu = device.is_cuda();
  const int64_t n = gpu ? 8192 : 2048;
  const auto options = at::TensorOptions().device(device).dtype(gpu ? at::kBFloat16 : at::kFloat);
  const auto a = at::randn({n, n}, options), b = at::randn({n, n}, options);
  for (int i = 0; i < 2; ++i) at::matmul(a, b);
  if (gpu) torch::cuda::synchronize();  // the warm-ups finish outside the clock
  const auto start = clock_type::now();
  const int reps = gpu ? 20 : 6;
  for (int i = 0; i < reps; ++i) at::matmul(a, b);
  if (gpu) torch::cuda::synchronize();
  const double s = std::chrono::duration<double>(clock_type::now() - start).count();
  return 2.0 * static_cast<double>(n * n * n) * reps / s;
}

int main(int argc, char** argv) {
  int threads = 2;
  int64_t steps = 10, batch = 16;
  int64_t cycle = 0, loraRank = 0, parallelRuns = 1;
  std::string topologyPath, jsonOut, profileOut, size = "10m", mode = "train", deviceName = "cpu";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--threads")
      threads = std::stoi(v);
    else if (a == "--steps")
      steps = std::stoll(v);
    else if (a == "--batch")
      batch = std::stoll(v);
    else if (a == "--topology")
      topologyPath = v;
    else if (a == "--cycle")
      cycle = std::stoll(v);
    else if (a == "--lora-rank")
      loraRank = std::stoll(v);
    else if (a == "--json")
      jsonOut = v;
    else if (a == "--profile")
      profileOut = v;
    else if (a == "--size")
      size = v;
    else if (a == "--mode")
      mode = v;
    else if (a == "--device")
      deviceName = v;
    else if (a == "--runs")
      parallelRuns = std::max<int64_t>(1, std::stoll(v));
  }
  if (deviceName != "cpu" && deviceName != "cuda")
    throw std::invalid_argument("--device " + deviceName + ": expected cpu or cuda");
  if (deviceName == "cuda" && !torch::cuda::is_available())
    throw std::runtime_error("--device cuda: this LibTorch sees no CUDA device");
  const torch::Device device(deviceName == "cuda" ? torch::kCUDA : torch::kCPU);
  keepLargeBuffersInHeap();  // as `sharelens train` runs (app/main.cpp)
  // N runs side by side share the threads, as the experiment runner's --parallel N does.
  std::optional<ComputeThreads> computeThreads;
  const int threadsPerRun = std::max<int>(1, threads / static_cast<int>(parallelRuns));
  computeThreads.emplace(threadsPerRun);
  Topology t = topologyPath.empty() ? benchTopology(size) : readTopologyFile(topologyPath);
  if (cycle > 0) {
    t.name = "bench-cycle" + std::to_string(cycle) + "-lora" + std::to_string(loraRank);
    t.attention.assign = patternAssignment(SharingPattern::Cycle, t.model.layers, cycle);
    t.ffn.assign = t.attention.assign;
    t.attention.loraRank = t.ffn.loraRank = loraRank;
  }
  // One training run: its own model, optimizer and batch (what the experiment runner holds per run).
  struct Run {
    SharedTransformer model;
    AdamW opt;
    torch::Tensor tokens;
    Run(const Topology& t, int64_t batch, uint64_t seed, torch::Device device)
        : model(t, device, seed), opt(model.parameters(), 0.9, 0.95, 1e-8, 0.1) {
      at::Generator gen = at::detail::createCPUGenerator(3 + seed);
      tokens = at::randint(0, t.model.vocab, {batch, t.model.context + 1}, gen, at::kLong).to(device);
    }
    torch::Tensor loss() {
      const ScopedCudaAutocast autocast(tokens.is_cuda());  // as TrainingRun's forward
      return model.loss(tokens);
    }
    void forward() {
      const torch::NoGradGuard noGrad;
      (void)loss();
    }
    // As TrainingRun::step: a CPU run of several threads splits its rows over them (trainer/step_shards.hpp).
    void step(int threads) {
      if (stepIsSplitOverThreads(tokens.device(), threads, tokens.size(0), false))
        lossAndGradientsSplitOverThreads(model, model.parameters(), tokens, threads, threads, false, nullptr);
      else
        loss().backward();
      clipGradientNorm(model.parameters(), 1.0);
      opt.step(1e-3);
      opt.zeroGrad();
    }
  };
  std::vector<std::unique_ptr<Run>> runs;
  for (int64_t r = 0; r < parallelRuns; ++r) runs.push_back(std::make_unique<Run>(t, batch, 1 + r, device));
  // Each run warms up on its own thread, as the experiment runner's workers train, so that glibc's per-thread
  // heap arenas hold what they would there (a warm-up on the main thread would leave a run's worth of freed
  // buffers in the main arena and inflate the peak RSS that tests/bench/bench_memory.sh reads).
  std::barrier warmedUp(static_cast<std::ptrdiff_t>(parallelRuns) + 1);
  clock_type::time_point start;
  {
    std::vector<std::jthread> workers;
    for (size_t r = 0; r < runs.size(); ++r)
      workers.emplace_back([&, r] {
        Run& run = *runs[r];
        for (int i = 0; i < 3; ++i) run.step(threadsPerRun);
        if (r == 0 && !profileOut.empty()) {  // one step under the autograd profiler (chrome://tracing)
          torch::autograd::profiler::RecordProfile guard(profileOut);
          run.step(threadsPerRun);
        }
        if (device.is_cuda()) torch::cuda::synchronize();
        warmedUp.arrive_and_wait();
        for (int64_t i = 0; i < steps; ++i) mode == "forward" ? run.forward() : run.step(threadsPerRun);
        if (device.is_cuda()) torch::cuda::synchronize();
      });
    warmedUp.arrive_and_wait();
    start = clock_type::now();
  }
  const double seconds = std::chrono::duration<double>(clock_type::now() - start).count();
  const double tokensPerSecond =
      static_cast<double>(parallelRuns * steps * batch * t.model.context) / seconds;
  const ParamBudget budget = countParameters(t);
  computeThreads.reset();  // the machine's peak at all its threads, however they were split
  computeThreads.emplace(threads);
  const double peak = matmulPeak(device);
  const double flopsPerToken = mode == "forward" ? budget.trainFlopsPerToken / 3 : budget.trainFlopsPerToken;
  const double mfu = tokensPerSecond * flopsPerToken / peak;
  std::printf(
      "sharelens (LibTorch %s C++): %s, %lld parameters, batch %lld x %lld, %d threads (LibTorch intra-op "
      "%d), %lld run(s) side by side, %s, on %s\n",
      TORCH_VERSION, t.name.c_str(), static_cast<long long>(budget.total), static_cast<long long>(batch),
      static_cast<long long>(t.model.context), threads, at::get_num_threads(),
      static_cast<long long>(parallelRuns), mode == "forward" ? "forward and loss only" : "training steps",
      device.is_cuda() ? "CUDA (bf16 autocast)" : "the CPU");
  std::printf("  %.0f tokens/s, %.2f GFLOP/s (%s per token), %s peak %.1f GFLOP/s, MFU %.1f%%\n",
              tokensPerSecond, tokensPerSecond * flopsPerToken / 1e9,
              mode == "forward" ? "2N + 4LHQT" : "6N + 12LHQT", device.is_cuda() ? "bf16 matmul" : "sgemm",
              peak / 1e9, 100.0 * mfu);
  if (!jsonOut.empty())
    writeFileAtomically(jsonOut, Json{{"tokens_per_s", tokensPerSecond},
                                      {"mode", mode},
                                      {"device", deviceName},
                                      {"mfu", mfu},
                                      {"matmul_peak_flops", peak},
                                      {"parameters", budget.total},
                                      {"train_flops_per_token", budget.trainFlopsPerToken}}
                                     .dump());
  return 0;
}
