// The validating safetensors header parser. It runs nlohmann's SAX parser over the header bytes with a
// small state machine, so a hostile header (a million entries, deep nesting) is rejected while streaming,
// before anything proportional to it is built.
#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <unordered_set>

#include "core/error.hpp"
#include "core/safetensors.hpp"

namespace sharelens {
namespace {

constexpr std::string_view kCorruptHint =
    "the file is corrupt or was written by a faulty exporter; re-download it or re-export it with "
    "safetensors.torch.save_file";

std::string inQuotes(std::string_view s) {
  std::string out = "'";
  out += s;
  out += "'";
  return out;
}

std::string dtypeList() {
  std::string out;
  for (DType d : kAllDTypes) {
    if (!out.empty()) out += " ";
    out += dtypeName(d);
  }
  return out;
}

// Fields of one tensor entry as they stream in.
struct PendingEntry {
  std::string name;
  std::optional<DType> dtype;
  std::optional<std::vector<int64_t>> shape;
  std::optional<std::vector<uint64_t>> offsets;
  std::unordered_set<std::string> seenFields;
};

class HeaderSax {
 public:
  using number_integer_t = nlohmann::json::number_integer_t;
  using number_unsigned_t = nlohmann::json::number_unsigned_t;
  using number_float_t = nlohmann::json::number_float_t;
  using string_t = nlohmann::json::string_t;
  using binary_t = nlohmann::json::binary_t;

  HeaderSax(std::string_view label, const SafetensorsLimits& limits, SafetensorsHeader& out)
      : m_label(label), m_limits(limits), m_out(out) {}

  const std::optional<ErrorDetails>& error() const { return m_error; }

  bool null() { return scalar("null"); }
  bool boolean(bool) { return scalar("a boolean"); }
  bool number_integer(number_integer_t v) {
    if (v >= 0) return number_unsigned(static_cast<number_unsigned_t>(v));
    if (inArray())
      return fail(arrayWhere(), "negative value in " + m_field, "a non-negative integer", std::to_string(v));
    return scalar("a number");
  }
  bool number_unsigned(number_unsigned_t v) {
    if (m_state == State::Shape) {
      if (v > static_cast<uint64_t>(INT64_MAX))
        return fail(arrayWhere(), "shape dimension too large", "at most 2^63-1", std::to_string(v));
      if (m_entry.shape->size() >= m_limits.maxRank)
        return fail(arrayWhere(), "shape has too many dimensions",
                    "at most " + std::to_string(m_limits.maxRank), "more");
      m_entry.shape->push_back(static_cast<int64_t>(v));
      return true;
    }
    if (m_state == State::Offsets) {
      if (m_entry.offsets->size() >= 2)
        return fail(arrayWhere(), "data_offsets has more than two values", "[begin, end]",
                    "3 or more values");
      m_entry.offsets->push_back(v);
      return true;
    }
    return scalar("a number");
  }
  bool number_float(number_float_t, const string_t& text) {
    if (inArray())
      return fail(arrayWhere(), "non-integer value in " + m_field, "a non-negative integer below 2^64", text);
    return scalar("a number");
  }
  bool string(string_t& s) {
    if (m_state == State::Metadata) {
      m_out.metadata[m_key] = s;
      return true;
    }
    if (m_state == State::Entry && m_field == "dtype") {
      m_entry.dtype = parseDType(s);
      if (!m_entry.dtype) return fail(entryWhere(), "unknown dtype", "one of " + dtypeList(), inQuotes(s));
      return true;
    }
    return scalar("a string");
  }
  bool binary(binary_t&) { return scalar("binary data"); }

  bool start_object(std::size_t) {
    switch (m_state) {
      case State::Start:
        m_state = State::Root;
        return true;
      case State::Root:
        if (m_key == "__metadata__") {
          m_state = State::Metadata;
          m_metadataKeys.clear();
          return true;
        }
        m_state = State::Entry;
        return true;
      case State::Entry:
        if (isKnownField(m_field)) return scalar("an object");
        return beginSkip();
      case State::Skip:
        ++m_skipDepth;
        return true;
      default:
        return scalar("an object");
    }
  }
  bool end_object() {
    switch (m_state) {
      case State::Root:
        m_state = State::Done;
        return true;
      case State::Metadata:
        m_state = State::Root;
        return true;
      case State::Entry:
        m_state = State::Root;
        return finishEntry();
      case State::Skip:
        return endSkip();
      default:
        return true;
    }
  }
  bool start_array(std::size_t) {
    if (m_state == State::Entry && m_field == "shape") {
      m_entry.shape.emplace();
      m_state = State::Shape;
      return true;
    }
    if (m_state == State::Entry && m_field == "data_offsets") {
      m_entry.offsets.emplace();
      m_state = State::Offsets;
      return true;
    }
    if (m_state == State::Entry && !isKnownField(m_field)) return beginSkip();
    if (m_state == State::Skip) {
      ++m_skipDepth;
      return true;
    }
    return scalar("an array");
  }
  bool end_array() {
    if (m_state == State::Shape || m_state == State::Offsets) {
      m_state = State::Entry;
      return true;
    }
    if (m_state == State::Skip) return endSkip();
    return true;
  }

