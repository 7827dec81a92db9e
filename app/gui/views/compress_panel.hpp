// The MASA view's "Compress" tab (issue 10): compress the open pretrained model -- MASA with refined
// residuals, atoms only, or the SVD-LLM baseline -- at a ratio, or sweep the ratios, in background jobs; show
// what the plan chose (layer groups, atoms, the residual budget beta, every matrix's rank), score the written
// model beside the original, and draw the sweep's perplexity-against-ratio curve. When the open checkpoint is
// itself compressed, its record is shown instead of the controls.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "app/gui/derived_model_eval.hpp"
#include "app/plot/figure.hpp"
#include "app/plot/plot_widget.hpp"
#include "app/workflows/compress.hpp"

namespace sharelens::gui {

struct AppContext;
struct LoadedModel;

class CompressPanel {
 public:
  void draw(AppContext& ctx, const LoadedModel& model);
  std::vector<std::pair<std::string, plot::Figure>> figures() const;  // the sweep curve, once there is one

 private:
  void start(AppContext& ctx, const LoadedModel& model, bool sweep);
  // A composed checkpoint (a ShareLens model's shared blocks, LoRA, MASA; a compressed one) written as a
  // plain Hugging Face checkpoint into the exports folder, then opened: what `sharelens export-hf` does.
  void writePlain(AppContext& ctx, const LoadedModel& model);
  static void drawPlan(const CompressionPlan& plan);

  struct Outcome {  // what a job left: a compression or a sweep, or why it failed
    bool running = true, sweep = false;
    std::string error;
    CompressionReport compression;
    SweepReport sweepReport;
  };
  std::shared_ptr<Outcome> m_outcome;
  DerivedModelEval m_eval;
  int m_method = 0;  // an index into kCompressionMethods
  float m_ratio = 0.8f;
  int m_atoms = 0;   // 0: the default (half of what the ratio pays for)
  int m_tokens = 0;  // 0: defaultCalibrationTokens() of the model
  char m_groups[128] = "kl";
  char m_sweep[128] = "0.9,0.8,0.7,0.6";
  plot::PlotState m_curve;
};

}  // namespace sharelens::gui
