// TrainingRun (training_run.hpp): one run from preparation (corpus, tokenizer, tokens, model, resume)
// through the training loop, its checkpoints and metrics. RunController and runTraining (run_controller.cpp)
// drive it.
#include "trainer/training_run.hpp"

#include <torch/cuda.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <new>

#include "core/atomic_file.hpp"
#include "core/build_info.hpp"
#include "core/error.hpp"
#include "core/fault_injection.hpp"
#include "core/machine.hpp"
#include "core/param_count.hpp"
#include "trainer/checkpoint_io.hpp"
#include "trainer/hf_tokenizer.hpp"
#include "trainer/step_shards.hpp"
#include "trainer/tokenizer.hpp"
#include "trainer/torch_compat.hpp"

namespace fs = std::filesystem;

namespace sharelens {
namespace {

std::string isoTimeNow() {
  const std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return buf;
}

// The rows of a global batch of B rows that rank r of N takes: contiguous, as even as the division allows.
int64_t rowStart(int64_t batch, int rank, int world) {
  return batch * rank / world;
}
int64_t rowsOf(int64_t batch, int rank, int world) {
  return rowStart(batch, rank + 1, world) - rowStart(batch, rank, world);
}

Json budgetJson(const Topology& t) {
  const ParamBudget b = countParameters(t);
  Json groups = Json::object();
  for (int g = 0; g < kParamGroupCount; ++g)
    groups[std::string(paramGroupName(static_cast<ParamGroup>(g)))] = b.groups[g];
  return {{"total", b.total},
          {"non_embedding", b.nonEmbedding},
          {"groups", groups},
          {"rho", b.rho},
          {"train_flops_per_token", b.trainFlopsPerToken}};
}

}  // namespace

namespace {

// A model's folder (config.json or safetensors files, no run.json) is not a run directory: a run written
// into it would hide the model from everything that opens the folder (its checkpoint is found first).
void refuseCheckpointAsRunDirectory(const fs::path& dir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const fs::path name = entry.path().filename();
    if (name == "config.json" || name.extension() == ".safetensors")
      throw Error({.what = "the output directory holds a model, not a run",
                   .where = dir.string(),
                   .found = entry.path().string(),
                   .hint = "choose another --out; to train from that model, pass it to --init"});
  }
}

}  // namespace

// Rank 0 (the writer) takes the run directory before reading anything in it: created if absent, then locked,
// so a second writer (a --resume beside a live run or beside the ranks of a killed launcher) is refused.
void TrainingRun::takeRunDirectory() {
  const RunRequest& r = m_request;
  if (r.distributed.rank != 0) return;
  std::error_code ec;
  m_createdRunDir = !fs::exists(r.runDir, ec);
  fs::create_directories(r.runDir);
  m_lock = std::make_unique<DirectoryLock>(r.runDir, "training run");
}

void TrainingRun::prepare() {
  const ChargeTensorMemoryTo charge(m_memory);
  try {
    takeRunDirectory();
    prepareRun();
  } catch (...) {
    std::error_code ec;
    if (m_createdRunDir && !fs::exists(m_request.runDir / "run.json", ec)) {
      m_lock.reset();
      fs::remove_all(m_request.runDir, ec);  // nothing but what this call wrote
    }
    throw;
  }
}

namespace {

// A run resumed by a binary of another source revision than the one that started it lists that revision in
// run.json's versions.resumed_by (once), so that a result names all the code that trained it. True when the
// record changed.
bool recordResumingSource(Json& record) {
  const std::string current(sourceRevision());
  Json& versions = record["versions"];
  if (!versions.is_object()) versions = Json::object();
  if (const auto source = versions.find("source"); source != versions.end() && *source == current)
    return false;
  Json& resumedBy = versions["resumed_by"];
  if (!resumedBy.is_array()) resumedBy = Json::array();
  for (const Json& revision : resumedBy)
    if (revision == current) return false;
  resumedBy.push_back(current);
  return true;
}

}  // namespace

