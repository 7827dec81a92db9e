#include "app/gui/workspace.hpp"

#include "analysis/backend.hpp"
#include "core/arch/family.hpp"
#include "core/error.hpp"
#include "core/inspect_report.hpp"
#include "core/run_dir.hpp"
#include "trainer/forward_probe.hpp"

namespace fs = std::filesystem;

namespace sharelens::gui {
namespace {

constexpr int64_t kAutomaticLimit = 300'000'000;  // parameters analysed without asking
constexpr size_t kKeptSteps = 24;

std::shared_ptr<LinalgBackend> sharedBackend(std::string* note) {
  static std::mutex mutex;
  static std::shared_ptr<LinalgBackend> backend;
  static std::string backendNote;
  std::lock_guard lock(mutex);
  if (!backend) backend = selectBackend(Device::Cuda, &backendNote);
  if (note) *note = backend->name();
  return backend;
}

}  // namespace

const LoadedModel* Workspace::current() const {
  auto it = m_models.find(m_selected);
  return it == m_models.end() ? nullptr : &it->second;
}

LoadedModel* Workspace::byKey(int64_t key) {
  auto it = m_models.find(key);
  return it == m_models.end() ? nullptr : &it->second;
}

std::vector<int64_t> Workspace::steps() const {
  std::vector<int64_t> out;
  for (const auto& [step, m] : m_models)
    if (step >= 0) out.push_back(step);
  return out;
}

void Workspace::selectStep(int64_t step) {
  if (m_models.count(step)) m_selected = step;
}

bool Workspace::busy() const { return !m_jobs.idle(); }

bool Workspace::large() const {
  const LoadedModel* m = current();
  return m && m->report && m->report->contains("parameters") && (*m->report)["parameters"]["total"].get<int64_t>() > kAutomaticLimit;
}

void Workspace::open(const fs::path& path, double threshold, bool analyse) {
  if (isRunDirectory(path)) {
    follow(path, threshold);
    return;
  }
  m_follow.reset();
  m_models.clear();
  load(path, -1, threshold, analyse);
}

void Workspace::follow(const fs::path& runDir, double threshold) {
  m_models.clear();
  m_follow = runDir;
  m_lastFollowedStep = -1;
  m_selected = -1;
  m_followThrottle.reset();
  poll(threshold);
}

void Workspace::poll(double threshold) {
  if (!m_follow || !m_followThrottle.due()) return;
  const auto latest = latestCheckpoint(*m_follow);
  if (!latest || latest->step <= m_lastFollowedStep) return;
  m_lastFollowedStep = latest->step;
  load(latest->dir, latest->step, threshold, true);
}

void Workspace::load(const fs::path& path, int64_t step, double threshold, bool analyse) {
  const std::string label = step >= 0 ? path.parent_path().parent_path().filename().string() + " @ step " + std::to_string(step)
                                      : path.filename().string();
  m_jobs.submit("open " + label, [this, path, step, label, threshold, analyse](const TaskContext& ctx) -> JobSystem::Completion {
    ctx.report(0.1, "reading the header");
    auto checkpoint = std::shared_ptr<const Checkpoint>(Checkpoint::open(path));
    auto report = std::make_shared<const Json>(inspectCheckpoint(*checkpoint));
    std::shared_ptr<const ModelView> view;
    if (!(*report)["family"].is_null()) view = std::make_shared<const ModelView>(openModelView(*checkpoint));
    return [this, path, step, label, threshold, analyse, checkpoint, report, view] {
      const bool followLatest = m_selected == -1 || m_selected == m_lastFollowedStep || !m_models.count(m_selected) ||
                                (m_follow && step >= 0 && m_selected < step && m_models.size() <= 1);
      LoadedModel& m = m_models[step];
      m = LoadedModel{path, label, step, checkpoint, view, report, {}, threshold};
      if (followLatest || step < 0) m_selected = step;
      while (m_models.size() > kKeptSteps) {  // keep the newest steps and the selected one
        auto oldest = m_models.begin();
        if (oldest->first == m_selected) ++oldest;
        m_models.erase(oldest);
      }
      if (analyse && view && !large()) this->analyse(step, threshold);
    };
  });
}

void Workspace::analyseAll(double threshold) {
  if (const LoadedModel* m = current()) analyse(m->step, threshold);
}

void Workspace::analyse(int64_t key, double threshold) {
  LoadedModel* model = byKey(key);
  if (!model || !model->view) return;
  model->threshold = threshold;
  std::string backendName;
  auto backend = sharedBackend(&backendName);
  model->results.backend = backendName;
  const auto ckpt = model->checkpoint;
  const auto view = model->view;
  // Each analysis is its own job; its completion stores the result if the model is still loaded.
  auto submit = [&](const std::string& name, auto compute, auto store) {
    m_jobs.submit(name + " (" + model->label + ")", [this, key, ckpt, compute, store](const TaskContext& ctx) -> JobSystem::Completion {
      auto result = compute(ctx);
      return [this, key, ckpt, result, store] {
        if (LoadedModel* m = byKey(key); m && m->checkpoint == ckpt) store(m->results, result);
      };
    });
  };
  submit("spectra", [=](const TaskContext& ctx) {
           return std::make_shared<const std::vector<MatrixSpectrum>>(computeSpectra(*ckpt, *view, *backend, {threshold}, ctx));
         },
         [](AnalysisSet& r, auto v) { r.spectra = v; });
  if (view->hasHeads())
    submit("head differences", [=](const TaskContext& ctx) {
             return std::make_shared<const HeadDiffResult>(computeHeadDifferences(*ckpt, *view, *backend, {.threshold = threshold}, ctx));
           },
           [](AnalysisSet& r, auto v) { r.heads = v; });
  submit("layer differences", [=](const TaskContext& ctx) {
           return std::make_shared<const LayerDiffResult>(computeLayerDifferences(*ckpt, *view, *backend, threshold, kAllProjs, ctx));
         },
         [](AnalysisSet& r, auto v) { r.layers = v; });
  submit("matrix PCA", [=](const TaskContext& ctx) {
           return std::make_shared<const std::vector<MatrixPcaGroup>>(computeMatrixPca(*ckpt, *view, {}, ctx));
         },
         [](AnalysisSet& r, auto v) { r.masa = v; });
  if (view->family == Family::ShareLens)
    submit("trained MASA atoms", [=](const TaskContext&) {
             auto out = std::make_shared<std::vector<TrainedMasa>>();
             for (const TrainedDictionary& d : trainedDictionaries(*ckpt))
               out->push_back({d.proj, d.group, atomCorrelation(d.atoms), d.coefficients});
             return std::shared_ptr<const std::vector<TrainedMasa>>(out);
           },
           [](AnalysisSet& r, auto v) { r.trainedMasa = v; });
  if (view->hasHeads() && view->layers.size() > 1)
    submit("DirectShare", [=](const TaskContext& ctx) { return std::make_shared<const DirectShareResult>(computeDirectShare(*ckpt, *view, 0.25, ctx)); },
           [](AnalysisSet& r, auto v) { r.share = v; });
  if (view->embedding)
    submit("embedding study", [=](const TaskContext& ctx) {
             return std::make_shared<const EmbeddingStudy>(computeEmbeddingStudy(*ckpt, *view, *backend, threshold, ctx));
           },
           [](AnalysisSet& r, auto v) { r.embedding = v; });
}

void Workspace::runDirectShare(double ratio) {
  const LoadedModel* m = current();
  if (!m || !m->view) return;
  const int64_t key = m->step;
  const auto ckpt = m->checkpoint;
  const auto view = m->view;
  m_jobs.submit("DirectShare ratio " + std::to_string(ratio).substr(0, 4), [=, this](const TaskContext& ctx) -> JobSystem::Completion {
    auto result = std::make_shared<const DirectShareResult>(computeDirectShare(*ckpt, *view, ratio, ctx));
    return [this, key, ckpt, result] {
      if (LoadedModel* model = byKey(key); model && model->checkpoint == ckpt) model->results.share = result;
    };
  });
}

void Workspace::runMatrixPca(const std::vector<std::vector<int64_t>>& groups) {
  const LoadedModel* m = current();
  if (!m || !m->view) return;
  const int64_t key = m->step;
  const auto ckpt = m->checkpoint;
  const auto view = m->view;
  m_jobs.submit("matrix PCA over " + std::to_string(groups.size()) + " groups", [=, this](const TaskContext& ctx) -> JobSystem::Completion {
    MatrixPcaOptions options;
    options.groups = groups;
    auto result = std::make_shared<const std::vector<MatrixPcaGroup>>(computeMatrixPca(*ckpt, *view, options, ctx));
    return [this, key, ckpt, result] {
      if (LoadedModel* model = byKey(key); model && model->checkpoint == ckpt) model->results.masa = result;
    };
  });
}

void Workspace::runActivations(int64_t tokens, const std::string& corpus, double threshold) {
  const LoadedModel* m = current();
  if (!m || !m->view) return;
  const int64_t key = m->step;
  const auto ckpt = m->checkpoint;
  const fs::path path = m->path;
  m_jobs.submit("activations over " + std::to_string(tokens) + " tokens", [=, this](const TaskContext& ctx) -> JobSystem::Completion {
    ProbeOptions options;
    options.tokens = tokens;
    options.corpus = corpus;
    options.logitLensTokens = std::min<int64_t>(tokens, 2048);
    const ProbeResult probe = probeCheckpoint(path, options, ctx);
    auto result = std::make_shared<ActivationResults>();
    result->map = pairwiseDifferenceMap(probe.residualDeltas, *sharedBackend(nullptr), threshold, ctx);
    result->tokens = probe.tokens;
    result->klDrift = probe.klDrift;
    result->groups = groupsFromKlDrift(probe.klDrift, probe.layers);
    result->attention = probe.attentionSimilarity;
    result->labels = probe.headLabels;
    result->tokenizer = probe.tokenizer;
    std::shared_ptr<const ActivationResults> shared = result;
    return [this, key, ckpt, shared] {
      if (LoadedModel* model = byKey(key); model && model->checkpoint == ckpt) model->results.activations = shared;
    };
  });
}

}  // namespace sharelens::gui
