#include <imgui.h>

#include <cmath>

#include "app/export/figure_export.hpp"
#include "app/gui/view.hpp"
#include "app/plot/plot_widget.hpp"
#include "core/error.hpp"

namespace sharelens::gui {

void drawStepSlider(AppContext& ctx) {
  const auto steps = ctx.workspace.steps();
  if (steps.size() < 1 || !ctx.workspace.followed()) return;
  int index = 0;
  for (size_t i = 0; i < steps.size(); ++i)
    if (steps[i] == ctx.workspace.selectedStep()) index = static_cast<int>(i);
  ImGui::SetNextItemWidth(280);
  const std::string label = "step " + std::to_string(steps[static_cast<size_t>(index)]);
  if (ImGui::SliderInt("training step##steps", &index, 0, static_cast<int>(steps.size()) - 1, label.c_str()))
    ctx.workspace.selectStep(steps[static_cast<size_t>(index)]);
  ImGui::SameLine();
  ImGui::TextDisabled("following %s (%zu checkpoints loaded)", ctx.workspace.followed()->filename().c_str(),
                      steps.size());
}

bool drawNoModelHint(AppContext& ctx) {
  if (ctx.workspace.current()) return false;
  ImGui::Spacing();
  if (ctx.workspace.busy()) {
    drawPending("opening the checkpoint");
    return true;
  }
  ImGui::TextWrapped(
      "No checkpoint open. Use File > Open, drop a .safetensors file, a model directory or a run "
      "directory onto the window, or start the demo (sharelens --demo).");
  return true;
}

void drawPending(const char* what) {
  const char spinner[] = "|/-\\";
  ImGui::TextDisabled("%c computing %s ...", spinner[static_cast<int>(ImGui::GetTime() * 8) % 4], what);
}

bool drawAnalysisState(AppContext& ctx, const LoadedModel& model, std::string_view id) {
  const AnalysisOutcome* o = model.results.find(id);
  const AnalysisKind& kind = analysis(id);
  const std::string title(kind.title);
  if (o && o->state == AnalysisOutcome::State::Ok) return true;
  if (o && o->state == AnalysisOutcome::State::Pending) {
    drawPending(title.c_str());
    return false;
  }
  if (!o) {
    ImGui::TextDisabled("%s not computed yet", title.c_str());
  } else if (o->state == AnalysisOutcome::State::Cancelled) {
    ImGui::TextDisabled("%s: cancelled", title.c_str());
  } else {
    ImGui::PushTextWrapPos(0);
    ImGui::TextColored(ImVec4(1, 0.55f, 0.5f, 1), "%s failed: %s", title.c_str(), o->error.c_str());
    ImGui::PopTextWrapPos();
  }
  ImGui::SameLine();
  if (ImGui::SmallButton(o ? ("Retry##" + title).c_str() : ("Compute##" + title).c_str()))
    ctx.workspace.run(id);
  return false;
}

void drawSectionHeader(const char* label) {
  ImGui::Spacing();
  ImGui::TextDisabled("%s", label);
  ImGui::Separator();
}

void drawExportButtons(AppContext& ctx, const plot::Figure& figure, const std::string& stem,
                       const plot::PlotState* state) {
  for (const char* ext : {"png", "svg", "pdf"}) {
    ImGui::SameLine();
    const std::string label = std::string("Export ") + ext + "##" + stem;
    if (ImGui::SmallButton(label.c_str())) {
      const std::filesystem::path dir = Settings::dataDirectory() / "exports";
      std::filesystem::create_directories(dir);
      const auto path = dir / (stem + "." + ext);
      try {
        ExportOptions o;
        if (state) {
          o.xView = state->xView;
          o.yView = state->yView;
          o.hidden = state->hidden;
        }
        exportFigure(figure, path, o);
        ctx.notify("exported " + path.string());
      } catch (const Error& e) {
        ctx.reportError(e.what());
      }
    }
  }
}

}  // namespace sharelens::gui
