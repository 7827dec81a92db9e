// sharelens compress PATH --method METHOD (core/compression_methods.hpp) --ratio A [--groups kl:G |
// 0-0,1-10,11-11] [--atoms B]
//                    [--budget exact|eq13] [--allocation tail-energy|by-shape] [--logit-lens
//                    per-sample|mean-state]
//                    [--projections q,k,v,o] [--calibration CORPUS:N | --calibration-ids FILE] --out DIR
//                    [--json FILE]
// sharelens compress PATH --sweep 0.9,0.8,0.7,0.6 [--methods M1,M2,...] [--eval-tokens N|all] ...
// --out DIR MASA on a pretrained model (Matrix PCA + whitened residual refinement) or the SVD-LLM baseline
// (app/workflows/compress.hpp); the sweep writes every model, a table and a figure of perplexity against
// ratio.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "analysis/matrix_pca.hpp"
#include "app/cli/commands.hpp"
#include "app/cli/progress_printer.hpp"
#include "app/export/figure_export.hpp"
#include "app/plot/figures.hpp"
#include "app/workflows/compress.hpp"
#include "core/arch/family.hpp"
#include "core/atomic_file.hpp"
#include "core/compression_methods.hpp"
#include "core/error.hpp"
#include "core/naming.hpp"
#include "core/output_guard.hpp"
#include "core/run_dir.hpp"

