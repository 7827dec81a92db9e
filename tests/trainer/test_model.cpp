// The LibTorch model of every topology family: exact parameter counts, forward and backward, weight sharing
// that really shares storage and accumulates gradients, the equivalences the methods promise, and
// checkpoints that the model views read back as the same effective weights.
#include <gtest/gtest.h>

#include <functional>

#include <torch/cuda.h>
#include <torch/types.h>

#include "core/arch/family.hpp"
#include "core/param_count.hpp"
#include "core/sharelens_names.hpp"
#include "core/topology_presets.hpp"
#include "tests/support/hf_fixtures.hpp"
#include "trainer/checkpoint_io.hpp"
#include "trainer/model.hpp"
#include "trainer/optimizer.hpp"
#include "trainer/step_shards.hpp"
#include "trainer/tensor_memory.hpp"
#include "trainer/torch_compat.hpp"
#include "trainer/torch_io.hpp"

namespace sharelens {

// gtest names the parameter in test listings by this, not by a hex dump of the struct.
void PrintTo(const Topology& t, std::ostream* os) {
  *os << "topology " << t.name;
}

namespace {

namespace fs = std::filesystem;

torch::Tensor randomTokens(const Topology& t, int64_t batch, int64_t length, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  return at::randint(0, t.model.vocab, {batch, length}, gen, at::TensorOptions().dtype(at::kLong));
}

// Every family of the issue: layer sharing with LoRA, head sharing, QKV sharing, MASA (table and MLP),
// FFN tying, tied and factorised embeddings, tied heads and PostShare.
std::vector<std::pair<std::string, Topology>> families() {
  std::vector<std::pair<std::string, Topology>> out;
  const Topology base = debugTopology();
  out.emplace_back("cycle_lora", base);
  Topology strict = base;
  strict.attention.loraRank = strict.ffn.loraRank = 0;
  out.emplace_back("cycle_strict", strict);
  Topology vanilla = base;
  vanilla.attention.assign = vanilla.ffn.assign = {0, 1, 2, 3};
  vanilla.attention.loraRank = vanilla.ffn.loraRank = 0;
  out.emplace_back("vanilla", vanilla);
  Topology heads = base;
  heads.headSharing = {HeadSharingMode::SharedBase, 4, {Proj::Q, Proj::K, Proj::V}};
  out.emplace_back("head_shared_base", heads);
  Topology qkv = base;
  qkv.headSharing = {HeadSharingMode::QkvShared, 2, {Proj::Q, Proj::K, Proj::V}};
  out.emplace_back("qkv_shared", qkv);
  Topology masa = vanilla;
  masa.masa = {true, {Proj::Q, Proj::K, Proj::V, Proj::O}, 2, {}, false, 8, 16};
  out.emplace_back("masa", masa);
  Topology masaMlp = vanilla;
  masaMlp.masa = {true, {Proj::Q, Proj::O}, 2, {{0, 1}, {2, 3}}, true, 8, 16};
  out.emplace_back("masa_mlp_groups", masaMlp);
  Topology ffnTie = vanilla;
  ffnTie.ffn.assign = interiorTieAssignment(4, 1);
  ffnTie.ffn.loraRank = 4;
  out.emplace_back("ffn_interior_tie", ffnTie);
  Topology factor = base;
  factor.embedding = {true, 16};
  out.emplace_back("factorised_tied_embedding", factor);
  Topology untied = base;
  untied.embedding = {false, 0};
  out.emplace_back("untied_embedding", untied);
  Topology untiedFactor = base;
  untiedFactor.embedding = {false, 8};  // input E P and output U Q, each of rank 8
  out.emplace_back("untied_factorised_embedding", untiedFactor);
  Topology wideHeads = base;  // Gemma 3 shapes: n_heads x head_dim != d_model
  wideHeads.model.headDim = 24;
  wideHeads.headSharing = {HeadSharingMode::SharedBase, 3, {Proj::Q, Proj::K, Proj::V}};
  out.emplace_back("head_sharing_wide_heads", wideHeads);
  Topology ties = vanilla;
  ties.tiedHeads = {{2, 1, 0, 0}, {3, 0, 1, 1}};  // units = KV groups (2 query heads each)
  ties.postShare = {0.05, {{3, 1, 1, 0}}};
  out.emplace_back("tied_heads_postshare", ties);
  Topology mhaTies = vanilla;
  mhaTies.model.kvHeads = 4;
  mhaTies.tiedHeads = {{1, 2, 0, 0}};
  out.emplace_back("mha_tied_heads", mhaTies);
  return out;
}

class EveryFamily : public ::testing::TestWithParam<std::pair<std::string, Topology>> {};

TEST_P(EveryFamily, CountsBuildsRunsAndLearns) {
  const ComputeThreads computeThreads(1);
  const Topology& t = GetParam().second;
  SharedTransformer model(t, torch::kCPU, 7);
  EXPECT_EQ(model.parameterCount(), countParameters(t).total)
      << "param_count.cpp and the built model must agree";

  const torch::Tensor tokens = randomTokens(t, 4, 33, 1);
  const torch::Tensor logits = model.forward(tokens.narrow(1, 0, 32));
  EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{4, 32, t.model.vocab}));
  EXPECT_TRUE(logits.isfinite().all().item<bool>());