  bool key(string_t& k) {
    switch (m_state) {
      case State::Root:
        if (!m_rootKeys.insert(k).second)
          return fail(m_label + ": header", "duplicate key " + inQuotes(k), "each tensor name once",
                      inQuotes(k) + " twice");
        if (k != "__metadata__") {
          if (m_tensorCount >= m_limits.maxTensors)
            return fail(m_label + ": header", "too many tensors",
                        "at most " + std::to_string(m_limits.maxTensors) + " per file",
                        "more than " + std::to_string(m_limits.maxTensors));
          ++m_tensorCount;
          m_entry = PendingEntry{};
          m_entry.name = k;
        }
        m_key = std::move(k);
        return true;
      case State::Metadata:
        if (!m_metadataKeys.insert(k).second)
          return fail(m_label + ": __metadata__", "duplicate key " + inQuotes(k), "each key once",
                      inQuotes(k) + " twice");
        m_key = std::move(k);
        return true;
      case State::Entry:
        if (!m_entry.seenFields.insert(k).second)
          return fail(entryWhere(), "duplicate field " + inQuotes(k), "each field once",
                      inQuotes(k) + " twice");
        // Accepted, as the reference reader accepts it, but said: an exporter that adds fields may mean more.
        if (!isKnownField(k) && m_out.warnings.size() < kMaxWarnings)
          m_out.warnings.push_back("tensor " + inQuotes(m_entry.name) + " has an unknown field " +
                                   inQuotes(k) + " (ignored)");
        m_field = std::move(k);
        return true;
      default:
        return true;  // keys inside skipped values
    }
  }

  bool parse_error(std::size_t position, const std::string& token, const nlohmann::detail::exception& ex) {
    if (m_error) return false;  // our own failure stopped the parse; keep its message
    std::string what = "header is not valid JSON";
    const std::string message = ex.what();
    if (message.find("UTF-8") != std::string::npos || message.find("utf-8") != std::string::npos)
      what = "header is not valid UTF-8 JSON";
    ErrorDetails details{.what = what,
                         .where = m_label + ": header byte " + std::to_string(position),
                         .found = token.empty() ? "end of input" : inQuotes(token.substr(0, 40)),
                         .hint = std::string(kCorruptHint)};
    m_error = details;
    return false;
  }

 private:
  enum class State { Start, Root, Metadata, Entry, Shape, Offsets, Skip, Done };

  static bool isKnownField(std::string_view f) { return f == "dtype" || f == "shape" || f == "data_offsets"; }
  bool inArray() const { return m_state == State::Shape || m_state == State::Offsets; }
  std::string entryWhere() const { return m_label + ": tensor " + inQuotes(m_entry.name); }
  std::string arrayWhere() const { return entryWhere() + " field " + inQuotes(m_field); }

  bool beginSkip() {  // unknown entry fields are ignored, as the reference reader does
    m_skipReturn = m_state;
    m_state = State::Skip;
    m_skipDepth = 1;
    return true;
  }
  bool endSkip() {
    if (--m_skipDepth == 0) m_state = m_skipReturn;
    return true;
  }

  // A scalar, or a container where one is not allowed.
  bool scalar(const std::string& kind) {
    switch (m_state) {
      case State::Start:
        return fail(m_label + ": header", "header is not a JSON object", "an object", kind);
      case State::Root:
        if (m_key == "__metadata__")
          return fail(m_label + ": __metadata__", "__metadata__ must be an object", "an object", kind);
        return fail(entryWhere(), "tensor entry must be an object", "{dtype, shape, data_offsets}", kind);
      case State::Metadata:
        return fail(m_label + ": __metadata__ key " + inQuotes(m_key), "metadata values must be strings",
                    "a string", kind);
      case State::Entry:
        if (isKnownField(m_field))
          return fail(entryWhere() + " field " + inQuotes(m_field), "wrong JSON type",
                      m_field == "dtype" ? "a string" : "an array of integers", kind);
        return true;  // unknown field with a scalar value: ignored
      case State::Shape:
      case State::Offsets:
        return fail(arrayWhere(), "wrong JSON type in " + m_field, "non-negative integers", kind);
      case State::Skip:
        return true;
      case State::Done:
        return true;
    }
    return true;
  }

