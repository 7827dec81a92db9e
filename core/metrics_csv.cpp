#include "core/metrics_csv.hpp"

#include <cmath>
#include <cstdio>

#include "core/atomic_file.hpp"

namespace sharelens {
namespace {

std::string quoted(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string number(double v) {
  if (!std::isfinite(v)) return {};
  char buf[32];
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

}  // namespace sharelens