  // Overfit one batch: the loss must fall.
  AdamW opt(model.parameters(), 0.9, 0.95, 1e-8, 0.0);
  double first = 0, last = 0;
  for (int step = 0; step < 30; ++step) {
    torch::Tensor loss = model.loss(tokens);
    if (t.postShare.gamma > 0) loss = loss + model.postSharePenalty();
    loss.backward();
    if (step == 0) first = loss.item<double>();
    last = loss.item<double>();
    for (const NamedParameter& p : model.parameters()) {
      if (p.tensor.grad().defined()) {
        EXPECT_TRUE(p.tensor.grad().isfinite().all().item<bool>()) << p.name;
      }
    }
    clipGradientNorm(model.parameters(), 1.0);
    opt.step(3e-3);
    opt.zeroGrad();
  }
  EXPECT_LT(last, first - 0.5) << GetParam().first << ": " << first << " -> " << last;
}

// Issue 37 goal 5: the training memory `params` predicts (core/param_count.hpp: weights, gradients, AdamW's
// moments and what the step keeps for the backward) is what a CPU training step holds at its peak, as the
// allocator counts it (trainer/tensor_memory), for every family: within 5% (the issue asks for 20%; the old
// per-layer formula of Korthikanti et al. was 21–33% above). Two steps, so that the moments exist at the
// second one's peak.
TEST_P(EveryFamily, TheMemoryEstimateIsWhatATrainingStepHoldsAtItsPeak) {
  const Topology& t = GetParam().second;
  const ComputeThreads computeThreads(1);
  const auto account = newTensorMemoryAccount();
  if (!account) GTEST_SKIP() << "the counting allocator is not in use in this build";
  const int64_t batch = 6;
  const torch::Tensor tokens = randomTokens(t, batch, t.model.context + 1, 3);
  const ChargeTensorMemoryTo charge(account);
  SharedTransformer model(t, torch::kCPU, 5);
  AdamW opt(model.parameters(), 0.9, 0.95, 1e-8, 0.0);
  for (int step = 0; step < 2; ++step) {
    torch::Tensor loss = model.loss(tokens);
    if (t.postShare.gamma > 0) loss = loss + model.postSharePenalty();
    loss.backward();
    opt.step(1e-3);
    opt.zeroGrad();
  }
  const double predicted = estimateTrainingMemory(t, batch).total();
  EXPECT_NEAR(static_cast<double>(account->peakBytes()) / predicted, 1.0, 0.05)
      << GetParam().first << ": " << account->peakBytes() << " bytes at the peak, " << predicted
      << " predicted";
}

