#include "app/gui/views/training_panels.hpp"

#include <imgui.h>

#include <algorithm>

#include "app/gui/ui_probe.hpp"

namespace sharelens::gui {

std::span<const plot::Figure> TrainingPanels::figures(const std::vector<plot::RunCurve>& runs,
                                                      const TrainingPanelOptions& o,
                                                      const std::vector<SeedGroup>& groups) {
  Key key{{}, o, {}};
  for (const plot::RunCurve& r : runs) key.runs.emplace_back(r.label, r.points, r.revision);
  if (o.groupSeeds)
    for (const SeedGroup& g : groups) key.groups.push_back(g.members);
  if (key == m_key) return m_panels;
  if (o.groupSeeds) {  // a group's mean moves with each member's new step: built whole
    m_panels = plot::trainingPanels(runs, o, groups);
    ++m_rebuilds;
    m_key = std::move(key);
    return m_panels;
  }
  // The same runs and controls with new points in some runs (a live run logged a step): only those runs'
  // series are built again.
  auto sameRun = [](const auto& a, const auto& b) {
    return std::get<0>(a) == std::get<0>(b) && std::get<1>(a) == std::get<1>(b);
  };
  const bool sameRuns = m_key && m_key->options == o && m_key->runs.size() == key.runs.size() &&
                        std::equal(key.runs.begin(), key.runs.end(), m_key->runs.begin(), sameRun);
  if (sameRuns) {
    for (size_t i = 0; i < runs.size(); ++i) {
      if (key.runs[i] == m_key->runs[i]) continue;
      plot::updateTrainingRun(m_panels[0], runs, i, o.metric, o.axis, o.smoothing);
      plot::updateTrainingRun(m_panels[1], runs, i, plot::RunMetric::ValidationLoss, o.axis, 0);
      ++m_runUpdates;
    }
  } else {
    m_panels = plot::trainingPanels(runs, o, groups);
    ++m_rebuilds;
  }
  m_key = std::move(key);
  return m_panels;
}

void TrainingPanels::draw(AppContext& ctx, const std::vector<plot::RunCurve>& runs,
                          const TrainingPanelOptions& o, ImVec2 size, const std::vector<SeedGroup>& groups) {
  const std::span<const plot::Figure> panels = figures(runs, o, groups);
  probe::state("training/curves", [&] {  // the main panel's legend
    Json labels = Json::array();
    for (const plot::Series& s : panels[0].series)
      if (!s.label.empty()) labels.push_back(s.label);
    return labels;
  });
  if (size.y <= 0) size.y = ImGui::GetContentRegionAvail().y;
  if (!ImGui::BeginTable("##curves", 2, ImGuiTableFlags_Resizable, ImVec2(size.x, 0))) return;
  ImGui::TableNextColumn();
  plot::plotWidget("##main", panels[0], m_metric, ImVec2(-1, size.y - 10), ctx.textures, ctx.style);
  ImGui::TableNextColumn();
  // Before a run's first evaluation there is nothing to plot: a word, not an empty 0..1 frame.
  const bool anyValidation = std::any_of(panels[1].series.begin(), panels[1].series.end(),
                                         [](const plot::Series& s) { return !s.y.empty(); });
  probe::state("training/validation", [&] { return anyValidation ? "plot" : "no evaluation yet"; });
  if (anyValidation) {
    plot::plotWidget("##validation", panels[1], m_validation, ImVec2(-1, size.y - 10), ctx.textures,
                     ctx.style);
  } else {
    ImGui::TextDisabled("validation loss");
    ImGui::TextWrapped(
        "No evaluation yet: a run scores its held-out text every eval_every steps (the Designer's and "
        "`sharelens train`'s setting), and its curve appears here then.");
  }
  ImGui::EndTable();
}

}  // namespace sharelens::gui
