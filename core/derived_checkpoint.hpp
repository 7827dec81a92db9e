// Checkpoints derived from another one (a DirectShare-shared model, a compressed model, a materialised
// export): edits to stored tensors made in the view's canonical coordinates, and the files beside the weights
// that make the result open, run and evaluate like the original (config.json, the tokenizer).
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/model_view.hpp"

namespace sharelens {

// Float copies of the tensors being edited, written back in their original dtypes by save(). Matrices are
// written through a plain view expression (one slice of one tensor, transposed or not), vectors through a
// VectorSlice; everything not edited is copied byte for byte.
class TensorEditor {
 public:
  explicit TensorEditor(const Checkpoint& checkpoint) : m_ckpt(checkpoint) {}

  void write(const MatrixExpr& where, const FloatMatrix& values);
  void write(const VectorSlice& where, const std::vector<float>& values);
  // Writes every tensor of the checkpoint, except `drop`, plus `extra` (new tensors), into one file.
  void save(const std::filesystem::path& file, const std::map<std::string, std::string>& metadata,
            const std::vector<std::string>& drop = {}, const std::vector<EncodedTensor>& extra = {}) const;

 private:
  std::vector<float>& edited(const std::string& tensor);
  const Checkpoint& m_ckpt;
  std::map<std::string, std::vector<float>> m_edited;
};

// True when `expr` is one unscaled slice of one stored tensor (what TensorEditor can write through).
bool isPlainSlice(const MatrixExpr& expr);

// Copies config.json, the tokenizer files (tokenizer.json, tokenizer.model, tokenizer_config.json,
// special_tokens_map.json) and generation_config.json from beside the checkpoint -- or, for a ShareLens run's
// checkpoint, the run's tokenizer.model -- into outDir. Returns the names copied.
std::vector<std::string> copyCompanionFiles(const Checkpoint& checkpoint,
                                            const std::filesystem::path& outDir);

}  // namespace sharelens