void TrainingRun::prepareRun() {
  RunRequest& r = m_request;
  const fs::path runJson = r.runDir / "run.json";
  Json record;
  bool writeRecord = false;  // run.json, new or longer: written at the end, after every check passed
  if (r.resume && !fs::exists(runJson)) {
    // Killed before run.json was written: nothing was trained. Start it, if we know what to start.
    if (!r.startIfNothingToResume)
      throw Error(
          {.what = "nothing to resume: the run stopped before it wrote run.json, so no step was trained",
           .where = r.runDir.string(),
           .expected = "a run directory with run.json",
           .hint = "start it again with `sharelens train --topology FILE --out " + r.runDir.string() +
                   "` (the directory is reused), or add --topology FILE to this --resume"});
    r.resume = false;
  }
  if (r.resume) {
    record = readJsonFile(runJson);
    const int threadsOverride = r.config.threads;
    r.topology = topologyFromJson(record.at("topology"), runJson.string() + ": topology");
    r.config = trainConfigFromJson(record.at("config"), runJson.string() + ": config");
    if (r.resumeToSteps && *r.resumeToSteps < r.config.steps)
      throw Error({.what = "a resumed run can be made longer, not shorter",
                   .where = "--steps",
                   .expected = ">= " + std::to_string(r.config.steps) + " (" + runJson.string() + ")",
                   .found = std::to_string(*r.resumeToSteps),
                   .hint = "its learning-rate schedule runs to its planned end; stop it where you want "
                           "instead, or leave --steps out"});
    if (r.resumeToSteps && *r.resumeToSteps > r.config.steps) {  // extended: readers see the new length
      r.config.steps = *r.resumeToSteps;
      record["config"]["steps"] = r.config.steps;
      writeRecord = true;  // once everything else is checked
    }
    if (threadsOverride > 0) r.config.threads = threadsOverride;
    if (recordResumingSource(record)) writeRecord = true;
  } else {
    if (fs::exists(runJson) && r.distributed.rank == 0)
      throw Error({.what = "the directory already holds a run",
                   .where = r.runDir.string(),
                   .hint = "pass --resume to continue it, or choose another --out"});
    refuseCheckpointAsRunDirectory(r.runDir);
    validateTopology(r.topology, "topology");
  }
  if (r.config.device == "cuda") {
    if (!torch::cuda::is_available())
      throw Error({.what = "CUDA training requested but unavailable",
                   .where = "--device cuda",
                   .found = "LibTorch " + torchVersion() +
                            (torch::cuda::device_count() ? "" : " without a usable GPU"),
                   .hint = "build against a CUDA LibTorch (-DTorch_DIR=...) on a machine with a GPU, or use "
                           "--device cpu"});
    // One GPU per local rank (torchrun's convention); a single process takes the first.
    m_device = torch::Device(
        torch::kCUDA, static_cast<c10::DeviceIndex>(r.distributed.localRank % torch::cuda::device_count()));
  }

  if (r.distributed.enabled()) {
    m_channel.setState(RunState::Preparing, "joining the distributed run");
    m_group = std::make_unique<DistributedGroup>(r.distributed, m_device);
    if (r.config.batchSize < r.distributed.worldSize)
      throw Error({.what = "the global batch has fewer rows than there are ranks",
                   .where = "--batch",
                   .expected = ">= " + std::to_string(r.distributed.worldSize) + " rows",
                   .found = std::to_string(r.config.batchSize),
                   .hint = "every rank trains on its own rows of each global batch"});
  }
  validateTrainConfig(r.config, "training options");
  if (r.config.device == "cpu")
    requireFitsInMemory(estimateTrainingMemory(r.topology, r.config.batchSize).total(),
                        "training '" + r.topology.name + "' at batch " + std::to_string(r.config.batchSize),
                        "shrink the model or the batch (`sharelens params` shows where the memory goes)");
  if (writer()) fs::create_directories(r.runDir);
  const TrainConfig& c = r.config;
  const int threads = c.threads > 0 ? c.threads : m_ctx.threadCount();
  m_computeThreads.emplace(threads);  // held until the run object goes
  m_threads = threads;

  m_channel.setState(RunState::Preparing, "loading corpus '" + c.corpus + "'");
  const Corpus corpus = loadCorpus(c.corpus);
  const CorpusSplit split = splitByDocument(corpus, c.validationFraction);
  if (r.resume && record.contains("corpus") &&
      record["corpus"].value("fingerprint", "") != corpus.fingerprint)
    throw Error({.what = "the corpus changed since the run started",
                 .where = c.corpus,
                 .expected = "fingerprint " + record["corpus"].value("fingerprint", ""),
                 .found = corpus.fingerprint,
                 .hint = "resume with the same corpus, or start a new run"});
  // The run's tokenizer, kept in the run directory: the checkpoint's own when the run starts from one
  // (--init), else a SentencePiece BPE trained on the corpus's training documents (cached by corpus and
  // vocab). Other ranks use the same file where they find it (the checkpoint's, or their own cache: training
  // the tokenizer is deterministic), without writing into the run directory; the fingerprints are compared
  // below.
  fs::path tokenizerFile =
      fs::exists(r.runDir / "tokenizer.json") ? r.runDir / "tokenizer.json" : r.runDir / "tokenizer.model";
  if (!r.resume || !fs::exists(tokenizerFile)) {
    if (r.initFrom) {
      const fs::path source = tokenizerFileForCheckpoint(*r.initFrom);
      tokenizerFile = writer()
                          ? r.runDir / (source.extension() == ".json" ? "tokenizer.json" : "tokenizer.model")
                          : source;
      if (writer()) writeFileAtomically(tokenizerFile, readTextFile(source));
    } else {
      m_channel.setState(RunState::Preparing, "training the tokenizer");
      const fs::path cached = trainedTokenizer(split.train, corpus.fingerprint, c.validationFraction,
                                               static_cast<int>(r.topology.model.vocab), m_ctx);
      tokenizerFile = writer() ? r.runDir / "tokenizer.model" : cached;
      if (writer()) writeFileAtomically(tokenizerFile, readTextFile(cached));
    }
  }
  const auto tokenizer = loadTokenizerFile(tokenizerFile);
  if (r.resume && record.contains("tokenizer") &&
      record["tokenizer"].value("fingerprint", "") != tokenizer->fingerprint())
    throw Error({.what = "the run's tokenizer changed since the run started",
                 .where = tokenizerFile.string(),
                 .expected = "fingerprint " + record["tokenizer"].value("fingerprint", "") + " (run.json)",
                 .found = tokenizer->fingerprint(),
                 .hint = "its token ids would no longer mean what the weights learned: put the run's own "
                         "tokenizer back, or start a new run"});
  // A trained tokenizer has exactly the topology's vocabulary; a checkpoint's may be smaller than its
  // (padded) embedding table, never larger.
  const bool initRun = r.initFrom || (record.contains("init") && !record["init"].is_null());
  const bool exact = !initRun;
  if (exact ? tokenizer->vocabSize() != r.topology.model.vocab
            : tokenizer->vocabSize() > r.topology.model.vocab)
    throw Error({.what = "tokenizer and topology disagree on the vocabulary",
                 .where = tokenizerFile.string(),
                 .expected = (exact ? "" : "at most ") + std::to_string(r.topology.model.vocab) + " tokens",
                 .found = std::to_string(tokenizer->vocabSize()),
                 .hint = exact ? "the corpus cannot support this vocab size; lower model.vocab"
                               : "the tokenizer beside the checkpoint belongs to another model"});
  m_channel.setState(RunState::Preparing, "tokenising");
  m_data = tokenizeSplit(split, corpus.fingerprint, *tokenizer, m_ctx);

  m_channel.setState(RunState::Preparing, "building the model");
  m_model = std::make_unique<SharedTransformer>(r.topology, m_device, c.initSeed ? c.initSeed : c.seed);
  if (r.initFrom && !r.resume) {
    m_channel.setState(RunState::Preparing, "loading the weights of " + r.initFrom->string());
    loadInitialWeights(*m_model, *r.initFrom);
  }
  m_optimizer = std::make_unique<AdamW>(m_model->parameters(), c.beta1, c.beta2, c.eps, c.weightDecay);

  if (writer()) removeIncompleteCheckpoints(r.runDir);  // a killed write's temporary directory, on any start
  if (r.resume) {
    const auto latest = latestCheckpoint(r.runDir);
    // Steps logged after the checkpoint are trained again: drop their old records so none appears twice.
    if (writer()) trimMetricsFile(r.runDir / "metrics.jsonl", latest ? latest->step : 0);
    if (latest) {
      const Json state = readTrainingCheckpoint(*latest, *m_model, *m_optimizer);
      m_step = latest->step;
      m_tokens = state.value("tokens", 0.0);
      m_elapsedAtResume = state.value("elapsed", 0.0);
      m_skipped = state.value("skipped_steps", int64_t{0});
      m_consecutiveNonFinite = state.value("consecutive_nonfinite", int64_t{0});
    }
    log({{"event", "resume"}, {"step", m_step}});
  } else {
    record = {
        {"schema", kRunSchema},
        {"role", r.role},
        {"sibling", r.sibling},
        {"created", isoTimeNow()},
        {"topology", topologyToJson(r.topology)},
        {"config", trainConfigToJson(c)},
        {"seed", c.seed},
        {"parameters", budgetJson(r.topology)},
        {"memory_estimate",  // what `params` predicts for this batch (core/param_count.hpp)
         [&] {
           const MemoryEstimate m = estimateTrainingMemory(r.topology, c.batchSize);
           return Json{{"parameter_bytes", m.parameterBytes},
                       {"activation_bytes", m.activationBytes},
                       {"total_bytes", m.total()}};
         }()},
        {"corpus",
         {{"spec", c.corpus},
          {"fingerprint", corpus.fingerprint},
          {"documents", corpus.documents.size()},
          {"train_documents", m_data.trainDocuments},
          {"validation_documents", m_data.validationDocuments},
          {"train_tokens", m_data.train.size()},
          {"validation_tokens", m_data.validation.size()}}},
        {"tokenizer",
         {{"file", tokenizerFile.filename().string()},
          {"fingerprint", tokenizer->fingerprint()},
          {"vocab", tokenizer->vocabSize()}}},
        {"init", r.initFrom ? Json(fs::absolute(*r.initFrom).string()) : Json(nullptr)},
        {"distributed",
         {{"world_size", r.distributed.worldSize}, {"backend", m_group ? m_group->backendName() : "none"}}},
        {"versions",
         {{"sharelens", std::string(sharelensVersion())},
          {"source", std::string(sourceRevision())},
          {"torch", torchVersion()},
          {"device", c.device}}}};
    writeRecord = true;
  }
  if (m_group) joinDistributed(corpus.fingerprint, tokenizer->fingerprint());
  // Last, so that a start refused above leaves the directory as it was (a longer --steps included).
  if (writeRecord && writer()) writeFileAtomically(runJson, record.dump(2) + "\n");
}

