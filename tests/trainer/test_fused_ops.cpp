// The training step's fused CPU kernels (trainer/fused_ops, cpu_attention, cpu_linear, cpu_kernels) against
// the composite ATen expressions or the definitions, evaluated in float64: values and gradients.
#include <gtest/gtest.h>

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include <torch/types.h>

#include "trainer/cpu_attention.hpp"
#include "trainer/cpu_gemm.hpp"
#include "trainer/cpu_kernels.hpp"
#include "trainer/cpu_linear.hpp"
#include "trainer/fused_ops.hpp"
#include "trainer/torch_compat.hpp"

namespace sharelens {
namespace {
// The fused CPU kernels against the composite ATen expressions evaluated in float64: values and the
// gradients of a random linear functional of the output, with respect to every differentiable input.
struct FusedCase {
  torch::Tensor out, grads;  // grads: every input gradient, flattened and concatenated
};

FusedCase evaluate(const std::function<torch::Tensor(const std::vector<torch::Tensor>&)>& f,
                   const std::vector<torch::Tensor>& inputs, const torch::Tensor& probe) {
  std::vector<torch::Tensor> leaves;
  for (const torch::Tensor& x : inputs) leaves.push_back(x.detach().clone().set_requires_grad(true));
  const torch::Tensor out = f(leaves);
  (out * probe.to(out.dtype())).sum().backward();
  std::vector<torch::Tensor> grads;
  for (const torch::Tensor& x : leaves) grads.push_back(x.grad().reshape({-1}).to(at::kDouble));
  return {out.detach().to(at::kDouble), at::cat(grads)};
}

void expectClose(const FusedCase& fused, const FusedCase& reference, double tolerance) {
  EXPECT_LT((fused.out - reference.out).abs().max().item<double>(),
            tolerance * reference.out.abs().max().item<double>());
  EXPECT_LT((fused.grads - reference.grads).abs().max().item<double>(),
            tolerance * reference.grads.abs().max().item<double>());
}

TEST(FusedOps, RmsNormMatchesTheCompositeInValueAndGradient) {
  at::Generator gen = at::detail::createCPUGenerator(7);
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{3, 5, 64}, {1000, 96}, {2, 1, 7}}) {
    const torch::Tensor x = at::randn(shape, gen) * 3.0, w = at::randn({shape.back()}, gen);
    const torch::Tensor probe = at::randn(shape, gen);
    const auto fused = evaluate([](const auto& in) { return rmsNorm(in[0], in[1], 1e-5); }, {x, w}, probe);
    const auto reference = evaluate([](const auto& in) { return rmsNormReference(in[0], in[1], 1e-5); },
                                    {x.to(at::kDouble), w.to(at::kDouble)}, probe);
    expectClose(fused, reference, 1e-5);
  }
}

// RoPE's tables in float64 for positions 0..context-1: angle t theta^(-2i/hd), both halves the same.
std::pair<torch::Tensor, torch::Tensor> ropeTables(int64_t context, int64_t hd) {
  const auto inv = at::pow(10000.0, -at::arange(0, hd, 2, at::kDouble) / static_cast<double>(hd));
  const auto angles = at::outer(at::arange(context, at::kDouble), inv);
  const torch::Tensor both = at::cat({angles, angles}, -1);
  return {both.cos(), both.sin()};
}

TEST(FusedOps, RopeMatchesTheCompositeInValueAndGradient) {
  at::Generator gen = at::detail::createCPUGenerator(8);
  const int64_t context = 12, hd = 8;
  const auto [cos, sin] = ropeTables(context, hd);
  for (int64_t time : {12, 5}) {  // the whole table, and a prefix of it
    const torch::Tensor x = at::randn({2, time, 3, hd}, gen), probe = at::randn({2, time, 3, hd}, gen);
    const torch::Tensor c32 = cos.to(at::kFloat), s32 = sin.to(at::kFloat);
    const auto fused = evaluate([&](const auto& in) { return applyRope(in[0], c32, s32); }, {x}, probe);
    const auto reference = evaluate([&](const auto& in) { return applyRopeReference(in[0], cos, sin); },
                                    {x.to(at::kDouble)}, probe);
    expectClose(fused, reference, 1e-6);
  }
  // A rotation: every (i, i + hd/2) pair keeps its length.
  const torch::Tensor x = at::randn({1, context, 1, hd}, gen);
  const torch::Tensor y = applyRope(x, cos.to(at::kFloat), sin.to(at::kFloat));
  auto pairNorms = [&](const torch::Tensor& v) {
    return v.narrow(-1, 0, hd / 2).pow(2) + v.narrow(-1, hd / 2, hd / 2).pow(2);
  };
  EXPECT_TRUE(at::allclose(pairNorms(y), pairNorms(x), 1e-5, 1e-6));
}

