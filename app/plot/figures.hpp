// Figures of the analyses and runs: one builder per view, shared by the GUI and `sharelens export`, so a
// view and its export always agree. Pure functions of results (no ImGui, no GL).
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/activations.hpp"
#include "analysis/difference_maps.hpp"
#include "analysis/directshare.hpp"
#include "analysis/embedding_study.hpp"
#include "analysis/matrix_pca.hpp"
#include "analysis/rank_dynamics.hpp"
#include "analysis/spectra.hpp"
#include "app/plot/figure.hpp"
#include "app/workflows/compress.hpp"
#include "core/experiment_report.hpp"
#include "core/metrics_csv.hpp"
#include "core/run_dir.hpp"
#include "core/run_groups.hpp"
#include "core/tensor_summary.hpp"
#include "core/topology.hpp"

namespace sharelens::plot {

// Training dynamics: one quantity of each chosen matrix against the training step, a line per matrix.
// What the rank-against-step figure plots: one of a matrix's spectral quantities, or the distribution of its
// weights (TensorBoard's distribution view: the median, and bands between the percentiles that would be 0.5
// and 1.5 standard deviations either side of a normal distribution's mean).
enum class RankQuantity : uint8_t { EffectiveRank, StableRank, SpectralNorm, EsdAlpha, Weights };
// Their names, in the enum's order, as `export --quantity` takes them.
inline constexpr std::array<std::string_view, 5> kRankQuantityNames = {
    "effective-rank", "stable-rank", "spectral-norm", "esd-alpha", "weights"};
Figure rankDynamicsFigure(const RankDynamics& dynamics, RankQuantity quantity);

// Singular values of the chosen matrices (log y); normalised divides by sigma_1. Effective-rank markers.
// A fraction as a percent for labels: 0.95 -> "95%", 0.904 -> "90.4%" (never rounded to another threshold).
std::string percentText(double fraction);
// "PREFIX0", "PREFIX1", ..., "PREFIX<n-1>": a heatmap's row or column labels.
std::vector<std::string> numberedLabels(const std::string& prefix, int64_t n);

Figure spectrumFigure(const std::vector<const MatrixSpectrum*>& chosen, bool normalised,
                      const std::string& title, bool logY = true);
// One cell of a head map, W_a - W_b (analysis/difference_maps.hpp headPairSpectrum): its normalised spectrum.
Figure headPairSpectrumFigure(const MatrixSpectrum& pair);
// A tensor's values (core/tensor_summary.hpp): its histogram's bins as bars, titled with its name.
Figure tensorHistogramFigure(const TensorSummary& summary);

// Every pair of the layer's attention matrices (the low-rank sharing paper's Sec. 3.1: "pairwise differences
// between all attention weight matrices within each layer", Fig. 2a), or with `proj` only that projection's
// heads. `fitRange`: the colours span the shown off-diagonal ranks instead of 0..the largest (a trained
// model's ranks sit near the top and read as one colour).
struct HeadMapChoice {
  std::optional<Proj> proj;
  bool fitRange = false;
};
Figure headDifferenceFigure(const HeadDiffLayer& layer, double threshold, Colormap colormap,
                            const HeadMapChoice& choice = {});
// The heads a head map shows, as indices into layer.heads (all of them, or those of the chosen projection).
std::vector<int64_t> headMapIndices(const HeadDiffLayer& layer, const std::optional<Proj>& proj);
Figure layerDifferenceFigure(const LayerDiffMap& map, double threshold, Colormap colormap);
// The activation version: ranks of dh_l - dh_m over `tokens` tokens.
Figure layerOutputDifferenceFigure(const RankMap& map, int64_t tokens, double threshold, Colormap colormap);

Figure masaCoefficientFigure(const MatrixPcaGroup& group);                      // S x |G|
Figure masaVarianceFigure(const std::vector<const MatrixPcaGroup*>& groups);    // explained variance vs S
Figure atomCorrelationFigure(const FloatMatrix& phi, const std::string& what);  // S x S, diverging
// The drift with the MASA groups it gave, the subtitle naming the grouping rule and the lens.
Figure klDriftFigure(const ActivationResults& a);

// "L3.h5" (a head of an MHA model) or "L3.g1" (a KV group): the one naming style of DirectShare units.
std::string unitLabel(const DirectShareResult& result, int64_t layer, int64_t unit);
Figure directShareFigure(const DirectShareResult& result);  // units x units similarity
Figure attentionSimilarityFigure(const FloatMatrix& similarity, const std::vector<std::string>& labels,
                                 Colormap colormap);

Figure embeddingSpectrumFigure(const EmbeddingStudy& study);
Figure factorizationFigure(const EmbeddingStudy& study);  // relative error vs r, parameters on the subtitle
// The low-rank sharing paper's Fig. 2c: held-out NLL with the embedding truncated to rank r, against r, with
// the NLL as stored as a dashed line.
Figure embeddingLossFigure(const EmbeddingStudy& study);
// The MASA paper's pretrained-model comparison: held-out perplexity against the share of attention parameters
// kept, one curve per method (MASA with refinement, without it, the SVD baseline), the original as a dashed
// line.
Figure compressionSweepFigure(const SweepReport& sweep);
// An experiment (core/experiment_report.hpp): each arm's final held-out NLL as a bar with its 95% interval
// over seeds, a matched baseline hatched in the colour of the arm it matches (the low-rank sharing paper's
// Figure 4).
Figure experimentBarsFigure(const ExperimentReport& report);
// The comparison itself (issue 35), a forest plot: for every arm but the reference, its paired difference
// from the reference (arm - reference, nats/token) with the 95% interval over seeds; beside it the 95%
// interval over held-out documents (bootstrap); a dashed line at zero, each no-worse claim's margin, and the
// paper's own difference where the experiment gives it. Lower is better for the arm.
Figure experimentForestFigure(const ExperimentReport& report);
// Each arm's mean validation curve over seeds with a +-1 sd band, against training tokens or training FLOPs.
Figure experimentCurvesFigure(const ExperimentReport& report, bool againstFlops);

enum class RunMetric { Loss, ValidationLoss, LearningRate, GradNorm, TokensPerSecond };
enum class RunAxis { Step, Tokens, Seconds };
using RunCurve = NamedCurve;  // a run's label and its points (core/metrics_csv.hpp)
// Raw points faint, exponential moving average (0 = none) solid, one colour per run; every run's raw series
// come first, then the averages, drawn over all of them. The learning rate and
// gradient norm are always on a log axis; logY puts the others there too.
Figure trainingFigure(const std::vector<RunCurve>& runs, RunMetric metric, RunAxis axis, double smoothing,
                      bool logY = false);
// Gives run `index` of `runs` in `figure`, which trainingFigure built from these runs with the same choices
// while the run had other points, the series trainingFigure would build now; the other runs' series are left
// as they are. A run that logs a step costs its own series, not all of them (ten runs of 20,000 points: about
// 6 ms against 0.6 ms).
void updateTrainingRun(Figure& figure, const std::vector<RunCurve>& runs, size_t index, RunMetric metric,
                       RunAxis axis, double smoothing);
std::string_view runMetricName(RunMetric m);

// Runs that differ only in their seeds (core/run_groups.hpp) drawn as one curve each: at every step all the
// group's members logged, the mean over members of the metric (each member smoothed first, as
// trainingFigure smooths it), with the 95% Student-t interval of that mean as a band (t_{0.975, n-1} sd /
// sqrt(n); none for a group of one). Labels say how many seeds the group has that have logged anything (a run
// that has logged nothing yet does not hold its group's curve back), the same in every panel; a panel whose
// metric fewer of them have logged says so in its subtitle ("cycle: 2 of its 3 seeds so far").
struct RunCurveGroup {
  std::string label;
  std::vector<RunCurve> members;
};
Figure seedGroupFigure(const std::vector<RunCurveGroup>& groups, RunMetric metric, RunAxis axis,
                       double smoothing, bool logY = false);

// The Training view's choices, which `sharelens export --view training` takes as flags.
struct TrainingFigureParams {
  RunMetric metric = RunMetric::Loss;
  RunAxis axis = RunAxis::Step;
  float smoothing = 0.6f;   // the moving average's weight of the past (0: none)
  bool logY = false;        // the loss panels on a log axis too
  bool groupSeeds = false;  // runs that differ only in their seeds as one mean curve with a 95% band
  bool operator==(const TrainingFigureParams&) const = default;
};
// The metric's and the validation loss's ids on the command line ("loss", "val_loss", "lr", "grad_norm",
// "tokens_per_s"), in RunMetric's order.
inline constexpr std::array<std::string_view, 5> kRunMetricIds = {"loss", "val_loss", "lr", "grad_norm",
                                                                  "tokens_per_s"};
inline constexpr std::array<std::string_view, 3> kRunAxisIds = {"step", "tokens", "seconds"};

// The Training view's two panels, [the chosen metric, the validation loss], of `runs` (labelled as the
// monitor labels them), or with p.groupSeeds of `groups` (core/run_groups.hpp: indices into runs) as one
// curve each. The view and `export --view training` both draw these.
std::array<Figure, 2> trainingPanels(const std::vector<RunCurve>& runs, const TrainingFigureParams& p,
                                     const std::vector<SeedGroup>& groups);

// A topology as a layers x {attention, FFN} map coloured by unique block.
Figure topologyFigure(const Topology& topology);
// The same assignment as a graph: the layers in the middle, the unique attention
// blocks on the left and the FFN blocks on the right, spread over the same height, and an edge from each
// block to every layer that uses it, in the block's colour (the Designer's). x: 0 attention blocks, 1 layers,
// 2 FFN blocks; y: the layer index, layer 0 at the top.
Figure topologyGraphFigure(const Topology& topology);

// Exponential moving average with bias correction (as TensorBoard smooths): weight in [0, 1).
std::vector<double> exponentialMovingAverage(const std::vector<double>& values, double weight);

}  // namespace sharelens::plot