TEST_P(EveryFamily, CheckpointReadsBackAsTheSameEffectiveWeights) {
  const Topology& t = GetParam().second;
  SharedTransformer model(t, torch::kCPU, 11);
  {  // Move off the initialisation so every factor (LoRA B included) is non-zero.
    AdamW opt(model.parameters(), 0.9, 0.95, 1e-8, 0.0);
    model.loss(randomTokens(t, 2, 17, 2)).backward();
    opt.step(1e-2);
  }
  const fs::path dir = testing::makeTempDir("ckpt-" + GetParam().first);
  AdamW opt(model.parameters(), 0.9, 0.95, 1e-8, 0.0);
  writeTrainingCheckpoint(dir, 5, model, opt, Json{{"optimizer_steps", 0}}, CheckpointRetention::lastN(3), 5);
  const auto ckpt = Checkpoint::open(dir / "checkpoints" / "step-0000005");
  const ModelView view = openModelView(*ckpt);
  EXPECT_EQ(view.family, t.isUnshared() ? Family::Llama : Family::ShareLens);
  EXPECT_TRUE(view.missing.empty()) << view.missing.front();
  EXPECT_TRUE(view.unexpected.empty()) << view.unexpected.front();
  EXPECT_EQ(countParameters(*ckpt, view).total,
            model.parameterCount() -
                (t.masa.mlpCoefficients
                     ? countParameters(t).of(ParamGroup::MasaCoefficients) -
                           t.model.layers * t.masa.atoms * static_cast<int64_t>(t.masa.projections.size())
                     : 0))
      << "the checkpoint holds every unique weight once (MLP coefficients folded to tables)";
  torch::NoGradGuard noGrad;
  for (int64_t l = 0; l < t.model.layers; ++l)
    for (Proj p : kAllProjs) {
      const FloatMatrix fromView = materialize(*ckpt, view.layers[static_cast<size_t>(l)].at(p));
      const torch::Tensor fromModel = model.effectiveWeight(l, p).contiguous();
      const torch::Tensor viewTensor =
          at::from_blob(const_cast<float*>(fromView.data.data()), {fromView.rows, fromView.cols});
      ASSERT_EQ(viewTensor.sizes(), fromModel.sizes()) << l << " " << projName(p);
      EXPECT_TRUE(at::allclose(viewTensor, fromModel, 1e-5, 1e-6))
          << GetParam().first << " layer " << l << " " << projName(p);
    }
  fs::remove_all(dir);
}