// Every rank holds the same run before the first step: the same topology, corpus, tokenizer, options and
// start step (a named error otherwise), and rank 0's weights, optimizer state and counters.
void TrainingRun::joinDistributed(const std::string& corpusFingerprint,
                                  const std::string& tokenizerFingerprint) {
  const TrainConfig& c = m_request.config;
  m_group->agree("topology", topologyToJson(m_request.topology).dump());
  m_group->agree("corpus", corpusFingerprint);
  m_group->agree("tokenizer", tokenizerFingerprint);
  // Every option but the threads (each rank's own share of its machine) and the corpus's path (which may
  // differ between machines; its fingerprint is agreed above): one that differs, such as eval_every, would
  // put the ranks' collectives out of step.
  Json options = trainConfigToJson(c);
  options.erase("threads");
  options.erase("corpus");
  m_group->agree("training options", options.dump());
  m_group->agree("start step", std::to_string(m_step));
  m_group->atStep(m_step);
  torch::NoGradGuard noGrad;
  m_group->broadcastFromZero(m_model->parameters(), *m_optimizer);
  m_tokens = m_group->broadcastFromZero(m_tokens);
  m_elapsedAtResume = m_group->broadcastFromZero(m_elapsedAtResume);
  m_group->attach(m_model->parameters());
}

