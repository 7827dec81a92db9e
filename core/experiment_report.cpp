#include "core/experiment_report.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "core/error.hpp"
#include "core/param_count.hpp"
#include "core/run_dir.hpp"
#include "core/text.hpp"

namespace fs = std::filesystem;

namespace sharelens {

namespace {

// ArmSummary::documentDifference: over the seeds the seed interval pairs (both runs finished), the statistic
// of a resample (document weights w) is mean over seeds of
//   sum_d w_d nll(arm, s, d) / sum_d w_d tokens(arm, s, d) - the same for the reference,
// the paired difference of token-weighted held-out NLLs. A paired seed whose two runs did not keep sums over
// the same documents leaves no document interval at all, rather than one over fewer seeds than the seed
// interval beside it.
BootstrapInterval documentBootstrap(const std::vector<RunSummary>& runs, const std::string& arm,
                                    const std::string& reference) {
  std::vector<std::pair<const RunSummary*, const RunSummary*>> pairs;
  for (const RunSummary& a : runs) {
    if (a.arm != arm || !a.finished) continue;
    const auto b = std::find_if(runs.begin(), runs.end(), [&](const RunSummary& b) {
      return b.arm == reference && b.seed == a.seed && b.finished;
    });
    if (b == runs.end()) continue;  // not a paired seed
    if (a.documentIds.empty() || a.documentIds != b->documentIds) return {};
    pairs.emplace_back(&a, &*b);
  }
  if (pairs.empty()) return {};
  // Resampling picks documents by index: every pair must have scored the same documents (a run evaluated
  // again on fewer tokens has not), or there is no document interval.
  for (const auto& pair : pairs)
    if (pair.first->documentIds != pairs.front().first->documentIds) return {};
  return clusterBootstrap(pairs.front().first->documentIds.size(), [&](std::span<const double> w) {
    auto nll = [&](const RunSummary& run) {
      double sum = 0, tokens = 0;
      for (size_t d = 0; d < w.size(); ++d)
        sum += w[d] * run.documentNll[d], tokens += w[d] * static_cast<double>(run.documentTokens[d]);
      return sum / tokens;
    };
    double total = 0;
    for (const auto& [a, b] : pairs) total += nll(*a) - nll(*b);
    return total / static_cast<double>(pairs.size());
  });
}

}  // namespace

std::optional<RunProtocol> runProtocolOf(const Json& run, int64_t context) {
  try {
    const Json& c = run.at("config");
    const Json& corpus = run.at("corpus");
    RunProtocol p;
    p.context = context;
    p.batchSize = c.at("batch_size").get<int64_t>();
    p.warmupSteps = c.at("warmup_steps").get<int64_t>();
    p.steps = c.at("steps").get<int64_t>();
    p.lr = c.at("lr").get<double>();
    p.minLrRatio = c.at("min_lr_ratio").get<double>();
    p.weightDecay = c.at("weight_decay").get<double>();
    p.beta1 = c.at("beta1").get<double>();
    p.beta2 = c.at("beta2").get<double>();
    p.gradClip = c.at("grad_clip").get<double>();
    p.corpusTrainTokens = corpus.at("train_tokens").get<int64_t>();
    p.validationTokens = corpus.at("validation_tokens").get<int64_t>();
    p.validationDocuments = corpus.at("validation_documents").get<int64_t>();
    return p;
  } catch (const Json::exception&) {
    return std::nullopt;  // written by an older version: the report states no protocol
  }
}

namespace {

// A run's run.json; nullopt when the run never started or the file is cut short.
std::optional<Json> readRunRecord(const fs::path& runJson) {
  if (!fs::exists(runJson)) return std::nullopt;
  try {
    return readJsonFile(runJson);
  } catch (const Error&) {
    return std::nullopt;
  }
}

// The source revisions that trained a run (its record's versions.source, then versions.resumed_by); empty
// when it records none ("unknown": built outside a git checkout; or it predates the record).
std::vector<std::string> runSourcesOf(const Json& run) {
  std::vector<std::string> sources;
  const auto add = [&](const Json& revision) {
    if (revision.is_string() && revision != "" && revision != "unknown" &&
        std::find(sources.begin(), sources.end(), revision.get<std::string>()) == sources.end())
      sources.push_back(revision.get<std::string>());
  };
  const auto versions = run.find("versions");
  if (versions == run.end() || !versions->is_object()) return sources;
  if (const auto source = versions->find("source"); source != versions->end()) add(*source);
  if (const auto resumed = versions->find("resumed_by"); resumed != versions->end() && resumed->is_array())
    for (const Json& revision : *resumed) add(revision);
  return sources;
}

}  // namespace

ExperimentReport reportExperiment(const fs::path& outDir) {
  const fs::path file = outDir / "experiment.json";
  if (!fs::exists(file))
    throw Error({.what = "not an experiment directory",
                 .where = outDir.string(),
                 .expected = "experiment.json",
                 .hint = "pass the --out of `sharelens experiment run`"});
  ExperimentReport r;
  r.experiment = experimentFromJson(experimentRecord(readJsonFile(file)), file.string(), outDir);
  const Experiment& e = r.experiment;
  r.complete = true;
  std::map<std::string, std::map<uint64_t, double>> nll;  // arm -> seed -> final NLL
  for (const ExperimentArm& arm : e.arms) {
    ArmSummary a;
    a.name = arm.name;
    a.matchedBaselineOf = arm.matchedBaselineOf;
    a.derivedFrom = arm.derive ? arm.derive->from + " (" + arm.derive->method + ")" : "";
    a.expect = arm.expect;
    a.margin = arm.margin;
    a.aaOf = arm.aaOf;
    a.paperEffect = arm.paperEffect;
    a.paperSource = arm.paperSource;
    const ParamBudget budget = countParameters(arm.topology);
    a.parameters = budget.total;
    a.nonEmbedding = budget.nonEmbedding;
    a.flopsPerToken = budget.trainFlopsPerToken;
    if (arm.derive)  // a shared model holds fewer unique parameters than its source: the runner records how
                     // many
      for (uint64_t seed : e.seeds)
        if (const fs::path f = experimentRunDirectory(outDir, arm.name, seed) / "derived.json";
            fs::exists(f)) {
          const Json d = readJsonFile(f);
          a.parameters = d.value("parameters", a.parameters);
          a.nonEmbedding = a.parameters - (budget.total - budget.nonEmbedding);
          break;
        }
    // A derived model has seen its source's training tokens plus those of its own post-training (PostShare),
    // whose runs are the run directories under its directory (two levels at most); its wall time is the
    // post-training's.
    auto lastPoint = [](const fs::path& runDir) -> std::optional<MetricPoint> {
      MetricsReader metrics(runDir / "metrics.jsonl");
      metrics.poll();
      if (metrics.points().empty()) return std::nullopt;
      return metrics.points().back();
    };
    auto derivedTraining = [&](const fs::path& dir, uint64_t seed) {
      std::pair<double, double> tokensAndSeconds{0, 0};
      if (auto source = lastPoint(experimentRunDirectory(outDir, arm.derive->from, seed)))
        tokensAndSeconds.first += source->tokens;
      std::error_code ec;
      for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        if (it.depth() >= 1) it.disable_recursion_pending();
        if (!isRunDirectory(it->path())) continue;
        if (auto p = lastPoint(it->path())) {
          tokensAndSeconds.first += p->tokens;
          tokensAndSeconds.second += p->elapsed;
        }
      }
      return tokensAndSeconds;
    };
    std::vector<double> finals;
    // tokens -> validation losses of the finished seeds: a run that failed or is still training would pull
    // the mean curve, and the equal-FLOPs budget read from it, short of the finished runs' schedule
    std::map<double, std::vector<double>> curve;
    for (uint64_t seed : e.seeds) {
      RunSummary run{arm.name, seed};
      const fs::path dir = experimentRunDirectory(outDir, arm.name, seed);
      if (const auto record = arm.derive ? std::nullopt : readRunRecord(dir / "run.json")) {
        if (!a.protocol) a.protocol = runProtocolOf(*record, arm.topology.model.context);
        const std::vector<std::string> sources = runSourcesOf(*record);
        for (const std::string& source : sources) ++r.runsBySource[source];
        r.runsWithoutSource += sources.empty() ? 1 : 0;
        r.runsOfSeveralSources += sources.size() > 1 ? 1 : 0;
      }
      if (fs::exists(dir / "metrics.jsonl")) {
        MetricsReader metrics(dir / "metrics.jsonl");
        metrics.poll();
        for (const MetricPoint& p : metrics.points()) {
          run.tokens = p.tokens;
          run.seconds = p.elapsed;
          if (std::isfinite(p.valLoss)) {
            run.curveTokens.push_back(p.tokens);
            run.curveValLoss.push_back(p.valLoss);
          }
        }
      }
      if (arm.derive) std::tie(run.tokens, run.seconds) = derivedTraining(dir, seed);
      run.failed = fs::exists(dir / kFailedRunFile);
      if (run.failed) {  // an outcome of the arm (or of its source), not a run still to do
        const Json record = readJsonFile(dir / kFailedRunFile);
        run.sourceDiverged = record.is_object() && record.value(kSourceDivergedField, false);
        (run.sourceDiverged ? a.sourceDivergedSeeds : a.divergedSeeds).push_back(seed);
        a.seconds += run.seconds;  // it trained until it diverged
      } else if (fs::exists(dir / "eval.json")) {
        const Json ev = readJsonFile(dir / "eval.json");
        const auto found = ev.is_object() ? ev.find("nll") : ev.end();
        if (found == ev.end() || !found->is_number())
          throw Error({.what = "a run's evaluation holds no held-out loss",
                       .where = (dir / "eval.json").string() + ": \"nll\"",
                       .expected = "a number (nats/token)",
                       .found = found == ev.end() ? "no such field" : found->dump(),
                       .hint = "null is a loss that was not finite; evaluate the run again with "
                               "`sharelens eval`, or remove eval.json to train and evaluate it anew"});
        run.finalNll = found->get<double>();
        run.finished = true;
        if (ev.contains("document_nll") && ev.contains("document_tokens") && ev.contains("document_ids")) {
          try {
            run.documentIds = ev["document_ids"].get<std::vector<std::string>>();
            run.documentNll = ev["document_nll"].get<std::vector<double>>();
            run.documentTokens = ev["document_tokens"].get<std::vector<int64_t>>();
          } catch (const Json::exception& error) {
            throw Error(
                {.what = "a run's per-document sums are malformed",
                 .where = (dir / "eval.json").string(),
                 .expected = "document_ids (strings), document_nll (numbers), document_tokens (integers)",
                 .found = error.what(),
                 .hint = "remove eval.json to evaluate the run again"});
          }
          if (run.documentNll.size() != run.documentIds.size() ||
              run.documentTokens.size() != run.documentIds.size())
            throw Error({.what = "a run's per-document sums differ in length",
                         .where = (dir / "eval.json").string(),
                         .expected = std::to_string(run.documentIds.size()) + " of each",
                         .found = std::to_string(run.documentNll.size()) + " sums, " +
                                  std::to_string(run.documentTokens.size()) + " counts",
                         .hint = "remove eval.json to evaluate the run again"});
        }
        finals.push_back(run.finalNll);
        nll[arm.name][seed] = run.finalNll;
        for (size_t i = 0; i < run.curveTokens.size(); ++i)
          curve[run.curveTokens[i]].push_back(run.curveValLoss[i]);
        a.tokens = std::max(a.tokens, run.tokens);
        a.seconds += run.seconds;
      } else {
        r.complete = false;
      }
      r.runs.push_back(std::move(run));
    }
    a.finishedSeeds = static_cast<int>(finals.size());
    a.nll = meanInterval(finals);
    for (const auto& [tokens, losses] : curve) {
      if (losses.size() != finals.size()) continue;  // a point every finished seed has reached
      const MeanInterval m = meanInterval(losses);
      a.curveTokens.push_back(tokens);
      a.curveMean.push_back(m.mean);
      a.curveSd.push_back(m.sd);
    }
    r.arms.push_back(std::move(a));
  }
  const auto reference =
      std::find_if(r.arms.begin(), r.arms.end(), [&](const ArmSummary& a) { return a.name == e.reference; });
  const bool referenceDiverged = reference != r.arms.end() && !reference->divergedSeeds.empty();
  for (ArmSummary& a : r.arms) {  // paired over the seeds both arms finished
    if (a.name == e.reference) continue;
    for (uint64_t seed : e.seeds)
      if (nll[a.name].count(seed) && nll[e.reference].count(seed))
        a.differences.push_back(nll[a.name][seed] - nll[e.reference][seed]);
    a.difference = meanInterval(a.differences);
    a.documentDifference = documentBootstrap(r.runs, a.name, e.reference);
    a.verdict = verdictOf(a.difference);
    a.claim = claimOutcomeWithDivergence(a.expect, a.difference, a.margin, !a.divergedSeeds.empty(),
                                         referenceDiverged);
    if (a.difference.n >= kFewestSeedsForAnInterval && a.asksForSeeds()) {
      a.sizingSd = sizingSd(a.difference.sd, a.difference.n - 1, e.plan.sdConfidence);
      a.seedsForTarget = seedsForHalfWidth(a.sizingSd, e.plan.targetHalfWidth);
    }
  }
  return r;
}

