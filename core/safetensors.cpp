#include "core/safetensors.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <unordered_set>

#include "core/atomic_file.hpp"
#include "core/error.hpp"

namespace sharelens {

std::unique_ptr<SafetensorsFile> SafetensorsFile::open(const std::filesystem::path& path,
                                                       const SafetensorsLimits& limits) {
  MappedFile file = MappedFile::open(path);
  SafetensorsHeader header = parseSafetensorsHeader(file.bytes(), path.string(), limits);
  file.adviseNormal();
  return std::unique_ptr<SafetensorsFile>(new SafetensorsFile(std::move(file), std::move(header)));
}

std::unique_ptr<SafetensorsFile> SafetensorsFile::fromLayout(MappedFile file, SafetensorsHeader layout) {
  file.adviseNormal();
  return std::unique_ptr<SafetensorsFile>(new SafetensorsFile(std::move(file), std::move(layout)));
}

SafetensorsFile::SafetensorsFile(MappedFile file, SafetensorsHeader header)
    : m_file(std::move(file)), m_header(std::move(header)) {
  m_index.reserve(m_header.tensors.size());
  for (size_t i = 0; i < m_header.tensors.size(); ++i) m_index.emplace(m_header.tensors[i].name, i);
}

const TensorInfo* SafetensorsFile::find(std::string_view name) const {
  auto it = m_index.find(name);
  return it == m_index.end() ? nullptr : &m_header.tensors[it->second];
}

const TensorInfo& SafetensorsFile::at(std::string_view name) const {
  if (const TensorInfo* t = find(name)) return *t;
  throw Error({.what = "tensor not found",
               .where = path().string() + ": tensor '" + std::string(name) + "'",
               .hint = "run `sharelens inspect " + path().string() + "` to list the tensors it has"});
}

std::span<const std::byte> SafetensorsFile::bytes(const TensorInfo& tensor) const {
  if (tensor.stored)
    throw Error({.what = "tensor is not stored as plain elements",
                 .where = path().string() + ": tensor '" + tensor.name + "'",
                 .found = tensor.stored->groupSize > 0 ? "Q8_0 groups" : "rows in another order",
                 .hint = "read it as floats (this is a bug in the caller)"});
  return m_file.bytes().subspan(m_header.dataOffset + tensor.dataBegin, tensor.byteSize());
}

void SafetensorsFile::readFloat(const TensorInfo& tensor, uint64_t first, std::span<float> out) const {
  if (first > tensor.numel || out.size() > tensor.numel - first)
    throw Error({.what = "element range outside tensor",
                 .where = path().string() + ": tensor '" + tensor.name + "'",
                 .expected = "elements within [0, " + std::to_string(tensor.numel) + ")",
                 .found = "[" + std::to_string(first) + ", " + std::to_string(first + out.size()) + ")"});
  if (tensor.stored) return readStored(tensor, first, out);
  const size_t elementSize = dtypeSize(tensor.dtype);
  convertToFloat(tensor.dtype, bytes(tensor).data() + first * elementSize, out.size(), out.data());
}

// Elements [first, first + out.size()) as presented: row by row, each from its stored row, dequantised.
void SafetensorsFile::readStored(const TensorInfo& tensor, uint64_t first, std::span<float> out) const {
  const StoredLayout& s = *tensor.stored;
  // A vector is one row, unless its elements are reordered (a llama GGUF's q and k biases): then one row
  // per element.
  const uint64_t rows = s.rowOrder                ? s.rowOrder->size()
                        : tensor.shape.size() < 2 ? 1
                                                  : static_cast<uint64_t>(tensor.shape[0]);
  if (out.empty() || rows == 0) return;
  const uint64_t rowLength = tensor.numel / rows;
  const std::byte* data = m_file.bytes().data() + m_header.dataOffset + tensor.dataBegin;
  const std::byte* scales = m_file.bytes().data() + m_header.dataOffset + s.scalesBegin;
  for (uint64_t i = 0; i < out.size();) {
    const uint64_t element = first + i, row = element / rowLength, column = element % rowLength;
    const uint64_t n = std::min<uint64_t>(rowLength - column, out.size() - i);
    const uint64_t storedRow = s.rowOrder ? static_cast<uint64_t>((*s.rowOrder)[row]) : row;
    const uint64_t at = storedRow * rowLength + column;  // the stored flat index
    if (s.blocks != GgmlBlocks::None) {
      decodeGgmlValues(s.blocks, data, at, n, out.data() + i);
    } else if (s.groupSize > 0) {
      const auto group = static_cast<uint64_t>(s.groupSize);
      for (uint64_t k = 0; k < n; ++k) {
        float scale;
        std::memcpy(&scale, scales + (at + k) / group * sizeof(float), sizeof scale);
        out[i + k] = static_cast<float>(static_cast<int8_t>(data[at + k])) * scale;
      }
    } else {
      convertToFloat(tensor.dtype, data + at * dtypeSize(tensor.dtype), n, out.data() + i);
    }
    if (s.offset != 0)
      for (uint64_t k = 0; k < n; ++k) out[i + k] += s.offset;
    i += n;
  }
}

std::vector<float> SafetensorsFile::readFloat(const TensorInfo& tensor) const {
  std::vector<float> out(tensor.numel);
  readFloat(tensor, 0, out);
  return out;
}

void SafetensorsFile::adviseSequential(const TensorInfo& tensor) const {
  m_file.adviseSequential(m_header.dataOffset + tensor.dataBegin, tensor.byteSize());
}

void SafetensorsFile::releasePages(const TensorInfo& tensor) const {
  m_file.release(m_header.dataOffset + tensor.dataBegin, tensor.byteSize());
}

std::vector<int64_t> rotateHalfRowOrder(int64_t heads, int64_t headSize) {
  std::vector<int64_t> order(static_cast<size_t>(heads * headSize));
  const int64_t half = headSize / 2;
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t i = 0; i < half; ++i)
        order[static_cast<size_t>(h * headSize + j * half + i)] = h * headSize + 2 * i + j;
  return order;
}

