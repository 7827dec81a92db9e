// ESD: WeightWatcher's habits in ShareLens -- a sortable table of every weight matrix with its effective
// rank, stable rank, spectral norm and the power-law alpha of its eigenvalue density (CSV export), the
// chosen matrix's density with its fit, and alpha against the layer for every projection.
#include <imgui.h>

#include <algorithm>
#include <cmath>

#include "analysis/esd.hpp"
#include "analysis/matrix_metrics.hpp"
#include "analysis/spectra.hpp"
#include "app/gui/ui_probe.hpp"
#include "app/gui/view.hpp"
#include "app/plot/figure_registry.hpp"
#include "app/plot/plot_widget.hpp"
#include "core/error.hpp"

namespace sharelens::gui {
namespace {

enum Column { Matrix, Shape, EffectiveRank, StableRank, SpectralNorm, Alpha, Tail, Ks, LambdaMax, kColumns };

double sortKey(const MatrixMetrics& m, int column) {
  switch (column) {
    case EffectiveRank:
      return m.effectiveRank;
    case StableRank:
      return m.stableRank;
    case SpectralNorm:
      return m.spectralNorm;
    case Alpha:
      return m.alpha;
    case Tail:
      return static_cast<double>(m.tail);
    case Ks:
      return m.ks;
    case LambdaMax:
      return m.lambdaMax;
    case Shape:
      return static_cast<double>(m.rows) * static_cast<double>(m.cols);
    default:
      return static_cast<double>(m.layer);
  }
}

class EsdPanel : public View {
 public:
  ViewId id() const override { return ViewId::Esd; }

  std::vector<std::pair<std::string, plot::Figure>> figures(AppContext& ctx) override {
    const LoadedModel* m = ctx.workspace.current();
    const AnalysisResult result = m ? m->results.result(analyses::kEsd) : nullptr;
    if (!result) return {};
    std::vector<std::pair<std::string, plot::Figure>> out = {
        {"esd-alpha", plot::figureKind(plot::figure_ids::kEsdAlpha).build(result, {})}};
    if (m_chosen) out.emplace_back("esd", plot::figureKind(plot::figure_ids::kEsd).build(result, *m_chosen));
    return out;
  }

  void draw(AppContext& ctx) override {
    drawStepSlider(ctx);
    if (drawNoModelHint(ctx)) return;
    const LoadedModel& m = *ctx.workspace.current();
    if (!drawAnalysisState(ctx, m, analyses::kEsd)) return;
    // Joined once per result, not per frame; the results are held so that their addresses stay theirs.
    const AnalysisResult esd = m.results.result(analyses::kEsd),
                         spectra = m.results.result(analyses::kSpectra);
    if (esd != m_table.esd || spectra != m_table.spectra) {
      m_table = {esd, spectra, {}, ImGui::CalcTextSize("matrix").x, false};
      m_table.rows = m_table.join();
      for (const MatrixMetrics& r : m_table.rows)
        m_table.widestName = std::max(m_table.widestName, ImGui::CalcTextSize(r.name.c_str()).x);
    }
    std::vector<MatrixMetrics>& rows = m_table.rows;
    if (rows.empty()) {
      ImGui::TextDisabled("no weight matrices to describe");
      return;
    }
    if (ImGui::SmallButton("Export table as CSV")) exportCsv(ctx, m, rows);
    ImGui::SameLine();
    ImGui::TextDisabled("%zu matrices; click a row for its density; click a header to sort", rows.size());
    if (ImGui::BeginTable("##esd-split", 2, ImGuiTableFlags_Resizable)) {
      ImGui::TableNextColumn();
      drawTable(rows);
      ImGui::TableNextColumn();
      // A child of the cell's height: its figures are laid out against its own top and bottom, not against
      // the row the table on the left made as tall as the window.
      if (ImGui::BeginChild("##esd-figures", ImVec2(0, ImGui::GetContentRegionAvail().y)))
        drawFigures(ctx, m);
      ImGui::EndChild();
      ImGui::EndTable();
    }
  }

