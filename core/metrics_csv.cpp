#include "core/metrics_csv.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "core/atomic_file.hpp"
#include "core/statistics.hpp"

namespace sharelens {
namespace {

std::string quoted(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// Whole numbers (steps, tokens, bytes) exactly, as metrics.jsonl logs them; others to 9 significant digits.
std::string number(double v) {
  if (!std::isfinite(v)) return {};
  char buf[40];
  if (v == std::floor(v) && std::fabs(v) < 9e15)
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else
    std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace

std::string metricsCsv(const std::vector<NamedCurve>& curves) {
  std::string out =
      "run,step,tokens,elapsed_s,loss,val_loss,lr,grad_norm,tokens_per_s,postshare_penalty,tensor_peak_bytes,"
      "rss_peak_bytes\n";
  for (const NamedCurve& c : curves) {
    if (!c.points) continue;
    const std::string run = quoted(c.label);
    for (const MetricPoint& p : *c.points)
      out += run + "," + std::to_string(p.step) + "," + number(p.tokens) + "," + number(p.elapsed) + "," +
             number(p.loss) + "," + number(p.valLoss) + "," + number(p.lr) + "," + number(p.gradNorm) + "," +
             number(p.tokensPerSecond) + "," + number(p.penalty) + "," + number(p.tensorPeakBytes) + "," +
             number(p.processPeakBytes) + "\n";
  }
  return out;
}

void writeMetricsCsv(const std::vector<NamedCurve>& curves, const std::filesystem::path& path) {
  writeFileAtomically(path, metricsCsv(curves));
}

std::string seedGroupsCsv(const std::vector<CurveGroup>& groups) {
  std::string out =
      "group,seeds,step,tokens,loss_mean,loss_ci_low,loss_ci_high,val_loss_mean,val_loss_ci_low,"
      "val_loss_ci_high\n";
  auto interval = [](const std::vector<double>& values) {
    const MeanInterval m = meanInterval(values);
    return number(m.mean) + "," + (values.size() > 1 ? number(m.lo()) + "," + number(m.hi()) : ",");
  };
  for (const CurveGroup& g : groups) {
    // step -> each member's point there; members with no finite loss yet are not seeds of the curve.
    std::map<int64_t, std::vector<const MetricPoint*>> byStep;
    size_t members = 0;
    for (const NamedCurve& c : g.members) {
      if (!c.points || std::none_of(c.points->begin(), c.points->end(),
                                    [](const MetricPoint& p) { return std::isfinite(p.loss); }))
        continue;
      ++members;
      for (const MetricPoint& p : *c.points)
        if (std::isfinite(p.loss)) byStep[p.step].push_back(&p);
    }
    for (const auto& [step, points] : byStep) {
      if (points.size() < members) continue;  // a step some member has not logged (yet)
      std::vector<double> tokens, loss, val;
      for (const MetricPoint* p : points) {
        tokens.push_back(p->tokens), loss.push_back(p->loss);
        if (std::isfinite(p->valLoss)) val.push_back(p->valLoss);
      }
      out += quoted(g.label) + "," + std::to_string(members) + "," + std::to_string(step) + "," +
             number(meanInterval(tokens).mean) + "," + interval(loss) + "," +
             (val.size() == points.size() ? interval(val) : std::string(",,")) + "\n";
    }
  }
  return out;
}

void writeSeedGroupsCsv(const std::vector<CurveGroup>& groups, const std::filesystem::path& path) {
  writeFileAtomically(path, seedGroupsCsv(groups));
}

}  // namespace sharelens
