// make_fixtures OUT_DIR            writes one HF-layout checkpoint per family (the peer tests read them)
// make_fixtures --seeds OUT_DIR    writes each fuzz target's seed corpus (OUT_DIR/<target>/: valid inputs +
// the
//                                  malformed safetensors corpus)
// make_fixtures --bench-shape gpt2-124m|gpt2-350m|llama-3.2-1b OUT_DIR
//                                  a full-size checkpoint with the real model's shapes, random weights
#include <fstream>
#include <iostream>
#include <optional>
#include <string_view>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/run_dir.hpp"
#include "core/topology_presets.hpp"
#include "tests/fuzz/fuzz_support.hpp"
#include "tests/support/gguf_fixtures.hpp"
#include "tests/support/hf_fixtures.hpp"
#include "tests/support/llama2c_fixtures.hpp"
#include "tests/support/malformed.hpp"
#include "tests/support/torch_zip_fixtures.hpp"

using namespace sharelens;

namespace {

struct Named {
  const char* name;
  testing::FixtureSpec spec;
};

// The checkpoint fixtures the peer checks run over: every family and its variants.
std::vector<Named> fixtureList() {
  std::vector<Named> all;
  all.push_back({"llama", testing::defaultSpec(Family::Llama)});
  auto structured = testing::defaultSpec(Family::Llama);
  structured.structured = true;
  structured.layers = 6;
  all.push_back({"llama_structured", structured});
  auto gpt2Structured = testing::defaultSpec(Family::Gpt2);
  gpt2Structured.structured = true;
  all.push_back({"gpt2_structured", gpt2Structured});
  auto llamaBf16 = testing::defaultSpec(Family::Llama);
  llamaBf16.dtype = DType::BF16;
  llamaBf16.shards = 3;
  llamaBf16.tied = false;
  all.push_back({"llama_bf16_sharded", llamaBf16});
  auto qwen = testing::defaultSpec(Family::Qwen2);
  qwen.dtype = DType::F16;
  all.push_back({"qwen2_f16", qwen});
  auto qwen3 = testing::defaultSpec(Family::Qwen3);
  qwen3.dtype = DType::BF16;
  all.push_back({"qwen3_bf16", qwen3});
  all.push_back({"gemma3", testing::defaultSpec(Family::Gemma3)});
  all.push_back({"phi3", testing::defaultSpec(Family::Phi3)});
  auto gemmaMm = testing::defaultSpec(Family::Gemma3);
  gemmaMm.gemmaMultimodal = true;
  gemmaMm.dtype = DType::BF16;
  all.push_back({"gemma3_multimodal_bf16", gemmaMm});
  all.push_back({"gpt2", testing::defaultSpec(Family::Gpt2)});
  auto gpt2Prefix = testing::defaultSpec(Family::Gpt2);
  gpt2Prefix.gpt2TransformerPrefix = true;
  gpt2Prefix.tied = false;
  all.push_back({"gpt2_transformer_prefix_untied", gpt2Prefix});
  return all;
}

void writeBytes(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// One seed directory per fuzz target (tests/fuzz/): valid inputs of every kind plus the malformed corpus.
int writeSeeds(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  for (const char* target :
       {"safetensors", "model_view", "shard_index", "topology", "metrics", "llama2c", "torch_zip", "gguf"})
    fs::create_directories(dir / target);
  auto bytes = [](const std::vector<std::byte>& b) {
    return std::string_view(reinterpret_cast<const char*>(b.data()), b.size());
  };
  writeBytes(dir / "safetensors" / "valid", bytes(testing::validSafetensorsBytes()));
  for (const auto& c : testing::malformedCorpus())
    if (c.bytes.size() < 4096) writeBytes(dir / "safetensors" / c.name, bytes(c.bytes));

  const fs::path scratch = dir / ".scratch";
  for (const Named& n : fixtureList()) {
    if (n.spec.shards > 1) continue;  // the model-view format holds one file
    testing::writeHfFixture(scratch / n.name, n.spec);
    writeBytes(dir / "model_view" / n.name, fuzz::checkpointAsText(scratch / n.name));
  }
  auto sharded = testing::defaultSpec(Family::Llama);  // as tests/fuzz/fuzz_shard_index.cpp writes it
  sharded.shards = 2;
  sharded.layers = 2;
  testing::writeHfFixture(scratch / "sharded", sharded);
  writeBytes(dir / "shard_index" / "valid",
             readTextFile(scratch / "sharded" / "model.safetensors.index.json"));
  fs::remove_all(scratch);

  std::vector<std::pair<std::string, Topology>> topologies = {{"debug", debugTopology()},
                                                              {"demo", demoTopology()}};
  for (SharingPattern p : kAllPatterns) {
    PresetSpec spec;
    spec.pattern = p;
    spec.uniqueBlocks = 4;
    spec.base.layers = 8;
    topologies.emplace_back(std::string(patternName(p)), makePreset(spec));
  }
  Topology masa = debugTopology();
  masa.attention.assign = masa.ffn.assign = {0, 1, 2, 3};
  masa.masa = {true, {Proj::Q, Proj::K, Proj::V, Proj::O}, 2, {{0, 1}, {2, 3}}, true, 8, 16};
  topologies.emplace_back("masa", masa);
  Topology heads = debugTopology();
  heads.headSharing = {HeadSharingMode::SharedBase, 4, {Proj::Q, Proj::K, Proj::V}};
  heads.embedding = {false, 8};
  topologies.emplace_back("heads_untied_factorised", heads);
  for (const auto& [name, t] : topologies) writeBytes(dir / "topology" / name, topologyToJson(t).dump(1));

  std::string metrics;
  for (int step = 1; step <= 12; ++step) {
    MetricPoint p{step, 512.0 * step, 5.0 - 0.1 * step, step % 4 == 0 ? 4.9 : NAN, 1e-3,
                  0.5,  1000,         0.1 * step};
    metrics += metricToJson(p).dump() + "\n";
    if (step % 5 == 0) metrics += Json{{"event", "checkpoint"}, {"step", step}}.dump() + "\n";
  }
  metrics += R"({"event":"resume","step":10})"
             "\n"
             R"({"step":11,"loss":4.)";
  writeBytes(dir / "metrics" / "run", metrics);

  for (int version : {0, 1, 2})
    for (bool shared : {true, false}) {
      testing::Llama2cSpec spec;
      spec.dim = 8, spec.hidden = 12, spec.heads = 2, spec.kvHeads = 1, spec.vocab = 16, spec.seqLen = 8;
      spec.version = version, spec.shared = shared, spec.groupSize = 4;
      writeBytes(dir / "llama2c" / ("v" + std::to_string(version) + (shared ? "-tied" : "-untied")),
                 bytes(testing::llama2cBytes(spec)));
    }
  // GGUF: each architecture at a tiny size (rows of 32, one block), in F32, Q8_0 and Q4_0, and the K blocks.
  const std::pair<Family, uint32_t> ggufSeeds[] = {{Family::Llama, testing::kGgmlF32},
                                                   {Family::Qwen2, testing::kGgmlQ8_0},
                                                   {Family::Qwen3, testing::kGgmlF16},
                                                   {Family::Gemma3, testing::kGgmlQ4_0}};
  for (const auto& [family, type] : ggufSeeds) {
    testing::FixtureSpec spec = testing::defaultSpec(family);
    spec.layers = 1, spec.hidden = 32, spec.heads = 2, spec.kvHeads = 1, spec.headDim = 16, spec.ffn = 64;
    spec.vocab = 8, spec.context = 8;
    const fs::path hf = testing::writeHfFixture(scratch / "gguf", spec);
    testing::writeGgufFromHf(hf,
                             dir / "gguf" / (std::string(familyName(family)) + "-" + std::to_string(type)),
                             {.matrixType = type, .version = family == Family::Qwen2 ? 2u : 3u});
    fs::remove_all(scratch);
  }
  testing::GgufBuilder blocks;
  blocks.string("general.architecture", "llama");
  blocks.u32("llama.embedding_length", 256);
  blocks.u32("llama.block_count", 1);
  blocks.u32("llama.feed_forward_length", 2);
  blocks.u32("llama.attention.head_count", 2);
  blocks.tensor("blk.0.ffn_up.weight", {256, 2}, testing::kGgmlQ4_K,
                testing::randomBlocks(GgmlBlocks::Q4_K, 2, 1));
  blocks.tensor("blk.0.ffn_gate.weight", {256, 2}, testing::kGgmlQ6_K,
                testing::randomBlocks(GgmlBlocks::Q6_K, 2, 2));
  writeBytes(dir / "gguf" / "k-blocks", bytes(blocks.bytes()));
  writeBytes(dir / "torch_zip" / "state-dict",
             bytes(testing::torchZipBytes({{"model.layers.0.self_attn.q_proj.weight", {2, 2}, {1, 2, 3, 4}},
                                           {"model.norm.weight", {2}, {1, 1}}})));
  return 0;
}

// The published models' shapes, for the benchmarks (GPT-2 small and medium, Llama 3.2 1B), random weights.
std::optional<testing::FixtureSpec> benchShape(std::string_view name) {
  testing::FixtureSpec spec;
  if (name == "gpt2-124m" || name == "gpt2-350m") {
    const bool medium = name == "gpt2-350m";
    spec = testing::defaultSpec(Family::Gpt2);
    spec.layers = medium ? 24 : 12, spec.hidden = medium ? 1024 : 768;
    spec.heads = spec.kvHeads = medium ? 16 : 12, spec.headDim = 64;
    spec.ffn = 4 * spec.hidden, spec.vocab = 50257, spec.context = 1024, spec.dtype = DType::F32;
  } else if (name == "llama-3.2-1b") {
    spec = testing::defaultSpec(Family::Llama);
    spec.layers = 16, spec.hidden = 2048, spec.heads = 32, spec.kvHeads = 8, spec.headDim = 64;
    spec.ffn = 8192, spec.vocab = 128256, spec.context = 131072, spec.dtype = DType::BF16, spec.tied = true;
  } else {
    return std::nullopt;
  }
  return spec;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--seeds") return writeSeeds(argv[2]);
  if (argc == 4 && std::string(argv[1]) == "--bench-shape") {
    const std::optional<testing::FixtureSpec> spec = benchShape(argv[2]);
    if (!spec) {
      std::cerr << "unknown shape '" << argv[2] << "': use gpt2-124m, gpt2-350m or llama-3.2-1b\n";
      return 2;
    }
    testing::writeHfFixture(argv[3], *spec);
    return 0;
  }
  if (argc != 2) {
    std::cerr << "usage: make_fixtures OUT_DIR | make_fixtures --seeds OUT_DIR\n";
    return 2;
  }
  const std::filesystem::path out = argv[1];
  const std::vector<Named> all = fixtureList();
  try {
    for (const auto& n : all) {
      testing::writeHfFixture(out / n.name, n.spec);
      std::cout << (out / n.name).string() << "\n";
    }
  } catch (const Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
