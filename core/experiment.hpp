// Experiments (schema "sharelens.experiment/1"): a claim of a paper as arms x seeds of training runs at one
// token budget, compared with intervals over seeds. This file holds the format, its validation and resolution
// (arms to topologies, matched baselines solved) and the layout of an experiment's directory;
// core/experiment_report.hpp computes the report from the runs it holds, trainer/experiment_runner.hpp trains
// them.
//
// clang-format off
//   {"schema": "sharelens.experiment/1", "name": "...", "claim": {"paper", "section", "statement", "number"},
//    "corpus": "brown", "seeds": 3 | [1, 2, 3], "tokens": 2000000, "reference": "baseline",
//    "train": {"batch_size": 16, "lr": 0.003, ...},     overrides of the training options (train_config.hpp)
//    "eval_tokens": "all" | 32768,                      held-out tokens of each run's final evaluation
//    "profiles": {"gpu": {"tokens": ..., "train": {"device": "cuda"}, "model": {"d_model": 512, ...}}},
//    "arms": [{"name": "cycle", "topology": "file.json" | {topology} |
//                                           {"preset": "cycle", "layers": 8, ..., "overrides": {partial}},
//              "expect": "better"},
//             {"name": "baseline", "matched_baseline_of": "cycle"},
//             {"name": "postshare", "derive": {"from": "pretrained", "method": "postshare", "ratio": 0.25,
//                                             "gamma": 0.5, "steps": 200, "lr": 0.001}}]}
// clang-format on
//
// "expect": what the paper claims of this arm against the reference -- "better" (lower held-out NLL),
// "worse", or "no-worse" (higher by at most "margin" nats/token, kDefaultNoWorseMargin = 0.02 unless given: a
// non-inferiority claim; 0 makes it a superiority test) --
// so the report can say whether the claim holds at this scale. "derive": an arm made from another arm's final
// model of the same seed instead of trained from scratch: "directshare" shares that model's DirectShare pairs
// at `ratio` (no training); "postshare" post-trains it for `steps` with the PostShare penalty gamma, then
// shares (the head-wise sharing paper's pipeline).
//
// Directory: OUT/experiment.json (the resolved experiment), OUT/<arm>/seed-<s>/ (a run directory each, with
// eval.json once its final evaluation is done).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/corpus.hpp"
#include "core/json_util.hpp"
#include "core/statistics.hpp"
#include "core/topology.hpp"

namespace sharelens {

inline constexpr const char* kExperimentSchema = "sharelens.experiment/1";

struct Claim {
  std::string paper, section, statement, number;
};

// An arm made from another arm's trained model (see "derive" above).
struct DerivedArm {
  std::string from;     // the trained arm
  std::string method;   // "directshare" or "postshare"
  double ratio = 0.25;  // DirectShare's alpha
  double gamma = 0.5;   // PostShare's penalty weight ([HSA] App. C.3)
  int64_t steps = 200;  // PostShare's post-training steps
  double lr = 1e-3;
};

struct ExperimentArm {
  std::string name;
  Topology topology;  // resolved (a matched baseline is solved from its arm; a derived arm has its source's)
  std::string matchedBaselineOf;  // "" for arms given as topologies
  std::optional<DerivedArm> derive;
  std::string expect;  // "", "better", "worse" or "no-worse": the paper's claim against the reference
  double margin = 0;   // no-worse: the loss difference (nats/token) that still counts as no worse
  // An A/A arm: the arm named here again (same topology, same data order), initialised from other seeds
  // (experimentTrainConfig: init seed = seed + kAaInitSeedOffset). "" for every other arm.
  std::string aaOf;
  // The arm's own peak learning rate (its "lr"), over the experiment's train.lr: what `experiment plan`'s
  // sweep chose for it. Unset: the experiment's.
  std::optional<double> lr;
  // The paper's own effect for this comparison ("paper_effect": arm minus reference in the paper's metric,
  // nats/token; "paper_source": its table and row), drawn beside ours in the forest plot.
  std::optional<double> paperEffect;
  std::string paperSource;
};

// A no-worse claim's margin unless the file gives one (issue 35: declared before the run; 0 makes the claim
// a superiority test).
inline constexpr double kDefaultNoWorseMargin = 0.02;
// The A/A arm's initialisation seed is its run's seed plus this (the data order keeps the run's seed).
inline constexpr uint64_t kAaInitSeedOffset = 1'000'003;
inline constexpr const char* kAaSuffix = "-aa";

// How `sharelens experiment plan` sizes the experiment ("plan" in the file; every field optional):
// a learning-rate sweep per trained arm, then a pilot of the reference and its A/A arm at a few budgets.
struct PlanSpec {
  double targetHalfWidth = 0.02;  // nats/token: the paired 95% interval's half-width to reach
  int pilotSeeds = 3;
  std::vector<double> pilotBudgets = {0.25, 0.5, 1.0};  // fractions of "tokens"
  std::vector<double> lrFactors = {0.1, 1.0, 10.0};     // times the arm's lr: [LRS] swept one order of
                                                        // magnitude above and below
  double lrBudget = 0.25;                               // the sweep's fraction of "tokens" (two seeds)
  int maxSeeds = 20;
  double minTokensPerParameter = 10;  // issue 35: budgets below this are chosen only when none is above
  // false: a pilot budget that cannot be chosen whatever it measures is not trained (below
  // minTokensPerParameter where another budget reaches it, or its tokens x the fewest seeds a plan runs, 3,
  // already cost at least the cheapest budget that reached the target); the plan is the same either way.
  // true trains every budget, for their numbers.
  bool pilotEveryBudget = false;
  // The pilot's A/A sd has pilot_seeds - 1 degrees of freedom (2 by default), so seeds sized from it miss the
  // target about half the time; they are sized from its upper confidence bound at this level instead
  // (sdUpperBound: 2.12 s at 0.8 with 2 degrees of freedom). 0 sizes from the sd itself.
  double sdConfidence = 0.8;
};

constexpr int kMostExperimentSeeds = 1000;  // every seed is a training run of every arm

struct Experiment {
  std::string name, description;
  Claim claim;
  std::string corpus = "brown";
  std::vector<uint64_t> seeds = {1, 2, 3};
  int64_t tokens = 0;                       // training tokens per run (steps = tokens / (batch x context))
  int64_t evalTokens = kEveryHeldOutToken;  // held-out tokens of each run's final evaluation ("all")
  Json train = Json::object();              // training-option overrides, validated by the trainer
  std::string reference;                    // the arm every other is compared with
  std::vector<ExperimentArm> arms;
  // "aa_arm" (default true): the reference's A/A arm, <reference>-aa, is added unless the file declares
  // "aa_arm": false; a derived reference's A/A arm derives from its source's A/A arm, added beside it.
  bool aaArm = true;
  PlanSpec plan;

