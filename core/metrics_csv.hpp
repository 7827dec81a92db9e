// Training curves as CSV, for pandas / R / a spreadsheet: one row per logged step of each run, in the
// units of metrics.jsonl (DESIGN.md section 3). A value a step did not log (validation between evaluations)
// is an empty field, never "nan".
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/run_dir.hpp"

namespace sharelens {

struct NamedCurve {
  std::string label;  // the run, by topology name or directory
  const std::vector<MetricPoint>* points = nullptr;
  uint64_t revision = 0;  // changes whenever *points does (MetricsReader::revision()): figures built from
                          // the curve are kept until it changes
};

// Header: run,step,tokens,elapsed_s,loss,val_loss,lr,grad_norm,tokens_per_s,postshare_penalty,
// tensor_peak_bytes,rss_peak_bytes (the memory columns as metrics.jsonl logs them, in bytes). Run labels are
// quoted as RFC 4180 asks when they hold a comma, a quote or a line break.
std::string metricsCsv(const std::vector<NamedCurve>& curves);

// Written atomically (never a half-written file).
void writeMetricsCsv(const std::vector<NamedCurve>& curves, const std::filesystem::path& path);

// Runs of one recipe that differ in their seeds (core/run_groups.hpp), as the Training view's "group seeds"
// shows them: one row per step every member with a finite loss logged, with the mean over the members and
// its 95% Student-t interval (core/statistics.hpp) of the loss, and of the validation loss where every one
// of them has it at that step. Raw values: the view's smoothing is for the eye, not the data.
// Header: group,seeds,step,tokens,loss_mean,loss_ci_low,loss_ci_high,val_loss_mean,val_loss_ci_low,
// val_loss_ci_high. A group of one run has no interval (empty fields).
struct CurveGroup {
  std::string label;
  std::vector<NamedCurve> members;
};
std::string seedGroupsCsv(const std::vector<CurveGroup>& groups);
void writeSeedGroupsCsv(const std::vector<CurveGroup>& groups, const std::filesystem::path& path);

}  // namespace sharelens
