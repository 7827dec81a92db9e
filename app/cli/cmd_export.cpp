// sharelens export --view ID --input PATH --out FILE.{png,svg,pdf} [--layer L] [--proj P] [--group G]
//                  [--colormap C] [--metric M] [--matrices A,B] [--quantity Q]
//                  [--size screen|single|double|WxH] [--dpi N] [--font-scale F] [--width PT] [--height PT]
//                  [analysis parameters]
// ID: a figure of the figure registry (app/plot/figure_registry.hpp), `training`, `rank-vs-step` (a run's
// chosen matrices at every checkpoint) or `topology`.
// The figure a GUI view shows, without a window. PATH is a checkpoint or run directory (computed on the
// spot), an analysis report from `sharelens analyze --json`, a run directory (training views) or a topology.
#include <iostream>

#include "analysis/backend.hpp"
#include "analysis/rank_dynamics.hpp"
#include "analysis/registry.hpp"
#include "analysis/report_json.hpp"
#include "app/cli/commands.hpp"
#include "app/export/figure_export.hpp"
#include "app/plot/figure_registry.hpp"
#include "app/plot/figures.hpp"
#include "app/workflows/model_runner.hpp"
#include "core/arch/family.hpp"
#include "core/error.hpp"
#include "core/metrics_csv.hpp"
#include "core/naming.hpp"
#include "core/run_dir.hpp"
#include "core/text.hpp"
#include "core/topology.hpp"

