// The figures of training runs and experiments: the Training view's curves (each run, or seed groups with
// their mean and band) and an experiment's forest, bars and validation curves.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>

#include "app/plot/figure_memo.hpp"  // WordHash
#include "app/plot/figures.hpp"
#include "core/statistics.hpp"

namespace sharelens::plot {

std::vector<double> exponentialMovingAverage(const std::vector<double>& values, double weight) {
  std::vector<double> out;
  out.reserve(values.size());
  double average = 0, debias = 0;
  for (double v : values) {
    if (!std::isfinite(v)) {
      out.push_back(NAN);
      continue;
    }
    average = weight * average + (1 - weight) * v;
    debias = weight * debias + (1 - weight);
    out.push_back(average / debias);
  }
  return out;
}

namespace {

// One colour per trained arm; a matched baseline takes the colour of the arm it matches.
Rgb armColor(const ExperimentReport& r, size_t index) {
  const ArmSummary& a = r.arms[index];
  const std::string& key = a.matchedBaselineOf.empty() ? a.name : a.matchedBaselineOf;
  int slot = 0;
  for (const ArmSummary& other : r.arms) {
    if (!other.matchedBaselineOf.empty()) continue;
    if (other.name == key) break;
    ++slot;
  }
  return seriesColor(slot);
}

}  // namespace

Figure experimentBarsFigure(const ExperimentReport& r) {
  Figure f;
  const size_t seeds = r.experiment.seeds.size();
  const bool everySeed = std::all_of(r.arms.begin(), r.arms.end(),
                                     [&](const ArmSummary& a) { return a.nll.n == static_cast<int>(seeds); });
  f.title = r.experiment.name + ": final held-out NLL, 95% interval over " +
            (everySeed ? std::to_string(seeds) + " seeds"
                       : "the seeds each arm finished (of " + std::to_string(seeds) + ")");
  f.subtitle = r.experiment.claim.paper.empty()
                   ? r.experiment.description
                   : r.experiment.claim.paper + ", " + r.experiment.claim.section;
  f.yLabel = "held-out NLL (nats / token)";
  for (size_t i = 0; i < r.arms.size(); ++i) {
    const ArmSummary& a = r.arms[i];
    f.xCategories.push_back(a.name);
    Series s;
    s.label = a.name + (a.matchedBaselineOf.empty() ? "" : " (matched baseline)");
    if (a.nll.n == 1)
      s.label += " (1 seed, no interval)";
    else if (!everySeed)
      s.label += " (" + std::to_string(a.nll.n) + " seeds)";
    s.style = SeriesStyle::Bars;
    s.color = armColor(r, i);
    s.hatched = !a.matchedBaselineOf.empty();
    s.x = {static_cast<double>(i)};
    s.y = {a.nll.n > 0 ? a.nll.mean : NAN};
    s.error = {a.nll.n > 1 ? a.nll.halfWidth : 0.0};
    f.series.push_back(std::move(s));
  }
  return f;
}

Figure experimentForestFigure(const ExperimentReport& r) {
  Figure f;
  f.title = r.experiment.name + ": each arm minus " + r.experiment.reference +
            ", paired by seed (95% intervals; below 0 is better)";
  f.subtitle = r.experiment.claim.paper.empty()
                   ? r.experiment.description
                   : r.experiment.claim.paper + ", " + r.experiment.claim.section;
  f.yLabel = "held-out NLL difference (nats / token)";
  Series seeds{.label = "over seeds (t)", .color = {0, 90, 160}, .style = SeriesStyle::Markers};
  Series documents{.label = "over held-out documents (bootstrap)",
                   .color = {120, 120, 120},
                   .style = SeriesStyle::Markers};
  Series paper{.label = "the paper's difference", .color = {200, 60, 60}, .style = SeriesStyle::Markers};
  Series margin{.label = "no-worse margin", .color = {230, 140, 0}, .dashed = true};
  for (const ArmSummary& a : r.arms) {
    // An A/A arm of anything but the reference (a derived reference's source, re-initialised) minus the
    // reference is no A/A difference: left out.
    if (a.name == r.experiment.reference || (!a.aaOf.empty() && a.aaOf != r.experiment.reference)) continue;
    const double x = static_cast<double>(f.xCategories.size());
    f.xCategories.push_back(a.aaOf.empty() ? a.name : a.name + " (A/A)");
    seeds.x.push_back(x);
    seeds.y.push_back(a.difference.n > 0 ? a.difference.mean : NAN);
    seeds.error.push_back(a.difference.n > 1 ? a.difference.halfWidth : 0.0);
    if (std::isfinite(a.documentDifference.lo)) {  // drawn as its interval, centred between its bounds
      documents.x.push_back(x + 0.2);
      documents.y.push_back((a.documentDifference.lo + a.documentDifference.hi) / 2);
      documents.error.push_back((a.documentDifference.hi - a.documentDifference.lo) / 2);
    }
    if (a.paperEffect) paper.x.push_back(x - 0.2), paper.y.push_back(*a.paperEffect);
    if (a.expect == "no-worse") {  // a segment across the arm's column, apart from the others
      margin.x.insert(margin.x.end(), {x - 0.4, x + 0.4, x + 0.4});
      margin.y.insert(margin.y.end(), {a.margin, a.margin, NAN});
    }
  }
  const double n = static_cast<double>(f.xCategories.size());
  f.series.push_back(Series{.label = "no difference",
                            .x = {-0.5, n - 0.5},
                            .y = {0.0, 0.0},
                            .color = {150, 150, 150},
                            .dashed = true});
  for (Series* s : {&margin, &documents, &seeds, &paper})
    if (!s->x.empty()) f.series.push_back(std::move(*s));
  return f;
}

Figure experimentCurvesFigure(const ExperimentReport& r, bool againstFlops) {
  Figure f;
  f.title = r.experiment.name + ": validation loss, mean +- 1 sd over seeds";
  f.xLabel = againstFlops ? "training FLOPs" : "training tokens";
  f.yLabel = "validation loss (nats / token)";
  for (size_t i = 0; i < r.arms.size(); ++i) {
    const ArmSummary& a = r.arms[i];
    if (a.curveTokens.empty()) continue;
    Series s;
    s.label = a.name;
    s.color = armColor(r, i);
    s.dashed = !a.matchedBaselineOf.empty();
    for (size_t k = 0; k < a.curveTokens.size(); ++k) {
      s.x.push_back(againstFlops ? a.curveTokens[k] * a.flopsPerToken : a.curveTokens[k]);
      s.y.push_back(a.curveMean[k]);
      s.bandLow.push_back(a.curveMean[k] - a.curveSd[k]);
      s.bandHigh.push_back(a.curveMean[k] + a.curveSd[k]);
    }
    f.series.push_back(std::move(s));
  }
  return f;
}

std::array<Figure, 2> trainingPanels(const std::vector<RunCurve>& runs, const TrainingFigureParams& p,
                                     const std::vector<SeedGroup>& groups) {
  if (!p.groupSeeds)
    return {trainingFigure(runs, p.metric, p.axis, p.smoothing, p.logY),
            trainingFigure(runs, RunMetric::ValidationLoss, p.axis, 0, p.logY)};
  std::vector<RunCurveGroup> curves;
  for (const SeedGroup& g : groups) {
    RunCurveGroup& c = curves.emplace_back(RunCurveGroup{g.label, {}});
    for (const size_t i : g.members) c.members.push_back(runs.at(i));
  }
  return {seedGroupFigure(curves, p.metric, p.axis, p.smoothing, p.logY),
          seedGroupFigure(curves, RunMetric::ValidationLoss, p.axis, 0, p.logY)};
}

std::string_view runMetricName(RunMetric m) {
  constexpr std::string_view names[] = {"loss", "validation loss", "learning rate", "gradient norm",
                                        "tokens / s"};
  return names[static_cast<int>(m)];
}

namespace {

// Run `index`'s series in a training figure: its points, faint when a moving average is drawn over them,
// and that average (none when the metric is not smoothed).
struct RunSeries {
  Series raw;
  std::optional<Series> smoothed;
};

bool smoothed(RunMetric metric, double smoothing) {
  return smoothing > 0 && metric != RunMetric::LearningRate && metric != RunMetric::ValidationLoss;
}

double metricValue(const MetricPoint& p, RunMetric metric) {
  return metric == RunMetric::Loss             ? p.loss
         : metric == RunMetric::ValidationLoss ? p.valLoss
         : metric == RunMetric::LearningRate   ? p.lr
         : metric == RunMetric::GradNorm       ? p.gradNorm
                                               : p.tokensPerSecond;
}

double axisValue(const MetricPoint& p, RunAxis axis) {
  return axis == RunAxis::Step ? static_cast<double>(p.step) : axis == RunAxis::Tokens ? p.tokens : p.elapsed;
}

RunSeries trainingRunSeries(const RunCurve& run, size_t index, RunMetric metric, RunAxis axis,
                            double smoothing) {
  std::vector<double> xs, ys;
  xs.reserve(run.points->size());
  ys.reserve(run.points->size());
  for (const MetricPoint& p : *run.points) {
    const double v = metricValue(p, metric);
    if (!std::isfinite(v)) continue;
    xs.push_back(axisValue(p, axis));
    ys.push_back(v);
  }
  const Rgb c = seriesColor(static_cast<int>(index));
  const bool smooth = smoothed(metric, smoothing);
  // A run whose points carry a revision gives its series one: the same points, revision and choices
  // give the same values, so an unchanged run's series are not hashed or traced again on screen.
  auto revisionOf = [&](uint64_t kind) -> uint64_t {
    if (run.revision == 0) return 0;
    const uint64_t r = WordHash()
                           .add(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(run.points)))
                           .add(run.revision)
                           .add(uint64_t{static_cast<uint8_t>(metric)})
                           .add(uint64_t{static_cast<uint8_t>(axis)})
                           .add(smoothing)
                           .add(kind)
                           .value();
    return r == 0 ? 1 : r;
  };
  RunSeries out;
  Series& raw = out.raw;
  raw.color = smooth
                  ? Rgb{static_cast<uint8_t>((c.r + 2 * 200) / 3), static_cast<uint8_t>((c.g + 2 * 200) / 3),
                        static_cast<uint8_t>((c.b + 2 * 200) / 3)}
                  : c;
  raw.width = smooth ? 1.0f : 1.8f;
  raw.style = metric == RunMetric::ValidationLoss ? SeriesStyle::LineAndMarkers : SeriesStyle::Line;
  raw.revision = revisionOf(0);
  if (smooth) {
    Series& ema = out.smoothed.emplace();
    ema.label = run.label;
    ema.x = xs;
    ema.y = exponentialMovingAverage(ys, smoothing);
    ema.color = c;
    ema.width = 2.0f;
    ema.revision = revisionOf(1);
  } else {
    raw.label = run.label;
  }
  raw.x = std::move(xs);
  raw.y = std::move(ys);
  return out;
}

// The training figure's frame: title, axes and scale.
Figure trainingFrame(RunMetric metric, RunAxis axis, bool logY) {
  Figure f;
  f.title = "Training: " + std::string(runMetricName(metric));
  f.xLabel = axis == RunAxis::Step ? "step" : axis == RunAxis::Tokens ? "tokens" : "seconds";
  f.yLabel = std::string(runMetricName(metric));
  if (logY || metric == RunMetric::LearningRate || metric == RunMetric::GradNorm) f.yScale = Scale::Log10;
  return f;
}

}  // namespace

