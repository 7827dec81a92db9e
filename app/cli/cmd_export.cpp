// sharelens export --view ID --input PATH --out FILE.{png,svg,pdf} [--formats png,svg,pdf] [--layer L]
//                  [--proj P] [--group G]
//                  [--colormap C] [--matrices A,B] [--quantity Q]
//                  [--size screen|single|double|WxH] [--dpi N] [--font-scale F] [--width PT] [--height PT]
//                  [--no-title] [analysis parameters]
// ID: a figure of the figure registry (app/plot/figure_registry.hpp), `training`, or a figure of a file
// (fileFigures below: `rank-vs-step`, a run's chosen matrices at every checkpoint; `tensor-histogram` of
// --tensor NAME; `head-pair-spectrum` of --pair A,B (head labels, q0 k3) at --layer; `topology`,
// `topology-graph`; `experiment-forest|bars|curves` of an experiment's --out; `compression-sweep`).
// The figure a GUI view shows, without a window. PATH is a checkpoint or run directory (computed on the
// spot), an analysis report from `sharelens analyze --json`, a run directory, a topology, an experiment's or
// a sweep's output directory. `experiment-curves` takes --axis tokens|flops. `training`
// takes RUN[,RUN...] (runs, or directories holding them) and the Training view's --metric, --axis,
// --smoothing, --log-y and --group-seeds. --formats writes the one figure in each format, named as --out with
// each extension (computed once: a paper wants the PDF and the PNG of one figure).
#include <algorithm>
#include <filesystem>
#include <iostream>

#include "analysis/backend.hpp"
#include "analysis/difference_maps.hpp"
#include "analysis/rank_dynamics.hpp"
#include "analysis/registry.hpp"
#include "analysis/report_json.hpp"
#include "app/cli/commands.hpp"
#include "app/export/figure_export.hpp"
#include "app/plot/figure_registry.hpp"
#include "app/plot/figures.hpp"
#include "app/workflows/compress.hpp"
#include "app/workflows/model_runner.hpp"
#include "core/arch/family.hpp"
#include "core/error.hpp"
#include "core/experiment_report.hpp"
#include "core/json_util.hpp"
#include "core/metrics_csv.hpp"
#include "core/naming.hpp"
#include "core/run_dir.hpp"
#include "core/tensor_summary.hpp"
#include "core/text.hpp"
#include "core/topology.hpp"

