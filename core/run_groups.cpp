#include "core/run_groups.hpp"

#include <algorithm>
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

namespace {

// A record's comparable fields, as name -> canonical value text (strings unquoted).
std::map<std::string, std::string> comparableFields(const Json& r) {
  std::map<std::string, std::string> out;
  if (!r.is_object()) return out;
  auto text = [](const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
  if (const auto config = r.find("config"); config != r.end() && config->is_object())
    for (const auto& [key, value] : config->items())
      if (key != "threads" && key != "device") out[key] = text(value);
  if (const auto t = r.find("topology"); t != r.end() && t->is_object() && t->contains("name"))
    out["topology"] = text((*t)["name"]);
  return out;
}

}  // namespace

std::vector<std::vector<ConfigDifference>> configDifferences(const std::vector<const Json*>& records) {
  std::vector<std::map<std::string, std::string>> fields(records.size());
  std::map<std::string, std::string> first;  // name -> the first record's value
  std::map<std::string, bool> varies;
  size_t withRecord = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    if (!records[i]) continue;
    fields[i] = comparableFields(*records[i]);
    for (const auto& [name, value] : fields[i]) varies.emplace(name, false);
    ++withRecord;
  }
  for (const auto& [name, unused] : varies) {
    bool seen = false;
    for (size_t i = 0; i < records.size(); ++i) {
      if (!records[i]) continue;
      const auto it = fields[i].find(name);
      const std::string value = it == fields[i].end() ? "-" : it->second;
      if (!seen)
        first[name] = value, seen = true;
      else if (value != first[name])
        varies[name] = true;
    }
  }
  std::vector<std::vector<ConfigDifference>> out(records.size());
  if (withRecord < 2) return out;
  for (size_t i = 0; i < records.size(); ++i) {
    if (!records[i]) continue;
    for (const auto& [name, differs] : varies)
      if (differs) {
        const auto it = fields[i].find(name);
        out[i].emplace_back(name, it == fields[i].end() ? "-" : it->second);
      }
  }
  return out;
}

std::string runLabel(const Json& record, const std::filesystem::path& given) {
  // "run/", "." and "arm/seed-1/.." name the directory they lead to.
  std::filesystem::path dir = std::filesystem::absolute(given).lexically_normal();
  if (!dir.has_filename()) dir = dir.parent_path();
  const JsonObject run(record, (dir / "run.json").string());
  std::string name = dir.filename().string();
  if (auto topology = run.optionalObject("topology"))
    if (auto n = topology->optionalString("name")) name = *n;
  // An experiment's run, ARM/seed-K under the experiment's directory: its arm names it (arms derived from one
  // topology, MASA's or an A/A arm's, keep that topology's name).
  const std::string seedDir = dir.filename().string();
  const bool seedK =
      seedDir.size() > 5 && seedDir.starts_with("seed-") &&
      std::all_of(seedDir.begin() + 5, seedDir.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (seedK && std::filesystem::is_regular_file(dir.parent_path().parent_path() / "experiment.json"))
    name = dir.parent_path().filename().string();
  // A baseline's role said once: an experiment's matched-baseline arm is already called "baseline".
  const bool saysBaseline = name.find("baseline") != std::string::npos;
  return name + (run.optionalString("role").value_or("") == "baseline" && !saysBaseline ? " (baseline)" : "");
}

std::string runsSubject(const std::vector<std::string>& labels) {
  if (labels.size() == 1) return labels[0];
  std::vector<std::string> bases;
  for (const std::string& l : labels) {
    const std::string base = l.substr(0, l.find(" ("));
    if (std::find(bases.begin(), bases.end(), base) == bases.end()) bases.push_back(base);
  }
  if (bases.empty()) return "runs";
  if (bases.size() == 1) return bases[0] + "-" + std::to_string(labels.size()) + "-runs";
  if (bases.size() == 2) return bases[0] + "-vs-" + bases[1];
  return bases[0] + "-" + bases[1] + "-and-" + std::to_string(bases.size() - 2) + "-more";
}

std::vector<std::string> distinctRunLabels(const std::vector<LabelledRun>& runs) {
  std::map<std::string, std::vector<size_t>> byLabel;
  for (size_t i = 0; i < runs.size(); ++i) byLabel[runs[i].label].push_back(i);
  std::vector<std::string> out;
  for (const LabelledRun& r : runs) out.push_back(r.label);
  for (const auto& [label, members] : byLabel) {
    if (members.size() < 2) continue;
    std::vector<const Json*> records;
    for (size_t i : members) records.push_back(runs[i].record);
    const auto differences = configDifferences(records);
    for (size_t k = 0; k < members.size(); ++k) {
      // The seeds that follow from `seed` (init_seed, data_offset) are named only when seed alone does not
      // tell the runs apart (an A/A arm: other initialisation, the same data order).
      const auto& d = differences[k];
      const bool seedDiffers =
          std::any_of(d.begin(), d.end(), [](const auto& f) { return f.first == "seed"; });
      std::string apart;
      for (const auto& [name, value] : d)
        if (!seedDiffers || (name != "init_seed" && name != "data_offset"))
          apart += (apart.empty() ? "" : ", ") + name + " " + value;
      out[members[k]] += " (" + (apart.empty() ? runs[members[k]].directory : apart) + ")";
    }
  }
  return out;
}

void distinguishGroupLabels(std::vector<SeedGroup>& groups, const std::vector<const Json*>& records) {
  std::map<std::string, std::vector<size_t>> byLabel;
  for (size_t g = 0; g < groups.size(); ++g) byLabel[groups[g].label].push_back(g);
  for (const auto& [label, members] : byLabel) {
    if (members.size() < 2) continue;
    std::vector<const Json*> firsts;
    for (size_t g : members) firsts.push_back(records.at(groups[g].members.front()));
    const auto differences = configDifferences(firsts);
    for (size_t k = 0; k < members.size(); ++k) {
      std::string apart;
      for (const auto& [name, value] : differences[k])
        if (name != "seed" && name != "init_seed" && name != "data_offset")
          apart += (apart.empty() ? "" : ", ") + name + " " + value;
      groups[members[k]].label += " (" + (apart.empty() ? "#" + std::to_string(k + 1) : apart) + ")";
    }
  }
}

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

MonitorLabels monitorLabels(const std::vector<LabelledRun>& runs, bool groups) {
  if (!groups) return {distinctRunLabels(runs), {}};
  std::vector<std::pair<std::string, const Json*>> byLabel;
  std::vector<const Json*> records;
  for (const LabelledRun& run : runs) {
    byLabel.emplace_back(run.label, run.record);
    records.push_back(run.record);
  }
  MonitorLabels out{distinctRunLabels(runs), groupBySeed(byLabel)};
  distinguishGroupLabels(out.groups, records);
  return out;
}

}  // namespace sharelens
