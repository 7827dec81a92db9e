// An experiment's report (core/experiment.hpp): each run's summary read from its directory, each arm's mean
// held-out NLL and its paired difference from the reference with intervals over seeds and over documents,
// the paper's claim judged from them, and the same at equal training FLOPs; as JSON and as the Markdown of a
// docs/CLAIMS.md section.
#pragma once

#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/experiment.hpp"
#include "core/json_util.hpp"
#include "core/statistics.hpp"

namespace sharelens {

struct RunSummary {
  std::string arm;
  uint64_t seed = 0;
  bool finished = false;        // trained to the end and evaluated
  bool failed = false;          // kFailedRunFile: diverged, or its source did (not retried)
  bool sourceDiverged = false;  // a derived run not derived: its source run diverged (kSourceDivergedField)
  double finalNll = NAN;        // held-out NLL of the final checkpoint (eval.json)
  // Its per-document sums (eval.json's document_ids, document_nll, document_tokens; empty in evaluations
  // written before they were kept).
  std::vector<std::string> documentIds;
  std::vector<double> documentNll;
  std::vector<int64_t> documentTokens;
  double tokens = 0, seconds = 0;
  std::vector<double> curveTokens, curveValLoss;  // the validation losses logged during training
};

// Whether the paper's claim about an arm holds at this scale, from the 95% interval of the paired difference
// (arm - reference): "better" holds when the whole interval is below zero, "worse" when above; "no-worse" is
// a non-inferiority claim, holding when the whole interval is at or below the margin (below it when the
// margin is 0, which makes it a superiority test) and failing when the whole interval is above it. Without an
// interval (fewer than 2 paired seeds) every claim is inconclusive.
enum class ClaimOutcome : uint8_t { NotStated, Holds, DoesNotHold, Inconclusive };
std::string_view claimOutcomeName(ClaimOutcome c);
ClaimOutcome claimOutcome(const std::string& expect, const MeanInterval& difference, double margin);
// The same when runs diverged: a diverged run pairs with nothing, so the interval leaves out an instability
// that counts against the arm that diverged. An outcome that favours the arm (a claim of better or no worse
// that holds, a claim of worse that does not) is inconclusive when the arm diverged in any seed, and one that
// favours the reference when the reference did; the other way round the divergence only adds to what the
// interval found.
ClaimOutcome claimOutcomeWithDivergence(const std::string& expect, const MeanInterval& difference,
                                        double margin, bool armDiverged, bool referenceDiverged);

// How an arm's runs were trained, from the first of its run directories' run.json ("config", "corpus"): what
// the report states as the protocol, so that it says what ran (the planned budget, each arm's chosen learning
// rate) rather than what the experiment file asked before `experiment plan` resized it.
struct RunProtocol {
  int64_t batchSize = 0, context = 0, warmupSteps = 0, steps = 0;
  double lr = NAN, minLrRatio = NAN, weightDecay = NAN, beta1 = NAN, beta2 = NAN, gradClip = NAN;
  int64_t corpusTrainTokens = 0, validationTokens = 0, validationDocuments = 0;
};
// nullopt when the record lacks a field (written by an older version).
std::optional<RunProtocol> runProtocolOf(const Json& run, int64_t context);

struct ArmSummary {
  std::string name, matchedBaselineOf, derivedFrom, expect, aaOf;
  std::optional<RunProtocol> protocol;  // trained arms with a run that started
  std::optional<double> paperEffect;    // ExperimentArm::paperEffect
  std::string paperSource;
  double margin = 0;  // of a no-worse claim
  ClaimOutcome claim = ClaimOutcome::NotStated;
  int64_t parameters = 0, nonEmbedding = 0;
  double flopsPerToken = 0, tokens = 0, seconds = 0;
  MeanInterval nll;         // final held-out NLL over seeds
  MeanInterval difference;  // paired (arm - reference) over the seeds both finished
  // The same paired difference (mean over those seeds of arm - reference NLL) with a percentile bootstrap
  // over held-out documents: how much the comparison could move on other text of the same kind, beside the
  // seed interval's training noise. NaN bounds when the runs' evaluations kept no per-document sums or were
  // not on the same documents.
  BootstrapInterval documentDifference;
  std::vector<double> differences;  // per seed
  Verdict verdict = Verdict::Inconclusive;
  // The seeds this arm's paired spread needs for the plan's target half-width at the budget it ran (the same
  // t formula as the plan; 0 when more than 1000, or fewer than 2 paired seeds). The plan sizes seeds from
  // the reference's A/A pilot; an arm that trains less steadily (the claims' MASA arms at 4M tokens: sd 0.055
  // against the A/A's 0.004) needs more, which `experiment run --seeds K` adds. Sized, as the plan's seeds
  // are, from sizingSd: the paired sd's upper confidence bound at plan.sdConfidence with n - 1 degrees of
  // freedom (the sd itself when that is 0), so that the seeds added reach the target that often rather
  // than about half the time.
  int seedsForTarget = 0;
  double sizingSd = NAN;
  // Whether seeds to narrow this arm's interval are asked for (seedsForTarget): not for a derived reference's
  // A/A arm, whose interval carries the spread between source models by construction (the arms derived from
  // the reference's own sources cancel it by the pairing), so its width is not what the plan sized.
  bool asksForSeeds() const { return aaOf.empty() || derivedFrom.empty(); }
  // "; 0.0212 at its 80% upper confidence bound, which ...": what sizingSd is, for the text beside the sd
  // (empty when the plan sizes from the sd itself).
  std::string sizingBoundText(const PlanSpec& plan) const;
  std::vector<double> curveTokens, curveMean, curveSd;  // mean validation curve over seeds (equal tokens)
  int finishedSeeds = 0;
  // The seeds whose run diverged (kFailedRunFile: its steps' losses stayed non-finite, or its held-out loss
  // is not finite). They have no loss, so no interval holds them: the arm's instability is reported beside
  // its intervals (divergedSeedsText), and a claim that instability contradicts is not called held
  // (claimOutcomeWithDivergence).
  std::vector<uint64_t> divergedSeeds;
  // A derived arm's seeds not derived because their source run diverged: the source's divergence, not this
  // arm's (it is reported under the source arm).
  std::vector<uint64_t> sourceDivergedSeeds;
  // "seeds 4 and 7 of 13", "seed 4 of 13": which diverged, of the experiment's seeds; "" when none did.
  std::string divergedSeedsText(size_t seeds) const;
  double lossAtFlops(
      double flops) const;  // the mean curve interpolated at a training-FLOPs budget (NaN beyond it)
  // Where the paper's own difference falls against `difference`: "below", "inside" or "above" (below: the
  // paper's arm did better against its reference than ours did); empty without a paper difference or an
  // interval.
  std::string paperEffectPlacement() const;
};

struct ExperimentReport {
  Experiment experiment;
  std::vector<RunSummary> runs;
  std::vector<ArmSummary> arms;
  bool complete = false;  // every arm x seed finished or diverged (ArmSummary::divergedSeeds)
  // Which code trained the runs (run.json's versions.source and versions.resumed_by, core/build_info.hpp):
  // each source revision's count of runs it trained (a run resumed by another revision counts under both),
  // the runs that record none (written before the record, or by a build outside a git checkout), and the
  // runs that several revisions trained.
  std::map<std::string, int> runsBySource;
  int runsWithoutSource = 0, runsOfSeveralSources = 0;
  // Equal training FLOPs: the smallest final training FLOPs any trained arm's mean curve reached (NaN when
  // none has a curve), and an arm's validation loss there minus the reference's, paired by seed, each run's
  // own curve interpolated (issue 35: the equal-FLOPs comparison with an interval).
  double commonFlops() const;
  MeanInterval equalFlopsDifference(const ArmSummary& arm, double flops) const;
  Json toJson() const;
  std::string toMarkdown(const std::string& reproduce) const;  // for docs/CLAIMS.md
  // One row of docs/CLAIMS.md's summary (issue 35's "measure and report"): the experiment (linked to its
  // section, toMarkdown's "## NAME", by GitHub's heading anchor), tokens per run and per parameter of its
  // largest arm, seeds, the compared arms' paired half-widths (smallest to widest, against the plan's
  // target), the A/A interval, each compared arm's difference with its verdict and claim, and the training
  // time of all its runs. summaryHeader() is the table's head, in the same columns.
  std::string summaryRow() const;
  static std::string summaryHeader();
  // The protocol as run: "the CORPUS corpus (...)" (corpus and passes over it, held-out tokens, batch,
  // optimizer, schedule, each arm's peak learning rate); "" before any run started.
  std::string protocolText() const;
  // "Trained by ShareLens source REV." (each revision's run count where several trained the runs, and the
  // runs that record none); "" when no run records its source.
  std::string sourceText() const;
};

ExperimentReport reportExperiment(const std::filesystem::path& outDir);

}  // namespace sharelens
