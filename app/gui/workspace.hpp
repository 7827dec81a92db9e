// The GUI's data model, free of ImGui: the open checkpoint with its canonical view and inspect report, the
// analyses of the registry computed for it (immutable results, shared with the views, each with how its job
// ended), and -- when following a training run -- the same for each of the run's checkpoints, so a step
// slider can scrub through training.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/rank_dynamics.hpp"
#include "analysis/registry.hpp"
#include "app/gui/jobs.hpp"
#include "app/gui/poll_throttle.hpp"
#include "core/json_util.hpp"
#include "core/run_dir.hpp"

namespace sharelens::gui {

// An analysis of one model: not started, computing, or ended as ok (with its result), cancelled or failed.
struct AnalysisOutcome {
  enum class State { Pending, Ok, Cancelled, Failed } state = State::Pending;
  AnalysisResult result;
  std::string error;
  AnalysisParams params;  // what it was (or is being) computed with
  uint64_t request = 0;   // which request this is: a later one supersedes it
};

class AnalysisSet {
 public:
  const AnalysisOutcome* find(std::string_view id) const;
  template <class T>
  const T* get(AnalysisId<T> id) const {  // the result when it is there (analysis/analysis_ids.hpp)
    const AnalysisOutcome* o = find(id);
    return o && o->state == AnalysisOutcome::State::Ok ? resultAs<T>(o->result) : nullptr;
  }
  AnalysisResult result(std::string_view id) const;  // null unless ok
  std::map<std::string, AnalysisOutcome, std::less<>> outcomes;
  std::string backend;  // the backend that computed the latest result ("cpu", "cuda")
};

// The rank dynamics of a followed run (analysis/rank_dynamics): one request at a time, the newest wins.
struct DynamicsOutcome {
  enum class State { None, Pending, Ok, Cancelled, Failed } state = State::None;
  std::shared_ptr<const RankDynamics> result;
  std::string error;
  std::vector<std::string> matrices;  // what was asked
  uint64_t request = 0;
};

struct LoadedModel {
  std::filesystem::path path;  // the checkpoint directory or file
  std::string label;
  int64_t step = -1;  // a run's checkpoint step
  std::shared_ptr<const Checkpoint> checkpoint;
  std::shared_ptr<const ModelView> view;
  std::shared_ptr<const Json> report;  // inspectCheckpoint()
  AnalysisSet results;
  double threshold = 0.95;
};

// Where analysis jobs get their linear-algebra backend: called on a job's worker thread only, never on the
// UI thread (a CUDA backend's constructor creates streams and cuBLAS/cuSOLVER handles). The default leases
// from a process-wide pool, CUDA where it is usable.
using BackendSource = std::function<std::shared_ptr<LinalgBackend>()>;
BackendSource pooledBackends();

class Workspace {
 public:
  static constexpr int64_t kNoSelection = INT64_MIN;  // -1 is a plain checkpoint's key

  // reportError: a failed job's message; opened: a checkpoint given to open(), or a run given to follow() to
  // be reported, was read and is now shown (what the app adds to Recent).
  Workspace(JobSystem& jobs, std::function<void(const std::string&)> reportError,
            std::function<void(const std::filesystem::path&)> opened = {},
            BackendSource backends = pooledBackends())
      : m_jobs(jobs),
        m_error(std::move(reportError)),
        m_opened(std::move(opened)),
        m_backends(std::move(backends)) {}

  // A checkpoint or a run directory (its latest checkpoint, and following it). A checkpoint replaces what is
  // shown only once it has been read: a file that fails to open leaves the current model, its analyses and
  // the followed run as they were (the job's error says why).
  void open(const std::filesystem::path& path, double threshold, bool analyse = true);
  // Follows a run: shows its latest checkpoint and each newer one. Like open(), the run replaces what is
  // shown only once that checkpoint has been read (at once when it has none yet); then, if reportAs is given,
  // the run is reported as opened under that name (a folder of runs is opened as the folder).
  void follow(const std::filesystem::path& runDir, double threshold,
              std::optional<std::filesystem::path> reportAs = std::nullopt);
  void poll(double threshold);  // UI thread: new checkpoints of a followed run

