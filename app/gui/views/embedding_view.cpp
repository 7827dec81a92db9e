// Embedding: the token embedding's spectrum, its factorisation curve (error and parameters against r_e), the
// embedding share rho, and for untied models the tying gap (cosine of input and output rows).
#include <imgui.h>

#include <cfloat>

#include "app/gui/view.hpp"
#include "app/plot/figures.hpp"
#include "app/plot/plot_widget.hpp"
#include "core/naming.hpp"

namespace sharelens::gui {
namespace {

class EmbeddingPanel : public View {
 public:
  const char* name() const override { return "Embedding"; }

  std::vector<std::pair<std::string, plot::Figure>> figures(AppContext& ctx) override {
    const LoadedModel* m = ctx.workspace.current();
    const EmbeddingStudy* e = m ? m->results.get<EmbeddingStudy>("embedding") : nullptr;
    if (!e) return {};
    return {{"embedding-spectrum", plot::embeddingSpectrumFigure(*e)}, {"embedding-factorization", plot::factorizationFigure(*e)}};
  }

  void draw(AppContext& ctx) override {
    drawStepSlider(ctx);
    if (drawNoModelHint(ctx)) return;
    const LoadedModel& m = *ctx.workspace.current();
    if (!drawAnalysisState(ctx, m, "embedding")) return;
    const EmbeddingStudy& e = *m.results.get<EmbeddingStudy>("embedding");
    ImGui::Text("E: %lld x %lld, %s;  rho = %.3f (%s of %s parameters are embeddings)", static_cast<long long>(e.vocab),
                static_cast<long long>(e.hidden), e.tied ? "tied" : "untied", e.rho,
                humanCount(static_cast<double>(e.embeddingParameters)).c_str(), humanCount(static_cast<double>(e.totalParameters)).c_str());
    if (e.tyingCosineMean) {
      ImGui::Text("tying gap: mean cosine(e_j, u_j) = %.4f, median %.4f", *e.tyingCosineMean, *e.tyingCosineMedian);
      std::vector<float> histogram(e.tyingCosineHistogram.begin(), e.tyingCosineHistogram.end());
      ImGui::PlotHistogram("##tying", histogram.data(), static_cast<int>(histogram.size()), 0, "cosine from -1 to 1", 0.0f,
                           FLT_MAX, ImVec2(-1, 60));
    }
    const float w = ImGui::GetContentRegionAvail().x / 2 - 8, h = ImGui::GetContentRegionAvail().y - 10;
    if (ImGui::BeginTable("##emb", 2)) {
      ImGui::TableNextColumn();
      plot::plotWidget("##embspectrum", plot::embeddingSpectrumFigure(e), m_spectrum, ImVec2(w, h), ctx.textures, ctx.style);
      ImGui::TableNextColumn();
      plot::plotWidget("##factorization", plot::factorizationFigure(e), m_factorization, ImVec2(w, h), ctx.textures, ctx.style);
      ImGui::EndTable();
    }
  }

 private:
  plot::PlotState m_spectrum, m_factorization;
};

}  // namespace

std::unique_ptr<View> makeEmbeddingView() { return std::make_unique<EmbeddingPanel>(); }

}  // namespace sharelens::gui
