#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdarg>

#include "app/export/figure_export.hpp"
#include "app/gui/ui_probe.hpp"
#include "app/gui/view.hpp"
#include "app/plot/figure_registry.hpp"
#include "app/plot/plot_widget.hpp"
#include "core/corpus.hpp"
#include "core/error.hpp"

namespace sharelens::gui {

// Every complete checkpoint of the followed run is on the slider. Dragging shows loaded steps at once; a step
// that is not loaded is loaded when the slider is let go (not for every step dragged over).
void drawStepSlider(AppContext& ctx) {
  Workspace& ws = ctx.workspace;
  const auto steps = ws.steps();
  if (steps.empty() || !ws.followed()) return;
  const int64_t shown = ws.loadingStep() >= 0 ? ws.loadingStep() : ws.selectedStep();
  // The step under the thumb while dragging (a step, not an index: the list may grow mid-drag).
  int& dragged = *ImGui::GetStateStorage()->GetIntRef(ImGui::GetID("##steps-dragged"), -1);
  int index = static_cast<int>(steps.size()) - 1;
  for (size_t i = 0; i < steps.size(); ++i)
    if (steps[i] == (dragged >= 0 ? dragged : shown)) index = static_cast<int>(i);
  const int64_t step = steps[static_cast<size_t>(index)];
  ImGui::SetNextItemWidth(280);
  const std::string label = "step " + std::to_string(step);
  const bool changed =
      ImGui::SliderInt("training step##steps", &index, 0, static_cast<int>(steps.size()) - 1, label.c_str());
  const int64_t chosen = steps[static_cast<size_t>(index)];
  const bool loaded = ws.isLoaded(chosen);
  if (ImGui::IsItemActive()) {
    dragged = static_cast<int>(chosen);
    if (changed && loaded) ws.selectStep(chosen);
  } else if (changed || ImGui::IsItemDeactivated()) {
    ws.selectStep(chosen);
  }
  if (!ImGui::IsItemActive()) dragged = -1;
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("%s", loaded ? "loaded" : "not loaded: let go to load this checkpoint");
  ImGui::SameLine();
  const size_t loadedCount = ws.loadedSteps();
  if (ws.loadingStep() >= 0)
    ImGui::TextDisabled("following %s: loading step %lld ...", ws.followed()->filename().c_str(),
                        static_cast<long long>(ws.loadingStep()));
  else
    ImGui::TextDisabled("following %s: %zu checkpoint%s on disk, %zu loaded",
                        ws.followed()->filename().c_str(), steps.size(), steps.size() == 1 ? "" : "s",
                        loadedCount);
}

bool drawNoModelHint(AppContext& ctx) {
  if (ctx.workspace.current()) return false;
  ImGui::Spacing();
  if (ctx.workspace.busy()) {
    drawPending("opening the checkpoint");
    return true;
  }
  ImGui::TextWrapped(
      "No checkpoint open. Use File > Open, drop a checkpoint (.safetensors, pytorch_model.bin, .gguf, a "
      "llama2.c .bin), a model directory or a run directory onto the window, or start the demo (sharelens "
      "--demo).");
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

const plot::Figure* registryFigure(AppContext& ctx, const LoadedModel& model, plot::FigureId id,
                                   const plot::FigureParams& params, const std::string& key) {
  const plot::FigureKind& kind = plot::figureKind(id);
  const AnalysisResult result = model.results.result(kind.analysis);
  if (!result) return nullptr;
  const std::string choice =
      std::string(id.name) + "/" + std::to_string(static_cast<int>(params.colormap)) + "/" + key;
  return &ctx.figures.get(result, choice, [&] {
    try {
      return kind.build(result, params);
    } catch (const Error& e) {  // a choice the result cannot give: said on the plot, not thrown out of draw()
      plot::Figure f;
      f.title = std::string(id.name) + ": nothing to draw";
      f.subtitle = e.what();
      return f;
    }
  });
}

std::string drawCorpusCombo(const char* label, int& index) {
  const std::span<const NamedCorpus> corpora = namedCorpora();
  index = std::clamp(index, 0, static_cast<int>(corpora.size()) - 1);
  const std::string current(corpora[static_cast<size_t>(index)].name);
  if (ImGui::BeginCombo(label, current.c_str())) {
    for (size_t i = 0; i < corpora.size(); ++i) {
      const std::string name(corpora[i].name);
      if (ImGui::Selectable(name.c_str(), static_cast<int>(i) == index)) index = static_cast<int>(i);
      if (ImGui::IsItemHovered())
        ImGui::SetTooltip("%.*s", static_cast<int>(corpora[i].description.size()),
                          corpora[i].description.data());
    }
    ImGui::EndCombo();
  }
  return std::string(corpora[static_cast<size_t>(index)].name);
}

void drawWarning(const char* format, ...) {
  va_list args;
  va_start(args, format);
  ImGui::TextColoredV(ImVec4(1, 0.6f, 0.3f, 1), format, args);
  va_end(args);
}

void drawSectionHeader(const char* label) {
  ImGui::Spacing();
  ImGui::TextDisabled("%s", label);
  ImGui::Separator();
}

void drawExportButtons(AppContext& ctx, const plot::Figure& figure, const std::string& stem,
                       const plot::PlotState* state) {
  drawExportButtons(ctx, std::span<const plot::Figure>(&figure, 1), stem, state);
}

void plotWithExports(AppContext& ctx, const char* id, const plot::Figure& figure, plot::PlotState& state,
                     float width, float height, const std::string& stem) {
  drawExportButtons(ctx, std::span<const plot::Figure>(&figure, 1), stem, &state, "", /*ownLine=*/true);
  plot::plotWidget(id, figure, state, ImVec2(width, height - ImGui::GetFrameHeightWithSpacing()),
                   ctx.textures, ctx.style);
}

void drawNote(const std::string& text) {
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  ImGui::TextWrapped("%s", text.c_str());
  ImGui::PopStyleColor();
}

bool escapePressed() {
  return ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape), false) && !ImGui::GetIO().WantTextInput;
}

