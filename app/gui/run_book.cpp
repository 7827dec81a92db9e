#include "app/gui/run_book.hpp"

#include <algorithm>

#include "core/directory_lock.hpp"
#include "core/error.hpp"
#include "core/param_count.hpp"
#include "core/run_groups.hpp"

namespace fs = std::filesystem;

namespace sharelens::gui {
namespace {

// Runs trained inside the GUI yield the cores to its drawing (RunRequest::niceness). On this project's
// 2-core machine, with a run training, the --bench-ui frame's p99 fell from 8.4-9.0 ms to 6.8-7.7 ms.
constexpr int kEmbeddedRunNiceness = 10;

// The run's planned steps (config.steps), 0 when the record does not say.
int64_t plannedSteps(const Json& record, const fs::path& dir) {
  const JsonObject run(record, (dir / "run.json").string());
  if (auto config = run.optionalObject("config")) return config->optionalInt("steps", 0).value_or(0);
  return 0;
}

bool holdsItsDirectory(const RunEntry& r) {  // a controller that may still write into the run directory
  if (!r.controller) return false;
  const RunState s = r.controller->state();
  return s == RunState::Running || s == RunState::Preparing || s == RunState::Paused;
}

}  // namespace

RunEntry::RunEntry(std::string l, std::filesystem::path d)
    : label(std::move(l)), dir(std::move(d)), metrics(dir / "metrics.jsonl") {
  try {
    notes = readRunNotes(dir);
  } catch (const Error& e) {
    notesProblem = e.what();
  }
}

RunEntry& RunBook::add(std::string label, const fs::path& dir) {
  m_runs.push_back(std::make_unique<RunEntry>(std::move(label), dir));
  return *m_runs.back();
}

RunEntry* RunBook::find(const fs::path& dir) {
  for (auto& r : m_runs)
    if (fs::weakly_canonical(r->dir) == fs::weakly_canonical(dir)) return r.get();
  return nullptr;
}

fs::path RunBook::launch(const Topology& topology, TrainConfig config, const fs::path& dir,
                         bool withBaseline) {
  const fs::path modelDir = withBaseline ? dir / "model" : dir;
  if (isTraining(modelDir)) return modelDir;  // one writer per run directory: it trains already
  if (withBaseline) config.threads = 1;       // two runs side by side share the cores
  RunRequest model{topology, config, modelDir};
  model.niceness = kEmbeddedRunNiceness;
  if (withBaseline) model.sibling = "baseline";
  RunEntry& entry = add(topology.name, model.runDir);
  entry.totalSteps = config.steps;
  entry.controller = RunController::start(model);
  if (withBaseline) {
    RunRequest base{.topology = parameterMatchedBaseline(topology),
                    .config = config,
                    .runDir = dir / "baseline",
                    .role = "baseline",
                    .sibling = "model",
                    .niceness = kEmbeddedRunNiceness};
    RunEntry& b = add(base.topology.name, base.runDir);
    b.totalSteps = config.steps;
    b.controller = RunController::start(base);
  }
  return model.runDir;
}

void RunBook::resumeEmbedded(const fs::path& dir, int threads) {
  RunRequest request;
  request.runDir = dir;
  request.resume = true;
  request.config.threads = threads;
  request.niceness = kEmbeddedRunNiceness;
  const Json record = readJsonFile(dir / "run.json");
  const int64_t steps = plannedSteps(record, dir);
  RunEntry* entry = find(dir);
  if (entry && holdsItsDirectory(*entry)) return;  // one writer per run directory: it trains already
  if (!entry) entry = &add(runLabel(record, dir), dir);
  entry->totalSteps = steps;
  entry->controller = RunController::start(request);  // a directory another process holds: a named error
}

void RunBook::attach(const fs::path& dir) {
  if (!isRunDirectory(dir)) {
    const auto runs = runDirectoriesBelow(dir, 2);  // train --compare's pair, an experiment's ARM/seed-K runs
    if (runs.empty())
      throw Error({.what = "not a run directory",
                   .where = dir.string(),
                   .expected = "a directory with run.json, or one holding such directories (an experiment's "
                               "ARM/seed-K included)",
                   .hint = "attach the directory `sharelens train --out` wrote"});
    for (const fs::path& run : runs) addAttached(run);
  } else {
    addAttached(dir);
  }
  m_pollThrottle.reset();  // show their curves now: one poll of every run, not one per run attached
  poll();
}

void RunBook::addAttached(const fs::path& dir) {
  if (find(dir)) return;
  const Json record = readJsonFile(dir / "run.json");
  RunEntry& e = add(runLabel(record, dir), dir);
  e.record = record;
  e.totalSteps = plannedSteps(record, dir);
  e.status = "attached";
}

void RunBook::poll() {
  if (!m_pollThrottle.due()) return;
  for (auto& r : m_runs) {
    if (r->controller) r->controller->takeMetrics();  // the file is the one source; drop the in-memory copies
    // Whether a process writes an attached run, asked before its events are read: a run that logs its
    // finish and exits between the two is then read as finished, never for a moment as interrupted.
    std::optional<bool> writer;
    if (!r->controller) writer = directoryHasWriter(r->dir);
    const bool noWriter = writer.has_value() && !*writer, liveWriter = writer.has_value() && *writer;
    r->metrics.poll();
    if (!r->record && fs::exists(r->dir / "run.json")) {
      try {
        r->record = readJsonFile(r->dir / "run.json");
      } catch (const Error&) {
      }
    }
    if (!r->controller) {
      for (const Json& e : r->metrics.events()) {
        const std::string event = e["event"].get<std::string>();  // MetricsReader keeps only string events
        if (event == "finish")
          r->status = "finished";
        else if (event == "stop")
          r->status = "stopped";
        else if (event == "resume")
          r->status = "running";
      }
    }
    if (const auto latest = latestCheckpoint(r->dir)) r->latestCheckpoint = latest->step;
    // Attached, neither finished nor stopped, with a checkpoint and no live writer (its process was killed
    // or crashed): "interrupted", and it continues from its last checkpoint as a stopped run does; "running"
    // again once a writer holds it.
    if (!r->controller && r->status != "finished" && r->status != "stopped" && r->latestCheckpoint >= 0) {
      if (noWriter) r->status = "interrupted";
      if (liveWriter && r->status == "interrupted") r->status = "running";
    }
  }
}

bool RunBook::anyTraining() const {
  return std::any_of(m_runs.begin(), m_runs.end(), [](const auto& r) {
    if (!r->controller) return false;
    const RunState s = r->controller->state();
    return s == RunState::Running || s == RunState::Preparing;
  });
}

bool RunBook::anyHoldingItsDirectory() const {
  return std::any_of(m_runs.begin(), m_runs.end(), [](const auto& r) { return holdsItsDirectory(*r); });
}

void RunBook::stopAll() {
  for (const auto& r : m_runs)
    if (holdsItsDirectory(*r)) r->controller->requestStop();
}

bool RunBook::isTraining(const fs::path& dir) {
  const RunEntry* entry = find(dir);
  return entry && holdsItsDirectory(*entry);
}

bool RunBook::everyRunHasLogged(int64_t steps) const {
  return !m_runs.empty() &&
         std::all_of(m_runs.begin(), m_runs.end(), [&](const auto& r) { return r->lastStep() >= steps; });
}

bool RunBook::remove(const RunEntry* run) {
  const auto it = std::find_if(m_runs.begin(), m_runs.end(), [&](const auto& r) { return r.get() == run; });
  if (it == m_runs.end()) return false;
  if ((*it)->controller) {
    const RunState s = (*it)->controller->state();
    if (s == RunState::Running || s == RunState::Paused || s == RunState::Preparing) return false;
  }
  m_runs.erase(it);
  return true;
}

}  // namespace sharelens::gui
