// libsharelens_spm.so: SentencePiece behind the spm::Engine interface (see spm_engine.hpp for why it is a
// plugin). Built as a MODULE with hidden visibility; only sharelens_spm_engine is exported.
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <mutex>
#include <unordered_map>

#include "trainer/spm/spm_engine.hpp"

namespace sharelens::spm {
namespace {

class SourceIterator : public sentencepiece::SentenceIterator {
 public:
  explicit SourceIterator(const SentenceSource& source) : m_source(source) { Next(); }
  bool done() const override { return !m_current; }
  void Next() override {
    m_current = m_source();
    if (m_current) m_value.assign(*m_current);
  }
  const std::string& value() const override { return m_value; }
  sentencepiece::util::Status status() const override { return {}; }  // default-constructed: OK

 private:
  const SentenceSource& m_source;
  std::optional<std::string_view> m_current;
  std::string m_value;
};

class SpmModel : public Model {
 public:
  std::vector<int> encode(std::string_view text) const override {
    std::vector<int> ids;
    m_processor.Encode(text, &ids).IgnoreError();
    return ids;
  }
  std::string decode(const std::vector<int>& ids) const override {
    std::string text;
    m_processor.Decode(ids, &text).IgnoreError();
    return text;
  }
  int pieceSize() const override { return m_processor.GetPieceSize(); }
  int bosId() const override { return m_processor.bos_id(); }
  int eosId() const override { return m_processor.eos_id(); }
  sentencepiece::SentencePieceProcessor m_processor;
};

class SpmEngine : public Engine {
 public:
  std::string train(const std::map<std::string, std::string>& options, const SentenceSource& sentences,
                    std::string* error) override {
    std::lock_guard lock(m_trainMutex);  // SentencePiece's trainer keeps global state
    const std::unordered_map<std::string, std::string> kwargs(options.begin(), options.end());
    SourceIterator it(sentences);
    std::string serialized;
    const auto status = sentencepiece::SentencePieceTrainer::Train(kwargs, &it, &serialized);
    if (!status.ok()) {
      if (error) *error = status.ToString();
      return {};
    }
    return serialized;
  }

  std::unique_ptr<Model> load(const std::string& serialized, std::string* error) override {
    auto model = std::make_unique<SpmModel>();
    const auto status = model->m_processor.LoadFromSerializedProto(serialized);
    if (!status.ok()) {
      if (error) *error = status.ToString();
      return nullptr;
    }
    return model;
  }

 private:
  std::mutex m_trainMutex;
};

}  // namespace
}  // namespace sharelens::spm

extern "C" __attribute__((visibility("default"))) sharelens::spm::Engine* sharelens_spm_engine() {
  static sharelens::spm::SpmEngine engine;
  return &engine;
}