namespace sharelens::cli {
namespace {

// The figures `export` draws from runs and topology files rather than from an analysis result.
constexpr std::string_view kFiguresOfRuns[] = {"training", "rank-vs-step", "topology", "topology-graph"};

// The result a figure draws: from a report `sharelens analyze` wrote, or computed on a checkpoint now.
AnalysisResult resultFor(const AnalysisKind& kind, const std::string& input, const AnalysisParams& params,
                         const TaskContext& ctx) {
  if (input.size() > 5 && input.substr(input.size() - 5) == ".json" &&
      std::filesystem::is_regular_file(input)) {
    const Json report = readJsonFile(input);
    if (report.value("schema", "") == kAnalysisSchema) {
      if (!report.contains(std::string(kind.jsonKey)))
        throw Error({.what = "the report has no '" + std::string(kind.jsonKey) + "' section",
                     .where = input,
                     .hint = "rerun `sharelens analyze --" + std::string(kind.id) +
                             "`, or export from the checkpoint"});
      return kind.fromJson(report[std::string(kind.jsonKey)]);
    }
  }
  const auto ckpt = Checkpoint::open(resolveModelPath(input));
  const ModelView view = openModelView(*ckpt);
  const auto backend = makeCpuBackend();
  const AnalysisInput in{*ckpt, view, *backend, makeModelServices(input)};
  if (const std::string why = kind.unavailable(in); !why.empty())
    throw Error(
        {.what = std::string(kind.title) + " cannot run on this model", .where = input, .found = why});
  return kind.run(in, params, ctx);
}

plot::Figure rankVsStepFigure(const std::string& input, const std::vector<std::string>& matrices,
                              const std::string& quantity, double threshold, const TaskContext& ctx) {
  const auto& quantities = plot::kRankQuantityNames;
  const auto it = std::find(quantities.begin(), quantities.end(), quantity);
  if (it == quantities.end()) {
    std::string names;
    for (const std::string_view n : quantities) names += (names.empty() ? "" : ", ") + std::string(n);
    throw Error({.what = "unknown quantity", .where = "--quantity", .expected = names, .found = quantity});
  }
  if (!isRunDirectory(input))
    throw Error({.what = "not a run directory",
                 .where = input,
                 .hint = "rank-vs-step follows a run's checkpoints: pass the --out of `sharelens train`"});
  if (matrices.empty())
    throw Error({.what = "no matrices to follow",
                 .where = "--matrices",
                 .expected = "names as the spectra give them, like layers.0.q,layers.3.q.head.1,embedding"});
  const auto backend = makeCpuBackend();
  return plot::rankDynamicsFigure(computeRankDynamics(input, matrices, *backend, threshold, ctx),
                                  static_cast<plot::RankQuantity>(it - quantities.begin()));
}

}  // namespace

int runExport(Args& args) {
  const std::string viewName = args.option("view", "");
  const std::string input = args.option("input", "");
  const std::string out = args.option("out", "");
  plot::FigureParams figure;
  figure.layer = args.integer("layer", 0, 1 << 20);
  figure.group = static_cast<size_t>(args.integer("group", 0, 1 << 20).value_or(0));
  const std::optional<std::string> projGiven = args.option("proj");
  const std::string projText = projGiven.value_or("q");
  const bool fitRange = args.flag("fit-range");
  figure.logY = !args.flag("linear-y");
  figure.normalised = !args.flag("absolute");
  const std::string metricText = args.option("metric", "loss");
  const std::string colormapText = args.option("colormap", "viridis");
  const std::string matrices = args.option("matrices", "");
  for (std::string_view name : splitList(matrices, ',')) figure.matrices.emplace_back(name);
  const std::string quantity = args.option("quantity", "effective-rank");
  const AnalysisParams params = parseAnalysisParams(args);
  // A preset or WxH inches, then each of its parts overridden on its own (--width/--height in points).
  ExportOptions options;
  options.size = parseFigureSize(args.option("size", "screen"), "--size");
  options.size.widthPt = args.number("width", 36, 14400).value_or(options.size.widthPt);
  options.size.heightPt = args.number("height", 36, 14400).value_or(options.size.heightPt);
  options.size.dpi = args.number("dpi", 10, 2400).value_or(options.size.dpi);
  options.size.fontScale = args.number("font-scale", 0.1, 10).value_or(options.size.fontScale);
  args.finish();
  if (viewName.empty() || input.empty() || out.empty())
    throw Error({.what = "missing --view, --input or --out",
                 .where = "sharelens export",
                 .hint = "usage: " + args.usage()});
  const bool csv = viewName == "training" && endsWith(out, ".csv");
  if (!csv) exportFormatFor(out);  // fail on a bad extension before computing anything
  validateFigureSize(options.size, "--size, --dpi", !csv && exportFormatFor(out) == ExportFormat::Png);
  const auto proj = parseProj(projText);
  if (!proj)
    throw Error({.what = "unknown projection",
                 .where = "--proj",
                 .expected = "q k v o gate up down",
                 .found = projText});
  figure.proj = *proj;
  if (projGiven) figure.headProj = *proj;  // --view heads: that projection's heads only
  figure.fitRange = fitRange;
  const auto colormap = plot::parseColormap(colormapText);
  if (!colormap)
    throw Error({.what = "unknown colormap",
                 .where = "--colormap",
                 .expected = "viridis, magma or diverging",
                 .found = colormapText});
  figure.colormap = *colormap;

  plot::Figure result;
  const TaskContext ctx;
  if (std::find(std::begin(kFiguresOfRuns), std::end(kFiguresOfRuns), viewName) == std::end(kFiguresOfRuns) &&
      std::none_of(plot::figureKinds().begin(), plot::figureKinds().end(),
                   [&](const plot::FigureKind& k) { return k.id == viewName; }))
    throw Error({.what = "unknown view", .where = "--view", .expected = exportViewIds(), .found = viewName});
  if (viewName == "training") {
    if (!isRunDirectory(input))
      throw Error(
          {.what = "not a run directory", .where = input, .hint = "pass the --out of `sharelens train`"});
    MetricsReader reader(std::filesystem::path(input) / "metrics.jsonl");
    reader.poll();
    if (reader.malformedLines() > 0)  // lenient as a live reader must be, but never silent about it
      std::cerr
          << "note: " << reader.malformedLines() << " line(s) of " << input
          << "/metrics.jsonl skipped (not JSON objects, or steps that are negative or implausibly large)\n";
    // Labelled by the topology's name, or by the directory when run.json does not say it.
    const Json run = readJsonFile(std::filesystem::path(input) / "run.json");
    std::string label = std::filesystem::path(input).filename().string();
    if (run.is_object() && run.contains("topology") && run["topology"].is_object() &&
        run["topology"].contains("name") && run["topology"]["name"].is_string())
      label = run["topology"]["name"].get<std::string>();
    const std::vector<plot::RunCurve> curves = {{label, &reader.points()}};
    if (csv) {  // the curves as numbers, for pandas or a spreadsheet
      writeMetricsCsv(curves, out);
      std::cout << "wrote " << out << "\n";
      return 0;
    }
    const std::vector<std::string> metrics = {"loss", "val_loss", "lr", "grad_norm", "tokens_per_s"};
    const auto it = std::find(metrics.begin(), metrics.end(), metricText);
    if (it == metrics.end())
      throw Error({.what = "unknown metric",
                   .where = "--metric",
                   .expected = "loss val_loss lr grad_norm tokens_per_s",
                   .found = metricText});
    // The training view's two panels on one page: the chosen metric beside the validation loss.
    const std::vector<plot::Figure> panels = {
        plot::trainingFigure(curves, static_cast<plot::RunMetric>(it - metrics.begin()), plot::RunAxis::Step,
                             0.6),
        plot::trainingFigure(curves, plot::RunMetric::ValidationLoss, plot::RunAxis::Step, 0)};
    exportPanels(panels, out, options);
    std::cout << "wrote " << out << "\n";
    return 0;
  } else if (viewName == "rank-vs-step") {
    result = rankVsStepFigure(input, figure.matrices, quantity, params.threshold, ctx);
  } else if (viewName == "topology") {
    result = plot::topologyFigure(readTopologyFile(input));
  } else if (viewName == "topology-graph") {
    result = plot::topologyGraphFigure(readTopologyFile(input));
  } else {
    const plot::FigureKind& kind = plot::figureKind(viewName);
    result = kind.build(resultFor(analysis(kind.analysis), input, params, ctx), figure);
  }
  exportFigure(result, out, options);
  std::cout << "wrote " << out << "\n";
  return 0;
}

std::string exportViewIds() {
  std::string ids = plot::figureIds();
  for (std::string_view id : kFiguresOfRuns) ids += ", " + std::string(id);
  return ids;
}

}  // namespace sharelens::cli
