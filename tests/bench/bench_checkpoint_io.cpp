// Checkpoint I/O benchmark (issue #2). A 1 GiB BF16 checkpoint with Llama-style names is written once;
// then, with the page cache dropped (cold) and warm:
//   OpenAndIndex      Checkpoint::open + openModelView (touches only the header)
//   ReadAllAsFloat    every tensor converted to float32
//   SequentialRead    read(2) of the whole file in 8 MiB chunks: the physical limit
// Usage: bench_checkpoint_io [--dir DIR] [google-benchmark flags]   (DIR: where the checkpoint is kept)
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>

#include "core/arch/family.hpp"
#include "core/atomic_file.hpp"
#include "core/checkpoint.hpp"
#include "core/safetensors.hpp"

namespace fs = std::filesystem;
using namespace sharelens;

namespace {

fs::path g_dir;

// ~1 GiB of BF16: 16 layers of a 2048-wide Llama block (GQA 32/8 heads of 64, FFN 2816), 16k vocab.
void writeCheckpoint(const fs::path& dir) {
  fs::create_directories(dir);
  const int64_t d = 2048, kv = 512, ffn = 2816, vocab = 16000, layers = 16;
  std::vector<EncodedTensor> tensors;
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.f, 0.02f);
  auto add = [&](const std::string& name, std::vector<int64_t> shape) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = normal(rng);
    tensors.push_back(EncodedTensor::fromFloats(name, DType::BF16, std::move(shape), v));
  };
  add("model.embed_tokens.weight", {vocab, d});
  for (int64_t l = 0; l < layers; ++l) {
    const std::string b = "model.layers." + std::to_string(l) + ".";
    add(b + "input_layernorm.weight", {d});
    add(b + "self_attn.q_proj.weight", {d, d});
    add(b + "self_attn.k_proj.weight", {kv, d});
    add(b + "self_attn.v_proj.weight", {kv, d});
    add(b + "self_attn.o_proj.weight", {d, d});
    add(b + "post_attention_layernorm.weight", {d});
    add(b + "mlp.gate_proj.weight", {ffn, d});
    add(b + "mlp.up_proj.weight", {ffn, d});
    add(b + "mlp.down_proj.weight", {d, ffn});
  }
  add("model.norm.weight", {d});
  add("lm_head.weight", {vocab, d});
  writeSafetensors(dir / "model.safetensors", tensors);
  writeFileAtomically(
      dir / "config.json",
      R"({"model_type":"llama","hidden_size":2048,"num_hidden_layers":16,"num_attention_heads":32,)"
      R"("num_key_value_heads":8,"intermediate_size":2816,"vocab_size":16000,"tie_word_embeddings":false})");
}

void dropCache(const fs::path& file) {
  const int fd = ::open(file.c_str(), O_RDONLY);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

void warmCache(const fs::path& file) {
  std::vector<char> buffer(8 << 20);
  const int fd = ::open(file.c_str(), O_RDONLY);
  while (::read(fd, buffer.data(), buffer.size()) > 0) {
  }
  ::close(fd);
}

void prepare(benchmark::State& state, const fs::path& file) {
  state.PauseTiming();
  if (state.range(0) == 0)
    dropCache(file);
  else
    warmCache(file);
  state.ResumeTiming();
}

void OpenAndIndex(benchmark::State& state) {
  const fs::path file = g_dir / "model.safetensors";
  for (auto _ : state) {
    prepare(state, file);
    const auto ckpt = Checkpoint::open(g_dir);
    const ModelView view = openModelView(*ckpt);
    benchmark::DoNotOptimize(view.layers.size());
  }
  state.SetLabel(state.range(0) == 0 ? "cold" : "warm");
}

void ReadAllAsFloat(benchmark::State& state) {
  const fs::path file = g_dir / "model.safetensors";
  // One buffer as large as the largest tensor, touched once before timing: resizing a vector per tensor
  // would zero-fill each newly grown range first and time memset instead of the read.
  std::vector<float> buffer;
  {
    const auto ckpt = Checkpoint::open(g_dir);
    for (const std::string& name : ckpt->tensorNames())
      buffer.resize(std::max<size_t>(buffer.size(), ckpt->at(name).info->numel));
  }
  for (auto _ : state) {
    prepare(state, file);
    const auto ckpt = Checkpoint::open(g_dir);
    for (const std::string& name : ckpt->tensorNames()) {
      const TensorRef& ref = ckpt->at(name);
      const std::span<float> out(buffer.data(), ref.info->numel);
      ref.file->adviseSequential(*ref.info);
      ref.file->readFloat(*ref.info, 0, out);
      benchmark::DoNotOptimize(out.data());
    }
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(fs::file_size(file)));
  state.SetLabel(state.range(0) == 0 ? "cold" : "warm");
}

void SequentialRead(benchmark::State& state) {
  const fs::path file = g_dir / "model.safetensors";
  std::vector<char> buffer(8 << 20);
  for (auto _ : state) {
    prepare(state, file);
    const int fd = ::open(file.c_str(), O_RDONLY);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    ssize_t n;
    while ((n = ::read(fd, buffer.data(), buffer.size())) > 0) benchmark::DoNotOptimize(buffer.data());
    ::close(fd);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(fs::file_size(file)));
  state.SetLabel(state.range(0) == 0 ? "cold" : "warm");
}

BENCHMARK(OpenAndIndex)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->Iterations(5)->UseRealTime();
BENCHMARK(ReadAllAsFloat)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();
BENCHMARK(SequentialRead)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();

// --read PATH...: every tensor of each checkpoint (any format Checkpoint opens) read as float32, warm, best
// of 5 rounds alternated over the paths; one line each: seconds, GB/s of float32 produced, and the ratio to
// the first path's time (tests/bench/bench_formats.py gives the same tensors in each format).
int readEach(const std::vector<std::string>& paths) {
  std::vector<double> best(paths.size(), 1e30);
  std::vector<uint64_t> elements(paths.size(), 0);
  std::vector<float> buffer;
  for (int round = 0; round < 6; ++round)  // round 0 warms the page cache
    for (size_t i = 0; i < paths.size(); ++i) {
      const auto start = std::chrono::steady_clock::now();
      const auto ckpt = Checkpoint::open(paths[i]);
      uint64_t total = 0;
      for (const std::string& name : ckpt->tensorNames()) {
        const TensorRef& ref = ckpt->at(name);
        if (buffer.size() < ref.info->numel) buffer.resize(ref.info->numel);
        ref.file->readFloat(*ref.info, 0, std::span<float>(buffer.data(), ref.info->numel));
        benchmark::DoNotOptimize(buffer.data());
        total += ref.info->numel;
      }
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (round > 0) best[i] = std::min(best[i], seconds);
      elements[i] = total;
    }
  for (size_t i = 0; i < paths.size(); ++i)
    std::printf("%s\t%.1fM tensors' elements\t%.3f s\t%.2f GB/s\t%.2fx\n", paths[i].c_str(),
                elements[i] / 1e6, best[i], elements[i] * 4.0 / best[i] / 1e9, best[i] / best[0]);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 2 && std::string(argv[1]) == "--read") return readEach({argv + 2, argv + argc});
  g_dir = fs::temp_directory_path() / "sharelens-bench-1gib";
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--dir") g_dir = argv[i + 1];
  if (!fs::exists(g_dir / "model.safetensors")) writeCheckpoint(g_dir);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