 private:
  void drawTable(std::vector<MatrixMetrics>& rows) {
    if (!ImGui::BeginTable("##metrics", kColumns,
                           ImGuiTableFlags_Sortable | ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY |
                               ImGuiTableFlags_Resizable | ImGuiTableFlags_BordersInnerV,
                           ImVec2(0, ImGui::GetContentRegionAvail().y)))
      return;
    ImGui::TableSetupScrollFreeze(1, 1);
    const char* names[kColumns] = {"matrix", "shape", "eff. rank", "stable rank", "||W||_2",
                                   "alpha",  "tail",  "KS",        "lambda_max"};
    ImGui::TableSetupColumn(names[Matrix],
                            ImGuiTableColumnFlags_DefaultSort | ImGuiTableColumnFlags_WidthFixed,
                            m_table.widestName + 8);
    for (int c = Matrix + 1; c < kColumns; ++c) ImGui::TableSetupColumn(names[c]);
    ImGui::TableNextRow(ImGuiTableRowFlags_Headers);  // headers one by one: each is a probed click target
    for (int c = 0; c < kColumns; ++c) {
      ImGui::TableSetColumnIndex(c);
      ImGui::TableHeader(names[c]);
      probe::item("esd/header/", names[c]);
    }
    // Sorted when a header is clicked or the rows are new. NaN (no value) sorts last either way; ties keep
    // the layer order.
    ImGuiTableSortSpecs* specs = ImGui::TableGetSortSpecs();
    if (specs && specs->SpecsCount > 0 && (specs->SpecsDirty || !m_table.sorted)) {
      const int column = specs->Specs[0].ColumnIndex;
      const bool ascending = specs->Specs[0].SortDirection == ImGuiSortDirection_Ascending;
      rows = m_table.join();  // from the analysis' own order, so that ties keep it
      std::stable_sort(rows.begin(), rows.end(), [&](const MatrixMetrics& a, const MatrixMetrics& b) {
        const double x = sortKey(a, column), y = sortKey(b, column);
        if (std::isnan(x) || std::isnan(y)) return !std::isnan(x) && std::isnan(y);
        return ascending ? x < y : x > y;
      });
      specs->SpecsDirty = false;
      m_table.sorted = true;
    }
    auto cell = [](double v, const char* format) {
      ImGui::TableNextColumn();
      if (std::isfinite(v))
        ImGui::Text(format, v);
      else
        ImGui::TextDisabled("-");
    };
    for (const MatrixMetrics& r : rows) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      const bool chosen = m_chosen && m_chosen->layer == r.layer && projName(m_chosen->proj) == r.proj;
      if (ImGui::Selectable(r.name.c_str(), chosen, ImGuiSelectableFlags_SpanAllColumns))
        if (const auto proj = parseProj(r.proj)) {
          plot::FigureParams p;
          p.layer = r.layer;
          p.proj = *proj;
          m_chosen = p;
          m_esdState = {};
        }
      probe::item("esd/", r.name);
      ImGui::TableNextColumn();
      ImGui::Text("%lld x %lld", static_cast<long long>(r.rows), static_cast<long long>(r.cols));
      cell(r.effectiveRank, "%.0f");
      cell(r.stableRank, "%.2f");
      cell(r.spectralNorm, "%.3g");
      cell(r.alpha, "%.2f");
      if (std::isfinite(r.alpha) && (r.alpha < 2 || r.alpha > 6) && ImGui::IsItemHovered())
        ImGui::SetTooltip(r.alpha > 6
                              ? "alpha above 6: under-trained in WeightWatcher's reading"
                              : "alpha below 2: very heavy-tailed (over-fit in WeightWatcher's reading)");
      cell(static_cast<double>(r.tail), "%.0f");
      cell(r.ks, "%.3f");
      cell(r.lambdaMax, "%.3g");
    }
    probe::state("esd/first", [&] { return rows.front().name; });  // what sorting put on top
    ImGui::EndTable();
  }

  void drawFigures(AppContext& ctx, const LoadedModel& m) {
    const AnalysisResult result = m.results.result(analyses::kEsd);
    // The density takes the upper half, the alpha plot the rest, each below its own export buttons.
    const float half = (ImGui::GetContentRegionAvail().y - 2 * ImGui::GetFrameHeightWithSpacing()) * 0.5f;
    if (m_chosen) {
      try {
        const std::string choice = "esd/" + std::to_string(m_chosen->layer.value_or(0)) + "/" +
                                   std::string(projName(m_chosen->proj));
        const plot::Figure& f = ctx.figures.get(result, choice, [&] {
          return plot::figureKind(plot::figure_ids::kEsd).build(result, *m_chosen);
        });
        drawExportButtons(ctx, f, "esd", &m_esdState);
        plot::plotWidget("##esd", f, m_esdState, ImVec2(-1, half), ctx.textures, ctx.style);
        probe::item("esd/plot/density");
      } catch (const Error&) {  // the matrix is not in this checkpoint (another model): forget it
        m_chosen.reset();
      }
    } else {
      ImGui::TextDisabled("click a matrix in the table for its eigenvalue density and power-law fit");
    }
    const plot::Figure& alpha = ctx.figures.get(
        result, "esd-alpha", [&] { return plot::figureKind(plot::figure_ids::kEsdAlpha).build(result, {}); });
    drawExportButtons(ctx, alpha, "esd-alpha", &m_alphaState);
    plot::plotWidget("##esd-alpha", alpha, m_alphaState, ImVec2(-1, -1), ctx.textures, ctx.style);
    probe::item("esd/plot/alpha");
  }

  static void exportCsv(AppContext& ctx, const LoadedModel& m, const std::vector<MatrixMetrics>& rows) {
    ctx.saveTableAs(m.label, m.step, "matrix-metrics", "csv", [rows](const std::filesystem::path& path) {
      writeMatrixMetricsCsv(rows, path);
    });  // a copy:
    // written when the dialog's Save is pressed, frames later
  }

  // The joined rows of the shown results, kept until they change (and the widest name, for the column).
  struct Table {
    AnalysisResult esd, spectra;
    std::vector<MatrixMetrics> rows;
    float widestName = 0;
    bool sorted = false;
    std::vector<MatrixMetrics> join() const {
      return matrixMetrics(*resultAs<std::vector<MatrixEsd>>(esd),
                           spectra ? resultAs<std::vector<MatrixSpectrum>>(spectra) : nullptr);
    }
  };
  Table m_table;
  std::optional<plot::FigureParams> m_chosen;
  plot::PlotState m_esdState, m_alphaState;
};

}  // namespace

std::unique_ptr<View> makeEsdView() {
  return std::make_unique<EsdPanel>();
}

}  // namespace sharelens::gui
