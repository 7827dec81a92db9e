// Training monitor: every run (embedded, or attached from a directory another process writes), live curves
// of loss, validation loss, learning rate, gradient norm and tokens/s with EMA smoothing over the raw points,
// overlays labelled by topology, and pause / resume / stop / checkpoint-now for embedded runs.
#include <imgui.h>

#include "app/gui/view.hpp"
#include "app/plot/figures.hpp"
#include "app/plot/plot_widget.hpp"
#include "core/error.hpp"
#include "core/metrics_csv.hpp"
#include "core/naming.hpp"

namespace sharelens::gui {
namespace {

class TrainingPanel : public View {
 public:
  ViewId id() const override { return ViewId::Training; }

  std::vector<std::pair<std::string, plot::Figure>> figures(AppContext& ctx) override {
    const auto curves = visible(ctx);
    if (curves.empty()) return {};
    return {
        {"training-" + metricStem(m_metric),
         plot::trainingFigure(curves, m_metric, m_axis, m_smoothing, m_logY)},
        {"training-validation", plot::trainingFigure(curves, plot::RunMetric::ValidationLoss, m_axis, 0)}};
  }

  void draw(AppContext& ctx) override {
    drawRunTable(ctx);
    ImGui::SetNextItemWidth(300);
    ImGui::InputTextWithHint("##attach", "run directory to attach", m_attach, sizeof m_attach);
    ImGui::SameLine();
    if (ImGui::Button("Attach")) {
      try {
        ctx.runs.attach(m_attach);
      } catch (const Error& e) {
        ctx.reportError(e.what());
      }
    }
    ImGui::SameLine(0, 30);
    const char* metrics[] = {"loss", "validation loss", "learning rate", "gradient norm", "tokens / s"};
    int metric = static_cast<int>(m_metric);
    ImGui::SetNextItemWidth(150);
    if (ImGui::Combo("metric", &metric, metrics, 5)) m_metric = static_cast<plot::RunMetric>(metric);
    ImGui::SameLine();
    const char* axes[] = {"step", "tokens", "seconds"};
    int axis = static_cast<int>(m_axis);
    ImGui::SetNextItemWidth(110);
    if (ImGui::Combo("x axis", &axis, axes, 3)) m_axis = static_cast<plot::RunAxis>(axis);
    ImGui::SameLine();
    ImGui::SetNextItemWidth(140);
    ImGui::SliderFloat("smoothing", &m_smoothing, 0.0f, 0.99f, "%.2f");
    ImGui::SameLine();
    ImGui::Checkbox("log y", &m_logY);
    const auto curves = visible(ctx);
    if (curves.empty()) {
      ImGui::TextWrapped(
          "No runs yet: launch one from the Designer, start `sharelens --demo`, or attach a run directory "
          "written by `sharelens train`.");
      return;
    }
    const plot::Figure main = plot::trainingFigure(curves, m_metric, m_axis, m_smoothing, m_logY);
    const plot::Figure validation =
        plot::trainingFigure(curves, plot::RunMetric::ValidationLoss, m_axis, 0, m_logY);
    drawExportButtons(ctx, main, "training-" + metricStem(m_metric), &m_main);
    ImGui::SameLine();
    if (ImGui::SmallButton("Export CSV")) exportCsv(ctx, curves);
    const float w = ImGui::GetContentRegionAvail().x, h = ImGui::GetContentRegionAvail().y;
    if (ImGui::BeginTable("##curves", 2, ImGuiTableFlags_Resizable)) {
      ImGui::TableNextColumn();
      plot::plotWidget("##main", main, m_main, ImVec2(-1, h - 10), ctx.textures, ctx.style);
      ImGui::TableNextColumn();
      plot::plotWidget("##validation", validation, m_validation, ImVec2(-1, h - 10), ctx.textures, ctx.style);
      ImGui::EndTable();
    }
    (void)w;
  }

 private:
  static std::string metricStem(plot::RunMetric m) {
    std::string s(plot::runMetricName(m));
    for (char& c : s) c = c == ' ' || c == '/' ? '-' : c;
    return s;
  }

  // Every shown run's logged steps, one row each (core/metrics_csv.hpp), under a name that is never taken.
  static void exportCsv(AppContext& ctx, const std::vector<plot::RunCurve>& curves) {
    try {
      const std::filesystem::path dir = Settings::dataDirectory() / "exports";
      std::filesystem::create_directories(dir);
      const auto path =
          defaultExportPath(dir, curves.size() == 1 ? curves[0].label : "runs", -1, "training", "csv");
      writeMetricsCsv(curves, path);
      ctx.notify("wrote " + path.string());
    } catch (const Error& e) {
      ctx.reportError(e.what());
    } catch (const std::filesystem::filesystem_error& e) {
      ctx.reportError(Error({.what = "cannot create the exports folder",
                             .where = e.path1().string(),
                             .found = e.code().message(),
                             .hint = "check the permissions of ShareLens's data directory"})
                          .what());
    }
  }

  std::vector<plot::RunCurve> visible(AppContext& ctx) {
    std::vector<plot::RunCurve> out;
    for (auto& r : ctx.runs.runs())
      if (r->visible) out.push_back({r->label, &r->metrics.points()});
    return out;
  }