EncodedTensor EncodedTensor::fromFloats(std::string name, DType dtype, std::vector<int64_t> shape,
                                        std::span<const float> values) {
  EncodedTensor t{std::move(name), dtype, std::move(shape), {}};
  t.bytes.resize(values.size() * dtypeSize(dtype));
  convertFromFloat(dtype, values, t.bytes.data());
  return t;
}

void TensorInfo::throwRankError(size_t i) const {
  throw Error({.what = "tensor has fewer dimensions than its role needs",
               .where = "tensor '" + name + "'",
               .expected = "at least " + std::to_string(i + 1) + " dimensions",
               .found = "shape " + shapeToString(shape),
               .hint = "the checkpoint is corrupt or the tensor belongs to another architecture"});
}

void writeSafetensors(const std::filesystem::path& path, std::span<const TensorWrite> tensors,
                      const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::unordered_set<std::string_view> names;
  uint64_t offset = 0;
  for (const TensorWrite& t : tensors) {
    const std::string where = path.string() + ": tensor '" + t.name + "'";
    if (t.name == "__metadata__" || !names.insert(t.name).second)
      throw Error({.what = "duplicate or reserved tensor name",
                   .where = where,
                   .hint = "give every tensor a unique name"});
    uint64_t numel = 1;
    for (int64_t d : t.shape) {
      if (d < 0) throw Error({.what = "negative dimension", .where = where, .found = shapeToString(t.shape)});
      numel *= static_cast<uint64_t>(d);
    }
    const uint64_t bytes = numel * dtypeSize(t.dtype);
    if (bytes != t.data.size())
      throw Error({.what = "data size does not match shape x dtype",
                   .where = where,
                   .expected = std::to_string(bytes) + " bytes",
                   .found = std::to_string(t.data.size()) + " bytes"});
    header[t.name] = {{"dtype", std::string(dtypeName(t.dtype))},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string json;
  try {
    json = header.dump();
  } catch (const nlohmann::json::exception&) {  // the only failure of dump(): a string that is not UTF-8
    throw Error({.what = "a tensor name or metadata string is not valid UTF-8",
                 .where = path.string(),
                 .expected = "UTF-8 names (the format's header is JSON)",
                 .hint = "rename the tensor"});
  }
  json.append((8 - json.size() % 8) % 8, ' ');  // keep the data section 8-byte aligned
  const uint64_t jsonBytes = json.size();

  AtomicFile file(path);
  file.write(&jsonBytes, 8);
  file.write(json);
  for (const TensorWrite& t : tensors) file.write(t.data.data(), t.data.size());
  file.commit();
}

void writeSafetensors(const std::filesystem::path& path, std::span<const EncodedTensor> tensors,
                      const std::map<std::string, std::string>& metadata) {
  std::vector<TensorWrite> views;
  views.reserve(tensors.size());
  for (const EncodedTensor& t : tensors) views.push_back(t.view());
  writeSafetensors(path, views, metadata);
}

}  // namespace sharelens
