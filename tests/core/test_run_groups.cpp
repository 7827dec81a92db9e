// Runs that differ only in their seeds form one group (core/run_groups.hpp); anything else keeps them apart.
#include <gtest/gtest.h>

#include "core/run_groups.hpp"

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

}  // namespace
}  // namespace sharelens
