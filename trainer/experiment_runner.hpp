// Runs an experiment (core/experiment.hpp): every arm x seed as a training run in OUT/<arm>/seed-<s>/, N at a
// time with the cores split between them, each followed by its final evaluation (eval.json, held-out NLL of the
// last checkpoint). Killed and run again, it resumes the unfinished runs and never redoes finished ones.
// Torch-free interface.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "core/experiment.hpp"
#include "core/task.hpp"
#include "trainer/train_config.hpp"

namespace sharelens {

struct ExperimentRunOptions {
  int parallel = 1;                 // runs at a time; each gets threads / parallel compute threads
  int threads = 0;                  // 0: all cores
  std::optional<int64_t> steps;     // overrides the token budget (steps of every arm)
  std::optional<int> seeds;         // only the first K seeds
};

// The training options of an arm: the defaults, the experiment's overrides, its corpus, the seed, and the steps
// its token budget buys at its context length.
TrainConfig experimentTrainConfig(const Experiment& e, const ExperimentArm& arm, uint64_t seed);

// Writes OUT/experiment.json (or checks that it holds this experiment), then trains and evaluates what is not
// finished. `log` receives one line per event ("[3/18] cycle seed 2: finished, NLL 4.213").
void runExperiment(Experiment experiment, const std::filesystem::path& outDir, const ExperimentRunOptions& options,
                   const TaskContext& ctx, const std::function<void(const std::string&)>& log);

}  // namespace sharelens
