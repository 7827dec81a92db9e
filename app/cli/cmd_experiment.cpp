// sharelens experiment run FILE --out DIR [--archive DIR] [--profile NAME] [--parallel N] [--steps N]
//                               [--seeds K] [--threads N]
//   an experiment's runs (trainer/experiment_runner.hpp; --parallel defaults to one run per thread;
//   --profile: one of the file's "profiles", such as its GPU scale; --archive: a results archive to take
//   finished runs from and copy them into, core/experiment_archive.hpp; --seeds K: the file's first K seeds,
//   or more than it lists, the next integers after them, added to a directory that holds the rest);
// sharelens experiment plan FILE --out DIR [--archive DIR] [--profile NAME] [--parallel N] [--threads N]
//   its learning rates, token budget and seeds (trainer/experiment_plan.hpp);
// sharelens experiment sizes FILE [--profile NAME]
//   what each arm holds and costs before anything trains: parameters (non-embedding), rho, training FLOPs per
//   token, and tokens per parameter at the file's tokens and at each pilot budget (sizing a file for
//   plan.min_tokens_per_parameter);
// sharelens experiment report DIR [--json FILE] [--md FILE] [--figures DIR] [--reproduce COMMAND]
//                                 [--summary FILE]   (its one-row summary table, as docs/CLAIMS.md heads
//                                 them)
//   its report (core/experiment_report.hpp): per arm the final held-out NLL with a 95% interval over seeds,
//   the paired difference to the reference arm and the verdict.
#include <cstdio>
#include <iostream>

#include "app/cli/commands.hpp"
#include "app/cli/progress_printer.hpp"
#include "app/export/figure_export.hpp"
#include "app/plot/figures.hpp"
#include "app/workflows/experiment_derive.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/experiment_report.hpp"
#include "core/naming.hpp"
#include "core/param_count.hpp"
#include "core/text.hpp"
#include "trainer/experiment_plan.hpp"
#include "trainer/experiment_runner.hpp"

