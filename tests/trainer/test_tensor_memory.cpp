// Per-run tensor memory (trainer/tensor_memory.hpp): every CPU tensor a thread allocates is charged to the
// account that thread set, exactly its bytes, and given back to that account when freed on any thread.
#include <c10/core/CPUAllocator.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <thread>

#include "trainer/tensor_memory.hpp"

namespace sharelens {
namespace {

TEST(TensorMemory, EachThreadsTensorsAreChargedToItsAccountAndReleasedWhereverFreed) {
  const auto a = newTensorMemoryAccount(), b = newTensorMemoryAccount();
  ASSERT_TRUE(a && b) << "LibTorch took the counting allocator";
  torch::Tensor fromA, fromB;
  std::thread first([&] {
    const ChargeTensorMemoryTo charge(a);
    fromA = torch::empty({1000}, torch::kFloat32);                 // 4,000 bytes
    torch::Tensor scratch = torch::empty({250}, torch::kFloat64);  // 2,000 bytes, freed at once
  });
  std::thread second([&] {
    const ChargeTensorMemoryTo charge(b);
    fromB = torch::ones({64, 64}, torch::kFloat32);  // 16,384 bytes
  });
  first.join();
  second.join();
  EXPECT_EQ(a->liveBytes(), 4000);
  EXPECT_EQ(a->peakBytes(), 6000) << "both of the first thread's tensors were live at once";
  EXPECT_EQ(b->liveBytes(), 64 * 64 * 4);
  EXPECT_EQ(b->peakBytes(), 64 * 64 * 4);
  // Freed here, on a thread charging nothing: each account gets its own bytes back.
  fromA = torch::Tensor();
  EXPECT_EQ(a->liveBytes(), 0);
  EXPECT_EQ(b->liveBytes(), 64 * 64 * 4);
  fromB = torch::Tensor();
  EXPECT_EQ(b->liveBytes(), 0);
  // A thread with no account charges no one, and the data is what was written.
  torch::Tensor free = torch::arange(10, torch::kFloat32) * 2;
  EXPECT_EQ(a->liveBytes(), 0);
  EXPECT_FLOAT_EQ(free[9].item<float>(), 18.0f);
  {  // nested: the inner account while it lives, then the outer again
    const ChargeTensorMemoryTo outer(a);
    {
      const ChargeTensorMemoryTo inner(b);
      torch::Tensor t = torch::empty({10}, torch::kFloat32);
      EXPECT_EQ(b->liveBytes(), 40);
    }
    torch::Tensor t = torch::empty({20}, torch::kFloat32);
    EXPECT_EQ(a->liveBytes(), 80);
  }
  EXPECT_EQ(a->liveBytes(), 0);
  {  // LibTorch's raw path (oneDNN's memory) asserts that a block's context is its data: it still is
    const ChargeTensorMemoryTo charge(a);
    c10::Allocator* cpu = c10::GetCPUAllocator();
    void* raw = cpu->raw_allocate(1024);
    EXPECT_EQ(a->liveBytes(), 1024);
    cpu->raw_deallocate(raw);
    EXPECT_EQ(a->liveBytes(), 0);
    const c10::DataPtr block = cpu->allocate(64);
    EXPECT_EQ(block.get(), block.get_context());
  }
  EXPECT_EQ(a->liveBytes(), 0);
  EXPECT_GT(processPeakResidentBytes(), 1 << 20);
}

}  // namespace
}  // namespace sharelens
