#include "core/dtype.hpp"

#include <bit>
#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <system_error>
#include <thread>

static_assert(std::endian::native == std::endian::little, "ShareLens reads little-endian data in place");

namespace sharelens {
namespace {

struct DTypeRow {
  DType dtype;
  std::string_view name;
  size_t size;
  bool floating;
};

constexpr DTypeRow kRows[] = {
    {DType::F64, "F64", 8, true},    {DType::F32, "F32", 4, true},  {DType::F16, "F16", 2, true},
    {DType::BF16, "BF16", 2, true},  {DType::I64, "I64", 8, false}, {DType::I32, "I32", 4, false},
    {DType::I16, "I16", 2, false},   {DType::I8, "I8", 1, false},   {DType::U8, "U8", 1, false},
    {DType::Bool, "BOOL", 1, false},
};

const DTypeRow& row(DType dtype) {
  return kRows[static_cast<size_t>(dtype)];
}

template <typename T>
T loadUnaligned(const std::byte* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

// One tight loop per source type (the switch stays outside, so the loops vectorise).
template <typename Src, typename Out, typename Fn>
void convertLoop(const std::byte* src, size_t count, Out* dst, Fn fn) {
  for (size_t i = 0; i < count; ++i) dst[i] = static_cast<Out>(fn(loadUnaligned<Src>(src + i * sizeof(Src))));
}

template <typename Out>
void convert(DType dtype, const std::byte* src, size_t count, Out* dst) {
  auto identity = [](auto v) { return v; };
  switch (dtype) {
    case DType::F64:
      return convertLoop<double>(src, count, dst, identity);
    case DType::F32:
      return convertLoop<float>(src, count, dst, identity);
    case DType::F16:
      return convertLoop<uint16_t>(src, count, dst, [](uint16_t b) { return halfToFloat(b); });
    case DType::BF16:
      return convertLoop<uint16_t>(src, count, dst, [](uint16_t b) { return bfloat16ToFloat(b); });
    case DType::I64:
      return convertLoop<int64_t>(src, count, dst, identity);
    case DType::I32:
      return convertLoop<int32_t>(src, count, dst, identity);
    case DType::I16:
      return convertLoop<int16_t>(src, count, dst, identity);
    case DType::I8:
      return convertLoop<int8_t>(src, count, dst, identity);
    case DType::U8:
      return convertLoop<uint8_t>(src, count, dst, identity);
    case DType::Bool:
      return convertLoop<uint8_t>(src, count, dst, [](uint8_t v) { return v != 0 ? 1 : 0; });
  }
}

}  // namespace

std::optional<DType> parseDType(std::string_view name) {
  for (const auto& r : kRows)
    if (r.name == name) return r.dtype;
  return std::nullopt;
}

std::string_view dtypeName(DType dtype) {
  return row(dtype).name;
}
size_t dtypeSize(DType dtype) {
  return row(dtype).size;
}
bool isFloatingDType(DType dtype) {
  return row(dtype).floating;
}

float halfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;  // signed zero
    } else {
      // Subnormal m * 2^-24: shift until the implicit bit appears, then encode as a normal float.
      int shifts = 0;
      while ((mantissa & 0x400u) == 0) {
        mantissa <<= 1;
        ++shifts;
      }
      bits = sign | (static_cast<uint32_t>(113 - shifts) << 23) | ((mantissa & 0x3ffu) << 13);
    }
  } else if (exponent == 31) {
    bits = sign | 0x7f800000u | (mantissa << 13);  // inf or NaN (payload kept)
  } else {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  }
  return std::bit_cast<float>(bits);
}

