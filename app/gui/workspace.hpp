// The GUI's data model, free of ImGui: the open checkpoint with its canonical view and inspect report, the
// analyses computed for it (immutable, shared with the views), and -- when following a training run -- the
// same for each of the run's checkpoints, so a step slider can scrub through training.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/difference_maps.hpp"
#include "analysis/directshare.hpp"
#include "analysis/embedding_study.hpp"
#include "analysis/matrix_pca.hpp"
#include "analysis/spectra.hpp"
#include "app/gui/jobs.hpp"
#include "app/gui/poll_throttle.hpp"
#include "core/json_util.hpp"

namespace sharelens::gui {

struct ActivationResults {
  RankMap map;
  int64_t tokens = 0;
  std::vector<double> klDrift;
  std::vector<std::vector<int64_t>> groups;
  FloatMatrix attention;
  std::vector<std::string> labels;
  std::string tokenizer;
};

struct TrainedMasa {  // the learned dictionary of a ShareLens MASA checkpoint
  Proj proj;
  int64_t group;
  FloatMatrix correlation;   // S x S
  FloatMatrix coefficients;  // S x |group|
};

struct AnalysisSet {
  std::shared_ptr<const std::vector<MatrixSpectrum>> spectra;
  std::shared_ptr<const HeadDiffResult> heads;
  std::shared_ptr<const LayerDiffResult> layers;
  std::shared_ptr<const std::vector<MatrixPcaGroup>> masa;
  std::shared_ptr<const std::vector<TrainedMasa>> trainedMasa;
  std::shared_ptr<const DirectShareResult> share;
  std::shared_ptr<const EmbeddingStudy> embedding;
  std::shared_ptr<const ActivationResults> activations;
  std::string backend;
};

struct LoadedModel {
  std::filesystem::path path;  // the checkpoint directory or file
  std::string label;
  int64_t step = -1;           // a run's checkpoint step
  std::shared_ptr<const Checkpoint> checkpoint;
  std::shared_ptr<const ModelView> view;
  std::shared_ptr<const Json> report;  // inspectCheckpoint()
  AnalysisSet results;
  double threshold = 0.95;
};

class Workspace {
 public:
  Workspace(JobSystem& jobs, std::function<void(const std::string&)> reportError) : m_jobs(jobs), m_error(std::move(reportError)) {}

  // A checkpoint or a run directory (its latest checkpoint, and following it).
  void open(const std::filesystem::path& path, double threshold, bool analyse = true);
  void follow(const std::filesystem::path& runDir, double threshold);  // reopen on each new checkpoint
  void poll(double threshold);                                        // UI thread: new checkpoints of a followed run

  const LoadedModel* current() const;
  std::vector<int64_t> steps() const;  // steps of a followed run that have been loaded
  void selectStep(int64_t step);
  int64_t selectedStep() const { return m_selected; }
  const std::optional<std::filesystem::path>& followed() const { return m_follow; }

  void analyseAll(double threshold);
  void runActivations(int64_t tokens, const std::string& corpus, double threshold);
  void runDirectShare(double ratio);
  void runMatrixPca(const std::vector<std::vector<int64_t>>& groups);
  bool busy() const;
  bool large() const;  // too big to analyse automatically (views offer a button instead)

 private:
  void load(const std::filesystem::path& path, int64_t step, double threshold, bool analyse);
  void analyse(int64_t key, double threshold);
  LoadedModel* byKey(int64_t key);

  JobSystem& m_jobs;
  std::function<void(const std::string&)> m_error;
  std::map<int64_t, LoadedModel> m_models;  // key: step (or -1 for a plain checkpoint)
  int64_t m_selected = -1;
  std::optional<std::filesystem::path> m_follow;
  int64_t m_lastFollowedStep = -1;
  PollThrottle m_followThrottle;  // listing the followed run's checkpoints, at most 4 times a second
};

}  // namespace sharelens::gui
