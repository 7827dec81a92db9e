// sharelens analyze PATH [--ID ...] [parameters] --json FILE
// Runs the analyses of the registry (analysis/registry.hpp) named by their flags -- all of the default set
// without flags -- and writes them as one report (schema sharelens.analysis/1). Progress goes to stderr;
// Ctrl-C stops at the next matrix, writes nothing and exits 130.
#include <chrono>
#include <iostream>

#include "analysis/activations.hpp"
#include "analysis/directshare.hpp"
#include "analysis/matrix_pca.hpp"
#include "analysis/registry.hpp"
#include "analysis/report_json.hpp"
#include "app/cli/commands.hpp"
#include "app/cli/progress_printer.hpp"
#include "app/workflows/model_runner.hpp"
#include "core/arch/family.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/inspect_report.hpp"
#include "core/output_guard.hpp"
#include "core/run_dir.hpp"

namespace sharelens::cli {
namespace {

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

std::string analysisParameterUsage() {
  return "[--threshold 0.95] [--lowest-pairs 50] [--heads-qkv-only] [--ratio 0.25] [--tokens 25000] "
         "[--corpus CORPUS|DIR] [--token-ids FILE] [--logit-lens per-sample|mean-state|per-token] "
         "[--logit-lens-tokens N] [--attention-tokens N] [--embedding-loss-tokens N]";
}

AnalysisParams parseAnalysisParams(Args& args) {
  AnalysisParams p;
  p.threshold = args.number("threshold", 1e-6, 1.0).value_or(p.threshold);
  p.lowestPairs = static_cast<size_t>(
      args.integer("lowest-pairs", 0, 1'000'000).value_or(static_cast<long long>(p.lowestPairs)));
  p.headsIncludeOutput = !args.flag("heads-qkv-only");
  if (const auto ratio = args.number("ratio", 0.0, 1.0)) {
    if (*ratio <= 0.0 || *ratio >= 1.0)
      throw Error({.what = "sharing ratio out of range",
                   .where = "--ratio",
                   .expected = "a fraction in (0, 1)",
                   .found = std::to_string(*ratio)});
    p.directShareRatio = *ratio;
  }
  p.activationTokens = args.integer("tokens", 2, 100'000'000).value_or(p.activationTokens);
  p.corpus = args.option("corpus", p.corpus);
  p.logitLens = args.option("logit-lens", p.logitLens);
  if (p.logitLens != "per-sample" && p.logitLens != "mean-state" && p.logitLens != "per-token")
    throw Error({.what = "unknown logit lens",
                 .where = "--logit-lens",
                 .expected = "per-sample (the MASA paper's), mean-state or per-token",
                 .found = p.logitLens});
  p.logitLensTokens = args.integer("logit-lens-tokens", 1, 100'000'000).value_or(p.logitLensTokens);
  p.attentionTokens = args.integer("attention-tokens", 0, 1'000'000).value_or(p.attentionTokens);
  p.embeddingLossTokens =
      args.integer("embedding-loss-tokens", 2, 100'000'000).value_or(p.embeddingLossTokens);
  if (const auto ids = args.option("token-ids")) p.tokenIds = readTokenIds(*ids);
  return p;
}

int runAnalyze(Args& args) {
  const std::string path = args.positional("PATH");
  std::vector<const AnalysisKind*> requested;
  for (const AnalysisKind& k : analysisKinds())
    if (args.flag(k.id)) requested.push_back(&k);
  // "0-5,6-11", or from the logit-lens drift: "kl" (3 groups), "kl:G", "kl-peaks" (after each local maximum)
  const std::string masaGroups = args.option("masa-groups", "");
  const std::optional<int64_t> klGrouping = parseKlGrouping(masaGroups);
  const bool klGroups = klGrouping.has_value();
  const auto directShareOut = args.option("directshare-out");
  const std::string device = args.option("device", "cpu");
  const int threads = static_cast<int>(args.integer("threads", 1, 1024).value_or(0));
  const auto jsonOut = args.option("json");
  if (device != "cpu" && device != "cuda")
    throw Error({.what = "unknown device",
                 .where = "sharelens analyze --device",
                 .expected = "cpu or cuda",
                 .found = device});
  const auto ckpt = Checkpoint::open(resolveModelPath(path));
  const ModelView view = openModelView(*ckpt);
  AnalysisParams p = parseAnalysisParams(args);
  args.finish();
  if (!masaGroups.empty() && !klGroups) p.masaGroups = parseLayerGroups(masaGroups, view.shape.layers);
  if (klGrouping) p.klGroups = *klGrouping;
  if (p.klGroups > view.shape.layers)
    throw Error({.what = "more groups than layers",
                 .where = "--masa-groups " + masaGroups,
                 .expected = "at most " + std::to_string(view.shape.layers),
                 .found = std::to_string(p.klGroups)});
  if (!jsonOut)
    throw Error(
        {.what = "missing --json FILE", .where = "sharelens analyze", .hint = "usage: " + args.usage()});
  std::vector<DeclaredOutput> outputs = {DeclaredOutput::file(*jsonOut, "--json")};
  if (directShareOut) outputs.push_back(DeclaredOutput::directory(*directShareOut, "--directshare-out"));
  checkOutputs("sharelens analyze", *ckpt, outputs);
  if (directShareOut)
    checkDirectShareWritable(*ckpt, view);  // refused before anything is computed or written
  const bool explicitSelection = !requested.empty();
  if (!explicitSelection)
    for (const AnalysisKind& k : analysisKinds())
      if (k.inDefaultSet) requested.push_back(&k);
  auto isRequested = [&](std::string_view id) {
    return std::find(requested.begin(), requested.end(), &analysis(id)) != requested.end();
  };
  if (klGroups && !isRequested(analyses::kActivations))
    throw Error({.what = "--masa-groups " + masaGroups + " needs the logit-lens drift",
                 .where = "sharelens analyze",
                 .hint = "add --activations"});

  std::string note;
  auto backend = selectBackend(device == "cuda" ? Device::Cuda : Device::Cpu, &note);
  if (!note.empty()) std::cerr << "note: " << note << "\n";
  CancellableTask task(threads);
  const TaskContext& ctx = task.context();
  Json notes = note.empty() ? Json::array() : Json::array({note});
  Json report = {{"schema", kAnalysisSchema},
                 {"source", path},
                 {"family", familyName(view.family)},
                 {"model_type", view.modelType},
                 {"threshold", p.threshold},
                 {"backend", backend->name()},
                 {"shape", modelShapeToJson(view.shape)}};
  Json timing = Json::object();
  const AnalysisInput input{*ckpt, view, *backend, makeModelServices(path, device, threads)};
  for (const AnalysisKind& kind :
       analysisKinds()) {  // the table's order: activations first (MASA may use them)
    if (std::find(requested.begin(), requested.end(), &kind) == requested.end()) continue;
    if (const std::string why = kind.unavailable(input); !why.empty()) {
      if (explicitSelection)
        throw Error(
            {.what = std::string(kind.title) + " cannot run on this model", .where = path, .found = why});
      notes.push_back(std::string(kind.title) + " skipped: " + why);
      continue;
    }
    const auto start = std::chrono::steady_clock::now();
    task.progress().set(0.0, std::string(kind.title));
    AnalysisResult result = kind.run(input, p, ctx);
    if (kind.id == analyses::kActivations.id && klGroups)
      p.masaGroups = resultAs<ActivationResults>(result)->groups;
    if (kind.id == analyses::kDirectShare.id && directShareOut) {
      writeDirectSharedCheckpoint(*ckpt, view, *resultAs<DirectShareResult>(result), *directShareOut);
      std::cerr << "wrote the shared model to " << *directShareOut << "\n";
    }
    report[std::string(kind.jsonKey)] = kind.toJson(result);
    timing[std::string(kind.id) + "_s"] = secondsSince(start);
  }
  report["notes"] = notes;
  report["timing"] = timing;
  task.finish();
  writeFileAtomically(*jsonOut, report.dump() + "\n");
  std::cerr << "wrote " << *jsonOut << "\n";
  return 0;
}

}  // namespace sharelens::cli