Figure seedGroupFigure(const std::vector<RunCurveGroup>& groups, RunMetric metric, RunAxis axis,
                       double smoothing, bool logY) {
  Figure f = trainingFrame(metric, axis, logY);
  const bool smooth = smoothed(metric, smoothing);
  std::string
      partial;  // "cycle: 2 of its 3 seeds so far" for groups where some seed has not logged this metric
  for (size_t g = 0; g < groups.size(); ++g) {
    const RunCurveGroup& group = groups[g];
    // Each member's (smoothed) values by step, then the steps every member logged.
    std::vector<std::map<int64_t, std::pair<double, double>>> byStep;  // step -> (x, y)
    for (const RunCurve& run : group.members) {
      std::vector<int64_t> steps;
      std::vector<double> xs, ys;
      for (const MetricPoint& p : *run.points) {
        const double v = metricValue(p, metric);
        if (!std::isfinite(v)) continue;
        steps.push_back(p.step);
        xs.push_back(axisValue(p, axis));
        ys.push_back(v);
      }
      if (ys.empty()) continue;  // nothing logged yet (or nothing finite): not a seed of the curve
      if (smooth) ys = exponentialMovingAverage(ys, smoothing);
      auto& m = byStep.emplace_back();
      for (size_t i = 0; i < steps.size(); ++i) m[steps[i]] = {xs[i], ys[i]};
    }
    Series s;
    const size_t n = byStep.size();
    // Named by its seeds that have logged anything, in every panel alike (the loss and the validation panel
    // share one legend in an export); a panel whose metric fewer of them have logged says so.
    const size_t started = static_cast<size_t>(std::count_if(
        group.members.begin(), group.members.end(), [](const RunCurve& r) { return !r.points->empty(); }));
    s.label = started > 1 ? group.label + " (" + std::to_string(started) + " seeds)" : group.label;
    if (n < started)
      partial += (partial.empty() ? "" : "; ") + group.label + ": " + std::to_string(n) + " of its " +
                 std::to_string(started) + " seeds so far";
    s.color = seriesColor(static_cast<int>(g));
    s.width = 2.0f;
    s.style = metric == RunMetric::ValidationLoss ? SeriesStyle::LineAndMarkers : SeriesStyle::Line;
    if (!byStep.empty())
      for (const auto& [step, first] : byStep.front()) {
        std::vector<double> xs, ys;
        for (const auto& m : byStep)
          if (const auto at = m.find(step); at != m.end()) {
            xs.push_back(at->second.first);
            ys.push_back(at->second.second);
          }
        if (ys.size() < n) continue;  // a step some member has not logged (yet)
        const MeanInterval interval = meanInterval(ys);
        s.x.push_back(meanInterval(xs).mean);
        s.y.push_back(interval.mean);
        if (n > 1) {
          s.bandLow.push_back(interval.lo());
          s.bandHigh.push_back(interval.hi());
        }
      }
    f.series.push_back(std::move(s));
  }
  char ema[48] = "";
  if (smooth) std::snprintf(ema, sizeof ema, "; each seed smoothed by EMA %.2f", smoothing);
  f.subtitle = std::string("mean over seeds, band: its 95% Student-t interval") + ema;
  if (!partial.empty()) f.subtitle += "; " + partial;
  return f;
}

Figure trainingFigure(const std::vector<RunCurve>& runs, RunMetric metric, RunAxis axis, double smoothing,
                      bool logY) {
  Figure f = trainingFrame(metric, axis, logY);
  // Every run's raw series first, then the averages: no run's faint noise hides another's average.
  f.series.resize(runs.size() * (smoothed(metric, smoothing) ? 2 : 1));
  for (size_t i = 0; i < runs.size(); ++i) updateTrainingRun(f, runs, i, metric, axis, smoothing);
  if (smoothing > 0) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "faint: raw; solid: EMA %.2f", smoothing);
    f.subtitle = buf;
  }
  return f;
}

void updateTrainingRun(Figure& f, const std::vector<RunCurve>& runs, size_t index, RunMetric metric,
                       RunAxis axis, double smoothing) {
  RunSeries s = trainingRunSeries(runs.at(index), index, metric, axis, smoothing);
  f.series.at(index) = std::move(s.raw);
  if (s.smoothed) f.series.at(runs.size() + index) = std::move(*s.smoothed);
}

}  // namespace sharelens::plot
