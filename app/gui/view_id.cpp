#include "app/gui/view_id.hpp"

#include <algorithm>
#include <array>
#include <cctype>

namespace sharelens::gui {
namespace {

struct Entry {
  ViewId id;
  const char* label;
  bool public_;  // offered by --view and the settings (the benchmark view is not)
};

constexpr std::array kViews = {
#define SHARELENS_VIEW(id, label, factory) Entry{ViewId::id, label, true},
#include "app/gui/view_list.def"
#undef SHARELENS_VIEW
    Entry{ViewId::UiBench, "Benchmark", false},
};

bool equalIgnoringCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

const char* viewLabel(ViewId id) {
  for (const Entry& e : kViews)
    if (e.id == id) return e.label;
  return "?";
}

std::optional<ViewId> viewFromLabel(std::string_view label) {
  for (const Entry& e : kViews)
    if (e.public_ && equalIgnoringCase(e.label, label)) return e.id;
  return std::nullopt;
}

std::vector<ViewId> publicViews() {
  std::vector<ViewId> out;
  for (const Entry& e : kViews)
    if (e.public_) out.push_back(e.id);
  return out;
}

std::string viewLabels() {
  std::string out;
  for (const Entry& e : kViews)
    if (e.public_) out += (out.empty() ? "" : ", ") + std::string(e.label);
  return out;
}

}  // namespace sharelens::gui