// Issue 37 goal 4: CUDA training is the CPU's arithmetic. The CPU runs our fused kernels (trainer/fused_ops,
// cpu_kernels, cpu_attention) and AdamW's fused loop; on a GPU every op takes LibTorch's composite path
// (fused_ops.hpp), so the two are independent implementations of the same model. Same seed, same tokens:
// the fp32 loss at each step, every gradient and the weights after three clipped AdamW steps agree (cuBLAS in
// fp32, TF32 off as LibTorch's default is); the bf16 autocast loss that `train --device cuda` optimises is
// within 0.05 nats of it. Skips without a device (this machine); tests/tools/device_check.sh runs it on a
// GPU.
TEST_P(EveryFamily, OnAGpuTrainsAsOnTheCpu) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const Topology& t = GetParam().second;
  const ComputeThreads computeThreads(1);
  SharedTransformer cpu(t, torch::kCPU, 13), gpu(t, torch::kCUDA, 13);
  // Weight decay 1: three steps shrink a decayed weight by ~0.9% (a factor 1 - lr each), nine times the
  // tolerance below, so a decay missing or misapplied on either side shows.
  AdamW cpuOpt(cpu.parameters(), 0.9, 0.95, 1e-8, 1.0), gpuOpt(gpu.parameters(), 0.9, 0.95, 1e-8, 1.0);
  const torch::Tensor tokens = randomTokens(t, 4, 33, 9);
  const auto lossOf = [&](const SharedTransformer& m, const torch::Tensor& x) {
    torch::Tensor loss = m.loss(x);
    return t.postShare.gamma > 0 ? loss + m.postSharePenalty() : loss;
  };
  // max |a - b| within tol of max |a| (+ a floor for all-zero tensors such as LoRA B's gradient at step 0)
  const auto expectClose = [&](const torch::Tensor& a, const torch::Tensor& b, double tol,
                               const std::string& what) {
    const double scale = a.abs().max().item<double>(), diff = (a - b.cpu()).abs().max().item<double>();
    EXPECT_LE(diff, tol * scale + 1e-6)
        << GetParam().first << " " << what << ": max |cpu - gpu| " << diff << " against max |cpu| " << scale;
  };
  for (int step = 0; step < 4; ++step) {
    const torch::Tensor cpuLoss = lossOf(cpu, tokens), gpuLoss = lossOf(gpu, tokens.to(torch::kCUDA));
    EXPECT_NEAR(cpuLoss.item<double>(), gpuLoss.item<double>(), 1e-4) << GetParam().first << " step " << step;
    if (step == 3) break;
    cpuLoss.backward();
    gpuLoss.backward();
    auto cpuParams = cpu.parameters(), gpuParams = gpu.parameters();
    ASSERT_EQ(cpuParams.size(), gpuParams.size());
    for (size_t i = 0; i < cpuParams.size(); ++i) {
      if (step > 0 || !cpuParams[i].tensor.grad().defined()) continue;
      expectClose(cpuParams[i].tensor.grad(), gpuParams[i].tensor.grad(), 1e-3,
                  "gradient of " + cpuParams[i].name);
    }
    clipGradientNorm(cpuParams, 1.0);
    clipGradientNorm(gpuParams, 1.0);
    cpuOpt.step(3e-3);
    gpuOpt.step(3e-3);
    cpuOpt.zeroGrad();
    gpuOpt.zeroGrad();
  }
  // Adam divides by sqrt(v): an element whose gradient is rounding noise may step either way, so the weights
  // are compared as a whole, ||cpu - gpu|| / ||cpu||.
  for (size_t i = 0; i < cpu.parameters().size(); ++i) {
    const torch::Tensor a = cpu.parameters()[i].tensor, b = gpu.parameters()[i].tensor.cpu();
    EXPECT_LE((a - b).norm().item<double>(), 1e-3 * a.norm().item<double>() + 1e-6)
        << GetParam().first << " weight after 3 steps: " << cpu.parameters()[i].name;
  }
  const ScopedCudaAutocast autocast(true);
  EXPECT_NEAR(lossOf(gpu, tokens.to(torch::kCUDA)).item<double>(), lossOf(cpu, tokens).item<double>(), 0.05)
      << GetParam().first << ": the bf16 autocast loss";
}

