// AdamW with decoupled weight decay, step for step what torch.optim.AdamW (amsgrad off) computes, written
// out so that its state (two moments per parameter and the step count) is ours to checkpoint exactly.
// Also global-norm gradient clipping as torch.nn.utils.clip_grad_norm_.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "trainer/model.hpp"

namespace sharelens {

class AdamW {
 public:
  AdamW(std::vector<NamedParameter>& params, double beta1, double beta2, double eps, double weightDecay);

  void step(double lr);  // one update from the parameters' .grad()
  void zeroGrad();
  int64_t steps() const { return m_steps; }
  void setSteps(int64_t steps) { m_steps = steps; }
  // The moment tensors themselves (not copies), for a distributed run to give every rank rank 0's.
  std::vector<torch::Tensor> stateTensorsForSync() const;

  // "exp_avg.<name>" and "exp_avg_sq.<name>" (CPU float32), and their restoration.
  std::vector<std::pair<std::string, torch::Tensor>> stateTensors() const;
  void loadState(const std::map<std::string, torch::Tensor>& tensors, int64_t steps,
                 const std::string& source);

 private:
  std::vector<NamedParameter>& m_params;
  std::vector<torch::Tensor> m_expAvg, m_expAvgSq;
  double m_beta1, m_beta2, m_eps, m_weightDecay;
  int64_t m_steps = 0;
};

// Scales gradients so that their global L2 norm is at most maxNorm; returns the norm before clipping
// (NaN or Inf when a gradient is not finite, in which case nothing is scaled).
double clipGradientNorm(std::vector<NamedParameter>& params, double maxNorm);

}  // namespace sharelens