std::string_view claimOutcomeName(ClaimOutcome c) {
  constexpr std::string_view names[] = {"not stated", "holds", "does not hold", "inconclusive"};
  return names[static_cast<int>(c)];
}

ClaimOutcome claimOutcome(const std::string& expect, const MeanInterval& difference, double margin) {
  if (expect.empty()) return ClaimOutcome::NotStated;
  if (!std::isfinite(difference.halfWidth)) return ClaimOutcome::Inconclusive;  // fewer than 2 paired seeds
  if (expect == "no-worse") {  // non-inferiority: the whole interval at or below the margin; with a margin of
                               // 0, a superiority test: the whole interval below 0, as the verdict "better"
    if (margin == 0 ? difference.hi() < 0 : difference.hi() <= margin) return ClaimOutcome::Holds;
    return difference.lo() > margin ? ClaimOutcome::DoesNotHold : ClaimOutcome::Inconclusive;
  }
  const Verdict v = verdictOf(difference);
  if (v == Verdict::Inconclusive) return ClaimOutcome::Inconclusive;
  return (expect == "better") == (v == Verdict::Better) ? ClaimOutcome::Holds : ClaimOutcome::DoesNotHold;
}

ClaimOutcome claimOutcomeWithDivergence(const std::string& expect, const MeanInterval& difference,
                                        double margin, bool armDiverged, bool referenceDiverged) {
  const ClaimOutcome c = claimOutcome(expect, difference, margin);
  if (c != ClaimOutcome::Holds && c != ClaimOutcome::DoesNotHold) return c;
  const bool favoursArm = (expect == "worse") == (c == ClaimOutcome::DoesNotHold);
  return (favoursArm ? armDiverged : referenceDiverged) ? ClaimOutcome::Inconclusive : c;
}

