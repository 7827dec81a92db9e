#include "trainer/experiment_runner.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "core/atomic_file.hpp"
#include "core/blas_threads.hpp"
#include "core/corpus.hpp"
#include "core/directory_lock.hpp"
#include "core/error.hpp"
#include "core/experiment_archive.hpp"
#include "core/machine.hpp"
#include "core/param_count.hpp"
#include "core/run_dir.hpp"
#include "core/statistics.hpp"
#include "trainer/evaluate.hpp"
#include "trainer/run_controller.hpp"
#include "trainer/torch_compat.hpp"

namespace fs = std::filesystem;

namespace sharelens {
namespace {

// A derived run whose source run diverged: recorded as failed too (there is no model to derive from), marked
// so that the report does not count it as the derived arm's own divergence.
class SourceDiverged : public RunDiverged {
 public:
  using RunDiverged::RunDiverged;
};

}  // namespace

TrainConfig experimentTrainConfig(const Experiment& e, const ExperimentArm& arm, uint64_t seed) {
  const std::string where = "experiment '" + e.name + "': train";
  Json train = e.train;
  // The warmup as a share of each run's steps (the MASA paper's "linear warmup over the first 10% of training
  // steps"), so that a sweep's or pilot's shorter runs warm up over the same share as the full ones.
  std::optional<double> warmupFraction;
  if (const auto it = train.find("warmup_fraction"); it != train.end()) {
    if (!it->is_number() || it->get<double>() <= 0 || it->get<double>() > 0.5)
      throw Error({.what = "the warmup's share of the steps is out of range",
                   .where = where + " field 'warmup_fraction'",
                   .expected = "a number in (0, 0.5]",
                   .found = it->dump(),
                   .hint = "0.1 warms up over the first 10% of each run's steps"});
    if (train.contains("warmup_steps"))
      throw Error({.what = "two warmups given",
                   .where = where,
                   .expected = "warmup_steps or warmup_fraction",
                   .found = "both",
                   .hint = "keep the one the paper states (a profile drops the file's warmup_fraction with "
                           "\"warmup_fraction\": null in its train)"});
    warmupFraction = it->get<double>();
    train.erase(it);
  }
  Json merged = trainConfigToJson(TrainConfig{});
  for (const auto& [key, value] : train.items())  // a misspelt option would silently train the default
    if (!merged.contains(key)) {
      std::string known;
      for (const auto& [k, v] : merged.items()) known += (known.empty() ? "" : ", ") + k;
      throw Error({.what = "unknown training option",
                   .where = where + " field '" + key + "'",
                   .expected = "one of " + known + ", or warmup_fraction",
                   .found = "'" + key + "'",
                   .hint = "check its spelling: an unknown option would otherwise be ignored"});
    }
  merged.merge_patch(train);
  TrainConfig c = trainConfigFromJson(merged, where);
  c.corpus = e.corpus;
  c.seed = seed;
  if (arm.lr) c.lr = *arm.lr;
  if (!arm.aaOf.empty()) c.initSeed = seed + kAaInitSeedOffset;  // other initialisation, the same data
  const int64_t perStep = c.batchSize * arm.topology.model.context;
  c.steps = std::max<int64_t>(1, e.tokens / perStep + (e.tokens % perStep != 0));
  c.warmupSteps = warmupFraction
                      ? std::max<int64_t>(1, std::llround(*warmupFraction * static_cast<double>(c.steps)))
                      : std::min(c.warmupSteps, c.steps / 5);
  c.checkpointEvery = std::min(c.checkpointEvery, c.steps);
  return c;
}

namespace {

// An experiment's seeds cut or extended to k: the first k, or all of them followed by the next unused
// integers above the largest (1, 2, 3 -> 1, 2, 3, 4, 5).
std::vector<uint64_t> seedsResizedTo(std::vector<uint64_t> seeds, size_t k) {
  uint64_t next = seeds.empty() ? 1 : *std::max_element(seeds.begin(), seeds.end()) + 1;
  while (seeds.size() < k) seeds.push_back(next++);
  seeds.resize(k);
  return seeds;
}

// Whether the seed list `grown` is `recorded` followed by seeds of its own (or the same list).
bool extendsSeeds(const Json& recorded, const Json& grown) {
  if (!recorded.is_array() || !grown.is_array() || grown.size() < recorded.size()) return false;
  return std::equal(recorded.begin(), recorded.end(), grown.begin());
}

// Whether any arm's run in OUT/<arm>/seed-N/ has started (a run record, a derived model or an evaluation).
bool anyRunStarted(const fs::path& outDir) {
  std::error_code ec;
  for (const auto& arm : fs::directory_iterator(outDir, ec))
    for (const auto& seed : fs::directory_iterator(arm.path(), ec))
      for (const char* file : {"run.json", "derived.json", "eval.json"})
        if (fs::exists(seed.path() / file, ec)) return true;
  return false;
}

}  // namespace

int experimentRunsAtATime(const Experiment& e, const ExperimentRunOptions& o, const TaskContext& ctx,
                          size_t runs) {
  const int allThreads = std::max(1, o.threads > 0 ? o.threads : ctx.threadCount());
  // Auto: one run per thread while runs remain. At every size measured (bench_train --runs, 0.3M to 10M
  // parameters on 2 cores) N runs of one thread each trained 1.34-1.64x the tokens/s of one run on N threads:
  // small GEMMs scale poorly across threads, and a run's elementwise work is single-threaded.
  // Auto is also capped by memory: the largest arm's training estimate (param_count) times the runs side by
  // side stays within half of this machine's RAM.
  int fitting = allThreads;
  if (const int64_t ram = physicalMemoryBytes(); ram > 0) {
    double largest = 0;
    for (const ExperimentArm& arm : e.arms)
      largest = std::max(largest, estimateTrainingMemory(
                                      arm.topology, experimentTrainConfig(e, arm, e.seeds.front()).batchSize)
                                      .total());
    if (largest > 0) fitting = std::max(1, static_cast<int>(0.5 * static_cast<double>(ram) / largest));
  }
  return o.parallel > 0 ? o.parallel : std::max(1, std::min({allThreads, fitting, static_cast<int>(runs)}));
}

void runExperiment(Experiment e, const fs::path& outDir, const ExperimentRunOptions& o,
                   const TaskContext& ctx, const std::function<void(const std::string&)>& log) {
  if (o.seeds) {
    if (*o.seeds < kFewestSeedsForAnInterval || *o.seeds > kMostExperimentSeeds)
      throw Error({.what = "seeds out of range",
                   .where = "--seeds",
                   .expected = std::to_string(kFewestSeedsForAnInterval) + ".." +
                               std::to_string(kMostExperimentSeeds),
                   .found = std::to_string(*o.seeds),
                   .hint = "an interval needs at least 2 seeds"});
    e.seeds = seedsResizedTo(e.seeds, static_cast<size_t>(*o.seeds));
  }
  if (o.steps) {
    const TrainConfig c = experimentTrainConfig(e, e.arms.front(), 0);
    e.tokens = *o.steps * c.batchSize * e.arms.front().topology.model.context;
  }
  for (const ExperimentArm& arm : e.arms)
    (void)experimentTrainConfig(e, arm, 0);  // every arm's options valid before training
  (void)loadCorpus(e.corpus);                // and its corpus there, before experiment.json is written
  const Json resolved = experimentToJson(e);
  const fs::path file = outDir / "experiment.json";
  // Writes DIR/experiment.json, after checking that DIR holds this experiment or only runs that never
  // started. `what` names DIR's role in the error.
  auto claimDirectory = [&](const fs::path& dir, const std::string& what, const std::string& hint) {
    const fs::path record = dir / "experiment.json";
    fs::create_directories(dir);
    if (!fs::exists(record)) {
      writeFileAtomically(record, resolved.dump(2) + "\n");
      return;
    }
    // Read as this version reads it (an older record's defaults kept), then written as this version writes
    // it, so that only what differs in substance counts.
    Json recorded = experimentRecord(readJsonFile(record));
    try {
      recorded = experimentToJson(experimentFromJson(recorded, record.string(), dir));
    } catch (const Error&) {  // not readable any more: compared as it stands
    }
    // Another experiment is refused once any of its runs has started; one that never trained a step (refused
    // by a check at training time) is only a plan, and its corrected file takes its place.
    // More seeds for an experiment that ran (its report says how many its spread needs): the same experiment
    // with the recorded seeds first; the finished runs stand and only the new seeds train.
    const bool moreSeeds =
        experimentTrainingIdentityLessSeeds(recorded) == experimentTrainingIdentityLessSeeds(resolved) &&
        extendsSeeds(recorded.value("seeds", Json::array()), resolved["seeds"]);
    if (moreSeeds && recorded["seeds"] != resolved["seeds"] && log)
      log("adding seeds to the " + std::to_string(recorded["seeds"].size()) + " that " + dir.string() +
          " holds: " + std::to_string(resolved["seeds"].size()) + " in all");
    if (!moreSeeds && experimentTrainingIdentity(recorded) != experimentTrainingIdentity(resolved) &&
        anyRunStarted(dir))
      throw Error(
          {.what = "the " + what + " holds another experiment (or this one with other seeds, steps or arms)",
           .where = record.string(),
           .hint = hint});
    if (recorded != resolved) writeFileAtomically(record, resolved.dump(2) + "\n");
  };
  fs::create_directories(outDir);
  const DirectoryLock lock(outDir, "experiment");  // one runner per directory; released when it ends
  claimDirectory(outDir, "directory", "choose another --out, or run it with the options it was started with");
  std::optional<DirectoryLock> archiveLock;  // one runner per archive too: two would race on a run's copy
  if (o.archive) {
    fs::create_directories(*o.archive);
    archiveLock.emplace(*o.archive, "experiment's results archive");
    claimDirectory(*o.archive, "results archive",
                   "choose another --archive, or remove the archive's runs to train this experiment afresh");
  }

  if (std::any_of(e.arms.begin(), e.arms.end(),
                  [](const ExperimentArm& a) { return a.derive.has_value(); }) &&
      !o.deriveArm)
    throw Error({.what = "derived arms need DirectShare and PostShare",
                 .where = "experiment '" + e.name + "'",
                 .hint = "run it with `sharelens experiment run`"});

  struct Job {
    const ExperimentArm* arm;
    uint64_t seed;
  };
  // Two phases: the derived arms start from their sources' finished runs. Seed by seed, every arm of a seed
  // before the next seed: an experiment stopped part way (a machine session's end) leaves whole seeds, which
  // the report pairs, rather than some arms' runs only.
  std::deque<Job> trained, derived;
  for (uint64_t seed : e.seeds)
    for (const ExperimentArm& arm : e.arms) (arm.derive ? derived : trained).push_back({&arm, seed});
  const size_t total = trained.size() + derived.size();
  const int allThreads = std::max(1, o.threads > 0 ? o.threads : ctx.threadCount());
  const int parallel = experimentRunsAtATime(e, o, ctx, total);
  const int threads = std::max(1, allThreads / parallel);
  // Each run leases its threads on the one process-wide BLAS pool; runs side by side keep to one thread each
  // (core/blas_threads.hpp).
  std::mutex mutex;
  std::set<std::pair<std::string, uint64_t>>
      trainedHere;  // arm and seed trained by this call (under `mutex`)
  std::atomic<size_t> done{0};
  std::exception_ptr failure;
  auto say = [&](const std::string& line) {
    std::lock_guard lock(mutex);
    if (log) log(line);
  };
  // Every arm's held-out documents, a derived model's too (it is not a run directory, so its evaluation
  // would otherwise take the default share instead of the one its source was trained beside).
  const double heldOut = experimentTrainConfig(e, e.arms.front(), e.seeds.front()).validationFraction;
  auto evaluate = [&](const fs::path& model, const fs::path& dir, const TaskContext& own) {
    EvalOptions eo;
    eo.corpus = e.corpus;
    eo.validationFraction = heldOut;
    eo.tokens = e.evalTokens;
    eo.threads = threads;
    const EvalResult ev = evaluateCheckpoint(model, eo, own);
    if (!std::isfinite(
            ev.nll))  // no eval.json: recorded as diverged, or (not tolerated) the error, each time
      throw RunDiverged(
          {.what = "the held-out loss is not finite", .where = dir.string(), .found = "NaN or inf"});
    writeFileAtomically(dir / "eval.json", evalResultToJson(ev).dump(2) + "\n");
    return ev.nll;
  };
  auto runOne = [&](const Job& job, const TaskContext& own) -> std::optional<double> {  // nullopt: stopped
    const std::string name = job.arm->name + " seed " + std::to_string(job.seed);
    const fs::path dir = experimentRunDirectory(outDir, job.arm->name, job.seed);
    if (job.arm->derive) {
      const DerivedArm& d = *job.arm->derive;
      const fs::path source = experimentRunDirectory(outDir, d.from, job.seed);
      if (fs::exists(source / kFailedRunFile) && o.tolerateFailedRuns)  // nothing to derive: no model
        throw SourceDiverged({.what = "the source run of a derived arm diverged", .where = source.string()});
      if (!fs::exists(source / "eval.json"))
        throw Error({.what = "the source run of a derived arm did not finish", .where = source.string()});
      if (fs::exists(dir)) fs::remove_all(dir);  // a derived run killed half-way starts again: it is short
      fs::create_directories(dir);
      say("   " + name + ": " + d.method + " of " + d.from + " seed " + std::to_string(job.seed));
      const DerivedModel m = o.deriveArm(e, *job.arm, job.seed, source, dir, threads, own);
      writeFileAtomically(dir / "derived.json", Json{{"method", d.method},
                                                     {"from", d.from},
                                                     {"model", m.model.string()},
                                                     {"parameters", m.parameters},
                                                     {"parameters_saved", m.parametersSaved}}
                                                        .dump(2) +
                                                    "\n");
      return evaluate(m.model, dir, own);
    }
    {
      std::lock_guard guard(mutex);
      trainedHere.insert({job.arm->name, job.seed});
    }
    RunRequest r;
    r.topology = job.arm->topology;
    r.config = experimentTrainConfig(e, *job.arm, job.seed);
    r.config.threads = threads;
    r.runDir = dir;
    r.role = job.arm->matchedBaselineOf.empty() ? "model" : "baseline";
    r.resume = isRunDirectory(dir);
    r.startIfNothingToResume = true;
    say("   " + name + ": " + (r.resume ? "resuming" : "training") + " " + std::to_string(r.config.steps) +
        " steps");
    const int64_t every = std::max<int64_t>(1, r.config.steps / 10);
    auto progress = [&](const StepMetrics& m) {
      if (m.step % every != 0) return;
      char line[160];
      std::snprintf(line, sizeof line, "   %s: step %lld / %lld, loss %.4f, %.0f tokens/s", name.c_str(),
                    static_cast<long long>(m.step), static_cast<long long>(r.config.steps), m.loss,
                    m.tokensPerSecond);
      say(line);
    };
    std::string message;
    const RunState state = runTraining(r, own, progress, &message);
    if (state == RunState::Stopped) return std::nullopt;
    if (state == RunState::Failed)  // runTraining's one Failed: non-finite steps (other errors are thrown)
      throw RunDiverged({.what = "a run of the experiment failed", .where = dir.string(), .found = message});
    if (state != RunState::Finished)
      throw Error(
          {.what = "a run of the experiment ended unfinished", .where = dir.string(), .found = message});
    return evaluate(dir, dir, own);
  };
  // A trained run that a derived arm's unfinished run of the same seed starts from needs its checkpoint,
  // which the archive does not hold: it is trained again rather than taken from the archive -- and then every
  // derived run of that seed is derived again from it, not taken from the archive, so that each derived run
  // descends from the source run the report pairs it with.
  auto restorable = [&](const Job& job) {
    if (job.arm->derive) {
      std::lock_guard guard(mutex);
      return !trainedHere.count({job.arm->derive->from, job.seed});
    }
    // A source that diverged has no checkpoint to derive from anyway: trained again, it would diverge again.
    if (fs::exists(experimentRunDirectory(*o.archive, job.arm->name, job.seed) / kFailedRunFile)) return true;
    for (const ExperimentArm& d : e.arms)
      if (d.derive && d.derive->from == job.arm->name &&
          !isFinishedExperimentRun(experimentRunDirectory(*o.archive, d.name, job.seed)))
        return false;
    return true;
  };
  auto worker = [&](std::deque<Job>& queue) {
    for (;;) {
      Job job;
      {
        std::lock_guard lock(mutex);
        if (queue.empty() || failure || ctx.stop.stop_requested()) return;
        job = queue.front();
        queue.pop_front();
      }
      const std::string name = job.arm->name + " seed " + std::to_string(job.seed);
      try {
        const fs::path runDir = experimentRunDirectory(outDir, job.arm->name, job.seed);
        std::optional<fs::path> archived;
        if (o.archive) archived = experimentRunDirectory(*o.archive, job.arm->name, job.seed);
        bool restored = false;
        if (archived && !isFinishedExperimentRun(runDir) && isFinishedExperimentRun(*archived) &&
            restorable(job)) {
          restoreExperimentRun(*archived, runDir);
          restored = true;
        }
        if (isFinishedExperimentRun(runDir)) {
          if (archived && !isFinishedExperimentRun(*archived)) archiveExperimentRun(runDir, *archived);
          say("[" + std::to_string(++done) + "/" + std::to_string(total) + "] " + name + ": already " +
              (fs::exists(runDir / "eval.json") ? "finished" : "failed") +
              (restored ? " (taken from the archive)" : ""));
          continue;
        }
        TaskContext own = ctx;
        own.threads = threads;
        std::optional<double> nll;
        try {
          nll = runOne(job, own);
        } catch (const RunDiverged& error) {
          if (!o.tolerateFailedRuns) throw;
          fs::create_directories(runDir);
          Json record = {{"message", error.what()}};
          if (dynamic_cast<const SourceDiverged*>(&error)) record[kSourceDivergedField] = true;
          writeFileAtomically(runDir / kFailedRunFile, record.dump(2) + "\n");
          if (archived) archiveExperimentRun(runDir, *archived);
          say("[" + std::to_string(++done) + "/" + std::to_string(total) + "] " + name + ": failed (" +
              error.what() + "), recorded and passed over");
          continue;
        }
        if (!nll) return;
        if (archived) archiveExperimentRun(runDir, *archived);
        char text[32];
        std::snprintf(text, sizeof text, "%.4f", *nll);
        say("[" + std::to_string(++done) + "/" + std::to_string(total) + "] " + name +
            ": finished, held-out NLL " + text);
      } catch (const Cancelled&) {
        return;
      } catch (...) {
        std::lock_guard lock(mutex);
        if (!failure) failure = std::current_exception();
        return;
      }
    }
  };
  for (std::deque<Job>* phase : {&trained, &derived}) {
    {
      std::vector<std::jthread> workers;
      for (int i = 0; i < parallel; ++i) workers.emplace_back([&] { worker(*phase); });
    }
    if (failure) std::rethrow_exception(failure);
    ctx.throwIfCancelled();
  }
}

}  // namespace sharelens
