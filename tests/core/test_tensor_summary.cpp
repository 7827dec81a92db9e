// The tensor details (Model view pane, `inspect --tensor`) against closed forms: a ramp 0..n-1 that spans
// three read chunks has mean (n-1)/2, population variance (n^2-1)/12 and equal histogram bins; NaN and
// infinities are counted apart from the statistics of the finite values.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "core/error.hpp"
#include "core/safetensors.hpp"
#include "core/tensor_summary.hpp"
#include "tests/support/hf_fixtures.hpp"

namespace sharelens {
namespace {

namespace fs = std::filesystem;

TEST(TensorSummary, StatisticsHistogramAndPreviewMatchClosedForms) {
  const fs::path dir = testing::makeTempDir("tensor-summary");
  const int64_t n = 3'000'001;  // 2.9 chunks of 2^20 elements; every integer below 2^24 is exact in float
  std::vector<float> ramp(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) ramp[static_cast<size_t>(i)] = static_cast<float>(i);
  const std::vector<float> special = {1.0f, NAN, INFINITY, -INFINITY, 0.0f, -2.0f};
  const std::vector<float> nothing = {NAN, NAN};
  const std::vector<EncodedTensor> tensors = {
      EncodedTensor::fromFloats("ramp", DType::F32, {n}, ramp),
      EncodedTensor::fromFloats("special", DType::BF16, {2, 3}, special),
      EncodedTensor::fromFloats("nothing", DType::F16, {2}, nothing)};
  writeSafetensors(dir / "model.safetensors", tensors);
  const auto ckpt = Checkpoint::open(dir / "model.safetensors");

  const TensorSummary r = summarizeTensor(*ckpt, "ramp", 10);
  EXPECT_EQ(r.numel, static_cast<uint64_t>(n));
  EXPECT_EQ(r.bytes, static_cast<uint64_t>(4 * n));
  EXPECT_EQ(r.finite, static_cast<uint64_t>(n));
  EXPECT_EQ(r.zeros, 1u);
  EXPECT_EQ(r.min, 0.0);
  EXPECT_EQ(r.max, static_cast<double>(n - 1));
  EXPECT_NEAR(r.mean, (n - 1) / 2.0, 1e-9 * n);
  const double variance = (static_cast<double>(n) * n - 1) / 12.0;
  EXPECT_NEAR(r.std, std::sqrt(variance), 1e-9 * std::sqrt(variance));
  // Bins of width (n-1)/10 = 300,000: 300,000 values each, the closed last bin also holding n-1.
  ASSERT_EQ(r.histogram.size(), 10u);
  for (size_t b = 0; b < 9; ++b) EXPECT_EQ(r.histogram[b], 300'000u) << "bin " << b;
  EXPECT_EQ(r.histogram[9], 300'001u);
  ASSERT_EQ(r.preview.size(), 16u);
  for (size_t i = 0; i < 16; ++i) EXPECT_EQ(r.preview[i], static_cast<float>(i));

  const TensorSummary s = summarizeTensor(*ckpt, "special", 3);
  EXPECT_EQ(s.dtype, DType::BF16);
  EXPECT_EQ(s.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(s.bytes, 12u);
  EXPECT_EQ(s.finite, 3u);
  EXPECT_EQ(s.nan, 1u);
  EXPECT_EQ(s.infinite, 2u);
  EXPECT_EQ(s.zeros, 1u);
  EXPECT_EQ(s.min, -2.0);
  EXPECT_EQ(s.max, 1.0);
  EXPECT_NEAR(s.mean, -1.0 / 3.0, 1e-15);
  const double m = -1.0 / 3.0;
  EXPECT_NEAR(s.std, std::sqrt(((1 - m) * (1 - m) + m * m + (-2 - m) * (-2 - m)) / 3), 1e-15);
  EXPECT_EQ(s.histogram, (std::vector<uint64_t>{1, 0, 2}));  // [-2,-1): -2; [-1,0): none; [0,1]: 0 and 1

  const TensorSummary none = summarizeTensor(*ckpt, "nothing");
  EXPECT_EQ(none.finite, 0u);
  EXPECT_EQ(none.nan, 2u);
  EXPECT_TRUE(none.histogram.empty());
  EXPECT_EQ(none.mean, 0.0);

  try {
    summarizeTensor(*ckpt, "missing");
    FAIL() << "an unknown tensor was summarised";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing"), std::string::npos) << e.what();
  }
  EXPECT_NE(formatTensorSummary(s).find("NaN 1  inf 2"), std::string::npos) << formatTensorSummary(s);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sharelens