TEST(FusedOps, SwiGluMatchesTheCompositeInValueAndGradient) {
  at::Generator gen = at::detail::createCPUGenerator(10);
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{3, 5, 40}, {5000, 3}, {1, 1, 1}}) {
    const torch::Tensor gate = at::randn(shape, gen) * 4.0, up = at::randn(shape, gen),
                        probe = at::randn(shape, gen);
    const auto fused = evaluate([](const auto& in) { return swiglu(in[0], in[1]); }, {gate, up}, probe);
    const auto reference = evaluate([](const auto& in) { return swigluReference(in[0], in[1]); },
                                    {gate.to(at::kDouble), up.to(at::kDouble)}, probe);
    expectClose(fused, reference, 1e-6);
  }
}

// The stacked QKV projection split into heads, q and k rotated, against slicing it and the composite RoPE
// in float64; grouped (GQA) and one-to-one heads; v unused (its gradient arrives as zeros).
TEST(FusedOps, StackedQkvSplitWithRopeMatchesTheCompositeInValueAndGradient) {
  at::Generator gen = at::detail::createCPUGenerator(12);
  const int64_t hd = 8;
  const auto [cos, sin] = ropeTables(10, hd);
  const torch::Tensor c32 = cos.to(at::kFloat), s32 = sin.to(at::kFloat);
  for (const auto& [heads, kvHeads] : {std::pair<int64_t, int64_t>{4, 2}, {3, 3}}) {
    const int64_t time = 7, width = (heads + 2 * kvHeads) * hd;
    const torch::Tensor qkv = at::randn({2, time, width}, gen);
    const torch::Tensor pq = at::randn({2, time, heads, hd}, gen),
                        pk = at::randn({2, time, kvHeads, hd}, gen),
                        pv = at::randn({2, time, kvHeads, hd}, gen);
    for (const bool useV : {true, false}) {
      // One functional of all three outputs (or of q and k alone), so each part's gradient is checked.
      auto functional = [&](const QkvHeads& o) {
        torch::Tensor f = (o.q * pq.to(o.q.dtype())).sum() + (o.k * pk.to(o.k.dtype())).sum();
        return useV ? f + (o.v * pv.to(o.v.dtype())).sum() : f;
      };
      const torch::Tensor one = at::ones({});
      const auto fused = evaluate(
          [&](const auto& in) { return functional(splitQkvWithRope(in[0], c32, s32, heads, kvHeads)); },
          {qkv}, one);
      const auto reference = evaluate(
          [&](const auto& in) {
            return functional(splitQkvWithRopeReference(in[0], cos, sin, heads, kvHeads));
          },
          {qkv.to(at::kDouble)}, one);
      expectClose(fused, reference, 1e-6);
    }
    // The values themselves: q is RoPE of the first H heads, v the last Hkv, untouched.
    const QkvHeads split = splitQkvWithRope(qkv, c32, s32, heads, kvHeads);
    EXPECT_TRUE(split.q.is_contiguous() && split.k.is_contiguous() && split.v.is_contiguous());
    EXPECT_TRUE(at::allclose(
        split.q, applyRopeReference(qkv.narrow(-1, 0, heads * hd).reshape({2, time, heads, hd}), c32, s32),
        1e-6, 1e-6));
    EXPECT_TRUE(at::equal(
        split.v, qkv.narrow(-1, width - kvHeads * hd, kvHeads * hd).reshape({2, time, kvHeads, hd})));
  }
  EXPECT_THROW(splitQkvWithRope(at::zeros({1, 2, 30}), c32, s32, 2, 1), c10::Error);   // 30 is not 4 x hd
  EXPECT_THROW(splitQkvWithRope(at::zeros({1, 2, 64}), c32, s32, 2, 1), c10::Error);   // hd 16, tables of 8
  EXPECT_THROW(splitQkvWithRope(at::zeros({1, 11, 32}), c32, s32, 2, 1), c10::Error);  // 11 > 10 positions
}