  bool finishEntry() {
    const std::string where = entryWhere();
    if (!m_entry.dtype)
      return fail(where, "missing field 'dtype'", "dtype, shape and data_offsets", "no dtype");
    if (!m_entry.shape)
      return fail(where, "missing field 'shape'", "dtype, shape and data_offsets", "no shape");
    if (!m_entry.offsets)
      return fail(where, "missing field 'data_offsets'", "dtype, shape and data_offsets", "no data_offsets");
    const auto& offsets = *m_entry.offsets;
    if (offsets.size() != 2)
      return fail(where + " field 'data_offsets'", "data_offsets must have two values", "[begin, end]",
                  std::to_string(offsets.size()) + " value(s)");
    if (offsets[0] > offsets[1])
      return fail(where + " field 'data_offsets'", "begin is after end", "begin <= end",
                  "[" + std::to_string(offsets[0]) + ", " + std::to_string(offsets[1]) + "]");
    uint64_t numel = 1;
    for (int64_t dim : *m_entry.shape) {
      if (__builtin_mul_overflow(numel, static_cast<uint64_t>(dim), &numel))
        return fail(where, "element count overflows 64 bits", "a product of dims below 2^64",
                    shapeToString(*m_entry.shape), "the shape is corrupt");
    }
    uint64_t bytes = 0;
    if (__builtin_mul_overflow(numel, dtypeSize(*m_entry.dtype), &bytes))
      return fail(where, "byte size overflows 64 bits", "numel x dtype size below 2^64",
                  shapeToString(*m_entry.shape) + " " + std::string(dtypeName(*m_entry.dtype)));
    const uint64_t rangeBytes = offsets[1] - offsets[0];
    if (bytes != rangeBytes)
      return fail(where, "byte range does not match shape x dtype",
                  std::to_string(bytes) + " bytes for " + shapeToString(*m_entry.shape) + " " +
                      std::string(dtypeName(*m_entry.dtype)),
                  std::to_string(rangeBytes) + " bytes in data_offsets [" + std::to_string(offsets[0]) +
                      ", " + std::to_string(offsets[1]) + "]");
    TensorInfo info;
    info.name = std::move(m_entry.name);
    info.dtype = *m_entry.dtype;
    info.shape = std::move(*m_entry.shape);
    info.numel = numel;
    info.dataBegin = offsets[0];
    info.dataEnd = offsets[1];
    m_out.tensors.push_back(std::move(info));
    return true;
  }

  bool fail(std::string where, std::string what, std::string expected, std::string found,
            std::string hint = std::string(kCorruptHint)) {
    if (!m_error) m_error = ErrorDetails{what, where, expected, found, hint};
    return false;
  }

