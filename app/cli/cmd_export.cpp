// sharelens export --view NAME --input PATH --out FILE.{png,svg,pdf} [--layer L] [--proj P] [--ratio R]
//                  [--threshold T] [--tokens N] [--metric M] [--colormap C] [--width W] [--height H]
// The figure a GUI view shows, without a window. PATH is a checkpoint or run directory (computed on the
// spot), an analysis report from `sharelens analyze --json`, a run directory (training views) or a topology.
#include <iostream>

#include "analysis/backend.hpp"
#include "analysis/report_json.hpp"
#include "app/cli/commands.hpp"
#include "app/export/figure_export.hpp"
#include "app/plot/figures.hpp"
#include "core/arch/family.hpp"
#include "core/error.hpp"
#include "core/run_dir.hpp"
#include "core/topology.hpp"
#include "trainer/forward_probe.hpp"

namespace sharelens::cli {
namespace {

constexpr const char* kViews =
    "spectrum, heads, layers, layer-outputs, masa-coefficients, masa-variance, masa-correlation, kl-drift, directshare, "
    "attention-similarity, embedding-spectrum, factorization, training, topology";

// Where the analyses come from: a report already computed, or a checkpoint to compute them on.
class Source {
 public:
  Source(const std::string& input, double threshold) : m_threshold(threshold) {
    if (input.size() > 5 && input.substr(input.size() - 5) == ".json" && std::filesystem::is_regular_file(input)) {
      const Json j = readJsonFile(input);
      if (j.value("schema", "") == kAnalysisSchema) m_report = j;
    }
    if (!m_report) {
      m_ckpt = Checkpoint::open(resolveModelPath(input));
      m_view = openModelView(*m_ckpt);
      m_backend = makeCpuBackend();
    }
    m_input = input;
  }

  const Json* report(const char* section) const {
    if (!m_report) return nullptr;
    if (!m_report->contains(section))
      throw Error({.what = "the report has no '" + std::string(section) + "' section", .where = m_input,
                   .hint = "rerun `sharelens analyze` with that analysis, or export from the checkpoint"});
    return &(*m_report)[section];
  }
  double threshold() const { return m_report ? m_report->value("threshold", m_threshold) : m_threshold; }
  const Checkpoint& ckpt() const { return *m_ckpt; }
  const ModelView& view() const { return *m_view; }
  LinalgBackend& backend() const { return *m_backend; }
  const std::string& input() const { return m_input; }

