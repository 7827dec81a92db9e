// MASA: Matrix PCA of a projection across layer groups -- the coefficient map, variance explained against
// the number of atoms S, the atom-correlation map (of the learned dictionary for ShareLens MASA checkpoints),
// and a group editor, including groups from the logit-lens KL drift; and, on its second tab, compressing the
// pretrained model with MASA or the SVD baseline (compress_panel.hpp).
#include <imgui.h>

#include "analysis/activations.hpp"
#include "analysis/matrix_pca.hpp"
#include "app/gui/ui_probe.hpp"
#include "app/gui/view.hpp"
#include "app/gui/views/compress_panel.hpp"
#include "app/plot/figures.hpp"
#include "app/plot/plot_widget.hpp"
#include "core/error.hpp"

namespace sharelens::gui {
namespace {

std::string groupsText(const std::vector<std::vector<int64_t>>& groups) {
  std::string out;
  for (const auto& g : groups) {
    if (!out.empty()) out += ",";
    out += std::to_string(g.front()) + "-" + std::to_string(g.back());
  }
  return out;
}

class MasaPanel : public View {
 public:
  ViewId id() const override { return ViewId::Masa; }

  std::vector<std::pair<std::string, plot::Figure>> figures(AppContext& ctx) override {
    std::vector<std::pair<std::string, plot::Figure>> out = m_compress.figures();
    const LoadedModel* m = ctx.workspace.current();
    if (!m || !m->results.get(analyses::kMasa)) return out;
    const auto groups = ofProjection(*m);
    if (!groups.empty())
      for (const plot::FigureId figure :
           {plot::figure_ids::kMasaCoefficients, plot::figure_ids::kMasaVariance})
        out.emplace_back(figure.name, *registryFigure(ctx, *m, figure, params(ctx), key()));
    if (trained(*m))
      out.emplace_back("masa-correlation",
                       *registryFigure(ctx, *m, plot::figure_ids::kMasaCorrelation, params(ctx), key()));
    if (const plot::Figure* kl = registryFigure(ctx, *m, plot::figure_ids::kKlDrift, params(ctx)))
      out.emplace_back("kl-drift", *kl);
    return out;
  }

  void draw(AppContext& ctx) override {
    drawStepSlider(ctx);
    if (drawNoModelHint(ctx)) return;
    const LoadedModel& m = *ctx.workspace.current();
    if (!ImGui::BeginTabBar("##masa-tabs")) return;
    if (ImGui::BeginTabItem("Matrix PCA")) {
      drawMatrixPca(ctx, m);
      ImGui::EndTabItem();
    }
    const bool compress = ImGui::BeginTabItem("Compress");
    probe::item("masa/tab/compress");
    if (compress) {
      m_compress.draw(ctx, m);
      ImGui::EndTabItem();
    }
    ImGui::EndTabBar();
  }

