#include "core/ggml_blocks.hpp"

#include <algorithm>
#include <array>
#include <cstring>

#include "core/dtype.hpp"

namespace sharelens {
namespace {

float half(const std::byte* at) {
  uint16_t bits;
  std::memcpy(&bits, at, sizeof bits);
  return halfToFloat(bits);
}

uint8_t u8(const std::byte* at) {
  return static_cast<uint8_t>(*at);
}

void decodeQ8_0(const std::byte* block, float* out) {
  const float d = half(block);
  for (int j = 0; j < 32; ++j) out[j] = d * static_cast<float>(static_cast<int8_t>(block[2 + j]));
}

void decodeQ4_0(const std::byte* block, float* out) {
  const float d = half(block);
  const std::byte* q = block + 2;
  for (int j = 0; j < 16; ++j) {
    out[j] = d * static_cast<float>((u8(q + j) & 0x0F) - 8);
    out[j + 16] = d * static_cast<float>((u8(q + j) >> 4) - 8);
  }
}

void decodeQ4_1(const std::byte* block, float* out) {
  const float d = half(block), m = half(block + 2);
  const std::byte* q = block + 4;
  for (int j = 0; j < 16; ++j) {
    out[j] = d * static_cast<float>(u8(q + j) & 0x0F) + m;
    out[j + 16] = d * static_cast<float>(u8(q + j) >> 4) + m;
  }
}

// Q5_0 and Q5_1: the low four bits as Q4_0's nibbles, the fifth of value j in bit j of the u32 qh.
void decodeQ5(const std::byte* block, float* out, bool withMin) {
  const float d = half(block), m = withMin ? half(block + 2) : 0.0f;
  const std::byte* qhAt = block + (withMin ? 4 : 2);
  uint32_t qh;
  std::memcpy(&qh, qhAt, sizeof qh);
  const std::byte* q = qhAt + 4;
  const int offset = withMin ? 0 : 16;
  for (int j = 0; j < 16; ++j) {
    const int low = static_cast<int>(((qh >> j) & 1u) << 4),
              high = static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
    out[j] = d * static_cast<float>(((u8(q + j) & 0x0F) | low) - offset) + m;
    out[j + 16] = d * static_cast<float>(((u8(q + j) >> 4) | high) - offset) + m;
  }
}

// Sub-block j's 6-bit scale and min from Q4_K's 12 packed bytes: j < 4 in the low 6 bits of bytes j and
// j + 4; j >= 4 in the nibbles of byte j + 4 with their top 2 bits in the top bits of bytes j - 4 and j.
void scaleAndMinK4(int j, const std::byte* packed, float& scale, float& min) {
  const auto q = [&](int i) { return u8(packed + i); };
  if (j < 4) {
    scale = static_cast<float>(q(j) & 63);
    min = static_cast<float>(q(j + 4) & 63);
  } else {
    scale = static_cast<float>((q(j + 4) & 0x0F) | ((q(j - 4) >> 6) << 4));
    min = static_cast<float>((q(j + 4) >> 4) | ((q(j) >> 6) << 4));
  }
}

// Q4_K, and Q5_K when `qh` is given: four groups of 64 values from 32 bytes, the low nibbles sub-block 2g,
// the high ones 2g + 1; Q5_K's fifth bits are bits 2g and 2g + 1 of qh[l].
void decodeK4(const std::byte* block, const std::byte* qh, const std::byte* q, float* out) {
  const float d = half(block), dmin = half(block + 2);
  const std::byte* scales = block + 4;
  for (int g = 0; g < 4; ++g, q += 32, out += 64) {
    float s0, m0, s1, m1;
    scaleAndMinK4(2 * g, scales, s0, m0);
    scaleAndMinK4(2 * g + 1, scales, s1, m1);
    const float d0 = d * s0, d1 = d * s1, min0 = dmin * m0, min1 = dmin * m1;
    for (int l = 0; l < 32; ++l) {
      const int fifth0 = qh ? ((u8(qh + l) >> (2 * g)) & 1) << 4 : 0;
      const int fifth1 = qh ? ((u8(qh + l) >> (2 * g + 1)) & 1) << 4 : 0;
      out[l] = d0 * static_cast<float>((u8(q + l) & 0x0F) + fifth0) - min0;
      out[l + 32] = d1 * static_cast<float>((u8(q + l) >> 4) + fifth1) - min1;
    }
  }
}

void decodeQ6_K(const std::byte* block, float* out) {
  const std::byte* ql = block;
  const std::byte* qh = block + 128;
  const std::byte* sc = block + 192;
  const float d = half(block + 208);
  const auto scale = [&](int i) { return static_cast<float>(static_cast<int8_t>(sc[i])); };
  // Two halves of 128 values, each from 64 ql bytes, 32 qh bytes and 8 scales (one per 16 values).
  for (int h = 0; h < 2; ++h, ql += 64, qh += 32, sc += 8, out += 128) {
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int high = u8(qh + l);
      const int q1 = ((u8(ql + l) & 0x0F) | (((high >> 0) & 3) << 4)) - 32;
      const int q2 = ((u8(ql + l + 32) & 0x0F) | (((high >> 2) & 3) << 4)) - 32;
      const int q3 = ((u8(ql + l) >> 4) | (((high >> 4) & 3) << 4)) - 32;
      const int q4 = ((u8(ql + l + 32) >> 4) | (((high >> 6) & 3) << 4)) - 32;
      out[l] = d * scale(is) * static_cast<float>(q1);
      out[l + 32] = d * scale(is + 2) * static_cast<float>(q2);
      out[l + 64] = d * scale(is + 4) * static_cast<float>(q3);
      out[l + 96] = d * scale(is + 6) * static_cast<float>(q4);
    }
  }
}

}  // namespace