  const ExperimentArm& arm(const std::string& name) const;
};

// Reads and validates (unknown arm references, fewer than 2 seeds, arms of different vocabularies, ...): a
// named Error before anything trains. Topology files are relative to the experiment file.
// `profile` ("" or a name in the file's "profiles"): another scale of the same experiment, applied before
// resolution (experimentProfile). Every profile the file carries is resolved too, so a broken one is named
// whichever runs.
Experiment readExperimentFile(const std::filesystem::path& path, const std::string& profile = "");
// The experiment JSON with profile `profile` applied, "profiles" removed: its "tokens", "eval_tokens" and
// "seeds" replace the file's, its "train" merges into the file's (a GPU profile: {"device": "cuda"}), its
// "model" merges into every arm given as a preset object (dimensions only: matched baselines and derived
// arms follow their arms), then "arms": {NAME: {...}} into that arm alone, and the name gains "-PROFILE". ""
// returns the file's own configuration.
Json experimentProfile(const Json& experiment, const std::string& profile, const std::string& where);
Experiment experimentFromJson(const Json& j, const std::string& where, const std::filesystem::path& baseDir);
Json experimentToJson(const Experiment& e);  // resolved: every arm as an inline topology
// What training depends on, of an experimentToJson: the experiment less its prose (description, claim), its
// plan settings, and the arms' expected outcomes, margins and paper differences, which may be edited between
// runs (the report then judges by the new ones).
Json experimentTrainingIdentity(Json experiment);
// The same less its seeds: an experiment with seeds added since is the same experiment.
Json experimentTrainingIdentityLessSeeds(Json experiment);
// Adds the reference's A/A arm unless the experiment holds one (experiment.json, written with it, read back);
// a derived reference's A/A arm derives from its source's A/A arm, which is added too. `where` names the
// experiment in errors (an arm already holding the A/A arm's name).
void addAaArms(Experiment& experiment, const std::string& where);
// An experiment directory's experiment.json as this version reads it: one written before the A/A arm (no
// "aa_arm") keeps the meaning it was run with -- no A/A arm, a no-worse margin of 0 where none was written,
// 32,768 evaluation tokens unless given.
Json experimentRecord(Json recorded);

std::filesystem::path experimentRunDirectory(const std::filesystem::path& outDir, const std::string& arm,
                                             uint64_t seed);

// A run the runner gave up on under ExperimentRunOptions::tolerateFailedRuns (its directory holds this file):
// it diverged, or (kSourceDivergedField true) it is a derived run whose source run diverged.
inline constexpr const char* kFailedRunFile = "failed.json";
inline constexpr const char* kSourceDivergedField = "source_diverged";

}  // namespace sharelens