torch::Tensor TrainingRun::toDevice(const TokenBatch& b) const {
  return at::from_blob(const_cast<int32_t*>(b.tokens.data()), {b.batch, b.length + 1}, at::kInt)
      .to(m_device, at::kLong);
}

double TrainingRun::validationLoss() {
  if (fault::validationOutOfMemoryAt(m_step)) throw std::bad_alloc();
  torch::NoGradGuard noGrad;
  ScopedCudaAutocast autocast(m_device.is_cuda());
  double total = 0;
  const TrainConfig& c = m_request.config;
  const int rank = m_group ? m_group->rank() : 0, world = m_group ? m_group->worldSize() : 1;
  for (int64_t i = rank; i < c.evalBatches; i += world)  // distributed: the batches are shared out
    total += m_model
                 ->loss(toDevice(validationBatch(m_data, i, c.evalBatches, c.batchSize,
                                                 m_request.topology.model.context)))
                 .item<double>();
  if (m_group) total = m_group->sum(total);
  return total / static_cast<double>(c.evalBatches);
}

void TrainingRun::saveCheckpoint(int64_t step, double elapsedSeconds) {
  const Json state = {{"step", step},
                      {"optimizer_steps", m_optimizer->steps()},
                      {"tokens", m_tokens},
                      {"elapsed", elapsedSeconds},
                      {"skipped_steps", m_skipped},
                      {"consecutive_nonfinite", m_consecutiveNonFinite},
                      {"loss", std::isfinite(m_lastLoss) ? Json(m_lastLoss) : Json(nullptr)},
                      {"val_loss", std::isfinite(m_lastValLoss) ? Json(m_lastValLoss) : Json(nullptr)}};
  if (!writer()) return;
  m_saving = true;
  writeTrainingCheckpoint(m_request.runDir, step, *m_model, *m_optimizer, state,
                          m_request.config.keepCheckpoints, m_request.config.checkpointEvery);
  m_lastSaved = step;
  log({{"event", "checkpoint"}, {"step", step}});
  m_saving = false;
}

