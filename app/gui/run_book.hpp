// The training runs the monitor shows: embedded runs (a RunController training in this process) and
// attached run directories (written by `sharelens train` or another machine), both read through their
// metrics.jsonl so that both look the same. Polled a few times a second, never on every frame.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/gui/poll_throttle.hpp"
#include "core/run_dir.hpp"
#include "core/run_notes.hpp"
#include "trainer/run_controller.hpp"

namespace sharelens::gui {

struct RunEntry {
  std::string label;  // topology name and role
  std::filesystem::path dir;
  std::unique_ptr<RunController> controller;  // embedded runs only
  MetricsReader metrics;
  std::optional<Json> record;  // run.json once it exists
  bool visible = true;
  std::string status;  // for attached runs: "running" / "finished" / "stopped" from the events, or
                       // "interrupted" (not finished or stopped, and no process writes it: killed, crashed)
  int64_t totalSteps = 0;
  int64_t latestCheckpoint = -1;
  RunNotes notes;            // the researcher's tags and note (RUN_DIR/notes.json)
  std::string notesProblem;  // why notes.json could not be read (shown; saving replaces the file)

  RunEntry(std::string l, std::filesystem::path d);
  int64_t lastStep() const { return metrics.points().empty() ? 0 : metrics.points().back().step; }
};

class RunBook {
 public:
  // Starts an embedded run in `dir` (and, with `withBaseline`, its parameter-matched baseline beside it,
  // both on one thread each). Returns the model run's directory; starts nothing while that run trains here.
  std::filesystem::path launch(const Topology& topology, TrainConfig config, const std::filesystem::path& dir,
                               bool withBaseline);
  // Continues an embedded run from its latest checkpoint; nothing while it is training (or paused) here.
  void resumeEmbedded(const std::filesystem::path& dir, int threads);
  // Watches a run directory another process writes (or a finished one).
  void attach(const std::filesystem::path& dir);
  void poll();  // refresh metrics and states (rate-limited)

  std::vector<std::unique_ptr<RunEntry>>& runs() { return m_runs; }
  RunEntry* find(const std::filesystem::path& dir);
  bool anyTraining() const;
  // Whether any embedded run may still write into its directory (preparing, running or paused): closing
  // the window would stop it.
  bool anyHoldingItsDirectory() const;
  void stopAll();  // asks every embedded run to stop (each saves a checkpoint first)
  bool isTraining(const std::filesystem::path& dir);  // preparing, running or paused on this monitor
  // Whether every run on the monitor has logged at least `steps` steps (false with none).
  bool everyRunHasLogged(int64_t steps) const;
  // Takes a run off the monitor (its directory stays on disk). An embedded run that is still training or
  // paused is refused: it must be stopped first, so no progress is lost. Returns whether it was removed.
  bool remove(const RunEntry* run);

 private:
  RunEntry& add(std::string label, const std::filesystem::path& dir);
  void addAttached(const std::filesystem::path& runDir);  // a run directory onto the monitor, not polled
  std::vector<std::unique_ptr<RunEntry>> m_runs;
  PollThrottle m_pollThrottle;
};

}  // namespace sharelens::gui
