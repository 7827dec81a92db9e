// core/outside_stops.hpp: the time a process spends stopped from outside (SIGSTOP ... SIGCONT), measured by a
// heartbeat and a SIGCONT handler, against the stop a forked helper imposes on this test's process.
#include "core/outside_stops.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "tests/support/process.hpp"

namespace sharelens {
namespace {

constexpr double kTick = std::chrono::duration<double>(kOutsideStopTick).count();

TEST(OutsideStops, AStopOfOneAndAHalfSecondsIsMeasuredToWithinATick) {
  const double before = secondsStoppedFromOutside();
  const uint64_t continuationsBefore = outsideContinuations();
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(testing::stopThisProcessFromOutside(300, 1500));
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_GE(wall, 1.7) << "the helper's stop did not hold this process";
  EXPECT_EQ(outsideContinuations(), continuationsBefore + 1);
  const double stopped = secondsStoppedFromOutside() - before;
  // At most a tick short (the time from the last heartbeat to the stop is not known), and never more than
  // the stop plus the helper's late waking and the scheduling of the continued process (a loaded machine's).
  EXPECT_GE(stopped, 1.5 - kTick - 0.02);
  EXPECT_LE(stopped, 1.5 + 0.25);
}

TEST(OutsideStops, ASigcontThatEndedNoStopCountsNothing) {
  std::this_thread::sleep_for(3 * kOutsideStopTick);  // the heartbeat is running and fresh
  const double before = secondsStoppedFromOutside();
  const uint64_t continuationsBefore = outsideContinuations();
  ASSERT_EQ(::kill(::getpid(), SIGCONT), 0);
  for (int i = 0; i < 100 && outsideContinuations() == continuationsBefore; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(outsideContinuations(), continuationsBefore + 1);
  EXPECT_EQ(secondsStoppedFromOutside(), before);
}

}  // namespace
}  // namespace sharelens
