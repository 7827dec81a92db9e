// Compressing a pretrained model's attention without training (issue 10; DESIGN.md section 4, "MASA on
// pretrained models"): calibrate (trainer/calibration.hpp), group the layers (explicitly or by the logit-lens
// KL drift), plan the parameter budget (analysis/masa_compress.hpp), then for every projection and group take
// Matrix PCA atoms and refine each layer's residual with a whitened low-rank term -- or, for the SVD
// baseline, replace every matrix by its whitened truncated SVD -- and write a compressed checkpoint
// (core/compressed_checkpoint.hpp) that every part of ShareLens opens. A sweep does this for several ratios
// and methods on one calibration and scores each model on the same held-out tokens.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "analysis/masa_compress.hpp"
#include "analysis/matrix_pca.hpp"
#include "core/compressed_checkpoint.hpp"
#include "core/json_util.hpp"
#include "trainer/calibration.hpp"
#include "trainer/evaluate.hpp"

namespace sharelens {

struct CompressOptions {
  CompressionSpec spec;                 // method, ratio, projections, explicit groups, atoms
  int64_t klGroups = kKlDefaultGroups;  // MASA without explicit groups: G groups from the calibration's drift
  CalibrationOptions calibration;
  std::filesystem::path out;  // the compressed checkpoint's directory (new or empty), written whole
  // Called with the staged directory (a complete checkpoint already) just before it is renamed to `out`:
  // what the caller adds there (an evaluation in the report) is part of the output, so a kill or an error
  // in it leaves no `out` at all, and the same command can simply be run again.
  std::function<void(const std::filesystem::path& staged, struct CompressionReport& report)> beforeCommit;
};

struct CompressionReport {
  CompressionPlan plan;
  CompressionRecord record;  // what the checkpoint's metadata holds
  std::filesystem::path out;
  int64_t storedParameters = 0;  // counted from the written file's compressed tensors
  std::vector<double> klDrift;
  double calibrationSeconds = 0, compressionSeconds = 0;
  int64_t peakResidentBytes = 0;
  Json eval;  // {"original", "compressed"} when the caller evaluated the model (beforeCommit), else null
  Json toJson() const;  // what OUT/compress.json holds
};

// Everything that can be refused (method, ratio, groups, atoms, a checkpoint whose attention is not stored
// per layer or is already compressed, an output directory that is not empty) is checked before anything is
// written.
CompressionReport compressCheckpoint(const std::filesystem::path& checkpoint, const CompressOptions& options,
                                     const TaskContext& ctx);
// The same on a calibration already made (a sweep calibrates once for every point).
CompressionReport compressCheckpoint(const std::filesystem::path& checkpoint, const CompressOptions& options,
                                     const CalibrationResult& calibration, const TaskContext& ctx);

struct SweepPoint {
  std::string method;
  double ratio = 0;          // target
  double achievedRatio = 0;  // stored / original parameters of the compressed projections
  int64_t parameters = 0;
  std::filesystem::path dir;
  EvalResult eval;
};

struct SweepReport {
  std::string source;
  std::vector<std::vector<int64_t>> groups;
  EvalResult original;
  std::vector<SweepPoint> points;
  int resumedPoints = 0;  // points an earlier, interrupted run of the same sweep had finished
  Json toJson() const;
  std::string toMarkdown() const;  // the table: perplexity against ratio per method
};

// A sweep as its OUT/sweep.json holds it (`path`: that file or OUT), for drawing it again without rerunning
// (`sharelens export --view compression-sweep`). A file of another schema or missing a field is a named
// Error.
SweepReport readSweepReport(const std::filesystem::path& path);

// OUT/<method>-<ratio>/ for every ratio and method (the CLI's default: all of kCompressionMethods), then
// OUT/sweep.json and OUT/sweep.md; every model (and the original) is evaluated with `eval` on the same
// held-out tokens (each point's evaluation in its eval.json). OUT is written whole: `beforeCommit` (figures)
// writes into the staged directory before it is renamed into place. The staging directory (.OUT.partial)
// outlives a kill or an error, and the same sweep run again continues from the points it finished
// (resumed_points in sweep.json); a sweep with other settings is refused there, naming the directory.
SweepReport sweepCompression(
    const std::filesystem::path& checkpoint, const CompressOptions& base, const std::vector<double>& ratios,
    const std::vector<std::string>& methods, const EvalOptions& eval, const TaskContext& ctx,
    const std::function<void(const std::filesystem::path& staged, const SweepReport&)>& beforeCommit = {});

// "brown:2048" or "nlp" (2048 tokens) or "DIR:4096" -> corpus and tokens.
void parseCalibrationSpec(const std::string& spec, CalibrationOptions& options);

}  // namespace sharelens