uint16_t floatToHalf(float value) {
  const uint32_t f = std::bit_cast<uint32_t>(value);
  const uint16_t sign = static_cast<uint16_t>((f >> 16) & 0x8000u);
  const uint32_t absBits = f & 0x7fffffffu;
  if (absBits >= 0x7f800000u) {  // inf or NaN
    const bool isNan = absBits > 0x7f800000u;
    return sign | 0x7c00u | (isNan ? 0x200u : 0u);
  }
  if (absBits >= 0x477ff000u) return sign | 0x7c00u;  // rounds to >= 65520: overflow to inf
  const int32_t exponent = static_cast<int32_t>(absBits >> 23) - 127;
  if (exponent < -25) return sign;                        // below half of the smallest subnormal: zero
  uint32_t mantissa = (absBits & 0x7fffffu) | 0x800000u;  // 24 significant bits
  // Number of low bits to drop: 13 for normals, more for subnormals (exponent < -14).
  const int32_t shift = exponent < -14 ? 13 + (-14 - exponent) : 13;
  const uint32_t dropped = mantissa & ((1u << shift) - 1);
  const uint32_t halfway = 1u << (shift - 1);
  uint32_t kept = mantissa >> shift;
  if (dropped > halfway || (dropped == halfway && (kept & 1u))) ++kept;
  if (exponent < -14) return sign | static_cast<uint16_t>(kept);  // subnormal (may round up to min normal)
  // Normal: kept holds 11 bits with the implicit one; a carry out of the mantissa bumps the exponent.
  const uint32_t encoded = (static_cast<uint32_t>(exponent + 15) << 10) + (kept - 0x400u);
  return sign | static_cast<uint16_t>(encoded);
}

float bfloat16ToFloat(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

uint16_t floatToBfloat16(float value) {
  const uint32_t f = std::bit_cast<uint32_t>(value);
  if ((f & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((f >> 16) | 0x40u);  // quiet NaN
  const uint32_t roundingBias = 0x7fffu + ((f >> 16) & 1u);
  return static_cast<uint16_t>((f + roundingBias) >> 16);
}

namespace {

// bfloat16 is the upper half of a float: a shift, written with memcpy so that it vectorises.
void bfloat16ToFloatBulk(const std::byte* src, size_t count, float* dst) {
  for (size_t i = 0; i < count; ++i) {
    const uint32_t bits = static_cast<uint32_t>(loadUnaligned<uint16_t>(src + 2 * i)) << 16;
    std::memcpy(dst + i, &bits, 4);
  }
}

using BulkConversion = void (*)(const std::byte* src, size_t count, float* dst);

#if defined(__x86_64__)
// CPUID leaf 1, ECX: bit 29 = F16C, bit 28 = AVX, bit 27 = OSXSAVE (the OS saves YMM state).
// Written with <cpuid.h> because clang's __builtin_cpu_supports does not know "f16c".
bool cpuHasF16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
  const bool f16c = ecx & (1u << 29), avx = ecx & (1u << 28), osxsave = ecx & (1u << 27);
  return f16c && avx && osxsave;
}

// Hardware half -> float (F16C, every x86-64 CPU since 2012), chosen at runtime; exact like halfToFloat.
__attribute__((target("f16c,avx"))) void halfToFloatF16c(const std::byte* src, size_t count, float* dst) {
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    __m128i h;
    std::memcpy(&h, src + 2 * i, 16);
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
  for (; i < count; ++i) dst[i] = halfToFloat(loadUnaligned<uint16_t>(src + 2 * i));
}

// The streaming variants write with non-temporal stores: a destination far larger than the caches is
// neither read for ownership nor left to evict everything else. They need dst 32-byte aligned, so the
// scalar conversion takes the elements up to the first aligned one and the tail.
size_t elementsBeforeAligned(const float* dst, size_t count) {
  const size_t offset = reinterpret_cast<uintptr_t>(dst) % 32;  // a multiple of 4 for any float*
  return std::min(count, offset == 0 ? 0 : (32 - offset) / 4);
}

__attribute__((target("avx2"))) void bfloat16ToFloatStreaming(const std::byte* src, size_t count,
                                                              float* dst) {
  size_t i = elementsBeforeAligned(dst, count);
  bfloat16ToFloatBulk(src, i, dst);
  for (; i + 8 <= count; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i));
    const __m256i bits = _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16);  // bf16 -> upper half of a float
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i), bits);
  }
  bfloat16ToFloatBulk(src + 2 * i, count - i, dst + i);
  _mm_sfence();  // streamed stores are visible to other threads before we return
}