RunState TrainingRun::loop(const std::function<void(const StepMetrics&)>& onStep) {
  const ChargeTensorMemoryTo charge(m_memory);
  m_loopClock.restart();
  m_stoppedLogged = secondsStoppedFromOutside();
  m_lastSaved = m_step;
  try {
    return trainSteps(onStep);
  } catch (const std::exception& e) {
    saveAfterFailure(e.what());
    throw;
  }
}

// Training time: this process's since its loop started, less the time it was paused or stopped from outside
// (SIGSTOP, Ctrl-Z; core/outside_stops.hpp), plus what earlier processes trained.
double TrainingRun::elapsedSeconds() const {
  return m_elapsedAtResume + m_loopClock.seconds() - m_pausedSeconds;
}

// Logs the stops from outside since the last such line ("suspended": not training time).
void TrainingRun::logStopsFromOutside() {
  const double stopped = secondsStoppedFromOutside();
  if (stopped <= m_stoppedLogged) return;
  log({{"event", "suspended"}, {"step", m_step}, {"seconds", stopped - m_stoppedLogged}});
  m_stoppedLogged = stopped;
}

// An error ended the loop -- out of memory or a dead peer in a step's forward, backward, all-reduce or
// validation: keep the steps completed since the newest checkpoint. The weights, moments and counters are
// step m_step's unless the error came while a step was changing them or while the ranks compared them
// (StepState::Unsure); then the newest checkpoint stands, as it does when the error was a save's own, or
// came in writing the step's metrics line (no checkpoint is saved without its step's line). Best effort:
// the error that ended the run is the one reported.
void TrainingRun::saveAfterFailure(const char* what) noexcept {
  if (m_stepState == StepState::Unsure || m_stepState == StepState::Writing || m_saving ||
      m_step <= m_lastSaved || !writer())
    return;
  try {
    if (m_stepState == StepState::Unlogged) recordStep(m_stepMetrics);  // no checkpoint without its line
    saveCheckpoint(m_step, elapsedSeconds());
    log({{"event", "stop"}, {"step", m_step}, {"reason", std::string("error: ") + what}});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sharelens: could not save step %lld after the error below: %s\n",
                 static_cast<long long>(m_step), e.what());
  }
}

