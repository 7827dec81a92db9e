// Element types of stored tensors (the safetensors set we support) and exact conversions to float.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace sharelens {

enum class DType : uint8_t { F64, F32, F16, BF16, I64, I32, I16, I8, U8, Bool };

inline constexpr DType kAllDTypes[] = {DType::F64, DType::F32, DType::F16, DType::BF16, DType::I64,
                                       DType::I32, DType::I16, DType::I8,  DType::U8,   DType::Bool};

std::optional<DType> parseDType(std::string_view name);  // "F32" -> F32; unknown -> nullopt
std::string_view dtypeName(DType dtype);                 // F32 -> "F32"
size_t dtypeSize(DType dtype);                           // bytes per element
bool isFloatingDType(DType dtype);

// IEEE binary16 and bfloat16 <-> binary32. Float -> narrow rounds to nearest, ties to even; NaN stays NaN.
float halfToFloat(uint16_t bits);
uint16_t floatToHalf(float value);
float bfloat16ToFloat(uint16_t bits);
uint16_t floatToBfloat16(float value);

// Converts `count` little-endian elements starting at `src` (any alignment) to float.
// Integers convert exactly where representable (I64 beyond 2^24 rounds as static_cast<float> does).
void convertToFloat(DType dtype, const std::byte* src, size_t count, float* dst);
void convertToDouble(DType dtype, const std::byte* src, size_t count, double* dst);

// Encodes floats as `dtype` (floating types only), little-endian, into dst (count * dtypeSize bytes).
void convertFromFloat(DType dtype, std::span<const float> src, std::byte* dst);

}  // namespace sharelens
