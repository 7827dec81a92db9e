#include "app/gui/views/training_panels.hpp"

#include <imgui.h>

namespace sharelens::gui {

std::span<const plot::Figure> TrainingPanels::figures(const std::vector<plot::RunCurve>& runs,
                                                      const TrainingPanelOptions& o) {
  Key key{{}, o};
  for (const plot::RunCurve& r : runs) key.runs.emplace_back(r.label, r.points, r.revision);
  if (key != m_key) {
    m_panels = {plot::trainingFigure(runs, o.metric, o.axis, o.smoothing, o.logY),
                plot::trainingFigure(runs, plot::RunMetric::ValidationLoss, o.axis, 0, o.logY)};
    m_key = std::move(key);
    ++m_rebuilds;
  }
  return m_panels;
}

void TrainingPanels::draw(AppContext& ctx, const std::vector<plot::RunCurve>& runs,
                          const TrainingPanelOptions& o, ImVec2 size) {
  const std::span<const plot::Figure> panels = figures(runs, o);
  if (size.y <= 0) size.y = ImGui::GetContentRegionAvail().y;
  if (!ImGui::BeginTable("##curves", 2, ImGuiTableFlags_Resizable, ImVec2(size.x, 0))) return;
  ImGui::TableNextColumn();
  plot::plotWidget("##main", panels[0], m_metric, ImVec2(-1, size.y - 10), ctx.textures, ctx.style);
  ImGui::TableNextColumn();
  plot::plotWidget("##validation", panels[1], m_validation, ImVec2(-1, size.y - 10), ctx.textures, ctx.style);
  ImGui::EndTable();
}

}  // namespace sharelens::gui
