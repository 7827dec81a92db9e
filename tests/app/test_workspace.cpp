// The GUI's workspace without a window: following a run's checkpoints (each new one shown until an older
// step is chosen), what a newer open drops, where backends are made, and a file that fails to open.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <latch>
#include <thread>

#include "analysis/backend.hpp"
#include "app/gui/jobs.hpp"
#include "app/gui/workspace.hpp"
#include "core/error.hpp"
#include "core/run_dir.hpp"
#include "core/topology_presets.hpp"
#include "tests/app/job_test_support.hpp"
#include "tests/support/hf_fixtures.hpp"

namespace fs = std::filesystem;
using namespace sharelens;
using gui::JobSystem;
using gui_test::drainUntil;
using gui_test::Ended;
using gui_test::record;

// A followed run lists every checkpoint on disk, loads the newest, loads an older one when it is chosen, and
// follows chosen matrices through all of them.
TEST(Workspace, EveryCheckpointOfAFollowedRunIsListedAndAnOlderOneLoadsWhenChosen) {
  const fs::path run = sharelens::testing::makeTempDir("workspace-run");
  const std::vector<int64_t> steps = {50, 100, 200};
  for (int64_t step : steps) {
    auto spec = sharelens::testing::defaultSpec(Family::Llama);
    spec.seed = static_cast<uint64_t>(step);
    sharelens::testing::writeHfFixture(checkpointDirectory(run, step), spec);
    std::ofstream(checkpointDirectory(run, step) / kCompleteMarker) << "";
  }
  std::vector<std::string> errors;
  JobSystem jobs(
      1, [] {},
      [&](const std::string& job, const std::string& message) { errors.push_back(job + ": " + message); });
  gui::Workspace ws(jobs, [&](const std::string& e) { errors.push_back(e); });
  ws.follow(run, 0.95);
  drainUntil(jobs, [&] { return ws.current() && !ws.busy(); });
  EXPECT_EQ(ws.steps(), steps) << "every checkpoint on disk is on the slider";
  EXPECT_EQ(ws.loadedSteps(), 1u) << "only the newest is read at first";
  EXPECT_EQ(ws.selectedStep(), 200);

  ws.selectStep(50);
  EXPECT_EQ(ws.loadingStep(), 50);
  EXPECT_EQ(ws.selectedStep(), 200) << "the shown step stays until the chosen one is loaded";
  drainUntil(jobs, [&] { return ws.loadingStep() < 0 && !ws.busy(); });
  EXPECT_EQ(ws.selectedStep(), 50);
  ASSERT_NE(ws.current(), nullptr);
  EXPECT_EQ(ws.current()->step, 50);
  EXPECT_EQ(ws.loadedSteps(), 2u);

  ws.computeDynamics({"layers.0.q", "layers.2.down"}, 0.9);
  EXPECT_EQ(ws.dynamics().state, gui::DynamicsOutcome::State::Pending);
  drainUntil(jobs, [&] { return ws.dynamics().state != gui::DynamicsOutcome::State::Pending; });
  ASSERT_EQ(ws.dynamics().state, gui::DynamicsOutcome::State::Ok) << ws.dynamics().error;
  ASSERT_EQ(ws.dynamics().result->trajectories.size(), 2u);
  std::vector<int64_t> seen;
  for (const RankPoint& p : ws.dynamics().result->trajectories[0].points) seen.push_back(p.step);
  EXPECT_EQ(seen, steps);
  EXPECT_TRUE(errors.empty()) << errors.front();
  fs::remove_all(run);
}

namespace {

void writeCheckpoint(const fs::path& run, int64_t step) {
  auto spec = sharelens::testing::defaultSpec(Family::Llama);
  spec.seed = static_cast<uint64_t>(step);
  sharelens::testing::writeHfFixture(checkpointDirectory(run, step), spec);
  std::ofstream(checkpointDirectory(run, step) / kCompleteMarker) << "";
}

// A new checkpoint appears and the frame loop polls (at most 4 times a second), then waits for the loads.
void arrive(gui::Workspace& ws, JobSystem& jobs, const fs::path& run, int64_t step) {
  writeCheckpoint(run, step);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ws.poll(0.95);
  drainUntil(jobs, [&] { return ws.isLoaded(step) && !ws.busy(); });
}

}  // namespace