namespace sharelens::cli {
namespace {

// What the figures of files below may read from the command line besides --input.
struct FileFigureChoices {
  std::vector<std::string> matrices;  // rank-vs-step: --matrices
  std::string quantity;               // rank-vs-step: --quantity
  double threshold = 0;               // rank-vs-step: the energy threshold of the analysis parameters
  std::optional<std::string> axis;    // experiment-curves: --axis tokens|flops
  std::string tensor;                 // tensor-histogram: --tensor
  std::string pair;                   // head-pair-spectrum: --pair A,B
  int64_t layer = 0;                  // head-pair-spectrum: --layer
};

plot::Figure rankVsStepFigure(const std::string& input, const FileFigureChoices& c, const TaskContext& ctx);

// The Model view's histogram of a clicked tensor.
plot::Figure tensorHistogramFigure(const std::string& input, const FileFigureChoices& c,
                                   const TaskContext& ctx) {
  if (c.tensor.empty())
    throw Error({.what = "no tensor named",
                 .where = "--tensor",
                 .expected = "a tensor of the checkpoint",
                 .hint = "`sharelens inspect " + input + "` lists them"});
  const auto ckpt = Checkpoint::open(resolveModelPath(input));
  return plot::tensorHistogramFigure(
      summarizeTensor(*ckpt, c.tensor, TensorSummary::kBins, TensorSummary::kPreview, ctx));
}

// The Heads view's spectrum of a clicked cell: two heads of one layer, by their labels in the map.
plot::Figure headPairSpectrumFigure(const std::string& input, const FileFigureChoices& c,
                                    const TaskContext& ctx) {
  const std::vector<std::string_view> labels = splitList(c.pair, ',');
  if (labels.size() != 2)
    throw Error({.what = "not a pair of heads",
                 .where = "--pair",
                 .expected = "two head labels as the head map names its rows, like q0,k1",
                 .found = c.pair.empty() ? "nothing" : c.pair});
  const HeadId a = parseHeadLabel(labels[0], "--pair"), b = parseHeadLabel(labels[1], "--pair");
  const auto ckpt = Checkpoint::open(resolveModelPath(input));
  const ModelView view = openModelView(*ckpt);
  const auto backend = makeCpuBackend();
  return plot::headPairSpectrumFigure(
      headPairSpectrum(*ckpt, view, c.layer, a, b, *backend, c.threshold, ctx));
}

// A topology file, or the topology a run directory's run.json records (what `topology` and `topology-graph`
// draw: a run's design as the Designer showed it).
Topology topologyOfInput(const std::string& input) {
  if (!isRunDirectory(input)) return readTopologyFile(input);
  const std::filesystem::path record = std::filesystem::path(input) / "run.json";
  const Json run = readJsonFile(record);
  if (!run.is_object() || !run.contains("topology"))
    throw Error({.what = "a run record without its topology",
                 .where = record.string(),
                 .expected = "a \"topology\" object",
                 .found = run.is_object() ? "none" : jsonTypeName(run),
                 .hint = "name the run's topology file instead"});
  return topologyFromJson(run["topology"], record.string() + ": topology");
}

// "tokens" (the default) or "flops": the x axis of an experiment's mean curves, as the Experiments view's
// toggle sets it.
bool curvesAgainstFlops(const std::optional<std::string>& axis) {
  if (!axis || *axis == "tokens") return false;
  if (*axis == "flops") return true;
  throw Error({.what = "unknown value", .where = "--axis", .expected = "tokens or flops", .found = *axis});
}

// The figures `export` draws from files other than an analysis's input: a run's checkpoints, a topology, an
// experiment's output directory, a compression sweep. Each builds its figure with the function that draws it
// elsewhere (the Designer, Experiments, Compress and Spectrum views; `experiment report --figures`, `compress
// --sweep`), so the two cannot draw different figures of the same file.
// `training` (below, two panels or a CSV) is the one figure of runs that is not in this table.
struct FileFigure {
  std::string_view id;
  std::function<plot::Figure(const std::string& input, const FileFigureChoices&, const TaskContext&)> build;
};
const std::vector<FileFigure>& fileFigures() {
  static const std::vector<FileFigure> figures = {
      {"rank-vs-step", rankVsStepFigure},
      {"tensor-histogram", tensorHistogramFigure},
      {"head-pair-spectrum", headPairSpectrumFigure},
      {"topology",
       [](const std::string& in, auto&, auto&) { return plot::topologyFigure(topologyOfInput(in)); }},
      {"topology-graph",
       [](const std::string& in, auto&, auto&) { return plot::topologyGraphFigure(topologyOfInput(in)); }},
      {"experiment-forest", [](const std::string& in, auto&,
                               auto&) { return plot::experimentForestFigure(reportExperiment(in)); }},
      {"experiment-bars",
       [](const std::string& in, auto&, auto&) { return plot::experimentBarsFigure(reportExperiment(in)); }},
      {"experiment-curves",
       [](const std::string& in, const FileFigureChoices& c, auto&) {
         return plot::experimentCurvesFigure(reportExperiment(in), curvesAgainstFlops(c.axis));
       }},
      {"compression-sweep",
       [](const std::string& in, auto&, auto&) { return plot::compressionSweepFigure(readSweepReport(in)); }},
  };
  return figures;
}
const FileFigure* fileFigure(std::string_view id) {
  for (const FileFigure& f : fileFigures())
    if (f.id == id) return &f;
  return nullptr;
}

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

plot::Figure rankVsStepFigure(const std::string& input, const FileFigureChoices& c, const TaskContext& ctx) {
  const auto& quantities = plot::kRankQuantityNames;
  const auto it = std::find(quantities.begin(), quantities.end(), c.quantity);
  if (it == quantities.end()) {
    std::string names;
    for (const std::string_view n : quantities) names += (names.empty() ? "" : ", ") + std::string(n);
    throw Error({.what = "unknown quantity", .where = "--quantity", .expected = names, .found = c.quantity});
  }
  if (!isRunDirectory(input))
    throw Error({.what = "not a run directory",
                 .where = input,
                 .hint = "rank-vs-step follows a run's checkpoints: pass the --out of `sharelens train`"});
  if (c.matrices.empty())
    throw Error({.what = "no matrices to follow",
                 .where = "--matrices",
                 .expected = "names as the spectra give them, like layers.0.q,layers.3.q.head.1,embedding"});
  const auto backend = makeCpuBackend();
  return plot::rankDynamicsFigure(computeRankDynamics(input, c.matrices, *backend, c.threshold, ctx),
                                  static_cast<plot::RankQuantity>(it - quantities.begin()));
}

// Position of `text` among `ids`, or a named error listing them.
template <size_t N>
size_t idIndex(const std::array<std::string_view, N>& ids, const std::string& text, const std::string& flag) {
  const auto it = std::find(ids.begin(), ids.end(), text);
  if (it != ids.end()) return static_cast<size_t>(it - ids.begin());
  std::string names;
  for (const std::string_view id : ids) names += (names.empty() ? "" : ", ") + std::string(id);
  throw Error({.what = "unknown value", .where = flag, .expected = names, .found = text});
}

// `dir` absolute, without "." or ".." parts or a trailing separator: its name is the run's (or seed-K's).
std::filesystem::path normalRunPath(const std::filesystem::path& dir) {
  std::filesystem::path p = std::filesystem::absolute(dir).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();
  return p;
}

// The runs `export --view training` draws, as the Training view shows them once attached: each input is a
// run directory or one holding runs (`train --compare`'s pair, an experiment's ARM/seed-K), labelled and
// grouped by seed as the monitor does (core/run_groups.hpp).
struct MonitoredRuns {
  explicit MonitoredRuns(const std::string& inputs) {
    std::vector<std::filesystem::path> dirs;
    auto add = [&](const std::filesystem::path& dir) {  // once each, as the view attaches a run once
      const std::filesystem::path normal = normalRunPath(dir);
      if (std::find(dirs.begin(), dirs.end(), normal) == dirs.end()) dirs.push_back(normal);
    };
    for (const std::string_view input : splitList(inputs, ',')) {
      const std::filesystem::path path(input);
      if (isRunDirectory(path)) {
        add(path);
        continue;
      }
      const auto below = runDirectoriesBelow(path, 2);
      if (below.empty())
        throw Error({.what = "not a run directory",
                     .where = path.string(),
                     .expected = "a directory with run.json, or one holding such directories",
                     .hint = "pass the --out of `sharelens train` or `sharelens experiment run`"});
      for (const std::filesystem::path& dir : below) add(dir);
    }
    std::vector<LabelledRun> shown;
    for (const std::filesystem::path& dir : dirs) records.push_back(readJsonFile(dir / "run.json"));
    for (size_t i = 0; i < dirs.size(); ++i) {
      MetricsReader& reader =
          *readers.emplace_back(std::make_unique<MetricsReader>(dirs[i] / "metrics.jsonl"));
      reader.poll();
      if (reader.malformedLines() > 0)  // lenient as a live reader must be, but never silent about it
        std::cerr << "note: " << reader.malformedLines() << " line(s) of "
                  << (dirs[i] / "metrics.jsonl").string()
                  << " skipped (not JSON objects, or steps that are negative or implausibly large)\n";
      shown.push_back({runLabel(records[i], dirs[i]), &records[i], dirs[i].filename().string()});
    }
    MonitorLabels labels = monitorLabels(shown);
    for (size_t i = 0; i < dirs.size(); ++i) curves.push_back({labels.runs[i], &readers[i]->points()});
    groups = std::move(labels.groups);
  }
  std::vector<CurveGroup> curveGroups() const {
    std::vector<CurveGroup> out;
    for (const SeedGroup& g : groups) {
      CurveGroup& c = out.emplace_back(CurveGroup{g.label, {}});
      for (const size_t i : g.members) c.members.push_back(curves.at(i));
    }
    return out;
  }

