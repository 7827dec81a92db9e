// Runs that differ only in their seeds (an experiment arm's seeds, a run repeated by hand) gathered into one
// group, so that a monitor can show the group's mean curve with a confidence band instead of n curves.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/json_util.hpp"

namespace sharelens {

// What makes two runs the same experiment: their run.json with every seed (seed, config.seed,
// config.init_seed, config.data_offset), the resources they ran on (threads, device, distributed) and the
// bookkeeping (created, versions, sibling, checkpoint and evaluation cadence kept) removed, as canonical
// JSON. Two records with equal keys train the same model on the same data by the same recipe.
std::string seedGroupKey(const Json& runRecord);

// A run's name in a monitor: its run.json's "topology name", or "topology name (baseline)" for the
// parameter-matched baseline of a comparison; an experiment's run (EXPERIMENT/ARM/seed-K, experiment.json in
// EXPERIMENT) its arm's name. A run.json from another version or edited by hand may lack the topology's name:
// the directory's name stands in.
std::string runLabel(const Json& record, const std::filesystem::path& dir);

struct SeedGroup {
  std::string label;            // the members' label
  std::vector<size_t> members;  // indices into the runs given, in their order
};

// Groups runs of one label by seedGroupKey, never two runs with the same seeds in one group (runs the monitor
// names differently stay apart, such as an A/A arm beside its reference), in order of each group's first
// member. A run without a record (nullptr: its run.json is not written yet) is a group of its own.
std::vector<SeedGroup> groupBySeed(const std::vector<std::pair<std::string, const Json*>>& runs);

// What sets runs apart, for a table that compares them side by side: per run, the training options
// (run.json's "config") and the topology's name whose values are not the same in every run that has a
// record, as (name, value) pairs in name order: {"lr", "0.003"}, {"seed", "2"}, {"topology", "cycle-L6-U3"}.
// An option a record lacks reads "-". Bookkeeping that says nothing of the recipe (threads, device) is left
// out. A run without a record (nullptr) gets nothing; with fewer than two records nothing differs.
using ConfigDifference = std::pair<std::string, std::string>;
std::vector<std::vector<ConfigDifference>> configDifferences(const std::vector<const Json*>& records);

// Legend labels that tell runs apart: a label only one run has stays as it is; runs that share one (an arm's
// seeds, a topology trained twice) get what sets them apart among themselves in brackets, "baseline (seed
// 2)" (init_seed and data_offset only where seed is the same), or, when their records say nothing apart,
// their directory's name. `runs`: (label, record or nullptr,
// directory name), in order; the result is in the same order.
struct LabelledRun {
  std::string label;
  const Json* record = nullptr;
  std::string directory;
};
std::vector<std::string> distinctRunLabels(const std::vector<LabelledRun>& runs);

// What a file holding several runs' curves is named after (an export's or a CSV's default name): their
// labels' distinct bases (a label before its " (seed 2)"), in order. One: "baseline-3-runs"; two:
// "baseline-vs-cycle"; more: "baseline-cycle-and-4-more"; a single run: its label.
std::string runsSubject(const std::vector<std::string>& labels);

// The same for seed groups (groupBySeed's, `records` its runs' in the same order): groups that share a label
// (two learning rates of one arm) get what sets their recipes apart, seeds left out, "baseline (lr 0.001)",
// or "#k" when their records say nothing apart (one run copied into two folders).
void distinguishGroupLabels(std::vector<SeedGroup>& groups, const std::vector<const Json*>& records);

// What a monitor draws of the runs it shows (the Training view, `export --view training`): per run a legend
// label no other run reads (distinctRunLabels), and the runs' seed groups with labels told apart
// (groupBySeed, distinguishGroupLabels), one pass so that the view and the export cannot name the same runs
// differently. Without `groups` (a monitor drawing every run, every frame) the groups are left empty:
// grouping reads every record again.
struct MonitorLabels {
  std::vector<std::string> runs;  // one per run, in the runs' order
  std::vector<SeedGroup> groups;  // their members index the runs
};
MonitorLabels monitorLabels(const std::vector<LabelledRun>& runs, bool groups = true);

}  // namespace sharelens