namespace sharelens::cli {
namespace {

void printReport(const ExperimentReport& r) {
  const Experiment& e = r.experiment;
  std::printf("%s: %zu arms x %zu seeds, %s (reference: %s)\n", e.name.c_str(), e.arms.size(), e.seeds.size(),
              r.complete ? "complete" : "incomplete", e.reference.c_str());
  for (const ArmSummary& a : r.arms) {
    std::printf(
        "  %-22s %7.3fM params (%.3fM non-embedding), %.2fM tokens, %.0f s  NLL %.4f +- %.4f (%d seeds)",
        a.name.c_str(), static_cast<double>(a.parameters) / 1e6, static_cast<double>(a.nonEmbedding) / 1e6,
        a.tokens / 1e6, a.seconds, a.nll.mean, a.nll.halfWidth, a.nll.n);
    if (a.name != e.reference)
      std::printf("  vs %s %+.4f +- %.4f: %s", e.reference.c_str(), a.difference.mean, a.difference.halfWidth,
                  std::string(verdictName(a.verdict)).c_str());
    if (!a.expect.empty())
      std::printf("; the paper's claim (%s): %s", a.expect.c_str(),
                  std::string(claimOutcomeName(a.claim)).c_str());
    if (!a.divergedSeeds.empty()) std::printf("; %s diverged", a.divergedSeedsText(e.seeds.size()).c_str());
    std::printf("\n");
  }
}

// `experiment sizes`: one line per arm, then whether a pilot budget reaches the plan's tokens per parameter
// (counted, as the planner counts them, against the largest trained arm's total parameters).
void printSizes(const Experiment& e) {
  std::vector<double> budgets = {1.0};  // the file's tokens, then each pilot budget (as fractions of them)
  for (double f : e.plan.pilotBudgets)
    if (f != 1.0) budgets.push_back(f);
  auto tokensAt = [&](double fraction) {  // as the planner rounds them
    return static_cast<double>(
        std::max<int64_t>(1, static_cast<int64_t>(fraction * static_cast<double>(e.tokens))));
  };
  std::printf("%s: %s tokens per run, %zu seeds, reference %s\n", e.name.c_str(),
              humanCount(static_cast<double>(e.tokens)).c_str(), e.seeds.size(), e.reference.c_str());
  std::printf("(the last columns: tokens per parameter at the file's tokens and at each pilot budget)\n");
  std::printf("%-28s %12s %14s %6s %12s", "arm", "parameters", "non-embedding", "rho", "FLOPs/token");
  for (double f : budgets) std::printf(" %8s", ("@" + humanCount(tokensAt(f))).c_str());
  std::printf("\n");
  double largest = 0;
  for (const ExperimentArm& a : e.arms) {
    if (a.derive) {
      std::printf("%-28s derived from %s (%s): sized when derived\n", a.name.c_str(), a.derive->from.c_str(),
                  a.derive->method.c_str());
      continue;
    }
    const ParamBudget b = countParameters(a.topology);
    if (a.aaOf.empty()) largest = std::max(largest, static_cast<double>(b.total));
    std::printf("%-28s %12lld %14lld %5.1f%% %12s", a.name.c_str(), static_cast<long long>(b.total),
                static_cast<long long>(b.nonEmbedding), 100 * b.rho,
                humanCount(b.trainFlopsPerToken).c_str());
    for (double f : budgets) std::printf(" %8.1f", tokensAt(f) / static_cast<double>(b.total));
    std::printf("\n");
  }
  if (largest <= 0) return;
  const double floor = e.plan.minTokensPerParameter;
  std::string reaching;
  for (double f : e.plan.pilotBudgets)  // the plan chooses among these only
    if (tokensAt(f) / largest >= floor) reaching += (reaching.empty() ? "" : ", ") + humanCount(tokensAt(f));
  std::printf("largest trained arm %s parameters: %s\n", humanCount(largest).c_str(),
              reaching.empty()
                  ? ("no budget reaches " + formatNumber(floor, "%g") +
                     " tokens per parameter (plan.min_tokens_per_parameter)")
                        .c_str()
                  : (reaching + " reach " + formatNumber(floor, "%g") + " tokens per parameter").c_str());
}

// --parallel (0: one run per thread) and --threads, and the derivations (DirectShare, PostShare) derived arms
// need: what `run` and `plan` both take.
ExperimentRunOptions runOptions(Args& args) {
  ExperimentRunOptions o;
  o.parallel = static_cast<int>(args.integer("parallel", 1, 64).value_or(0));
  o.threads = static_cast<int>(args.integer("threads", 1, 1024).value_or(0));
  o.deriveArm = experimentDeriver();
  if (const auto archive = args.option("archive")) o.archive = *archive;
  return o;
}

}  // namespace

int runExperimentCommand(Args& args) {
  const std::string verb = args.positional("run, plan, sizes or report");
  if (verb == "run") {
    const std::string file = args.positional("FILE");
    const auto out = args.option("out");
    ExperimentRunOptions o = runOptions(args);
    o.tolerateFailedRuns = true;  // an arm that diverges in a seed is an outcome the report counts
    if (const auto steps = args.integer("steps", 1, 100'000'000)) o.steps = *steps;
    if (const auto seeds = args.integer("seeds", 1, 1000)) o.seeds = static_cast<int>(*seeds);
    const std::string profile = args.option("profile", "");
    args.finish();
    if (!out)
      throw Error({.what = "missing --out DIR",
                   .where = "sharelens experiment run",
                   .hint = "usage: " + args.usage()});
    const Experiment e =
        readExperimentFile(file, profile);  // every mistake in the file is named before anything trains
    CancellableTask task(o.threads);
    runExperiment(e, *out, o, task.context(),
                  [](const std::string& line) { std::fprintf(stderr, "\r\033[K%s\n", line.c_str()); });
    task.finish();
    printReport(reportExperiment(*out));
    return 0;
  }
  if (verb == "plan") {  // trainer/experiment_plan.hpp
    const std::string file = args.positional("FILE");
    const auto out = args.option("out");
    const ExperimentRunOptions o = runOptions(args);
    const std::string profile = args.option("profile", "");
    args.finish();
    if (!out)
      throw Error({.what = "missing --out DIR",
                   .where = "sharelens experiment plan",
                   .hint = "usage: " + args.usage()});
    const Experiment e = readExperimentFile(file, profile);
    CancellableTask task(o.threads);
    const ExperimentPlan plan = planExperiment(e, *out, o, task.context(), [](const std::string& line) {
      std::fprintf(stderr, "\r\033[K%s\n", line.c_str());
    });
    task.finish();
    std::cout << plan.toMarkdown() << "\nwrote " << (std::filesystem::path(*out) / "plan.json").string()
              << ", plan.md and planned.json\n";
    return 0;
  }
  if (verb == "sizes") {
    const std::string file = args.positional("FILE");
    const std::string profile = args.option("profile", "");
    args.finish();
    printSizes(readExperimentFile(file, profile));
    return 0;
  }
  if (verb == "report") {
    const std::string dir = args.positional("DIR");
    const auto jsonOut = args.option("json");
    const auto mdOut = args.option("md");
    const auto reproduce = args.option("reproduce");
    const auto figures = args.option("figures");
    const auto summary = args.option("summary");
    args.finish();
    const ExperimentReport r = reportExperiment(dir);
    printReport(r);
    if (figures) {  // bars with 95% intervals, and mean curves with +-1 sd bands against tokens and FLOPs
      std::filesystem::create_directories(*figures);
      const std::vector<std::pair<std::string, plot::Figure>> all = {
          {"forest", plot::experimentForestFigure(r)},
          {"bars", plot::experimentBarsFigure(r)},
          {"curves-tokens", plot::experimentCurvesFigure(r, false)},
          {"curves-flops", plot::experimentCurvesFigure(r, true)}};
      for (const auto& [stem, figure] : all)
        for (const char* ext : {"png", "svg", "pdf"})
          exportFigure(figure, std::filesystem::path(*figures) / (r.experiment.name + "-" + stem + "." + ext),
                       ExportOptions{});
      std::cerr << "wrote the figures to " << *figures << "\n";
    }
    if (jsonOut) writeFileAtomically(*jsonOut, r.toJson().dump(2) + "\n");
    if (summary) writeFileAtomically(*summary, ExperimentReport::summaryHeader() + r.summaryRow());
    if (mdOut)
      writeFileAtomically(*mdOut,
                          r.toMarkdown(reproduce.value_or("sharelens experiment run ... --out " + dir)));
    return 0;
  }
  throw Error({.what = "unknown experiment verb",
               .where = "sharelens experiment",
               .expected = "run, plan, sizes or report",
               .found = "'" + verb + "'"});
}

}  // namespace sharelens::cli
