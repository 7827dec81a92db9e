// Embedding: the token embedding's spectrum, its factorisation curve (error and parameters against r_e), the
// embedding share rho, and for untied models the tying gap (cosine of input and output rows).
#include <imgui.h>

#include <cfloat>

#include "analysis/embedding_study.hpp"
#include "app/gui/view.hpp"
#include "app/plot/figures.hpp"
#include "app/plot/plot_widget.hpp"
#include "core/naming.hpp"

namespace sharelens::gui {
namespace {

class EmbeddingPanel : public View {
 public:
  ViewId id() const override { return ViewId::Embedding; }

  std::vector<std::pair<std::string, plot::Figure>> figures(AppContext& ctx) override {
    const LoadedModel* m = ctx.workspace.current();
    if (!m) return {};
    std::vector<std::pair<std::string, plot::Figure>> out;
    for (const plot::FigureId figure : {plot::figure_ids::kEmbeddingSpectrum,
                                        plot::figure_ids::kFactorization, plot::figure_ids::kEmbeddingLoss})
      if (const plot::Figure* f = registryFigure(ctx, *m, figure, {})) out.emplace_back(figure.name, *f);
    return out;
  }

  void draw(AppContext& ctx) override {
    drawStepSlider(ctx);
    if (drawNoModelHint(ctx)) return;
    const LoadedModel& m = *ctx.workspace.current();
    if (!drawAnalysisState(ctx, m, analyses::kEmbedding)) return;
    const EmbeddingStudy& e = *m.results.get(analyses::kEmbedding);
    ImGui::Text("E: %lld x %lld, %s;  rho = %.3f (%s of %s parameters are embeddings)",
                static_cast<long long>(e.vocab), static_cast<long long>(e.hidden), e.tied ? "tied" : "untied",
                e.rho, humanCount(static_cast<double>(e.embeddingParameters)).c_str(),
                humanCount(static_cast<double>(e.totalParameters)).c_str());
    if (e.tyingCosineMean) {
      ImGui::Text("tying gap: mean cosine(e_j, u_j) = %.4f, median %.4f", *e.tyingCosineMean,
                  *e.tyingCosineMedian);
      std::vector<float> histogram(e.tyingCosineHistogram.begin(), e.tyingCosineHistogram.end());
      ImGui::PlotHistogram("##tying", histogram.data(), static_cast<int>(histogram.size()), 0,
                           "cosine from -1 to 1", 0.0f, FLT_MAX, ImVec2(-1, 60));
    }
    // Fig. 2c runs the model once per rank: computed on request, not when the model opens.
    const EmbeddingStudy* loss = m.results.get(analyses::kEmbeddingLoss);
    if (!loss) {
      const AnalysisOutcome* o = m.results.find(analyses::kEmbeddingLoss);
      if (o && o->state == AnalysisOutcome::State::Pending) {
        ImGui::TextDisabled("held-out loss per rank: computing...");
      } else {
        if (o && o->state == AnalysisOutcome::State::Failed)
          ImGui::TextColored(ImVec4(1, 0.45f, 0.45f, 1), "%s", o->error.c_str());
        if (ImGui::SmallButton("Held-out loss per rank (Fig. 2c)"))
          ctx.workspace.run(analyses::kEmbeddingLoss);
        if (ImGui::IsItemHovered())
          ImGui::SetTooltip(
              "truncate the embedding to each rank of the curve and evaluate the model on held-out text");
      }
    }
    const int panels = loss ? 3 : 2;
    const float w = ImGui::GetContentRegionAvail().x / static_cast<float>(panels) - 8,
                h = ImGui::GetContentRegionAvail().y - 10;
    if (ImGui::BeginTable("##emb", panels)) {
      ImGui::TableNextColumn();
      plotWithExports(ctx, "##embspectrum", *registryFigure(ctx, m, plot::figure_ids::kEmbeddingSpectrum, {}),
                      m_spectrum, w, h, "embedding-spectrum");
      ImGui::TableNextColumn();
      plotWithExports(ctx, "##factorization", *registryFigure(ctx, m, plot::figure_ids::kFactorization, {}),
                      m_factorization, w, h, "factorization");
      if (loss) {
        ImGui::TableNextColumn();
        plotWithExports(ctx, "##embloss", *registryFigure(ctx, m, plot::figure_ids::kEmbeddingLoss, {}),
                        m_loss, w, h, "embedding-loss");
      }
      ImGui::EndTable();
    }
  }

 private:
  plot::PlotState m_spectrum, m_factorization, m_loss;
};

}  // namespace

std::unique_ptr<View> makeEmbeddingView() {
  return std::make_unique<EmbeddingPanel>();
}

}  // namespace sharelens::gui
