// One rank's DistributedGroup in this process, on each backend a device gives it: Gloo on the CPU (here, in
// CI) and NCCL on a GPU (tests/tools/device_check.sh; skipped without one). A one-rank group's collectives
// return their input, so what is checked is the plumbing every multi-rank run relies on and that the
// multi-process Gloo tests (test_distributed.cpp) cannot reach on a GPU: each scalar collective accepts its
// tensor on the backend (NCCL reduces only CUDA tensors), and the bucketed gradient all-reduce writes every
// gradient back scaled by the rank's share -- a weight used three times once, a weight that received no
// gradient as zeros -- step after step.
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <cstdlib>

#include "core/error.hpp"
#include "tests/support/process.hpp"
#include "trainer/distributed.hpp"

namespace sharelens {
namespace {

class OneRankGroup : public ::testing::TestWithParam<std::string> {
 protected:
  torch::Device device() const { return GetParam() == "cuda" ? torch::Device(torch::kCUDA, 0) : torch::kCPU; }

  // nullptr (the test skips) where there is no GPU or the build has no backend for the device; any other
  // failure to join fails the test. With SHARELENS_EXPECT_NCCL set (tests/tools/device_check.sh, where it
  // found NCCL's header), the GPU's group must be NCCL's, not Gloo's through host memory.
  std::unique_ptr<DistributedGroup> join() {
    if (GetParam() == "cuda" && !torch::cuda::is_available()) return nullptr;
    DistributedConfig config;
    config.masterPort = testing::freeLoopbackPort();
    config.timeoutSeconds = 60;
    std::unique_ptr<DistributedGroup> group;
    try {
      group = std::make_unique<DistributedGroup>(config, device());
    } catch (const Error& e) {
      if (std::string(e.what()).find("not available in this build") == std::string::npos) throw;
      m_skipReason = e.what();
      return nullptr;
    }
    if (GetParam() == "cuda" && std::getenv("SHARELENS_EXPECT_NCCL")) {
      EXPECT_EQ(group->backendName(), "nccl");
    }
    return group;
  }
  std::string m_skipReason = "no CUDA device";
};

TEST_P(OneRankGroup, CarriesEveryScalarCollectiveOnItsBackend) {
  const auto group = join();
  if (!group) {
    GTEST_SKIP() << m_skipReason;
  }
  std::cout << "backend: " << group->backendName() << "\n";
  EXPECT_EQ(group->worldSize(), 1);
  EXPECT_DOUBLE_EQ(group->sum(2.5), 2.5);
  EXPECT_EQ(group->allGather(3.25), std::vector<double>{3.25});
  EXPECT_DOUBLE_EQ(group->broadcastFromZero(7.5), 7.5);
}

TEST_P(OneRankGroup, GivesBackEachGradientScaledByTheRanksShareStepAfterStep) {
  const auto group = join();
  if (!group) {
    GTEST_SKIP() << m_skipReason;
  }
  const auto options = torch::dtype(torch::kFloat).device(device());
  torch::manual_seed(5);
  const torch::Tensor x = torch::randn({2, 3}, options);
  const auto leaves = [&] {
    torch::manual_seed(6);
    return std::vector<NamedParameter>{{"w1", torch::randn({3, 4}, options).requires_grad_()},
                                       {"w2", torch::randn({4}, options).requires_grad_()},
                                       {"unused", torch::randn({5}, options).requires_grad_()}};
  };
  // w2 is used three times (a shared weight is one parameter); "unused" gets no gradient from backward.
  const auto loss = [&](const std::vector<NamedParameter>& p) {
    const torch::Tensor w2 = p[1].tensor;
    return (x.matmul(p[0].tensor) * w2 * w2).sum() + w2.square().sum();
  };
  std::vector<NamedParameter> plain = leaves(), params = leaves();
  loss(plain).backward();  // the reference: autograd alone
  group->attach(params);
  AdamW optimizer(params, 0.9, 0.95, 1e-8, 0.1);
  for (const double share : {0.25, 1.0, 0.5}) {
    for (NamedParameter& p : params) p.tensor.mutable_grad() = torch::Tensor();
    group->begin(share);
    loss(params).backward();
    group->finish();
    for (size_t i = 0; i < 2; ++i)
      EXPECT_TRUE(torch::allclose(params[i].tensor.grad(), share * plain[i].tensor.grad(), 1e-6, 1e-6))
          << params[i].name << " at share " << share;
    ASSERT_TRUE(params[2].tensor.grad().defined())
        << "a weight with no gradient still gets the reduced zeros";
    EXPECT_EQ(params[2].tensor.grad().abs().max().item<double>(), 0.0);
  }
  // Rank 0's weights and optimizer state, the step count included, reach every rank (here: survive intact).
  optimizer.step(1e-2);
  const torch::Tensor before = params[0].tensor.detach().clone();
  group->broadcastFromZero(params, optimizer);
  EXPECT_EQ(optimizer.steps(), 1);
  EXPECT_TRUE(torch::equal(params[0].tensor.detach(), before));
}

INSTANTIATE_TEST_SUITE_P(Distributed, OneRankGroup, ::testing::Values("cpu", "cuda"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace sharelens
