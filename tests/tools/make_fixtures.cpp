// make_fixtures OUT_DIR            writes one HF-layout checkpoint per family (the peer tests read them)
// make_fixtures --seeds OUT_DIR    writes the fuzzer's seed corpus (valid files + the malformed corpus)
// make_fixtures --bench-shape gpt2-124m|llama-3.2-1b OUT_DIR
//                                  a full-size checkpoint with the real model's shapes, random weights
#include <fstream>
#include <iostream>

#include "core/error.hpp"
#include "tests/support/hf_fixtures.hpp"
#include "tests/support/malformed.hpp"

using namespace sharelens;

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--seeds") {
    const std::filesystem::path dir = argv[2];
    std::filesystem::create_directories(dir);
    auto write = [&](const std::string& name, const std::vector<std::byte>& bytes) {
      std::ofstream out(dir / name, std::ios::binary);
      out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    };
    write("valid", testing::validSafetensorsBytes());
    for (const auto& c : testing::malformedCorpus())
      if (c.bytes.size() < 4096) write(c.name, c.bytes);
    return 0;
  }
  if (argc == 4 && std::string(argv[1]) == "--bench-shape") {
    const std::string shape = argv[2];
    testing::FixtureSpec spec;
    if (shape == "gpt2-124m") {
      spec = testing::defaultSpec(Family::Gpt2);
      spec.layers = 12, spec.hidden = 768, spec.heads = spec.kvHeads = 12, spec.headDim = 64;
      spec.ffn = 3072, spec.vocab = 50257, spec.context = 1024, spec.dtype = DType::F32;
    } else if (shape == "llama-3.2-1b") {
      spec = testing::defaultSpec(Family::Llama);
      spec.layers = 16, spec.hidden = 2048, spec.heads = 32, spec.kvHeads = 8, spec.headDim = 64;
      spec.ffn = 8192, spec.vocab = 128256, spec.context = 131072, spec.dtype = DType::BF16, spec.tied = true;
    } else {
      std::cerr << "unknown shape '" << shape << "': use gpt2-124m or llama-3.2-1b\n";
      return 2;
    }
    testing::writeHfFixture(argv[3], spec);
    return 0;
  }
  if (argc != 2) {
    std::cerr << "usage: make_fixtures OUT_DIR | make_fixtures --seeds OUT_DIR\n";
    return 2;
  }
  const std::filesystem::path out = argv[1];
  struct Named {
    const char* name;
    testing::FixtureSpec spec;
  };
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
  all.push_back({"gemma3", testing::defaultSpec(Family::Gemma3)});
  auto gemmaMm = testing::defaultSpec(Family::Gemma3);
  gemmaMm.gemmaMultimodal = true;
  gemmaMm.dtype = DType::BF16;
  all.push_back({"gemma3_multimodal_bf16", gemmaMm});
  all.push_back({"gpt2", testing::defaultSpec(Family::Gpt2)});
  auto gpt2Prefix = testing::defaultSpec(Family::Gpt2);
  gpt2Prefix.gpt2TransformerPrefix = true;
  gpt2Prefix.tied = false;
  all.push_back({"gpt2_transformer_prefix_untied", gpt2Prefix});
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
