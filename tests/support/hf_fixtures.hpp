// Small but real Hugging Face checkpoints for tests: the exact tensor names, layouts and config.json
// fields of Llama 3.2, Qwen2.5, Qwen3, Gemma 3 (text-only and multimodal nesting), GPT-2 and Phi-3 (fused
// qkv_proj and gate_up_proj), with random weights
// and scaled-down dimensions. Written with the production safetensors writer.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "core/dtype.hpp"
#include "core/model_view.hpp"

namespace sharelens::testing {

struct FixtureSpec {
  Family family = Family::Llama;
  int64_t layers = 3;
  int64_t hidden = 64;
  int64_t heads = 4;
  int64_t kvHeads = 2;
  int64_t headDim = 16;  // Gemma 3 uses an explicit head_dim that need not be hidden / heads
  int64_t ffn = 96;
  int64_t vocab = 101;
  int64_t context = 64;
  DType dtype = DType::F32;
  bool tied = false;
  int shards = 1;                      // > 1 writes model.safetensors.index.json and shards
  bool gemmaMultimodal = false;        // text_config nesting + model.language_model. prefix + vision tower
  bool gpt2TransformerPrefix = false;  // "transformer.h.0..." instead of "h.0..."
  bool writeConfig = true;
  // Weight sharing to find: each projection is a shared base (decaying spectrum) plus a per-layer delta of
  // low, layer-dependent rank, plus small noise -- instead of i.i.d. Gaussian weights.
  bool structured = false;
  uint64_t seed = 1;
};

// A spec with the family's characteristic traits (GQA for Llama, biases for Qwen2, QK-Norm and an explicit
// head_dim for Qwen3 and Gemma 3, packed MHA for GPT-2), at test size.
FixtureSpec defaultSpec(Family family);

// Writes the checkpoint into `dir` (created) and returns the path to open (the directory).
std::filesystem::path writeHfFixture(const std::filesystem::path& dir, const FixtureSpec& spec);

// A run directory as `sharelens train` leaves it, holding fixtures instead of trained weights: DIR/run.json
// and complete checkpoints DIR/checkpoints/step-0000004 and step-0000006 (Llama layout). Returns DIR.
std::filesystem::path writeFixtureRun(const std::filesystem::path& dir);

// A fresh empty directory under the system temp dir, removed by the caller or at reboot.
std::filesystem::path makeTempDir(const std::string& tag);

}  // namespace sharelens::testing
