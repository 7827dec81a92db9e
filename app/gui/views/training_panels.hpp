// The Training view's two panels, the chosen metric and the validation loss, as figures and on screen.
// They are built again only when the shown runs or a control change, and a run's series only when its
// points change: ten runs of 20,000 points take milliseconds to build (each run's raw curve and its moving
// average), which every frame, or every step of a live run, would pay otherwise. The responsiveness
// benchmark (--bench-ui) draws the same panels.
#pragma once

#include <array>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "app/gui/view.hpp"
#include "app/plot/figures.hpp"
#include "app/plot/plot_widget.hpp"
#include "core/run_groups.hpp"

namespace sharelens::gui {

using TrainingPanelOptions = plot::TrainingFigureParams;

class TrainingPanels {
 public:
  // [metric panel, validation panel] for these runs; the same figures while nothing changed. With
  // o.groupSeeds, `groups` (indices into runs, core/run_groups.hpp) are drawn as one curve each.
  std::span<const plot::Figure> figures(const std::vector<plot::RunCurve>& runs,
                                        const TrainingPanelOptions& o,
                                        const std::vector<SeedGroup>& groups = {});
  // Both panels side by side in `size` (ImGui's convention: <= 0 takes what is left).
  void draw(AppContext& ctx, const std::vector<plot::RunCurve>& runs, const TrainingPanelOptions& o,
            ImVec2 size, const std::vector<SeedGroup>& groups = {});
  const plot::PlotState& metricState() const { return m_metric; }
  size_t rebuilds() const { return m_rebuilds; }      // whole figures built (for tests)
  size_t runUpdates() const { return m_runUpdates; }  // one run's series built again (for tests)

 private:
  struct Key {
    std::vector<std::tuple<std::string, const void*, uint64_t>> runs;  // label, points, revision
    TrainingPanelOptions options;
    std::vector<std::vector<size_t>> groups;  // with options.groupSeeds
    bool operator==(const Key&) const = default;
  };
  std::optional<Key> m_key;
  std::array<plot::Figure, 2> m_panels;
  plot::PlotState m_metric, m_validation;
  size_t m_rebuilds = 0, m_runUpdates = 0;
};

}  // namespace sharelens::gui
