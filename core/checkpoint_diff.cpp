#include "core/checkpoint_diff.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace sharelens {
namespace {

std::string shapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

TensorDifference compare(std::string name, std::vector<int64_t> shape, const std::vector<float>& a,
                         const std::vector<float>& b) {
  double aa = 0, bb = 0, ab = 0, dd = 0, maxAbs = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double x = a[i], y = b[i], d = x - y;
    aa += x * x;
    bb += y * y;
    ab += x * y;
    dd += d * d;
    maxAbs = std::max(maxAbs, std::abs(d));
  }
  TensorDifference t{std::move(name), std::move(shape)};
  t.normA = std::sqrt(aa);
  t.normB = std::sqrt(bb);
  t.relative = aa > 0 ? std::sqrt(dd / aa) : (dd > 0 ? std::numeric_limits<double>::infinity() : 0.0);
  t.cosine = aa > 0 && bb > 0 ? ab / (t.normA * t.normB) : std::numeric_limits<double>::quiet_NaN();
  t.maxAbs = maxAbs;
  return t;
}

}  // namespace

CheckpointDifference diffCheckpoints(const Checkpoint& a, const Checkpoint& b, const TaskContext& task) {
  CheckpointDifference out;
  const std::vector<std::string>& names = a.tensorNames();
  for (size_t i = 0; i < names.size(); ++i) {
    task.throwIfCancelled();
    task.report(static_cast<double>(i) / static_cast<double>(names.size()), "comparing " + names[i]);
    const std::string& name = names[i];
    const TensorRef* other = b.find(name);
    if (!other) {
      out.onlyInA.push_back(name);
      continue;
    }
    const std::vector<int64_t>& shapeA = a.at(name).info->shape;
    const std::vector<int64_t>& shapeB = other->info->shape;
    if (shapeA != shapeB) {
      out.shapeMismatch.push_back(name + ": " + shapeText(shapeA) + " vs " + shapeText(shapeB));
      continue;
    }
    out.tensors.push_back(compare(name, shapeA, a.readFloat(name), b.readFloat(name)));
    a.releasePages(name);
    b.releasePages(name);
  }
  for (const std::string& name : b.tensorNames())
    if (!a.find(name)) out.onlyInB.push_back(name);
  // Non-finite weights make a NaN difference: sorted first, with the infinite ones.
  auto key = [](const TensorDifference& t) {
    return std::isnan(t.relative) ? std::numeric_limits<double>::infinity() : t.relative;
  };
  std::stable_sort(out.tensors.begin(), out.tensors.end(),
                   [&](const TensorDifference& x, const TensorDifference& y) { return key(x) > key(y); });
  return out;
}

}  // namespace sharelens
