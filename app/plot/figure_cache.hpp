// Figures built from analysis results, kept while they are on screen: a view asks each frame for the figure
// of (result, choice) and gets the same Figure until the result or the choice changes, so nothing is rebuilt
// per frame and a heatmap's texture is uploaded once. An entry holds its result alive (so its address cannot
// be reused by a newer result while cached) and is dropped after a frame in which nobody asked for it.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "app/plot/figure.hpp"

namespace sharelens::plot {

class FigureCache {
 public:
  const Figure& get(const std::shared_ptr<const void>& result, const std::string& choice,
                    const std::function<Figure()>& build) {
    const auto key = std::pair{result.get(), choice};
    auto it = m_entries.find(key);
    if (it == m_entries.end()) it = m_entries.emplace(key, Entry{build(), result, true}).first;
    it->second.used = true;
    return it->second.figure;
  }
  void endFrame() {
    for (auto it = m_entries.begin(); it != m_entries.end();) {
      if (!it->second.used) {
        it = m_entries.erase(it);
      } else {
        it->second.used = false;
        ++it;
      }
    }
  }
  size_t size() const { return m_entries.size(); }

 private:
  struct Entry {
    Figure figure;
    std::shared_ptr<const void> result;
    bool used;
  };
  std::map<std::pair<const void*, std::string>, Entry> m_entries;
};

}  // namespace sharelens::plot