  void drawRunTable(AppContext& ctx) {
    if (!ImGui::BeginTable(
            "##runs", 6, ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerH | ImGuiTableFlags_ScrollY,
            ImVec2(0, std::min(200.0f, 34.0f + 26.0f * static_cast<float>(ctx.runs.runs().size())))))
      return;
    // Fixed columns fit their content (the controls must never be clipped); the rest share what is left.
    const ImGuiStyle& style = ImGui::GetStyle();
    const float controlsWidth = ImGui::CalcTextSize("resume checkpoint now stop analyse").x +
                                8 * style.FramePadding.x + 3 * style.ItemSpacing.x;
    ImGui::TableSetupColumn("show", ImGuiTableColumnFlags_WidthFixed,
                            ImGui::CalcTextSize("show").x + style.CellPadding.x);
    ImGui::TableSetupColumn("run", ImGuiTableColumnFlags_WidthStretch, 2.0f);
    ImGui::TableSetupColumn("state", ImGuiTableColumnFlags_WidthStretch, 1.0f);
    ImGui::TableSetupColumn("progress", ImGuiTableColumnFlags_WidthFixed, 160.0f);
    ImGui::TableSetupColumn("latest", ImGuiTableColumnFlags_WidthStretch, 1.5f);
    ImGui::TableSetupColumn("controls", ImGuiTableColumnFlags_WidthFixed, controlsWidth);
    ImGui::TableHeadersRow();
    int id = 0;
    for (auto& r : ctx.runs.runs()) {
      ImGui::PushID(id++);
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::Checkbox("##show", &r->visible);
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(r->label.c_str());
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", r->dir.c_str());
      if (const size_t skipped = r->metrics.malformedLines(); skipped > 0) {
        ImGui::SameLine();
        ImGui::TextColored(ImVec4(1, 0.7f, 0.3f, 1), "(!)");
        if (ImGui::IsItemHovered())
          ImGui::SetTooltip(
              "%zu line(s) of metrics.jsonl skipped: not JSON objects, or steps that are negative or "
              "implausibly large",
              skipped);
      }
      ImGui::TableNextColumn();
      if (r->controller) {
        const RunState s = r->controller->state();
        ImGui::TextUnformatted(std::string(runStateName(s)).c_str());
        if ((s == RunState::Failed || s == RunState::Preparing) && ImGui::IsItemHovered())
          ImGui::SetTooltip("%s", r->controller->message().c_str());
        if (s == RunState::Failed)
          ImGui::TextColored(ImVec4(1, 0.4f, 0.4f, 1), "%s", r->controller->message().substr(0, 60).c_str());
      } else {
        ImGui::TextUnformatted(r->status.c_str());
      }
      ImGui::TableNextColumn();
      const auto& points = r->metrics.points();
      const float fraction =
          r->totalSteps > 0 ? static_cast<float>(r->lastStep()) / static_cast<float>(r->totalSteps) : 0.0f;
      char overlay[64];
      std::snprintf(overlay, sizeof overlay, "%lld / %lld", static_cast<long long>(r->lastStep()),
                    static_cast<long long>(r->totalSteps));
      ImGui::ProgressBar(fraction, ImVec2(160, 0), overlay);
      ImGui::TableNextColumn();
      if (!points.empty()) {
        const MetricPoint& last = points.back();
        ImGui::Text("loss %.3f  %s tok/s", last.loss, humanCount(last.tokensPerSecond).c_str());
        if (last.worldSize > 1) {  // a distributed run: its world size, and each rank's throughput on hover
          ImGui::SameLine();
          ImGui::TextDisabled("%d ranks", last.worldSize);
          if (ImGui::IsItemHovered()) {
            std::string perRank;
            for (size_t i = 0; i < last.rankTokensPerSecond.size(); ++i)
              perRank +=
                  "rank " + std::to_string(i) + ": " + humanCount(last.rankTokensPerSecond[i]) + " tok/s\n";
            ImGui::SetTooltip("data parallel over %d ranks (the step runs at the slowest)\n%s",
                              last.worldSize, perRank.c_str());
          }
        }
      }
      ImGui::TableNextColumn();
      bool controlsDrawn = false;  // SameLine before a cell's first item would follow the previous column
      if (r->controller) {
        const RunState s = r->controller->state();
        if (s == RunState::Running && ImGui::SmallButton("pause")) r->controller->pause();
        if (s == RunState::Paused && ImGui::SmallButton("resume")) r->controller->resume();
        if (s == RunState::Running || s == RunState::Paused) {
          ImGui::SameLine();
          if (ImGui::SmallButton("checkpoint now")) r->controller->checkpointNow();
          ImGui::SameLine();
          if (ImGui::SmallButton("stop")) r->controller->requestStop();
          controlsDrawn = true;
        }
      }
      if (r->latestCheckpoint >= 0) {
        if (controlsDrawn) ImGui::SameLine();
        if (ImGui::SmallButton("analyse")) {
          ctx.workspace.follow(r->dir, ctx.settings.threshold);
          ctx.showView(ViewId::Spectrum);
        }
      }
      ImGui::PopID();
    }
    ImGui::EndTable();
  }

  plot::RunMetric m_metric = plot::RunMetric::Loss;
  plot::RunAxis m_axis = plot::RunAxis::Step;
  float m_smoothing = 0.6f;
  bool m_logY = false;
  char m_attach[512] = "";
  plot::PlotState m_main, m_validation;
};

}  // namespace

std::unique_ptr<View> makeTrainingView() {
  return std::make_unique<TrainingPanel>();
}

}  // namespace sharelens::gui
