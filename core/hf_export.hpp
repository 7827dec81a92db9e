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

// The topology a checkpoint was trained as, for post-training it: a ShareLens checkpoint's own (from its
// metadata), or the unshared topology of a Hugging Face Llama-layout checkpoint (shape, rope_theta,
// rms_norm_eps from config.json), with its context capped at `maxContext` (the sequence length to post-train
// with; RoPE tables are the same for the positions kept). Other families are refused with a named Error.
Topology topologyOfCheckpoint(const Checkpoint& checkpoint, const ModelView& view, int64_t maxContext);

// Writes OUT_DIR/model.safetensors (F32) and OUT_DIR/config.json from a checkpoint's canonical view.
// Needs a SwiGLU decoder with RMSNorms in the Llama places (ShareLens and Llama-family checkpoints).
void exportHfLlama(const Checkpoint& checkpoint, const ModelView& view, const std::filesystem::path& outDir);

// `sharelens export-hf` and the GUI's "Write as a plain Hugging Face checkpoint": a compressed checkpoint
// back in its own family's layout (every compressed matrix materialised), any other as Llama (a ShareLens
// model's every layer's effective weights). Returns what was written, for people.
std::string writePlainHfCheckpoint(const Checkpoint& checkpoint, const ModelView& view,
                                   const std::filesystem::path& outDir);

}  // namespace sharelens
