#include "trainer/step_shards.hpp"

#include <torch/csrc/autograd/autograd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "core/blas_threads.hpp"
#include "trainer/cpu_parallel.hpp"
#include "trainer/torch_compat.hpp"

namespace sharelens {

bool stepIsSplitOverThreads(torch::Device device, int threads, int64_t rows, bool distributed) {
  // SHARELENS_SPLIT_STEP=0 keeps one thread's forward and backward over the whole batch (benchmarks compare
  // the two in one binary).
  static const bool enabled = [] {
    const char* value = std::getenv("SHARELENS_SPLIT_STEP");
    return value == nullptr || std::strcmp(value, "0") != 0;
  }();
  return enabled && device.is_cpu() && threads > 1 && torchIntraOpThreads(threads) == 1 && !distributed &&
         rows >= threads;
}

namespace {

struct Part {
  torch::Tensor loss, penalty;           // detached values
  std::vector<torch::Tensor> gradients;  // one per parameter, undefined where it did not reach
};

Part runPart(const SharedTransformer& model, const std::vector<torch::Tensor>& leaves,
             const torch::Tensor& tokens, double weight, bool withPenalty) {
  Part part;
  const torch::Tensor loss = model.loss(tokens);
  torch::Tensor objective = loss * weight;
  if (withPenalty) {
    const torch::Tensor penalty = model.postSharePenalty();
    objective = objective + penalty;
    part.penalty = penalty.detach();
  }
  part.loss = loss.detach();
  part.gradients = torch::autograd::grad({objective}, leaves, /*grad_outputs=*/{}, /*retain_graph=*/false,
                                         /*create_graph=*/false, /*allow_unused=*/true);
  return part;
}

}  // namespace

SplitStepLosses lossAndGradientsSplitOverThreads(const SharedTransformer& model,
                                                 std::vector<NamedParameter>& params,
                                                 const torch::Tensor& tokens, int parts, int threads,
                                                 bool withPenalty,
                                                 const std::shared_ptr<TensorMemoryAccount>& memory) {
  const int64_t rows = tokens.size(0);
  const auto partRows = [&](int i) {  // [begin, end) of part i
    return std::pair<int64_t, int64_t>{rows * i / parts, rows * (i + 1) / parts};
  };
  std::vector<torch::Tensor> leaves;
  for (const NamedParameter& p : params) leaves.push_back(p.tensor);
  std::vector<Part> results(static_cast<size_t>(parts));
  {
    const SingleThreadedBlas oneBlasThread;  // each part's GEMMs on its own thread, not on a shared pool
    // The parts over min(threads, parts) threads (trainer/cpu_parallel.hpp: a failure in any is rethrown
    // here).
    splitOverThreads(std::clamp(threads, 1, parts), parts, 1, [&](int64_t first, int64_t last) {
      const ChargeTensorMemoryTo charge(memory);
      at::set_num_threads(1);  // this thread's OpenMP team (oneDNN's and LibTorch's), as the run's own is
      for (int64_t i = first; i < last; ++i) {
        const auto [begin, end] = partRows(static_cast<int>(i));
        results[static_cast<size_t>(i)] =
            runPart(model, leaves, tokens.narrow(0, begin, end - begin),
                    static_cast<double>(end - begin) / static_cast<double>(rows), withPenalty && i == 0);
      }
    });
  }

  torch::NoGradGuard noGrad;
  SplitStepLosses out;
  for (int i = 0; i < parts; ++i) {
    const auto [begin, end] = partRows(i);
    out.loss += results[static_cast<size_t>(i)].loss.item<double>() * static_cast<double>(end - begin) /
                static_cast<double>(rows);
  }
  if (withPenalty) out.penalty = results[0].penalty.item<double>();
  // Each parameter's gradient: the parts' added in part order, written into .grad (autograd's outputs may be
  // views of one another, e.g. Q, K and V's of their stacked product, so none is written to).
  for (size_t p = 0; p < params.size(); ++p) {
    torch::Tensor& grad = params[p].tensor.mutable_grad();
    bool written = false;
    for (const Part& part : results) {
      const torch::Tensor& g = part.gradients[p];
      if (!g.defined()) continue;
      if (!grad.defined()) grad = at::empty_like(params[p].tensor, at::MemoryFormat::Contiguous);
      written ? grad.add_(g) : grad.copy_(g);
      written = true;
    }
    if (!written && grad.defined()) grad.zero_();
  }
  return out;
}

}  // namespace sharelens