// A CPU run of several threads splits each step's rows over them (trainer/step_shards.hpp): the parts'
// losses, weighted by their rows, and their summed gradients (plus PostShare's penalty, once) must be the
// whole batch's loss and gradient as one backward computes them, for every family, in 2 and 3 parts of 5 rows
// (unequal parts: 2+3, 1+2+2), each part on a thread of its own or, with fewer threads, some after others.
TEST_P(EveryFamily, SplittingTheBatchOverThreadsGivesTheWholeBatchsLossAndGradient) {
  const Topology& t = GetParam().second;
  const ComputeThreads computeThreads(1);
  SharedTransformer model(t, torch::kCPU, 12);
  const torch::Tensor tokens = randomTokens(t, 5, 17, 3);
  const bool withPenalty = t.postShare.gamma > 0;
  torch::Tensor objective = model.loss(tokens);
  const double wholeLoss = objective.item<double>();
  if (withPenalty) objective = objective + model.postSharePenalty();
  objective.backward();
  std::vector<torch::Tensor> whole;
  for (NamedParameter& p : model.parameters()) {
    whole.push_back(p.tensor.grad().defined() ? p.tensor.grad().clone() : at::zeros_like(p.tensor));
    if (p.tensor.grad().defined()) p.tensor.mutable_grad().zero_();
  }
  struct Split {
    int parts, threads;
  };
  for (const Split& how : {Split{2, 2}, Split{3, 3}, Split{3, 2}, Split{2, 1}}) {
    SCOPED_TRACE(::testing::Message()
                 << GetParam().first << ", " << how.parts << " parts on " << how.threads << " threads");
    for (NamedParameter& p : model.parameters())  // whatever a call leaves unwritten shows
      if (p.tensor.grad().defined()) p.tensor.mutable_grad().fill_(NAN);
    const SplitStepLosses split = lossAndGradientsSplitOverThreads(
        model, model.parameters(), tokens, how.parts, how.threads, withPenalty, nullptr);
    EXPECT_NEAR(split.loss, wholeLoss, 1e-5);
    if (withPenalty) {
      EXPECT_NEAR(split.penalty, model.postSharePenalty().item<double>(), 1e-6);
    }
    for (size_t i = 0; i < whole.size(); ++i) {
      const NamedParameter& p = model.parameters()[i];
      const torch::Tensor got = p.tensor.grad().defined() ? p.tensor.grad() : at::zeros_like(p.tensor);
      EXPECT_LE((got - whole[i]).norm().item<double>(), 1e-5 * whole[i].norm().item<double>() + 1e-7)
          << "the gradient of " << p.name;
    }
  }
  EXPECT_FALSE(stepIsSplitOverThreads(torch::kCPU, 1, 16, false));
  EXPECT_FALSE(stepIsSplitOverThreads(torch::kCPU, 2, 16, true));
  EXPECT_FALSE(stepIsSplitOverThreads(torch::kCPU, 4, 3, false));
  EXPECT_EQ(stepIsSplitOverThreads(torch::kCPU, 2, 16, false), torchIntraOpThreads(2) == 1);
}

INSTANTIATE_TEST_SUITE_P(Topologies, EveryFamily, ::testing::ValuesIn(families()),
                         [](const auto& info) { return info.param.first; });

// Saving a step that already has a checkpoint replaces it whole (trainer/checkpoint_io.cpp: one atomic
// exchange of the directories), and leaves no temporary directory behind.
TEST(Checkpoint, ReSavingAStepReplacesItWholeAndLeavesNoTemporaryDirectory) {
  SharedTransformer model(debugTopology(), torch::kCPU, 11);
  AdamW opt(model.parameters(), 0.9, 0.95, 1e-8, 0.0);
  const fs::path dir = testing::makeTempDir("ckpt-resave");
  writeTrainingCheckpoint(dir, 5, model, opt, Json{{"optimizer_steps", 0}}, CheckpointRetention::lastN(3), 5);
  const NamedParameter& first = model.parameters().front();
  {
    torch::NoGradGuard noGrad;
    first.tensor.add_(1.0);
  }
  writeTrainingCheckpoint(dir, 5, model, opt, Json{{"optimizer_steps", 0}}, CheckpointRetention::lastN(3), 5);
  std::vector<std::string> entries;
  for (const auto& e : fs::directory_iterator(dir / "checkpoints")) entries.push_back(e.path().filename());
  EXPECT_EQ(entries, std::vector<std::string>{"step-0000005"});
  const auto saved = readTensors(dir / "checkpoints" / "step-0000005" / "model.safetensors");
  ASSERT_TRUE(saved.count(first.name)) << first.name;
  EXPECT_TRUE(torch::equal(saved.at(first.name), first.tensor.detach())) << "the second save's weights";
  fs::remove_all(dir);
}