 private:
  double m_threshold;
  std::string m_input;
  std::optional<Json> m_report;
  std::unique_ptr<Checkpoint> m_ckpt;
  std::optional<ModelView> m_view;
  std::unique_ptr<LinalgBackend> m_backend;
};

}  // namespace

int runExport(Args& args) {
  const std::string viewName = args.option("view", "");
  const std::string input = args.option("input", "");
  const std::string out = args.option("out", "");
  const int64_t layer = args.integer("layer", 0, 1 << 20).value_or(0);
  const std::string projText = args.option("proj", "q");
  const double ratio = args.number("ratio", 0.0, 1.0).value_or(0.25);
  const double threshold = args.number("threshold", 1e-6, 1.0).value_or(0.95);
  const int64_t tokens = args.integer("tokens", 2, 100'000'000).value_or(4096);
  const std::string metricText = args.option("metric", "loss");
  const std::string colormapText = args.option("colormap", "viridis");
  ExportOptions options;
  options.width = static_cast<int>(args.integer("width", 100, 20000).value_or(1200));
  options.height = static_cast<int>(args.integer("height", 100, 20000).value_or(800));
  args.finish();
  if (viewName.empty() || input.empty() || out.empty())
    throw Error({.what = "missing --view, --input or --out", .where = "sharelens export", .hint = "usage: " + args.usage()});
  exportFormatFor(out);  // fail on a bad extension before computing anything
  const auto proj = parseProj(projText);
  if (!proj) throw Error({.what = "unknown projection", .where = "--proj", .expected = "q k v o gate up down", .found = projText});
  const auto colormap = plot::parseColormap(colormapText);
  if (!colormap) throw Error({.what = "unknown colormap", .where = "--colormap", .expected = "viridis, magma or diverging", .found = colormapText});

  plot::Figure figure;
  const TaskContext ctx;
  if (viewName == "training") {
    std::vector<std::unique_ptr<MetricsReader>> readers;
    std::vector<plot::RunCurve> curves;
    for (const std::string& dir : {input}) {
      if (!isRunDirectory(dir)) throw Error({.what = "not a run directory", .where = dir, .hint = "pass the --out of `sharelens train`"});
      readers.push_back(std::make_unique<MetricsReader>(std::filesystem::path(dir) / "metrics.jsonl"));
      readers.back()->poll();
      curves.push_back({readJsonFile(std::filesystem::path(dir) / "run.json")["topology"].value("name", dir), &readers.back()->points()});
    }
    const std::vector<std::string> metrics = {"loss", "val_loss", "lr", "grad_norm", "tokens_per_s"};
    const auto it = std::find(metrics.begin(), metrics.end(), metricText);
    if (it == metrics.end()) throw Error({.what = "unknown metric", .where = "--metric", .expected = "loss val_loss lr grad_norm tokens_per_s", .found = metricText});
    figure = plot::trainingFigure(curves, static_cast<plot::RunMetric>(it - metrics.begin()), plot::RunAxis::Step, 0.6);
  } else if (viewName == "topology") {
    figure = plot::topologyFigure(readTopologyFile(input));
  } else {
    const Source src(input, threshold);
    const double t = src.threshold();
    if (viewName == "spectrum") {
      std::vector<MatrixSpectrum> spectra = src.report("spectra") ? spectraFromJson(*src.report("spectra"))
                                                                   : computeSpectra(src.ckpt(), src.view(), src.backend(), {t, false, false}, ctx);
      int64_t layers = 0;
      for (const MatrixSpectrum& s : spectra) layers = std::max(layers, s.id.layer + 1);
      std::vector<const MatrixSpectrum*> chosen;
      for (const MatrixSpectrum& s : spectra)
        if (s.id.proj == *proj && s.id.head < 0 && (s.id.layer == 0 || s.id.layer == layers / 2 || s.id.layer == layers - 1))
          chosen.push_back(&s);
      figure = plot::spectrumFigure(chosen, true, "Singular-value spectra: " + projText);
    } else if (viewName == "heads") {
      const HeadDiffResult h = src.report("head_differences") ? headDiffFromJson(*src.report("head_differences"))
                                                               : computeHeadDifferences(src.ckpt(), src.view(), src.backend(), {.threshold = t}, ctx);
      if (layer >= static_cast<int64_t>(h.layers.size()))
        throw Error({.what = "layer out of range", .where = "--layer", .expected = "< " + std::to_string(h.layers.size()), .found = std::to_string(layer)});
      figure = plot::headDifferenceFigure(h.layers[static_cast<size_t>(layer)], h.threshold, *colormap);
    } else if (viewName == "layers") {
      const Proj only[] = {*proj};
      const LayerDiffResult r = src.report("layer_differences") ? layerDiffFromJson(*src.report("layer_differences"))
                                                                 : computeLayerDifferences(src.ckpt(), src.view(), src.backend(), t, only, ctx);
      const auto it = std::find_if(r.maps.begin(), r.maps.end(), [&](const LayerDiffMap& m) { return m.proj == *proj; });
      if (it == r.maps.end()) throw Error({.what = "no map for projection " + projText, .where = src.input()});
      figure = plot::layerDifferenceFigure(*it, r.threshold, *colormap);
    } else if (viewName == "masa-coefficients" || viewName == "masa-variance") {
      MatrixPcaOptions o;
      o.projections = {*proj};
      std::vector<MatrixPcaGroup> groups = src.report("matrix_pca") ? matrixPcaFromJson(*src.report("matrix_pca"))
                                                                     : computeMatrixPca(src.ckpt(), src.view(), o, ctx);
      std::vector<const MatrixPcaGroup*> ofProj;
      for (const MatrixPcaGroup& g : groups)
        if (g.proj == *proj) ofProj.push_back(&g);
      if (ofProj.empty()) throw Error({.what = "no matrix PCA for projection " + projText, .where = src.input()});
      figure = viewName == "masa-variance" ? plot::masaVarianceFigure(ofProj) : plot::masaCoefficientFigure(*ofProj.front());
    } else if (viewName == "masa-correlation") {
      const auto dictionaries = trainedDictionaries(src.ckpt());
      const auto it = std::find_if(dictionaries.begin(), dictionaries.end(), [&](const TrainedDictionary& d) { return d.proj == *proj; });
      if (it == dictionaries.end())
        throw Error({.what = "no learned MASA atoms for projection " + projText, .where = src.input(),
                     .hint = "the atom-correlation map needs a ShareLens checkpoint trained with MASA"});
      figure = plot::atomCorrelationFigure(atomCorrelation(it->atoms), "(learned atoms, " + projText + ")");
    } else if (viewName == "directshare") {
      const DirectShareResult r = src.report("directshare") ? directShareFromJson(*src.report("directshare"))
                                                             : computeDirectShare(src.ckpt(), src.view(), ratio, ctx);
      figure = plot::directShareFigure(r);
    } else if (viewName == "embedding-spectrum" || viewName == "factorization") {
      const EmbeddingStudy e = src.report("embedding") ? embeddingFromJson(*src.report("embedding"))
                                                        : computeEmbeddingStudy(src.ckpt(), src.view(), src.backend(), t, ctx);
      figure = viewName == "factorization" ? plot::factorizationFigure(e) : plot::embeddingSpectrumFigure(e);
    } else if (viewName == "layer-outputs" || viewName == "kl-drift" || viewName == "attention-similarity") {
      ProbeOptions probe;
      probe.tokens = tokens;
      const ProbeResult r = probeCheckpoint(input, probe, ctx);
      if (viewName == "kl-drift") {
        figure = plot::klDriftFigure(r.klDrift, groupsFromKlDrift(r.klDrift, r.layers));
      } else if (viewName == "attention-similarity") {
        figure = plot::attentionSimilarityFigure(r.attentionSimilarity, r.headLabels, *colormap);
      } else {
        figure = plot::layerOutputDifferenceFigure(pairwiseDifferenceMap(r.residualDeltas, src.backend(), t, ctx),
                                                   r.tokens, t, *colormap);
      }
    } else {
      throw Error({.what = "unknown view", .where = "--view", .expected = kViews, .found = viewName});
    }
  }
  exportFigure(figure, out, options);
  std::cout << "wrote " << out << "\n";
  return 0;
}

}  // namespace sharelens::cli
