// The derived arms of an experiment (core/experiment.hpp, "derive"): DirectShare of a trained arm's final
// model at a ratio (no training), or the head-wise sharing paper's PostShare pipeline (post-train with the
// penalty, then share). What trainer/experiment_runner.hpp calls for them; it lives here because it needs
// analysis/ (DirectShare).
#pragma once

#include "trainer/experiment_runner.hpp"

namespace sharelens {

DeriveArm experimentDeriver();

}  // namespace sharelens