__attribute__((target("f16c,avx"))) void halfToFloatStreaming(const std::byte* src, size_t count,
                                                              float* dst) {
  size_t i = elementsBeforeAligned(dst, count);
  halfToFloatF16c(src, i, dst);
  for (; i + 8 <= count; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i));
    _mm256_stream_ps(dst + i, _mm256_cvtph_ps(h));
  }
  halfToFloatF16c(src + 2 * i, count - i, dst + i);
  _mm_sfence();
}
#endif

// The fastest conversion this CPU has for `dtype` (F32 and BF16 always; F16 with F16C), or nullptr.
BulkConversion bulkConversion(DType dtype, bool streaming) {
#if defined(__x86_64__)
  static const bool hasF16c = cpuHasF16c();
  static const bool hasAvx2 = __builtin_cpu_supports("avx2");
  if (dtype == DType::F16 && hasF16c) return streaming ? halfToFloatStreaming : halfToFloatF16c;
  if (dtype == DType::BF16 && streaming && hasAvx2) return bfloat16ToFloatStreaming;
#else
  (void)streaming;
#endif
  if (dtype == DType::BF16) return bfloat16ToFloatBulk;
  return nullptr;
}

// A conversion this large is bound by memory bandwidth: it streams its stores, and a second thread
// converts the upper half (bench_checkpoint_io, 1 GiB of BF16 warm: 153 ms -> 83 ms, read(2) alone 64 ms).
constexpr size_t kStreamingOutputBytes = size_t{4} << 20;

void convertInTwoHalves(BulkConversion convert, size_t elementSize, const std::byte* src, size_t count,
                        float* dst) {
  const size_t half = count / 2;
  std::thread upper;
  try {
    upper = std::thread(convert, src + half * elementSize, count - half, dst + half);
  } catch (const std::system_error&) {  // no thread to be had: convert it all here
    return convert(src, count, dst);
  }
  convert(src, half, dst);
  upper.join();
}

}  // namespace

void convertToFloat(DType dtype, const std::byte* src, size_t count, float* dst) {
  if (count == 0) return;  // an empty tensor's buffers may be null, which memcpy must never be given
  if (dtype == DType::F32) {
    std::memcpy(dst, src, count * sizeof(float));  // glibc streams large copies itself
    return;
  }
  const bool large = count * sizeof(float) >= kStreamingOutputBytes;
  const BulkConversion bulk = bulkConversion(dtype, large);
  if (!bulk) return convert(dtype, src, count, dst);
  if (large && std::thread::hardware_concurrency() > 1)
    return convertInTwoHalves(bulk, dtypeSize(dtype), src, count, dst);
  bulk(src, count, dst);
}

void convertToDouble(DType dtype, const std::byte* src, size_t count, double* dst) {
  convert(dtype, src, count, dst);
}

void convertFromFloat(DType dtype, std::span<const float> src, std::byte* dst) {
  if (src.empty()) return;  // as convertToFloat: null buffers are allowed for no elements
  switch (dtype) {
    case DType::F32:
      std::memcpy(dst, src.data(), src.size_bytes());
      return;
    case DType::F64:
      for (size_t i = 0; i < src.size(); ++i) {
        const double v = src[i];
        std::memcpy(dst + 8 * i, &v, 8);
      }
      return;
    case DType::F16:
    case DType::BF16:
      for (size_t i = 0; i < src.size(); ++i) {
        const uint16_t v = dtype == DType::F16 ? floatToHalf(src[i]) : floatToBfloat16(src[i]);
        std::memcpy(dst + 2 * i, &v, 2);
      }
      return;
    default:
      throw std::logic_error("convertFromFloat: not a floating dtype: " + std::string(dtypeName(dtype)));
  }
}

}  // namespace sharelens
