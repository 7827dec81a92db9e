// Safetensors (https://github.com/huggingface/safetensors) reading and writing.
//
// File layout: u64 little-endian N | N bytes of UTF-8 JSON header | data section.
// The header maps tensor names to {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to the
// data section) plus an optional "__metadata__" string->string map.
//
// parseSafetensorsHeader validates everything before anything is allocated from it or read through it:
// header size limits, strict JSON (valid UTF-8, no duplicate keys), known dtypes, shape x dtype computed
// with overflow checks and equal to the byte range, ranges contiguous from 0 with no gap or overlap, and the
// last range ending exactly at the end of the file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/dtype.hpp"
#include "core/ggml_blocks.hpp"
#include "core/mapped_file.hpp"

namespace sharelens {

// How a tensor of another format is stored when it is not plain row-major data of its dtype (llama2.c and
// GGUF checkpoints): what SafetensorsFile::readFloat undoes. Shared by the tensors that use it.
struct StoredLayout {
  // Row r as presented is stored row rowOrder[r] (empty: the same order). llama2.c keeps Meta's interleaved
  // RoPE pairs in wq and wk; presented in Hugging Face's half-split order, they run on the Llama forward.
  std::shared_ptr<const std::vector<int64_t>> rowOrder;  // shared by the layers that use it
  // Q8_0 (llama2.c version 2): int8 values at the tensor's bytes, and one float32 scale per `groupSize`
  // consecutive stored values at `scalesBegin` (relative to the data section): value = int8 * scale.
  int64_t groupSize = 0;
  uint64_t scalesBegin = 0;
  // GGUF: the tensor's bytes are ggml blocks (core/ggml_blocks.hpp), each row a whole number of them.
  GgmlBlocks blocks = GgmlBlocks::None;
  // Added to every value once decoded: llama.cpp stores Gemma's RMSNorm weights as 1 + w (GGUF), -1 here
  // presents them as Hugging Face's w.
  float offset = 0;
};

// Meta's interleaved RoPE rows (llama2.c; llama.cpp's "llama" GGUF files) presented in Hugging Face's
// rotate-half order, per head of `headSize` rows: presented row h*hd + j*hd/2 + i is stored row
// h*hd + 2i + j (transformers' convert_llama_weights_to_hf.py `permute`, undone).
std::vector<int64_t> rotateHalfRowOrder(int64_t heads, int64_t headSize);

struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;  // all dims >= 0
  uint64_t numel = 0;          // product of shape (1 for a scalar)
  uint64_t dataBegin = 0;      // byte offsets relative to the data section, [dataBegin, dataEnd)
  uint64_t dataEnd = 0;
  std::shared_ptr<const StoredLayout> stored;  // null: plain little-endian `dtype` elements, row-major

  uint64_t byteSize() const { return dataEnd - dataBegin; }
  int64_t dim(size_t i) const {  // a named Error (not std::out_of_range) past the tensor's rank
    if (i >= shape.size()) throwRankError(i);
    return shape[i];
  }
  [[noreturn]] void throwRankError(size_t i) const;
  size_t rank() const { return shape.size(); }
};

struct SafetensorsLimits {
  uint64_t maxHeaderBytes = 100'000'000;  // the reference implementation's limit
  size_t maxTensors = 200'000;            // far above any real shard, far below a hostile header
  size_t maxRank = 32;
};

struct SafetensorsHeader {
  std::vector<TensorInfo> tensors;  // in data order (sorted by dataBegin)
  std::map<std::string, std::string> metadata;
  uint64_t jsonBytes = 0;             // N
  uint64_t dataOffset = 0;            // 8 + N: where the data section starts in the file
  std::vector<std::string> warnings;  // accepted oddities (unknown entry fields), at most kMaxWarnings
};
inline constexpr size_t kMaxWarnings = 20;

// `file` is the whole file; only its first 8 + N bytes are read. `label` names the file in errors.
// Throws sharelens::Error on any violation.
SafetensorsHeader parseSafetensorsHeader(std::span<const std::byte> file, std::string_view label,
                                         const SafetensorsLimits& limits = {});

// A validated, memory-mapped safetensors file. Tensor data is read lazily, on request.
class SafetensorsFile {
 public:
  static std::unique_ptr<SafetensorsFile> open(const std::filesystem::path& path,
                                               const SafetensorsLimits& limits = {});
  // The tensors of a file of another format, at places its reader worked out and checked against the file's
  // size (core/llama2c.hpp): read through the same interface, lazily.
  static std::unique_ptr<SafetensorsFile> fromLayout(MappedFile file, SafetensorsHeader layout);

  const std::filesystem::path& path() const { return m_file.path(); }
  uint64_t fileSize() const { return m_file.size(); }
  const std::vector<TensorInfo>& tensors() const { return m_header.tensors; }
  const std::map<std::string, std::string>& metadata() const { return m_header.metadata; }
  const std::vector<std::string>& warnings() const { return m_header.warnings; }
  const TensorInfo* find(std::string_view name) const;  // nullptr when absent
  const TensorInfo& at(std::string_view name) const;    // throws a named Error when absent

  // Raw little-endian bytes of a plain tensor, possibly unaligned: copy, never reinterpret. A tensor with a
  // StoredLayout has no such bytes (a named Error): read it with readFloat.
  std::span<const std::byte> bytes(const TensorInfo& tensor) const;

  // Converts elements [first, first + out.size()) of `tensor` (row-major) to float.
  void readFloat(const TensorInfo& tensor, uint64_t first, std::span<float> out) const;
  std::vector<float> readFloat(const TensorInfo& tensor) const;
  void adviseSequential(const TensorInfo& tensor) const;
  void releasePages(const TensorInfo& tensor) const;  // MappedFile::release of the tensor's bytes

 private:
  SafetensorsFile(MappedFile file, SafetensorsHeader header);
  void readStored(const TensorInfo& tensor, uint64_t first, std::span<float> out) const;
  MappedFile m_file;
  SafetensorsHeader m_header;
  std::unordered_map<std::string_view, size_t> m_index;  // name -> position in m_header.tensors
};

// ---- writing -------------------------------------------------------------------------------------------

// A tensor to write: `data` must hold numel(shape) * dtypeSize(dtype) bytes and outlive the write call.
struct TensorWrite {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::span<const std::byte> data;
};

// A tensor that owns its encoded bytes, for callers that build tensors from floats.
struct EncodedTensor {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<std::byte> bytes;

  static EncodedTensor fromFloats(std::string name, DType dtype, std::vector<int64_t> shape,
                                  std::span<const float> values);
  TensorWrite view() const { return {name, dtype, shape, bytes}; }
};

// Writes atomically (temp file, fsync, rename, fsync directory): readers see the old file or the new one,
// never a torn one. Tensors are laid out in the given order; the header is padded to 8 bytes.
void writeSafetensors(const std::filesystem::path& path, std::span<const TensorWrite> tensors,
                      const std::map<std::string, std::string>& metadata = {});
void writeSafetensors(const std::filesystem::path& path, std::span<const EncodedTensor> tensors,
                      const std::map<std::string, std::string>& metadata = {});

// "[768, 2304]"
std::string shapeToString(std::span<const int64_t> shape);

}  // namespace sharelens
