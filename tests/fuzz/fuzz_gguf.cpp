// libFuzzer target for the GGUF reader (core/gguf, core/ggml_blocks) behind Checkpoint::open: the bytes are a
// .gguf file; when it opens, every tensor is read as floats (ggml blocks decoded, llama's attn_q / attn_k
// through their row order, Gemma's norms less one), so an info that lies about its ranges is caught reading
// out of bounds by ASan. Any failure must be a named Error. Seeds: make_fixtures --seeds (each architecture,
// F32 / F16 / Q8_0 / Q4_0, and Q4_K / Q6_K blocks).
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sharelens::fuzz::openAndReadEveryTensor({reinterpret_cast<const char*>(data), size}, "gguf", "model.gguf");
  return 0;
}
