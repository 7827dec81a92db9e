#include "app/gui/workspace.hpp"

#include <algorithm>
#include <mutex>
#include <vector>

#include "analysis/backend.hpp"
#include "app/workflows/model_runner.hpp"
#include "core/arch/family.hpp"
#include "core/error.hpp"
#include "core/inspect_report.hpp"
#include "core/run_dir.hpp"

namespace fs = std::filesystem;

namespace sharelens::gui {
namespace {

constexpr int64_t kAutomaticLimit = 300'000'000;  // parameters analysed without asking
constexpr size_t kKeptSteps = 24;

// Backends for the analysis jobs, one per running job (DESIGN.md section 2: an instance serves one job at a
// time; the CUDA backend's streams and handles are its own). Returned ones are kept for the next job because
// creating a CUDA backend costs handles and streams. The pool is never destroyed: jobs may end at exit.
class BackendPool {
 public:
  static BackendPool& instance() {
    static auto* pool = new BackendPool;
    return *pool;
  }
  // A backend for this job; it goes back to the pool when the last copy of the pointer goes.
  std::shared_ptr<LinalgBackend> lease() {
    std::unique_ptr<LinalgBackend> backend;
    {
      std::lock_guard lock(m_mutex);
      if (!m_idle.empty()) {
        backend = std::move(m_idle.back());
        m_idle.pop_back();
      }
    }
    if (!backend) backend = selectBackend(Device::Cuda, nullptr);
    return {backend.release(), [this](LinalgBackend* b) {
              std::lock_guard lock(m_mutex);
              m_idle.emplace_back(b);
            }};
  }