RunState TrainingRun::trainSteps(const std::function<void(const StepMetrics&)>& onStep) {
  const TrainConfig& c = m_request.config;
  const int64_t context = m_request.topology.model.context;
  m_channel.setState(RunState::Running, "training");
  while (m_step < c.steps) {
    {  // commands between steps
      std::unique_lock lock(m_channel.mutex);
      if (m_channel.paused) {
        m_channel.state = RunState::Paused;
        const RunningStopwatch paused;  // a stop from outside meanwhile is not counted twice
        m_channel.wake.wait(lock, [&] {
          const bool go = !m_channel.paused || m_ctx.stop.stop_requested();
          if (!go) fault::delayBeforePauseWait();
          return go;
        });
        m_pausedSeconds += paused.seconds();
        m_channel.state = RunState::Running;
      }
      if (m_channel.checkpointRequested && m_step > m_lastSaved) {
        m_channel.checkpointRequested = false;
        lock.unlock();
        saveCheckpoint(m_step, elapsedSeconds());
      }
    }
    bool stop = m_ctx.stop.stop_requested();
    if (m_group) {  // a stop requested on any rank stops every rank at the same step
      m_group->atStep(m_step);
      stop = m_group->sum(stop ? 1.0 : 0.0) > 0;
    }
    logStopsFromOutside();
    if (stop) break;
    const int64_t step = m_step + 1;
    const RunningStopwatch stepClock;
    const double lr = c.learningRate(step);
    StepMetrics& metrics = m_stepMetrics = StepMetrics{};
    metrics.step = step;
    metrics.lr = lr;
    std::string nonFinite;
    this->step(step, lr, metrics, nonFinite);
    m_step = step;
    m_tokens += static_cast<double>(c.batchSize * context);
    m_stepState = StepState::Unlogged;
    m_ctx.report(static_cast<double>(step) / static_cast<double>(c.steps),
                 "training: step " + std::to_string(step) + " of " + std::to_string(c.steps));
    const double seconds = stepClock.seconds();
    metrics.tokens = m_tokens;
    metrics.tokensPerSecond = static_cast<double>(c.batchSize * context) / std::max(seconds, 1e-9);
    if (m_memory) metrics.tensorPeakBytes = static_cast<double>(m_memory->peakBytes());
    metrics.processPeakBytes = static_cast<double>(processPeakResidentBytes());
    if (m_group) {  // each rank's own rows per second; the step's throughput is the slowest rank's
      metrics.worldSize = m_group->worldSize();
      const double rows = static_cast<double>(rowsOf(c.batchSize, m_group->rank(), metrics.worldSize));
      metrics.rankTokensPerSecond =
          m_group->allGather(rows * static_cast<double>(context) / std::max(seconds, 1e-9));
    }
    if (step % c.evalEvery == 0 || step == c.steps) {
      m_lastValLoss = NAN;  // a checkpoint saved after validation failed holds no earlier step's loss
      metrics.valLoss = m_lastValLoss = validationLoss();
    }
    if (m_group && m_request.distributed.checkWeightsEvery > 0 &&
        step % m_request.distributed.checkWeightsEvery == 0) {
      m_stepState = StepState::Unsure;  // copies that disagree are no one step's weights
      m_group->checkWeightsAgree(m_model->parameters(), step);
      m_stepState = StepState::Unlogged;
    }
    recordStep(metrics);
    if (onStep) onStep(metrics);
    if (m_consecutiveNonFinite >=
        c.maxConsecutiveNonFinite) {  // the same on every rank: the decision is global
      const std::string why = std::to_string(m_consecutiveNonFinite) +
                              " non-finite steps in a row (last: " + nonFinite + " at step " +
                              std::to_string(step) + "); the weights hold the last finite update";
      saveCheckpoint(m_step, elapsedSeconds());
      log({{"event", "stop"}, {"step", step}, {"reason", why}});
      m_channel.setState(RunState::Failed, why);
      return RunState::Failed;
    }
    if (step % c.checkpointEvery == 0 || step == c.steps) {
      saveCheckpoint(step, elapsedSeconds());
    }
  }
  logStopsFromOutside();
  if (m_step < c.steps) {  // stopped: keep every completed step
    if (m_step > m_lastSaved) saveCheckpoint(m_step, elapsedSeconds());
    log({{"event", "stop"}, {"step", m_step}, {"reason", "stopped by request"}});
    m_channel.setState(RunState::Stopped, "stopped at step " + std::to_string(m_step));
    return RunState::Stopped;
  }
  log({{"event", "finish"}, {"step", m_step}});
  m_channel.setState(RunState::Finished, "finished " + std::to_string(m_step) + " steps");
  return RunState::Finished;
}

// Logs the step's metrics line and publishes it to the run's owner: from here an error keeps this step.
void TrainingRun::recordStep(StepMetrics& metrics) {
  metrics.elapsed = elapsedSeconds();
  const MetricPoint point{metrics.step,
                          metrics.tokens,
                          metrics.skipped ? NAN : metrics.loss,
                          metrics.valLoss,
                          metrics.lr,
                          metrics.skipped ? NAN : metrics.gradNorm,
                          metrics.tokensPerSecond,
                          metrics.elapsed,
                          metrics.penalty,
                          metrics.worldSize,
                          metrics.rankTokensPerSecond,
                          metrics.tensorPeakBytes,
                          metrics.processPeakBytes};
  m_stepState = StepState::Writing;
  log(metricToJson(point));
  m_stepState = StepState::Logged;
  std::lock_guard lock(m_channel.mutex);
  m_channel.metrics.push_back(metrics);
}

