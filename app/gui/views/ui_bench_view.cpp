// The responsiveness benchmark's screen (--bench-ui; issue 14, item 9): a 4096 x 4096 heatmap above the
// Training view's two panels with ten runs of 20,000 points each, the largest figures a session shows at
// once, while a training run goes on. With --bench-live one of the ten is live: it gains a step at the rate
// the Training view polls a training run's log (every 250 ms), so the panels change as they do while
// watching a run.
#include <imgui.h>

#include <chrono>
#include <random>

#include "app/gui/view.hpp"
#include "app/gui/views/training_panels.hpp"
#include "app/plot/plot_widget.hpp"

namespace sharelens::gui {
namespace {

constexpr int64_t kSide = 4096;
constexpr int kRuns = 10, kPointsPerRun = 20000;
constexpr auto kLiveStepEvery = std::chrono::milliseconds(250);  // RunBook's poll interval (PollThrottle)

plot::Figure heatmapFigure() {
  plot::Heatmap h;
  h.rows = h.cols = kSide;
  h.values.resize(static_cast<size_t>(kSide * kSide));
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(0, 1);
  for (int64_t i = 0; i < kSide * kSide; ++i)  // noise over diagonal stripes: no two cells alike
    h.values[static_cast<size_t>(i)] = u(rng) + static_cast<float>((i / kSide + i % kSide) % 97) / 97.0f;
  h.vmin = 0;
  h.vmax = 2;
  h.colorbarLabel = "value";
  plot::Figure f;
  f.title = "4096 x 4096 heatmap";
  f.heatmap = std::move(h);
  return f;
}

// Ten runs of 20,000 logged steps: a loss falling as a power of the step with noise, validated every 100
// steps, as the Training view shows them (raw and smoothed, and the validation panel beside).
// Step i of run r: a loss falling as a power of the step with noise, validated every 100 steps.
// `noise` is N(0, 0.05), one for all steps (it makes values in pairs, keeping the second for the next call).
MetricPoint syntheticStep(int r, int i, std::mt19937& rng, std::normal_distribution<double>& noise) {
  MetricPoint p;
  p.step = i;
  p.tokens = 8192.0 * i;
  p.loss = (2.0 + 0.1 * r) * std::pow(i, -0.15) * std::exp(noise(rng));
  if (i % 100 == 0) p.valLoss = (2.0 + 0.1 * r) * std::pow(i, -0.15);
  p.lr = 3e-4;
  p.elapsed = 0.05 * i;
  return p;
}

// Ten runs of 20,000 logged steps, as the Training view shows them (raw and smoothed, and the validation
// panel beside).
std::vector<std::vector<MetricPoint>> syntheticRuns(std::mt19937& rng,
                                                    std::normal_distribution<double>& noise) {
  std::vector<std::vector<MetricPoint>> runs(kRuns);
  for (int r = 0; r < kRuns; ++r)
    for (int i = 1; i <= kPointsPerRun; ++i)
      runs[static_cast<size_t>(r)].push_back(syntheticStep(r, i, rng, noise));
  return runs;
}

class UiBenchView : public View {
 public:
  explicit UiBenchView(bool live)
      : m_live(live), m_heatmap(heatmapFigure()), m_points(syntheticRuns(m_rng, m_noise)) {
    for (size_t r = 0; r < m_points.size(); ++r)
      m_runs.push_back({"run " + std::to_string(r), &m_points[r], /*revision=*/1});
  }
  ViewId id() const override { return ViewId::UiBench; }
  void draw(AppContext& ctx) override {
    if (const auto now = std::chrono::steady_clock::now(); m_live && now - m_lastStep >= kLiveStepEvery) {
      m_lastStep = now;  // the live run (run 0) logs a step
      std::vector<MetricPoint>& live = m_points[0];
      live.push_back(syntheticStep(0, static_cast<int>(live.size()) + 1, m_rng, m_noise));
      ++m_runs[0].revision;
    }
    const float half = ImGui::GetContentRegionAvail().y / 2 - ImGui::GetStyle().ItemSpacing.y;
    plot::plotWidget("##bench-heatmap", m_heatmap, m_heatmapState, ImVec2(-1, half), ctx.textures, ctx.style);
    m_training.draw(ctx, m_runs, TrainingPanelOptions{}, ImVec2(0, half));
  }

 private:
  bool m_live;
  std::mt19937 m_rng{2};
  std::normal_distribution<double> m_noise{0, 0.05};
  std::chrono::steady_clock::time_point m_lastStep = std::chrono::steady_clock::now();
  plot::Figure m_heatmap;
  plot::PlotState m_heatmapState;
  std::vector<std::vector<MetricPoint>> m_points;
  std::vector<plot::RunCurve> m_runs;
  TrainingPanels m_training;
};

}  // namespace

std::unique_ptr<View> makeUiBenchView(bool live) {
  return std::make_unique<UiBenchView>(live);
}

}  // namespace sharelens::gui
