#include "analysis/directshare.hpp"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/json_util.hpp"

namespace fs = std::filesystem;

namespace sharelens {
namespace {

constexpr size_t kCandidatesPerHead = 8;  // fallbacks when a head's best source is itself replaced

// Loaded float copies of the tensors being edited; slices written in canonical coordinates.
class TensorEditor {
 public:
  explicit TensorEditor(const Checkpoint& ckpt) : m_ckpt(ckpt) {}

  void write(const MatrixExpr& where, const FloatMatrix& values) {
    if (where.terms.size() != 1 || where.terms[0].right || where.terms[0].coefficient || where.terms[0].scale != 1.0f)
      throw Error({.what = "cannot write into a composite matrix", .where = where.describe(),
                   .hint = "DirectShare export needs plain (unshared) checkpoints"});
    const TensorSlice& s = where.terms[0].left;
    const TensorInfo& info = *m_ckpt.at(s.tensor).info;
    auto [it, inserted] = m_edited.try_emplace(s.tensor);
    if (inserted) it->second = m_ckpt.readFloat(s.tensor);
    std::vector<float>& data = it->second;
    const int64_t storedCols = info.dim(info.rank() - 1);
    for (int64_t r = 0; r < s.rows; ++r)
      for (int64_t c = 0; c < s.cols; ++c) {
        const int64_t sr = s.transposed ? s.col0 + c : s.row0 + r;
        const int64_t sc = s.transposed ? s.row0 + r : s.col0 + c;
        data[static_cast<size_t>(sr * storedCols + sc)] = values(r, c);
      }
  }

  void save(const fs::path& path, const std::map<std::string, std::string>& metadata) const {
    std::vector<EncodedTensor> encoded;
    std::vector<TensorWrite> writes;
    encoded.reserve(m_edited.size());
    for (const std::string& name : m_ckpt.tensorNames()) {
      const TensorRef& ref = m_ckpt.at(name);
      if (auto it = m_edited.find(name); it != m_edited.end()) {
        encoded.push_back(EncodedTensor::fromFloats(name, ref.info->dtype, ref.info->shape, it->second));
        writes.push_back(encoded.back().view());
      } else {
        writes.push_back({name, ref.info->dtype, ref.info->shape, ref.file->bytes(*ref.info)});
      }
    }
    writeSafetensors(path, writes, metadata);
  }

