// Two checkpoints compared tensor by tensor (core/checkpoint_diff.hpp, issue 41 item 8), against closed
// forms: relative Frobenius difference ||A - B||_F / ||A||_F, cosine <A, B> / (||A|| ||B||), max |A - B|.
#include <gtest/gtest.h>

#include <cmath>

#include "core/checkpoint_diff.hpp"
#include "core/safetensors.hpp"
#include "tests/support/hf_fixtures.hpp"

namespace sharelens {
namespace {

namespace fs = std::filesystem;

void write(const fs::path& file,
           const std::vector<std::tuple<std::string, std::vector<int64_t>, std::vector<float>>>& ts) {
  std::vector<EncodedTensor> tensors;
  for (const auto& [name, shape, values] : ts)
    tensors.push_back(EncodedTensor::fromFloats(name, DType::F32, shape, values));
  writeSafetensors(file, tensors, {});
}

TEST(CheckpointDiff, EachTensorsDifferenceFollowsItsClosedForm) {
  const fs::path dir = testing::makeTempDir("diff");
  write(dir / "a.safetensors", {{"w1", {2}, {3, 4}},
                                {"w2", {2, 2}, {1, 0, 0, 1}},
                                {"zero", {2}, {0, 0}},
                                {"same", {3}, {1, 2, 3}},
                                {"a_only", {1}, {1}},
                                {"reshaped", {2}, {1, 2}}});
  write(dir / "b.safetensors", {{"w1", {2}, {3, 4.001f}},
                                {"w2", {2, 2}, {0, 1, 1, 0}},
                                {"zero", {2}, {0, 1}},
                                {"same", {3}, {1, 2, 3}},
                                {"b_only", {1}, {1}},
                                {"reshaped", {1, 2}, {1, 2}}});
  const auto a = Checkpoint::open(dir / "a.safetensors"), b = Checkpoint::open(dir / "b.safetensors");
  const CheckpointDifference d = diffCheckpoints(*a, *b);
  ASSERT_EQ(d.tensors.size(), 4u);
  // Largest first: a zero tensor that became non-zero (infinite), then w2 (sqrt 2), w1, the unchanged one.
  EXPECT_EQ(d.tensors[0].name, "zero");
  EXPECT_TRUE(std::isinf(d.tensors[0].relative));
  EXPECT_TRUE(std::isnan(d.tensors[0].cosine));
  EXPECT_EQ(d.tensors[1].name, "w2");
  EXPECT_NEAR(d.tensors[1].relative, std::sqrt(2.0), 1e-12);  // ||A - B|| = 2, ||A|| = sqrt 2
  EXPECT_NEAR(d.tensors[1].cosine, 0.0, 1e-12);
  EXPECT_EQ(d.tensors[1].maxAbs, 1.0);
  EXPECT_EQ(d.tensors[2].name, "w1");
  const double b2 = static_cast<double>(4.001f);
  EXPECT_NEAR(d.tensors[2].relative, (b2 - 4) / 5, 1e-12);
  EXPECT_NEAR(d.tensors[2].cosine, (9 + 4 * b2) / (5 * std::sqrt(9 + b2 * b2)), 1e-12);
  EXPECT_NEAR(d.tensors[2].maxAbs, b2 - 4, 1e-12);
  EXPECT_EQ(d.tensors[3].name, "same");
  EXPECT_EQ(d.tensors[3].relative, 0.0);
  EXPECT_NEAR(d.tensors[3].cosine, 1.0, 1e-15);
  EXPECT_EQ(d.onlyInA, std::vector<std::string>{"a_only"});
  EXPECT_EQ(d.onlyInB, std::vector<std::string>{"b_only"});
  EXPECT_EQ(d.shapeMismatch, std::vector<std::string>{"reshaped: [2] vs [1, 2]"});
  fs::remove_all(dir);
}

// Issue 41: the Model view's "difference from" went on reading both checkpoints after the user cancelled it.
TEST(CheckpointDiff, AStopRequestedEndsTheComparisonAndProgressCountsTheTensors) {
  const fs::path dir = testing::makeTempDir("diff-stop");
  write(dir / "a.safetensors", {{"w1", {2}, {3, 4}}, {"w2", {2}, {1, 0}}});
  const auto a = Checkpoint::open(dir / "a.safetensors");
  TaskProgress progress;
  TaskContext task;
  task.progress = &progress;
  (void)diffCheckpoints(*a, *a, task);
  EXPECT_EQ(progress.stage(), "comparing w2") << "reported tensor by tensor";
  EXPECT_DOUBLE_EQ(progress.fraction(), 0.5);
  std::stop_source stop;
  task.stop = stop.get_token();
  stop.request_stop();
  EXPECT_THROW(diffCheckpoints(*a, *a, task), Cancelled);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sharelens
