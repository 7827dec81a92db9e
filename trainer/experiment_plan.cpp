#include "trainer/experiment_plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/experiment_report.hpp"
#include "core/naming.hpp"
#include "core/param_count.hpp"
#include "core/statistics.hpp"

namespace fs = std::filesystem;

namespace sharelens {
namespace {

constexpr int kSweepSeeds = 2;             // the learning-rate sweep's seeds (the experiment's first two)
constexpr int kFewestPlannedSeeds = 3;     // the plan runs at least this many (max_seeds permitting)
constexpr uint64_t kPilotSeedBase = 1000;  // the pilot's seeds are 1001, 1002, ...

std::string format(const char* spec, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, spec, v);
  return buf;
}

bool sweeps(const ExperimentArm& a) {  // the arms trained from scratch under their own options
  return !a.derive && a.aaOf.empty();
}

// An experiment of the given arms, seeds and tokens, with the original's corpus, training options and
// evaluation, and no claims (the plan's phases judge nothing).
Experiment phase(const Experiment& e, const std::string& name, std::vector<ExperimentArm> arms,
                 std::vector<uint64_t> seeds, int64_t tokens, bool aaArm) {
  Experiment p;
  p.name = e.name + "-" + name;
  p.corpus = e.corpus;
  p.train = e.train;
  p.evalTokens = e.evalTokens;
  p.seeds = std::move(seeds);
  p.tokens = std::max<int64_t>(1, tokens);
  for (ExperimentArm& a : arms) {
    a.expect.clear();
    a.margin = 0;
    a.matchedBaselineOf.clear();  // resolved already: its topology is the solved one
  }
  p.arms = std::move(arms);
  p.reference = p.arms.front().name;
  p.aaArm = aaArm;
  if (aaArm) addAaArms(p, p.name);  // the reference's A/A arm, as experimentFromJson adds it
  return p;
}

double baseLrOf(const Experiment& e, const ExperimentArm& arm) {
  return experimentTrainConfig(e, arm, e.seeds.front()).lr;
}

const ArmSummary* armIn(const ExperimentReport& r, const std::string& name) {
  for (const ArmSummary& a : r.arms)
    if (a.name == name) return &a;
  return nullptr;
}

// Validation loss per doubling of tokens between the mean curve's last two points.
double slopePerDoubling(const ArmSummary& a) {
  const size_t n = a.curveTokens.size();
  if (n < 2 || !(a.curveTokens[n - 2] > 0)) return NAN;
  return (a.curveMean[n - 1] - a.curveMean[n - 2]) / std::log(a.curveTokens[n - 1] / a.curveTokens[n - 2]) *
         std::log(2.0);
}

}  // namespace

double learningRateScore(const std::vector<double>& seedNlls, size_t seeds) {
  if (seedNlls.size() != seeds || seeds == 0) return NAN;
  double worst = -INFINITY;
  for (double nll : seedNlls) {
    if (!std::isfinite(nll)) return NAN;
    worst = std::max(worst, nll);
  }
  return worst;
}

