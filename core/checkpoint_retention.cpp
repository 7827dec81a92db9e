#include "core/checkpoint_retention.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/text.hpp"

namespace sharelens {

CheckpointRetention parseCheckpointRetention(const std::string& text, const std::string& where) {
  if (text == "all") return CheckpointRetention::all();
  if (text == "log") return CheckpointRetention::logSpaced();
  if (const auto n = parseWholeInt(text); n && *n >= 1) return CheckpointRetention::lastN(*n);
  throw Error(
      {.what = "unknown checkpoint retention",
       .where = where,
       .expected = "all, log or a count >= 1",
       .found = "'" + text + "'",
       .hint = "log keeps the newest 3 and log-spaced ones for the dynamics views; all keeps every one"});
}

std::string checkpointRetentionName(const CheckpointRetention& r) {
  switch (r.kind) {
    case CheckpointRetention::Kind::All:
      return "all";
    case CheckpointRetention::Kind::Log:
      return "log";
    case CheckpointRetention::Kind::Newest:
      return std::to_string(r.newest);
  }
  return "log";
}

Json checkpointRetentionToJson(const CheckpointRetention& r) {
  if (r.kind == CheckpointRetention::Kind::Newest) return r.newest;
  return checkpointRetentionName(r);
}

std::vector<int64_t> checkpointsToDrop(const std::vector<int64_t>& steps, const CheckpointRetention& policy,
                                       int64_t checkpointEvery) {
  std::vector<int64_t> drop;
  if (policy.kind == CheckpointRetention::Kind::All) return drop;
  const size_t newest = static_cast<size_t>(std::max<int64_t>(policy.newest, 0));
  const size_t firstNewest = steps.size() > newest ? steps.size() - newest : 0;
  for (size_t i = 0; i < firstNewest; ++i) {
    bool keep = false;
    if (policy.kind == CheckpointRetention::Kind::Log && checkpointEvery > 0 &&
        steps[i] % checkpointEvery == 0) {
      const int64_t index = steps[i] / checkpointEvery;
      keep = index > 0 && (index & (index - 1)) == 0;  // 1, 2, 4, 8, ... checkpoints in
    }
    if (!keep) drop.push_back(steps[i]);
  }
  return drop;
}

}  // namespace sharelens
