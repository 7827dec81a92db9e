#include "app/gui/jobs.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace sharelens::gui {

JobSystem::JobSystem(int workers, std::function<void()> wakeUi, ErrorHandler onError)
    : m_wake(std::move(wakeUi)), m_onError(std::move(onError)) {
  for (int i = 0; i < workers; ++i)
    m_workers.emplace_back([this](std::stop_token stop) { workerLoop(stop, Lane::Analysis); });
  for (int i = 0; i < kLongWorkers; ++i)
    m_workers.emplace_back([this](std::stop_token stop) { workerLoop(stop, Lane::Long); });
  for (int i = 0; i < kFilesWorkers; ++i)
    m_workers.emplace_back([this](std::stop_token stop) { workerLoop(stop, Lane::Files); });
}

namespace {
size_t index(JobSystem::Lane lane) {
  return static_cast<size_t>(lane);
}
}  // namespace

JobSystem::~JobSystem() {
  cancelAll();
  for (auto& w : m_workers) w.request_stop();
  for (auto& ready : m_ready) ready.notify_all();
  m_workers.clear();  // joins
}

uint64_t JobSystem::submit(std::string name, Work work, Finished finished, Lane lane, Shown shown) {
  auto job = std::make_shared<Job>();
  job->name = std::move(name);
  job->work = std::move(work);
  job->finished = std::move(finished);
  job->lane = lane;
  job->shown = shown;
  {
    std::lock_guard lock(m_mutex);
    job->id = m_next++;
    m_queue[index(lane)].push_back(job);
  }
  m_ready[index(lane)].notify_one();
  return job->id;
}

void JobSystem::cancel(uint64_t id) {
  std::lock_guard lock(m_mutex);
  for (auto& queue : m_queue)
    std::erase_if(queue, [&](const std::shared_ptr<Job>& j) {
      if (j->id != id) return false;
      if (j->finished) m_completions.push_back([f = j->finished] { f(Status::Cancelled, {}); });
      return true;
    });
  for (auto& j : m_running)  // a save being written is not stopped (Info::cancellable)
    if (j->id == id && j->lane != Lane::Files) j->stop.request_stop();
}

void JobSystem::cancelAll() {
  std::lock_guard lock(m_mutex);
  for (const Lane lane : {Lane::Analysis, Lane::Long}) {  // never the saves: see the header
    auto& queue = m_queue[index(lane)];
    for (auto& j : queue)
      if (j->finished) m_completions.push_back([f = j->finished] { f(Status::Cancelled, {}); });
    queue.clear();
  }
  for (auto& j : m_running)
    if (j->lane != Lane::Files) j->stop.request_stop();
}

void JobSystem::drainCompletions() {
  std::vector<Completion> ready;
  {
    std::lock_guard lock(m_mutex);
    ready.swap(m_completions);
  }
  for (Completion& c : ready) c();
}

std::vector<JobSystem::Info> JobSystem::jobs() const {
  std::lock_guard lock(m_mutex);
  std::vector<Info> out;
  for (const auto& j : m_running)
    if (j->shown == Shown::InJobBar)
      out.push_back(
          {j->id, j->name, j->progress.stage(), j->progress.fraction(), true, j->lane != Lane::Files});
  for (const auto& queue : m_queue)
    for (const auto& j : queue)
      if (j->shown == Shown::InJobBar) out.push_back({j->id, j->name, "queued", 0.0, false, true});
  return out;
}

bool JobSystem::idle() const {
  std::lock_guard lock(m_mutex);
  return std::all_of(m_queue.begin(), m_queue.end(), [](const auto& q) { return q.empty(); }) &&
         m_running.empty() && m_completions.empty();
}

bool JobSystem::laneIdle(Lane lane) const {
  std::lock_guard lock(m_mutex);
  const auto shownOfLane = [&](const auto& j) { return j->lane == lane && j->shown == Shown::InJobBar; };
  return std::none_of(m_queue[index(lane)].begin(), m_queue[index(lane)].end(), shownOfLane) &&
         std::none_of(m_running.begin(), m_running.end(), shownOfLane);
}

void JobSystem::workerLoop(std::stop_token stop, Lane lane) {
  auto& queue = m_queue[index(lane)];
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock lock(m_mutex);
      m_ready[index(lane)].wait(lock, stop, [&] { return !queue.empty(); });
      // Stopped (the app exits): a worker leaves, but the Files lane's only once every save is written.
      if (stop.stop_requested() && (lane != Lane::Files || queue.empty())) return;
      job = queue.front();
      queue.pop_front();
      job->started = true;
      m_running.push_back(job);
    }
    TaskContext ctx;
    ctx.stop = job->stop.get_token();
    ctx.progress = &job->progress;
    Completion completion;
    Status status = Status::Ok;
    std::string error;
    try {
      completion = job->work(ctx);
    } catch (const Cancelled&) {
      status = Status::Cancelled;
    } catch (...) {
      status = Status::Failed;
      error = errorFromException(std::current_exception()).what();
      const std::string name = job->name;
      completion = [this, name, error] { m_onError(name, error); };
    }
    if (status == Status::Ok && job->stop.stop_requested()) {  // finished, but its result is no longer wanted
      status = Status::Cancelled;
      completion = nullptr;
    }
    {
      std::lock_guard lock(m_mutex);
      std::erase(m_running, job);
      if (completion) m_completions.push_back(std::move(completion));
      if (job->finished) m_completions.push_back([f = job->finished, status, error] { f(status, error); });
    }
    if (m_wake) m_wake();
  }
}

}  // namespace sharelens::gui
