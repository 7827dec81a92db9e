#include "core/experiment_archive.hpp"

#include <unistd.h>

#include <cmath>
#include <sstream>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/experiment.hpp"
#include "core/json_util.hpp"
#include "core/run_dir.hpp"

namespace fs = std::filesystem;

namespace sharelens {

namespace {

constexpr const char* kRecords[] = {"run.json", "eval.json", kFailedRunFile, "derived.json"};

// eval.json as the archive keeps it: without its per-window sums (3,000 numbers per run; the report reads
// the per-document ones), the arrays left empty so that it still reads as an evaluation, on one line.
std::string archivedEvaluation(const std::string& text) {
  Json j = Json::parse(text, nullptr, false);
  if (!j.is_object()) return text;  // not ours to mend: kept as it is
  for (const char* windows : {"window_nll", "window_tokens"})
    if (j.contains(windows)) j[windows] = Json::array();
  if (j.contains("windows")) j["windows"] = 0;  // as many as the arrays hold
  return j.dump() + "\n";
}

// Copies one run directory's records (and its thinned metrics) from `from` into `to`, which exists.
void copyRunRecords(const fs::path& from, const fs::path& to) {
  for (const char* name : kRecords)
    if (fs::exists(from / name)) {
      const std::string text = readTextFile(from / name);
      writeFileAtomically(to / name, std::string(name) == "eval.json" ? archivedEvaluation(text) : text);
    }
  if (fs::exists(from / "metrics.jsonl"))
    writeFileAtomically(to / "metrics.jsonl", thinnedMetrics(readTextFile(from / "metrics.jsonl")));
}

// The run and, for a derived arm, its post-training runs two levels down, copied into the empty directory
// `to`.
void copyRun(const fs::path& from, const fs::path& to) {
  copyRunRecords(from, to);
  for (const fs::path& nested : runDirectoriesBelow(from, 2)) {
    const fs::path target = to / fs::relative(nested, from);
    fs::create_directories(target);
    copyRunRecords(nested, target);
  }
}

// Replaces `target` by a copy of the finished run `from`, whole or not at all: the copy is made beside it
// (.NAME.tmp-PID), the old one renamed aside (.NAME.old-PID), the copy renamed into place, the old removed. A
// kill leaves the old copy or the new one in place, and at most hidden leftovers (.gitignore'd) beside it.
void replaceWithRun(const fs::path& from, const fs::path& target) {
  if (!isFinishedExperimentRun(from))
    throw Error({.what = "not a finished run of an experiment",
                 .where = from.string(),
                 .expected = std::string("eval.json or ") + kFailedRunFile,
                 .found = "neither",
                 .hint = "only finished runs are archived; an unfinished one resumes from its checkpoint"});
  const fs::path parent = target.parent_path();
  const std::string name = target.filename().string(), pid = std::to_string(::getpid());
  const fs::path staging = parent / ("." + name + ".tmp-" + pid), old = parent / ("." + name + ".old-" + pid);
  std::error_code ec;
  fs::create_directories(parent);
  fs::remove_all(staging, ec);
  fs::create_directories(staging);
  try {
    copyRun(from, staging);
    if (fs::exists(target)) fs::rename(target, old);
    fs::rename(staging, target);
  } catch (const fs::filesystem_error& e) {
    fs::remove_all(staging, ec);
    throw Error({.what = "cannot copy the run", .where = target.string(), .found = e.what()});
  } catch (...) {
    fs::remove_all(staging, ec);
    throw;
  }
  fsyncDirectory(parent);
  fs::remove_all(old, ec);
}

}  // namespace

bool isFinishedExperimentRun(const fs::path& runDir) {
  std::error_code ec;
  return fs::exists(runDir / "eval.json", ec) || fs::exists(runDir / kFailedRunFile, ec);
}

void archiveExperimentRun(const fs::path& runDir, const fs::path& archiveRunDir) {
  replaceWithRun(runDir, archiveRunDir);
}

void restoreExperimentRun(const fs::path& archiveRunDir, const fs::path& runDir) {
  replaceWithRun(archiveRunDir, runDir);
}

std::string thinnedMetrics(const std::string& metricsJsonl) {
  std::istringstream in(metricsJsonl);
  std::string line, kept, lastPoint;
  bool lastKept = false;
  while (std::getline(in, line)) {
    if (in.eof()) break;  // no newline after it: a line still being written
    const Json j = Json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("step") || j.contains("event")) continue;  // an event, or malformed
    const auto val = j.find("val_loss");
    lastKept = val != j.end() && val->is_number() && std::isfinite(val->get<double>());
    if (lastKept) kept += line + "\n";
    lastPoint = line;
  }
  if (!lastPoint.empty() && !lastKept) kept += lastPoint + "\n";
  return kept;
}

}  // namespace sharelens