ExperimentPlan planExperiment(const Experiment& e, const fs::path& outDir, const ExperimentRunOptions& o,
                              const TaskContext& ctx, const std::function<void(const std::string&)>& log) {
  ExperimentPlan plan;
  plan.spec = e.plan;
  const PlanSpec& s = e.plan;
  plan.planned = e;

  // 1. The learning rate of every trained arm: lr x factor, two seeds (the worse seed's NLL decides), a
  // fraction of the budget.
  std::vector<ExperimentArm> sweepArms;
  for (const ExperimentArm& arm : e.arms) {
    if (!sweeps(arm)) continue;
    LrChoice choice{.arm = arm.name, .baseLr = baseLrOf(e, arm), .factors = s.lrFactors};
    for (double f : s.lrFactors) {
      ExperimentArm variant = arm;
      variant.name = arm.name + "@lr" + format("%g", choice.baseLr * f);
      variant.lr = choice.baseLr * f;
      sweepArms.push_back(std::move(variant));
    }
    plan.lr.push_back(std::move(choice));
  }
  if (log) log("plan: learning-rate sweep, " + std::to_string(sweepArms.size()) + " runs");
  const fs::path sweepDir = outDir / "lr-sweep";
  ExperimentRunOptions sweepOptions = o;
  sweepOptions.tolerateFailedRuns = true;  // a rate that diverges is a result of the sweep
  if (o.archive) sweepOptions.archive = *o.archive / "lr-sweep";
  runExperiment(phase(e, "lr-sweep", sweepArms, {e.seeds.begin(), e.seeds.begin() + kSweepSeeds},
                      static_cast<int64_t>(s.lrBudget * static_cast<double>(e.tokens)), false),
                sweepDir, sweepOptions, ctx, log);
  const ExperimentReport sweep = reportExperiment(sweepDir);
  for (LrChoice& choice : plan.lr) {
    double best = INFINITY;
    for (double f : choice.factors) {
      const std::string name = choice.arm + "@lr" + format("%g", choice.baseLr * f);
      const ArmSummary* a = armIn(sweep, name);
      // A rate under which a seed failed (diverged) is not judged on the seeds that survived it; one is
      // judged by its worse seed: at the edge of stability the seeds of one rate can land 0.4 nats apart (the
      // claims' tied rank-12 embeddings at lr 0.03: 5.14 and 5.58, a mean 0.002 below lr 0.003's 5.32
      // and 5.40), and a pilot at such a rate measures the instability, not the seeds' usual spread.
      std::vector<double> seedNlls;
      for (const RunSummary& run : sweep.runs)
        if (run.arm == name && run.finished) seedNlls.push_back(run.finalNll);
      const double nll = learningRateScore(seedNlls, kSweepSeeds);
      choice.nll.push_back(nll);
      choice.meanNll.push_back(std::isfinite(nll) && a ? a->nll.mean : NAN);
      if (nll < best) best = nll, choice.chosenLr = choice.baseLr * f;
    }
    if (!std::isfinite(best))
      throw Error({.what = "every learning rate of the sweep diverged",
                   .where = (sweepDir / choice.arm).string() + "@lr*",
                   .hint = "lower the experiment's train.lr or the plan's lr_factors"});
    for (ExperimentArm& arm : plan.planned.arms)
      if (arm.name == choice.arm || arm.aaOf == choice.arm) arm.lr = choice.chosenLr;
  }
  // The runs' own training time, as the pilots' below (a diverged run's too, up to its divergence).
  for (const ArmSummary& a : sweep.arms) plan.sweepSeconds += a.seconds;

  // 2. The pilot: the reference (a derived reference's source) and its A/A arm at each budget.
  const ExperimentArm* reference = &plan.planned.arm(e.reference);
  if (reference->derive) reference = &plan.planned.arm(reference->derive->from);
  double largest = 0;
  for (const ExperimentArm& arm : e.arms)
    largest = std::max(largest, static_cast<double>(countParameters(arm.topology).total));
  // Seeds of their own: the experiment's seeds 1, 2, ... would train the pilot's runs again, bit for bit, and
  // its A/A check would read the very draws that sized it, unable to show that they came out narrow.
  std::vector<uint64_t> pilotSeeds;
  for (int i = 1; i <= s.pilotSeeds; ++i) pilotSeeds.push_back(kPilotSeedBase + static_cast<uint64_t>(i));
  // Which budgets step 3 may choose is known before any is trained (tokens per parameter): one below the
  // floor where another reaches it is not trained. What one costs, seeds x tokens, is known only once its
  // pilot measured the seeds -- but never less than fewestPlannedSeeds x tokens. A budget that even so cannot
  // undercut the cheapest eligible one already measured to reach the target is not trained either: the plan
  // comes out the same.
  auto tokensOf = [&](double fraction) {
    return std::max<int64_t>(1, static_cast<int64_t>(fraction * static_cast<double>(e.tokens)));
  };
  plan.tokensPerParameterMet = std::any_of(s.pilotBudgets.begin(), s.pilotBudgets.end(), [&](double f) {
    return static_cast<double>(tokensOf(f)) / largest >= s.minTokensPerParameter;
  });
  auto eligible = [&](const PilotBudget& b) { return !plan.belowFloor(b); };
  // What a budget costs if chosen: the seeds step 3 would run at it, times its tokens.
  const int fewestPlannedSeeds = std::min(kFewestPlannedSeeds, s.maxSeeds);
  auto seedsRun = [&](const PilotBudget& b) {
    return std::max(fewestPlannedSeeds, b.seedsNeeded > 0 ? b.seedsNeeded : s.maxSeeds);
  };
  auto cost = [&](const PilotBudget& b) { return static_cast<double>(seedsRun(b)) * b.tokens; };
  // The cheapest eligible budget measured so far to reach the target (the first of equals): step 3's choice.
  auto cheapestReachingTarget = [&]() -> std::optional<size_t> {
    std::optional<size_t> best;
    for (size_t i = 0; i < plan.budgets.size(); ++i) {
      const PilotBudget& b = plan.budgets[i];
      if (!b.trained || b.seedsNeeded == 0 || !eligible(b)) continue;
      if (!best || cost(b) < cost(plan.budgets[*best])) best = i;
    }
    return best;
  };
  for (double fraction : s.pilotBudgets) {
    PilotBudget b;
    b.tokens = tokensOf(fraction);
    b.tokensPerParameter = static_cast<double>(b.tokens) / largest;
    const auto cheapest = cheapestReachingTarget();
    if (!s.pilotEveryBudget &&
        (!eligible(b) ||
         (cheapest && fewestPlannedSeeds * static_cast<double>(b.tokens) >= cost(plan.budgets[*cheapest])))) {
      b.trained = false;
      b.sd = b.sizingSd = b.halfWidthAtSeeds = b.minimumDetectableEffect = b.referenceNll =
          b.slopePerDoubling = NAN;
      if (log) log("plan: pilot at " + std::to_string(b.tokens) + " tokens not trained: it cannot be chosen");
      plan.budgets.push_back(std::move(b));
      continue;
    }
    if (log) log("plan: pilot at " + std::to_string(b.tokens) + " tokens");
    const fs::path dir = outDir / ("pilot-" + std::to_string(b.tokens));
    ExperimentRunOptions pilotOptions = o;
    pilotOptions.tolerateFailedRuns =
        false;  // the planned rate diverging for the reference: no sd to size from
    if (o.archive) pilotOptions.archive = *o.archive / dir.filename();
    runExperiment(phase(e, "pilot-" + std::to_string(b.tokens), {*reference}, pilotSeeds, b.tokens, true),
                  dir, pilotOptions, ctx, log);
    const ExperimentReport r = reportExperiment(dir);
    const ArmSummary* ref = armIn(r, reference->name);
    const ArmSummary* aa = armIn(r, reference->name + kAaSuffix);
    // The runs' own training time (their metrics' elapsed, across resumptions), not this call's: a plan
    // resumed after its pilots finished would otherwise report them as taking no time.
    b.wallSeconds = ref->seconds + aa->seconds;
    if (const int runs = ref->finishedSeeds + aa->finishedSeeds; runs > 0)
      b.secondsPerRun = b.wallSeconds / runs;
    b.aaDifferences = aa->differences;
    const MeanInterval aaSpread = meanInterval(b.aaDifferences);
    b.sd = aaSpread.sd;
    b.sizingSd = sizingSd(b.sd, aaSpread.n - 1, s.sdConfidence);
    b.seedsNeeded = seedsForHalfWidth(b.sizingSd, s.targetHalfWidth, s.maxSeeds);
    const int n = b.seedsNeeded > 0 ? b.seedsNeeded : s.maxSeeds;
    b.halfWidthAtSeeds = studentTQuantile(0.975, n - 1) * b.sizingSd / std::sqrt(static_cast<double>(n));
    b.minimumDetectableEffect = minimumDetectableEffect(b.sizingSd, n);
    b.referenceNll = ref->nll.mean;
    b.slopePerDoubling = slopePerDoubling(*ref);
    plan.budgets.push_back(std::move(b));
  }

  // 3. The cheapest budget that reaches the target, among those with enough tokens per parameter if any.
  std::optional<size_t> best = cheapestReachingTarget();
  plan.targetReached = best.has_value();
  if (!best)  // the target is out of reach: the largest budget trained (an eligible one: a budget is left out
    // only below the floor, then) at the most seeds, its MDE says how close
    for (size_t i = 0; i < plan.budgets.size(); ++i)
      if (plan.budgets[i].trained && (!best || plan.budgets[i].tokens > plan.budgets[*best].tokens)) best = i;
  plan.chosen = *best;
  const PilotBudget& chosen = plan.budgets[plan.chosen];
  plan.tokens = chosen.tokens;
  plan.seeds = seedsRun(chosen);
  plan.planned.tokens = plan.tokens;
  plan.planned.seeds.clear();
  for (int i = 1; i <= plan.seeds; ++i) plan.planned.seeds.push_back(static_cast<uint64_t>(i));
  // What that costs here: the pilot arm's run at the chosen budget, each trained arm scaled by its FLOPs.
  const double pilotFlops = countParameters(reference->topology).trainFlopsPerToken;
  double runSeconds = 0;
  for (const ExperimentArm& arm : plan.planned.arms) {
    if (arm.derive) continue;
    runSeconds += chosen.secondsPerRun * countParameters(arm.topology).trainFlopsPerToken / pilotFlops;
    plan.trainedRuns += plan.seeds;
  }
  plan.runsAtATime = experimentRunsAtATime(plan.planned, o, ctx, static_cast<size_t>(plan.trainedRuns));
  plan.expectedWallSeconds = runSeconds * plan.seeds / plan.runsAtATime;

  writeFileAtomically(outDir / "planned.json", experimentToJson(plan.planned).dump(2) + "\n");
  writeFileAtomically(outDir / "plan.json", plan.toJson().dump(2) + "\n");
  writeFileAtomically(outDir / "plan.md", plan.toMarkdown());
  return plan;
}

