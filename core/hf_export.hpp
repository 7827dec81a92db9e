// Hugging Face Llama layout for ShareLens models: the config.json of a topology, and an export that
// materialises every layer's effective weights (shared blocks plus LoRA, head bases plus per-head LoRA, MASA
// sums, tied heads) under LlamaForCausalLM names, so that other tools load any topology as a plain model.
#pragma once

#include <filesystem>

#include "core/json_util.hpp"
#include "core/model_view.hpp"
#include "core/topology.hpp"

namespace sharelens {

Json llamaConfigFor(const Topology& topology);

// Writes OUT_DIR/model.safetensors (F32) and OUT_DIR/config.json from a checkpoint's canonical view.
// Needs a SwiGLU decoder with RMSNorms in the Llama places (ShareLens and Llama-family checkpoints).
void exportHfLlama(const Checkpoint& checkpoint, const ModelView& view, const std::filesystem::path& outDir);

}  // namespace sharelens