TEST(Workspace, TheViewMovesToEachNewCheckpointUntilAnOlderStepIsChosen) {
  const fs::path run = sharelens::testing::makeTempDir("workspace-newest");
  writeCheckpoint(run, 10);
  JobSystem jobs(
      1, [] {}, [](const std::string&, const std::string&) {});
  gui::Workspace ws(jobs, [](const std::string&) {});
  ws.follow(run, 0.95);
  drainUntil(jobs, [&] { return ws.current() && !ws.busy(); });
  EXPECT_EQ(ws.selectedStep(), 10);
  for (int64_t step : {20, 30, 40}) {
    arrive(ws, jobs, run, step);
    EXPECT_EQ(ws.selectedStep(), step) << "on the newest, the view follows every new checkpoint";
  }
  ws.selectStep(20);
  EXPECT_EQ(ws.selectedStep(), 20) << "loaded: shown at once";
  arrive(ws, jobs, run, 50);
  EXPECT_EQ(ws.selectedStep(), 20) << "an older step was chosen: a new checkpoint does not take the view";
  EXPECT_EQ(ws.steps().back(), 50);
  ws.selectStep(50);
  arrive(ws, jobs, run, 60);
  EXPECT_EQ(ws.selectedStep(), 60) << "back on the newest, it follows again";
  fs::remove_all(run);
}

TEST(Workspace, OpeningAnotherModelDropsWhatTheRunBeforeWasStillLoading) {
  const fs::path root = sharelens::testing::makeTempDir("workspace-switch");
  for (int64_t step : {10, 20, 30}) writeCheckpoint(root / "run", step);
  const fs::path plain =
      sharelens::testing::writeHfFixture(root / "plain", sharelens::testing::defaultSpec(Family::Qwen2));
  JobSystem jobs(
      1, [] {}, [](const std::string&, const std::string&) {});
  gui::Workspace ws(jobs, [](const std::string&) {});
  ws.follow(root / "run", 0.95);
  drainUntil(jobs, [&] { return ws.current() && !ws.busy(); });
  ws.selectStep(10);  // not loaded: queued behind nothing, still running when the next file is opened
  ws.open(plain, 0.95);
  drainUntil(jobs, [&] { return !ws.busy(); });
  ASSERT_NE(ws.current(), nullptr);
  EXPECT_EQ(ws.current()->path, plain) << "the run's late checkpoint must not replace the opened file";
  EXPECT_EQ(ws.loadedSteps(), 0u);
  EXPECT_FALSE(ws.followed().has_value());
  fs::remove_all(root);
}

// Issue 38 hazard 1: the UI thread never makes a backend (a CUDA one's constructor creates streams and
// cuBLAS/cuSOLVER handles): every backend an analysis uses is asked for on a job's worker thread, and the
// model's results name the one that computed them.
TEST(Workspace, BackendsAreMadeOnJobThreadsNeverOnTheUiThread) {
  const fs::path root = sharelens::testing::makeTempDir("workspace-backends");
  const fs::path plain =
      sharelens::testing::writeHfFixture(root / "plain", sharelens::testing::defaultSpec(Family::Llama));
  std::mutex mutex;
  std::vector<std::thread::id> askedOn;
  JobSystem jobs(
      2, [] {}, [](const std::string&, const std::string&) {});
  gui::Workspace ws(
      jobs, [](const std::string&) {}, {},
      [&]() -> std::shared_ptr<LinalgBackend> {
        std::lock_guard lock(mutex);
        askedOn.push_back(std::this_thread::get_id());
        return makeCpuBackend();
      });
  ws.open(plain, 0.95);
  drainUntil(jobs, [&] { return ws.current() && !ws.busy(); });
  ws.run("spectra");  // asked for from the UI thread, as a view's button does
  drainUntil(jobs, [&] { return !ws.busy(); });
  ASSERT_NE(ws.current(), nullptr);
  ASSERT_GE(askedOn.size(), 2u) << "the default analyses and the one asked for";
  for (const std::thread::id id : askedOn)
    EXPECT_NE(id, std::this_thread::get_id()) << "made on the UI thread";
  EXPECT_NE(ws.current()->results.result("spectra"), nullptr);
  EXPECT_EQ(ws.current()->results.backend.rfind("cpu", 0), 0u) << ws.current()->results.backend;
  fs::remove_all(root);
}

