// SentencePiece BPE tokenizers for training runs (through the plugin of trainer/spm/spm_engine.hpp): trained
// on a corpus's training documents with the topology's vocab size, cached by (corpus fingerprint, vocab size)
// so a run and its baseline share one, and saved into each run directory as tokenizer.model.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/corpus.hpp"
#include "core/task.hpp"

namespace sharelens::spm {
class Model;
}

namespace sharelens {

class SpmTokenizer {
 public:
  static std::unique_ptr<SpmTokenizer> load(const std::filesystem::path& model);
  ~SpmTokenizer();

  std::vector<int> encode(std::string_view text) const;
  std::string decode(const std::vector<int>& ids) const;
  int vocabSize() const;
  int bosId() const;  // -1 when the model has none
  int eosId() const;
  std::string fingerprint() const { return m_fingerprint; }  // FNV-1a of the model file
  const std::filesystem::path& path() const { return m_path; }

 private:
  SpmTokenizer() = default;
  std::unique_ptr<spm::Model> m_model;  // from the SentencePiece plugin
  std::filesystem::path m_path;
  std::string m_fingerprint;
};

// The cached tokenizer for (corpus, held-out share, vocab), training it first if needed (tens of seconds on
// Brown) on the training documents alone: a run with another share must not reuse one that was trained on
// its held-out documents. Cache: $SHARELENS_CACHE, else $XDG_CACHE_HOME/sharelens, else ~/.cache/sharelens.
std::filesystem::path trainedTokenizer(const std::vector<const Document*>& trainDocuments,
                                       const std::string& corpusFingerprint, double heldOutShare,
                                       int vocabSize, const TaskContext& ctx);

std::filesystem::path cacheDirectory();

}  // namespace sharelens
