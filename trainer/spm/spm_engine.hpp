// The interface between ShareLens and its SentencePiece plugin (libsharelens_spm.so).
//
// Debian's libsentencepiece carries its own copy of protobuf-lite with default symbol visibility. Linked into
// a process that also has LibTorch (and so libprotobuf.so.32), one copy's static initialisers bind to the
// other's functions and the process crashes before main(). The plugin is therefore loaded with RTLD_LOCAL |
// RTLD_DEEPBIND (core/plugin.hpp), and only this header -- standard-library types, no protobuf, no
// sentencepiece -- crosses the boundary. Errors come back as strings: exceptions do not cross it.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sharelens::spm {

class Model {
 public:
  virtual ~Model() = default;
  virtual std::vector<int> encode(std::string_view text) const = 0;
  virtual std::string decode(const std::vector<int>& ids) const = 0;
  virtual int pieceSize() const = 0;
  virtual int bosId() const = 0;  // -1 when the model has none
  virtual int eosId() const = 0;
};

// Yields one training sentence per call, std::nullopt at the end. The view must stay valid until the next
// call.
using SentenceSource = std::function<std::optional<std::string_view>()>;

class Engine {
 public:
  virtual ~Engine() = default;
  // Trains a model from the sentences with SentencePiece trainer options ("model_type" -> "bpe", ...);
  // returns the serialized model, or sets *error.
  virtual std::string train(const std::map<std::string, std::string>& options,
                            const SentenceSource& sentences, std::string* error) = 0;
  // Parses a serialized model, or sets *error and returns nullptr.
  virtual std::unique_ptr<Model> load(const std::string& serialized, std::string* error) = 0;
};

}  // namespace sharelens::spm

// The plugin's entry point: a process-lifetime engine.
extern "C" sharelens::spm::Engine* sharelens_spm_engine();
