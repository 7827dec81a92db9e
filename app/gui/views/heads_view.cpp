// Head differences: per-layer heatmap of effective ranks of W_a - W_b among the layer's Q, K, V and O heads;
// clicking a cell computes that difference's spectrum; the lowest-rank pairs of the whole model beside it.
#include <imgui.h>

#include "analysis/backend.hpp"
#include "app/gui/view.hpp"
#include "app/plot/figures.hpp"
#include "app/plot/plot_widget.hpp"

namespace sharelens::gui {
namespace {

class HeadsPanel : public View {
 public:
  ViewId id() const override { return ViewId::Heads; }

  std::vector<std::pair<std::string, plot::Figure>> figures(AppContext& ctx) override {
    std::vector<std::pair<std::string, plot::Figure>> out;
    const LoadedModel* m = ctx.workspace.current();
    const HeadDiffResult* h = m ? m->results.get<HeadDiffResult>("heads") : nullptr;
    if (!h || h->layers.empty()) return out;
    const auto& layer = h->layers[static_cast<size_t>(
        std::clamp<int64_t>(m_layer, 0, static_cast<int64_t>(h->layers.size()) - 1))];
    out.emplace_back("heads-layer" + std::to_string(layer.layer),
                     plot::headDifferenceFigure(layer, h->threshold, ctx.settings.colormap));
    if (m_pair)
      out.emplace_back("head-pair-spectrum",
                       plot::spectrumFigure({&*m_pair}, true, "Spectrum of " + m_pair->id.name));
    return out;
  }

  void draw(AppContext& ctx) override {
    drawStepSlider(ctx);
    if (drawNoModelHint(ctx)) return;
    const LoadedModel& m = *ctx.workspace.current();
    if (!drawAnalysisState(ctx, m, "heads")) return;
    const HeadDiffResult& h = *m.results.get<HeadDiffResult>("heads");
    forgetWhatBelongsToAnotherResult(m.results.result("heads").get());
    const int maxLayer = static_cast<int>(h.layers.size()) - 1;
    int layer = static_cast<int>(std::clamp<int64_t>(m_layer, 0, maxLayer));
    ImGui::SetNextItemWidth(240);
    if (ImGui::SliderInt("layer", &layer, 0, maxLayer)) m_layer = layer;
    m_layer = layer;
    const plot::Figure& figure = ctx.figures.get(
        m.results.result("heads"),
        "heads/" + std::to_string(layer) + "/" + std::to_string(static_cast<int>(ctx.settings.colormap)),
        [&] {
          return plot::headDifferenceFigure(h.layers[static_cast<size_t>(layer)], h.threshold,
                                            ctx.settings.colormap);
        });
    drawExportButtons(ctx, figure, "heads-layer" + std::to_string(layer), &m_plot);
    if (ImGui::BeginTable("##heads", 2, ImGuiTableFlags_Resizable)) {
      ImGui::TableNextColumn();
      const float size = std::min(ImGui::GetContentRegionAvail().x, ImGui::GetContentRegionAvail().y - 10);
      const auto events =
          plot::plotWidget("##headmap", figure, m_plot, ImVec2(size, size), ctx.textures, ctx.style);
      if (events.clickedCell && events.clickedCell->first != events.clickedCell->second)
        computePair(ctx, m, h.layers[static_cast<size_t>(layer)], events.clickedCell->first,
                    events.clickedCell->second);
      ImGui::TableNextColumn();
      drawSectionHeader("lowest-rank pairs in the model");
      if (ImGui::BeginTable("##lowest", 4, ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY, ImVec2(0, 220))) {
        for (const char* col : {"layer", "pair", "rank", "rel. diff"}) ImGui::TableSetupColumn(col);
        ImGui::TableHeadersRow();
        for (const HeadPair& p : h.lowest) {
          ImGui::TableNextRow();
          ImGui::TableNextColumn();
          if (ImGui::Selectable(std::to_string(p.layer).c_str(), false, ImGuiSelectableFlags_SpanAllColumns))
            m_layer = p.layer;
          ImGui::TableNextColumn();
          ImGui::Text("%s - %s", p.labelA.c_str(), p.labelB.c_str());
          ImGui::TableNextColumn();
          ImGui::Text("%d", p.rank);
          ImGui::TableNextColumn();
          ImGui::Text("%.3f", p.relativeDifference);
          if (!p.note.empty() && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", p.note.c_str());
        }
        ImGui::EndTable();
      }
      drawSectionHeader("spectrum of the clicked pair");
      if (m_computing) drawPending("the pair's spectrum");
      if (m_pair) {
        const plot::Figure pairFigure =
            plot::spectrumFigure({&*m_pair}, true, "Spectrum of " + m_pair->id.name);
        plot::plotWidget("##pairspectrum", pairFigure, m_pairPlot,
                         ImVec2(-1, std::max(200.0f, ImGui::GetContentRegionAvail().y)), ctx.textures,
                         ctx.style);
      } else if (!m_computing) {
        ImGui::TextDisabled("click a cell of the map");
      }
      ImGui::EndTable();
    }
  }

 private:
  // Another model, step or threshold gives another result: the clicked pair's spectrum and the zoom were of
  // the old one and must not be shown beside the new map.
  void forgetWhatBelongsToAnotherResult(const void* result) {
    if (result == m_shownResult) return;
    m_shownResult = result;
    m_pair.reset();
    m_plot.reset();
    m_pairPlot.reset();
  }

  void computePair(AppContext& ctx, const LoadedModel& m, const HeadDiffLayer& layer, int64_t a, int64_t b) {
    const HeadId ha = layer.heads[static_cast<size_t>(a)], hb = layer.heads[static_cast<size_t>(b)];
    const std::string name = "layer " + std::to_string(layer.layer) + ": " +
                             layer.labels[static_cast<size_t>(a)] + " - " +
                             layer.labels[static_cast<size_t>(b)];
    const auto ckpt = m.checkpoint;
    const auto view = m.view;
    const int64_t l = layer.layer;
    const double threshold = m.threshold;
    m_computing = true;
    const void* forResult = m_shownResult;
    ctx.jobs.submit(
        "spectrum of " + name,
        [=, this](const TaskContext& task) -> JobSystem::Completion {
          FloatMatrix diff = comparableHeadMatrix(*ckpt, *view, l, ha);
          const FloatMatrix other = comparableHeadMatrix(*ckpt, *view, l, hb);
          for (size_t i = 0; i < diff.data.size(); ++i) diff.data[i] -= other.data[i];
          auto backend = makeCpuBackend();
          MatrixSpectrum result;
          result.id.name = name;
          result.spectrum = computeSpectrum(diff, *backend, threshold, task);
          return [this, result, forResult] {
            if (forResult != m_shownResult) return;  // the map changed while it computed
            m_pair = result;
            m_pairPlot.reset();
          };
        },
        [this](JobSystem::Status, const std::string&) { m_computing = false; });  // however it ended
  }

  int64_t m_layer = 0;
  plot::PlotState m_plot, m_pairPlot;
  std::optional<MatrixSpectrum> m_pair;
  const void* m_shownResult = nullptr;  // the heads result the map, zoom and pair belong to (identity only)
  bool m_computing = false;
};

}  // namespace

std::unique_ptr<View> makeHeadsView() {
  return std::make_unique<HeadsPanel>();
}

}  // namespace sharelens::gui
