// Half and bfloat16 conversions against closed forms, exhaustively over all 65,536 encodings.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/dtype.hpp"

namespace sharelens {
namespace {

// binary16 value from its fields, computed with ldexp (an independent closed form).
double halfClosedForm(uint16_t h) {
  const int sign = (h >> 15) ? -1 : 1;
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  if (exponent == 31) return mantissa ? std::nan("") : sign * INFINITY;
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

TEST(DType, HalfToFloatMatchesClosedFormForEveryEncoding) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const double expected = halfClosedForm(static_cast<uint16_t>(h));
    const float got = halfToFloat(static_cast<uint16_t>(h));
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(got)) << std::hex << h;
    } else {
      EXPECT_EQ(static_cast<double>(got), expected) << std::hex << h;
      EXPECT_EQ(std::signbit(got), (h & 0x8000) != 0) << std::hex << h;
    }
  }
}

TEST(DType, FloatToHalfRoundTripsEveryFiniteHalf) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const uint16_t half = static_cast<uint16_t>(h);
    if (((h >> 10) & 0x1f) == 31 && (h & 0x3ff)) {
      EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(halfToFloat(half)))));
      continue;
    }
    EXPECT_EQ(floatToHalf(halfToFloat(half)), half) << std::hex << h;
  }
}

TEST(DType, FloatToHalfRoundsToNearestTiesToEven) {
  for (uint16_t h = 0; h < 0x7bff; ++h) {  // positive finite halves and their successor
    const double lo = halfClosedForm(h), hi = halfClosedForm(static_cast<uint16_t>(h + 1));
    const float mid = static_cast<float>((lo + hi) / 2);  // exact: 12 significant bits
    const uint16_t even = (h & 1) ? static_cast<uint16_t>(h + 1) : h;
    EXPECT_EQ(floatToHalf(mid), even) << std::hex << h;
    EXPECT_EQ(floatToHalf(std::nextafter(mid, 0.0f)), h) << std::hex << h;
    EXPECT_EQ(floatToHalf(std::nextafter(mid, 1e9f)), h + 1) << std::hex << h;
  }
}

TEST(DType, FloatToHalfOverflowAndUnderflow) {
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(65519.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);  // the tie rounds to even = infinity
  EXPECT_EQ(floatToHalf(1e10f), 0x7c00);
  EXPECT_EQ(floatToHalf(-1e10f), 0xfc00);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25)), 0x0000);  // tie between 0 and the smallest subnormal
  EXPECT_EQ(floatToHalf(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000);
  EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(NAN))));
}

TEST(DType, Bfloat16MatchesUpperBitsAndRoundsToNearestEven) {
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    const float f = bfloat16ToFloat(static_cast<uint16_t>(b));
    EXPECT_EQ(std::bit_cast<uint32_t>(f), b << 16);
    if (!std::isnan(f)) {
      EXPECT_EQ(floatToBfloat16(f), b);
    }
  }
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1.0).
  EXPECT_EQ(floatToBfloat16(1.0f + std::ldexp(1.0f, -8)), floatToBfloat16(1.0f));
  EXPECT_EQ(floatToBfloat16(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)),
            static_cast<uint16_t>(floatToBfloat16(1.0f) + 1));
  EXPECT_TRUE(std::isnan(bfloat16ToFloat(floatToBfloat16(NAN))));
}

TEST(DType, ParseAndNames) {
  for (DType d : kAllDTypes) EXPECT_EQ(parseDType(dtypeName(d)), d);
  EXPECT_FALSE(parseDType("F8_E4M3").has_value());
  EXPECT_EQ(dtypeSize(DType::BF16), 2u);
  EXPECT_EQ(dtypeSize(DType::Bool), 1u);
}

TEST(DType, IntegerConversionFromUnalignedBytes) {
  std::byte buffer[1 + 3 * 8];
  const int64_t values[3] = {-5, 1 << 20, 7};
  std::memcpy(buffer + 1, values, sizeof values);  // deliberately misaligned
  float out[3];
  convertToFloat(DType::I64, buffer + 1, 3, out);
  EXPECT_EQ(out[0], -5.0f);
  EXPECT_EQ(out[1], 1048576.0f);
  EXPECT_EQ(out[2], 7.0f);
}

// A tensor with no elements (a zero in its shape) converts to nothing, whatever its buffers: an empty
// vector's data() is null, which memcpy must not be given (found by fuzz_torch_zip; the ASan build's
// UBSan stops this test without the check).
TEST(DType, AnEmptyTensorConvertsWithNullBuffers) {
  for (DType d : kAllDTypes) {
    std::vector<float> out;
    convertToFloat(d, nullptr, 0, out.data());
    std::vector<double> wide;
    convertToDouble(d, nullptr, 0, wide.data());
    convertFromFloat(d, std::span<const float>(), nullptr);
  }
  SUCCEED();
}

// A conversion large enough to take the streaming, two-thread path (8 MiB of output and more) must give
// every element's closed form: each of the 65,536 encodings appears, starting at unaligned source and
// destination addresses, with a count that is neither a multiple of 8 nor even.
TEST(DType, LargeHalfAndBfloat16ConversionsMatchTheClosedFormAtEveryElement) {
  const size_t count = (size_t{5} << 20) + 7;  // 20 MiB of floats
  std::vector<std::byte> source(2 * count + 1);
  for (size_t i = 0; i < count; ++i) {
    const uint16_t bits = static_cast<uint16_t>(i * 40503u);  // odd multiplier: every encoding, scattered
    std::memcpy(source.data() + 1 + 2 * i, &bits, 2);
  }
  std::vector<float> out(count + 4);  // room for the largest offset and one guard element
  for (DType dtype : {DType::BF16, DType::F16}) {
    for (size_t offset : {size_t{0}, size_t{1}, size_t{3}}) {  // 0, 4 and 12 bytes past an allocation
      std::fill(out.begin(), out.end(), -1.0f);
      convertToFloat(dtype, source.data() + 1, count, out.data() + offset);
      size_t wrong = 0;
      for (size_t i = 0; i < count && wrong < 5; ++i) {
        uint16_t bits;
        std::memcpy(&bits, source.data() + 1 + 2 * i, 2);
        const double expected =
            dtype == DType::BF16 ? std::bit_cast<float>(uint32_t{bits} << 16) : halfClosedForm(bits);
        const float got = out[offset + i];
        const bool same = std::isnan(expected) ? std::isnan(got)
                                               : static_cast<double>(got) == expected &&
                                                     std::signbit(got) == std::signbit(expected);
        if (!same) {
          ++wrong;
          ADD_FAILURE() << dtypeName(dtype) << " element " << i << " (0x" << std::hex << bits << std::dec
                        << ", destination offset " << offset << "): " << got << " vs " << expected;
        }
      }
      EXPECT_EQ(out[offset + count], -1.0f) << "wrote past the end";
    }
  }
}

}  // namespace
}  // namespace sharelens
