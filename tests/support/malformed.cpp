#include "tests/support/malformed.hpp"

#include <cstdint>
#include <cstring>

namespace sharelens::testing {
namespace {

// A valid header for three F32 tensors: a [2,3] (24 bytes), b [4] (16 bytes), c [] (4 bytes).
const char* kValidHeader =
    R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
    R"("b":{"dtype":"F32","shape":[4],"data_offsets":[24,40]},"c":{"dtype":"F32","shape":[],"data_offsets":[40,44]}})";

std::string tensorEntry(const std::string& name, const std::string& dtype, const std::string& shape,
                        uint64_t begin, uint64_t end) {
  return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":[" +
         std::to_string(begin) + "," + std::to_string(end) + "]}";
}

}  // namespace

std::vector<std::byte> makeSafetensorsBytes(const std::string& header, size_t dataBytes) {
  std::vector<std::byte> out(8 + header.size() + dataBytes, std::byte{0});
  const uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  std::memcpy(out.data() + 8, header.data(), header.size());
  for (size_t i = 0; i < dataBytes; ++i) out[8 + header.size() + i] = static_cast<std::byte>(i * 7 + 1);
  return out;
}

std::vector<std::byte> validSafetensorsBytes() {
  return makeSafetensorsBytes(kValidHeader, 44);
}

std::vector<MalformedCase> malformedCorpus() {
  std::vector<MalformedCase> cases;
  auto add = [&](std::string name, std::vector<std::byte> bytes, std::vector<std::string> mention) {
    cases.push_back({std::move(name), std::move(bytes), std::move(mention)});
  };
  auto withHeader = [&](std::string name, const std::string& header, size_t data,
                        std::vector<std::string> mention) {
    add(std::move(name), makeSafetensorsBytes(header, data), std::move(mention));
  };

  // Truncation at every byte of the length prefix and the header.
  const std::vector<std::byte> valid = validSafetensorsBytes();
  const size_t headerEnd = 8 + std::strlen(kValidHeader);
  for (size_t cut = 0; cut < headerEnd; ++cut)
    add("truncated_at_" + std::to_string(cut), std::vector<std::byte>(valid.begin(), valid.begin() + cut),
        {cut < 8 ? "too short" : "past the end of the file"});
  add("truncated_in_data", std::vector<std::byte>(valid.begin(), valid.end() - 3), {"past the end", "'c'"});

  {  // header length past EOF
    auto bytes = valid;
    const uint64_t n = 5000;
    std::memcpy(bytes.data(), &n, 8);
    add("header_length_past_eof", bytes, {"past the end of the file", "5000"});
  }
  {  // declared header over 100 MB
    auto bytes = valid;
    const uint64_t n = 200'000'000;
    std::memcpy(bytes.data(), &n, 8);
    add("header_over_100MB", bytes, {"over the limit", "200000000"});
  }
  withHeader("invalid_json", R"({"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]})", 24,
             {"not valid JSON"});
  withHeader("invalid_json_garbage", R"({"a":{"dtype":"F32",,}})", 0, {"not valid JSON"});
  withHeader("not_an_object", R"([1,2,3])", 0, {"not a JSON object"});
  withHeader("empty_header", "", 0, {"not a JSON object"});
  withHeader("trailing_json", std::string(kValidHeader) + "{}", 44, {"not valid JSON"});
  withHeader("junk_after_json", std::string(kValidHeader) + "xyz", 44,
             {"not valid JSON"});  // the reference refuses it too
  // A NUL ends the JSON parser's input: the junk after it would go unread (found by the bad-input probe).
  withHeader("junk_after_nul", std::string(kValidHeader) + std::string("  \0 xyz", 7), 44, {"NUL byte"});
  withHeader("nul_padding", std::string(kValidHeader) + std::string(3, '\0'), 44, {"NUL byte"});
  withHeader("nan_literal_shape", "{" + tensorEntry("w", "F32", "[NaN]", 0, 4) + "}", 4, {"not valid JSON"});
  withHeader("shape_not_array", "{" + tensorEntry("w", "F32", "4", 0, 16) + "}", 16, {"'w'"});
  withHeader("non_utf8", "{\"a\xff\xfe\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
             {"UTF-8"});
  withHeader("duplicate_tensor",
             "{" + tensorEntry("a", "F32", "[1]", 0, 4) + "," + tensorEntry("a", "F32", "[1]", 4, 8) + "}", 8,
             {"duplicate key 'a'"});
  withHeader("duplicate_field", R"({"a":{"dtype":"F32","dtype":"F16","shape":[1],"data_offsets":[0,4]}})", 4,
             {"duplicate field 'dtype'", "'a'"});
  withHeader("duplicate_metadata_key", R"({"__metadata__":{"k":"1","k":"2"}})", 0, {"duplicate key 'k'"});
  withHeader("metadata_not_string", R"({"__metadata__":{"k":1}})", 0, {"metadata values must be strings"});
  withHeader("metadata_not_object", R"({"__metadata__":"x"})", 0, {"__metadata__ must be an object"});
  withHeader("entry_not_object", R"({"a":[1,2]})", 0, {"tensor entry must be an object", "'a'"});
  withHeader("unknown_dtype", "{" + tensorEntry("w", "F8_E9M9", "[2]", 0, 2) + "}", 2,
             {"unknown dtype", "F8_E9M9", "'w'"});
  withHeader("dtype_not_string", R"({"w":{"dtype":4,"shape":[1],"data_offsets":[0,4]}})", 4,
             {"wrong JSON type", "'w'"});
  withHeader("missing_dtype", R"({"w":{"shape":[1],"data_offsets":[0,4]}})", 4,
             {"missing field 'dtype'", "'w'"});
  withHeader("missing_offsets", R"({"w":{"dtype":"F32","shape":[1]}})", 4, {"missing field 'data_offsets'"});
  withHeader("negative_shape", "{" + tensorEntry("w", "F32", "[-2,3]", 0, 24) + "}", 24, {"negative", "'w'"});
  withHeader("float_shape", "{" + tensorEntry("w", "F32", "[2.5]", 0, 8) + "}", 8, {"non-integer", "'w'"});
  withHeader("huge_shape_literal", "{" + tensorEntry("w", "F32", "[99999999999999999999999]", 0, 8) + "}", 8,
             {"non-integer", "'w'"});
  withHeader("shape_overflow_64bit", "{" + tensorEntry("w", "F32", "[4294967296,4294967296,16]", 0, 8) + "}",
             8, {"overflows 64 bits", "'w'"});
  withHeader("bytes_overflow_64bit", "{" + tensorEntry("w", "F64", "[4611686018427387904]", 0, 8) + "}", 8,
             {"overflows 64 bits", "'w'"});
  {
    std::string shape = "[1";
    for (int i = 1; i < 40; ++i) shape += ",1";
    withHeader("shape_too_deep", "{" + tensorEntry("w", "F32", shape + "]", 0, 4) + "}", 4,
               {"too many dimensions"});
  }
  withHeader("offsets_three_values", R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}})", 8,
             {"more than two values"});
  withHeader("offsets_one_value", R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", 4,
             {"two values"});
  withHeader("offsets_reversed", "{" + tensorEntry("w", "F32", "[1]", 8, 4) + "}", 8, {"begin is after end"});
  withHeader("offsets_mismatch_shape", "{" + tensorEntry("w", "F32", "[2,3]", 0, 20) + "}", 20,
             {"does not match shape x dtype", "24 bytes", "20 bytes", "'w'"});
  withHeader("offsets_overlap",
             "{" + tensorEntry("a", "F32", "[2]", 0, 8) + "," + tensorEntry("b", "F32", "[2]", 4, 12) + "}",
             12, {"overlap", "'b'", "'a'"});
  withHeader("offsets_gap",
             "{" + tensorEntry("a", "F32", "[2]", 0, 8) + "," + tensorEntry("b", "F32", "[2]", 12, 20) + "}",
             20, {"gap", "'b'"});
  withHeader("offsets_not_from_zero", "{" + tensorEntry("a", "F32", "[2]", 4, 12) + "}", 12,
             {"gap", "start of data"});
  withHeader("offsets_past_end", "{" + tensorEntry("a", "F32", "[4]", 0, 16) + "}", 8,
             {"past the end", "'a'"});
  withHeader("trailing_bytes", "{" + tensorEntry("a", "F32", "[2]", 0, 8) + "}", 12,
             {"trailing bytes", "4 unaccounted"});
  {  // 1,000,000 tensor entries: rejected while streaming, before the data check
    std::string header = "{";
    header.reserve(1'000'000 * 60);
    for (int i = 0; i < 1'000'000; ++i) {
      if (i) header += ',';
      header += tensorEntry("t" + std::to_string(i), "F32", "[0]", 0, 0);
    }
    header += "}";
    withHeader("million_tensors", header, 0, {"too many tensors"});
  }
  return cases;
}

}  // namespace sharelens::testing