namespace {

// "seeds 4 and 7 of 13", "seed 4 of 13"; "" for none.
std::string seedListText(const std::vector<uint64_t>& list, size_t seeds) {
  if (list.empty()) return "";
  std::string text;
  for (size_t i = 0; i < list.size(); ++i)
    text += (i == 0 ? "" : i + 1 == list.size() ? " and " : ", ") + std::to_string(list[i]);
  return (list.size() == 1 ? "seed " : "seeds ") + text + " of " + std::to_string(seeds);
}

}  // namespace

std::string ArmSummary::divergedSeedsText(size_t seeds) const {
  return seedListText(divergedSeeds, seeds);
}

namespace {

// A validation curve (loss at tokens) read at a training-FLOPs budget, linearly between its points; NaN
// before the first point (not measured) and beyond the last.
double curveAtFlops(const std::vector<double>& tokens, const std::vector<double>& loss, double flopsPerToken,
                    double flops) {
  for (size_t i = 0; i < tokens.size() && i < loss.size(); ++i) {
    const double f = tokens[i] * flopsPerToken;
    if (f < flops) continue;
    if (i == 0) return flops == f ? loss[0] : NAN;
    const double f0 = tokens[i - 1] * flopsPerToken, t = (flops - f0) / (f - f0);
    return loss[i - 1] + t * (loss[i] - loss[i - 1]);
  }
  return NAN;
}

// " Wider than the plan's target ...": for an interval wider than the target, empty otherwise.
std::string widerThanTargetText(const ArmSummary& a, const PlanSpec& plan) {
  const MeanInterval& difference = a.difference;
  const double target = plan.targetHalfWidth;
  if (!(difference.halfWidth > target)) return "";
  const int seeds = a.seedsForTarget;
  return " Its interval is wider than the plan's target of ±" + formatNumber(target, "%g") +
         ": at its seed spread (sd " + formatNumber(difference.sd, "%.4f") + a.sizingBoundText(plan) +
         "), that needs " + (seeds > 0 ? std::to_string(seeds) : "more than 1000") +
         " seeds at this budget, against " + std::to_string(difference.n) + " paired seeds.";
}

// " (seed 4 of 13 diverged)" after an arm's difference; "" when none did.
std::string divergedNote(const ArmSummary& a, size_t seeds) {
  return a.divergedSeeds.empty() ? "" : " (" + a.divergedSeedsText(seeds) + " diverged)";
}

// An arm's diverged runs, after what its interval says: they are not in it, and what that does to its claim.
std::string divergenceText(const ArmSummary& a, size_t seeds) {
  if (a.divergedSeeds.empty()) return "";
  std::string text =
      " **It diverged in " + a.divergedSeedsText(seeds) +
      "**: those runs' losses are not finite, so they pair with nothing, and the interval is over "
      "the seeds that finished, leaving the instability out";
  // The interval's own outcome, where the arm's divergence made it inconclusive (it favoured the arm).
  const ClaimOutcome alone = claimOutcome(a.expect, a.difference, a.margin);
  if (!a.expect.empty() && a.claim == ClaimOutcome::Inconclusive && alone != a.claim &&
      claimOutcomeWithDivergence(a.expect, a.difference, a.margin, true, false) == ClaimOutcome::Inconclusive)
    text += "; its interval alone would say the claim (" + a.expect + ") " +
            std::string(claimOutcomeName(alone)) + ", which its diverged runs leave open";
  return text + ".";
}

}  // namespace

