// The GUI's machinery without a window: the job system (every job ends as a value the UI thread sees), the
// run book (attached run directories, polled like the frame loop does), the BLAS thread arbiter (the
// workspace: test_workspace.cpp), the Training view's panel cache and the frame-time statistics.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <latch>
#include <mutex>
#include <numeric>
#include <optional>
#include <random>
#include <thread>

#include "analysis/backend.hpp"
#include "app/gui/file_browser.hpp"
#include "app/gui/frame_times.hpp"
#include "app/gui/jobs.hpp"
#include "app/gui/run_book.hpp"
#include "app/gui/settings.hpp"
#include "app/gui/views/training_panels.hpp"
#include "app/gui/workspace.hpp"
#include "core/blas_threads.hpp"
#include "core/error.hpp"
#include "core/run_dir.hpp"
#include "core/topology_presets.hpp"
#include "tests/app/job_test_support.hpp"
#include "tests/support/hf_fixtures.hpp"
#include "tests/support/process.hpp"

namespace fs = std::filesystem;
using namespace sharelens;
using gui::FrameTimes;
using gui::JobSystem;
using gui::TrainingPanelOptions;
using gui::TrainingPanels;

using gui_test::drainUntil;
using gui_test::Ended;
using gui_test::record;

TEST(JobSystem, ASuccessfulJobRunsItsCompletionOnTheDrainingThreadThenSaysOk) {
  std::vector<std::string> errors;
  JobSystem jobs(2, {},
                 [&](const std::string& job, const std::string& m) { errors.push_back(job + ": " + m); });
  Ended ended;
  std::thread::id completedOn;
  bool completedBeforeFinished = false;
  jobs.submit(
      "sum",
      [&](const TaskContext&) -> JobSystem::Completion {
        return [&] {
          completedOn = std::this_thread::get_id();
          completedBeforeFinished = !ended.status.has_value();
        };
      },
      record(ended));
  drainUntil(jobs, [&] { return ended.status.has_value(); });
  ASSERT_TRUE(ended.status.has_value());
  EXPECT_EQ(*ended.status, JobSystem::Status::Ok);
  EXPECT_EQ(completedOn, std::this_thread::get_id()) << "results reach UI state only on the draining thread";
  EXPECT_TRUE(completedBeforeFinished);
  EXPECT_TRUE(errors.empty());
  EXPECT_TRUE(jobs.idle());
}

TEST(JobSystem, AFailingJobEndsFailedWithItsMessageAndReportsIt) {
  std::vector<std::string> errors;
  JobSystem jobs(1, {},
                 [&](const std::string& job, const std::string& m) { errors.push_back(job + ": " + m); });
  Ended ended;
  jobs.submit(
      "spectra",
      [](const TaskContext&) -> JobSystem::Completion {
        throw Error({.what = "tensor is not finite", .where = "model.safetensors: 'w'"});
      },
      record(ended));
  drainUntil(jobs, [&] { return ended.status.has_value(); });
  ASSERT_TRUE(ended.status.has_value());
  EXPECT_EQ(*ended.status, JobSystem::Status::Failed);
  EXPECT_NE(ended.error.find("tensor is not finite"), std::string::npos) << ended.error;
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].rfind("spectra: ", 0), 0u) << errors[0];
}

