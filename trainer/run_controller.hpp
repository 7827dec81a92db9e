// Embedded training runs (DESIGN.md section 2). A RunController owns one training thread; between steps it
// drains commands (pause, resume, stop, checkpoint now) and publishes POD StepMetrics that the UI takes once
// per frame. The same TrainingRun serves the CLI (runTraining, on the calling thread). This header is
// torch-free: the app includes it without compiling LibTorch.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/run_dir.hpp"
#include "core/task.hpp"
#include "core/topology.hpp"
#include "trainer/train_config.hpp"

namespace sharelens {

struct StepMetrics {
  int worldSize = 1;
  std::vector<double> rankTokensPerSecond;  // each rank's throughput (distributed runs)
  int64_t step = 0;
  double tokens = 0;
  double loss = 0;
  double valLoss = NAN;  // NaN on steps without validation
  double lr = 0;
  double gradNorm = 0;
  double tokensPerSecond = 0;
  double elapsed = 0;
  double penalty =
      NAN;  // gamma L_w of PostShare (Eq. 4-5), NaN without it; `loss` is the cross-entropy alone
  bool skipped = false;           // non-finite loss or gradient: no update
  double tensorPeakBytes = NAN;   // the run's CPU tensors at their peak so far (trainer/tensor_memory.hpp)
  double processPeakBytes = NAN;  // the process's peak resident set so far
};

enum class RunState : uint8_t { Preparing, Running, Paused, Finished, Stopped, Failed };
std::string_view runStateName(RunState s);

// Data-parallel training on LibTorch's c10d (TCPStore rendezvous, ProcessGroupGloo on CPU, ProcessGroupNCCL
// on CUDA): every rank trains on a disjoint shard of each global batch; rank 0 writes the run directory.
struct DistributedConfig {
  int rank = 0, worldSize = 1;            // RANK, WORLD_SIZE
  int localRank = 0, localWorldSize = 1;  // LOCAL_RANK, LOCAL_WORLD_SIZE: ranks sharing this machine's cores
  std::string masterAddr = "127.0.0.1";   // MASTER_ADDR: where rank 0's TCPStore listens
  int masterPort = 29500;                 // MASTER_PORT
  double timeoutSeconds = 120;            // a rank that stops answering makes the others stop after this
  int64_t checkWeightsEvery = 0;  // debug: compare weight hashes across ranks every K steps (0: never)
  bool enabled() const { return worldSize > 1; }
};

// The rank's place from the usual launcher variables (torchrun: RANK, WORLD_SIZE, LOCAL_RANK,
// LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT; Slurm: SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID,
// SLURM_NTASKS_PER_NODE); a single process when none is set. A malformed or inconsistent variable is a named
// Error.
DistributedConfig distributedFromEnvironment();

struct RunRequest {
  Topology topology;
  TrainConfig config;
  std::filesystem::path runDir;
  bool resume = false;  // continue the run in runDir from its latest complete checkpoint; the topology
                        // and config then come from its run.json, except for:
  std::optional<int64_t> resumeToSteps;  // extend (never shorten) the resumed run to this many steps
  bool startIfNothingToResume = false;   // resume of a directory without run.json (killed while preparing):
                                         // start it from `topology` instead of refusing
  std::optional<std::filesystem::path>
      initFrom;                // post-training: start from this checkpoint's weights (ShareLens
                               // or Hugging Face Llama layout) and train with its tokenizer
  std::string role = "model";  // "model" or "baseline" (recorded in run.json)
  std::string sibling;         // the other run of a --compare pair, relative to runDir's parent
  DistributedConfig distributed;
  // Above 0: RunController's training thread, and the threads it starts, run at this nice value (Linux
  // gives each thread its own, and new threads inherit it), so that they yield the cores to the GUI's
  // drawing and return to full speed when it idles. A BLAS pool started by another thread keeps that
  // thread's priority (with config.threads = 1, the GUI's comparisons and --bench-ui, BLAS runs on the
  // training thread itself). The GUI sets it for the runs it launches or resumes; `sharelens train`
  // and runTraining (experiments, whose jobs run on shared worker threads) ignore it.
  int niceness = 0;
};

class TrainingRun;

class RunController {
 public:
  static std::unique_ptr<RunController> start(RunRequest request);
  ~RunController();  // stops (saving a checkpoint) and joins
  RunController(const RunController&) = delete;
  RunController& operator=(const RunController&) = delete;

  void pause();
  void resume();
  void requestStop();
  void checkpointNow();
  void wait();

  RunState state() const;
  std::string message() const;  // why it failed or stopped, or the current preparation stage
  const std::filesystem::path& runDirectory() const;
  Topology topology()
      const;  // a resume's own once prepared (copies: the training thread may publish it meanwhile)
  int64_t totalSteps() const;
  TaskProgress& progress();
  std::vector<StepMetrics> takeMetrics();  // published since the last call

 private:
  explicit RunController(RunRequest request);
  struct Shared;
  std::shared_ptr<Shared> m_shared;
};

// Trains on the calling thread until done, stopped (ctx.stop) or failed; onStep sees every step's metrics.
// Bad input (topology, corpus, run directory) throws a named Error; a run that stops on non-finite losses
// returns RunState::Failed with the reason in `message`.
RunState runTraining(const RunRequest& request, const TaskContext& ctx,
                     const std::function<void(const StepMetrics&)>& onStep, std::string* message = nullptr);

// Trains `request.topology` and its parameter-matched baseline concurrently (half the threads each) on the
// same data order, into runDir/<name> and runDir/<name>-baseline. Returns both final states.
std::pair<RunState, RunState> runComparison(
    const RunRequest& request, const TaskContext& ctx,
    const std::function<void(const std::string& role, const StepMetrics&)>& onStep);

// Whether this LibTorch can train on CUDA here.
bool cudaTrainingAvailable();
std::string torchVersion();

}  // namespace sharelens
