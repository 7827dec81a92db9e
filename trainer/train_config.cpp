#include "trainer/train_config.hpp"

#include <cmath>

#include "core/error.hpp"

namespace sharelens {

double TrainConfig::learningRate(int64_t step) const {
  if (warmupSteps > 0 && step <= warmupSteps) return lr * static_cast<double>(step) / static_cast<double>(warmupSteps);
  const double span = static_cast<double>(std::max<int64_t>(1, steps - warmupSteps));
  const double progress = std::clamp(static_cast<double>(step - warmupSteps) / span, 0.0, 1.0);
  const double cosine = 0.5 * (1.0 + std::cos(M_PI * progress));
  return lr * (minLrRatio + (1.0 - minLrRatio) * cosine);
}

Json trainConfigToJson(const TrainConfig& c) {
  return {{"corpus", c.corpus},       {"steps", c.steps},
          {"batch_size", c.batchSize}, {"lr", c.lr},
          {"min_lr_ratio", c.minLrRatio}, {"warmup_steps", c.warmupSteps},
          {"weight_decay", c.weightDecay}, {"beta1", c.beta1},
          {"beta2", c.beta2},          {"eps", c.eps},
          {"grad_clip", c.gradClip},   {"eval_every", c.evalEvery},
          {"eval_batches", c.evalBatches}, {"checkpoint_every", c.checkpointEvery},
          {"keep_last", c.keepLast},   {"seed", c.seed},
          {"threads", c.threads},      {"device", c.device},
          {"max_consecutive_nonfinite", c.maxConsecutiveNonFinite},
          {"validation_fraction", c.validationFraction}};
}

TrainConfig trainConfigFromJson(const Json& j, const std::string& where) {
  const JsonObject o(j, where);
  TrainConfig c;
  c.corpus = o.optionalString("corpus").value_or(c.corpus);
  c.steps = o.optionalInt("steps", 1).value_or(c.steps);
  c.batchSize = o.optionalInt("batch_size", 1).value_or(c.batchSize);
  c.lr = o.optionalNumber("lr").value_or(c.lr);
  c.minLrRatio = o.optionalNumber("min_lr_ratio").value_or(c.minLrRatio);
  c.warmupSteps = o.optionalInt("warmup_steps", 0).value_or(c.warmupSteps);
  c.weightDecay = o.optionalNumber("weight_decay").value_or(c.weightDecay);
  c.beta1 = o.optionalNumber("beta1").value_or(c.beta1);
  c.beta2 = o.optionalNumber("beta2").value_or(c.beta2);
  c.eps = o.optionalNumber("eps").value_or(c.eps);
  c.gradClip = o.optionalNumber("grad_clip").value_or(c.gradClip);
  c.evalEvery = o.optionalInt("eval_every", 1).value_or(c.evalEvery);
  c.evalBatches = o.optionalInt("eval_batches", 1).value_or(c.evalBatches);
  c.checkpointEvery = o.optionalInt("checkpoint_every", 1).value_or(c.checkpointEvery);
  c.keepLast = o.optionalInt("keep_last", 1).value_or(c.keepLast);
  c.seed = static_cast<uint64_t>(o.optionalInt("seed", 0).value_or(static_cast<int64_t>(c.seed)));
  c.threads = static_cast<int>(o.optionalInt("threads", 0).value_or(c.threads));
  c.device = o.optionalString("device").value_or(c.device);
  c.maxConsecutiveNonFinite = o.optionalInt("max_consecutive_nonfinite", 1).value_or(c.maxConsecutiveNonFinite);
  c.validationFraction = o.optionalNumber("validation_fraction").value_or(c.validationFraction);
  if (!(c.lr > 0)) o.fail("lr", "learning rate must be positive", "> 0", std::to_string(c.lr));
  if (c.minLrRatio < 0 || c.minLrRatio > 1) o.fail("min_lr_ratio", "out of range", "0..1", std::to_string(c.minLrRatio));
  if (c.device != "cpu" && c.device != "cuda") o.fail("device", "unknown device", "cpu or cuda", c.device);
  if (!(c.validationFraction > 0 && c.validationFraction < 0.5))
    o.fail("validation_fraction", "out of range", "(0, 0.5)", std::to_string(c.validationFraction));
  return c;
}

}  // namespace sharelens
