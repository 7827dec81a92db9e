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

}  // namespace sharelens