GgmlBlockShape ggmlBlockShape(GgmlBlocks kind) {
  switch (kind) {
    case GgmlBlocks::Q8_0:
      return {32, 34};
    case GgmlBlocks::Q4_0:
      return {32, 18};
    case GgmlBlocks::Q4_1:
      return {32, 20};
    case GgmlBlocks::Q5_0:
      return {32, 22};
    case GgmlBlocks::Q5_1:
      return {32, 24};
    case GgmlBlocks::Q4_K:
      return {256, 144};
    case GgmlBlocks::Q5_K:
      return {256, 176};
    case GgmlBlocks::Q6_K:
      return {256, 210};
    case GgmlBlocks::None:
      break;
  }
  return {1, 0};
}

std::string_view ggmlBlocksName(GgmlBlocks kind) {
  switch (kind) {
    case GgmlBlocks::Q8_0:
      return "Q8_0";
    case GgmlBlocks::Q4_0:
      return "Q4_0";
    case GgmlBlocks::Q4_1:
      return "Q4_1";
    case GgmlBlocks::Q5_0:
      return "Q5_0";
    case GgmlBlocks::Q5_1:
      return "Q5_1";
    case GgmlBlocks::Q4_K:
      return "Q4_K";
    case GgmlBlocks::Q5_K:
      return "Q5_K";
    case GgmlBlocks::Q6_K:
      return "Q6_K";
    case GgmlBlocks::None:
      break;
  }
  return "none";
}

void decodeGgmlBlock(GgmlBlocks kind, const std::byte* block, float* out) {
  switch (kind) {
    case GgmlBlocks::Q8_0:
      return decodeQ8_0(block, out);
    case GgmlBlocks::Q4_0:
      return decodeQ4_0(block, out);
    case GgmlBlocks::Q4_1:
      return decodeQ4_1(block, out);
    case GgmlBlocks::Q5_0:
      return decodeQ5(block, out, false);
    case GgmlBlocks::Q5_1:
      return decodeQ5(block, out, true);
    case GgmlBlocks::Q4_K:
      return decodeK4(block, nullptr, block + 16, out);
    case GgmlBlocks::Q5_K:
      return decodeK4(block, block + 16, block + 48, out);
    case GgmlBlocks::Q6_K:
      return decodeQ6_K(block, out);
    case GgmlBlocks::None:
      break;
  }
}

void decodeGgmlValues(GgmlBlocks kind, const std::byte* data, uint64_t first, uint64_t count, float* out) {
  const GgmlBlockShape shape = ggmlBlockShape(kind);
  std::array<float, 256> block;
  while (count > 0) {
    const uint64_t index = first / shape.values, within = first % shape.values;
    const uint64_t n = std::min(count, shape.values - within);
    const std::byte* at = data + index * shape.bytes;
    if (within == 0 && n == shape.values) {
      decodeGgmlBlock(kind, at, out);
    } else {
      decodeGgmlBlock(kind, at, block.data());
      std::copy_n(block.data() + within, n, out);
    }
    first += n;
    count -= n;
    out += n;
  }
}

}  // namespace sharelens