Json ExperimentPlan::toJson() const {
  auto number = [](double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); };
  Json lrs = Json::array();
  for (const LrChoice& c : lr) {
    Json nlls = Json::array(), means = Json::array();
    for (double v : c.nll) nlls.push_back(number(v));
    for (double v : c.meanNll) means.push_back(number(v));
    lrs.push_back({{"arm", c.arm},
                   {"base_lr", c.baseLr},
                   {"factors", c.factors},
                   {"nll", nlls},
                   {"mean_nll", means},
                   {"chosen_lr", c.chosenLr}});
  }
  Json pilots = Json::array();
  for (const PilotBudget& b : budgets)
    pilots.push_back({{"tokens", b.tokens},
                      {"tokens_per_parameter", b.tokensPerParameter},
                      {"aa_differences", b.aaDifferences},
                      {"aa_sd", number(b.sd)},
                      {"sizing_sd", number(b.sizingSd)},
                      {"seeds_needed", b.seedsNeeded},
                      {"half_width_at_seeds", number(b.halfWidthAtSeeds)},
                      {"minimum_detectable_effect", number(b.minimumDetectableEffect)},
                      {"reference_nll", number(b.referenceNll)},
                      {"slope_per_doubling", number(b.slopePerDoubling)},
                      {"wall_seconds", b.wallSeconds},
                      {"seconds_per_run", number(b.secondsPerRun)},
                      {"trained", b.trained}});
  return {{"schema", "sharelens.experiment-plan/1"},
          {"experiment", planned.name},
          {"target_half_width", spec.targetHalfWidth},
          {"sd_confidence", spec.sdConfidence},
          {"lr_sweep", lrs},
          {"lr_sweep_seconds", sweepSeconds},
          {"pilot", pilots},
          {"chosen_budget", chosen},
          {"target_reached", targetReached},
          {"tokens_per_parameter_met", tokensPerParameterMet},
          {"recommended",
           {{"tokens", tokens},
            {"seeds", seeds},
            {"trained_runs", trainedRuns},
            {"runs_at_a_time", runsAtATime},
            {"expected_wall_seconds", number(expectedWallSeconds)}}}};
}

