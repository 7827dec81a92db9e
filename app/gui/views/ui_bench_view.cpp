// The responsiveness benchmark's screen (--bench-ui; issue 14, item 9): a 4096 x 4096 heatmap above the
// Training view's two panels with ten runs of 20,000 points each, the largest figures a session shows at
// once, while a training run goes on.
#include <imgui.h>

#include <random>

#include "app/gui/view.hpp"
#include "app/gui/views/training_panels.hpp"
#include "app/plot/plot_widget.hpp"

namespace sharelens::gui {
namespace {

constexpr int64_t kSide = 4096;
constexpr int kRuns = 10, kPointsPerRun = 20000;

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
std::vector<std::vector<MetricPoint>> syntheticRuns() {
  std::vector<std::vector<MetricPoint>> runs(kRuns);
  std::mt19937 rng(2);
  std::normal_distribution<double> noise(0, 0.05);
  for (int r = 0; r < kRuns; ++r)
    for (int i = 1; i <= kPointsPerRun; ++i) {
      MetricPoint p;
      p.step = i;
      p.tokens = 8192.0 * i;
      p.loss = (2.0 + 0.1 * r) * std::pow(i, -0.15) * std::exp(noise(rng));
      if (i % 100 == 0) p.valLoss = (2.0 + 0.1 * r) * std::pow(i, -0.15);
      p.lr = 3e-4;
      p.elapsed = 0.05 * i;
      runs[static_cast<size_t>(r)].push_back(p);
    }
  return runs;
}

class UiBenchView : public View {
 public:
  UiBenchView() : m_heatmap(heatmapFigure()), m_points(syntheticRuns()) {
    for (size_t r = 0; r < m_points.size(); ++r)
      m_runs.push_back({"run " + std::to_string(r), &m_points[r], /*revision=*/1});  // never changes
  }
  ViewId id() const override { return ViewId::UiBench; }
  void draw(AppContext& ctx) override {
    const float half = ImGui::GetContentRegionAvail().y / 2 - ImGui::GetStyle().ItemSpacing.y;
    plot::plotWidget("##bench-heatmap", m_heatmap, m_heatmapState, ImVec2(-1, half), ctx.textures, ctx.style);
    m_training.draw(ctx, m_runs, TrainingPanelOptions{}, ImVec2(0, half));
  }

 private:
  plot::Figure m_heatmap;
  plot::PlotState m_heatmapState;
  std::vector<std::vector<MetricPoint>> m_points;
  std::vector<plot::RunCurve> m_runs;
  TrainingPanels m_training;
};

}  // namespace

std::unique_ptr<View> makeUiBenchView() {
  return std::make_unique<UiBenchView>();
}

}  // namespace sharelens::gui
