#include "trainer/experiment_runner.hpp"

#include <atomic>
#include <cmath>
#include <deque>
#include <mutex>
#include <thread>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/run_dir.hpp"
#include "trainer/evaluate.hpp"
#include "trainer/run_controller.hpp"
#include "trainer/torch_compat.hpp"

namespace fs = std::filesystem;

namespace sharelens {

TrainConfig experimentTrainConfig(const Experiment& e, const ExperimentArm& arm, uint64_t seed) {
  Json merged = trainConfigToJson(TrainConfig{});
  merged.merge_patch(e.train);
  TrainConfig c = trainConfigFromJson(merged, "experiment '" + e.name + "': train");
  c.corpus = e.corpus;
  c.seed = seed;
  const int64_t perStep = c.batchSize * arm.topology.model.context;
  c.steps = std::max<int64_t>(1, (e.tokens + perStep - 1) / perStep);
  c.warmupSteps = std::min(c.warmupSteps, c.steps / 5);
  c.checkpointEvery = std::min(c.checkpointEvery, c.steps);
  return c;
}

void runExperiment(Experiment e, const fs::path& outDir, const ExperimentRunOptions& o, const TaskContext& ctx,
                   const std::function<void(const std::string&)>& log) {
  if (o.seeds) {
    if (*o.seeds < 2 || *o.seeds > static_cast<int>(e.seeds.size()))
      throw Error({.what = "seeds out of range", .where = "--seeds", .expected = "2.." + std::to_string(e.seeds.size()),
                   .found = std::to_string(*o.seeds), .hint = "an interval needs at least 2 seeds"});
    e.seeds.resize(static_cast<size_t>(*o.seeds));
  }
  if (o.steps) {
    const TrainConfig c = experimentTrainConfig(e, e.arms.front(), 0);
    e.tokens = *o.steps * c.batchSize * e.arms.front().topology.model.context;
  }
  for (const ExperimentArm& arm : e.arms) (void)experimentTrainConfig(e, arm, 0);  // every arm's options valid before training
  const Json resolved = experimentToJson(e);
  const fs::path file = outDir / "experiment.json";
  if (fs::exists(file)) {
    if (readJsonFile(file) != resolved)
      throw Error({.what = "the directory holds another experiment (or this one with other seeds, steps or arms)",
                   .where = file.string(), .hint = "choose another --out, or run it with the options it was started with"});
  } else {
    fs::create_directories(outDir);
    writeFileAtomically(file, resolved.dump(2) + "\n");
  }

  struct Job {
    const ExperimentArm* arm;
    uint64_t seed;
  };
  std::deque<Job> queue;
  for (const ExperimentArm& arm : e.arms)
    for (uint64_t seed : e.seeds) queue.push_back({&arm, seed});
  const size_t total = queue.size();
  const int parallel = std::max(1, o.parallel);
  const int threads = std::max(1, (o.threads > 0 ? o.threads : ctx.threadCount()) / parallel);
  if (parallel > 1) openblas_set_num_threads(1);  // one process-wide BLAS pool: runs side by side keep to one thread
  std::mutex mutex;
  std::atomic<size_t> done{0};
  std::exception_ptr failure;
  auto say = [&](const std::string& line) {
    std::lock_guard lock(mutex);
    if (log) log(line);
  };
  auto worker = [&] {
    for (;;) {
      Job job;
      {
        std::lock_guard lock(mutex);
        if (queue.empty() || failure || ctx.stop.stop_requested()) return;
        job = queue.front();
        queue.pop_front();
      }
      const std::string name = job.arm->name + " seed " + std::to_string(job.seed);
      const fs::path dir = experimentRunDirectory(outDir, job.arm->name, job.seed);
      try {
        if (fs::exists(dir / "eval.json")) {
          say("[" + std::to_string(++done) + "/" + std::to_string(total) + "] " + name + ": already finished");
          continue;
        }
        RunRequest r;
        r.topology = job.arm->topology;
        r.config = experimentTrainConfig(e, *job.arm, job.seed);
        r.config.threads = threads;
        r.runDir = dir;
        r.role = job.arm->matchedBaselineOf.empty() ? "model" : "baseline";
        r.resume = isRunDirectory(dir);
        r.startIfNothingToResume = true;
        TaskContext own = ctx;
        own.threads = threads;
        say("   " + name + ": " + (r.resume ? "resuming" : "training") + " " + std::to_string(r.config.steps) + " steps");
        std::string message;
        const RunState state = runTraining(r, own, nullptr, &message);
        if (state == RunState::Stopped) return;
        if (state != RunState::Finished)
          throw Error({.what = "a run of the experiment failed", .where = dir.string(), .found = message});
        EvalOptions eo;
        eo.corpus = e.corpus;
        eo.tokens = e.evalTokens;
        eo.threads = threads;
        const EvalResult ev = evaluateCheckpoint(dir, eo, own);
        writeFileAtomically(dir / "eval.json", evalResultToJson(ev).dump(2) + "\n");
        char nll[32];
        std::snprintf(nll, sizeof nll, "%.4f", ev.nll);
        say("[" + std::to_string(++done) + "/" + std::to_string(total) + "] " + name + ": finished, held-out NLL " + nll);
      } catch (const Cancelled&) {
        return;
      } catch (...) {
        std::lock_guard lock(mutex);
        if (!failure) failure = std::current_exception();
        return;
      }
    }
  };
  {
    std::vector<std::jthread> workers;
    for (int i = 0; i < parallel; ++i) workers.emplace_back(worker);
  }
  if (failure) std::rethrow_exception(failure);
  ctx.throwIfCancelled();
}

}  // namespace sharelens