TEST(WeightSharing, SharedBlocksAreOneTensorAndTheirGradientIsTheSumOverLayers) {
  Topology shared = debugTopology();  // cycle: layers 0, 2 use block 0; 1, 3 use block 1
  shared.attention.loraRank = shared.ffn.loraRank = 0;
  Topology unshared = shared;
  unshared.attention.assign = unshared.ffn.assign = {0, 1, 2, 3};
  SharedTransformer a(shared, torch::kCPU, 3);
  SharedTransformer b(unshared, torch::kCPU, 4);
  // Give the unshared model copies: its block l holds shared block assign[l].
  {
    torch::NoGradGuard noGrad;
    for (NamedParameter& p : b.parameters()) {
      std::string source = p.name;
      for (int64_t l = 0; l < 4; ++l)
        for (Proj proj : kAllProjs) {
          const std::string name =
              isAttentionProj(proj) ? names::attnWeight(l, proj) : names::ffnWeight(l, proj);
          const int64_t block = shared.attention.assign[static_cast<size_t>(l)];
          if (p.name == name)
            source = isAttentionProj(proj) ? names::attnWeight(block, proj) : names::ffnWeight(block, proj);
        }
      p.tensor.copy_(a.parameter(source));
    }
  }
  EXPECT_EQ(a.effectiveWeight(0, Proj::Q).data_ptr(), a.effectiveWeight(2, Proj::Q).data_ptr())
      << "one storage";
  EXPECT_NE(a.effectiveWeight(0, Proj::Q).data_ptr(), a.effectiveWeight(1, Proj::Q).data_ptr());
  const torch::Tensor tokens = randomTokens(shared, 2, 17, 9);
  const torch::Tensor la = a.loss(tokens), lb = b.loss(tokens);
  EXPECT_NEAR(la.item<double>(), lb.item<double>(), 1e-5) << "same function";
  la.backward();
  lb.backward();
  for (Proj proj : kAllProjs) {
    auto name = [&](int64_t i) {
      return isAttentionProj(proj) ? names::attnWeight(i, proj) : names::ffnWeight(i, proj);
    };
    const torch::Tensor sum = b.parameter(name(0)).grad() + b.parameter(name(2)).grad();
    EXPECT_TRUE(at::allclose(a.parameter(name(0)).grad(), sum, 1e-4, 1e-6)) << projName(proj);
  }
}

TEST(WeightSharing, LoraRankZeroEqualsStrictSharingAndFreshLoraToo) {
  Topology withLora = debugTopology();
  Topology strict = withLora;
  strict.attention.loraRank = strict.ffn.loraRank = 0;
  SharedTransformer a(withLora, torch::kCPU, 5), b(strict, torch::kCPU, 5);
  {
    torch::NoGradGuard noGrad;
    for (NamedParameter& p : b.parameters()) p.tensor.copy_(a.parameter(p.name));
  }
  EXPECT_LT(b.parameterCount(), a.parameterCount());
  const torch::Tensor tokens = randomTokens(withLora, 2, 16, 1);
  EXPECT_TRUE(at::allclose(a.forward(tokens), b.forward(tokens), 1e-5, 1e-6)) << "LoRA B starts at zero";
}