 private:
  void drawMatrixPca(AppContext& ctx, const LoadedModel& m) {
    if (!drawAnalysisState(ctx, m, analyses::kMasa)) return;
    ImGui::SetNextItemWidth(100);
    if (ImGui::BeginCombo("projection", std::string(projName(m_proj)).c_str())) {
      for (Proj p : {Proj::Q, Proj::K, Proj::V, Proj::O})
        if (ImGui::Selectable(std::string(projName(p)).c_str(), p == m_proj)) m_proj = p;
      ImGui::EndCombo();
    }
    ImGui::SameLine();
    ImGui::SetNextItemWidth(220);
    ImGui::InputTextWithHint("##groups", "layer groups, e.g. 0-5,6-11", m_groups, sizeof m_groups);
    ImGui::SameLine();
    if (ImGui::Button("Recompute with groups")) {
      try {
        ctx.workspace.params().masaGroups = parseLayerGroups(m_groups, m.view->shape.layers);
        ctx.workspace.run(analyses::kMasa);
      } catch (const Error& e) {
        ctx.reportError(e.what());
      }
    }
    if (const auto* a = m.results.get(analyses::kActivations)) {
      ImGui::SameLine();
      if (ImGui::Button("Groups from KL drift")) {
        const std::string text = groupsText(a->groups);
        std::snprintf(m_groups, sizeof m_groups, "%s", text.c_str());
        ctx.workspace.params().masaGroups = a->groups;
        ctx.workspace.run(analyses::kMasa);
      }
    }
    const auto groups = ofProjection(m);
    if (groups.empty()) {
      ImGui::TextDisabled("no '%s' projection", std::string(projName(m_proj)).c_str());
      return;
    }
    if (groups.size() > 1) {
      int g = static_cast<int>(m_group);
      ImGui::SetNextItemWidth(200);
      if (ImGui::SliderInt("group", &g, 0, static_cast<int>(groups.size()) - 1))
        m_group = static_cast<size_t>(g);
    }
    const MatrixPcaGroup& group = *groups[std::min(m_group, groups.size() - 1)];
    const float w = ImGui::GetContentRegionAvail().x / 2 - 8, h = (ImGui::GetContentRegionAvail().y - 50) / 2;
    if (ImGui::BeginTable("##masa", 2)) {
      ImGui::TableNextColumn();
      plotWithExports(ctx, "##coefficients",
                      *registryFigure(ctx, m, plot::figure_ids::kMasaCoefficients, params(ctx), key()),
                      m_coefficients, w, h, "masa-coefficients");
      ImGui::TableNextColumn();
      plotWithExports(ctx, "##variance",
                      *registryFigure(ctx, m, plot::figure_ids::kMasaVariance, params(ctx), key()),
                      m_variance, w, h, "masa-variance");
      ImGui::TableNextColumn();
      if (trained(m)) {
        plotWithExports(ctx, "##correlation",
                        *registryFigure(ctx, m, plot::figure_ids::kMasaCorrelation, params(ctx), key()),
                        m_correlation, w, h, "masa-correlation");
      } else {
        ImGui::TextWrapped(
            "Atom correlation: the atoms of Matrix PCA are orthonormal, so their correlation map is the "
            "identity. Open a ShareLens checkpoint trained with MASA to see how learned atoms overlap.");
        ImGui::Text("reconstruction error with S atoms:");
        for (size_t s = 0; s < group.reconstructionError.size() && s < 12; ++s)
          ImGui::BulletText("S = %zu: %.4f  (%.1f%% variance)", s + 1, group.reconstructionError[s],
                            100 * group.explainedVariance[s]);
      }
      ImGui::TableNextColumn();
      if (const plot::Figure* kl = registryFigure(ctx, m, plot::figure_ids::kKlDrift, params(ctx)))
        plotWithExports(ctx, "##kl", *kl, m_kl, w, h, "kl-drift");
      else
        ImGui::TextWrapped(
            "Run the model over text (Layers tab) to see the logit-lens KL drift and derive layer groups "
            "from it.");
      ImGui::EndTable();
    }
  }

  // The registry's MASA figures (what `export --view masa-...` draws) for this view's projection and group.
  plot::FigureParams params(const AppContext& ctx) const {
    return {.proj = m_proj, .group = m_group, .colormap = ctx.settings.colormap};
  }
  std::string key() const { return std::string(projName(m_proj)) + "/" + std::to_string(m_group); }

  std::vector<const MatrixPcaGroup*> ofProjection(const LoadedModel& m) const {
    std::vector<const MatrixPcaGroup*> out;
    for (const MatrixPcaGroup& g : *m.results.get(analyses::kMasa))
      if (g.proj == m_proj) out.push_back(&g);
    return out;
  }
  const LearnedDictionaryMap* trained(const LoadedModel& m) const {
    const auto* maps = m.results.get(analyses::kMasaTrained);
    if (!maps) return nullptr;
    for (const LearnedDictionaryMap& t : *maps)
      if (t.proj == m_proj) return &t;
    return nullptr;
  }

  Proj m_proj = Proj::Q;
  size_t m_group = 0;
  char m_groups[256] = "";
  plot::PlotState m_coefficients, m_variance, m_correlation, m_kl;
  CompressPanel m_compress;
};

}  // namespace

std::unique_ptr<View> makeMasaView() {
  return std::make_unique<MasaPanel>();
}

}  // namespace sharelens::gui
