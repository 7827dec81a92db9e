// Layer differences: the effective-rank map of W_l - W_m for a chosen projection, beside the same map for
// the layers' outputs over real text (dh_l - dh_m), computed on request.
#include <imgui.h>

#include "analysis/activations.hpp"
#include "analysis/difference_maps.hpp"
#include "app/gui/view.hpp"
#include "app/plot/figures.hpp"
#include "app/plot/plot_widget.hpp"

namespace sharelens::gui {
namespace {

class LayersPanel : public View {
 public:
  ViewId id() const override { return ViewId::Layers; }

  std::vector<std::pair<std::string, plot::Figure>> figures(AppContext& ctx) override {
    std::vector<std::pair<std::string, plot::Figure>> out;
    const LoadedModel* m = ctx.workspace.current();
    if (!m) return out;
    if (chosen(*m))
      out.emplace_back(
          "layers-" + std::string(projName(m_proj)),
          *registryFigure(ctx, *m, plot::figure_ids::kLayers, params(ctx), std::string(projName(m_proj))));
    if (const plot::Figure* f = registryFigure(ctx, *m, plot::figure_ids::kLayerOutputs, params(ctx)))
      out.emplace_back("layer-outputs", *f);
    return out;
  }

  void draw(AppContext& ctx) override {
    drawStepSlider(ctx);
    if (drawNoModelHint(ctx)) return;
    const LoadedModel& m = *ctx.workspace.current();
    if (!drawAnalysisState(ctx, m, analyses::kLayers)) return;
    ImGui::SetNextItemWidth(140);
    if (ImGui::BeginCombo("projection", std::string(projName(m_proj)).c_str())) {
      for (const LayerDiffMap& map : m.results.get(analyses::kLayers)->maps)
        if (ImGui::Selectable(std::string(projName(map.proj)).c_str(), map.proj == m_proj)) m_proj = map.proj;
      ImGui::EndCombo();
    }
    ImGui::SameLine();
    ImGui::SetNextItemWidth(120);
    ImGui::InputInt("tokens", &m_tokens, 1000, 10000);
    m_tokens = std::clamp(m_tokens, 64, 1'000'000);
    ImGui::SameLine();
    ImGui::SetNextItemWidth(100);
    const std::string corpus = drawCorpusCombo("corpus", m_corpus);
    ImGui::SameLine();
    if (ImGui::Button("Run over text")) {
      ctx.workspace.params().activationTokens = m_tokens;
      ctx.workspace.params().corpus = corpus;
      ctx.workspace.run(analyses::kActivations);
    }
    const float width = ImGui::GetContentRegionAvail().x / 2 - 8;
    const float side = std::min(width, ImGui::GetContentRegionAvail().y - 40);
    if (ImGui::BeginTable("##maps", 2)) {
      ImGui::TableNextColumn();
      if (chosen(m)) {
        const plot::Figure& f =
            *registryFigure(ctx, m, plot::figure_ids::kLayers, params(ctx), std::string(projName(m_proj)));
        ImGui::TextUnformatted("weights");
        drawExportButtons(ctx, f, "layers-" + std::string(projName(m_proj)), &m_weights);
        plot::plotWidget("##weights", f, m_weights, ImVec2(side, side), ctx.textures, ctx.style);
      } else {
        ImGui::TextDisabled("this model has no '%s' projection", std::string(projName(m_proj)).c_str());
      }
      ImGui::TableNextColumn();
      ImGui::TextUnformatted("layer outputs over text");
      if (const auto* a = m.results.get(analyses::kActivations)) {
        const plot::Figure& f = *registryFigure(ctx, m, plot::figure_ids::kLayerOutputs, params(ctx));
        drawExportButtons(ctx, f, "layer-outputs", &m_outputs);
        plot::plotWidget("##outputs", f, m_outputs, ImVec2(side, side), ctx.textures, ctx.style);
        ImGui::TextDisabled("%s", a->tokenizer.c_str());
      } else if (m.results.find(analyses::kActivations)) {
        drawAnalysisState(ctx, m, analyses::kActivations);
      } else {
        ImGui::TextWrapped(
            "Press \"Run over text\" to run the model over %d tokens of %s with its own tokenizer.", m_tokens,
            corpus.c_str());
      }
      ImGui::EndTable();
    }
  }

 private:
  // The registry's layer maps (what `export --view layers` and `layer-outputs` draw) for this projection.
  plot::FigureParams params(const AppContext& ctx) const {
    return {.proj = m_proj, .colormap = ctx.settings.colormap};
  }
  const LayerDiffMap* chosen(const LoadedModel& m) const {
    const auto* layers = m.results.get(analyses::kLayers);
    if (!layers) return nullptr;
    for (const LayerDiffMap& map : layers->maps)
      if (map.proj == m_proj) return &map;
    return nullptr;
  }

  Proj m_proj = Proj::Q;
  int m_tokens = 4096, m_corpus = 0;
  plot::PlotState m_weights, m_outputs;
};

}  // namespace

std::unique_ptr<View> makeLayersView() {
  return std::make_unique<LayersPanel>();
}

}  // namespace sharelens::gui
