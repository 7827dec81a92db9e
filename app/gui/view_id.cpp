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
    Entry{ViewId::Model, "Model", true},
    Entry{ViewId::Spectrum, "Spectrum", true},
    Entry{ViewId::Heads, "Heads", true},
    Entry{ViewId::Layers, "Layers", true},
    Entry{ViewId::Masa, "MASA", true},
    Entry{ViewId::DirectShare, "DirectShare", true},
    Entry{ViewId::Embedding, "Embedding", true},
    Entry{ViewId::Esd, "ESD", true},
    Entry{ViewId::Designer, "Designer", true},
    Entry{ViewId::Training, "Training", true},
    Entry{ViewId::Experiments, "Experiments", true},
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
