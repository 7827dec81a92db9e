// Tokenizers of the checkpoints ShareLens runs over text: Hugging Face tokenizer.json (BPE models: the
// byte-level kind of GPT-2, Llama 3 and Qwen2, and the SentencePiece-style kind with byte fallback of Gemma),
// and SentencePiece .model files (ShareLens runs, Llama 2, Gemma). Implemented here in C++ (ICU for the
// Unicode regexes and NFC); the tests compare them with an independent JavaScript implementation on real
// text.
//
// Supported tokenizer.json parts: normalizers NFC, NFKC, Replace, Prepend, Lowercase, Sequence;
// pre-tokenizers ByteLevel, Split (String or Regex; Isolated, Removed, MergedWithPrevious/Next,
// Contiguous), Metaspace, Whitespace, Sequence; BPE with merges, byte_fallback, ignore_merges, unk;
// added tokens; post-processors TemplateProcessing, ByteLevel, BertProcessing-free templates.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace sharelens {

class TextTokenizer {
 public:
  virtual ~TextTokenizer() = default;
  virtual std::vector<int> encode(std::string_view text, bool addSpecialTokens) const = 0;
  virtual std::string decode(const std::vector<int>& ids) const = 0;
  virtual int vocabSize() const = 0;
  virtual int eosId() const = 0;  // end of sequence (documents are joined with it), -1 when there is none
  virtual std::string describe() const = 0;  // "tokenizer.json: BPE (byte-level), 50257 tokens"
  virtual std::string fingerprint()
      const = 0;  // FNV-1a of the tokenizer file (caches of tokenised text key on it)
};

std::unique_ptr<TextTokenizer> loadHfTokenizer(const std::filesystem::path& tokenizerJson);
std::unique_ptr<TextTokenizer> loadSentencePieceTokenizer(const std::filesystem::path& model);

// The tokenizer that belongs to a checkpoint: tokenizer.json or tokenizer.model beside it, or, for a
// ShareLens run's checkpoint (RUN/checkpoints/step-N), the run's tokenizer.model. Throws a named Error
// listing the places it looked.
std::unique_ptr<TextTokenizer> tokenizerForCheckpoint(const std::filesystem::path& checkpointPath);
// The file tokenizerForCheckpoint() loads, or a named Error listing where it looked.
std::filesystem::path tokenizerFileForCheckpoint(const std::filesystem::path& checkpointPath);
// A tokenizer file by its kind: .json (Hugging Face) or .model (SentencePiece).
std::unique_ptr<TextTokenizer> loadTokenizerFile(const std::filesystem::path& file);

}  // namespace sharelens