std::string ArmSummary::sizingBoundText(const PlanSpec& plan) const {
  if (!(plan.sdConfidence > 0)) return "";
  return "; " + formatNumber(sizingSd, "%.4f") + " at its " + formatNumber(100 * plan.sdConfidence, "%g") +
         "% upper confidence bound, which `experiment plan` sizes seeds from";
}

std::string ArmSummary::paperEffectPlacement() const {
  if (!paperEffect || !std::isfinite(difference.halfWidth)) return "";
  if (*paperEffect < difference.lo()) return "below";
  if (*paperEffect > difference.hi()) return "above";
  return "inside";
}

double ArmSummary::lossAtFlops(double flops) const {
  return curveAtFlops(curveTokens, curveMean, flopsPerToken, flops);
}

double ExperimentReport::commonFlops() const {
  double common = INFINITY;
  for (const ArmSummary& a : arms)
    if (!a.curveTokens.empty() && a.derivedFrom.empty())
      common = std::min(common, a.curveTokens.back() * a.flopsPerToken);
  return std::isfinite(common) ? common : NAN;
}

MeanInterval ExperimentReport::equalFlopsDifference(const ArmSummary& arm, double flops) const {
  const ArmSummary* reference = nullptr;
  for (const ArmSummary& a : arms)
    if (a.name == experiment.reference) reference = &a;
  std::vector<double> differences;
  if (!reference || !std::isfinite(flops)) return meanInterval(differences);
  for (const RunSummary& a : runs) {
    if (a.arm != arm.name || !a.finished) continue;  // as the final NLLs: finished runs, paired by seed
    for (const RunSummary& b : runs)
      if (b.arm == reference->name && b.seed == a.seed && b.finished) {
        const double d = curveAtFlops(a.curveTokens, a.curveValLoss, arm.flopsPerToken, flops) -
                         curveAtFlops(b.curveTokens, b.curveValLoss, reference->flopsPerToken, flops);
        if (std::isfinite(d)) differences.push_back(d);
      }
  }
  return meanInterval(differences);
}

