#include "trainer/train_config.hpp"

#include <cmath>
#include <cstdio>

#include "core/error.hpp"

namespace sharelens {

double TrainConfig::learningRate(int64_t step) const {
  if (warmupSteps > 0 && step <= warmupSteps)
    return lr * static_cast<double>(step) / static_cast<double>(warmupSteps);
  const double span = static_cast<double>(std::max<int64_t>(1, steps - warmupSteps));
  const double progress = std::clamp(static_cast<double>(step - warmupSteps) / span, 0.0, 1.0);
  const double cosine = 0.5 * (1.0 + std::cos(M_PI * progress));
  return lr * (minLrRatio + (1.0 - minLrRatio) * cosine);
}

Json trainConfigToJson(const TrainConfig& c) {
  return {{"corpus", c.corpus},
          {"steps", c.steps},
          {"batch_size", c.batchSize},
          {"lr", c.lr},
          {"min_lr_ratio", c.minLrRatio},
          {"warmup_steps", c.warmupSteps},
          {"weight_decay", c.weightDecay},
          {"beta1", c.beta1},
          {"beta2", c.beta2},
          {"eps", c.eps},
          {"grad_clip", c.gradClip},
          {"eval_every", c.evalEvery},
          {"eval_batches", c.evalBatches},
          {"checkpoint_every", c.checkpointEvery},
          {"keep_checkpoints", checkpointRetentionToJson(c.keepCheckpoints)},
          {"seed", c.seed},
          {"init_seed", c.initSeed},
          {"data_offset", c.dataOffset},
          {"threads", c.threads},
          {"device", c.device},
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
  if (auto n = o.optionalInt("keep_last", 1))
    c.keepCheckpoints = CheckpointRetention::lastN(*n);  // older runs
  if (o.has("keep_checkpoints")) {
    const Json& keep = o.raw()["keep_checkpoints"];
    if (keep.is_number_integer() || keep.is_string())
      c.keepCheckpoints = parseCheckpointRetention(keep.is_string() ? keep.get<std::string>() : keep.dump(),
                                                   where + ".keep_checkpoints");
    else
      o.fail("keep_checkpoints", "wrong type", "\"all\", \"log\" or a count", jsonTypeName(keep));
  }
  c.seed = static_cast<uint64_t>(o.optionalInt("seed", 0).value_or(static_cast<int64_t>(c.seed)));
  c.initSeed = static_cast<uint64_t>(o.optionalInt("init_seed", 0).value_or(0));
  c.dataOffset = o.optionalInt("data_offset", 0).value_or(0);
  c.threads = static_cast<int>(o.optionalInt("threads", 0).value_or(c.threads));
  c.device = o.optionalString("device").value_or(c.device);
  c.maxConsecutiveNonFinite =
      o.optionalInt("max_consecutive_nonfinite", 1).value_or(c.maxConsecutiveNonFinite);
  c.validationFraction = o.optionalNumber("validation_fraction").value_or(c.validationFraction);
  validateTrainConfig(c, where);
  return c;
}

void validateTrainConfig(const TrainConfig& c, const std::string& where) {
  // Each real-valued field: finite and inside its (open or closed) range. NaN fails every comparison.
  auto check = [&](const char* field, double v, double lo, bool loOpen, double hi, bool hiOpen,
                   const char* hint) {
    const bool ok = std::isfinite(v) && (loOpen ? v > lo : v >= lo) && (hiOpen ? v < hi : v <= hi);
    if (ok) return;
    char range[96];
    std::snprintf(range, sizeof range, "%c%g, %g%c", loOpen ? '(' : '[', lo, hi, hiOpen ? ')' : ']');
    throw Error({.what = "out of range",
                 .where = where + "." + field,
                 .expected = range,
                 .found = std::to_string(v),
                 .hint = hint});
  };
  check("lr", c.lr, 0, true, 10, false,
        "a peak learning rate like 3e-3; a negative one would ascend the loss");
  check("min_lr_ratio", c.minLrRatio, 0, false, 1, false, "");
  check("weight_decay", c.weightDecay, 0, false, 10, false, "");
  check("beta1", c.beta1, 0, false, 1, true, "");
  check("beta2", c.beta2, 0, false, 1, true, "");
  check("eps", c.eps, 0, true, 1, false, "");
  check("grad_clip", c.gradClip, 0, true, 1e6, false, "");
  check("validation_fraction", c.validationFraction, 0, true, 0.5, true, "");
  auto positive = [&](const char* field, int64_t v, int64_t lo) {
    if (v < lo)
      throw Error({.what = "out of range",
                   .where = where + "." + field,
                   .expected = ">= " + std::to_string(lo),
                   .found = std::to_string(v)});
  };
  positive("steps", c.steps, 1);
  positive("batch_size", c.batchSize, 1);
  positive("warmup_steps", c.warmupSteps, 0);
  positive("eval_every", c.evalEvery, 1);
  positive("eval_batches", c.evalBatches, 1);
  positive("checkpoint_every", c.checkpointEvery, 1);
  positive("max_consecutive_nonfinite", c.maxConsecutiveNonFinite, 1);
  if (c.device != "cpu" && c.device != "cuda")
    throw Error(
        {.what = "unknown device", .where = where + ".device", .expected = "cpu or cuda", .found = c.device});
}

}  // namespace sharelens
