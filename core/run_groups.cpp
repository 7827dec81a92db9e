#include "core/run_groups.hpp"

#include <map>

namespace sharelens {

std::string seedGroupKey(const Json& runRecord) {
  if (!runRecord.is_object()) return runRecord.dump();
  Json r = runRecord;
  for (const char* key : {"seed", "created", "versions", "sibling", "distributed"}) r.erase(key);
  if (auto config = r.find("config"); config != r.end() && config->is_object())
    for (const char* key : {"seed", "init_seed", "data_offset", "threads", "device"}) config->erase(key);
  return r.dump();  // nlohmann's objects are ordered by key: equal records dump equally
}

std::vector<SeedGroup> groupBySeed(const std::vector<std::pair<std::string, const Json*>>& runs) {
  std::vector<SeedGroup> groups;
  std::map<std::string, size_t> byKey;
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto& [label, record] = runs[i];
    if (!record) {
      groups.push_back({label, {i}});
      continue;
    }
    const auto [at, added] = byKey.emplace(label + '\n' + seedGroupKey(*record), groups.size());
    if (added) groups.push_back({label, {}});
    groups[at->second].members.push_back(i);
  }
  return groups;
}

}  // namespace sharelens