TEST(WeightSharing, MasaWithOneAtomPerLayerAndIdentityCoefficientsIsTheUnsharedModel) {
  Topology unshared = debugTopology();
  unshared.attention.assign = unshared.ffn.assign = {0, 1, 2, 3};
  unshared.attention.loraRank = unshared.ffn.loraRank = 0;
  Topology masa = unshared;
  masa.masa = {true, {Proj::Q, Proj::K, Proj::V, Proj::O}, 4, {}, false, 8, 16};
  SharedTransformer u(unshared, torch::kCPU, 21), m(masa, torch::kCPU, 22);
  {
    torch::NoGradGuard noGrad;
    for (NamedParameter& p : m.parameters()) {
      if (p.name.rfind("masa.", 0) == 0) continue;
      p.tensor.copy_(u.parameter(p.name));
    }
    for (Proj proj : masa.masa.projections) {
      auto atoms = m.parameter(names::masaAtoms(proj, 0));
      for (int64_t l = 0; l < 4; ++l) atoms.select(0, l).copy_(u.parameter(names::attnWeight(l, proj)));
      m.parameter(names::masaCoefficients(proj)).copy_(at::eye(4));
    }
  }
  const torch::Tensor tokens = randomTokens(masa, 2, 20, 3);
  EXPECT_TRUE(at::allclose(u.forward(tokens), m.forward(tokens), 1e-5, 1e-6));
}

TEST(WeightSharing, HeadSharingRankZeroMakesHeadsIdenticalAndTiedHeadsCopyTheirSource) {
  Topology heads = debugTopology();
  heads.headSharing = {HeadSharingMode::SharedBase, 0, {Proj::Q, Proj::K, Proj::V}};
  SharedTransformer h(heads, torch::kCPU, 1);
  const torch::Tensor q = h.effectiveWeight(1, Proj::Q);
  for (int64_t i = 1; i < heads.model.heads; ++i)
    EXPECT_TRUE(at::equal(q.narrow(0, 0, 16), q.narrow(0, i * 16, 16))) << "head " << i;

  Topology ties = debugTopology();
  ties.attention.assign = ties.ffn.assign = {0, 1, 2, 3};
  ties.attention.loraRank = ties.ffn.loraRank = 0;
  ties.tiedHeads = {{2, 1, 0, 0}};  // layer 2's KV group 1 (query heads 2, 3; KV head 1) <- layer 0's group 0
  SharedTransformer t(ties, torch::kCPU, 2);
  EXPECT_TRUE(at::equal(t.effectiveWeight(2, Proj::Q).narrow(0, 32, 32),
                        t.effectiveWeight(0, Proj::Q).narrow(0, 0, 32)));
  EXPECT_TRUE(at::equal(t.effectiveWeight(2, Proj::K).narrow(0, 16, 16),
                        t.effectiveWeight(0, Proj::K).narrow(0, 0, 16)));
  EXPECT_TRUE(at::equal(t.effectiveWeight(2, Proj::V).narrow(0, 16, 16),
                        t.effectiveWeight(0, Proj::V).narrow(0, 0, 16)));
  EXPECT_FALSE(at::equal(t.effectiveWeight(2, Proj::V).narrow(0, 0, 16),
                         t.effectiveWeight(0, Proj::V).narrow(0, 0, 16)));
  t.loss(randomTokens(ties, 2, 12, 4)).backward();
  EXPECT_EQ(t.parameter(names::attnWeight(2, Proj::Q)).size(0), 2 * 16)
      << "layer 2 stores only its own group's 2 heads";
  EXPECT_EQ(t.parameter(names::attnWeight(2, Proj::K)).size(0), 16);
  EXPECT_EQ(t.parameter(names::attnWeight(2, Proj::V)).size(0), 16);
}

// PostShare, Eq. 4-5: L_w = (1/|N|) sum over pairs of sum over p in {q, k, v} of ||W_p^i - W_p^j||_F, written
// out here from the stored per-layer weights (not through the model's effectiveWeight).
TEST(WeightSharing, PostSharePenaltyIsGammaTimesTheMeanOverPairsOfPerProjectionDistances) {
  Topology t = debugTopology();
  t.attention.assign = t.ffn.assign = {0, 1, 2, 3};
  t.attention.loraRank = t.ffn.loraRank = 0;
  t.postShare = {0.5, {{2, 1, 0, 0}, {3, 0, 1, 1}}};
  SharedTransformer m(t, torch::kCPU, 8);
  auto rows = [&](int64_t l, Proj p, int64_t unit) {  // GQA groups of 2: Q has 32 rows per unit, K and V 16
    const int64_t r = p == Proj::Q ? 32 : 16;
    return m.parameter(names::attnWeight(l, p)).narrow(0, unit * r, r);
  };
  double sum = 0;
  for (const HeadTie& pair : t.postShare.pairs)
    for (Proj p : {Proj::Q, Proj::K, Proj::V})
      sum += (rows(pair.targetLayer, p, pair.targetUnit) - rows(pair.sourceLayer, p, pair.sourceUnit))
                 .norm()
                 .item<double>();
  EXPECT_NEAR(m.postSharePenalty().item<double>(), 0.5 * sum / 2.0, 1e-5);
}

