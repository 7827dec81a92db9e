// The responsiveness benchmark's screen (--bench-ui; issue 14, item 9): a 4096 x 4096 heatmap above ten runs
// of 20,000 points each, the largest figures a session shows at once, while a training run goes on.
#include <imgui.h>

#include <random>

#include "app/gui/view.hpp"
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

plot::Figure curvesFigure() {
  plot::Figure f;
  f.title = "10 runs x 20,000 steps";
  f.xLabel = "step";
  f.yLabel = "loss";
  f.yScale = plot::Scale::Log10;
  std::mt19937 rng(2);
  std::normal_distribution<double> noise(0, 0.05);
  for (int r = 0; r < kRuns; ++r) {
    plot::Series s;
    s.label = "run " + std::to_string(r);
    s.color = plot::seriesColor(r);
    for (int i = 0; i < kPointsPerRun; ++i) {  // a loss curve falling as a power of the step, with noise
      s.x.push_back(i + 1);
      s.y.push_back((2.0 + 0.1 * r) * std::pow(i + 1.0, -0.15) * std::exp(noise(rng)));
    }
    f.series.push_back(std::move(s));
  }
  return f;
}

class UiBenchView : public View {
 public:
  UiBenchView() : m_heatmap(heatmapFigure()), m_curves(curvesFigure()) {}
  ViewId id() const override { return ViewId::UiBench; }
  void draw(AppContext& ctx) override {
    const float half = ImGui::GetContentRegionAvail().y / 2 - ImGui::GetStyle().ItemSpacing.y;
    plot::plotWidget("##bench-heatmap", m_heatmap, m_heatmapState, ImVec2(-1, half), ctx.textures, ctx.style);
    plot::plotWidget("##bench-curves", m_curves, m_curvesState, ImVec2(-1, half), ctx.textures, ctx.style);
  }

 private:
  plot::Figure m_heatmap, m_curves;
  plot::PlotState m_heatmapState, m_curvesState;
};

}  // namespace

std::unique_ptr<View> makeUiBenchView() {
  return std::make_unique<UiBenchView>();
}

}  // namespace sharelens::gui