// One optimisation step: this rank's rows of the global batch, forward and backward (its gradients
// all-reduced as backward produces them, weighted by its share of the rows), then the update -- unless the
// global objective or the gradient norm is not finite, which every rank sees alike.
RunState TrainingRun::step(int64_t step, double lr, StepMetrics& metrics, std::string& nonFinite) {
  const TrainConfig& c = m_request.config;
  const int64_t context = m_request.topology.model.context;
  const int rank = m_group ? m_group->rank() : 0, world = m_group ? m_group->worldSize() : 1;
  const int64_t begin = rowStart(c.batchSize, rank, world), end = begin + rowsOf(c.batchSize, rank, world);
  const double share = static_cast<double>(end - begin) / static_cast<double>(c.batchSize);
  const torch::Tensor tokens =
      toDevice(trainingBatch(m_data, c.seed, step + c.dataOffset, c.batchSize, context, begin, end));
  if (fault::outOfMemoryAt(step)) throw std::bad_alloc();
  const bool withPenalty = m_request.topology.postShare.gamma > 0;
  // A CPU run of several threads splits the rows into as many parts, each part's forward and backward at
  // once (trainer/step_shards.hpp); otherwise one forward here and its backward below. The parts run on the
  // threads its lease has now: one where other computations share the BLAS budget (core/blas_threads.hpp),
  // so that runs side by side start no more threads than there are cores; the parts, and so the numbers,
  // stay the same.
  const bool split = stepIsSplitOverThreads(m_device, m_threads, end - begin, m_group != nullptr);
  torch::Tensor loss, objective;  // the cross-entropy, and what is minimised: + gamma L_w under PostShare
  double total = 0.0;
  if (split) {
    const SplitStepLosses losses =
        lossAndGradientsSplitOverThreads(*m_model, m_model->parameters(), tokens, m_threads,
                                         std::min(m_threads, currentBlasThreads()), withPenalty, m_memory);
    metrics.loss = losses.loss;
    if (withPenalty) metrics.penalty = losses.penalty;
    total = losses.loss + losses.penalty;
    if (fault::nonFiniteLossAt(step)) total = NAN;
  } else {
    {
      ScopedCudaAutocast autocast(m_device.is_cuda());
      loss = m_model->loss(tokens);
      objective = loss;
      if (withPenalty) {
        const torch::Tensor penalty = m_model->postSharePenalty();
        metrics.penalty = penalty.item<double>();
        objective = loss + penalty;
      }
    }
    if (fault::nonFiniteLossAt(step)) objective = objective * NAN;
    metrics.loss = loss.item<double>();
    total = objective.item<double>();
  }
  if (m_group) {  // the global batch's mean: the rows' shares of every rank's mean
    metrics.loss = m_group->sum(share * metrics.loss);
    total = m_group->sum(share * total);
  }
  if (!std::isfinite(total)) {
    nonFinite = "loss " + std::to_string(total);
  } else {
    if (!split) {
      if (m_group) m_group->begin(share);
      objective.backward();
      if (m_group) m_group->finish();
    }
    metrics.gradNorm = clipGradientNorm(m_model->parameters(), c.gradClip);
    if (!std::isfinite(metrics.gradNorm)) nonFinite = "gradient norm " + std::to_string(metrics.gradNorm);
  }
  m_stepState = StepState::Unsure;  // until the update or the skip is counted (trainSteps)
  if (nonFinite.empty()) {
    m_optimizer->step(lr);
    m_consecutiveNonFinite = 0;
    m_lastLoss = metrics.loss;
  } else {  // never let it reach the weights
    metrics.skipped = true;
    ++m_skipped;
    ++m_consecutiveNonFinite;
    log({{"event", "skip"}, {"step", step}, {"reason", nonFinite}});
  }
  m_optimizer->zeroGrad();
  return RunState::Running;
}

}  // namespace sharelens