namespace sharelens::cli {
namespace {

std::vector<std::string> splitList(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

std::vector<double> parseRatios(const std::string& text) {
  std::vector<double> out;
  for (const std::string& item : splitList(text)) {
    try {
      size_t used = 0;
      const double v = std::stod(item, &used);
      if (used != item.size()) throw std::invalid_argument(item);
      if (!(v > 0.0 && v < 1.0)) throw std::out_of_range(item);
      out.push_back(v);
    } catch (const std::exception&) {
      throw Error({.what = "not a compression ratio",
                   .where = "--sweep " + text,
                   .expected = "fractions in (0, 1), e.g. 0.9,0.8,0.7",
                   .found = "'" + item + "'"});
    }
  }
  return out;
}

void printPlan(const CompressionReport& r) {
  const CompressionPlan& p = r.plan;
  std::printf("%s at ratio %.3f (keep %.1f%% of the attention parameters)\n", p.spec.method.c_str(),
              p.spec.ratio, 100.0 * p.spec.ratio);
  if (!p.spec.groups.empty()) {
    std::printf("  layer groups:");
    for (size_t g = 0; g < p.spec.groups.size(); ++g)
      std::printf(" %lld-%lld (%lld atom%s)", static_cast<long long>(p.spec.groups[g].front()),
                  static_cast<long long>(p.spec.groups[g].back()), static_cast<long long>(p.atoms[g]),
                  p.atoms[g] == 1 ? "" : "s");
    std::printf("\n");
  }
  if (p.spec.method == "masa") {
    std::printf("  residual budget (%s) beta per group, the share of a refined layer's parameters kept:",
                p.spec.budget.c_str());
    for (double b : p.beta) std::printf(" %.4f", b);
    std::printf("\n  ranks allocated %s\n",
                p.spec.allocation == "tail-energy"
                    ? "by MASA Algorithm 1 (tail energy of the whitened residuals)"
                    : "by shape (ours)");
  }
  for (const auto& [proj, ranks] : p.ranks) {
    std::printf("  rank of %s per layer:", std::string(projName(proj)).c_str());
    for (int64_t v : ranks) std::printf(" %lld", static_cast<long long>(v));
    std::printf("\n");
  }
  std::printf("  parameters: %lld stored (exact) vs target %lld (%.4f of %lld)\n",
              static_cast<long long>(r.storedParameters), static_cast<long long>(p.targetParameters),
              static_cast<double>(r.storedParameters) / static_cast<double>(p.originalParameters),
              static_cast<long long>(p.originalParameters));
  std::printf("  calibration %.1f s, compression %.1f s, peak resident %s\n", r.calibrationSeconds,
              r.compressionSeconds, humanBytes(static_cast<double>(r.peakResidentBytes)).c_str());
}

}  // namespace

int runCompress(Args& args) {
  const std::string path = args.positional("PATH");
  CompressOptions o;
  o.spec.method = args.option("method", "masa");
  if (const auto ratio = args.number("ratio", -1e9, 1e9)) o.spec.ratio = *ratio;
  const std::string groups = args.option("groups", "kl");
  if (const auto atoms = args.integer("atoms", -1'000'000, 1'000'000)) o.spec.atoms = *atoms;
  if (const auto projections = args.option("projections")) {
    o.spec.projections.clear();
    for (const std::string& name : splitList(*projections)) {
      const auto p = parseProj(name);
      if (!p || !isAttentionProj(*p))
        throw Error({.what = "not an attention projection",
                     .where = "--projections",
                     .expected = "some of q,k,v,o",
                     .found = "'" + name + "'"});
      if (std::find(o.spec.projections.begin(), o.spec.projections.end(), *p) != o.spec.projections.end())
        throw Error({.what = "a projection listed twice",
                     .where = "--projections " + *projections,
                     .expected = "each of q,k,v,o at most once",
                     .found = "'" + name + "' again"});
      o.spec.projections.push_back(*p);
    }
  }
  o.spec.budget = args.option("budget", o.spec.budget);
  o.spec.allocation = args.option("allocation", o.spec.allocation);
  // Without N the calibration size comes from the model's width (defaultCalibrationTokens).
  parseCalibrationSpec(args.option("calibration", "brown"), o.calibration);
  o.calibration.logitLens = args.option("logit-lens", o.calibration.logitLens);
  if (const auto ids = args.option("calibration-ids"))
    o.calibration.tokenIds = readTokenIds(*ids), o.calibration.tokens = 1 << 30;
  o.calibration.device = args.option("device", "cpu");
  o.calibration.threads = static_cast<int>(args.integer("threads", 1, 1024).value_or(0));
  const auto sweep = args.option("sweep");
  const std::vector<std::string> methods = splitList(args.option("methods", compressionMethodList(",")));
  const bool evaluate = args.flag("eval");
  EvalOptions eval;
  eval.tokens = args.integerOrWord("eval-tokens", 2, 1'000'000'000, "all", kEveryHeldOutToken).value_or(8192);
  if (const auto ids = args.option("eval-ids")) eval.tokenIds = readTokenIds(*ids);
  eval.threads = o.calibration.threads;
  const auto out = args.option("out");
  const auto jsonOut = args.option("json");
  args.finish();
  if (!out)
    throw Error(
        {.what = "missing --out DIR", .where = "sharelens compress", .hint = "usage: " + args.usage()});
  o.out = *out;
  const auto ckpt = Checkpoint::open(resolveModelPath(path));
  {  // every output checked before calibration: OUT is written whole (staged), --json beside it
    std::vector<DeclaredOutput> outputs = {DeclaredOutput::directory(o.out, "--out")};
    if (jsonOut) outputs.push_back(DeclaredOutput::file(*jsonOut, "--json"));
    checkOutputs("sharelens compress", *ckpt, outputs);
  }
  if (const auto kl = parseKlGrouping(groups)) {
    if (*kl == 0)
      throw Error({.what = "kl-peaks does not fix the number of groups",
                   .where = "--groups",
                   .expected = "kl:G or explicit ranges",
                   .found = groups});
    o.klGroups = *kl;
  } else {
    o.spec.groups = parseLayerGroups(groups, openModelView(*ckpt).shape.layers);
  }
  CancellableTask task(o.calibration.threads);
  if (sweep) {
    const std::vector<double> ratios = parseRatios(*sweep);
    for (const std::string& m : methods)
      if (!isCompressionMethod(m))
        throw Error({.what = "unknown compression method",
                     .where = "--methods",
                     .expected = compressionMethodList(),
                     .found = m});
    const SweepReport report =
        sweepCompression(path, o, ratios, methods, eval, task.context(),
                         [](const std::filesystem::path& staged, const SweepReport& r) {  // OUT's figure
                           exportFigureInEveryFormat(plot::compressionSweepFigure(r), staged / "sweep");
                         });
    task.finish();
    std::cout << report.toMarkdown() << "\nwrote " << (o.out / "sweep.json").string()
              << ", sweep.md and sweep.{svg,png,pdf}\n";
    if (jsonOut) writeFileAtomically(*jsonOut, report.toJson().dump(2) + "\n");
    return 0;
  }
  EvalResult before, after;
  if (evaluate)  // inside OUT's staging: an interrupted evaluation leaves no OUT, and the rerun starts afresh
    o.beforeCommit = [&](const std::filesystem::path& staged, CompressionReport& r) {
      before = evaluateCheckpoint(path, eval, task.context());
      after = evaluateCheckpoint(staged, eval, task.context());
      after.source = o.out.string();
      r.eval = {{"original", evalResultToJson(before)}, {"compressed", evalResultToJson(after)}};
    };
  const CompressionReport report = compressCheckpoint(path, o, task.context());
  task.finish();
  printPlan(report);
  if (evaluate)
    std::printf("  held-out NLL %.4f -> %.4f (perplexity %.3f -> %.3f) on %lld tokens\n", before.nll,
                after.nll, before.perplexity, after.perplexity, static_cast<long long>(after.tokens));
  if (jsonOut) writeFileAtomically(*jsonOut, report.toJson().dump(2) + "\n");
  std::cout << "wrote " << o.out.string() << "\n";
  return 0;
}

}  // namespace sharelens::cli
