#include "core/derived_checkpoint.hpp"

#include <algorithm>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/safetensors.hpp"

namespace fs = std::filesystem;

namespace sharelens {

bool isPlainSlice(const MatrixExpr& expr) {
  if (expr.terms.size() != 1) return false;
  const MatrixTerm& t = expr.terms[0];
  return !t.right && !t.coefficient && t.scale == 1.0f && t.left.batch < 0 && t.atRow == 0 && t.atCol == 0 &&
         t.rows() == expr.rows && t.cols() == expr.cols;
}

std::vector<float>& TensorEditor::edited(const std::string& tensor) {
  auto [it, inserted] = m_edited.try_emplace(tensor);
  if (inserted) it->second = m_ckpt.readFloat(tensor);
  return it->second;
}

void TensorEditor::write(const MatrixExpr& where, const FloatMatrix& values) {
  if (!isPlainSlice(where))
    throw Error({.what = "cannot write into a composite matrix",
                 .where = m_ckpt.path().string() + ": " + where.describe(),
                 .hint = "derive from a checkpoint that stores plain per-layer weights (`sharelens "
                         "export-hf` makes one)"});
  const TensorSlice& s = where.terms[0].left;
  const TensorInfo& info = *m_ckpt.at(s.tensor).info;
  std::vector<float>& data = edited(s.tensor);
  const int64_t storedCols = info.rank() >= 2 ? info.dim(info.rank() - 1) : 1;
  for (int64_t r = 0; r < s.rows; ++r)
    for (int64_t c = 0; c < s.cols; ++c) {
      const int64_t sr = s.transposed ? s.col0 + c : s.row0 + r;
      const int64_t sc = s.transposed ? s.row0 + r : s.col0 + c;
      data[static_cast<size_t>(sr * storedCols + sc)] = values(r, c);
    }
}

void TensorEditor::write(const VectorSlice& where, const std::vector<float>& values) {
  std::vector<float>& data = edited(where.tensor);
  if (where.offset < 0 || where.offset + where.length > static_cast<int64_t>(data.size()) ||
      static_cast<int64_t>(values.size()) != where.length)
    throw Error({.what = "vector slice outside its tensor",
                 .where = m_ckpt.path().string() + ": tensor '" + where.tensor + "'"});
  std::copy(values.begin(), values.end(), data.begin() + where.offset);
}

void TensorEditor::save(const fs::path& file, const std::map<std::string, std::string>& metadata,
                        const std::vector<std::string>& drop, const std::vector<EncodedTensor>& extra) const {
  std::vector<EncodedTensor> encoded;
  std::vector<TensorWrite> writes;
  encoded.reserve(m_ckpt.tensorCount());  // views into it are taken as it grows
  for (const std::string& name : m_ckpt.tensorNames()) {
    if (std::find(drop.begin(), drop.end(), name) != drop.end()) continue;
    const TensorRef& ref = m_ckpt.at(name);
    if (auto it = m_edited.find(name); it != m_edited.end()) {
      encoded.push_back(EncodedTensor::fromFloats(name, ref.info->dtype, ref.info->shape, it->second));
      writes.push_back(encoded.back().view());
    } else if (ref.info->stored) {  // another format's layout (llama2.c): written as the floats it presents
      encoded.push_back(
          EncodedTensor::fromFloats(name, ref.info->dtype, ref.info->shape, ref.file->readFloat(*ref.info)));
      writes.push_back(encoded.back().view());
    } else {
      writes.push_back({name, ref.info->dtype, ref.info->shape, ref.file->bytes(*ref.info)});
    }
  }
  for (const EncodedTensor& t : extra) writes.push_back(t.view());
  writeSafetensors(file, writes, metadata);
}

std::vector<std::string> copyCompanionFiles(const Checkpoint& ckpt, const fs::path& outDir) {
  std::vector<std::string> copied;
  const fs::path dir = ckpt.directory();
  auto copy = [&](const fs::path& from, const std::string& name) {
    std::error_code ec;
    if (!fs::is_regular_file(from, ec) || fs::exists(outDir / name)) return;
    fs::copy_file(from, outDir / name, fs::copy_options::overwrite_existing);
    copied.push_back(name);
  };
  // A checkpoint whose config came from its own header (llama2.c) gets that config written as config.json.
  if (ckpt.config() && ckpt.configPath() && ckpt.configPath()->filename() != "config.json" &&
      !fs::exists(outDir / "config.json")) {
    writeFileAtomically(outDir / "config.json", ckpt.config()->dump(2) + "\n");
    copied.push_back("config.json");
  }
  for (const char* name : kCompanionFiles) copy(dir / name, name);
  // A run's checkpoint (RUN/checkpoints/step-N/) keeps its tokenizer in the run directory.
  copy(dir.parent_path().parent_path() / "tokenizer.model", "tokenizer.model");
  return copied;
}

}  // namespace sharelens