TEST(JobSystem, CancellingARunningOrAQueuedJobEndsItCancelled) {
  JobSystem jobs(1, {}, {});
  std::latch started(1);
  std::atomic<bool> queuedRan{false};
  Ended running, queued;
  const uint64_t first = jobs.submit(
      "long",
      [&](const TaskContext& ctx) -> JobSystem::Completion {
        started.count_down();
        while (!ctx.stop.stop_requested()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        throw Cancelled();
      },
      record(running));
  const uint64_t second = jobs.submit(
      "queued",
      [&](const TaskContext&) -> JobSystem::Completion {
        queuedRan = true;
        return nullptr;
      },
      record(queued));
  started.wait();
  EXPECT_EQ(jobs.jobs().size(), 2u) << "one running, one queued";
  jobs.cancel(second);
  jobs.cancel(first);
  drainUntil(jobs, [&] { return running.status && queued.status; });
  ASSERT_TRUE(running.status && queued.status);
  EXPECT_EQ(*running.status, JobSystem::Status::Cancelled);
  EXPECT_EQ(*queued.status, JobSystem::Status::Cancelled);
  EXPECT_FALSE(queuedRan) << "a job cancelled in the queue never starts";
  EXPECT_TRUE(jobs.idle());
}

// Issue 41: the Experiments view re-reads its report about once a second; listed in the job bar, that line
// came and went each second and moved every view up and down with it (and a view with no model open could
// flash "computing ..."). A quiet job, running or queued, is neither listed nor keeps the lane busy.
TEST(JobSystem, AQuietJobRunsAndEndsLikeAnyButIsNeitherListedNorBusy) {
  JobSystem jobs(
      1, [] {}, [](const std::string&, const std::string&) {});
  std::latch started(1), release(1);
  Ended first, second, shown;
  bool completed = false;
  jobs.submit(
      "refresh",
      [&](const TaskContext&) -> JobSystem::Completion {
        started.count_down();
        release.wait();
        return [&] { completed = true; };
      },
      record(first), JobSystem::Lane::Analysis, JobSystem::Shown::Quiet);
  started.wait();
  jobs.submit(
      "refresh again", [](const TaskContext&) -> JobSystem::Completion { return nullptr; }, record(second),
      JobSystem::Lane::Analysis, JobSystem::Shown::Quiet);
  EXPECT_TRUE(jobs.jobs().empty()) << "one quiet job running, one queued: none listed";
  EXPECT_TRUE(jobs.laneIdle(JobSystem::Lane::Analysis));
  EXPECT_FALSE(jobs.idle()) << "but they are there";
  jobs.submit(
      "analysis", [](const TaskContext&) -> JobSystem::Completion { return nullptr; }, record(shown));
  ASSERT_EQ(jobs.jobs().size(), 1u) << "an ordinary job is listed";
  EXPECT_EQ(jobs.jobs()[0].name, "analysis");
  EXPECT_FALSE(jobs.laneIdle(JobSystem::Lane::Analysis));
  release.count_down();
  drainUntil(jobs, [&] { return first.status && second.status && shown.status; });
  EXPECT_EQ(first.status, JobSystem::Status::Ok);
  EXPECT_EQ(second.status, JobSystem::Status::Ok);
  EXPECT_EQ(shown.status, JobSystem::Status::Ok);
  EXPECT_TRUE(completed) << "its completion reached the UI thread";
}

// Save As writes on the Files lane (the UI thread never renders a PNG or PDF): a save is written while both
// other lanes are busy; the job system is not idle while a save waits; a save being written is not stopped
// by its cancel button (Cairo cannot stop halfway: the file is written and its notice kept); and saves still
// queued when the app exits are written before the destructor returns (cancelAll and the destructor drop
// analyses, never a file the user asked for).
TEST(JobSystem, SavesRunBesideBusyLanesAndAreWrittenEvenWhenTheAppExits) {
  std::atomic<bool> writing{false}, finishWriting{false};
  std::atomic<int> written{0};
  {
    JobSystem jobs(1, {}, {});
    Ended analysis, experiment, first;
    const auto hold = [&](const TaskContext& ctx) -> JobSystem::Completion {
      while (!ctx.stop.stop_requested()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      return nullptr;
    };
    jobs.submit("spectra", hold, record(analysis));
    jobs.submit("experiment", hold, record(experiment), JobSystem::Lane::Long);
    const uint64_t save = jobs.submit(
        "save a.pdf",
        [&](const TaskContext&) -> JobSystem::Completion {
          writing = true;
          while (!finishWriting) std::this_thread::sleep_for(std::chrono::milliseconds(1));
          ++written;
          return nullptr;
        },
        record(first), JobSystem::Lane::Files);
    drainUntil(jobs, [&] { return writing.load(); });
    ASSERT_TRUE(writing) << "a save waited behind an analysis or an experiment";
    const auto listed = jobs.jobs();
    const auto it = std::find_if(listed.begin(), listed.end(), [&](const auto& j) { return j.id == save; });
    ASSERT_NE(it, listed.end());
    EXPECT_FALSE(it->cancellable) << "the job bar offers to stop a save being written";
    jobs.cancel(save);
    finishWriting = true;
    drainUntil(jobs, [&] { return first.status.has_value(); });
    ASSERT_TRUE(first.status);
    EXPECT_EQ(*first.status, JobSystem::Status::Ok) << "a written save reported as cancelled";
    // Saves queued behind a slow one, then the app exits: the analyses are cancelled, every save is written.
    jobs.submit(
        "save big.png",
        [&](const TaskContext&) -> JobSystem::Completion {
          std::this_thread::sleep_for(std::chrono::milliseconds(200));
          ++written;
          return nullptr;
        },
        {}, JobSystem::Lane::Files);
    for (int i = 0; i < 3; ++i)
      jobs.submit(
          "save table.csv",
          [&](const TaskContext&) -> JobSystem::Completion {
            ++written;
            return nullptr;
          },
          {}, JobSystem::Lane::Files);
    jobs.cancelAll();
    EXPECT_FALSE(jobs.idle()) << "saves are still to be written";
  }  // the destructor joins
  EXPECT_EQ(written, 5) << "a save queued at exit was dropped";
}

// Issue 38 hazard 4: long jobs (an experiment, a compression sweep: hours) have their own lane. With both
// analysis workers' worth of long jobs running -- and one more queued behind them -- an analysis still
// starts and ends at once; the long lane runs one job at a time.
TEST(JobSystem, LongJobsHaveTheirOwnLaneAndNeverHoldTheAnalysisWorkers) {
  JobSystem jobs(2, {}, {});
  std::atomic<int> longRunning{0}, longStarted{0};
  std::atomic<bool> release{false};
  std::vector<Ended> longEnded(3);
  for (Ended& e : longEnded)
    jobs.submit(
        "experiment",
        [&](const TaskContext&) -> JobSystem::Completion {
          ++longStarted;
          EXPECT_EQ(++longRunning, 1) << "long jobs queue behind each other";
          while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
          --longRunning;
          return nullptr;
        },
        record(e), JobSystem::Lane::Long);
  // The long worker may not have picked up its first job yet; the claim is about analyses
  // submitted while one runs, so wait for it before submitting them.
  drainUntil(jobs, [&] { return longStarted == 1; });
  ASSERT_EQ(longStarted, 1) << "the long lane never started its first job";
  std::vector<Ended> analyses(3);
  for (Ended& e : analyses)
    jobs.submit(
        "spectra", [](const TaskContext&) -> JobSystem::Completion { return nullptr; }, record(e));
  drainUntil(jobs,
             [&] { return std::all_of(analyses.begin(), analyses.end(), [](auto& e) { return e.status; }); });
  for (const Ended& e : analyses) {
    ASSERT_TRUE(e.status) << "an analysis waited behind long jobs";
    EXPECT_EQ(*e.status, JobSystem::Status::Ok);
  }
  EXPECT_EQ(longStarted, 1);
  EXPECT_TRUE(jobs.laneIdle(JobSystem::Lane::Analysis)) << "the views' lane is free while a long job runs";
  EXPECT_FALSE(jobs.laneIdle(JobSystem::Lane::Long));
  release = true;
  drainUntil(jobs, [&] {
    return std::all_of(longEnded.begin(), longEnded.end(), [](auto& e) { return e.status; });
  });
  EXPECT_EQ(longStarted, 3);
  EXPECT_TRUE(jobs.idle());
}

TEST(JobSystem, AJobThatFinishesAfterItWasCancelledDropsItsResult) {
  JobSystem jobs(1, {}, {});
  std::latch started(1), cancelled(1);
  bool completionRan = false;
  Ended ended;
  const uint64_t id = jobs.submit(
      "racing",
      [&](const TaskContext&) -> JobSystem::Completion {
        started.count_down();
        cancelled.wait();
        return [&] { completionRan = true; };
      },
      record(ended));
  started.wait();
  jobs.cancel(id);
  cancelled.count_down();
  drainUntil(jobs, [&] { return ended.status.has_value(); });
  ASSERT_TRUE(ended.status.has_value());
  EXPECT_EQ(*ended.status, JobSystem::Status::Cancelled);
  EXPECT_FALSE(completionRan);
}

// The file browser's listing: folders first, by name ignoring case; hidden entries and other file types
// left out; run directories, model directories, checkpoints and topologies marked; an unreadable folder is a
// named error.
// Issue 41 item 7: the energy threshold is the session's own (every session starts at the papers' 95%), while
// the rest of the settings persist.
TEST(Settings, TheThresholdIsNotSavedAndTheRestIs) {
  const fs::path dir = sharelens::testing::makeTempDir("settings");
  const sharelens::testing::ScopedEnvironmentVariable config("XDG_CONFIG_HOME", dir.string());
  gui::Settings s;
  s.threshold = 0.904;
  s.colormap = plot::Colormap::Magma;
  s.addRecent("/a/model");
  s.save();
  std::string problem;
  const gui::Settings loaded = gui::Settings::load(&problem);
  EXPECT_EQ(problem, "");
  EXPECT_EQ(loaded.threshold, 0.95);
  EXPECT_EQ(loaded.colormap, plot::Colormap::Magma);
  EXPECT_EQ(loaded.recent, std::vector<std::string>{"/a/model"});
  std::ifstream in(gui::Settings::file());
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text.find("0.904"), std::string::npos) << text;
  fs::remove_all(dir);
}

TEST(FileBrowser, ListsFoldersFirstMarksWhatOpensAndFiltersByExtension) {
  const fs::path dir = sharelens::testing::makeTempDir("browser");
  fs::create_directories(dir / "b-run");
  std::ofstream(dir / "b-run" / "run.json") << "{}";
  fs::create_directories(dir / "A-model");
  std::ofstream(dir / "A-model" / "model.safetensors") << "x";
  fs::create_directories(dir / "plain");
  fs::create_directories(dir / ".hidden");
  std::ofstream(dir / "Z.safetensors") << "12345";
  std::ofstream(dir / "cycle.JSON") << "{}";
  std::ofstream(dir / "notes.txt") << "n";
  std::ofstream(dir / ".secret.json") << "{}";
  const std::vector<std::string> extensions = {".safetensors", ".json"};
  const auto entries = gui::listFolder(dir, extensions);
  std::vector<std::string> names, kinds;
  for (const auto& e : entries) names.push_back(e.name), kinds.push_back(e.kind);
  EXPECT_EQ(names, (std::vector<std::string>{"A-model", "b-run", "plain", "cycle.JSON", "Z.safetensors"}));
  EXPECT_EQ(kinds, (std::vector<std::string>{"model", "run", "", "topology", "checkpoint"}));
  EXPECT_TRUE(entries[0].folder);
  EXPECT_FALSE(entries[3].folder);
  EXPECT_EQ(entries[4].bytes, 5u);
  EXPECT_EQ(gui::listFolder(dir, {}).size(), 6u) << "no filter: notes.txt too";
  try {
    gui::listFolder(dir / "missing", extensions);
    FAIL() << "a missing folder was listed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

TEST(RunBook, AnAttachedRunShowsItsCurveItsEventsAndItsPlannedSteps) {
  const fs::path dir = sharelens::testing::makeTempDir("runbook");
  std::ofstream(dir / "run.json")
      << R"({"schema":"sharelens.run/1","topology":{"name":"cycle-4"},"config":{"steps":40}})";
  std::ofstream(dir / "metrics.jsonl") << "{\"step\":1,\"loss\":6.5}\n{\"step\":2,\"loss\":6.1}\n";
  gui::RunBook book;
  book.attach(dir);
  ASSERT_EQ(book.runs().size(), 1u);
  gui::RunEntry& run = *book.runs()[0];
  EXPECT_EQ(run.label, "cycle-4");
  EXPECT_EQ(run.totalSteps, 40);
  EXPECT_EQ(run.lastStep(), 2);
  std::ofstream(dir / "metrics.jsonl", std::ios::app)
      << "{\"step\":3,\"loss\":5.9}\n{\"event\":\"finish\"}\n";
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the poll is rate-limited (250 ms)
  book.poll();
  EXPECT_EQ(run.lastStep(), 3);
  EXPECT_EQ(run.status, "finished");
  book.attach(dir);
  EXPECT_EQ(book.runs().size(), 1u) << "attaching the same directory twice keeps one entry";
  fs::remove_all(dir);
}

TEST(RunBook, ARunRecordWithoutItsFieldsIsLabelledByItsDirectoryAndAWrongTypeIsANamedError) {
  const fs::path dir = sharelens::testing::makeTempDir("runbook-bare");
  std::ofstream(dir / "run.json") << "{}";
  gui::RunBook book;
  book.attach(dir);
  ASSERT_EQ(book.runs().size(), 1u);
  EXPECT_EQ(book.runs()[0]->label, dir.filename().string());
  EXPECT_EQ(book.runs()[0]->totalSteps, 0);

  const fs::path bad = sharelens::testing::makeTempDir("runbook-bad");
  std::ofstream(bad / "run.json") << R"({"topology":7})";
  try {
    book.attach(bad);
    FAIL() << "a topology that is a number was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("run.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("topology"), std::string::npos) << e.what();
  }
  EXPECT_THROW(book.attach(bad / "nothing-here"), Error);
  fs::remove_all(dir);
  fs::remove_all(bad);
}

// Taking a run off the monitor never loses progress: a run still training (or paused) is refused until it
// has stopped, and removing keeps the run's directory on disk.
TEST(RunBook, ARunIsRemovedOnlyOnceItHasStoppedAndItsDirectoryStays) {
  const fs::path dir = sharelens::testing::makeTempDir("runbook-remove");
  TrainConfig c;
  c.steps = 100000;
  c.batchSize = 4;
  c.evalEvery = 100000;
  c.checkpointEvery = 100000;
  c.threads = 1;
  gui::RunBook book;
  book.launch(debugTopology(), c, dir / "run", /*withBaseline=*/false);
  ASSERT_EQ(book.runs().size(), 1u);
  gui::RunEntry* run = book.runs()[0].get();
  auto waitFor = [](auto predicate) {
    for (int i = 0; i < 1200 && !predicate(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return predicate();
  };
  ASSERT_TRUE(waitFor([&] { return run->controller->state() == RunState::Running; }))
      << run->controller->message();
  EXPECT_FALSE(book.remove(run)) << "a training run was taken off the monitor";
  run->controller->pause();
  ASSERT_TRUE(waitFor([&] { return run->controller->state() == RunState::Paused; }));
  EXPECT_FALSE(book.remove(run)) << "a paused run was taken off the monitor";
  run->controller->requestStop();
  ASSERT_TRUE(waitFor([&] { return run->controller->state() == RunState::Stopped; }));
  EXPECT_TRUE(book.remove(run));
  EXPECT_TRUE(book.runs().empty());
  EXPECT_TRUE(isRunDirectory(dir / "run")) << "removing deleted the run's files";
  EXPECT_TRUE(latestCheckpoint(dir / "run").has_value()) << "stopping wrote a checkpoint";
  EXPECT_FALSE(book.remove(run)) << "a run no longer in the book";
  fs::remove_all(dir);
}

TEST(RunBook, TheDirectoryOfACompareRunAttachesBothRuns) {
  const fs::path dir = sharelens::testing::makeTempDir("runbook-pair");
  for (const char* role : {"model", "baseline"}) {
    fs::create_directories(dir / role);
    std::ofstream(dir / role / "run.json") << R"({"topology":{"name":"t"},"role":")" << role << R"("})";
  }
  fs::create_directories(dir / "not-a-run");
  gui::RunBook book;
  book.attach(dir);
  ASSERT_EQ(book.runs().size(), 2u);
  EXPECT_EQ(book.runs()[0]->label, "t (baseline)");
  EXPECT_EQ(book.runs()[1]->label, "t");
  try {
    book.attach(dir / "not-a-run");
    FAIL() << "an empty directory was attached";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a run directory"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

TEST(BlasThreads, PinsNestAcrossThreadsAndTheLeasedCountComesBackWithTheLastOne) {
  const BlasThreadLease run(2);
  EXPECT_EQ(currentBlasThreads(), 2);
  std::optional<SingleThreadedBlas> outer;
  outer.emplace();
  EXPECT_EQ(currentBlasThreads(), 1);
  std::thread other([] {
    SingleThreadedBlas inner;
    EXPECT_EQ(currentBlasThreads(), 1);
  });
  other.join();
  EXPECT_EQ(currentBlasThreads(), 1) << "the other thread's pin ending must not undo this one";
  outer.reset();
  EXPECT_EQ(currentBlasThreads(), 2);
}

// Issue 38 hazard 3: the pool's size is a budget shared by who holds it, not the last writer's. A run
// beside another (a comparison, an experiment's runs, an evaluation beside a GUI run) computes on one
// thread each; when one ends, the other gets its own count back; when the last ends, the count from
// before; a pin (an analysis) holds it at one through all of that. Before, the second run's request of 2
// left the pool at 2 under both runs, and the first run's ending left it where the last writer put it.
TEST(BlasThreads, LeasesHeldSideBySideShareThePoolAndGiveItBackWhenTheyEnd) {
  const int before = currentBlasThreads();
  std::optional<BlasThreadLease> model(std::in_place, 2);
  EXPECT_EQ(currentBlasThreads(), 2) << "one run alone has its count";
  std::optional<BlasThreadLease> baseline(std::in_place, 2);
  EXPECT_EQ(currentBlasThreads(), 1) << "two side by side: one thread each";
  {
    const BlasThreadLease evaluation(2);  // a third one meanwhile
    EXPECT_EQ(currentBlasThreads(), 1);
  }
  EXPECT_EQ(currentBlasThreads(), 1);
  model.reset();
  EXPECT_EQ(currentBlasThreads(), 2) << "the run left alone gets its count back";
  std::optional<SingleThreadedBlas> pin(std::in_place);
  EXPECT_EQ(currentBlasThreads(), 1);
  baseline.reset();
  EXPECT_EQ(currentBlasThreads(), 1) << "pinned while an analysis holds it";
  pin.reset();
  EXPECT_EQ(currentBlasThreads(), before) << "no lease and no pin: the count from before";
}

TEST(FrameTimes, PercentilesAreNearestRanksAfterTheWarmUpAndSplitIntoTheFramesParts) {
  using namespace std::chrono;
  FrameTimes times;
  const FrameTimes::Clock::time_point t0{};
  for (int i = 0; i < 10; ++i)
    times.add({t0, t0 + milliseconds(400), t0 + milliseconds(900), t0 + seconds(9), t0 + milliseconds(9100)});
  std::vector<int> ms(200);
  std::iota(ms.begin(), ms.end(), 1);
  std::shuffle(ms.begin(), ms.end(), std::mt19937(4));
  for (int m : ms) {
    const auto built = t0 + microseconds(250 * m), submitted = t0 + microseconds(750 * m),
               presented = submitted + milliseconds(2 * m);
    times.add({t0, built, submitted, presented, presented + microseconds(250 * m)});
  }
  const Json j = times.summary(10);
  EXPECT_EQ(j["frames"], 200);
  EXPECT_DOUBLE_EQ(j["p50_ms"].get<double>(), 100);
  EXPECT_DOUBLE_EQ(j["p99_ms"].get<double>(), 198);
  EXPECT_DOUBLE_EQ(j["max_ms"].get<double>(), 200);
  EXPECT_DOUBLE_EQ(j["build"]["p99_ms"].get<double>(), 49.5);
  EXPECT_DOUBLE_EQ(j["submit"]["p50_ms"].get<double>(), 50);
  EXPECT_DOUBLE_EQ(j["pictures"]["max_ms"].get<double>(), 50);
  EXPECT_DOUBLE_EQ(j["present"]["p99_ms"].get<double>(), 396) << "kept apart, not in the total";
  EXPECT_EQ(FrameTimes().summary(10)["p99_ms"], 0.0) << "no frames: zeros, not a crash";
}

namespace {

// Every series of two figures alike: points, style, name and revision.
void expectSameSeries(const plot::Figure& shown, const plot::Figure& built) {
  ASSERT_EQ(shown.series.size(), built.series.size());
  for (size_t i = 0; i < shown.series.size(); ++i) {
    const plot::Series &a = shown.series[i], &b = built.series[i];
    EXPECT_EQ(a.x, b.x) << "series " << i;
    EXPECT_EQ(a.y, b.y) << "series " << i;
    EXPECT_EQ(a.label, b.label) << "series " << i;
    EXPECT_EQ(a.revision, b.revision) << "series " << i;
    EXPECT_EQ(a.width, b.width) << "series " << i;
    EXPECT_TRUE(a.color.r == b.color.r && a.color.g == b.color.g && a.color.b == b.color.b) << "series " << i;
  }
}

}  // namespace

// The Training view's figures are built again when, and only when, the set of runs or a control changes, and
// a run's series when its points (its revision) change; what they show is what trainingFigure builds from the
// points at that time.
TEST(TrainingPanels, FiguresAreRebuiltExactlyWhenARunOrAControlChanges) {
  std::vector<MetricPoint> points;
  for (int s = 1; s <= 50; ++s) points.push_back({s, s * 100.0, 5.0 / s, s % 10 == 0 ? 5.5 / s : NAN});
  std::vector<plot::RunCurve> runs = {{"cycle", &points, 1}};
  TrainingPanels panels;
  TrainingPanelOptions options;
  EXPECT_EQ(panels.figures(runs, options)[0].series.size(), 2u) << "raw and smoothed";
  const uint64_t first = panels.figures(runs, options)[0].series[0].revision;
  EXPECT_NE(first, 0u) << "the memo keys on the revision instead of hashing the points";
  EXPECT_NE(panels.figures(runs, options)[0].series[1].revision, first) << "raw and smoothed differ";
  EXPECT_EQ(panels.rebuilds(), 1u) << "nothing changed: kept";
  points.push_back({51, 5100.0, 0.01});
  runs[0].revision = 2;  // as MetricsReader::poll() does when it reads a point
  EXPECT_EQ(panels.figures(runs, options)[0].series[0].y.back(), 0.01) << "the new point is shown";
  EXPECT_EQ(panels.rebuilds(), 1u) << "a run's new point: its own series built again, not the figures";
  EXPECT_EQ(panels.runUpdates(), 1u);
  EXPECT_NE(panels.figures(runs, options)[0].series[0].revision, first) << "new points: a new revision";
  options.smoothing = 0;
  EXPECT_EQ(panels.figures(runs, options)[0].series.size(), 1u) << "no smoothing: the raw series alone";
  options.metric = plot::RunMetric::ValidationLoss;
  panels.figures(runs, options);
  const uint64_t cycle = panels.figures(runs, options)[1].series[0].revision;
  std::vector<MetricPoint> other = points;
  runs.push_back({"baseline", &other, 1});
  EXPECT_EQ(panels.figures(runs, options)[1].series.size(), 2u) << "a second run in the validation panel";
  EXPECT_EQ(panels.figures(runs, options)[1].series[0].revision, cycle) << "the first run's series unchanged";
  EXPECT_NE(panels.figures(runs, options)[1].series[1].revision, cycle) << "other points: another revision";
  EXPECT_EQ(panels.rebuilds(), 4u);

  // With smoothing, two runs, and the second logging steps: the panels stay what trainingFigure builds.
  options = TrainingPanelOptions{};
  panels.figures(runs, options);
  EXPECT_EQ(panels.rebuilds(), 5u);
  const uint64_t firstRaw = panels.figures(runs, options)[0].series[0].revision;
  for (int s = 52; s <= 61; ++s) {
    other.push_back({s, s * 100.0, 4.0 / s, s % 10 == 0 ? 4.5 / s : NAN});
    ++runs[1].revision;
    const auto shown = panels.figures(runs, options);
    expectSameSeries(shown[0], plot::trainingFigure(runs, options.metric, options.axis, options.smoothing));
    expectSameSeries(shown[1], plot::trainingFigure(runs, plot::RunMetric::ValidationLoss, options.axis, 0));
  }
  EXPECT_EQ(panels.rebuilds(), 5u);
  EXPECT_EQ(panels.runUpdates(), 11u) << "ten steps of the second run";
  EXPECT_EQ(panels.figures(runs, options)[0].series[0].revision, firstRaw) << "the first run untouched";
  runs[1].label = "renamed";
  EXPECT_EQ(panels.figures(runs, options)[0].series[3].label, "renamed") << "a renamed run: built again";
  EXPECT_EQ(panels.rebuilds(), 6u);
}
