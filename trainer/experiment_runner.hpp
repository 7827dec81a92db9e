// Runs an experiment (core/experiment.hpp): every arm x seed as a training run in OUT/<arm>/seed-<s>/, N at a
// time with the cores split between them, each followed by its final evaluation (eval.json, held-out NLL of
// the last checkpoint). Killed and run again, it resumes the unfinished runs and never redoes finished ones.
// Torch-free interface.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "core/error.hpp"
#include "core/experiment.hpp"
#include "core/task.hpp"
#include "trainer/train_config.hpp"

namespace sharelens {

// A run that diverged (its steps' losses stayed non-finite, or its held-out loss is not finite): the one
// failure ExperimentRunOptions::tolerateFailedRuns records as an outcome. Any other error (a disk that is
// full, a corrupt run directory, a corpus that cannot be read) stops the experiment, sweep or not: recorded
// as failed.json it would read as an arm that diverged, and would not be retried. A DeriveArm throws it when
// its own training diverges (PostShare's post-training).
class RunDiverged : public Error {
 public:
  using Error::Error;
};

// A derived arm's model for one seed (core/experiment.hpp, "derive"), made from its source arm's finished run
// of the same seed: DirectShare and PostShare live above the trainer, so the caller supplies this
// (app/workflows/experiment_derive.hpp). Returns the model to evaluate and its unique parameters.
struct DerivedModel {
  std::filesystem::path model;
  int64_t parameters = 0;
  int64_t parametersSaved = 0;
};
using DeriveArm =
    std::function<DerivedModel(const Experiment& experiment, const ExperimentArm& arm, uint64_t seed,
                               const std::filesystem::path& sourceRun, const std::filesystem::path& runDir,
                               int threads, const TaskContext& ctx)>;

struct ExperimentRunOptions {
  int parallel = 0;              // runs at a time (0: one per thread); each gets threads / parallel threads
  int threads = 0;               // 0: all cores
  std::optional<int64_t> steps;  // overrides the token budget (steps of every arm)
  std::optional<int> seeds;      // the first K seeds, or more: the next unused integers after the file's
  DeriveArm deriveArm;           // needed when the experiment has derived arms
  // A trained run that diverges (its steps' losses stay non-finite, or its held-out loss is not finite) is
  // recorded as failed.json in its directory and the others go on, instead of stopping the experiment; run
  // again, it is not retried (remove failed.json to retry it). A derived run whose source run diverged is
  // recorded so too. Any other error still stops the experiment (a full disk is no outcome of an arm). Set by
  // `experiment plan`'s learning-rate sweep, where a too-high rate is an outcome, and by `experiment run`
  // (command line and Experiments view), where an arm that diverges in some seeds is one: the report counts
  // those seeds (ArmSummary::divergedSeeds) instead of the experiment stopping at the first and diverging
  // again, run for run, each time it is resumed. The plan's pilot does not: the planned rate diverging for
  // the reference is an error of the plan.
  bool tolerateFailedRuns = false;
  // A results archive (core/experiment_archive.hpp): a finished run it holds is taken into OUT instead of
  // trained when the runner reaches that run, and each run is copied there as it finishes, so that the
  // experiment continues from a fresh clone where the archive is committed. The archive must hold this
  // experiment or nothing.
  std::optional<std::filesystem::path> archive;
};

// The training options of an arm: the defaults, the experiment's overrides, its corpus, the seed, and the
// steps its token budget buys at its context length. The warmup is train.warmup_steps (at most a fifth of the
// steps) or train.warmup_fraction of the steps.
TrainConfig experimentTrainConfig(const Experiment& e, const ExperimentArm& arm, uint64_t seed);

// How many of an experiment's `runs` train side by side (options.parallel, or one per thread as memory
// allows), each on its share of the threads.
int experimentRunsAtATime(const Experiment& experiment, const ExperimentRunOptions& options,
                          const TaskContext& ctx, size_t runs);

// Writes OUT/experiment.json (or checks that it holds this experiment), then trains and evaluates what is not
// finished -- the trained arms first, then the derived ones (which need their sources' runs). `log` receives
// one line per event ("[3/18] cycle seed 2: finished, NLL 4.213") and a progress line every tenth of a run.
void runExperiment(Experiment experiment, const std::filesystem::path& outDir,
                   const ExperimentRunOptions& options, const TaskContext& ctx,
                   const std::function<void(const std::string&)>& log);

}  // namespace sharelens
