#include "core/tensor_summary.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>

#include "core/naming.hpp"

namespace sharelens {
namespace {

// Elements read at a time: 1 MiB of floats, read back at once from the cache (below the 4 MiB where
// convertToFloat switches to streaming stores that bypass it).
constexpr size_t kChunk = size_t{1} << 18;

// Calls `visit` on consecutive chunks of the tensor's values as floats.
void forEachChunk(const TensorRef& ref, const TaskContext& ctx, double progressFrom, double progressTo,
                  const std::function<void(std::span<const float>)>& visit) {
  std::vector<float> buffer(std::min<uint64_t>(kChunk, ref.info->numel));
  for (uint64_t first = 0; first < ref.info->numel; first += kChunk) {
    ctx.throwIfCancelled();
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, ref.info->numel - first));
    ref.file->readFloat(*ref.info, first, std::span<float>(buffer.data(), n));
    visit(std::span<const float>(buffer.data(), n));
    ctx.report(progressFrom + (progressTo - progressFrom) * static_cast<double>(first + n) /
                                  static_cast<double>(ref.info->numel));
  }
}

}  // namespace

TensorSummary summarizeTensor(const Checkpoint& checkpoint, std::string_view name, int bins,
                              size_t previewCount, const TaskContext& ctx) {
  const TensorRef& ref = checkpoint.at(name);
  TensorSummary s;
  s.name = std::string(name);
  s.dtype = ref.info->dtype;
  s.shape = ref.info->shape;
  s.numel = ref.info->numel;
  s.bytes = ref.info->byteSize();
  double sum = 0, lo = INFINITY, hi = -INFINITY;
  forEachChunk(ref, ctx, 0.0, 0.5, [&](std::span<const float> values) {
    if (s.preview.size() < previewCount)
      s.preview.insert(s.preview.end(), values.begin(),
                       values.begin() + static_cast<std::ptrdiff_t>(
                                            std::min(values.size(), previewCount - s.preview.size())));
    double chunkSum = 0;  // summed per chunk, then added: less rounding than one running sum
    for (float v : values) {
      if (std::isnan(v)) {
        ++s.nan;
      } else if (std::isinf(v)) {
        ++s.infinite;
      } else {
        ++s.finite;
        s.zeros += v == 0.0f;
        chunkSum += v;
        lo = std::min<double>(lo, v);
        hi = std::max<double>(hi, v);
      }
    }
    sum += chunkSum;
  });
  if (s.finite == 0) return s;
  s.min = lo;
  s.max = hi;
  s.mean = sum / static_cast<double>(s.finite);
  s.histogram.assign(static_cast<size_t>(std::max(1, bins)), 0);
  const double width = (hi - lo) / static_cast<double>(s.histogram.size());
  double squares = 0;
  forEachChunk(ref, ctx, 0.5, 1.0, [&](std::span<const float> values) {
    double chunkSquares = 0;
    for (float v : values) {
      if (!std::isfinite(v)) continue;
      const double d = v - s.mean;
      chunkSquares += d * d;
      const size_t bin = width > 0 ? static_cast<size_t>((v - lo) / width) : 0;
      ++s.histogram[std::min(bin, s.histogram.size() - 1)];  // the maximum falls in the last bin
    }
    squares += chunkSquares;
  });
  s.std = std::sqrt(squares / static_cast<double>(s.finite));
  return s;
}

std::string formatTensorSummary(const TensorSummary& s) {
  char line[256];
  std::string out = s.name + "\n";
  std::snprintf(line, sizeof line, "  %s %s, %llu elements, %s\n", std::string(dtypeName(s.dtype)).c_str(),
                shapeToString(s.shape).c_str(), static_cast<unsigned long long>(s.numel),
                humanBytes(static_cast<double>(s.bytes)).c_str());
  out += line;
  std::snprintf(line, sizeof line, "  min %.6g  max %.6g  mean %.6g  std %.6g\n", s.min, s.max, s.mean,
                s.std);
  out += line;
  std::snprintf(line, sizeof line, "  zeros %llu  NaN %llu  inf %llu\n",
                static_cast<unsigned long long>(s.zeros), static_cast<unsigned long long>(s.nan),
                static_cast<unsigned long long>(s.infinite));
  out += line;
  out += "  first values:";
  for (float v : s.preview) {
    std::snprintf(line, sizeof line, " %.5g", v);
    out += line;
  }
  out += "\n  histogram (" + std::to_string(s.histogram.size()) + " bins over [min, max]):";
  for (uint64_t c : s.histogram) out += " " + std::to_string(c);
  return out + "\n";
}

}  // namespace sharelens
