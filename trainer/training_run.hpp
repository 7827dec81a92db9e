// TrainingRun: one run from preparation (corpus, tokenizer, tokens, model, resume) through the training
// loop, its checkpoints and metrics (training_run.cpp), and the channel through which RunController's thread
// and its owner talk to it (run_controller.cpp). Trainer-internal: includes torch.
#pragma once

#include <torch/types.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/directory_lock.hpp"
#include "core/json_util.hpp"
#include "core/outside_stops.hpp"
#include "trainer/distributed.hpp"
#include "trainer/model.hpp"
#include "trainer/optimizer.hpp"
#include "trainer/run_controller.hpp"
#include "trainer/tensor_memory.hpp"
#include "trainer/token_data.hpp"
#include "trainer/torch_compat.hpp"

namespace sharelens {

// Commands and published state shared between the training thread and its owner.
struct RunChannel {
  std::mutex mutex;
  std::condition_variable wake;
  bool paused = false;
  bool checkpointRequested = false;
  RunState state = RunState::Preparing;
  std::string message;
  std::vector<StepMetrics> metrics;
  TaskProgress progress;

  void setState(RunState s, std::string why = {}) {
    std::lock_guard lock(mutex);
    state = s;
    if (!why.empty()) message = std::move(why);
  }
};

class TrainingRun {
 public:
  TrainingRun(RunRequest request, RunChannel& channel, const TaskContext& ctx)
      : m_request(std::move(request)), m_channel(channel), m_ctx(ctx) {}

  // Everything checked, the data loaded and the model built; throws a named Error and leaves the run
  // directory as it was (one this call created is removed again).
  void prepare();
  RunState loop(const std::function<void(const StepMetrics&)>& onStep);
  const RunRequest& request() const { return m_request; }

 private:
  // Rank 0 (or the only rank) writes the run directory; other ranks train and write nothing.
  bool writer() const { return !m_group || m_group->rank() == 0; }
  void log(const Json& line) {
    if (writer()) appendJsonLine(m_request.runDir / "metrics.jsonl", line);
  }
  double validationLoss();
  void saveCheckpoint(int64_t step, double elapsedSeconds);
  torch::Tensor toDevice(const TokenBatch& b) const;
  void joinDistributed(const std::string& corpusFingerprint, const std::string& tokenizerFingerprint);
  RunState step(int64_t step, double lr, StepMetrics& metrics, std::string& nonFinite);
  RunState trainSteps(const std::function<void(const StepMetrics&)>& onStep);
  void recordStep(StepMetrics& metrics);
  void saveAfterFailure(const char* what) noexcept;
  void logStopsFromOutside();  // a "suspended" line for the stops from outside since the last one
  double elapsedSeconds() const;
  void prepareRun();
  void takeRunDirectory();

  RunRequest m_request;
  RunChannel& m_channel;
  const TaskContext& m_ctx;
  std::optional<ComputeThreads> m_computeThreads;  // from prepare() on
  int m_threads = 1;                               // its count
  // The CPU tensors this run allocates (weights, gradients, moments, activations); null when not counted.
  std::shared_ptr<TensorMemoryAccount> m_memory = newTensorMemoryAccount();
  TokenData m_data;
  std::unique_ptr<SharedTransformer> m_model;
  std::unique_ptr<AdamW> m_optimizer;
  std::unique_ptr<DistributedGroup> m_group;  // distributed runs only
  std::unique_ptr<DirectoryLock> m_lock;      // rank 0: the run directory's one writer, until the run ends
  bool m_createdRunDir = false;               // by this run: removed again if prepare() fails
  torch::Device m_device = torch::kCPU;
  int64_t m_step = 0;
  double m_tokens = 0, m_elapsedAtResume = 0;  // seconds trained before this process
  double m_pausedSeconds = 0;                  // this process's time paused (pause() until resume())
  double m_stoppedLogged = 0;  // secondsStoppedFromOutside() when the last "suspended" line was logged
  int64_t m_skipped = 0, m_consecutiveNonFinite = 0;
  double m_lastLoss = NAN, m_lastValLoss = NAN;
  int64_t m_lastSaved = 0;  // the newest checkpoint's step
  // What an error can keep (saveAfterFailure).
  enum class StepState {
    Logged,    // the weights, moments and counters are step m_step's, and its metrics line is logged
    Unlogged,  // they are step m_step's; its line is not logged yet (validation, the throughput gather, the
               // write): log it with what the error cut short left out, then save
    Unsure,    // a step is changing them (the update, a skip's counters) or the ranks' copies are being
               // compared: no step's whole, so nothing new is saved
    Writing,   // its line is being written: a failed write may have left part of it, and a second one
               // would follow that part, so nothing new is saved
  };
  StepState m_stepState = StepState::Logged;
  StepMetrics m_stepMetrics;     // the step being trained, until its line is logged
  bool m_saving = false;         // inside saveCheckpoint: an error there is not retried
  RunningStopwatch m_loopClock;  // since the loop started, less stops from outside
};

}  // namespace sharelens
