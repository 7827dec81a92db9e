// Which checkpoints a training run keeps (`train --keep-checkpoints all|N|log`). Dynamics views (rank against
// step) need checkpoints spread over the whole run, not only the last few, so the default is `log`.
//   all    every checkpoint
//   N      the newest N
//   log    the newest 3, and every checkpoint whose index (its step / checkpoint_every) is a power of two:
//          about log2(steps / checkpoint_every) + 3 in all, spread evenly on a log-step axis
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/json_util.hpp"

namespace sharelens {

struct CheckpointRetention {
  enum class Kind : uint8_t { All, Newest, Log };
  Kind kind = Kind::Log;
  int64_t newest = 3;  // Newest: how many; Log: the newest kept besides the power-of-two ones

  static CheckpointRetention all() { return {Kind::All, 0}; }
  static CheckpointRetention lastN(int64_t n) { return {Kind::Newest, n}; }
  static CheckpointRetention logSpaced() { return {Kind::Log, 3}; }
};

// "all", "log" or a positive count; a named Error (with `where`) otherwise.
CheckpointRetention parseCheckpointRetention(const std::string& text, const std::string& where);
std::string checkpointRetentionName(const CheckpointRetention& r);  // "all", "log", "5"
// run.json's "keep_checkpoints": "all" | "log" | N; the older "keep_last": N reads as N.
Json checkpointRetentionToJson(const CheckpointRetention& r);

// Of a run's complete checkpoints (steps, oldest first), those the policy drops.
std::vector<int64_t> checkpointsToDrop(const std::vector<int64_t>& steps, const CheckpointRetention& policy,
                                       int64_t checkpointEvery);

}  // namespace sharelens
