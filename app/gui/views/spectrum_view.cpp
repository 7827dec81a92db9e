// Spectrum: overlaid singular-value spectra of the chosen matrices, normalised or raw, with effective-rank
// markers and a statistics table; for a followed run, the chosen matrices' effective rank, stable rank or
// spectral norm against the training step, over every checkpoint on disk.
#include <imgui.h>

#include <set>

#include "analysis/spectra.hpp"
#include "app/gui/ui_probe.hpp"
#include "app/gui/view.hpp"
#include "app/plot/figures.hpp"
#include "app/plot/plot_widget.hpp"

namespace sharelens::gui {
namespace {

class SpectrumPanel : public View {
 public:
  ViewId id() const override { return ViewId::Spectrum; }

  std::vector<std::pair<std::string, plot::Figure>> figures(AppContext& ctx) override {
    std::vector<std::pair<std::string, plot::Figure>> out;
    if (const LoadedModel* m = ctx.workspace.current(); m && !selected(ctx).empty())
      if (const plot::Figure* f = registryFigure(ctx, *m, plot::figure_ids::kSpectrum, params(), key()))
        out.push_back({"spectrum", *f});
    if (const auto& d = ctx.workspace.dynamics(); d.result)
      out.push_back({"rank-vs-step", plot::rankDynamicsFigure(*d.result, m_quantity)});
    return out;
  }

  void draw(AppContext& ctx) override {
    drawStepSlider(ctx);
    if (drawNoModelHint(ctx)) return;
    if (!drawAnalysisState(ctx, *ctx.workspace.current(), analyses::kSpectra)) return;
    const auto* spectra = ctx.workspace.current()->results.get(analyses::kSpectra);
    if (m_chosen.empty()) chooseDefaults(*spectra);
    ImGui::Checkbox("normalise by sigma_1", &m_normalised);
    sameLineIfFits(labelledWidth(ImGui::GetFrameHeight(), "log y"));
    if (ImGui::Checkbox("log y", &m_logY)) m_plot.reset();  // the zoom was of the other scale
    probe::item("spectrum/log-y");
    ImGui::SameLine();
    // The threshold the shown result was computed with (a new one applies once it is recomputed).
    ImGui::TextDisabled(
        "(%zu matrices analysed; threshold %s)", spectra->size(),
        plot::percentText(ctx.workspace.current()->results.find(analyses::kSpectra)->params.threshold)
            .c_str());
    const auto chosen = selected(ctx);
    const plot::Figure& figure =
        *registryFigure(ctx, *ctx.workspace.current(), plot::figure_ids::kSpectrum, params(), key());
    drawExportButtons(ctx, figure, "spectrum", &m_plot);
    if (ImGui::BeginTable("##spectrum", 2, ImGuiTableFlags_Resizable)) {
      ImGui::TableSetupColumn("matrices", ImGuiTableColumnFlags_WidthFixed, 260);
      ImGui::TableNextColumn();
      drawPicker(*spectra);
      ImGui::TableNextColumn();
      const bool dynamics = ctx.workspace.followed().has_value();
      const float height = ImGui::GetContentRegionAvail().y - 150;
      plot::plotWidget("##spectrumplot", figure, m_plot,
                       ImVec2(-1, std::max(240.0f, dynamics ? height * 0.5f : height)), ctx.textures,
                       ctx.style);
      drawStats(chosen);
      if (dynamics) drawDynamics(ctx);
      ImGui::EndTable();
    }
  }

 private:
  // The registry's spectrum figure (what `export --view spectrum --matrices ... [--linear-y] [--absolute]`
  // draws) of the picked matrices.
  plot::FigureParams params() const {
    plot::FigureParams p{.normalised = m_normalised, .logY = m_logY};
    p.matrices.assign(m_chosen.begin(), m_chosen.end());
    return p;
  }
  std::string key() const {
    std::string k = std::string(m_normalised ? "n" : "a") + (m_logY ? "/log" : "/lin");
    for (const std::string& name : m_chosen) k += "/" + name;
    return k;
  }

  std::vector<const MatrixSpectrum*> selected(AppContext& ctx) const {
    std::vector<const MatrixSpectrum*> out;
    const LoadedModel* m = ctx.workspace.current();
    const auto* spectra = m ? m->results.get(analyses::kSpectra) : nullptr;
    if (!spectra) return out;
    for (const MatrixSpectrum& s : *spectra)
      if (m_chosen.count(s.id.name)) out.push_back(&s);
    return out;
  }

  void chooseDefaults(const std::vector<MatrixSpectrum>& spectra) {
    int64_t layers = 0;
    for (const MatrixSpectrum& s : spectra) layers = std::max(layers, s.id.layer + 1);
    for (int64_t l : {int64_t{0}, layers / 2, layers - 1})
      m_chosen.insert("layers." + std::to_string(l) + ".q");
  }