  std::string m_label;
  const SafetensorsLimits& m_limits;
  SafetensorsHeader& m_out;
  std::optional<ErrorDetails> m_error;
  State m_state = State::Start;
  State m_skipReturn = State::Root;
  int m_skipDepth = 0;
  std::string m_key;    // current root or metadata key
  std::string m_field;  // current field inside a tensor entry
  PendingEntry m_entry;
  size_t m_tensorCount = 0;
  std::unordered_set<std::string> m_rootKeys;
  std::unordered_set<std::string> m_metadataKeys;
};

// Checks that the byte ranges tile [0, dataSize) exactly.
void checkRangesTileData(std::vector<TensorInfo>& tensors, uint64_t dataSize, const std::string& label) {
  std::sort(tensors.begin(), tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
    return a.dataBegin != b.dataBegin ? a.dataBegin < b.dataBegin : a.dataEnd < b.dataEnd;
  });
  uint64_t expectedBegin = 0;
  const TensorInfo* previous = nullptr;
  for (const TensorInfo& t : tensors) {
    if (t.dataBegin < expectedBegin)
      throw Error({.what = "data ranges overlap",
                   .where = label + ": tensor '" + t.name + "'",
                   .expected = "begin >= " + std::to_string(expectedBegin) +
                               (previous ? " (end of '" + previous->name + "')" : ""),
                   .found = "begin " + std::to_string(t.dataBegin),
                   .hint = std::string(kCorruptHint)});
    if (t.dataBegin > expectedBegin)
      throw Error({.what = "gap between data ranges",
                   .where = label + ": tensor '" + t.name + "'",
                   .expected = "begin " + std::to_string(expectedBegin) +
                               (previous ? " (end of '" + previous->name + "')" : " (start of data)"),
                   .found = "begin " + std::to_string(t.dataBegin),
                   .hint = std::string(kCorruptHint)});
    expectedBegin = t.dataEnd;
    previous = &t;
  }
  if (expectedBegin > dataSize)
    throw Error({.what = "tensor data runs past the end of the file",
                 .where = label + (previous ? ": tensor '" + previous->name + "'" : std::string()),
                 .expected = "data section of " + std::to_string(dataSize) + " bytes",
                 .found = "ranges ending at byte " + std::to_string(expectedBegin),
                 .hint = "the file is truncated (interrupted download or copy?); fetch it again"});
  if (expectedBegin < dataSize)
    throw Error({.what = "trailing bytes after the last tensor",
                 .where = label,
                 .expected = std::to_string(expectedBegin) + " data bytes",
                 .found = std::to_string(dataSize) + " (" + std::to_string(dataSize - expectedBegin) +
                          " unaccounted for)",
                 .hint = std::string(kCorruptHint)});
}

}  // namespace

SafetensorsHeader parseSafetensorsHeader(std::span<const std::byte> file, std::string_view label,
                                         const SafetensorsLimits& limits) {
  const std::string name(label);
  if (file.size() < 8)
    throw Error({.what = "file too short for a safetensors header",
                 .where = name,
                 .expected = "at least 8 bytes (header length)",
                 .found = std::to_string(file.size()) + " bytes",
                 .hint = "the file is truncated or not a safetensors file"});
  uint64_t jsonBytes = 0;
  std::memcpy(&jsonBytes, file.data(), 8);
  if (jsonBytes > limits.maxHeaderBytes)
    throw Error({.what = "header length over the limit",
                 .where = name,
                 .expected = "at most " + std::to_string(limits.maxHeaderBytes) + " bytes",
                 .found = std::to_string(jsonBytes) + " bytes",
                 .hint = "this is not a safetensors file, or its first 8 bytes are corrupt"});
  if (jsonBytes > file.size() - 8)
    throw Error({.what = "header runs past the end of the file",
                 .where = name,
                 .expected = "header length <= " + std::to_string(file.size() - 8) + " bytes",
                 .found = std::to_string(jsonBytes) + " bytes",
                 .hint = "the file is truncated (interrupted download or copy?); fetch it again"});
  const char* begin = reinterpret_cast<const char*>(file.data() + 8);
  const char* end = begin + jsonBytes;
  if (jsonBytes == 0 || *begin != '{')
    throw Error({.what = "header is not a JSON object",
                 .where = name + ": header",
                 .expected = "'{' at byte 8",
                 .found = jsonBytes == 0 ? "an empty header" : "byte " + std::to_string(uint8_t(*begin)),
                 .hint = "this is not a safetensors file"});

  // The JSON parser stops at a NUL byte as if the input ended there, so anything after one would go unread.
  // JSON has no place for a raw NUL (inside a string it must be escaped), and the reference reader refuses
  // it.
  if (const void* nul = std::memchr(begin, '\0', jsonBytes))
    throw Error({.what = "header holds a NUL byte",
                 .where = name + ": header byte " + std::to_string(static_cast<const char*>(nul) - begin),
                 .expected = "JSON text padded with spaces",
                 .found = "byte 0",
                 .hint = std::string(kCorruptHint)});

  SafetensorsHeader header;
  header.jsonBytes = jsonBytes;
  header.dataOffset = 8 + jsonBytes;
  HeaderSax sax(name, limits, header);
  const bool ok = nlohmann::json::sax_parse(begin, end, &sax, nlohmann::json::input_format_t::json,
                                            /*strict=*/true, /*ignore_comments=*/false);
  if (!ok || sax.error()) {
    if (sax.error()) throw Error(*sax.error());
    throw Error(
        {.what = "header is not valid JSON", .where = name + ": header", .hint = std::string(kCorruptHint)});
  }
  checkRangesTileData(header.tensors, file.size() - header.dataOffset, name);
  return header;
}

std::string shapeToString(std::span<const int64_t> shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

}  // namespace sharelens
