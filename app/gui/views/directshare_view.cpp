// DirectShare: the head-similarity map of [W_q || W_k], the ranked pairs for a sharing ratio with the
// parameters saved, the attention-map similarity over text (when computed), and two ways on: write the shared
// model as a checkpoint, or send the tied heads to the topology designer.
#include <imgui.h>

#include "analysis/activations.hpp"
#include "analysis/directshare.hpp"
#include "app/gui/derived_model_eval.hpp"
#include "app/gui/view.hpp"
#include "app/plot/figures.hpp"
#include "app/plot/plot_widget.hpp"
#include "core/error.hpp"
#include "core/naming.hpp"
#include "core/topology.hpp"

namespace sharelens::gui {
namespace {

class DirectSharePanel : public View {
 public:
  ViewId id() const override { return ViewId::DirectShare; }

  std::vector<std::pair<std::string, plot::Figure>> figures(AppContext& ctx) override {
    std::vector<std::pair<std::string, plot::Figure>> out;
    const LoadedModel* m = ctx.workspace.current();
    if (!m) return out;
    const plot::FigureParams params{.colormap = ctx.settings.colormap};
    if (const plot::Figure* f = registryFigure(ctx, *m, plot::figure_ids::kDirectShare, params))
      out.emplace_back("directshare", *f);
    if (const auto* a = m->results.get(analyses::kActivations); a && a->attentionSimilarity.rows > 0)
      out.emplace_back("attention-similarity",
                       *registryFigure(ctx, *m, plot::figure_ids::kAttentionSimilarity, params));
    return out;
  }

  void draw(AppContext& ctx) override {
    drawStepSlider(ctx);
    if (drawNoModelHint(ctx)) return;
    const LoadedModel& m = *ctx.workspace.current();
    if (!drawAnalysisState(ctx, m, analyses::kDirectShare)) return;
    const DirectShareResult& r = *m.results.get(analyses::kDirectShare);
    ImGui::SetNextItemWidth(260);
    ImGui::SliderFloat("sharing ratio alpha", &m_ratio, 0.01f, 0.9f, "%.2f");
    if (ImGui::IsItemDeactivatedAfterEdit()) {
      ctx.workspace.params().directShareRatio = m_ratio;
      ctx.workspace.run(analyses::kDirectShare);
    }
    ImGui::SameLine();
    ImGui::TextWrapped(  // wraps in a narrow window rather than running off its edge
        "%zu %s share Q, K and V: %s parameters saved (%.2f%% of the model, %.1f%% of attention; "
        "%.1f%% with O as the paper's Table 3 counts)",
        r.chosen.size(), r.unitKind == "head" ? "heads" : "KV groups",
        humanCount(static_cast<double>(r.parametersSaved)).c_str(),
        100.0 * static_cast<double>(r.parametersSaved) /
            std::max<double>(1, static_cast<double>(r.parametersTotal)),
        100.0 * r.savedShareOfAttention(false), 100.0 * r.savedShareOfAttention(true));
    if (ImGui::Button("Write the shared model")) writeShared(ctx, m, r);
    ImGui::SameLine();
    if (ImGui::Button("Send tied heads to the designer")) sendToDesigner(ctx, m, r);
    m_eval.draw();
    const plot::Figure& f =
        *registryFigure(ctx, m, plot::figure_ids::kDirectShare, {.colormap = ctx.settings.colormap});
    drawExportButtons(ctx, f, "directshare", &m_similarity);
    const float height = ImGui::GetContentRegionAvail().y - 10;
    if (ImGui::BeginTable("##ds", 2, ImGuiTableFlags_Resizable)) {
      ImGui::TableSetupColumn("map", ImGuiTableColumnFlags_WidthStretch, 0.55f);
      ImGui::TableSetupColumn("pairs", ImGuiTableColumnFlags_WidthStretch, 0.45f);
      ImGui::TableNextColumn();
      const float side = std::min(ImGui::GetContentRegionAvail().x, height);  // square, within its column
      plot::plotWidget("##similarity", f, m_similarity, ImVec2(side, side), ctx.textures, ctx.style);
      ImGui::TableNextColumn();
      drawSectionHeader("chosen pairs (target <- source)");
      if (ImGui::BeginTable("##pairs", 3, ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY,
                            ImVec2(0, side * 0.45f))) {
        for (const char* c : {"target", "source", "cosine"}) ImGui::TableSetupColumn(c);
        ImGui::TableHeadersRow();
        for (const UnitMatch& p : r.chosen) {
          ImGui::TableNextRow();
          ImGui::TableNextColumn();
          ImGui::TextUnformatted(plot::unitLabel(r, p.target.layer, p.target.unit).c_str());
          ImGui::TableNextColumn();
          ImGui::TextUnformatted(plot::unitLabel(r, p.source.layer, p.source.unit).c_str());
          ImGui::TableNextColumn();
          ImGui::Text("%.4f", p.similarity);
        }
        ImGui::EndTable();
      }
      if (const auto* a = m.results.get(analyses::kActivations); a && a->attentionSimilarity.rows > 0) {
        plot::plotWidget("##attention",
                         *registryFigure(ctx, m, plot::figure_ids::kAttentionSimilarity,
                                         {.colormap = ctx.settings.colormap}),
                         m_attention, ImVec2(-1, side * 0.5f), ctx.textures, ctx.style);
      } else {
        ImGui::TextWrapped(
            "Run the model over text (Layers tab) to compare heads by their attention maps too.");
      }
      ImGui::EndTable();
    }
  }

 private:
  // Writes the shared model to a new directory named by model, ratio and time, then scores it beside the
  // original on the same held-out tokens (shown under the buttons).
  void writeShared(AppContext& ctx, const LoadedModel& m, const DirectShareResult& r) {
    const auto ckpt = m.checkpoint;
    const auto view = m.view;
    const auto result = std::make_shared<const DirectShareResult>(r);
    char name[96];
    std::snprintf(name, sizeof name, "-directshare-a%.2f-", r.ratio);
    const auto out = Settings::exportsDirectory() / (fileStem(m.label) + name + timestampForFileName());
    const std::filesystem::path original = m.path;
    ctx.jobs.submit(
        "write the shared model",
        [ckpt, view, result, out, original, this, &ctx](const TaskContext&) -> JobSystem::Completion {
          writeDirectSharedCheckpoint(*ckpt, *view, *result, out);
          return [out, original, this, &ctx, ratio = result->ratio] {
            ctx.notify("wrote " + out.string());
            char what[64];
            std::snprintf(what, sizeof what, "DirectShare at alpha %.2f", ratio);
            m_eval.start(ctx, original, out, what);
          };
        });
  }

  static void sendToDesigner(AppContext& ctx, const LoadedModel& m, const DirectShareResult& r) {
    try {
      ctx.sendToDesigner(tiedHeadTopology(*m.view, r, fileStem(m.label) + "-directshare"));
    } catch (const Error& e) {
      ctx.reportError(e.what());
    }
  }

  float m_ratio = 0.25f;
  plot::PlotState m_similarity, m_attention;
  DerivedModelEval m_eval;
};

}  // namespace

std::unique_ptr<View> makeDirectShareView() {
  return std::make_unique<DirectSharePanel>();
}

}  // namespace sharelens::gui