std::string ExperimentPlan::toMarkdown() const {
  std::string md =
      "## Plan for " + planned.name + "\n\nLearning rate (" + format("%g", spec.lrBudget) +
      " of the budget, 2 seeds; per peak learning rate the worse seed's held-out NLL (and the mean), the "
      "lowest chosen; " +
      format("%.0f", sweepSeconds) + " s of training, all runs):\n\n";
  for (const LrChoice& c : lr) {
    md += "- " + c.arm + ":";
    for (size_t i = 0; i < c.factors.size(); ++i) {
      md += ' ';  // appended piecewise: GCC 12 warns falsely on " " + std::string&& (PR 105329)
      md += format("%g", c.baseLr * c.factors[i]);
      md += " → ";
      md += std::isfinite(c.nll[i]) ? format("%.4f", c.nll[i]) + " (" + format("%.4f", c.meanNll[i]) + ")"
                                    : std::string("diverged");
      md += ";";
    }
    md += " **" + format("%g", c.chosenLr) + "**";
    if (c.chosenLr == c.baseLr * *std::min_element(c.factors.begin(), c.factors.end()) ||
        c.chosenLr == c.baseLr * *std::max_element(c.factors.begin(), c.factors.end()))
      md += " (at the edge of the sweep: a wider one may find a better rate)";
    md += "\n";
  }
  md +=
      "\nPilot: the reference and its A/A arm (other initialisation, same data) with " +
      std::to_string(spec.pilotSeeds) + " seeds of its own (" + std::to_string(kPilotSeedBase + 1) +
      " on, so the experiment does not train them again); sd is the A/A paired differences' standard "
      "deviation (" +
      std::to_string(spec.pilotSeeds - 1) + " degrees of freedom, itself uncertain)" +
      (spec.sdConfidence > 0
           ? ", sizing sd its " + format("%g", 100 * spec.sdConfidence) +
                 "% upper confidence bound (sd √(df / χ²), so that the seeds miss the target less often than "
                 "half the time)"
           : std::string(", the seeds sized from sd itself (they miss the target about half the time)")) +
      ", seeds the fewest whose 95% half-width t sd / √n at the sizing sd is at most " +
      format("%g", spec.targetHalfWidth) +
      " nats, MDE the difference those seeds detect with 80% power at that sd, slope the reference's "
      "validation loss per doubling of tokens at the end.\n\n| tokens | tokens/param | A/A sd | sizing sd | "
      "seeds | half-width | MDE | reference NLL | slope/doubling | pilot training time (all runs) "
      "|\n|---|---|---|---|---|---|---|---|---|---|\n";
  bool undercut = false;  // a budget left out because it could not cost less than one that reached the target
  for (size_t i = 0; i < budgets.size(); ++i) {
    const PilotBudget& b = budgets[i];
    if (!b.trained) {
      const bool underFloor = belowFloor(b);
      md +=
          "| " + std::to_string(b.tokens) + " | " + format("%.1f", b.tokensPerParameter) +
          " | not trained (" +
          (underFloor ? "below the floor of " + format("%g", spec.minTokensPerParameter) +
                            " tokens per parameter, which another budget reaches"
                      : std::string("could not cost less than the cheapest budget that reached the target")) +
          ") | | | | | | | |\n";
      undercut = undercut || !underFloor;
      continue;
    }
    md += "| " + std::to_string(b.tokens) + (i == chosen ? " (chosen)" : "") + " | " +
          format("%.1f", b.tokensPerParameter) + " | " + format("%.4f", b.sd) + " | " +
          format("%.4f", b.sizingSd) + " | " +
          (b.seedsNeeded > 0 ? std::to_string(b.seedsNeeded) : "> " + std::to_string(spec.maxSeeds)) + " | " +
          format("%.4f", b.halfWidthAtSeeds) + " | " + format("%.4f", b.minimumDetectableEffect) + " | " +
          format("%.4f", b.referenceNll) + " | " + format("%+.4f", b.slopePerDoubling) + " | " +
          format("%.0f s", b.wallSeconds) + " |\n";
  }
  if (undercut)
    md +=
        "\nA budget not trained for its cost could not have been chosen whatever its pilot measured: at the "
        "fewest seeds a plan runs (" +
        std::to_string(std::min(kFewestPlannedSeeds, spec.maxSeeds)) +
        "), its seeds x tokens already cost at least the cheapest budget piloted before it that reached the "
        "target (`\"pilot_every_budget\": true` in the file's plan trains it anyway).\n";
  const double sd = budgets[chosen].sizingSd;
  md += "\n**Recommended**: " + std::to_string(tokens) + " tokens per run, " + std::to_string(seeds) +
        " seeds (`planned.json`): at the sizing sd, a half-width of " +
        format("%.4f", studentTQuantile(0.975, seeds - 1) * sd / std::sqrt(static_cast<double>(seeds))) +
        " nats and a minimum detectable effect of " + format("%.4f", minimumDetectableEffect(sd, seeds)) +
        " nats (80% power).";
  if (std::isfinite(expectedWallSeconds))
    md += " Expected training time on this machine: about " + humanDuration(expectedWallSeconds) +
          " for its " + std::to_string(trainedRuns) + " trained runs, " + std::to_string(runsAtATime) +
          " at a time (the pilot's run at this budget took " + humanDuration(budgets[chosen].secondsPerRun) +
          "; each arm's scaled by its training FLOPs per token; derived arms not counted).";
  if (!targetReached)
    md += " The target half-width is out of reach within " + std::to_string(spec.maxSeeds) +
          " seeds at every pilot budget that could be chosen: the MDE above is what this experiment can "
          "resolve.";
  if (!tokensPerParameterMet)
    md += " No pilot budget reaches " + format("%g", spec.minTokensPerParameter) +
          " tokens per parameter: the comparison measures early training.";
  return md + "\n";
}

}  // namespace sharelens