  void drawPicker(const std::vector<MatrixSpectrum>& spectra) {
    ImGui::BeginChild("##picker", ImVec2(0, ImGui::GetContentRegionAvail().y - 4));
    int64_t currentLayer = -2;
    bool open = false;
    for (const MatrixSpectrum& s : spectra) {
      if (s.id.layer != currentLayer) {
        if (open && currentLayer >= -1) ImGui::TreePop();
        currentLayer = s.id.layer;
        open =
            ImGui::TreeNodeEx(s.id.layer < 0 ? "embeddings" : ("layer " + std::to_string(s.id.layer)).c_str(),
                              s.id.layer == 0 ? ImGuiTreeNodeFlags_DefaultOpen : 0);
      }
      if (!open) continue;
      bool on = m_chosen.count(s.id.name) > 0;
      const std::string prefix = "layers." + std::to_string(s.id.layer) + ".";
      const std::string shortName =
          s.id.name.rfind(prefix, 0) == 0 ? s.id.name.substr(prefix.size()) : s.id.name;
      const std::string label =
          (s.id.head >= 0 ? "  " : "") + shortName + "  r=" + std::to_string(s.spectrum.effectiveRank);
      if (!ImGui::Checkbox(label.c_str(), &on)) continue;
      if (on)
        m_chosen.insert(s.id.name);
      else
        m_chosen.erase(s.id.name);
    }
    if (open) ImGui::TreePop();
    ImGui::EndChild();
  }

  static void drawStats(const std::vector<const MatrixSpectrum*>& chosen) {
    if (ImGui::BeginTable("##stats", 6, ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY, ImVec2(0, 140))) {
      for (const char* h :
           {"matrix", "shape", "effective rank", "spectral norm", "Frobenius norm", "stable rank"})
        ImGui::TableSetupColumn(h);
      ImGui::TableHeadersRow();
      for (const MatrixSpectrum* m : chosen) {
        const Spectrum& s = m->spectrum;
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(m->id.name.c_str());
        ImGui::TableNextColumn();
        ImGui::Text("%lld x %lld", static_cast<long long>(s.rows), static_cast<long long>(s.cols));
        ImGui::TableNextColumn();
        ImGui::Text("%lld / %zu", static_cast<long long>(s.effectiveRank), s.sigma.size());
        ImGui::TableNextColumn();
        ImGui::Text("%.4g", s.spectralNorm());
        ImGui::TableNextColumn();
        ImGui::Text("%.4g", s.frobenius());
        ImGui::TableNextColumn();
        ImGui::Text("%.2f", s.stableRank());
      }
      ImGui::EndTable();
    }
  }

  // The chosen matrices through training: computed on request over every checkpoint of the followed run.
  void drawDynamics(AppContext& ctx) {
    drawSectionHeader("through training");
    const DynamicsOutcome& d = ctx.workspace.dynamics();
    std::vector<std::string> chosen;  // in the spectra's order, so each matrix keeps its colour in both plots
    for (const MatrixSpectrum* s : selected(ctx)) chosen.push_back(s->id.name);
    const size_t checkpoints = ctx.workspace.steps().size();
    const std::string button = "Compute for the chosen matrices over " + std::to_string(checkpoints) +
                               " checkpoint" + (checkpoints == 1 ? "" : "s");
    // Computed once on its own when the model times the checkpoints is small enough to analyse without
    // asking; again on request.
    if (ImGui::SmallButton(button.c_str()) ||
        (d.state == DynamicsOutcome::State::None && ctx.workspace.dynamicsAffordable() && !chosen.empty()))
      ctx.workspace.computeDynamics(chosen, ctx.workspace.params().threshold);
    ImGui::SameLine();
    int q = static_cast<int>(m_quantity);
    ImGui::SetNextItemWidth(150);
    if (ImGui::Combo("##quantity", &q,
                     "effective rank\0stable rank\0spectral norm\0ESD alpha\0weight distribution\0"))
      m_quantity = static_cast<plot::RankQuantity>(q);
    if (d.state == DynamicsOutcome::State::Pending) {
      drawPending("ranks at every checkpoint");
      return;
    }
    if (d.state == DynamicsOutcome::State::Failed || d.state == DynamicsOutcome::State::Cancelled) {
      ImGui::PushTextWrapPos(0);
      ImGui::TextColored(ImVec4(1, 0.55f, 0.5f, 1), "%s",
                         d.state == DynamicsOutcome::State::Cancelled ? "cancelled" : d.error.c_str());
      ImGui::PopTextWrapPos();
      return;
    }
    if (!d.result) {
      ImGui::TextDisabled("not computed yet: choose matrices on the left, then compute");
      return;
    }
    if (d.matrices != chosen) {
      ImGui::SameLine();
      ImGui::TextDisabled("(shows %zu matrices chosen earlier; compute again for the new choice)",
                          d.matrices.size());
    }
    const plot::Figure figure = plot::rankDynamicsFigure(*d.result, m_quantity);
    drawExportButtons(ctx, figure, "rank-vs-step", &m_dynamicsPlot);
    plot::plotWidget("##dynamicsplot", figure, m_dynamicsPlot,
                     ImVec2(-1, std::max(200.0f, ImGui::GetContentRegionAvail().y - 4)), ctx.textures,
                     ctx.style);
  }

  std::set<std::string> m_chosen;
  bool m_normalised = true;
  bool m_logY = true;  // singular values over decades; linear shows the top of the spectrum
  plot::PlotState m_plot;
  plot::RankQuantity m_quantity = plot::RankQuantity::EffectiveRank;
  plot::PlotState m_dynamicsPlot;
};

}  // namespace

std::unique_ptr<View> makeSpectrumView() {
  return std::make_unique<SpectrumPanel>();
}

}  // namespace sharelens::gui