// swiglu of the stacked [gate | up] projection against silu(gate) * up of its two halves, in float64.
TEST(FusedOps, StackedSwiGluMatchesTheCompositeInValueAndGradient) {
  at::Generator gen = at::detail::createCPUGenerator(13);
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{3, 5, 80}, {600, 6}, {1, 1, 2}}) {
    const torch::Tensor gateUp = at::randn(shape, gen) * 4.0;
    std::vector<int64_t> half = shape;
    half.back() /= 2;
    const torch::Tensor probe = at::randn(half, gen);
    const auto fused = evaluate([](const auto& in) { return stackedSwiglu(in[0]); }, {gateUp}, probe);
    const auto reference = evaluate(
        [](const auto& in) {
          const int64_t f = in[0].size(-1) / 2;
          return at::silu(in[0].narrow(-1, 0, f)) * in[0].narrow(-1, f, f);
        },
        {gateUp.to(at::kDouble)}, probe);
    expectClose(fused, reference, 1e-6);
  }
  EXPECT_THROW(stackedSwiglu(at::zeros({2, 3})), c10::Error);
  EXPECT_THROW(stackedSwiglu(at::zeros({2, 0})), c10::Error);
}

TEST(FusedOps, CrossEntropyMatchesTheCompositeInValueAndGradient) {
  at::Generator gen = at::detail::createCPUGenerator(11);
  for (const auto& [rows, vocab] : {std::pair<int64_t, int64_t>{7, 11}, {300, 1024}, {1, 2}}) {
    const torch::Tensor logits = at::randn({rows, vocab}, gen) * 5.0;
    const torch::Tensor targets = at::randint(0, vocab, {rows}, gen, at::kLong);
    const torch::Tensor probe = at::full({}, 1.7);
    const auto fused =
        evaluate([&](const auto& in) { return crossEntropy(in[0], targets); }, {logits}, probe);
    const auto composite =
        evaluate([&](const auto& in) { return crossEntropyReference(in[0], targets); }, {logits}, probe);
    const auto reference = evaluate([&](const auto& in) { return crossEntropyReference(in[0], targets); },
                                    {logits.to(at::kDouble)}, probe);
    // A confident row's loss and its target's gradient are differences of numbers near 1, where float32
    // itself errs: the kernel must be within 1e-6 of the double reference or no worse than 2x LibTorch's own
    // float32 composite.
    auto error = [&](const torch::Tensor& a, const torch::Tensor& b) {
      return (a - b).abs().max().item<double>();
    };
    EXPECT_LE(error(fused.out, reference.out), std::max(1e-6 * reference.out.abs().max().item<double>(),
                                                        2 * error(composite.out, reference.out)));
    EXPECT_LE(error(fused.grads, reference.grads), std::max(1e-6 * reference.grads.abs().max().item<double>(),
                                                            2 * error(composite.grads, reference.grads)));
  }
}

// softmax(q k^T / sqrt(hd) + causal mask) v per head, in double, written from the definition in
// token-major layout (query head h reads KV head h / (H / KV)); autograd gives its gradients.
torch::Tensor attentionByDefinition(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
  const int64_t t = q.size(1), h = q.size(2), group = h / k.size(2), hd = q.size(3);
  std::vector<torch::Tensor> heads;
  const torch::Tensor future = at::ones({t, t}, at::kBool).triu(1);
  for (int64_t i = 0; i < h; ++i) {
    const torch::Tensor qi = q.select(2, i), ki = k.select(2, i / group),
                        vi = v.select(2, i / group);  // [B, T, hd]
    const torch::Tensor scores = at::matmul(qi, ki.transpose(1, 2)) / std::sqrt(static_cast<double>(hd));
    heads.push_back(at::matmul(at::softmax(scores.masked_fill(future, -INFINITY), -1), vi));
  }
  return at::stack(heads, 2);  // [B, T, H, hd]
}