// Issue 41 item 2: a file that cannot be read leaves the workspace as it was -- the followed run, its loaded
// checkpoints and the shown step -- and is not reported as opened (what the app adds to Recent); so does a
// run whose latest checkpoint cannot be read (it used to drop the workspace before reading it). A file that
// opens replaces it, and two opens in a row show the second.
TEST(Workspace, AFileThatFailsToOpenLeavesTheWorkspaceAsItWas) {
  const fs::path root = sharelens::testing::makeTempDir("workspace-failed-open");
  for (int64_t step : {10, 20}) writeCheckpoint(root / "run", step);
  writeCheckpoint(root / "broken-run", 5);
  for (const auto& entry : fs::directory_iterator(checkpointDirectory(root / "broken-run", 5)))
    if (entry.path().extension() == ".safetensors") std::ofstream(entry.path()) << "truncated";
  const fs::path plain =
      sharelens::testing::writeHfFixture(root / "plain", sharelens::testing::defaultSpec(Family::Qwen2));
  const fs::path other =
      sharelens::testing::writeHfFixture(root / "other", sharelens::testing::defaultSpec(Family::Llama));
  std::ofstream(root / "broken.safetensors") << "not a safetensors file";
  std::vector<std::string> errors;
  std::vector<fs::path> opened;
  JobSystem jobs(
      1, [] {}, [&](const std::string&, const std::string& message) { errors.push_back(message); });
  gui::Workspace ws(
      jobs, [](const std::string&) {}, [&](const fs::path& p) { opened.push_back(p); });
  ws.follow(root / "run", 0.95);
  drainUntil(jobs, [&] { return ws.current() && !ws.busy(); });
  ws.open(root / "broken.safetensors", 0.95);
  ASSERT_NE(ws.current(), nullptr) << "shown while the new file is read";
  drainUntil(jobs, [&] { return !ws.busy(); });
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("broken.safetensors"), std::string::npos) << errors[0];
  ASSERT_NE(ws.current(), nullptr) << "the failed open dropped the model being worked on";
  EXPECT_EQ(ws.current()->step, 20);
  EXPECT_EQ(ws.followed(), root / "run");
  EXPECT_EQ(ws.steps(), (std::vector<int64_t>{10, 20}));
  EXPECT_TRUE(opened.empty()) << "reported as opened: " << opened.front();

  ws.follow(root / "broken-run", 0.95, root / "broken-run");
  writeCheckpoint(root / "run", 30);  // the run followed so far goes on while the other is being read
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ws.poll(0.95);  // not read: it would be analysed for nothing if the other run opened
  drainUntil(jobs, [&] { return !ws.busy(); });
  ASSERT_EQ(errors.size(), 2u) << "the unreadable checkpoint is reported";
  ASSERT_NE(ws.current(), nullptr) << "a run with an unreadable checkpoint dropped the model being worked on";
  EXPECT_EQ(ws.current()->step, 20);
  EXPECT_FALSE(ws.isLoaded(30)) << "the run followed before was read while another was being opened";
  EXPECT_EQ(ws.followed(), root / "run");
  EXPECT_TRUE(opened.empty()) << "reported as opened: " << opened.front();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ws.poll(0.95);  // the other failed: this one is followed again
  drainUntil(jobs, [&] { return ws.isLoaded(30) && !ws.busy(); });
  EXPECT_EQ(ws.current()->step, 30);

  ws.open(plain, 0.95);
  ws.open(other, 0.95);  // the newer request wins, whichever load ends first
  drainUntil(jobs, [&] { return !ws.busy(); });
  ASSERT_NE(ws.current(), nullptr);
  EXPECT_EQ(ws.current()->path, other);
  EXPECT_FALSE(ws.followed().has_value());
  EXPECT_EQ(opened, std::vector<fs::path>{other});

  ws.follow(root / "run", 0.95, root);  // a folder of runs is opened as the folder, once its run is read
  drainUntil(jobs, [&] { return ws.followed() && !ws.busy(); });
  ASSERT_NE(ws.current(), nullptr);
  EXPECT_EQ(ws.current()->step, 30);
  EXPECT_EQ(opened, (std::vector<fs::path>{other, root}));
  fs::remove_all(root);
}

// A run is opened at the checkpoint that is its latest when it is read, not when it was asked for: while the
// job waits in the queue (here behind another on the one worker) the run writes step 30 and its retention
// deletes step 20, the latest at the time of asking. Reading step 20 failed with "no such file" before.
TEST(Workspace, ARunIsOpenedAtItsLatestCheckpointWhenTheReadStarts) {
  const fs::path root = sharelens::testing::makeTempDir("workspace-follow-latest");
  for (int64_t step : {10, 20}) writeCheckpoint(root / "run", step);
  std::vector<std::string> errors;
  JobSystem jobs(
      1, [] {}, [&](const std::string&, const std::string& message) { errors.push_back(message); });
  gui::Workspace ws(jobs, [](const std::string&) {}, {});
  std::latch release(1);
  jobs.submit("hold the worker", [&](const TaskContext&) -> JobSystem::Completion {
    release.wait();
    return [] {};
  });
  ws.follow(root / "run", 0.95);  // lists step 20 as the latest
  writeCheckpoint(root / "run", 30);
  fs::remove_all(checkpointDirectory(root / "run", 20));  // as the run's retention does
  release.count_down();
  drainUntil(jobs, [&] { return !ws.busy(); });
  EXPECT_TRUE(errors.empty()) << errors.front();
  ASSERT_NE(ws.current(), nullptr);
  EXPECT_EQ(ws.current()->step, 30);
  EXPECT_EQ(ws.current()->label, "run @ step 30");
  EXPECT_EQ(ws.followed(), root / "run");
  fs::remove_all(root);
}

// Nearest rank: the p-th percentile of n values is the ceil(p n)-th smallest. Frames of 1..200 ms in
// shuffled order after 10 warm-up frames of 1000 ms: p50 = 100, p99 = 198, max = 200. Each frame is a
// quarter building, half submitting and a quarter rendering pictures, which comes after presenting (twice
// the frame, kept apart): the total is the three counted parts, not the span from start to end.