 private:
  std::mutex m_mutex;
  std::vector<std::unique_ptr<LinalgBackend>> m_idle;
};

}  // namespace

BackendSource pooledBackends() {
  return [] { return BackendPool::instance().lease(); };
}

const LoadedModel* Workspace::current() const {
  auto it = m_models.find(m_selected);
  return it == m_models.end() ? nullptr : &it->second;
}

LoadedModel* Workspace::byKey(int64_t key) {
  auto it = m_models.find(key);
  return it == m_models.end() ? nullptr : &it->second;
}

std::vector<int64_t> Workspace::steps() const {
  std::vector<int64_t> out;
  for (const CheckpointEntry& c : m_onDisk) out.push_back(c.step);
  for (const auto& [step, m] : m_models)  // loaded ones whose files retention has since deleted stay listed
    if (step >= 0 && !std::binary_search(out.begin(), out.end(), step))
      out.insert(std::upper_bound(out.begin(), out.end(), step), step);
  return out;
}

size_t Workspace::loadedSteps() const {
  return static_cast<size_t>(
      std::count_if(m_models.begin(), m_models.end(), [](const auto& m) { return m.first >= 0; }));
}

void Workspace::selectStep(int64_t step) {
  m_onNewest = !m_onDisk.empty() && step >= m_onDisk.back().step;
  if (step == m_wanted) return;                   // already loading
  if (m_wanted >= 0) m_jobs.cancel(m_wantedJob);  // an earlier choice not loaded yet
  m_wanted = -1;
  if (m_models.count(step)) {
    m_selected = step;
    return;
  }
  for (const CheckpointEntry& c : m_onDisk)
    if (c.step == step) {
      m_wanted = step;
      m_wantedJob = load(c.dir, step, m_params.threshold, true, LoadPurpose::Chosen);
      return;
    }
}

bool Workspace::dynamicsAffordable() const {
  const LoadedModel* m = current();
  if (!m_follow || !m || !m->report || !m->report->contains("parameters")) return false;
  const auto checkpoints = static_cast<int64_t>(std::max<size_t>(1, steps().size()));
  return (*m->report)["parameters"]["total"].get<int64_t>() * checkpoints <= kAutomaticLimit;
}

void Workspace::computeDynamics(std::vector<std::string> matrices, double threshold) {
  if (!m_follow || matrices.empty()) return;
  const uint64_t request = ++m_requests;
  if (m_dynamics.state == DynamicsOutcome::State::Pending) m_jobs.cancel(m_dynamicsJob);  // superseded
  m_dynamics = {DynamicsOutcome::State::Pending, nullptr, {}, matrices, request};
  auto slot = std::make_shared<std::shared_ptr<const RankDynamics>>();
  m_dynamicsJob = m_jobs.submit(
      "rank against step (" + m_follow->filename().string() + ")",
      [runDir = *m_follow, matrices, threshold, slot,
       backends = m_backends](const TaskContext& ctx) -> JobSystem::Completion {
        const auto backend = backends();
        *slot = std::make_shared<const RankDynamics>(
            computeRankDynamics(runDir, matrices, *backend, threshold, ctx));
        return nullptr;
      },
      [this, request, slot](JobSystem::Status status, const std::string& error) {
        if (m_dynamics.request != request) return;  // superseded
        m_dynamics.state = status == JobSystem::Status::Ok          ? DynamicsOutcome::State::Ok
                           : status == JobSystem::Status::Cancelled ? DynamicsOutcome::State::Cancelled
                                                                    : DynamicsOutcome::State::Failed;
        m_dynamics.result = status == JobSystem::Status::Ok ? *slot : nullptr;
        m_dynamics.error = error;
      });
}

bool Workspace::busy()
    const {  // its loads and analyses: an experiment in the long lane is not the workspace's
  return !m_jobs.laneIdle(JobSystem::Lane::Analysis);
}

bool Workspace::large() const {
  const LoadedModel* m = current();
  return m && m->report && m->report->contains("parameters") &&
         (*m->report)["parameters"]["total"].get<int64_t>() > kAutomaticLimit;
}

void Workspace::open(const fs::path& path, double threshold, bool analyse) {
  if (isRunDirectory(path)) {
    follow(path, threshold, path);
    return;
  }
  ++m_openRequest;  // the current model stays until this one has been read (load's completion)
  load(path, -1, threshold, analyse, LoadPurpose::Open, {.reportAs = path});
}

void Workspace::follow(const fs::path& runDir, double threshold, std::optional<fs::path> reportAs) {
  ++m_openRequest;  // a checkpoint still being opened is not shown after all
  const std::vector<CheckpointEntry> onDisk = listCheckpoints(runDir);
  if (onDisk.empty()) {  // a run that has just started: nothing to read yet, so nothing can fail
    startOver();
    startFollowing(runDir, -1);
    if (reportAs && m_opened) m_opened(*reportAs);
    return;
  }
  // The current model stays until the run's latest checkpoint has been read: a run whose checkpoint is
  // unreadable leaves the workspace as it was (the job's error says why), as a file that fails to open does.
  m_startingToFollow = m_openRequest;
  load(onDisk.back().dir, onDisk.back().step, threshold, true, LoadPurpose::StartFollowing,
       {.follow = runDir, .reportAs = reportAs});
}

void Workspace::startFollowing(const fs::path& runDir, int64_t fromStep) {
  m_follow = runDir;
  m_onDisk = listCheckpoints(runDir);
  m_lastFollowedStep = fromStep;
  m_followThrottle.reset();
}

void Workspace::startOver() {
  ++m_generation;
  if (m_wanted >= 0) m_jobs.cancel(m_wantedJob);
  if (m_dynamics.state == DynamicsOutcome::State::Pending) m_jobs.cancel(m_dynamicsJob);
  m_models.clear();
  m_onDisk.clear();
  m_dynamics = {};
  m_selected = kNoSelection;
  m_wanted = -1;
  m_onNewest = true;
  m_lastFollowedStep = -1;
}

void Workspace::poll(double threshold) {
  if (!m_follow || m_startingToFollow == m_openRequest || !m_followThrottle.due()) return;
  m_onDisk = listCheckpoints(*m_follow);
  if (m_onDisk.empty() || m_onDisk.back().step <= m_lastFollowedStep) return;
  m_lastFollowedStep = m_onDisk.back().step;
  load(m_onDisk.back().dir, m_onDisk.back().step, threshold, true, LoadPurpose::Follow);
}

uint64_t Workspace::load(const fs::path& path, int64_t step, double threshold, bool analyse,
                         LoadPurpose purpose, Opening opening) {
  const auto labelOf = [](const fs::path& file, int64_t at) {  // "run @ step 30", or the file's name
    return at >= 0 ? file.parent_path().parent_path().filename().string() + " @ step " + std::to_string(at)
                   : file.filename().string();
  };
  const bool latest = purpose == LoadPurpose::StartFollowing && opening.follow;  // the step is read later
  const std::string label =
      latest ? opening.follow->filename().string() + " at its latest step" : labelOf(path, step);
  const uint64_t generation = m_generation, openRequest = m_openRequest;
  return m_jobs.submit(
      "open " + label,
      [this, path, step, latest, labelOf, threshold, analyse, purpose, opening, generation,
       openRequest](const TaskContext& ctx) -> JobSystem::Completion {
        // A run to follow is read at its latest checkpoint when the job starts, not when it was asked for:
        // meanwhile the run may have written newer ones and its retention deleted the one listed then.
        fs::path readPath = path;
        int64_t readStep = step;
        if (latest)
          if (const auto onDisk = listCheckpoints(*opening.follow); !onDisk.empty())
            readPath = onDisk.back().dir, readStep = onDisk.back().step;
        ctx.report(0.1, "reading the header");
        auto checkpoint = std::shared_ptr<const Checkpoint>(Checkpoint::open(readPath));
        auto report = std::make_shared<const Json>(inspectCheckpoint(*checkpoint));
        std::shared_ptr<const ModelView> view;
        if (!(*report)["family"].is_null())
          view = std::make_shared<const ModelView>(openModelView(*checkpoint));
        return [this, path = readPath, step = readStep, label = labelOf(readPath, readStep), threshold,
                analyse, purpose, opening, generation, openRequest, checkpoint, report, view] {
          const bool opens = purpose == LoadPurpose::Open || purpose == LoadPurpose::StartFollowing;
          if (opens) {
            if (openRequest != m_openRequest) return;  // another file or run was opened meanwhile
            m_startingToFollow = 0;
            startOver();  // read: now it replaces what was shown
            m_follow.reset();
            if (opening.follow) startFollowing(*opening.follow, step);
            if (opening.reportAs && m_opened) m_opened(*opening.reportAs);
          } else if (generation != m_generation) {
            return;  // another file or run was opened meanwhile
          }
          LoadedModel& m = m_models[step];
          m = LoadedModel{path, label, step, checkpoint, view, report, {}, threshold};
          bool show = opens;
          if (purpose == LoadPurpose::Chosen && step == m_wanted) {  // chosen on the slider while it loaded
            show = true;
            m_wanted = -1;
          }
          if (purpose ==
              LoadPurpose::Follow)  // a newer checkpoint of the run, while the view is on the newest
            show = m_onNewest && m_wanted < 0 && (m_selected == kNoSelection || step > m_selected);
          if (show) m_selected = step;
          while (m_models.size() > kKeptSteps) {  // keep the newest steps and the selected one
            auto oldest = m_models.begin();
            if (oldest->first == m_selected) ++oldest;
            m_models.erase(oldest);
          }
          if (analyse && view && !large()) {
            m_params.threshold = threshold;
            for (const AnalysisKind& kind : analysisKinds())
              if (kind.inDefaultSet) this->analyse(step, kind.id);
          }
        };
      },
      [this, step, purpose, generation, openRequest](JobSystem::Status status, const std::string&) {
        if (status != JobSystem::Status::Ok && purpose == LoadPurpose::StartFollowing &&
            openRequest == m_startingToFollow)
          m_startingToFollow = 0;  // not followed after all: the run followed before is polled again
        if (generation == m_generation && status != JobSystem::Status::Ok && purpose == LoadPurpose::Chosen &&
            step == m_wanted)
          m_wanted = -1;  // the job bar and the error panel say why
      });
}

void Workspace::analyseAll(double threshold) {
  m_params.threshold = threshold;
  LoadedModel* m = byKey(m_selected);
  if (!m || !m->view) return;
  m->threshold = threshold;
  for (const AnalysisKind& kind : analysisKinds())
    if (kind.inDefaultSet) analyse(m->step, kind.id);
}

void Workspace::run(std::string_view analysisId) {
  if (const LoadedModel* m = current(); m && m->view) analyse(m->step, analysisId);
}

// Submits one analysis of one loaded model; its outcome (ok with the result, cancelled, failed with the
// error) lands in the model's results if the model is still loaded and the request not superseded when the
// job ends. An analysis that cannot run on the model is recorded as failed with the reason, so its view says
// why.
void Workspace::analyse(int64_t key, std::string_view analysisId) {
  LoadedModel* model = byKey(key);
  if (!model || !model->view) return;
  const AnalysisKind& kind = analysis(analysisId);
  // `unavailable` reads the model, never the backend: a CPU one, which costs nothing to make, stands in for
  // the check here on the UI thread; the job gets its own from m_backends on its worker thread.
  static const std::unique_ptr<LinalgBackend> checksOnly = makeCpuBackend();
  const auto ckpt = model->checkpoint;
  const auto view = model->view;
  const AnalysisParams params = m_params;
  const ModelServices services = makeModelServices(model->path);
  const uint64_t request = ++m_requests;
  model->results.outcomes[std::string(kind.id)] = {
      AnalysisOutcome::State::Pending, nullptr, {}, params, request};
  if (const std::string why = kind.unavailable({*ckpt, *view, *checksOnly, services}); !why.empty()) {
    model->results.outcomes[std::string(kind.id)] = {AnalysisOutcome::State::Failed, nullptr, why, params,
                                                     request};
    return;
  }
  auto slot = std::make_shared<AnalysisResult>();
  auto backendName = std::make_shared<std::string>();
  m_jobs.submit(
      std::string(kind.title) + " (" + model->label + ")",
      [&kind, ckpt, view, services, params, slot, backendName,
       backends = m_backends](const TaskContext& ctx) -> JobSystem::Completion {
        const auto backend = backends();
        *backendName = backend->name();
        *slot = kind.run({*ckpt, *view, *backend, services}, params, ctx);
        return nullptr;
      },
      [this, key, ckpt, id = std::string(kind.id), request, slot, backendName](JobSystem::Status status,
                                                                               const std::string& error) {
        LoadedModel* m = byKey(key);
        if (!m || m->checkpoint != ckpt) return;
        const auto it = m->results.outcomes.find(id);
        if (it == m->results.outcomes.end() || it->second.request != request)
          return;  // superseded by a newer request
        AnalysisOutcome& o = it->second;
        o.state = status == JobSystem::Status::Ok          ? AnalysisOutcome::State::Ok
                  : status == JobSystem::Status::Cancelled ? AnalysisOutcome::State::Cancelled
                                                           : AnalysisOutcome::State::Failed;
        o.result = status == JobSystem::Status::Ok ? *slot : nullptr;
        o.error = error;
        if (!backendName->empty()) m->results.backend = *backendName;
      });
}

const AnalysisOutcome* AnalysisSet::find(std::string_view id) const {
  const auto it = outcomes.find(id);
  return it == outcomes.end() ? nullptr : &it->second;
}

AnalysisResult AnalysisSet::result(std::string_view id) const {
  const AnalysisOutcome* o = find(id);
  return o && o->state == AnalysisOutcome::State::Ok ? o->result : nullptr;
}

}  // namespace sharelens::gui
