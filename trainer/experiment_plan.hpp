// Sizing an experiment before it runs (issue 35, "power before running"): `sharelens experiment plan FILE
// --out DIR`. Two phases, each an experiment of its own run by the experiment runner (so a killed plan
// resumes and never retrains a finished run), as the file's "plan" asks (core/experiment.hpp PlanSpec):
//   1. learning rate: every trained arm (not derived, not A/A) at lr x each factor, the first two seeds, at a
//      fraction of the budget (DIR/lr-sweep/); each arm keeps the factor whose worse seed has the lowest
//      held-out NLL (a rate must train every seed well: one at the edge of stability, whose seeds land far
//      apart, loses to a steady one of about the same mean);
//   2. pilot: the reference arm (a derived reference: its source) and its A/A arm at each pilot budget with
//      the pilot's seeds (DIR/pilot-<tokens>/), at the chosen learning rate. The A/A arm's paired
//      differences measure the seed-to-seed noise of a paired comparison, sd(T), at budget T; the
//      reference's mean validation curve gives the loss slope at the end (per doubling of tokens).
// The plan: per budget the seeds that bring the 95% half-width t sd / sqrt(n) under the target and the
// minimum detectable effect there; the recommended budget is the cheapest (seeds x tokens) among those at or
// above the file's tokens per parameter (the largest arm's; any budget when none is); a budget that cannot be
// that whatever its pilot measured is not trained, unless the file asks for every one. Written as
// DIR/plan.json, DIR/plan.md and DIR/planned.json -- the experiment with the chosen tokens, seeds and
// learning rates, ready for `experiment run`. Torch-free interface.
#pragma once

#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/experiment.hpp"
#include "core/json_util.hpp"
#include "core/task.hpp"
#include "trainer/experiment_runner.hpp"

namespace sharelens {

struct LrChoice {
  std::string arm;
  double baseLr = 0;
  // At lr x each factor: the worse of the seeds' held-out NLLs, by which the rate is chosen (NaN: a seed
  // diverged or is not finite), and their mean.
  std::vector<double> factors, nll, meanNll;
  double chosenLr = 0;
};

struct PilotBudget {
  int64_t tokens = 0;
  bool trained = true;  // false: it could not be chosen whatever it measured (PlanSpec::pilotEveryBudget),
                        // and the numbers below its tokens per parameter are NaN
  double tokensPerParameter = 0;       // of the largest trained arm
  std::vector<double> aaDifferences;   // A/A - reference, per seed
  double sd = 0;                       // their standard deviation (pilotSeeds - 1 degrees of freedom)
  double sizingSd = 0;                 // its upper bound at PlanSpec::sdConfidence (sd itself at 0)
  int seedsNeeded = 0;                 // for the target at sizingSd; 0: not within the plan's max_seeds
  double halfWidthAtSeeds = 0;         // t sizingSd / sqrt(n) at seedsNeeded (or at max_seeds)
  double minimumDetectableEffect = 0;  // at the same seeds and sd, 80% power
  double referenceNll = 0;             // mean over the pilot's seeds
  double slopePerDoubling = 0;         // the reference's validation loss per doubling of tokens at the end
  double wallSeconds = 0;              // the pilot's runs' own training time, summed
  double secondsPerRun = NAN;          // their mean: one run of the pilot's arm at this budget, here
};

struct ExperimentPlan {
  PlanSpec spec;
  std::vector<LrChoice> lr;
  std::vector<PilotBudget> budgets;
  size_t chosen = 0;           // index into budgets
  bool targetReached = false;  // some budget reaches the half-width within max_seeds
  bool tokensPerParameterMet = false;
  // A budget below spec.minTokensPerParameter where another reaches it: never chosen, so never trained.
  bool belowFloor(const PilotBudget& b) const {
    return tokensPerParameterMet && b.tokensPerParameter < spec.minTokensPerParameter;
  }
  int64_t tokens = 0;
  int seeds = 0;
  double sweepSeconds = 0;  // the sweep's finished runs' own training time, summed (not wall time)
  // What the recommended experiment should take on this machine (issue 35's wall time per experiment, known
  // before it runs): every trained arm's run at the chosen budget timed as the pilot's run there, scaled by
  // its training FLOPs per token against the pilot arm's, times the seeds, over the runs the runner trains
  // side by side (experimentRunsAtATime). Derived arms are not counted (DirectShare costs no training;
  // PostShare's is a few hundred steps). NaN when the chosen budget's pilot has no timing.
  double expectedWallSeconds = NAN;
  int trainedRuns = 0, runsAtATime = 0;
  Experiment planned;  // the experiment to run: tokens, seeds and learning rates as chosen
  Json toJson() const;
  std::string toMarkdown() const;
};

// The sweep's score of one learning rate from its seeds' held-out NLLs: the worse seed's (NaN when a seed
// diverged, is missing or is not finite, `seeds` being how many the sweep trained). The lowest score is
// chosen.
double learningRateScore(const std::vector<double>& seedNlls, size_t seeds);

ExperimentPlan planExperiment(const Experiment& experiment, const std::filesystem::path& outDir,
                              const ExperimentRunOptions& options, const TaskContext& ctx,
                              const std::function<void(const std::string&)>& log);

}  // namespace sharelens
