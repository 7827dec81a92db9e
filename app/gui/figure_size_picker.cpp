#include "app/gui/figure_size_picker.hpp"

#include <imgui.h>

#include <algorithm>
#include <string>

namespace sharelens::gui {

void drawFigureSizePicker(FigureSizeChoice& choice) {
  const auto presets = figureSizePresets();
  const int custom = static_cast<int>(presets.size());
  const std::string current =
      choice.preset < custom ? std::string(presets[choice.preset].description) : "custom";
  ImGui::SetNextItemWidth(360);
  if (ImGui::BeginCombo("size", current.c_str())) {
    for (int i = 0; i <= custom; ++i) {
      const std::string label = i < custom ? std::string(presets[i].description) : "custom";
      if (ImGui::Selectable(label.c_str(), i == choice.preset)) {
        choice.preset = i;
        if (i < custom) choice.size = presets[i].size;
      }
    }
    ImGui::EndCombo();
  }
  if (choice.preset != custom) return;
  float inches[2] = {static_cast<float>(choice.size.widthPt / 72),
                     static_cast<float>(choice.size.heightPt / 72)};
  ImGui::SetNextItemWidth(160);
  if (ImGui::InputFloat2("width x height (in)", inches, "%.2f")) {
    choice.size.widthPt = std::clamp(inches[0], 0.5f, 200.0f) * 72.0;
    choice.size.heightPt = std::clamp(inches[1], 0.5f, 200.0f) * 72.0;
  }
  int dpi = static_cast<int>(choice.size.dpi);
  ImGui::SetNextItemWidth(160);
  if (ImGui::InputInt("dpi (PNG)", &dpi, 50)) choice.size.dpi = std::clamp(dpi, 10, 2400);
  float scale = static_cast<float>(choice.size.fontScale);
  ImGui::SetNextItemWidth(160);
  if (ImGui::SliderFloat("font scale", &scale, 0.3f, 2.0f, "%.2f")) choice.size.fontScale = scale;
  ImGui::TextDisabled("text %.1f pt; PNG %d x %d pixels", 13 * choice.size.fontScale,
                      choice.size.pixelWidth(), choice.size.pixelHeight());
}

}  // namespace sharelens::gui
