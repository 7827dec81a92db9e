// ggml's block-quantised tensor formats (GGUF files from llama.cpp and Ollama), decoded to float32. Each
// block holds a run of consecutive values of one row; the layouts are ggml's (ggml-common.h, block_*), the
// decoding its dequantize_row_* (ggml-quants.c):
//   Q8_0  34 bytes / 32 values:  f16 d, int8 q[32];                        x = d * q
//   Q4_0  18 bytes / 32 values:  f16 d, u8 q[16] (value j in the low nibble of q[j], value 16 + j in the
//                                high nibble);                              x = d * (nibble - 8)
//   Q4_1  20 bytes / 32 values:  f16 d, f16 m, u8 q[16] (as Q4_0);          x = d * nibble + m
//   Q5_0  22 bytes / 32 values:  f16 d, u32 qh (bit j: the fifth bit of value j), u8 q[16] (as Q4_0);
//                                                                           x = d * (q5 - 16)
//   Q5_1  24 bytes / 32 values:  f16 d, f16 m, u32 qh, u8 q[16];            x = d * q5 + m
//   Q4_K 144 bytes / 256 values: f16 d, f16 dmin, u8 scales[12] (eight 6-bit scales and eight 6-bit mins,
//                                packed), u8 q[128]; eight sub-blocks of 32:
//                                                                           x = d * scale * nibble - dmin *
//                                                                           min
//   Q5_K 176 bytes / 256 values: Q4_K's d, dmin and scales, u8 qh[32] (bit 2g of qh[l]: the fifth bit of
//                                value l of sub-block 2g, bit 2g + 1 of sub-block 2g + 1), u8 q[128] (as
//                                Q4_K)
//   Q6_K 210 bytes / 256 values: u8 ql[128] (low 4 bits), u8 qh[64] (high 2 bits), int8 scales[16], f16 d;
//                                sixteen sub-blocks of 16:                  x = d * scale * (q6 - 32)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace sharelens {

enum class GgmlBlocks : uint8_t { None, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K };

struct GgmlBlockShape {
  uint64_t values = 0;  // per block
  uint64_t bytes = 0;   // per block
};

GgmlBlockShape ggmlBlockShape(GgmlBlocks kind);
std::string_view ggmlBlocksName(GgmlBlocks kind);

// Decodes one block (ggmlBlockShape(kind).bytes bytes, any alignment) into ggmlBlockShape(kind).values
// floats.
void decodeGgmlBlock(GgmlBlocks kind, const std::byte* block, float* out);

// Values [first, first + count) of a run of blocks starting at `data`.
void decodeGgmlValues(GgmlBlocks kind, const std::byte* data, uint64_t first, uint64_t count, float* out);

}  // namespace sharelens