TEST(ComputeThreads, LibTorchKeepsOneThreadBesideAnOpenBlasPoolOfItsOwn) {
  {
    const ComputeThreads two(2);
    EXPECT_EQ(currentBlasThreads(), 2);
    if (!at::hasMKL() && blasHasItsOwnThreadPool())
      EXPECT_EQ(at::get_num_threads(), 1);
    else
      EXPECT_EQ(at::get_num_threads(), 2);
  }
  const ComputeThreads one(1);
  EXPECT_EQ(at::get_num_threads(), 1);
  EXPECT_EQ(currentBlasThreads(), 1);
}

TEST(AdamW, MatchesTheUpdateRuleOfTorchOptimAdamW) {
  // Known gradients; the expected values are the update rule evaluated by hand. A float parameter takes the
  // fused CPU kernel; double ones (as a GPU's would) the multi-tensor path, with and without weight decay.
  Topology t = debugTopology();
  SharedTransformer model(t, torch::kCPU, 1);
  const auto start = at::tensor({1.0, -2.0});
  std::vector<NamedParameter> params = {{"fused", start.to(at::kFloat).set_requires_grad(true), true, true},
                                        {"foreach", start.clone().set_requires_grad(true), true, true},
                                        {"no-decay", start.clone().set_requires_grad(true), false, true}};
  AdamW opt(params, 0.9, 0.99, 1e-8, 0.1);
  const double grads[2][2] = {{0.5, -1.0}, {0.25, 2.0}};
  double w[2][2] = {{1.0, -2.0}, {1.0, -2.0}}, m[2] = {0, 0}, v[2] = {0, 0};  // w[decayed?][i]
  for (int step = 1; step <= 2; ++step) {
    for (NamedParameter& p : params)
      p.tensor.mutable_grad() =
          at::tensor({grads[step - 1][0], grads[step - 1][1]}).to(p.tensor.scalar_type());
    opt.step(0.01);
    for (int i = 0; i < 2; ++i) {
      const double g = grads[step - 1][i];
      m[i] = 0.9 * m[i] + 0.1 * g;
      v[i] = 0.99 * v[i] + 0.01 * g * g;
      const double mhat = m[i] / (1 - std::pow(0.9, step)), vhat = v[i] / (1 - std::pow(0.99, step));
      for (int decayed = 0; decayed < 2; ++decayed) {
        if (decayed) w[decayed][i] *= 1.0 - 0.01 * 0.1;
        w[decayed][i] -= 0.01 * mhat / (std::sqrt(vhat) + 1e-8);
      }
    }
  }
  for (int i = 0; i < 2; ++i) {
    EXPECT_NEAR(params[0].tensor[i].item<double>(), w[1][i], 1e-6) << "fused kernel, element " << i;
    EXPECT_NEAR(params[1].tensor[i].item<double>(), w[1][i], 1e-12) << "multi-tensor path, element " << i;
    EXPECT_NEAR(params[2].tensor[i].item<double>(), w[0][i], 1e-12) << "without weight decay, element " << i;
  }
  EXPECT_NE(w[0][0], w[1][0]) << "the decay must show";
  (void)model;
}

}  // namespace
}  // namespace sharelens