// The CPU trainer's attention kernel (trainer/cpu_attention.hpp) against the definition in double: values
// and the gradients of q, k and v, for MHA and grouped KV heads, a context of one token, and T not a
// multiple of anything (33 and 70 cross the kernel's 32-row causal panels, the last one partial); and the
// composite formula the model takes elsewhere agrees as well.
TEST(FusedOps, TokenMajorAttentionMatchesTheDefinitionInValueAndGradient) {
  at::Generator gen = at::detail::createCPUGenerator(9);
  struct Shape {
    int64_t b, t, h, kv, hd;
  };
  for (const Shape& s : {Shape{2, 7, 4, 4, 8}, Shape{3, 13, 6, 2, 16}, Shape{1, 1, 2, 1, 4},
                         Shape{2, 33, 4, 1, 32}, Shape{1, 70, 2, 2, 8}}) {
    const torch::Tensor q = at::randn({s.b, s.t, s.h, s.hd}, gen), k = at::randn({s.b, s.t, s.kv, s.hd}, gen),
                        v = at::randn({s.b, s.t, s.kv, s.hd}, gen),
                        probe = at::randn({s.b, s.t, s.h, s.hd}, gen);
    ASSERT_TRUE(tokenMajorAttentionApplies(q, k, v));
    const double scale = 1.0 / std::sqrt(static_cast<double>(s.hd));
    const auto kernel =
        evaluate([&](const auto& in) { return tokenMajorCausalAttention(in[0], in[1], in[2], scale); },
                 {q, k, v}, probe);
    const auto definition =
        evaluate([](const auto& in) { return attentionByDefinition(in[0], in[1], in[2]); },
                 {q.to(at::kDouble), k.to(at::kDouble), v.to(at::kDouble)}, probe);
    expectClose(kernel, definition, 1e-5);
    const auto composite = evaluate(
        [](const auto& in) {
          return causalAttention(in[0].transpose(1, 2), in[1].transpose(1, 2), in[2].transpose(1, 2))
              .transpose(1, 2);
        },
        {q, k, v}, probe);
    expectClose(composite, definition, 1e-5);
  }
  // What the kernel does not take goes to the composite path.
  const torch::Tensor q = at::randn({1, 4, 2, 8}), k = at::randn({1, 4, 2, 8});
  EXPECT_FALSE(tokenMajorAttentionApplies(q.to(at::kDouble), k.to(at::kDouble), k.to(at::kDouble)));
  EXPECT_FALSE(tokenMajorAttentionApplies(q.transpose(1, 2), k, k));
  EXPECT_FALSE(tokenMajorAttentionApplies(q, at::randn({1, 4, 3, 8}), at::randn({1, 4, 3, 8})));
}