  const LoadedModel* current() const;
  // A followed run's complete checkpoints on disk (listed with the poll); each is loaded when chosen.
  std::vector<int64_t> steps() const;
  size_t loadedSteps() const;  // how many of them are loaded (the newest kKeptSteps and the chosen one)
  bool isLoaded(int64_t step) const { return m_models.count(step) > 0; }
  void selectStep(int64_t step);                       // loads it first when it is not loaded, then shows it
  int64_t selectedStep() const { return m_selected; }  // kNoSelection before anything is shown
  int64_t loadingStep() const { return m_wanted; }     // the chosen step being loaded; -1 when none
  const std::optional<std::filesystem::path>& followed() const { return m_follow; }

  // The parameters every analysis of the current model is computed with (views change them, then run()).
  AnalysisParams& params() { return m_params; }
  void analyseAll(double threshold);  // the registry's default set, with the current parameters
  // (Re)computes one analysis of the current model with the current parameters (a retry, a new ratio, ...).
  void run(std::string_view analysisId);
  bool busy() const;
  bool large() const;  // too big to analyse automatically (views offer a button instead)
  // Whether the rank dynamics of the followed run (its model at every checkpoint) are small enough to compute
  // without asking.
  bool dynamicsAffordable() const;

  // Effective rank, stable rank and spectral norm of chosen matrices at every checkpoint of the followed run.
  void computeDynamics(std::vector<std::string> matrices, double threshold);
  const DynamicsOutcome& dynamics() const { return m_dynamics; }

 private:
  // Why a checkpoint is read, which decides whether it is shown when it arrives: an opened file, or the first
  // checkpoint of a run to follow, always (each replaces the workspace once read, if still the newest
  // request); a followed run's new checkpoint while the view is on the newest; a chosen one if it is still
  // the choice.
  enum class LoadPurpose { Open, StartFollowing, Follow, Chosen };
  struct Opening {  // Open and StartFollowing: what becomes of the workspace when the checkpoint is read
    std::optional<std::filesystem::path> follow;    // the run to follow from then on
    std::optional<std::filesystem::path> reportAs;  // given to `opened`
  };
  uint64_t load(const std::filesystem::path& path, int64_t step, double threshold, bool analyse,
                LoadPurpose purpose, Opening opening = {});  // the job's id
  void startOver();  // when an open or a follow is read: drop the models and cancel their jobs
  void startFollowing(const std::filesystem::path& runDir, int64_t fromStep);
  void analyse(int64_t key, std::string_view analysisId);
  LoadedModel* byKey(int64_t key);

  JobSystem& m_jobs;
  std::function<void(const std::string&)> m_error;
  std::function<void(const std::filesystem::path&)> m_opened;
  BackendSource m_backends;
  std::map<int64_t, LoadedModel> m_models;  // key: step (or -1 for a plain checkpoint)
  std::vector<CheckpointEntry> m_onDisk;    // of the followed run, oldest first
  int64_t m_selected = kNoSelection;
  int64_t m_wanted = -1;       // a chosen step whose checkpoint is being loaded
  uint64_t m_wantedJob = 0;    // its job, cancelled when another step is chosen
  bool m_onNewest = true;      // the view moves to each new checkpoint (until an older step is chosen)
  uint64_t m_generation = 0;   // bumped by startOver(): completions of earlier loads are dropped
  uint64_t m_openRequest = 0;  // bumped by open() and follow(): only the newest pending open() is shown
  // The request of a follow() whose first checkpoint is being read: while it is the newest request, the run
  // followed before is not polled (its new checkpoints would be read and analysed for nothing).
  uint64_t m_startingToFollow = 0;
  DynamicsOutcome m_dynamics;
  uint64_t m_dynamicsJob = 0;
  std::optional<std::filesystem::path> m_follow;
  int64_t m_lastFollowedStep = -1;
  PollThrottle m_followThrottle;  // listing the followed run's checkpoints, at most 4 times a second
  AnalysisParams m_params;
  uint64_t m_requests = 0;
};

}  // namespace sharelens::gui