void sameLineIfFits(float width, float spacing) {
  // The right edge of what holds the item: a table cell's, or the window's (GetContentRegionMax is
  // cell-aware in 1.86; GetWindowContentRegionMax is not).
  const float right = ImGui::GetWindowPos().x + ImGui::GetContentRegionMax().x;
  ImGui::SameLine(0, spacing);
  if (ImGui::GetCursorScreenPos().x + width > right) ImGui::NewLine();
}

float buttonWidth(const char* label) {
  return ImGui::CalcTextSize(label, nullptr, /*hide_text_after_double_hash=*/true).x +
         ImGui::GetStyle().FramePadding.x * 2;
}

float labelledWidth(float itemWidth, const char* label) {
  const float text = ImGui::CalcTextSize(label, nullptr, true).x;
  return itemWidth + (text > 0 ? ImGui::GetStyle().ItemInnerSpacing.x + text : 0);
}

void drawExportButtons(AppContext& ctx, std::span<const plot::Figure> panels, const std::string& stem,
                       const plot::PlotState* state, const std::string& subject, bool ownLine) {
  for (const char* ext : {"png", "svg", "pdf"}) {
    const std::string label = std::string("Export ") + ext + "##" + stem;
    if (!ownLine || ext != std::string_view("png")) sameLineIfFits(buttonWidth(label.c_str()));
    const bool clicked = ImGui::SmallButton(label.c_str());
    probe::item("export/", stem, "/", ext);
    if (clicked) {  // Save As, offering <model>-<step>-<view>.<ext>
      ExportOptions o;
      o.subject = subject;
      if (state) {
        o.xView = state->xView;
        o.yView = state->yView;
        o.hidden = state->hidden;
      }
      ctx.saveFigureAs(std::vector<plot::Figure>(panels.begin(), panels.end()), stem, ext,
                       o);  // copied on click
    }
  }
}

}  // namespace sharelens::gui
