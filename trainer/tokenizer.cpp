#include "trainer/tokenizer.hpp"

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/hash.hpp"
#include "core/plugin.hpp"
#include "trainer/spm/spm_engine.hpp"

namespace fs = std::filesystem;

namespace sharelens {
namespace {

spm::Engine& spmEngine() {
  static std::once_flag once;
  static spm::Engine* engine = nullptr;
  static std::string loadError;
  std::call_once(once, [] {
    const PluginSpec spec{
        .fileName = "libsharelens_spm.so", .envOverride = "SHARELENS_SPM_PLUGIN", .isolateSymbols = true};
    if (auto entry = reinterpret_cast<spm::Engine* (*)()>(
            loadPluginEntryPoint(spec, "sharelens_spm_engine", &loadError)))
      engine = entry();
  });
  if (!engine)
    throw Error(
        {.what = "SentencePiece is unavailable",
         .where = "libsharelens_spm.so",
         .found = loadError,
         .hint = "build the sharelens_spm target (./dev.sh build), or point SHARELENS_SPM_PLUGIN at it"});
  return *engine;
}

// The training documents' non-empty lines, one at a time, without a temporary text file.
spm::SentenceSource documentLines(const std::vector<const Document*>& docs) {
  return [&docs, doc = size_t{0}, pos = size_t{0}]() mutable -> std::optional<std::string_view> {
    while (doc < docs.size()) {
      const std::string& text = docs[doc]->text;
      if (pos >= text.size()) {
        ++doc;
        pos = 0;
        continue;
      }
      size_t end = text.find('\n', pos);
      if (end == std::string::npos) end = text.size();
      const std::string_view line(text.data() + pos, end - pos);
      pos = end + 1;
      if (!line.empty()) return line;
    }
    return std::nullopt;
  };
}

std::mutex g_cacheMutex;  // one thread trains a given tokenizer; the other then finds it in the cache

}  // namespace

fs::path cacheDirectory() {
  if (const char* env = std::getenv("SHARELENS_CACHE")) return env;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME")) return fs::path(xdg) / "sharelens";
  if (const char* home = std::getenv("HOME")) return fs::path(home) / ".cache" / "sharelens";
  return fs::temp_directory_path() / "sharelens-cache";
}

std::unique_ptr<SpmTokenizer> SpmTokenizer::load(const fs::path& model) {
  std::unique_ptr<SpmTokenizer> t(new SpmTokenizer());
  const std::string bytes = readTextFile(model);
  std::string error;
  t->m_model = spmEngine().load(bytes, &error);
  if (!t->m_model)
    throw Error({.what = "cannot load SentencePiece model",
                 .where = model.string(),
                 .found = error,
                 .hint = "the file is not a SentencePiece model; delete it to retrain"});
  t->m_path = model;
  t->m_fingerprint = fnv1aHex(bytes);
  return t;
}

SpmTokenizer::~SpmTokenizer() = default;

std::vector<int> SpmTokenizer::encode(std::string_view text) const {
  return m_model->encode(text);
}
std::string SpmTokenizer::decode(const std::vector<int>& ids) const {
  return m_model->decode(ids);
}
int SpmTokenizer::vocabSize() const {
  return m_model->pieceSize();
}
int SpmTokenizer::bosId() const {
  return m_model->bosId();
}
int SpmTokenizer::eosId() const {
  return m_model->eosId();
}

fs::path trainedTokenizer(const std::vector<const Document*>& docs, const std::string& corpusFingerprint,
                          double heldOutShare, int vocabSize, const TaskContext& ctx) {
  const fs::path dir = cacheDirectory() / "tokenizers";
  char share[32];
  std::snprintf(share, sizeof share, "%.17g", heldOutShare);
  const std::string key = "bpe-" + corpusFingerprint + "-h" + share + "-v" + std::to_string(vocabSize);
  const fs::path model = dir / (key + ".model");
  if (fs::exists(model)) return model;
  std::lock_guard lock(g_cacheMutex);
  if (fs::exists(model)) return model;
  fs::create_directories(dir);
  ctx.report(0.0, "training a " + std::to_string(vocabSize) + "-piece BPE tokenizer");
  const std::map<std::string, std::string> options = {
      {"model_type", "bpe"},
      {"vocab_size", std::to_string(vocabSize)},
      {"character_coverage", "1.0"},
      {"byte_fallback", "true"},
      {"split_digits", "true"},
      {"num_threads", std::to_string(ctx.threadCount())},
      {"input_sentence_size", "2000000"},
      {"shuffle_input_sentence", "false"},  // deterministic: every sentence is used anyway
      {"max_sentence_length", "8192"},
      {"minloglevel", "2"},
      {"pad_id", "-1"},
      {"unk_id", "0"},
      {"bos_id", "1"},
      {"eos_id", "2"},
  };
  std::string error;
  const std::string serialized = spmEngine().train(options, documentLines(docs), &error);
  if (serialized.empty()) {
    // SentencePiece fails both ways: too few pieces for the corpus's characters (and the 256 byte-fallback
    // pieces), or more pieces than the corpus can produce.
    const bool tooSmall = error.find("smaller than required_chars") != std::string::npos;
    throw Error(
        {.what = "SentencePiece training failed",
         .where = "tokenizer for corpus " + corpusFingerprint,
         .expected = tooSmall ? "a vocabulary of at least the corpus's characters plus 256 byte pieces" : "",
         .found = error,
         .hint = tooSmall
                     ? "raise model.vocab in the topology (" + std::to_string(vocabSize) +
                           " is too small for this corpus)"
                     : "a vocab larger than the corpus supports fails; lower model.vocab in the topology"});
  }
  writeFileAtomically(model, serialized);
  return model;
}

}  // namespace sharelens