Json ExperimentReport::toJson() const {
  auto number = [](double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); };
  auto interval = [&](const MeanInterval& m) {
    return Json{{"n", m.n},
                {"mean", number(m.mean)},
                {"sd", number(m.sd)},
                {"ci95", {number(m.lo()), number(m.hi())}}};
  };
  Json arms = Json::array();
  for (const ArmSummary& a : this->arms) {
    std::vector<double> flops;
    for (double t : a.curveTokens) flops.push_back(t * a.flopsPerToken);
    Json j = {
        {"name", a.name},
        {"parameters", a.parameters},
        {"non_embedding_parameters", a.nonEmbedding},
        {"train_flops_per_token", a.flopsPerToken},
        {"tokens", a.tokens},
        {"train_flops", a.tokens * a.flopsPerToken},
        {"wall_seconds", a.seconds},
        {"seeds_finished", a.finishedSeeds},
        {"seeds_diverged", a.divergedSeeds},
        {"seeds_source_diverged", a.sourceDivergedSeeds},
        {"expect", a.expect},
        {"margin", a.margin},
        {"claim", std::string(claimOutcomeName(a.claim))},
        {"final_nll", interval(a.nll)},
        {"curve",
         {{"tokens", a.curveTokens}, {"flops", flops}, {"mean_val_loss", a.curveMean}, {"sd", a.curveSd}}}};
    if (!a.matchedBaselineOf.empty()) j["matched_baseline_of"] = a.matchedBaselineOf;
    if (!a.derivedFrom.empty()) j["derived_from"] = a.derivedFrom;
    if (!a.aaOf.empty()) j["aa_of"] = a.aaOf;
    if (a.paperEffect) j["paper_effect"] = {{"difference", *a.paperEffect}, {"source", a.paperSource}};
    if (a.aaOf == experiment.reference)
      j["aa_check"] = !std::isfinite(a.difference.halfWidth)             ? "no interval"
                      : a.difference.lo() <= 0 && a.difference.hi() >= 0 ? "contains 0"
                                                                         : "excludes 0";
    if (a.name != experiment.reference && a.derivedFrom.empty() && std::isfinite(commonFlops()))
      j["equal_flops"] = {{"flops", commonFlops()},
                          {"validation_loss", number(a.lossAtFlops(commonFlops()))},
                          {"difference", interval(equalFlopsDifference(a, commonFlops()))}};
    if (a.name != experiment.reference)
      j["vs_reference"] = {{"paired_differences", a.differences},
                           {"difference", interval(a.difference)},
                           {"difference_document_bootstrap",
                            {{"estimate", number(a.documentDifference.estimate)},
                             {"ci95", {number(a.documentDifference.lo), number(a.documentDifference.hi)}},
                             {"documents", a.documentDifference.clusters},
                             {"resamples", a.documentDifference.resamples}}},
                           {"verdict", std::string(verdictName(a.verdict))}};
    if (a.name != experiment.reference && a.asksForSeeds() && std::isfinite(a.difference.sd))
      j["vs_reference"]["seeds_for_target"] = {
          {"half_width", experiment.plan.targetHalfWidth},
          {"sizing_sd", number(a.sizingSd)},
          {"sd_confidence", experiment.plan.sdConfidence},
          {"seeds", a.seedsForTarget > 0 ? Json(a.seedsForTarget) : Json(nullptr)}};
    arms.push_back(j);
  }
  Json runs = Json::array();
  for (const RunSummary& s : this->runs)
    runs.push_back({{"arm", s.arm},
                    {"seed", s.seed},
                    {"finished", s.finished},
                    {"final_nll", number(s.finalNll)},
                    {"failed", s.failed},
                    {"tokens", s.tokens},
                    {"seconds", s.seconds}});
  return {{"schema", "sharelens.experiment-report/1"},
          {"experiment", experiment.name},
          {"claim",
           {{"paper", experiment.claim.paper},
            {"section", experiment.claim.section},
            {"statement", experiment.claim.statement},
            {"number", experiment.claim.number}}},
          {"reference", experiment.reference},
          {"corpus", experiment.corpus},
          {"seeds", experiment.seeds},
          {"complete", complete},
          {"runs_by_source", runsBySource},
          {"runs_without_source", runsWithoutSource},
          {"arms", arms},
          {"runs", runs}};
}

std::string ExperimentReport::protocolText() const {
  const Experiment& e = experiment;
  const ArmSummary* first = nullptr;  // the reference's protocol, else the first arm's that has one
  for (const ArmSummary& a : arms)
    if (a.protocol && (!first || a.name == e.reference)) first = &a;
  if (!first) return "";
  const RunProtocol& p = *first->protocol;
  const double passes = p.corpusTrainTokens > 0 ? static_cast<double>(p.steps * p.batchSize * p.context) /
                                                      static_cast<double>(p.corpusTrainTokens)
                                                : NAN;
  std::string text =
      "the " + e.corpus + " corpus (" + formatNumber(static_cast<double>(p.corpusTrainTokens) / 1e6, "%.2f") +
      "M training tokens), " + std::to_string(p.steps) + " steps of " + std::to_string(p.batchSize) + " x " +
      std::to_string(p.context) + " tokens per run" +
      (std::isfinite(passes) ? " (" + formatNumber(passes, "%.2f") + " passes over it)" : "") + "; " +
      (e.evalTokens == kEveryHeldOutToken
           ? "every held-out document scored (" + std::to_string(p.validationDocuments) + " documents, " +
                 std::to_string(p.validationTokens) + " tokens)"
           : std::to_string(e.evalTokens) + " held-out tokens scored") +
      "; AdamW (beta " + formatNumber(p.beta1, "%g") + ", " + formatNumber(p.beta2, "%g") +
      ", weight decay " + formatNumber(p.weightDecay, "%g") + "), gradients clipped at norm " +
      formatNumber(p.gradClip, "%g") + ", linear warmup over " + std::to_string(p.warmupSteps) +
      " steps, then cosine decay to " + formatNumber(p.minLrRatio, "%g") +
      " of the peak learning rate at the last step.";
  // Each trained arm's peak learning rate (the one `experiment plan`'s sweep chose, where it chose), and any
  // other difference of its runs' options from the first's.
  std::string lrs, differing;
  bool chosen = false;
  std::set<double> distinct;
  for (const ArmSummary& a : arms) {
    if (!a.protocol) continue;
    const RunProtocol& q = *a.protocol;
    distinct.insert(q.lr);
    lrs += (lrs.empty() ? "" : ", ") + a.name + " " + formatNumber(q.lr, "%g");
    chosen = chosen || e.arm(a.name).lr.has_value();
    if (q.steps != p.steps || q.batchSize != p.batchSize || q.warmupSteps != p.warmupSteps ||
        q.context != p.context || q.minLrRatio != p.minLrRatio || q.weightDecay != p.weightDecay)
      differing += (differing.empty() ? "" : "; ") + a.name + ": " + std::to_string(q.steps) + " steps of " +
                   std::to_string(q.batchSize) + ", warmup " + std::to_string(q.warmupSteps);
  }
  text +=
      " Peak learning rate: " +
      (distinct.size() == 1 ? formatNumber(*distinct.begin(), "%g") + " for every arm" : lrs) +
      (chosen ? " (set per arm, as `experiment plan`'s sweep chooses them)." : " (the file's, not swept).");
  if (!differing.empty()) text += " Arms trained otherwise: " + differing + ".";
  if (const std::string source = sourceText(); !source.empty()) text += " " + source;
  return text;
}

