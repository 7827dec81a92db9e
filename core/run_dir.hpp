// Run directories (DESIGN.md section 3):
//   run.json                       topology, hyper-parameters, seed, corpus and tokenizer fingerprints,
//   versions metrics.jsonl                  one JSON object per line, append-only; a torn last line is "in
//   progress" tokenizer.model                the SentencePiece model the run trains with
//   checkpoints/step-NNNNNNN/      model.safetensors, optim.safetensors, state.json, then COMPLETE, last
// Readers cope with a writer in another process: they take complete lines only and checkpoints only once
// their COMPLETE marker exists.
#pragma once

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/json_util.hpp"

namespace sharelens {

inline constexpr const char* kRunSchema = "sharelens.run/1";
inline constexpr const char* kCompleteMarker = "COMPLETE";

bool isRunDirectory(const std::filesystem::path& dir);
// The run directories directly inside `dir` (what `train --compare` and `experiment run` write), by name.
std::vector<std::filesystem::path> runDirectoriesIn(const std::filesystem::path& dir);
// Run directories inside dir up to `depth` levels down (a train --compare pair: 1; an experiment's
// ARM/seed-K runs: 2), sorted; a run directory's own subdirectories are not searched.
std::vector<std::filesystem::path> runDirectoriesBelow(const std::filesystem::path& dir, int depth);
std::filesystem::path checkpointDirectory(const std::filesystem::path& runDir,
                                          int64_t step);  // .../step-0000100

struct CheckpointEntry {
  int64_t step = 0;
  std::filesystem::path dir;
};
// Complete checkpoints, oldest first.
std::vector<CheckpointEntry> listCheckpoints(const std::filesystem::path& runDir);
std::optional<CheckpointEntry> latestCheckpoint(const std::filesystem::path& runDir);

struct MetricPoint {
  int64_t step = 0;
  double tokens = 0;
  double loss = NAN;
  double valLoss = NAN;  // NaN on steps without validation
  double lr = NAN;
  double gradNorm = NAN;
  double tokensPerSecond = NAN;
  double elapsed = 0;
  double penalty = NAN;  // "postshare_penalty": gamma L_w before this step's update (PostShare runs only)
  int worldSize = 1;     // "world_size": ranks of a distributed run
  std::vector<double> rankTokensPerSecond;  // "rank_tokens_per_s": each rank's throughput (distributed runs)
  double tensorPeakBytes = NAN;             // "tensor_peak_bytes": the run's CPU tensors at their peak so far
  double processPeakBytes = NAN;            // "rss_peak_bytes": its process's peak resident set so far
};

// Tails metrics.jsonl: each poll() reads the complete lines appended since the last one. Points are kept
// in step order with the last line of a step winning (a resumed run re-logs steps after its checkpoint).
class MetricsReader {
 public:
  explicit MetricsReader(std::filesystem::path file) : m_file(std::move(file)) {}
  size_t poll();  // returns the number of lines consumed; never throws on a torn or malformed last line
  const std::vector<MetricPoint>& points() const { return m_points; }
  // Changes whenever points() does, to a number no reader has had before (0: nothing read yet): a plot can
  // keep what it built from the points until it changes.
  uint64_t revision() const { return m_revision; }
  const std::vector<Json>& events() const { return m_events; }  // {"event": "resume" | "stop" | "skip", ...}
  size_t malformedLines() const { return m_malformed; }

 private:
  std::filesystem::path m_file;
  uint64_t m_offset = 0;
  std::vector<MetricPoint> m_points;
  std::vector<Json> m_events;
  size_t m_malformed = 0;
  uint64_t m_revision = 0;
  static uint64_t nextRevision();
};

MetricPoint metricFromJson(const Json& j);
Json metricToJson(const MetricPoint& p);

// What a user may pass where a checkpoint is expected: a checkpoint, or a run directory (its latest
// complete checkpoint). Throws a named Error when a run has no complete checkpoint yet.
std::filesystem::path resolveModelPath(const std::filesystem::path& path);

// The run directory a checkpoint belongs to (RUN for RUN or RUN/checkpoints/step-N), if any.
std::optional<std::filesystem::path> runDirectoryOf(const std::filesystem::path& path);

// On resume: drops every line of metrics.jsonl whose step is after `maxStep` (the checkpoint the run
// continues from), any "finish" event (the resumed run logs its own, also when it had nothing left to train)
// and a torn last line, so that no step and no finish is recorded twice; rewrites the file atomically.
// Returns the number of lines dropped.
int64_t trimMetricsFile(const std::filesystem::path& file, int64_t maxStep);

inline constexpr double kMaxMetricStep = 9007199254740992.0;  // 2^53: larger steps are not plausible records

// Appends one JSON line and flushes (no fsync: metrics are advisory; checkpoints carry the state).
void appendJsonLine(const std::filesystem::path& file, const Json& line);

}  // namespace sharelens
