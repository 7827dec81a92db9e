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

namespace {

// What run.json says of its seeds (the parts seedGroupKey leaves out), as canonical JSON.
std::string seedsOf(const Json& r) {
  Json seeds = Json::object();
  if (!r.is_object()) return seeds.dump();
  if (r.contains("seed")) seeds["seed"] = r["seed"];
  if (const auto config = r.find("config"); config != r.end() && config->is_object())
    for (const char* key : {"seed", "init_seed", "data_offset"})
      if (config->contains(key)) seeds[key] = (*config)[key];
  return seeds.dump();
}

}  // namespace

std::vector<SeedGroup> groupBySeed(const std::vector<std::pair<std::string, const Json*>>& runs) {
  std::vector<SeedGroup> groups;
  std::map<std::string, size_t> byKey;
  std::map<std::string, int> seen;  // key and seeds -> runs so far
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto& [label, record] = runs[i];
    if (!record) {
      groups.push_back({label, {i}});
      continue;
    }
    // The k-th run with the same seeds as an earlier member (a copied run, the same arm in two output
    // folders) goes to the k-th group of that key: one run counted twice would narrow the interval.
    const std::string key = label + '\n' + seedGroupKey(*record);
    const int repeat = seen[key + '\n' + seedsOf(*record)]++;
    const auto [at, added] = byKey.emplace(key + '\n' + std::to_string(repeat), groups.size());
    if (added) groups.push_back({label, {}});
    groups[at->second].members.push_back(i);
  }
  return groups;
}

}  // namespace sharelens
