#include "trainer/optimizer.hpp"

#include <array>
#include <cmath>
#include <new>

#include "core/error.hpp"
#include "core/fault_injection.hpp"
#include "trainer/cpu_kernels.hpp"
#include "trainer/cpu_tensor.hpp"

namespace sharelens {
namespace {

bool fusableUpdate(const torch::Tensor& p, const torch::Tensor& g, const torch::Tensor& m,
                   const torch::Tensor& v) {
  for (const torch::Tensor* t : {&p, &g, &m, &v})
    if (!isContiguousCpuFloat(*t)) return false;
  return true;
}

}  // namespace

AdamW::AdamW(std::vector<NamedParameter>& params, double beta1, double beta2, double eps, double weightDecay)
    : m_params(params), m_beta1(beta1), m_beta2(beta2), m_eps(eps), m_weightDecay(weightDecay) {
  for (const NamedParameter& p : m_params) {
    m_expAvg.push_back(at::zeros_like(p.tensor));
    m_expAvgSq.push_back(at::zeros_like(p.tensor));
  }
}

void AdamW::step(double lr) {
  torch::NoGradGuard noGrad;
  ++m_steps;
  const double biasCorrection1 = 1.0 - std::pow(m_beta1, static_cast<double>(m_steps));
  const double biasCorrection2Sqrt = std::sqrt(1.0 - std::pow(m_beta2, static_cast<double>(m_steps)));
  const double stepSize = lr / biasCorrection1;
  // What the fused CPU kernel cannot take (CUDA tensors, mostly), by weight-decay factor, updated with
  // LibTorch's multi-tensor (foreach) ops: on a GPU a handful of launches per step instead of six per
  // parameter, the step's tail that a GPU otherwise waits on the CPU through.
  struct Group {
    double decay;
    std::vector<torch::Tensor> params, grads, expAvg, expAvgSq;
  };
  std::array<Group, 2> groups{Group{1.0 - lr * m_weightDecay, {}, {}, {}, {}}, Group{1.0, {}, {}, {}, {}}};
  for (size_t i = 0; i < m_params.size(); ++i) {
    torch::Tensor& param = m_params[i].tensor;
    const torch::Tensor& grad = param.grad();
    if (!grad.defined()) continue;
    const double decay = m_params[i].decay && m_weightDecay != 0.0 ? 1.0 - lr * m_weightDecay : 1.0;
    if (fusableUpdate(param, grad, m_expAvg[i], m_expAvgSq[i])) {
      // The composite update's five passes over the parameter in one (trainer/cpu_kernels).
      kernels::adamwUpdate(
          param.data_ptr<float>(), grad.data_ptr<float>(), m_expAvg[i].data_ptr<float>(),
          m_expAvgSq[i].data_ptr<float>(), param.numel(),
          {static_cast<float>(decay), static_cast<float>(1.0 - m_beta1), static_cast<float>(m_beta2),
           static_cast<float>(1.0 - m_beta2), static_cast<float>(biasCorrection2Sqrt),
           static_cast<float>(m_eps), static_cast<float>(-stepSize)});
    } else {
      Group& group = groups[decay != 1.0 ? 0 : 1];
      group.params.push_back(param);
      group.grads.push_back(grad);
      group.expAvg.push_back(m_expAvg[i]);
      group.expAvgSq.push_back(m_expAvgSq[i]);
    }
    if (i == 0 && fault::updateFailsAt(m_steps)) throw std::bad_alloc();
  }
  // The kernel's arithmetic, but for the first moment's update: m b1 + (1 - b1) g here, m + (1 - b1)(g - m)
  // there (LibTorch 1.13 has no multi-tensor lerp), the same up to rounding.
  for (Group& g : groups) {
    if (g.params.empty()) continue;
    if (g.decay != 1.0) at::_foreach_mul_(g.params, g.decay);
    at::_foreach_mul_(g.expAvg, m_beta1);
    at::_foreach_add_(g.expAvg, g.grads, 1.0 - m_beta1);
    at::_foreach_mul_(g.expAvgSq, m_beta2);
    at::_foreach_addcmul_(g.expAvgSq, g.grads, g.grads, 1.0 - m_beta2);
    std::vector<torch::Tensor> denom = at::_foreach_sqrt(g.expAvgSq);
    at::_foreach_div_(denom, biasCorrection2Sqrt);
    at::_foreach_add_(denom, m_eps);
    at::_foreach_addcdiv_(g.params, g.expAvg, denom, -stepSize);
  }
}

void AdamW::zeroGrad() {
  for (NamedParameter& p : m_params)
    if (p.tensor.grad().defined()) p.tensor.mutable_grad().zero_();
}

std::vector<std::pair<std::string, torch::Tensor>> AdamW::stateTensors() const {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (size_t i = 0; i < m_params.size(); ++i) {
    out.emplace_back("exp_avg." + m_params[i].name, m_expAvg[i].to(at::kCPU).contiguous());
    out.emplace_back("exp_avg_sq." + m_params[i].name, m_expAvgSq[i].to(at::kCPU).contiguous());
  }
  return out;
}

void AdamW::loadState(const std::map<std::string, torch::Tensor>& tensors, int64_t steps,
                      const std::string& source) {
  torch::NoGradGuard noGrad;
  for (size_t i = 0; i < m_params.size(); ++i)
    for (auto [prefix, target] :
         {std::pair{"exp_avg.", &m_expAvg[i]}, std::pair{"exp_avg_sq.", &m_expAvgSq[i]}}) {
      auto it = tensors.find(prefix + m_params[i].name);
      if (it == tensors.end() || it->second.sizes() != target->sizes())
        throw Error({.what = "optimizer state does not match the model",
                     .where = source,
                     .expected = std::string(prefix) + m_params[i].name + " " + c10::str(target->sizes()),
                     .found = it == tensors.end() ? "nothing" : c10::str(it->second.sizes()),
                     .hint = "the checkpoint belongs to another topology"});
      target->copy_(it->second);
    }
  m_steps = steps;
}

std::vector<torch::Tensor> AdamW::stateTensorsForSync() const {
  std::vector<torch::Tensor> out = m_expAvg;
  out.insert(out.end(), m_expAvgSq.begin(), m_expAvgSq.end());
  return out;
}

double clipGradientNorm(std::vector<NamedParameter>& params, double maxNorm) {
  torch::NoGradGuard noGrad;
  std::vector<torch::Tensor> grads;
  for (const NamedParameter& p : params)
    if (p.tensor.grad().defined()) grads.push_back(p.tensor.grad());
  if (grads.empty()) return 0.0;
  const double total = at::stack(at::_foreach_norm(grads, 2)).norm(2).item<double>();
  if (!std::isfinite(total)) return total;
  const double coefficient = maxNorm / (total + 1e-6);
  if (coefficient < 1.0) at::_foreach_mul_(grads, coefficient);
  return total;
}

}  // namespace sharelens