// The training model's projections (trainer/cpu_linear.hpp), y = x W^T, against ATen's linear in double:
// values and the gradients of x and W, on both of its paths — oneDNN's sgemm for a run of one thread (where
// the build has it), OpenBLAS for a run of two — for a batched input, the claims' 1M shapes and odd sizes.
TEST(FusedOps, ProjectionMatchesLinearInValueAndGradientOnBothGemmPaths) {
  at::Generator gen = at::detail::createCPUGenerator(10);
  struct Shape {
    std::vector<int64_t> x;
    int64_t n;
  };
  const std::vector<Shape> shapes = {
      {{2, 5, 16}, 7}, {{16, 128, 128}, 384}, {{4, 128, 344}, 128}, {{33, 17}, 1}};
  for (int threads : {1, 2}) {
    const ComputeThreads computeThreads(threads);
#ifdef SHARELENS_HAVE_ONEDNN
    EXPECT_EQ(projectionUsesOneDnn(), threads == 1);
#else
    EXPECT_FALSE(projectionUsesOneDnn());
#endif
    for (const Shape& s : shapes) {
      SCOPED_TRACE(::testing::Message()
                   << threads << " threads, x " << at::IntArrayRef(s.x) << ", N " << s.n);
      const torch::Tensor x = at::randn(s.x, gen), w = at::randn({s.n, s.x.back()}, gen);
      std::vector<int64_t> outShape = s.x;
      outShape.back() = s.n;
      const torch::Tensor probe = at::randn(outShape, gen);
      const auto fused = evaluate([](const auto& in) { return projection(in[0], in[1]); }, {x, w}, probe);
      const auto reference = evaluate([](const auto& in) { return at::linear(in[0], in[1]); },
                                      {x.to(at::kDouble), w.to(at::kDouble)}, probe);
      expectClose(fused, reference, 1e-5);
    }
  }
  // What the GEMM does not take goes to ATen (a transposed weight, float64) and gives what the GEMM gives.
  const torch::Tensor x = at::randn({3, 8}, gen), w = at::randn({8, 5}, gen);
  EXPECT_TRUE(at::allclose(projection(x, w.t()), projection(x, w.t().contiguous()), 1e-5, 1e-6));
  EXPECT_TRUE(at::allclose(projection(x.to(at::kDouble), w.t().to(at::kDouble)),
                           projection(x, w.t().contiguous()).to(at::kDouble), 1e-5, 1e-6));
  // A gradient arriving non-contiguous (sum()'s is one value expanded over the output), and only W's wanted.
  const torch::Tensor wLeaf = w.t().contiguous().set_requires_grad(true);
  projection(x, wLeaf).sum().backward();
  const torch::Tensor wRef = w.t().contiguous().to(at::kDouble).set_requires_grad(true);
  at::linear(x.to(at::kDouble), wRef).sum().backward();
  EXPECT_TRUE(at::allclose(wLeaf.grad().to(at::kDouble), wRef.grad(), 1e-5, 1e-6));
  // An empty inner dimension: y = 0.
  const torch::Tensor empty = projection(at::randn({4, 0}, gen), at::randn({3, 0}, gen));
  EXPECT_EQ(empty.sizes(), (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(empty.abs().sum().item<double>(), 0.0);
}

// Signals during a GEMM (trainer/cpu_gemm.cpp). oneDNN 2.6's JIT sgemm keeps data below the stack pointer,
// beyond the x86-64 red zone, so a handler's frame written there meanwhile corrupted a training run (a
// SIGTERM to `train --threads 1` aborted it in malloc, 3 times in 10). Here one thread computes the same
// product 300 times while another sends it SIGUSR2 every 50 us, whose handler fills a 16 KiB frame: every
// product must be bit for bit the first, and the signals must still arrive (held back for a call, delivered
// after it). Without the hold this test fails (checked).
std::atomic<int> g_handled{0};

void fillAFrame(int) {
  volatile char frame[16384];
  for (size_t i = 0; i < sizeof frame; i += 64) frame[i] = static_cast<char>(i);
  g_handled.fetch_add(1, std::memory_order_relaxed);
}

TEST(Sgemm, SignalsHandledDuringACallLeaveItsResultAlone) {
  const ComputeThreads computeThreads(1);
#ifdef SHARELENS_HAVE_ONEDNN
  ASSERT_TRUE(sgemmUsesOneDnn()) << "the oneDNN call this test is about";
#else
  GTEST_SKIP() << "built without oneDNN";
#endif
  struct sigaction action {
  }, before{};
  action.sa_handler = fillAFrame;
  sigemptyset(&action.sa_mask);
  ASSERT_EQ(sigaction(SIGUSR2, &action, &before), 0);
  const int64_t m = 2048, n = 384, k = 128;
  at::Generator gen = at::detail::createCPUGenerator(11);
  const torch::Tensor a = at::randn({m, k}, gen), b = at::randn({n, k}, gen);
  std::vector<float> first(static_cast<size_t>(m * n)), c(first.size());
  const auto product = [&](std::vector<float>& out) {
    sgemm(Op::None, Op::Transpose, m, n, k, 1.0f, a.data_ptr<float>(), k, b.data_ptr<float>(), k, 0.0f,
          out.data(), n);
  };
  product(first);
  std::atomic<bool> done{false};
  const pthread_t computing = pthread_self();
  std::thread sender([&] {
    while (!done.load()) {
      pthread_kill(computing, SIGUSR2);
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  });
  int differing = 0;
  for (int i = 0; i < 300; ++i) {
    product(c);
    differing += std::memcmp(c.data(), first.data(), c.size() * sizeof(float)) != 0;
  }
  done.store(true);
  sender.join();
  sigaction(SIGUSR2, &before, nullptr);
  EXPECT_EQ(differing, 0) << "products that differ from the first, of 300";
  EXPECT_GT(g_handled.load(), 0);
}

// The kernel's exp() against std::exp in double over the float range it meets (softmax arguments <= 0) and
// beyond: relative error below 2e-7, 0 below -87 and at -inf.
TEST(FusedOps, VectorisedExpIsAccurateOverTheFloatRange) {
  std::vector<float> x;
  for (double v = -87.0; v <= 88.0; v += 0.00731) x.push_back(static_cast<float>(v));
  std::vector<float> y = x;
  kernels::expInPlace(y.data(), static_cast<int64_t>(y.size()));
  double worst = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double exact = std::exp(static_cast<double>(x[i]));
    worst = std::max(worst, std::abs(static_cast<double>(y[i]) - exact) / exact);
  }
  EXPECT_LT(worst, 2e-7);
  std::vector<float> tail = {-87.5f, -200.0f, -INFINITY, 0.0f, NAN};
  kernels::expInPlace(tail.data(), 5);
  EXPECT_EQ(tail[0], 0.0f);
  EXPECT_EQ(tail[1], 0.0f);
  EXPECT_EQ(tail[2], 0.0f);
  EXPECT_EQ(tail[3], 1.0f);
  EXPECT_TRUE(std::isnan(tail[4]));
}

// Two pools on the same cores fight: where LibTorch's matmuls go to OpenBLAS's own pthread pool (Debian's
// LibTorch, no MKL), LibTorch's OpenMP pool is kept at one thread and OpenBLAS gets the run's count; a build
// whose BLAS shares the OpenMP pool (MKL) gives both the count (trainer/torch_compat.hpp). This checks the
// wiring (both pools set, and set back); the speed it is for is measured by tests/bench/bench_train.sh.

}  // namespace
}  // namespace sharelens
