#include "trainer/hf_tokenizer.hpp"

#include <unicode/normalizer2.h>
#include <unicode/regex.h>
#include <unicode/unistr.h>

#include <algorithm>
#include <array>
#include <map>
#include <mutex>
#include <queue>
#include <unordered_map>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/hash.hpp"
#include "core/json_util.hpp"
#include "core/run_dir.hpp"
#include "trainer/tokenizer.hpp"

namespace fs = std::filesystem;

namespace sharelens {
namespace {

// ---- UTF-8 and the byte-level alphabet ------------------------------------------------------------------

size_t utf8Length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead >> 5) == 0x6) return 2;
  if ((lead >> 4) == 0xe) return 3;
  if ((lead >> 3) == 0x1e) return 4;
  return 1;  // invalid lead byte: treat as one unit
}

std::vector<std::string_view> utf8Characters(std::string_view s) {
  std::vector<std::string_view> out;
  for (size_t i = 0; i < s.size();) {
    const size_t n = std::min(utf8Length(static_cast<unsigned char>(s[i])), s.size() - i);
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

std::string codepointToUtf8(uint32_t cp) {
  std::string out;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
  return out;
}

// GPT-2's reversible byte -> printable character map.
const std::array<std::string, 256>& byteAlphabet() {
  static const std::array<std::string, 256> table = [] {
    std::array<std::string, 256> t;
    std::vector<bool> direct(256, false);
    for (int b = '!'; b <= '~'; ++b) direct[b] = true;
    for (int b = 0xa1; b <= 0xac; ++b) direct[b] = true;
    for (int b = 0xae; b <= 0xff; ++b) direct[b] = true;
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) t[b] = codepointToUtf8(direct[b] ? static_cast<uint32_t>(b) : next++);
    return t;
  }();
  return table;
}

const std::unordered_map<std::string, uint8_t>& byteAlphabetInverse() {
  static const auto inverse = [] {
    std::unordered_map<std::string, uint8_t> m;
    for (int b = 0; b < 256; ++b) m[byteAlphabet()[b]] = static_cast<uint8_t>(b);
    return m;
  }();
  return inverse;
}

std::string toByteLevel(std::string_view s) {
  std::string out;
  for (unsigned char c : s) out += byteAlphabet()[c];
  return out;
}

[[noreturn]] void unsupported(const fs::path& file, const std::string& field, const std::string& found) {
  throw Error(
      {.what = "unsupported tokenizer.json component",
       .where = file.string() + ": " + field,
       .found = found,
       .hint =
           "ShareLens reads BPE tokenizers (GPT-2, Llama 3, Qwen2, Gemma); convert others to SentencePiece"});
}

// ---- regex splitting through ICU ------------------------------------------------------------------------

class UnicodeRegex {
 public:
  UnicodeRegex(const std::string& pattern, const std::string& where) {
    UErrorCode status = U_ZERO_ERROR;
    UParseError parse{};
    m_pattern.reset(icu::RegexPattern::compile(icu::UnicodeString::fromUTF8(pattern), 0, parse, status));
    if (U_FAILURE(status))
      throw Error({.what = "cannot compile the pre-tokenizer regex",
                   .where = where,
                   .found = u_errorName(status),
                   .hint = "the pattern uses syntax ICU does not support"});
  }

  // Byte ranges [begin, end) of every match in the UTF-8 text.
  std::vector<std::pair<size_t, size_t>> matches(std::string_view text) const {
    const icu::UnicodeString u =
        icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
    // UTF-16 index -> UTF-8 byte offset
    std::vector<size_t> byteAt(static_cast<size_t>(u.length()) + 1, text.size());
    size_t bytes = 0;
    for (int32_t i = 0; i < u.length();) {
      const UChar32 cp = u.char32At(i);
      const int32_t units = U16_LENGTH(cp);
      for (int32_t k = 0; k < units; ++k) byteAt[static_cast<size_t>(i + k)] = bytes;
      bytes += cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
      i += units;
    }
    UErrorCode status = U_ZERO_ERROR;
    std::unique_ptr<icu::RegexMatcher> m(m_pattern->matcher(u, status));
    std::vector<std::pair<size_t, size_t>> out;
    while (U_SUCCESS(status) && m->find(status)) {
      const int32_t s = m->start(status), e = m->end(status);
      if (e > s) out.emplace_back(byteAt[static_cast<size_t>(s)], byteAt[static_cast<size_t>(e)]);
    }
    return out;
  }

 private:
  std::unique_ptr<icu::RegexPattern> m_pattern;
};

enum class SplitBehavior { Isolated, Removed, MergedWithPrevious, MergedWithNext, Contiguous };

std::vector<std::string> splitByMatches(std::string_view text, std::vector<std::pair<size_t, size_t>> matches,
                                        SplitBehavior behavior, bool invert) {
  // Segments as (begin, end, isMatch) covering the text.
  std::vector<std::tuple<size_t, size_t, bool>> segments;
  size_t at = 0;
  for (auto [b, e] : matches) {
    if (b > at) segments.emplace_back(at, b, false);
    segments.emplace_back(b, e, true);
    at = e;
  }
  if (at < text.size()) segments.emplace_back(at, text.size(), false);
  if (invert)
    for (auto& s : segments) std::get<2>(s) = !std::get<2>(s);
  std::vector<std::string> out;
  auto piece = [&](size_t b, size_t e) { return std::string(text.substr(b, e - b)); };
  switch (behavior) {
    case SplitBehavior::Isolated:
      for (auto [b, e, m] : segments) out.push_back(piece(b, e));
      break;
    case SplitBehavior::Removed:
      for (auto [b, e, m] : segments)
        if (!m) out.push_back(piece(b, e));
      break;
    case SplitBehavior::MergedWithPrevious: {
      std::string current;
      for (auto [b, e, m] : segments) {
        current += piece(b, e);
        if (m) out.push_back(std::exchange(current, {}));
      }
      if (!current.empty()) out.push_back(current);
      break;
    }
    case SplitBehavior::MergedWithNext: {
      std::string current;
      for (auto [b, e, m] : segments) {
        if (m && !current.empty()) out.push_back(std::exchange(current, {}));
        current += piece(b, e);
      }
      if (!current.empty()) out.push_back(current);
      break;
    }
    case SplitBehavior::Contiguous: {
      std::string current;
      bool lastMatch = false;
      for (auto [b, e, m] : segments) {
        if (!current.empty() && !(m && lastMatch)) out.push_back(std::exchange(current, {}));
        current += piece(b, e);
        lastMatch = m;
      }
      if (!current.empty()) out.push_back(current);
      break;
    }
  }
  std::erase_if(out, [](const std::string& s) { return s.empty(); });
  return out;
}

std::vector<std::pair<size_t, size_t>> literalMatches(std::string_view text, const std::string& literal) {
  std::vector<std::pair<size_t, size_t>> out;
  if (literal.empty()) return out;
  for (size_t at = text.find(literal); at != std::string_view::npos;
       at = text.find(literal, at + literal.size()))
    out.emplace_back(at, at + literal.size());
  return out;
}

// ---- normalizers and pre-tokenizers ---------------------------------------------------------------------

using Normalizer = std::function<std::string(std::string)>;
using PreTokenizer = std::function<std::vector<std::string>(const std::vector<std::string>&)>;

std::string icuNormalize(const std::string& s, bool compatibility) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* n =
      compatibility ? icu::Normalizer2::getNFKCInstance(status) : icu::Normalizer2::getNFCInstance(status);
  const icu::UnicodeString out = n->normalize(icu::UnicodeString::fromUTF8(s), status);
  std::string utf8;
  out.toUTF8String(utf8);
  return U_SUCCESS(status) ? utf8 : s;
}

