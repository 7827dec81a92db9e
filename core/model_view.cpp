#include "core/model_view.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/error.hpp"
#include "core/naming.hpp"

namespace sharelens {
namespace {

constexpr std::string_view kProjNames[kProjCount] = {"q", "k", "v", "o", "gate", "up", "down"};
constexpr std::string_view kNormSlotNames[kNormSlotCount] = {"attn_in", "attn_out", "ffn_in",
                                                             "ffn_out", "q_norm",   "k_norm"};
constexpr std::string_view kRoleNames[kTensorRoleCount] = {
    "embedding", "position", "attention", "ffn", "norm", "output_head", "lora", "masa", "other"};

// Stored 2-D geometry of a slice's source matrix.
struct StoredMatrix {
  const TensorRef* ref;
  int64_t rows, cols;  // stored (not canonical) dims of the selected 2-D matrix
  uint64_t base;       // element offset of that matrix inside the tensor
};

StoredMatrix locate(const Checkpoint& ckpt, const TensorSlice& s) {
  const TensorRef& ref = ckpt.at(s.tensor);
  const TensorInfo& t = *ref.info;
  const std::string where = ckpt.path().string() + ": tensor '" + s.tensor + "'";
  const size_t wantRank = s.batch >= 0 ? 3 : 2;
  if (t.rank() != wantRank)
    throw Error({.what = "tensor has the wrong rank for a weight matrix",
                 .where = where,
                 .expected = std::to_string(wantRank) + "-D",
                 .found = shapeToString(t.shape),
                 .hint = "the checkpoint does not follow its family's layout"});
  StoredMatrix m{&ref, 0, 0, 0};
  if (s.batch >= 0) {
    if (s.batch >= t.dim(0))
      throw Error({.what = "matrix index out of range",
                   .where = where,
                   .expected = "< " + std::to_string(t.dim(0)),
                   .found = std::to_string(s.batch)});
    m.rows = t.dim(1);
    m.cols = t.dim(2);
    m.base = static_cast<uint64_t>(s.batch) * static_cast<uint64_t>(m.rows * m.cols);
  } else {
    m.rows = t.dim(0);
    m.cols = t.dim(1);
  }
  const int64_t canonicalRows = s.transposed ? m.cols : m.rows;
  const int64_t canonicalCols = s.transposed ? m.rows : m.cols;
  if (s.row0 < 0 || s.col0 < 0 || s.rows < 0 || s.cols < 0 || s.row0 + s.rows > canonicalRows ||
      s.col0 + s.cols > canonicalCols)
    throw Error({.what = "tensor shape does not fit the model's configuration",
                 .where = where,
                 .expected = "at least " + std::to_string(s.row0 + s.rows) + " x " +
                             std::to_string(s.col0 + s.cols) + (s.transposed ? " (stored transposed)" : ""),
                 .found = shapeToString(t.shape),
                 .hint = "config.json and the tensors disagree; check hidden size, heads and head_dim"});
  return m;
}

// Reads a slice into out (rows x cols, already sized).
void readSlice(const Checkpoint& ckpt, const TensorSlice& s, FloatMatrix& out) {
  const StoredMatrix m = locate(ckpt, s);
  const SafetensorsFile& file = *m.ref->file;
  const TensorInfo& info = *m.ref->info;
  if (!s.transposed) {
    for (int64_t r = 0; r < s.rows; ++r)
      file.readFloat(info, m.base + static_cast<uint64_t>((s.row0 + r) * m.cols + s.col0),
                     std::span<float>(out.row(r), static_cast<size_t>(s.cols)));
    return;
  }
  // canonical (r, c) = stored (c, r): read stored rows col0..col0+cols, each over [row0, row0+rows).
  std::vector<float> storedRow(static_cast<size_t>(s.rows));
  for (int64_t c = 0; c < s.cols; ++c) {
    file.readFloat(info, m.base + static_cast<uint64_t>((s.col0 + c) * m.cols + s.row0), storedRow);
    for (int64_t r = 0; r < s.rows; ++r) out(r, c) = storedRow[static_cast<size_t>(r)];
  }
}

float readScalar(const Checkpoint& ckpt, const ScalarRef& s) {
  const TensorRef& ref = ckpt.at(s.tensor);
  if (s.index < 0 || static_cast<uint64_t>(s.index) >= ref.info->numel)
    throw Error({.what = "coefficient index out of range",
                 .where = ckpt.path().string() + ": tensor '" + s.tensor + "'",
                 .expected = "< " + std::to_string(ref.info->numel),
                 .found = std::to_string(s.index)});
  float v = 0;
  ref.file->readFloat(*ref.info, static_cast<uint64_t>(s.index), std::span<float>(&v, 1));
  return v;
}

std::string describeSlice(const TensorSlice& s) {
  std::string out = s.tensor;
  if (s.batch >= 0) out += "[" + std::to_string(s.batch) + "]";
  if (s.transposed) out += "^T";
  out += "[" + std::to_string(s.row0) + ":" + std::to_string(s.row0 + s.rows) + ", " +
         std::to_string(s.col0) + ":" + std::to_string(s.col0 + s.cols) + "]";
  return out;
}

}  // namespace

std::string_view projName(Proj p) {
  return kProjNames[static_cast<int>(p)];
}
std::optional<Proj> parseProj(std::string_view name) {
  for (int i = 0; i < kProjCount; ++i)
    if (kProjNames[i] == name) return static_cast<Proj>(i);
  return std::nullopt;
}
bool isAttentionProj(Proj p) {
  return p == Proj::Q || p == Proj::K || p == Proj::V || p == Proj::O;
}
std::string_view roleName(TensorRole r) {
  return kRoleNames[static_cast<int>(r)];
}
std::string_view normSlotName(NormSlot slot) {
  return kNormSlotNames[static_cast<int>(slot)];
}

std::vector<float> materialize(const Checkpoint& ckpt, const VectorSlice& slice) {
  const TensorRef& ref = ckpt.at(slice.tensor);
  if (slice.offset < 0 || slice.length < 0 ||
      static_cast<uint64_t>(slice.offset + slice.length) > ref.info->numel)
    throw Error({.what = "vector slice outside tensor",
                 .where = ckpt.path().string() + ": tensor '" + slice.tensor + "'",
                 .expected = std::to_string(slice.offset + slice.length) + " elements",
                 .found = shapeToString(ref.info->shape)});
  std::vector<float> out(static_cast<size_t>(slice.length));
  ref.file->readFloat(*ref.info, static_cast<uint64_t>(slice.offset), out);
  return out;
}

MatrixExpr MatrixExpr::fromTensor(std::string tensor, int64_t rows, int64_t cols, bool transposed) {
  MatrixExpr e;
  e.rows = rows;
  e.cols = cols;
  MatrixTerm term;
  term.left = TensorSlice{std::move(tensor), transposed, -1, 0, rows, 0, cols};
  e.terms.push_back(std::move(term));
  return e;
}

MatrixExpr MatrixExpr::sliceRows(int64_t row0, int64_t count) const {
  if (row0 < 0 || count < 0 || row0 + count > rows)
    throw std::out_of_range("MatrixExpr::sliceRows outside the matrix");
  MatrixExpr e;
  e.rows = count;
  e.cols = cols;
  for (MatrixTerm t : terms) {  // keep the part of each term inside [row0, row0 + count)
    const int64_t begin = std::max(t.atRow, row0), end = std::min(t.atRow + t.rows(), row0 + count);
    if (begin >= end) continue;
    t.left.row0 += begin - t.atRow;
    t.left.rows = end - begin;
    t.atRow = begin - row0;
    e.terms.push_back(std::move(t));
  }
  return e;
}

MatrixExpr MatrixExpr::sliceCols(int64_t col0, int64_t count) const {
  if (col0 < 0 || count < 0 || col0 + count > cols)
    throw std::out_of_range("MatrixExpr::sliceCols outside the matrix");
  MatrixExpr e;
  e.rows = rows;
  e.cols = count;
  for (MatrixTerm t : terms) {
    const int64_t begin = std::max(t.atCol, col0), end = std::min(t.atCol + t.cols(), col0 + count);
    if (begin >= end) continue;
    TensorSlice& s = t.right ? *t.right : t.left;
    s.col0 += begin - t.atCol;
    s.cols = end - begin;
    t.atCol = begin - col0;
    e.terms.push_back(std::move(t));
  }
  return e;
}

std::vector<std::string> MatrixExpr::tensorNames() const {
  std::vector<std::string> out;
  for (const MatrixTerm& t : terms) {
    out.push_back(t.left.tensor);
    if (t.right) out.push_back(t.right->tensor);
    if (t.coefficient) out.push_back(t.coefficient->tensor);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool MatrixExpr::isPlainTensor() const {
  return terms.size() == 1 && terms[0].scale == 1.0f && !terms[0].coefficient && !terms[0].right &&
         !terms[0].left.transposed && terms[0].left.batch < 0 && terms[0].left.row0 == 0 &&
         terms[0].left.col0 == 0 && terms[0].atRow == 0 && terms[0].atCol == 0 && terms[0].rows() == rows &&
         terms[0].cols() == cols;
}

std::string MatrixExpr::describe() const {
  std::string out;
  for (const MatrixTerm& t : terms) {
    if (!out.empty()) out += " + ";
    if (t.scale != 1.0f) out += std::to_string(t.scale) + "*";
    if (t.coefficient) out += t.coefficient->tensor + "[" + std::to_string(t.coefficient->index) + "]*";
    out += describeSlice(t.left);
    if (t.right) out += " @ " + describeSlice(*t.right);
    if (t.atRow || t.atCol) out += " at (" + std::to_string(t.atRow) + ", " + std::to_string(t.atCol) + ")";
  }
  return out;
}

FloatMatrix materializeFinite(const Checkpoint& ckpt, const MatrixExpr& expr) {
  FloatMatrix m = materialize(ckpt, expr);
  const auto bad = std::find_if(m.data.begin(), m.data.end(), [](float v) { return !std::isfinite(v); });
  if (bad != m.data.end()) {
    const int64_t at = bad - m.data.begin();
    // The file that holds the offending tensor (a shard of a sharded checkpoint), not just the directory.
    std::string file = ckpt.path().string();
    for (const MatrixTerm& term : expr.terms)
      if (const TensorRef* ref = ckpt.find(term.left.tensor)) file = ref->file->path().string();
    throw Error({.what = "weight holds a non-finite value",
                 .where = file + ": " + expr.describe(),
                 .expected = "finite values",
                 .found = std::string(std::isnan(*bad) ? "NaN" : "Inf") + " at [" +
                          std::to_string(at / m.cols) + ", " + std::to_string(at % m.cols) + "]",
                 .hint = "the checkpoint is corrupt or its training diverged; analyses and forward passes "
                         "need finite weights"});
  }
  return m;
}

FloatMatrix materialize(const Checkpoint& ckpt, const MatrixExpr& expr) {
  FloatMatrix result(expr.rows, expr.cols);
  for (const MatrixTerm& term : expr.terms)
    if (term.atRow < 0 || term.atCol < 0 || term.atRow + term.rows() > expr.rows ||
        term.atCol + term.cols() > expr.cols)
      throw Error({.what = "matrix term outside its matrix",
                   .where = ckpt.path().string() + ": " + expr.describe(),
                   .hint = "the checkpoint's topology does not match its tensors"});
  // One unscaled slice covering the whole matrix (every plain checkpoint): read it straight into place.
  if (expr.terms.size() == 1) {
    const MatrixTerm& t = expr.terms[0];
    if (!t.right && !t.coefficient && t.scale == 1.0f && t.atRow == 0 && t.atCol == 0 &&
        t.rows() == expr.rows && t.cols() == expr.cols) {
      readSlice(ckpt, t.left, result);
      return result;
    }
  }
  for (const MatrixTerm& term : expr.terms) {
    float factor = term.scale;
    if (term.coefficient) factor *= readScalar(ckpt, *term.coefficient);
    FloatMatrix left(term.left.rows, term.left.cols);
    readSlice(ckpt, term.left, left);
    if (!term.right) {
      for (int64_t i = 0; i < left.rows; ++i) {
        float* out = result.row(term.atRow + i) + term.atCol;
        for (int64_t j = 0; j < left.cols; ++j) out[j] += factor * left(i, j);
      }
      continue;
    }
    FloatMatrix right(term.right->rows, term.right->cols);
    readSlice(ckpt, *term.right, right);
    // result += factor * left (rows x k) * right (k x cols); i-k-j order keeps the inner loop contiguous.
    for (int64_t i = 0; i < left.rows; ++i) {
      float* out = result.row(term.atRow + i) + term.atCol;
      for (int64_t k = 0; k < left.cols; ++k) {
        const float a = factor * left(i, k);
        const float* b = right.row(k);
        for (int64_t j = 0; j < right.cols; ++j) out[j] += a * b[j];
      }
    }
  }
  return result;
}

const MatrixExpr& LayerView::at(Proj p) const {
  const auto& m = proj[static_cast<int>(p)];
  if (!m)
    throw Error({.what = "layer has no '" + std::string(projName(p)) + "' projection",
                 .where = "layer " + std::to_string(index),
                 .hint = "this architecture or checkpoint does not have it; pick another projection"});
  return *m;
}

std::vector<std::string_view> LayerView::rolesFound() const {
  std::vector<std::string_view> out;
  for (Proj p : kAllProjs)
    if (has(p)) out.push_back(projName(p));
  return out;
}

int64_t ModelView::headCount(Proj p) const {
  switch (p) {
    case Proj::Q:
    case Proj::O:
      return shape.heads;
    case Proj::K:
    case Proj::V:
      return shape.kvHeads;
    default:
      return 0;
  }
}

MatrixExpr ModelView::headMatrix(int64_t layer, Proj p, int64_t head) const {
  if (!hasHeads())
    throw Error({.what = "per-head view needs the head count and head_dim",
                 .where = source,
                 .found = "unknown (no config.json?)",
                 .hint = "put the model's config.json next to the weights"});
  if (layer < 0 || layer >= static_cast<int64_t>(layers.size()))
    throw Error({.what = "layer out of range",
                 .where = source,
                 .expected = "0.." + std::to_string(layers.size() - 1),
                 .found = std::to_string(layer)});
  const int64_t count = headCount(p);
  if (count == 0 || head < 0 || head >= count)
    throw Error({.what = "head out of range for projection '" + std::string(projName(p)) + "'",
                 .where = source + ": layer " + std::to_string(layer),
                 .expected = count ? "0.." + std::to_string(count - 1) : "an attention projection",
                 .found = std::to_string(head)});
  const MatrixExpr& m = layers[static_cast<size_t>(layer)].at(p);
  const int64_t hd = shape.headDim;
  return p == Proj::O ? m.sliceCols(head * hd, hd) : m.sliceRows(head * hd, hd);
}

RoleCounts countParameters(const Checkpoint& ckpt, const ModelView& view) {
  RoleCounts counts;
  const std::set<std::string_view> ignored(view.ignored.begin(), view.ignored.end());
  for (const std::string& name : ckpt.tensorNames()) {
    auto it = view.roles.find(name);
    if (it == view.roles.end() && ignored.count(name)) continue;
    const TensorRole role = it == view.roles.end() ? TensorRole::Other : it->second;
    const auto numel = static_cast<int64_t>(ckpt.at(name).info->numel);
    counts.params[static_cast<int>(role)] += numel;
    counts.total += numel;
  }
  return counts;
}

}  // namespace sharelens
