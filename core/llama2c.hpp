// llama2.c checkpoints (github.com/karpathy/llama2.c, export.py), read behind the same Checkpoint as
// safetensors:
//   legacy (v0)  7 int32 (dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len; a negative
//                vocab_size marks an untied classifier), then float32 arrays: token embedding, attention
//                RMSNorms, wq, wk, wv, wo (each over all layers), FFN RMSNorms, w1, w2, w3, the final
//                RMSNorm, the RoPE tables (seq_len x head_size/2, twice: not weights, not listed), then the
//                classifier when untied;
//   version 1    a 256-byte header: uint32 magic "ak42" (0x616b3432), int32 version, the 7 int32, a uint8
//                shared-classifier flag; then float32: attention RMSNorms, FFN RMSNorms, final RMSNorm, token
//                embedding, wq, wk, wv, wo, w1, w2, w3 (all layers each), the classifier when untied;
//   version 2    the same header with an int32 Q8_0 group size after the flag; the RMSNorms in float32, then
//                each weight of version 1's order as int8 values followed by its float32 group scales.
// Tensors take Hugging Face Llama names (model.layers.N.self_attn.q_proj.weight, ...) and a config is made
// from the header (rope_theta 10000, rms_norm_eps 1e-5: llama2.c's model.py), so every family-aware command
// runs on them. wq and wk are presented with their rows in Hugging Face's rotate-half order (llama2.c keeps
// Meta's interleaved pairs; the permutation of transformers' convert_llama_weights_to_hf.py), nothing copied.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>

#include "core/json_util.hpp"
#include "core/safetensors.hpp"

namespace sharelens {

enum class Llama2cVersion { Legacy, Float32, Q8 };

// Whether these first bytes of a file of this size are a llama2.c checkpoint: the "ak42" magic, or a legacy
// header whose dimensions give exactly this file size.
bool looksLikeLlama2c(std::span<const std::byte> head, uint64_t fileSize);

struct Llama2cCheckpoint {
  std::unique_ptr<SafetensorsFile> tensors;
  Json config;  // a Hugging Face LlamaConfig made from the header
  Llama2cVersion version = Llama2cVersion::Legacy;
  std::string format;  // for people: "llama2.c version 2 (Q8_0, groups of 64)" (not written into files)
};

// Throws a named Error (the file, the header field, expected against found) on a malformed file.
Llama2cCheckpoint openLlama2c(const std::filesystem::path& path);

}  // namespace sharelens