  std::vector<Json> records;  // filled before any pointer into it is taken
  std::vector<std::unique_ptr<MetricsReader>> readers;
  std::vector<plot::RunCurve> curves;
  std::vector<SeedGroup> groups;
};

// The files `export` writes: --out alone, or with --formats F1,F2 --out's name with each extension in turn
// (a known extension of --out, in any case, replaced, else appended): "fig.png" with "svg,pdf" -> fig.svg,
// fig.pdf. Formats are read in any case and written in lower case.
std::vector<std::string> exportedFiles(const std::string& out, const std::optional<std::string>& formats,
                                       bool training) {
  if (!formats) return {out};
  const std::string known = training ? "png, svg, pdf or csv" : "png, svg or pdf";
  const std::string example = "e.g. --formats png,svg,pdf";
  std::filesystem::path stem(out);
  if (stem.filename().empty() || stem.filename() == "." || stem.filename() == "..")
    throw Error({.what = "--formats names its files after --out, which names no file",
                 .where = "--out",
                 .expected = "a file name, such as figures/spectrum",
                 .found = out,
                 .hint = "--out figures/spectrum --formats png,pdf writes figures/spectrum.png and .pdf"});
  const std::string outExtension = asciiLower(stem.extension().string());
  if (outExtension == ".png" || outExtension == ".svg" || outExtension == ".pdf" || outExtension == ".csv")
    stem.replace_extension();
  std::vector<std::string> files;
  for (std::string_view given : splitList(*formats, ',')) {
    const std::string format = asciiLower(given);
    if (format != "png" && format != "svg" && format != "pdf" && !(training && format == "csv"))
      throw Error({.what = "unknown export format",
                   .where = "--formats",
                   .expected = known + ", comma-separated",
                   .found = std::string(given),
                   .hint = format == "csv" ? "csv is the curves of --view training only" : example});
    const std::string file = stem.string() + "." + format;
    if (std::find(files.begin(), files.end(), file) == files.end()) files.push_back(file);
  }
  if (files.empty())
    throw Error({.what = "no export format",
                 .where = "--formats",
                 .expected = known + ", comma-separated",
                 .found = "\"" + *formats + "\"",
                 .hint = example + ", or leave --formats out to write --out alone"});
  return files;
}

}  // namespace

int runExport(Args& args) {
  const std::string viewName = args.option("view", "");
  const std::string input = args.option("input", "");
  const std::string out = args.option("out", "");
  const std::optional<std::string> formats = args.option("formats");
  plot::FigureParams figure;
  figure.layer = args.integer("layer", 0, 1 << 20);
  figure.group = static_cast<size_t>(args.integer("group", 0, 1 << 20).value_or(0));
  const std::optional<std::string> projGiven = args.option("proj");
  const std::string projText = projGiven.value_or("q");
  const bool fitRange = args.flag("fit-range");
  // A paper's figure has its caption instead: the title and subtitle give their room to the plot.
  const bool noTitle = args.flag("no-title");
  auto titled = [noTitle](plot::Figure f) {
    if (noTitle) f.title.clear(), f.subtitle.clear();
    return f;
  };
  figure.logY = !args.flag("linear-y");
  figure.normalised = !args.flag("absolute");
  const std::string metricText = args.option("metric", "loss");
  const std::string colormapText = args.option("colormap", "viridis");
  const std::string matrices = args.option("matrices", "");
  for (std::string_view name : splitList(matrices, ',')) figure.matrices.emplace_back(name);
  const std::string quantity = args.option("quantity", "effective-rank");
  const std::string tensor = args.option("tensor", "");
  const std::string pair = args.option("pair", "");
  plot::TrainingFigureParams training;  // --view training: the Training view's choices
  const std::optional<std::string> axisGiven = args.option("axis");
  training.smoothing = static_cast<float>(args.number("smoothing", 0, 0.999).value_or(training.smoothing));
  training.logY = args.flag("log-y");
  training.groupSeeds = args.flag("group-seeds");
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
  const std::vector<std::string> files = exportedFiles(out, formats, viewName == "training");
  auto isCsv = [&](const std::string& file) { return viewName == "training" && endsWith(file, ".csv"); };
  for (const std::string& file : files) {
    if (!isCsv(file)) exportFormatFor(file);  // fail on a bad extension before computing anything
    validateFigureSize(options.size, "--size, --dpi",
                       !isCsv(file) && exportFormatFor(file) == ExportFormat::Png);
  }
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
  if (viewName != "training" && !fileFigure(viewName) &&
      std::none_of(plot::figureKinds().begin(), plot::figureKinds().end(),
                   [&](const plot::FigureKind& k) { return k.id == viewName; }))
    throw Error({.what = "unknown view", .where = "--view", .expected = exportViewIds(), .found = viewName});
  if (viewName == "training") {
    training.metric = static_cast<plot::RunMetric>(idIndex(plot::kRunMetricIds, metricText, "--metric"));
    training.axis =
        static_cast<plot::RunAxis>(idIndex(plot::kRunAxisIds, axisGiven.value_or("step"), "--axis"));
    const MonitoredRuns runs(input);
    // The Training view's two panels on one page: the chosen metric beside the validation loss (made only
    // for a picture: curves as CSV alone need none).
    std::array<plot::Figure, 2> panels;
    if (!std::all_of(files.begin(), files.end(), isCsv)) {
      panels = plot::trainingPanels(runs.curves, training, runs.groups);
      for (plot::Figure& panel : panels) panel = titled(std::move(panel));
    }
    for (const std::string& file : files) {
      if (isCsv(file)) {  // the curves as numbers, for pandas or a spreadsheet
        if (training.groupSeeds)
          writeSeedGroupsCsv(runs.curveGroups(), file);
        else
          writeMetricsCsv(runs.curves, file);
        std::cout << "wrote " << file << "\n";
      } else {
        std::cout << "wrote "
                  << exportedFileDescription(file, options.size, exportPanels(panels, file, options)) << "\n";
      }
    }
    return 0;
  } else if (const FileFigure* file = fileFigure(viewName)) {
    result = file->build(
        input,
        {figure.matrices, quantity, params.threshold, axisGiven, tensor, pair, figure.layer.value_or(0)},
        ctx);
  } else {
    const plot::FigureKind& kind = plot::figureKind(viewName);
    result = kind.build(resultFor(analysis(kind.analysis), input, params, ctx), figure);
  }
  result = titled(std::move(result));
  for (const std::string& file : files)
    std::cout << "wrote " << exportedFileDescription(file, options.size, exportFigure(result, file, options))
              << "\n";
  return 0;
}

std::string exportViewIds() {
  std::string ids = plot::figureIds();
  ids += ", training";
  for (const FileFigure& f : fileFigures()) ids += ", " + std::string(f.id);
  return ids;
}

}  // namespace sharelens::cli
