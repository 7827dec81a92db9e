// libFuzzer target: metrics.jsonl as a live reader sees it -- the file read in two polls (a writer appending
// between them), then trimmed as a resume trims it, then read again. Torn and malformed lines must be
// skipped or counted, never thrown.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/error.hpp"
#include "core/run_dir.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace sl = sharelens;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto file = sl::fuzz::scratch("metrics") / "metrics.jsonl";
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  sl::fuzz::writeFile(file, all.substr(0, size / 2));
  sl::MetricsReader reader(file);
  reader.poll();
  sl::fuzz::writeFile(file, all);
  reader.poll();
  for (const sl::MetricPoint& p : reader.points())
    if (p.step < 0) __builtin_trap();  // the reader's contract: no negative steps reach a plot
  try {
    sl::trimMetricsFile(file, size % 64);
  } catch (const sl::Error&) {
  }
  sl::MetricsReader again(file);
  again.poll();
  return 0;
}