 private:
  const Checkpoint& m_ckpt;
  std::map<std::string, std::vector<float>> m_edited;
};

}  // namespace

DirectShareResult computeDirectShare(const Checkpoint& ckpt, const ModelView& view, double ratio,
                                     const TaskContext& ctx) {
  if (!view.hasHeads())
    throw Error({.what = "DirectShare needs the head count and head_dim", .where = view.source,
                 .hint = "put the model's config.json next to the weights"});
  if (!(ratio >= 0.0 && ratio <= 1.0))
    throw Error({.what = "sharing ratio out of range", .where = "--directshare", .expected = "a fraction in [0, 1]",
                 .found = std::to_string(ratio)});
  DirectShareResult r;
  r.layers = static_cast<int64_t>(view.layers.size());
  r.heads = view.shape.heads;
  r.ratio = ratio;
  const int64_t hd = view.shape.headDim, d = view.shape.hidden, group = view.shape.heads / view.shape.kvHeads;
  const int64_t width = 2 * hd * d, count = r.layers * r.heads;

  // X: one normalised [W_q || W_k] row per head.
  std::vector<float> x(static_cast<size_t>(count * width));
  const Proj qk[] = {Proj::Q, Proj::K};
  for (int64_t l = 0; l < r.layers; ++l) {
    ctx.throwIfCancelled();
    const LayerWeights w = loadLayer(ckpt, view, l, ctx, qk);
    for (int64_t h = 0; h < r.heads; ++h) {
      float* row = x.data() + (l * r.heads + h) * width;
      std::copy(w.at(Proj::Q).row(h * hd), w.at(Proj::Q).row((h + 1) * hd), row);
      std::copy(w.at(Proj::K).row((h / group) * hd), w.at(Proj::K).row((h / group + 1) * hd), row + hd * d);
      double norm = 0;
      for (int64_t i = 0; i < width; ++i) norm += static_cast<double>(row[i]) * row[i];
      const float scale = norm > 0 ? static_cast<float>(1.0 / std::sqrt(norm)) : 0.0f;
      for (int64_t i = 0; i < width; ++i) row[i] *= scale;
    }
    ctx.report(0.8 * static_cast<double>(l + 1) / static_cast<double>(r.layers), "DirectShare: reading heads");
  }
  r.similarity.assign(static_cast<size_t>(count * count), 0.0f);
  cblas_ssyrk(CblasRowMajor, CblasUpper, CblasNoTrans, static_cast<int>(count), static_cast<int>(width), 1.0f,
              x.data(), static_cast<int>(width), 0.0f, r.similarity.data(), static_cast<int>(count));
  for (int64_t i = 0; i < count; ++i)
    for (int64_t j = 0; j < i; ++j) r.similarity[static_cast<size_t>(i * count + j)] = r.similarity[static_cast<size_t>(j * count + i)];

  // Candidates: each head of layer >= 1 with its best few earlier heads.
  std::vector<HeadMatch> candidates;
  for (int64_t l = 1; l < r.layers; ++l)
    for (int64_t h = 0; h < r.heads; ++h) {
      std::vector<HeadMatch> mine;
      for (int64_t sl = 0; sl < l; ++sl)
        for (int64_t sh = 0; sh < r.heads; ++sh) mine.push_back({{l, h}, {sl, sh}, r.similarityOf({l, h}, {sl, sh})});
      std::sort(mine.begin(), mine.end(), [](const HeadMatch& a, const HeadMatch& b) { return a.similarity > b.similarity; });
      r.bestMatches.push_back(mine.front());
      mine.resize(std::min(mine.size(), kCandidatesPerHead));
      candidates.insert(candidates.end(), mine.begin(), mine.end());
    }
  auto bySimilarity = [](const HeadMatch& a, const HeadMatch& b) { return a.similarity > b.similarity; };
  std::sort(r.bestMatches.begin(), r.bestMatches.end(), bySimilarity);
  std::stable_sort(candidates.begin(), candidates.end(), bySimilarity);

  const int64_t wanted = static_cast<int64_t>(std::llround(ratio * static_cast<double>(count)));
  std::set<std::pair<int64_t, int64_t>> targets, sources;
  for (const HeadMatch& m : candidates) {
    if (static_cast<int64_t>(r.chosen.size()) >= wanted) break;
    const auto t = std::pair{m.target.layer, m.target.head}, s = std::pair{m.source.layer, m.source.head};
    if (targets.count(t) || sources.count(t) || targets.count(s)) continue;  // no chains, one source per target
    r.chosen.push_back(m);
    targets.insert(t);
    sources.insert(s);
  }
  const bool mha = view.shape.kvHeads == view.shape.heads;
  r.sharedProjections = mha ? "q,k" : "q";
  r.parametersPerPair = hd * d * (mha ? 2 : 1);
  if (view.layers[0].bias[static_cast<int>(Proj::Q)]) r.parametersPerPair += hd * (mha ? 2 : 1);
  r.parametersSaved = r.parametersPerPair * static_cast<int64_t>(r.chosen.size());
  r.parametersTotal = countParameters(ckpt, view).total;
  ctx.report(1.0, "DirectShare: done");
  return r;
}

void writeDirectSharedCheckpoint(const Checkpoint& ckpt, const ModelView& view, const DirectShareResult& result,
                                 const fs::path& outDir) {
  fs::create_directories(outDir);
  TensorEditor editor(ckpt);
  const int64_t group = view.shape.heads / view.shape.kvHeads;
  const bool mha = group == 1;
  Json pairs = Json::array();
  for (const HeadMatch& m : result.chosen) {
    editor.write(view.headMatrix(m.target.layer, Proj::Q, m.target.head),
                 materialize(ckpt, view.headMatrix(m.source.layer, Proj::Q, m.source.head)));
    if (mha)
      editor.write(view.headMatrix(m.target.layer, Proj::K, m.target.head),
                   materialize(ckpt, view.headMatrix(m.source.layer, Proj::K, m.source.head)));
    pairs.push_back({{"target", {m.target.layer, m.target.head}},
                     {"source", {m.source.layer, m.source.head}},
                     {"similarity", m.similarity}});
  }
  const Json record = {{"ratio", result.ratio}, {"shared", result.sharedProjections}, {"pairs", pairs},
                       {"parameters_saved", result.parametersSaved}};
  auto metadata = ckpt.metadata();
  metadata["sharelens.directshare"] = record.dump();
  editor.save(outDir / "model.safetensors", metadata);
  if (ckpt.configPath()) writeFileAtomically(outDir / "config.json", ckpt.config()->dump(2));
}

}  // namespace sharelens