std::string replaceAll(std::string s, const std::string& from, const std::string& to) {
  if (from.empty()) return s;
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

// The pattern of a Split/Replace: {"String": "..."} or {"Regex": "..."}.
struct Pattern {
  std::string literal;
  std::shared_ptr<UnicodeRegex> regex;
  std::vector<std::pair<size_t, size_t>> matches(std::string_view text) const {
    return regex ? regex->matches(text) : literalMatches(text, literal);
  }
};

Pattern parsePattern(const Json& j, const std::string& where) {
  Pattern p;
  if (j.contains("String"))
    p.literal = j["String"].get<std::string>();
  else if (j.contains("Regex"))
    p.regex = std::make_shared<UnicodeRegex>(j["Regex"].get<std::string>(), where);
  else
    throw Error({.what = "pattern must be {String} or {Regex}", .where = where, .found = j.dump()});
  return p;
}

constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

Normalizer parseNormalizer(const Json& j, const fs::path& file) {
  if (j.is_null()) return [](std::string s) { return s; };
  const std::string type = j.value("type", "");
  if (type == "NFC") return [](std::string s) { return icuNormalize(s, false); };
  if (type == "NFKC") return [](std::string s) { return icuNormalize(s, true); };
  if (type == "Lowercase")
    return [](std::string s) {
      icu::UnicodeString u = icu::UnicodeString::fromUTF8(s);
      std::string out;
      u.toLower().toUTF8String(out);
      return out;
    };
  if (type == "Prepend")
    return [p = j["prepend"].get<std::string>()](std::string s) { return s.empty() ? s : p + s; };
  if (type == "Replace") {
    const Pattern pattern = parsePattern(j["pattern"], file.string() + ": normalizer");
    const std::string content = j["content"].get<std::string>();
    return [pattern, content](std::string s) {
      if (!pattern.regex) return replaceAll(std::move(s), pattern.literal, content);
      std::string out;
      size_t at = 0;
      for (auto [b, e] : pattern.matches(s)) {
        out.append(s, at, b - at);
        out += content;
        at = e;
      }
      return out + s.substr(at);
    };
  }
  if (type == "Sequence") {
    std::vector<Normalizer> parts;
    for (const Json& n : j["normalizers"]) parts.push_back(parseNormalizer(n, file));
    return [parts](std::string s) {
      for (const auto& p : parts) s = p(std::move(s));
      return s;
    };
  }
  unsupported(file, "normalizer", type);
}

SplitBehavior parseBehavior(const std::string& b, const fs::path& file) {
  if (b == "Isolated") return SplitBehavior::Isolated;
  if (b == "Removed") return SplitBehavior::Removed;
  if (b == "MergedWithPrevious") return SplitBehavior::MergedWithPrevious;
  if (b == "MergedWithNext") return SplitBehavior::MergedWithNext;
  if (b == "Contiguous") return SplitBehavior::Contiguous;
  unsupported(file, "pre_tokenizer.behavior", b);
}

// `byteLevel` reports whether the model's symbols are byte-level characters.
PreTokenizer parsePreTokenizer(const Json& j, const fs::path& file, bool& byteLevel) {
  if (j.is_null()) return [](const std::vector<std::string>& v) { return v; };
  const std::string type = j.value("type", "");
  if (type == "ByteLevel") {
    byteLevel = true;
    const bool prefix = j.value("add_prefix_space", false), regex = j.value("use_regex", true);
    auto gpt2 = std::make_shared<UnicodeRegex>(kGpt2Pattern, "GPT-2 pattern");
    return [prefix, regex, gpt2](const std::vector<std::string>& pieces) {
      std::vector<std::string> out;
      for (size_t i = 0; i < pieces.size(); ++i) {
        std::string p = pieces[i];
        if (prefix && i == 0 && !p.empty() && p[0] != ' ') p = " " + p;
        if (regex)
          for (std::string& s : splitByMatches(p, gpt2->matches(p), SplitBehavior::Isolated, false))
            out.push_back(toByteLevel(s));
        else
          out.push_back(toByteLevel(p));
      }
      return out;
    };
  }
  if (type == "Split") {
    const Pattern pattern = parsePattern(j["pattern"], file.string() + ": pre_tokenizer");
    const SplitBehavior behavior = parseBehavior(j.value("behavior", "Isolated"), file);
    const bool invert = j.value("invert", false);
    return [pattern, behavior, invert](const std::vector<std::string>& pieces) {
      std::vector<std::string> out;
      for (const std::string& p : pieces)
        for (std::string& s : splitByMatches(p, pattern.matches(p), behavior, invert))
          out.push_back(std::move(s));
      return out;
    };
  }
  if (type == "Metaspace") {
    const std::string replacement = j.value("replacement", "\u2581");
    const std::string scheme =
        j.value("prepend_scheme", j.value("add_prefix_space", true) ? "always" : "never");
    const bool split = j.value("split", true);
    return [replacement, scheme, split](const std::vector<std::string>& pieces) {
      std::vector<std::string> out;
      for (size_t i = 0; i < pieces.size(); ++i) {
        std::string p = replaceAll(pieces[i], " ", replacement);
        if ((scheme == "always" || (scheme == "first" && i == 0)) && p.rfind(replacement, 0) != 0)
          p = replacement + p;
        if (!split) {
          out.push_back(p);
          continue;
        }
        for (std::string& s :
             splitByMatches(p, literalMatches(p, replacement), SplitBehavior::MergedWithNext, false))
          out.push_back(std::move(s));
      }
      return out;
    };
  }
  if (type == "Whitespace") {
    auto words = std::make_shared<UnicodeRegex>(R"(\w+|[^\w\s]+)", "Whitespace pre-tokenizer");
    return [words](const std::vector<std::string>& pieces) {
      std::vector<std::string> out;
      for (const std::string& p : pieces)
        for (auto [b, e] : words->matches(p)) out.push_back(p.substr(b, e - b));
      return out;
    };
  }
  if (type == "Sequence") {
    std::vector<PreTokenizer> parts;
    for (const Json& p : j["pretokenizers"]) parts.push_back(parsePreTokenizer(p, file, byteLevel));
    return [parts](const std::vector<std::string>& pieces) {
      std::vector<std::string> v = pieces;
      for (const auto& p : parts) v = p(v);
      return v;
    };
  }
  unsupported(file, "pre_tokenizer", type);
}

// ---- the BPE model ---------------------------------------------------------------------------------------

struct PairHash {
  size_t operator()(const std::pair<int, int>& p) const {
    return std::hash<int64_t>()((int64_t(p.first) << 32) ^ p.second);
  }
};

class BpeModel {
 public:
  BpeModel(const Json& model, const fs::path& file) {
    for (const auto& [token, id] : model["vocab"].items()) m_vocab.emplace(token, id.get<int>());
    m_byteFallback = model.value("byte_fallback", false);
    m_ignoreMerges = model.value("ignore_merges", false);
    m_fuseUnk = model.value("fuse_unk", false);
    if (model.contains("unk_token") && model["unk_token"].is_string()) {
      auto it = m_vocab.find(model["unk_token"].get<std::string>());
      if (it != m_vocab.end()) m_unk = it->second;
    }
    int rank = 0;
    for (const Json& merge : model["merges"]) {
      std::string a, b;
      if (merge.is_string()) {
        const std::string s = merge.get<std::string>();
        const size_t space = s.find(' ', 1);
        if (space == std::string::npos)
          throw Error({.what = "malformed merge", .where = file.string() + ": model.merges", .found = s});
        a = s.substr(0, space);
        b = s.substr(space + 1);
      } else {
        a = merge[0].get<std::string>();
        b = merge[1].get<std::string>();
      }
      const auto ia = m_vocab.find(a), ib = m_vocab.find(b), ic = m_vocab.find(a + b);
      if (ia != m_vocab.end() && ib != m_vocab.end() && ic != m_vocab.end())
        m_merges.emplace(std::pair{ia->second, ib->second}, std::pair{rank, ic->second});
      ++rank;
    }
  }

  void addToken(const std::string& token, int id) { m_vocab.emplace(token, id); }
  const std::unordered_map<std::string, int>& vocab() const { return m_vocab; }
  int idOf(const std::string& token) const {
    auto it = m_vocab.find(token);
    return it == m_vocab.end() ? -1 : it->second;
  }

  void encodeWord(const std::string& word, std::vector<int>& out) const {
    if (m_ignoreMerges)
      if (auto it = m_vocab.find(word); it != m_vocab.end()) return out.push_back(it->second);
    // Symbols: characters in the vocab, else their bytes (<0xAB>) with byte fallback, else unk.
    std::vector<int> ids;
    for (std::string_view ch : utf8Characters(word)) {
      if (auto it = m_vocab.find(std::string(ch)); it != m_vocab.end()) {
        ids.push_back(it->second);
      } else if (m_byteFallback) {
        for (unsigned char b : ch) {
          char name[8];
          std::snprintf(name, sizeof name, "<0x%02X>", b);
          auto bt = m_vocab.find(name);
          ids.push_back(bt != m_vocab.end() ? bt->second : m_unk);
        }
      } else if (!(m_fuseUnk && !ids.empty() && ids.back() == m_unk)) {
        ids.push_back(m_unk);
      }
    }
    mergeSymbols(ids);
    for (int id : ids)
      if (id >= 0) out.push_back(id);
  }

 private:
  // Lowest-rank adjacent pair first, leftmost among equal ranks: a heap over a linked list, O(n log n).
  void mergeSymbols(std::vector<int>& ids) const {
    const size_t n = ids.size();
    if (n < 2) return;
    std::vector<int> prev(n), next(n);
    std::vector<bool> alive(n, true);
    for (size_t i = 0; i < n; ++i) {
      prev[i] = static_cast<int>(i) - 1;
      next[i] = i + 1 < n ? static_cast<int>(i + 1) : -1;
    }
    using Entry = std::tuple<int, int, int, int>;  // rank, position, left id, right id
    std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap;
    auto push = [&](int i) {
      if (i < 0 || next[i] < 0) return;
      auto it = m_merges.find({ids[i], ids[next[i]]});
      if (it != m_merges.end()) heap.emplace(it->second.first, i, ids[i], ids[next[i]]);
    };
    for (size_t i = 0; i + 1 < n; ++i) push(static_cast<int>(i));
    while (!heap.empty()) {
      const auto [rank, i, left, right] = heap.top();
      heap.pop();
      if (!alive[i] || next[i] < 0 || ids[i] != left || ids[next[i]] != right) continue;  // stale
      const int j = next[i];
      ids[i] = m_merges.at({left, right}).second;
      alive[j] = false;
      next[i] = next[j];
      if (next[j] >= 0) prev[next[j]] = i;
      push(prev[i]);
      push(i);
    }
    std::vector<int> merged;
    for (int i = 0; i >= 0; i = next[i]) merged.push_back(ids[i]);
    ids = std::move(merged);
  }

  std::unordered_map<std::string, int> m_vocab;
  std::unordered_map<std::pair<int, int>, std::pair<int, int>, PairHash> m_merges;  // -> (rank, merged id)
  bool m_byteFallback = false, m_ignoreMerges = false, m_fuseUnk = false;
  int m_unk = -1;
};

struct AddedToken {
  std::string content;
  int id = 0;
  bool special = false, lstrip = false, rstrip = false;
};

class HfTokenizer : public TextTokenizer {
 public:
  explicit HfTokenizer(const fs::path& file) : m_file(file) {
    m_fingerprint = fnv1aHex(readTextFile(file));
    const Json j = readJsonFile(file);
    const Json& model = j.at("model");
    if (model.value("type", "BPE") != "BPE") unsupported(file, "model.type", model.value("type", ""));
    m_model = std::make_unique<BpeModel>(model, file);
    m_normalizer = parseNormalizer(j.value("normalizer", Json()), file);
    m_preTokenizer = parsePreTokenizer(j.value("pre_tokenizer", Json()), file, m_byteLevel);
    for (const Json& a : j.value("added_tokens", Json::array())) {
      AddedToken t{a["content"].get<std::string>(), a["id"].get<int>(), a.value("special", false),
                   a.value("lstrip", false), a.value("rstrip", false)};
      m_added.push_back(t);
    }
    std::sort(m_added.begin(), m_added.end(),
              [](const AddedToken& a, const AddedToken& b) { return a.content.size() > b.content.size(); });
    for (size_t i = 0; i < m_added.size(); ++i) {
      m_idToToken[m_added[i].id] = m_added[i].content;
      if (!m_added[i].content.empty())
        m_addedByFirstByte[static_cast<unsigned char>(m_added[i].content[0])].push_back(i);
    }
    for (const auto& [token, id] : m_model->vocab()) m_idToToken[id] = token;
    parsePostProcessor(j.value("post_processor", Json()));
    if (const Json& d = j.value("decoder", Json()); !d.is_null())
      m_byteLevelDecode = d.dump().find("ByteLevel") != std::string::npos;
  }

  std::vector<int> encode(std::string_view text, bool addSpecialTokens) const override {
    std::vector<int> ids;
    if (addSpecialTokens) ids.insert(ids.end(), m_prefix.begin(), m_prefix.end());
    size_t at = 0, segment = 0;
    auto flush = [&](size_t end) {
      if (end > segment) encodeText(text.substr(segment, end - segment), ids);
    };
    while (at < text.size()) {
      const AddedToken* hit = nullptr;
      for (size_t i : m_addedByFirstByte[static_cast<unsigned char>(text[at])])  // longest first
        if (text.compare(at, m_added[i].content.size(), m_added[i].content) == 0) {
          hit = &m_added[i];
          break;
        }
      if (!hit) {
        at += utf8Length(static_cast<unsigned char>(text[at]));
        continue;
      }
      size_t end = at;
      if (hit->lstrip)
        while (end > segment && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
      flush(end);
      ids.push_back(hit->id);
      at += hit->content.size();
      if (hit->rstrip)
        while (at < text.size() && std::isspace(static_cast<unsigned char>(text[at]))) ++at;
      segment = at;
    }
    flush(text.size());
    if (addSpecialTokens) ids.insert(ids.end(), m_suffix.begin(), m_suffix.end());
    return ids;
  }

  std::string decode(const std::vector<int>& ids) const override {
    std::string joined;
    for (int id : ids) {
      auto it = m_idToToken.find(id);
      if (it == m_idToToken.end()) continue;
      const std::string& t = it->second;
      if (t.size() == 6 && t.rfind("<0x", 0) == 0 && t.back() == '>') {  // byte fallback
        joined += static_cast<char>(std::stoi(t.substr(3, 2), nullptr, 16));
        continue;
      }
      joined += t;
    }
    if (m_byteLevelDecode) {
      std::string bytes;
      const auto& inverse = byteAlphabetInverse();
      for (std::string_view ch : utf8Characters(joined)) {
        auto it = inverse.find(std::string(ch));
        bytes += it != inverse.end() ? static_cast<char>(it->second) : std::string(ch).front();
      }
      return bytes;
    }
    return replaceAll(joined, "\u2581", " ");
  }

  int vocabSize() const override {
    int top = 0;
    for (const auto& [id, token] : m_idToToken) top = std::max(top, id + 1);
    return top;
  }

  // The special added token that ends a sequence in the common vocabularies (GPT-2 and Qwen "<|endoftext|>",
  // Llama 3 "<|end_of_text|>", Llama 2 / Mistral "</s>", Gemma "<eos>").
  int eosId() const override {
    for (std::string_view name : {"<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>"})
      for (const AddedToken& t : m_added)
        if (t.content == name) return t.id;
    for (std::string_view name : {"<|endoftext|>", "</s>", "<eos>"})
      if (const int id = m_model->idOf(std::string(name)); id >= 0) return id;
    return -1;
  }

  std::string fingerprint() const override { return m_fingerprint; }

  std::string describe() const override {
    return m_file.filename().string() + ": BPE (" + (m_byteLevel ? "byte-level" : "SentencePiece-style") +
           "), " + std::to_string(vocabSize()) + " tokens";
  }

 private:
  void encodeText(std::string_view text, std::vector<int>& ids) const {
    const std::string normalized = m_normalizer(std::string(text));
    for (const std::string& word : m_preTokenizer({normalized})) {
      if (m_byteLevel) {  // repeated words are common: cache them
        std::lock_guard lock(m_cacheMutex);
        if (auto it = m_cache.find(word); it != m_cache.end()) {
          ids.insert(ids.end(), it->second.begin(), it->second.end());
          continue;
        }
      }
      std::vector<int> out;
      m_model->encodeWord(word, out);
      ids.insert(ids.end(), out.begin(), out.end());
      if (m_byteLevel && m_cache.size() < 200'000) {
        std::lock_guard lock(m_cacheMutex);
        m_cache.emplace(word, std::move(out));
      }
    }
  }

  void parsePostProcessor(const Json& p) {
    if (p.is_null()) return;
    const std::string type = p.value("type", "");
    if (type == "Sequence") {
      for (const Json& q : p["processors"]) parsePostProcessor(q);
      return;
    }
    if (type == "ByteLevel") return;  // offsets only
    if (type != "TemplateProcessing") unsupported(m_file, "post_processor", type);
    bool afterSequence = false;
    for (const Json& item : p["single"]) {
      if (item.contains("Sequence")) {
        afterSequence = true;
        continue;
      }
      const std::string name = item["SpecialToken"]["id"].get<std::string>();
      for (const Json& id : p["special_tokens"][name]["ids"])
        (afterSequence ? m_suffix : m_prefix).push_back(id.get<int>());
    }
  }

  fs::path m_file;
  std::string m_fingerprint;
  std::unique_ptr<BpeModel> m_model;
  Normalizer m_normalizer;
  PreTokenizer m_preTokenizer;
  bool m_byteLevel = false, m_byteLevelDecode = false;
  std::vector<AddedToken> m_added;                          // longest first
  std::array<std::vector<size_t>, 256> m_addedByFirstByte;  // indices into m_added, longest first
  std::vector<int> m_prefix, m_suffix;
  std::unordered_map<int, std::string> m_idToToken;
  mutable std::mutex m_cacheMutex;
  mutable std::unordered_map<std::string, std::vector<int>> m_cache;
};

class SentencePieceTokenizer : public TextTokenizer {
 public:
  explicit SentencePieceTokenizer(const fs::path& file) : m_model(SpmTokenizer::load(file)) {}
  std::vector<int> encode(std::string_view text, bool addSpecialTokens) const override {
    std::vector<int> ids;
    if (addSpecialTokens && m_model->bosId() >= 0) ids.push_back(m_model->bosId());
    const std::vector<int> body = m_model->encode(text);
    ids.insert(ids.end(), body.begin(), body.end());
    return ids;
  }
  std::string decode(const std::vector<int>& ids) const override { return m_model->decode(ids); }
  int vocabSize() const override { return m_model->vocabSize(); }
  int eosId() const override { return m_model->eosId(); }
  std::string fingerprint() const override { return m_model->fingerprint(); }
  std::string describe() const override {
    return m_model->path().filename().string() + ": SentencePiece, " + std::to_string(vocabSize()) +
           " pieces";
  }

 private:
  std::unique_ptr<SpmTokenizer> m_model;
};

}  // namespace

std::unique_ptr<TextTokenizer> loadHfTokenizer(const fs::path& file) {
  return std::make_unique<HfTokenizer>(file);
}
std::unique_ptr<TextTokenizer> loadSentencePieceTokenizer(const fs::path& file) {
  return std::make_unique<SentencePieceTokenizer>(file);
}

fs::path tokenizerFileForCheckpoint(const fs::path& path) {
  const fs::path resolved = resolveModelPath(path);
  const fs::path dir = fs::is_directory(resolved) ? resolved : resolved.parent_path();
  const fs::path run = dir.parent_path().parent_path();  // RUN/checkpoints/step-N -> RUN
  for (const fs::path& c :
       {dir / "tokenizer.json", dir / "tokenizer.model", run / "tokenizer.json", run / "tokenizer.model"})
    if (fs::exists(c)) return c;
  throw Error({.what = "no tokenizer for the checkpoint",
               .where = path.string(),
               .expected = "tokenizer.json or tokenizer.model beside the weights (or in the run directory)",
               .found = "none",
               .hint = "copy the model's tokenizer files next to its safetensors"});
}

std::unique_ptr<TextTokenizer> loadTokenizerFile(const fs::path& file) {
  return file.extension() == ".json" ? loadHfTokenizer(file) : loadSentencePieceTokenizer(file);
}

std::unique_ptr<TextTokenizer> tokenizerForCheckpoint(const fs::path& path) {
  return loadTokenizerFile(tokenizerFileForCheckpoint(path));
}

}  // namespace sharelens