std::string ExperimentReport::sourceText() const {
  if (runsBySource.empty()) return "";
  const auto runs = [](int n) { return std::to_string(n) + (n == 1 ? " run" : " runs"); };
  std::string list;
  for (const auto& [source, count] : runsBySource)
    list += (list.empty() ? "" : ", ") + source + (runsBySource.size() > 1 ? " (" + runs(count) + ")" : "");
  std::string notes;
  if (runsOfSeveralSources > 0)
    notes += "; " + runs(runsOfSeveralSources) + " resumed by another revision " +
             (runsOfSeveralSources == 1 ? "counts" : "count") + " under each";
  if (runsWithoutSource > 0)
    notes += "; " + runs(runsWithoutSource) + (runsWithoutSource == 1 ? " does" : " do") + " not record it";
  return "Trained by ShareLens source " + list + notes + ".";
}

std::string ExperimentReport::toMarkdown(const std::string& reproduce) const {
  const Experiment& e = experiment;
  std::string md = "## " + e.name + "\n\n";
  if (!e.claim.paper.empty())
    md += "**Claim** (" + e.claim.paper + (e.claim.section.empty() ? "" : ", " + e.claim.section) +
          "): " + e.claim.statement +
          (e.claim.number.empty() ? "" : " The paper reports: " + e.claim.number) + "\n\n";
  if (!e.description.empty()) md += e.description + "\n\n";
  if (const std::string protocol = protocolText(); !protocol.empty())
    md += "**As run**: " + protocol + "\n\n";
  md +=
      "Held-out NLL (nats/token) of the final checkpoint, mean and 95% interval (Student t) over " +
      std::to_string(e.seeds.size()) + " seeds; differences paired by seed against **" + e.reference +
      "**; " + formatNumber(static_cast<double>(e.tokens) / 1e6, "%.2f") + "M training tokens per run on " +
      e.corpus +
      ". Beside each paired difference, \"documents [lo, hi]\" is its 95% percentile bootstrap over the "
      "held-out documents (2,000 resamples): how far other text of the same kind could move it, the trained "
      "models held fixed. It leaves the seeds' training noise out, so it is no test of a difference: an A/A "
      "arm's can exclude 0.\n\n";
  md += "| arm | parameters (non-embedding) | FLOPs/token | tokens | final NLL | vs " + e.reference +
        " (per seed) | verdict | claim | wall time |\n";
  md += "| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (const ArmSummary& a : arms) {
    std::string missing;  // the seeds with no loss, and why
    if (!a.divergedSeeds.empty()) missing += "; " + a.divergedSeedsText(e.seeds.size()) + " diverged";
    if (!a.sourceDivergedSeeds.empty())
      missing +=
          "; " + seedListText(a.sourceDivergedSeeds, e.seeds.size()) + " not derived: the source diverged";
    const std::string nllText =
        a.nll.n == 0 ? (missing.empty() ? "not run" : "no loss (" + missing.substr(2) + ")")
                     : formatNumber(a.nll.mean, "%.4f") + " ± " + formatNumber(a.nll.halfWidth, "%.4f") +
                           " (" + std::to_string(a.nll.n) + " seeds" + missing + ")";
    std::string diff = "reference", verdict = "";
    if (a.name != e.reference) {
      diff = a.difference.n == 0 ? "n/a"
                                 : formatNumber(a.difference.mean, "%+.4f") + " ± " +
                                       formatNumber(a.difference.halfWidth, "%.4f");
      std::string seeds;
      for (double d : a.differences) seeds += (seeds.empty() ? "" : ", ") + formatNumber(d, "%+.3f");
      if (!seeds.empty()) diff += " (" + seeds + ")";
      if (std::isfinite(a.documentDifference.lo))
        diff += "; documents [" + formatNumber(a.documentDifference.lo, "%+.4f") + ", " +
                formatNumber(a.documentDifference.hi, "%+.4f") + "]";
      verdict = std::string(verdictName(a.verdict));
    }
    const std::string label =
        a.name + (a.matchedBaselineOf.empty() ? "" : " (matched to " + a.matchedBaselineOf + ")") +
        (a.derivedFrom.empty() ? "" : " (from " + a.derivedFrom + ")") +
        (a.aaOf.empty() ? "" : " (A/A: " + a.aaOf + " re-initialised)");
    md += "| " + label + " | " + formatNumber(static_cast<double>(a.parameters) / 1e6, "%.3f") + "M (" +
          formatNumber(static_cast<double>(a.nonEmbedding) / 1e6, "%.3f") + "M) | " +
          formatNumber(a.flopsPerToken / 1e6, "%.1f") + "M | " + formatNumber(a.tokens / 1e6, "%.2f") +
          "M | " + nllText + " | " + diff + " | " + verdict + " | " +
          (a.expect.empty()
               ? ""
               : "expected " + a.expect +
                     (a.expect == "no-worse" ? " (margin " + formatNumber(a.margin, "%g") + ")" : "") + ": " +
                     std::string(claimOutcomeName(a.claim))) +
          " | " + formatNumber(a.seconds / 60.0, "%.1f") + " min (all seeds) |\n";
  }
  // What the numbers say about the claim, plainly.
  md += "\n";
  for (const ArmSummary& a : arms) {
    if (a.name == e.reference || !a.aaOf.empty()) continue;  // A/A arms: below
    md += "- **" + a.name + "** vs **" + e.reference + "**: ";
    const bool interval = std::isfinite(a.difference.halfWidth);
    if (!interval)
      md += "no interval: " + std::to_string(a.differences.size()) +
            " paired seed(s), and an interval needs 2 or more.";
    else if (a.verdict == Verdict::Better)
      md += "lower loss, with the whole 95% interval of the paired difference below zero.";
    else if (a.verdict == Verdict::Worse)
      md += "higher loss, with the whole 95% interval of the paired difference above zero.";
    else
      md += "inconclusive at 95%: the interval of the paired difference contains zero at this scale.";
    const std::string margin = a.expect == "no-worse"
                                   ? " (non-inferiority with a margin of " + formatNumber(a.margin, "%g") +
                                         " nats/token: the whole interval at or below it)"
                                   : "";
    if (a.claim == ClaimOutcome::Holds)
      md += " The paper's claim (" + a.expect + ") **holds** here" + margin + ".";
    if (a.claim == ClaimOutcome::DoesNotHold)
      md += " The paper's claim (" + a.expect + ") **does not hold** at this scale" + margin + ".";
    if (a.claim == ClaimOutcome::Inconclusive)
      md += " The paper's claim (" + a.expect + ") can be neither confirmed nor refuted at this scale" +
            margin + ".";
    if (a.paperEffect) {
      md += " The paper's own difference: " + formatNumber(*a.paperEffect, "%+.4f") + " nats" +
            (a.paperSource.empty() ? "" : " (" + a.paperSource + ")");
      // Where the paper's effect falls against ours, whatever the claim tested: a no-worse claim can hold
      // while the paper's improvement is excluded, and a reader choosing a design needs both.
      const std::string placement = a.paperEffectPlacement();
      if (placement == "below")
        md += ", below our whole interval: against the reference, this arm does worse here than in the paper";
      else if (placement == "above")
        md +=
            ", above our whole interval: against the reference, this arm does better here than in the paper";
      else if (placement == "inside")
        md += ", inside our interval: consistent with it";
      md += ".";
    }
    md += widerThanTargetText(a, e.plan) + divergenceText(a, e.seeds.size()) + "\n";
  }
  for (const ArmSummary& a : arms)
    if (a.name == e.reference && !a.divergedSeeds.empty())
      md +=
          "- **" + a.name + "**, the reference, diverged in " + a.divergedSeedsText(e.seeds.size()) +
          ": every arm's paired differences leave those seeds out, and an outcome that favours the reference "
          "(a claim of worse that holds, of better or no worse that does not) is called inconclusive.\n";
  // What the A/A interval's width says. Arms derived from the reference's own source models are paired with
  // it through those sources, so the spread between sources cancels from their differences; the A/A arm of a
  // derived reference derives from other sources and carries that spread, so its width is not their
  // resolution.
  const auto aaResolutionText = [&](const ArmSummary& aa) -> std::string {
    if (aa.derivedFrom.empty())
      return "at its spread (sd " + formatNumber(aa.difference.sd, "%.4f") + "), " +
             std::to_string(aa.difference.n) + " paired seeds detect a true difference of " +
             formatNumber(minimumDetectableEffect(aa.difference.sd, aa.difference.n), "%.4f") +
             " nats 80% of the time (the minimum detectable effect of an arm that trains as steadily as the "
             "reference; one of the half-width's size is detected half the time)";
    return "it derives from other source models (" + aa.derivedFrom +
           "), so its interval carries the spread between source models, which the arms derived from the "
           "reference's own sources cancel: it checks the derivation for bias, and each of those arms "
           "resolves effects down to its own half-width";
  };
  for (const ArmSummary& a : arms) {
    if (a.aaOf != e.reference) continue;
    md += "- **A/A check** (" + a.name + ": " + e.reference +
          " again with other initialisation seeds, the same data order): ";
    if (!std::isfinite(a.difference.halfWidth))
      md += "no interval (fewer than 2 paired seeds).";
    else if (a.difference.lo() <= 0 && a.difference.hi() >= 0)
      md += "the 95% interval of the paired difference, " + formatNumber(a.difference.mean, "%+.4f") + " ± " +
            formatNumber(a.difference.halfWidth, "%.4f") + ", contains 0, as it must when nothing differs; " +
            aaResolutionText(a) + ".";
    else
      md += "the 95% interval of the paired difference, " + formatNumber(a.difference.mean, "%+.4f") + " ± " +
            formatNumber(a.difference.halfWidth, "%.4f") +
            ", **excludes 0** although nothing differs: initialisation alone moves the loss more than the "
            "interval allows (1 in 20 by chance at 95%); read every verdict above with that in mind.";
    // A derived A/A arm is wide by construction (above); seeds to narrow it are not what the plan sized.
    md += (a.asksForSeeds() ? widerThanTargetText(a, e.plan) : "") + divergenceText(a, e.seeds.size()) + "\n";
  }
  // Equal training FLOPs: every arm's mean validation loss at the smallest final FLOPs any arm reached, and
  // its difference from the reference there, paired by seed.
  const double common = commonFlops();
  if (std::isfinite(common) && arms.size() > 1) {
    md += "\nAt equal training FLOPs (" + formatNumber(common, "%.3g") +
          ", the smallest budget any arm reached), mean validation loss";
    md += " (and minus " + e.reference + ", paired by seed over the seeds both finished, 95%):";
    std::string midSchedule;  // arms read before their schedule's end, and where
    for (const ArmSummary& a : arms) {
      if (!a.derivedFrom.empty()) continue;
      md += " " + a.name + " " + formatNumber(a.lossAtFlops(common), "%.4f");
      const MeanInterval d = equalFlopsDifference(a, common);
      if (a.name != e.reference && std::isfinite(d.halfWidth)) {
        md += " (" + formatNumber(d.mean, "%+.4f") + " ± " + formatNumber(d.halfWidth, "%.4f") + ", " +
              std::to_string(d.n) + " seeds";
        if (a.aaOf == e.reference)
          md += d.lo() <= 0 && d.hi() >= 0 ? "; A/A: contains 0"
                                           : "; A/A: **excludes 0** although nothing differs";
        md += ")";
      }
      md += ";";
      const double trained = a.curveTokens.empty() ? NAN : a.curveTokens.back() * a.flopsPerToken;
      if (trained > common * 1.001)
        midSchedule += (midSchedule.empty() ? " " : ", ") + a.name + " at " +
                       formatNumber(100.0 * common / trained, "%.0f") + "%";
    }
    md.back() = '.';  // the last arm's ';'
    if (!midSchedule.empty())
      md +=
          " Arms that cost more per token are read there before the end of their schedule, their learning "
          "rate not yet decayed, which favours the cheaper arms: this line compares budgets, the final NLLs "
          "above compare the trained models (read at this share of their training:" +
          midSchedule + ").";
    md += "\n";
  }
  if (!complete) md += "\n*Incomplete: not every arm and seed has finished.*\n";
  md += "\nReproduce: `" + reproduce + "`\n\n";
  return md;
}

