// RunController (a run on its own thread: pause, resume, stop, checkpoint now, its metrics taken by the
// owner), runTraining and runComparison (the same, synchronously; a model beside its parameter-matched
// baseline): what drives a TrainingRun (training_run.hpp).
#include <sys/resource.h>

#include <torch/cuda.h>
#include <torch/version.h>

#include <algorithm>
#include <exception>
#include <thread>
#include <utility>

#include "core/error.hpp"
#include "core/param_count.hpp"
#include "trainer/training_run.hpp"

namespace sharelens {

namespace fs = std::filesystem;

struct RunController::Shared {
  explicit Shared(RunRequest r) : request(std::move(r)) {}
  const RunRequest request;  // frozen before the thread starts: both threads read it, neither writes it
  RunChannel channel;
  std::optional<RunRequest>
      resolved;  // guarded by channel.mutex: a resume's topology and config, once prepared
  std::stop_source stop;
  TaskContext ctx;
  std::jthread thread;
};

RunController::RunController(RunRequest request) : m_shared(std::make_shared<Shared>(std::move(request))) {}

std::unique_ptr<RunController> RunController::start(RunRequest request) {
  std::unique_ptr<RunController> controller(new RunController(std::move(request)));
  auto shared = controller->m_shared;
  shared->ctx.stop = shared->stop.get_token();
  shared->ctx.progress = &shared->channel.progress;
  shared->ctx.threads = shared->request.config.threads;
  shared->thread = std::jthread([shared] {
    // For this thread only (and those it starts): PRIO_PROCESS with 0 names the calling thread on Linux.
    // Best effort: a run at normal priority is still a correct run.
    if (shared->request.niceness > 0) (void)::setpriority(PRIO_PROCESS, 0, shared->request.niceness);
    try {
      TrainingRun run(shared->request, shared->channel, shared->ctx);
      run.prepare();
      {
        std::lock_guard lock(shared->channel.mutex);
        shared->resolved = run.request();  // resume fills in topology and config
      }
      run.loop(nullptr);
    } catch (const Cancelled&) {
      shared->channel.setState(RunState::Stopped, "stopped while preparing");
    } catch (const std::exception& e) {
      shared->channel.setState(RunState::Failed, e.what());
    }
  });
  return controller;
}

RunController::~RunController() {
  requestStop();
  wait();
}

void RunController::pause() {
  std::lock_guard lock(m_shared->channel.mutex);
  m_shared->channel.paused = true;
}
void RunController::resume() {
  {
    std::lock_guard lock(m_shared->channel.mutex);
    m_shared->channel.paused = false;
  }
  m_shared->channel.wake.notify_all();
}
void RunController::requestStop() {
  {
    // Under the channel's mutex: a paused run that has just found it must wait holds it until it waits, so
    // the stop is either seen by that check or its wake-up reaches the waiting run -- never lost between
    // them, which would leave the run asleep and the destructor's join hanging.
    std::lock_guard lock(m_shared->channel.mutex);
    m_shared->stop.request_stop();
  }
  m_shared->channel.wake.notify_all();
}
void RunController::checkpointNow() {
  std::lock_guard lock(m_shared->channel.mutex);
  m_shared->channel.checkpointRequested = true;
}
void RunController::wait() {
  if (m_shared->thread.joinable()) m_shared->thread.join();
}
RunState RunController::state() const {
  std::lock_guard lock(m_shared->channel.mutex);
  return m_shared->channel.state;
}
std::string RunController::message() const {
  std::lock_guard lock(m_shared->channel.mutex);
  return m_shared->channel.message;
}
const fs::path& RunController::runDirectory() const {
  return m_shared->request.runDir;
}
Topology RunController::topology() const {
  std::lock_guard lock(m_shared->channel.mutex);
  return m_shared->resolved ? m_shared->resolved->topology : m_shared->request.topology;
}
int64_t RunController::totalSteps() const {
  std::lock_guard lock(m_shared->channel.mutex);
  return m_shared->resolved ? m_shared->resolved->config.steps : m_shared->request.config.steps;
}
TaskProgress& RunController::progress() {
  return m_shared->channel.progress;
}
std::vector<StepMetrics> RunController::takeMetrics() {
  std::lock_guard lock(m_shared->channel.mutex);
  return std::exchange(m_shared->channel.metrics, {});
}

// ---- synchronous entry points ---------------------------------------------------------------------------

RunState runTraining(const RunRequest& request, const TaskContext& ctx,
                     const std::function<void(const StepMetrics&)>& onStep, std::string* message) {
  RunChannel channel;
  TrainingRun run(request, channel, ctx);
  run.prepare();
  const RunState state = run.loop(onStep);
  if (message) {
    std::lock_guard lock(channel.mutex);
    *message = channel.message;
  }
  return state;
}

std::pair<RunState, RunState> runComparison(
    const RunRequest& request, const TaskContext& ctx,
    const std::function<void(const std::string&, const StepMetrics&)>& onStep) {
  const Topology baseline = parameterMatchedBaseline(request.topology);
  const int threads =
      std::max(1, (request.config.threads > 0 ? request.config.threads : ctx.threadCount()) / 2);
  RunRequest model = request, base = request;
  model.runDir = request.runDir / "model";
  model.sibling = "baseline";
  model.config.threads = threads;
  base.topology = baseline;
  base.runDir = request.runDir / "baseline";
  base.role = "baseline";
  base.sibling = "model";
  base.config.threads = threads;
  // Both runs hold a lease on the OpenBLAS pool while they train: side by side, each computes on one thread
  // (core/blas_threads.hpp), so they do not oversubscribe the cores.
  std::mutex reportMutex;
  RunState states[2] = {RunState::Failed, RunState::Failed};
  std::exception_ptr failures[2];
  auto train = [&](int i, const RunRequest& r) {
    try {
      TaskContext own = ctx;
      own.threads = threads;
      states[i] = runTraining(r, own, [&](const StepMetrics& m) {
        std::lock_guard lock(reportMutex);
        if (onStep) onStep(r.role, m);
      });
    } catch (...) {
      failures[i] = std::current_exception();
    }
  };
  {
    std::jthread first(train, 0, std::cref(model));
    std::jthread second(train, 1, std::cref(base));
  }
  for (auto& f : failures)
    if (f) std::rethrow_exception(f);
  return {states[0], states[1]};
}

std::string_view runStateName(RunState s) {
  constexpr std::string_view names[] = {"preparing", "running", "paused", "finished", "stopped", "failed"};
  return names[static_cast<int>(s)];
}

bool cudaTrainingAvailable() {
  return torch::cuda::is_available();
}

std::string torchVersion() {
  return TORCH_VERSION;
}

}  // namespace sharelens
