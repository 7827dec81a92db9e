// GGUF files (llama.cpp, Ollama; the format of ggml's docs/gguf.md), versions 2 and 3, read behind the same
// Checkpoint as safetensors:
//   header        u32 magic "GGUF", u32 version, u64 tensor count, u64 metadata count;
//   metadata      key (u64 length + UTF-8) -> typed value (u8 ... f64, bool, string, array of one type);
//   tensor infos  name, u32 n_dims, u64 ne[n_dims] (ne[0] is the fastest-varying: a row's length), u32 ggml
//                 type, u64 offset from the start of the data section (a multiple of the alignment);
//   data          from the end of the infos rounded up to general.alignment (32 unless given).
// Element types read: F32, F16, BF16, F64 as they are; Q8_0, Q4_0, Q4_K and Q6_K dequantised to float32 on
// read (core/ggml_blocks.hpp); every other ggml type is refused by name. Architectures read: llama, qwen2,
// qwen3 and gemma3. Tensors take Hugging Face names (blk.N.attn_q.weight ->
// model.layers.N.self_attn.q_proj.weight, ...) and shapes (ne reversed), and a config.json is made from the
// metadata ({arch}.embedding_length, .block_count, .attention.head_count, ...), so every family-aware command
// runs on them. What llama.cpp's convert_hf_to_gguf.py changed is undone on read: the "llama" architecture's
// attn_q and attn_k rows are in Meta's interleaved RoPE order (llama.cpp's LLAMA_ROPE_TYPE_NORM) and are
// presented in rotate-half order; Gemma's RMSNorm weights are stored as 1 + w and are presented as w.
#pragma once

#include <filesystem>
#include <memory>
#include <span>
#include <string>

#include "core/json_util.hpp"
#include "core/safetensors.hpp"

namespace sharelens {

// Whether a file starts with the GGUF magic.
bool looksLikeGguf(std::span<const std::byte> head);

struct GgufCheckpoint {
  std::unique_ptr<SafetensorsFile> tensors;  // general.* string metadata in its metadata()
  Json config;                               // a Hugging Face config made from the metadata
  std::string format;  // for people: "GGUF v3 (llama; F32 x5, Q4_K x10, Q6_K x2)" (not written into files)
};

// Throws a named Error (the file, the metadata key or tensor, expected against found, a hint) on a malformed
// file, an unsupported version, architecture or element type.
GgufCheckpoint openGguf(const std::filesystem::path& path);

}  // namespace sharelens
