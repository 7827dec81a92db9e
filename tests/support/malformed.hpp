// The corpus of malformed safetensors files from issue #2: each case is the bytes of a file and what its
// error must say. Used by the unit tests (also under ASan+UBSan) and as the fuzzer's seed corpus.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace sharelens::testing {

struct MalformedCase {
  std::string name;                      // short id, also the seed file name
  std::vector<std::byte> bytes;          // the whole file
  std::vector<std::string> mustMention;  // substrings the error message must contain
};

std::vector<std::byte> validSafetensorsBytes();  // a small well-formed file (3 tensors, metadata)
std::vector<MalformedCase> malformedCorpus();    // every case, including truncation at each header byte

// u64 header length + header text (+ `dataBytes` zero bytes of data).
std::vector<std::byte> makeSafetensorsBytes(const std::string& header, size_t dataBytes);

}  // namespace sharelens::testing
