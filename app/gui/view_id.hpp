// The main window's tabs, by identity. Views, menus, settings and `--view` name a tab through ViewId; its
// label is derived from it, never compared as a string.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sharelens::gui {

enum class ViewId : uint8_t {
#define SHARELENS_VIEW(id, label, factory) id,
#include "app/gui/view_list.def"
#undef SHARELENS_VIEW
  UiBench,  // --bench-ui only
};

// The tab's label: "Model", "Spectrum", ..., "MASA", "DirectShare", ...
const char* viewLabel(ViewId id);
// A label back to its view, ignoring case ("masa", "MASA"); nullopt for anything else.
std::optional<ViewId> viewFromLabel(std::string_view label);
// "Model, Spectrum, ..., Experiments": the labels `--view` accepts, for error messages and usage.
std::string viewLabels();
// The views `--view` and the settings offer, in tab order (not the benchmark view).
std::vector<ViewId> publicViews();

}  // namespace sharelens::gui
