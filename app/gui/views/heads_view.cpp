// Head differences: per-layer heatmap of effective ranks of W_a - W_b among the layer's Q, K, V and O heads
// (every pair, as the low-rank sharing paper's Fig. 2a, or one projection's heads), its colours over 0..max
// or fitted to the shown ranks; clicking a cell, or a row of the model's lowest-rank pairs beside it,
// computes that difference's spectrum.
#include <imgui.h>

#include <optional>
#include <tuple>

#include "analysis/backend.hpp"
#include "analysis/difference_maps.hpp"
#include "app/gui/ui_probe.hpp"
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
    const HeadDiffResult* h = m ? m->results.get(analyses::kHeads) : nullptr;
    if (!h || h->layers.empty()) return out;
    const int64_t index = std::clamp<int64_t>(m_layer, 0, static_cast<int64_t>(h->layers.size()) - 1);
    out.emplace_back(
        "heads-layer" + std::to_string(h->layers[static_cast<size_t>(index)].layer) + stemSuffix(),
        *registryFigure(ctx, *m, plot::figure_ids::kHeads, params(ctx, index), choiceKey(index)));
    if (m_pair) out.emplace_back("head-pair-spectrum", plot::headPairSpectrumFigure(*m_pair));
    return out;
  }

  void draw(AppContext& ctx) override {
    drawStepSlider(ctx);
    if (drawNoModelHint(ctx)) return;
    const LoadedModel& m = *ctx.workspace.current();
    if (!drawAnalysisState(ctx, m, analyses::kHeads)) return;
    const HeadDiffResult& h = *m.results.get(analyses::kHeads);
    forgetWhatBelongsToAnotherResult(m.results.result(analyses::kHeads).get());
    const int maxLayer = static_cast<int>(h.layers.size()) - 1;
    int layer = static_cast<int>(std::clamp<int64_t>(m_layer, 0, maxLayer));
    ImGui::SetNextItemWidth(240);
    if (ImGui::SliderInt("layer", &layer, 0, maxLayer)) m_layer = layer;
    m_layer = layer;
    const HeadDiffLayer& shown = h.layers[static_cast<size_t>(layer)];
    drawChoice(shown);
    const plot::Figure& figure =
        *registryFigure(ctx, m, plot::figure_ids::kHeads, params(ctx, layer), choiceKey(layer));
    probe::state("heads/rows",
                 [&] { return figure.heatmap ? figure.heatmap->rowLabels : std::vector<std::string>{}; });
    drawExportButtons(ctx, figure, "heads-layer" + std::to_string(layer) + stemSuffix(), &m_plot);
    if (ImGui::BeginTable("##heads", 2, ImGuiTableFlags_Resizable)) {
      ImGui::TableNextColumn();
      const float size = std::min(ImGui::GetContentRegionAvail().x, ImGui::GetContentRegionAvail().y - 10);
      const auto events =
          plot::plotWidget("##headmap", figure, m_plot, ImVec2(size, size), ctx.textures, ctx.style);
      if (events.clickedCell && events.clickedCell->first != events.clickedCell->second) {
        const std::vector<int64_t> index = plot::headMapIndices(shown, m_choice.proj);  // cell -> head
        computePair(ctx, m, shown, index[static_cast<size_t>(events.clickedCell->first)],
                    index[static_cast<size_t>(events.clickedCell->second)]);
      }
      ImGui::TableNextColumn();
      drawSectionHeader("lowest-rank pairs in the model");
      if (ImGui::BeginTable("##lowest", 4, ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY, ImVec2(0, 220))) {
        for (const char* col : {"layer", "pair", "rank", "rel. diff"}) ImGui::TableSetupColumn(col);
        ImGui::TableHeadersRow();
        for (const HeadPair& p : h.lowest) {
          ImGui::TableNextRow();
          ImGui::TableNextColumn();
          const std::string row = std::to_string(p.layer) + "##" + p.labelA + "-" + p.labelB;
          if (ImGui::Selectable(row.c_str(), false, ImGuiSelectableFlags_SpanAllColumns)) {
            m_layer = p.layer;  // that layer's map, and the pair's spectrum below
            const auto it = std::find_if(h.layers.begin(), h.layers.end(),
                                         [&](const HeadDiffLayer& l) { return l.layer == p.layer; });
            if (it != h.layers.end()) computePair(ctx, m, *it, p.a, p.b);
          }
          probe::item("heads/lowest/", std::to_string(p.layer), "/", p.labelA, "-", p.labelB);
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
      probe::state("heads/pair", [&] { return m_pair ? m_pair->id.name : std::string(); });
      if (m_pair) {
        const plot::Figure pairFigure = plot::headPairSpectrumFigure(*m_pair);
        plotWithExports(ctx, "##pairspectrum", pairFigure, m_pairPlot, -1,
                        std::max(200.0f, ImGui::GetContentRegionAvail().y), "head-pair-spectrum");
      } else if (!m_computing) {
        ImGui::TextDisabled("click a cell of the map");
      }
      ImGui::EndTable();
    }
  }

 private:
  // Which heads the map shows and how its colours run. O is offered when the map holds O heads.
  void drawChoice(const HeadDiffLayer& layer) {
    const bool hasO =
        std::any_of(layer.heads.begin(), layer.heads.end(), [](auto& h) { return h.proj == Proj::O; });
    // (label, projection, its probe key); the last offered only when the map holds O heads
    const std::tuple<const char*, std::optional<Proj>, const char*> choices[] = {
        {"all pairs (the paper's Fig. 2a)", std::nullopt, "all"},
        {"q heads", Proj::Q, "q"},
        {"k heads", Proj::K, "k"},
        {"v heads", Proj::V, "v"},
        {"o heads", Proj::O, "o"}};
    sameLineIfFits(labelledWidth(230, "heads"));
    ImGui::SetNextItemWidth(230);
    const char* currentLabel = std::get<0>(choices[0]);
    for (const auto& [label, proj, key] : choices)
      if (proj == m_choice.proj) currentLabel = label;
    if (ImGui::BeginCombo("heads", currentLabel)) {
      for (const auto& [label, proj, key] : choices) {
        if (proj == Proj::O && !hasO) continue;
        if (ImGui::Selectable(label, proj == m_choice.proj) && proj != m_choice.proj) {
          m_choice.proj = proj;
          m_plot.reset();
        }
        probe::item("heads/choice/", key);
      }
      ImGui::EndCombo();
    }
    probe::item("heads/choice");  // after EndCombo: while open, the popup is the last item
    if (m_choice.proj == Proj::O && !hasO) m_choice.proj.reset();
    sameLineIfFits(labelledWidth(ImGui::GetFrameHeight(), "fit colours to the ranks"));
    ImGui::Checkbox("fit colours to the ranks", &m_choice.fitRange);
    probe::item("heads/fit");
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip(
          "the colour bar spans the shown ranks instead of 0..the largest: a trained model's "
          "ranks sit near the top and read as one colour otherwise");
  }
  // The registry's head map (what `export --view heads` draws) of the result's layer `index`, with this
  // view's projection and colour range.
  plot::FigureParams params(const AppContext& ctx, int64_t index) const {
    return {.layer = index,
            .colormap = ctx.settings.colormap,
            .headProj = m_choice.proj,
            .fitRange = m_choice.fitRange};
  }
  std::string choiceKey(int64_t index) const {
    return std::to_string(index) + "/" + (m_choice.proj ? std::string(projName(*m_choice.proj)) : "all") +
           (m_choice.fitRange ? "/fit" : "");
  }

  std::string stemSuffix() const {
    return (m_choice.proj ? "-" + std::string(projName(*m_choice.proj)) : "") +
           (m_choice.fitRange ? "-fit" : "");
  }

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
                             layer.labels[static_cast<size_t>(b)];  // the job's name
    const auto ckpt = m.checkpoint;
    const auto view = m.view;
    const int64_t l = layer.layer;
    const double threshold = m.threshold;
    m_computing = true;
    const void* forResult = m_shownResult;
    ctx.jobs.submit(
        "spectrum of " + name,
        [=, this](const TaskContext& task) -> JobSystem::Completion {
          const auto backend = makeCpuBackend();
          MatrixSpectrum result = headPairSpectrum(*ckpt, *view, l, ha, hb, *backend, threshold, task);
          return [this, result, forResult] {
            if (forResult != m_shownResult) return;  // the map changed while it computed
            m_pair = result;
            m_pairPlot.reset();
          };
        },
        [this](JobSystem::Status, const std::string&) { m_computing = false; });  // however it ended
  }

  int64_t m_layer = 0;
  plot::HeadMapChoice m_choice;
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