std::string ExperimentReport::summaryHeader() {
  return "| experiment | tokens per run (per parameter) | seeds | paired half-width (goal ≤ target) | A/A | "
         "compared arms: difference, verdict, claim | training time, all runs |\n"
         "| --- | --- | --- | --- | --- | --- | --- |\n";
}

std::string ExperimentReport::summaryRow() const {
  const Experiment& e = experiment;
  std::string anchor;  // GitHub's: lower case, spaces to hyphens, other punctuation dropped
  for (const char c : e.name)
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_')
      anchor += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else if (c == ' ')
      anchor += '-';
  int64_t largest = 0;
  double seconds = 0;
  for (const ArmSummary& a : arms) largest = std::max(largest, a.parameters), seconds += a.seconds;
  double narrowest = INFINITY, widest = -INFINITY;
  std::string compared, aa = "none";
  for (const ArmSummary& a : arms) {
    if (a.name == e.reference) continue;
    const bool interval = std::isfinite(a.difference.halfWidth);
    const std::string difference = interval ? formatNumber(a.difference.mean, "%+.4f") + " ± " +
                                                  formatNumber(a.difference.halfWidth, "%.4f")
                                            : "no interval";
    if (a.aaOf == e.reference) {
      aa = difference +
           (!interval                                          ? ""
            : a.difference.lo() <= 0 && a.difference.hi() >= 0 ? " (contains 0)"
                                                               : " (**excludes 0**)") +
           divergedNote(a, e.seeds.size());
      continue;
    }
    if (!a.aaOf.empty()) continue;
    if (interval) {
      narrowest = std::min(narrowest, a.difference.halfWidth);
      widest = std::max(widest, a.difference.halfWidth);
    }
    compared += (compared.empty() ? "" : "; ") + a.name + " " + difference + divergedNote(a, e.seeds.size()) +
                ", " + std::string(verdictName(a.verdict)) +
                (a.expect.empty() ? "" : ", " + a.expect + " " + std::string(claimOutcomeName(a.claim))) +
                (a.paperEffectPlacement().empty() ? ""
                                                  : " (paper " + formatNumber(*a.paperEffect, "%+.3f") +
                                                        ": " + a.paperEffectPlacement() + ")");
  }
  for (const ArmSummary& a : arms)
    if (a.name == e.reference && !a.divergedSeeds.empty())
      compared +=
          (compared.empty() ? "" : "; ") + a.name + ", the reference" + divergedNote(a, e.seeds.size());
  const std::string widths = !std::isfinite(widest) ? "no interval"
                             : narrowest == widest
                                 ? formatNumber(widest, "%.4f")
                                 : formatNumber(narrowest, "%.4f") + "–" + formatNumber(widest, "%.4f");
  return "| [" + e.name + "](#" + anchor + ") | " +
         formatNumber(static_cast<double>(e.tokens) / 1e6, "%.2f") + "M (" +
         formatNumber(largest > 0 ? static_cast<double>(e.tokens) / static_cast<double>(largest) : NAN,
                      "%.1f") +
         ") | " + std::to_string(e.seeds.size()) + " | " + widths + " (" +
         formatNumber(e.plan.targetHalfWidth, "%g") + ") | " + aa + " | " + compared + " | " +
         formatNumber(seconds / 60.0, "%.0f") + " min" + (complete ? "" : " (incomplete)") + " |\n";
}

}  // namespace sharelens
