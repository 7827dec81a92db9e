// Runs that differ only in their seeds form one group (core/run_groups.hpp); anything else keeps them apart.
#include <gtest/gtest.h>

#include <fstream>

#include "core/run_groups.hpp"
#include "tests/support/hf_fixtures.hpp"

namespace sharelens {
namespace {

Json runRecord(int seed, double lr = 3e-3) {
  return Json{{"schema", "sharelens.run/1"},
              {"seed", seed},
              {"created", "2026-11-26T11:0" + std::to_string(seed) + ":00Z"},
              {"role", "model"},
              {"topology", {{"name", "cycle"}, {"layers", 6}}},
              {"config",
               {{"seed", seed},
                {"init_seed", seed * 7},
                {"data_offset", seed * 1000},
                {"threads", seed % 2 + 1},
                {"lr", lr},
                {"steps", 100}}}};
}

// The Training view's and `export --view training`'s name for a run.
TEST(RunGroups, ARunIsNamedByItsTopologyItsRoleOrItsExperimentsArm) {
  const std::filesystem::path dir = testing::makeTempDir("run-label");
  EXPECT_EQ(runLabel(runRecord(1), dir / "some-run"), "cycle");
  Json baseline = runRecord(1);
  baseline["role"] = "baseline";
  EXPECT_EQ(runLabel(baseline, dir / "compare" / "baseline"), "cycle (baseline)");
  EXPECT_EQ(runLabel(Json{{"schema", "sharelens.run/1"}}, dir / "old-run"), "old-run");
  // ARM/seed-K of an experiment: the arm, though its topology keeps the name of the one it was derived from.
  std::filesystem::create_directories(dir / "exp" / "masa-qkv" / "seed-2");
  std::ofstream(dir / "exp" / "experiment.json") << "{}";
  EXPECT_EQ(runLabel(runRecord(2), dir / "exp" / "masa-qkv" / "seed-2"), "masa-qkv");
  EXPECT_EQ(runLabel(runRecord(2), (dir / "exp" / "masa-qkv" / "seed-2").string() + "/"), "masa-qkv");
  // A matched baseline arm is named "baseline" already: its role is not said twice ("baseline (baseline)").
  std::filesystem::create_directories(dir / "exp" / "baseline" / "seed-1");
  EXPECT_EQ(runLabel(baseline, dir / "exp" / "baseline" / "seed-1"), "baseline");
  EXPECT_EQ(runLabel(Json{{"schema", "sharelens.run/1"}}, (dir / "old-run").string() + "/"), "old-run");
  // Not an experiment's: a directory that happens to be called seed-2, or seed-x.
  EXPECT_EQ(runLabel(runRecord(2), dir / "mine" / "seed-2"), "cycle");
  EXPECT_EQ(runLabel(runRecord(2), dir / "exp" / "masa-qkv" / "seed-x"), "cycle");
  std::filesystem::remove_all(dir);
}

TEST(RunGroups, RunsThatDifferOnlyInTheirSeedsAreOneGroup) {
  const Json a = runRecord(1), b = runRecord(2), c = runRecord(3), otherLr = runRecord(4, 1e-3);
  EXPECT_EQ(seedGroupKey(a), seedGroupKey(b));
  EXPECT_NE(seedGroupKey(a), seedGroupKey(otherLr)) << "another learning rate is another recipe";
  Json otherModel = runRecord(5);
  otherModel["topology"]["layers"] = 8;
  EXPECT_NE(seedGroupKey(a), seedGroupKey(otherModel));

  const Json copyOfB = runRecord(2);  // the same run twice (a copy, or one arm in two folders)
  const auto groups = groupBySeed({{"cycle", &a},
                                   {"cycle", &otherLr},
                                   {"cycle", &b},
                                   {"cycle (A/A)", &c},  // named apart on the monitor: kept apart
                                   {"cycle", nullptr},   // run.json not written yet: alone
                                   {"cycle", &c},
                                   {"cycle", &copyOfB}});
  ASSERT_EQ(groups.size(), 5u);
  EXPECT_EQ(groups[0].members, (std::vector<size_t>{0, 2, 5})) << "seed 2 counted once";
  EXPECT_EQ(groups[4].members, (std::vector<size_t>{6}));
  EXPECT_EQ(groups[0].label, "cycle");
  EXPECT_EQ(groups[1].members, (std::vector<size_t>{1}));
  EXPECT_EQ(groups[2].members, (std::vector<size_t>{3}));
  EXPECT_EQ(groups[2].label, "cycle (A/A)");
  EXPECT_EQ(groups[3].members, (std::vector<size_t>{4}));
}

// The Training view's legend named an arm's three seeds "cycle", "cycle", "cycle": runs that share a label
// get what sets them apart among themselves; a label only one run has is left alone.
TEST(RunGroups, RunsThatShareALabelAreToldApartInTheLegend) {
  const Json a = runRecord(1), b = runRecord(2), otherLr = runRecord(2, 1e-3);
  Json aa = runRecord(1);  // an A/A arm: other initialisation, the same seed and data order
  aa["config"]["init_seed"] = 99;
  const auto labels = distinctRunLabels({{"cycle", &a, "seed-1"},
                                         {"cycle", &b, "seed-2"},
                                         {"baseline", &a, "baseline"},
                                         {"cycle", &otherLr, "lr"},
                                         {"twice", &a, "first"},
                                         {"twice", &a, "second"},
                                         {"aa", &a, "x"},
                                         {"aa", &aa, "y"}});
  EXPECT_EQ(labels, (std::vector<std::string>{"cycle (lr 0.003, seed 1)", "cycle (lr 0.003, seed 2)",
                                              "baseline", "cycle (lr 0.001, seed 2)", "twice (first)",
                                              "twice (second)", "aa (init_seed 7)", "aa (init_seed 99)"}));
}

// Issue 41 item 6: a figure of several runs was saved as "runs-training-loss" whatever it showed.
TEST(RunGroups, AFileOfSeveralRunsIsNamedAfterWhatTheyAre) {
  EXPECT_EQ(runsSubject({"cycle-L6-U3"}), "cycle-L6-U3");
  EXPECT_EQ(runsSubject({"baseline (seed 1)", "baseline (seed 2)", "baseline (seed 3)"}), "baseline-3-runs");
  EXPECT_EQ(runsSubject({"baseline", "cycle (seed 1)", "cycle (seed 2)"}), "baseline-vs-cycle");
  EXPECT_EQ(runsSubject({"baseline", "cycle", "bulge", "cycle (seed 2)", "sequence"}),
            "baseline-cycle-and-2-more");
}

// Seed groups that share a label (one arm at two learning rates; one run copied into two folders) were two
// "baseline" curves and two "baseline" groups in the CSV: they get what sets their recipes apart, seeds left
// out.
TEST(RunGroups, SeedGroupsThatShareALabelAreToldApartBySeedlessDifferences) {
  const Json a1 = runRecord(1), a2 = runRecord(2), b1 = runRecord(1, 1e-3), b2 = runRecord(2, 1e-3);
  const std::vector<std::pair<std::string, const Json*>> runs = {
      {"cycle", &a1}, {"cycle", &b1}, {"cycle", &a2}, {"cycle", &b2},
      {"other", &a1}, {"twice", &a1}, {"twice", &a1}};
  std::vector<SeedGroup> groups = groupBySeed(runs);
  std::vector<const Json*> records;
  for (const auto& r : runs) records.push_back(r.second);
  distinguishGroupLabels(groups, records);
  std::vector<std::string> labels;
  for (const SeedGroup& g : groups) labels.push_back(g.label);
  EXPECT_EQ(labels, (std::vector<std::string>{"cycle (lr 0.003)", "cycle (lr 0.001)", "other", "twice (#1)",
                                              "twice (#2)"}));
}

// The Training view and `export --view training` take both namings from this one call: each run told apart
// by everything (seeds included), each group by its recipe (seeds left out), the groups' members indexing
// the runs.
TEST(RunGroups, AMonitorNamesEachRunAndEachSeedGroupInOnePass) {
  const Json a1 = runRecord(1), b1 = runRecord(1, 1e-3), a2 = runRecord(2), b2 = runRecord(2, 1e-3);
  const MonitorLabels labels = monitorLabels({{"cycle", &a1, "a1"},
                                              {"cycle", &b1, "b1"},
                                              {"cycle", &a2, "a2"},
                                              {"cycle", &b2, "b2"},
                                              {"x", nullptr, "x"}});
  EXPECT_EQ(labels.runs,
            (std::vector<std::string>{"cycle (lr 0.003, seed 1)", "cycle (lr 0.001, seed 1)",
                                      "cycle (lr 0.003, seed 2)", "cycle (lr 0.001, seed 2)", "x"}));
  ASSERT_EQ(labels.groups.size(), 3u);
  EXPECT_EQ(labels.groups[0].label, "cycle (lr 0.003)");
  EXPECT_EQ(labels.groups[0].members, (std::vector<size_t>{0, 2}));
  EXPECT_EQ(labels.groups[1].label, "cycle (lr 0.001)");
  EXPECT_EQ(labels.groups[1].members, (std::vector<size_t>{1, 3}));
  EXPECT_EQ(labels.groups[2].label, "x");
  EXPECT_EQ(labels.groups[2].members, (std::vector<size_t>{4}));
}

// The run table's "differs" line: only the options that are not the same in every run, by name; threads and
// device are where a run ran, not what it trained.
TEST(RunGroups, ConfigDifferencesNameOnlyWhatSetsTheRunsApart) {
  Json a = runRecord(1), b = runRecord(2), c = runRecord(3, 1e-3);
  c["topology"]["name"] = "sequence";
  c["config"].erase("steps");
  const auto d = configDifferences({&a, nullptr, &b, &c});
  ASSERT_EQ(d.size(), 4u);
  EXPECT_TRUE(d[1].empty()) << "no record yet: nothing to say";
  using P = ConfigDifference;
  // data_offset, init_seed, lr, seed, steps (c lacks it), topology; not threads (differs, but is
  // bookkeeping).
  EXPECT_EQ(d[0], (std::vector<P>{{"data_offset", "1000"},
                                  {"init_seed", "7"},
                                  {"lr", "0.003"},
                                  {"seed", "1"},
                                  {"steps", "100"},
                                  {"topology", "cycle"}}));
  EXPECT_EQ(d[3], (std::vector<P>{{"data_offset", "3000"},
                                  {"init_seed", "21"},
                                  {"lr", "0.001"},
                                  {"seed", "3"},
                                  {"steps", "-"},
                                  {"topology", "sequence"}}));
  // Two seeds of one recipe differ in their seeds alone.
  const auto seeds = configDifferences({&a, &b});
  ASSERT_EQ(seeds[1].size(), 3u);
  EXPECT_EQ(seeds[1][2], (P{"seed", "2"}));
  // One run, or identical runs: nothing differs.
  EXPECT_TRUE(configDifferences({&a})[0].empty());
  EXPECT_TRUE(configDifferences({&a, &a})[0].empty());
}

}  // namespace
}  // namespace sharelens
