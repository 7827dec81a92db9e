#include "tests/support/torch_zip_fixtures.hpp"

#include <array>
#include <cstring>

namespace sharelens::testing {
namespace {

class Bytes {
 public:
  template <class T>
  Bytes& le(T value) {
    const auto* p = reinterpret_cast<const std::byte*>(&value);
    m_out.insert(m_out.end(), p, p + sizeof value);
    return *this;
  }
  Bytes& raw(std::string_view s) {
    const auto* p = reinterpret_cast<const std::byte*>(s.data());
    m_out.insert(m_out.end(), p, p + s.size());
    return *this;
  }
  Bytes& raw(const std::vector<std::byte>& b) {
    m_out.insert(m_out.end(), b.begin(), b.end());
    return *this;
  }
  size_t size() const { return m_out.size(); }
  std::vector<std::byte> take() { return std::move(m_out); }

 private:
  std::vector<std::byte> m_out;
};

uint32_t crc32(const std::vector<std::byte>& data) {  // the zip CRC (reflected polynomial 0xEDB88320)
  uint32_t crc = 0xFFFFFFFF;
  for (std::byte b : data) {
    crc ^= static_cast<uint8_t>(b);
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320 & (0 - (crc & 1)));
  }
  return ~crc;
}

// Pickle protocol 2, the opcodes torch.save emits for a state dict.
class Pickle {
 public:
  Pickle() { m_out.le(uint8_t{0x80}).le(uint8_t{2}); }
  Pickle& global(std::string_view module, std::string_view name) {
    m_out.raw("c").raw(module).raw("\n").raw(name).raw("\n");
    return *this;
  }
  Pickle& text(std::string_view s) {
    m_out.raw("X").le(static_cast<uint32_t>(s.size())).raw(s);
    return *this;
  }
  Pickle& integer(int64_t v) {
    m_out.raw("J").le(static_cast<int32_t>(v));
    return *this;
  }
  Pickle& op(char c) {
    m_out.le(static_cast<uint8_t>(c));
    return *this;
  }
  Pickle& tuple(const std::vector<int64_t>& values) {
    op('(');
    for (int64_t v : values) integer(v);
    return op('t');
  }
  std::vector<std::byte> finish() { return op('.').m_out.take(); }

 private:
  Bytes m_out;
};

}  // namespace

std::vector<std::byte> zipBytes(const ZipEntries& entries) {
  Bytes out, central;
  for (const auto& [name, data] : entries) {
    const auto offset = static_cast<uint32_t>(out.size());
    const uint32_t crc = crc32(data), size = static_cast<uint32_t>(data.size());
    const auto nameLength = static_cast<uint16_t>(name.size());
    out.le(uint32_t{0x04034b50}).le(uint16_t{20}).le(uint16_t{0}).le(uint16_t{0}).le(uint32_t{0});
    out.le(crc).le(size).le(size).le(nameLength).le(uint16_t{0}).raw(name).raw(data);
    central.le(uint32_t{0x02014b50}).le(uint16_t{20}).le(uint16_t{20}).le(uint16_t{0}).le(uint16_t{0});
    central.le(uint32_t{0}).le(crc).le(size).le(size).le(nameLength).le(uint16_t{0}).le(uint16_t{0});
    central.le(uint16_t{0}).le(uint16_t{0}).le(uint32_t{0}).le(offset).raw(name);
  }
  const auto directoryOffset = static_cast<uint32_t>(out.size()),
             directorySize = static_cast<uint32_t>(central.size());
  out.raw(central.take());
  const auto count = static_cast<uint16_t>(entries.size());
  out.le(uint32_t{0x06054b50}).le(uint16_t{0}).le(uint16_t{0}).le(count).le(count);
  out.le(directorySize).le(directoryOffset).le(uint16_t{0});
  return out.take();
}

std::vector<std::byte> statePickle(const std::vector<TorchTensor>& tensors) {
  Pickle p;
  p.global("collections", "OrderedDict").op(')').op('R').op('(');
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TorchTensor& t = tensors[i];
    std::vector<int64_t> stride(t.shape.size(), 1);
    for (size_t d = t.shape.size(); d-- > 1;) stride[d - 1] = stride[d] * t.shape[d];
    p.text(t.name).global("torch._utils", "_rebuild_tensor_v2").op('(');
    p.op('(').text("storage").global("torch", "FloatStorage").text(std::to_string(i)).text("cpu");
    p.integer(static_cast<int64_t>(t.values.size())).op('t').op('Q');       // BINPERSID
    p.integer(0).tuple(t.shape).tuple(stride).op(static_cast<char>(0x89));  // offset, size, stride, False
    p.global("collections", "OrderedDict").op(')').op('R');                 // backward hooks
    p.op('t').op('R');
  }
  return p.op('u').finish();
}

std::vector<std::byte> torchZipBytes(const std::vector<TorchTensor>& tensors, const std::string& archive) {
  ZipEntries entries = {{archive + "/data.pkl", statePickle(tensors)}};
  for (size_t i = 0; i < tensors.size(); ++i) {
    std::vector<std::byte> data(tensors[i].values.size() * sizeof(float));
    std::memcpy(data.data(), tensors[i].values.data(), data.size());
    entries.emplace_back(archive + "/data/" + std::to_string(i), std::move(data));
  }
  const std::string version = "3\n";
  entries.emplace_back(
      archive + "/version",
      std::vector<std::byte>(reinterpret_cast<const std::byte*>(version.data()),
                             reinterpret_cast<const std::byte*>(version.data()) + version.size()));
  return zipBytes(entries);
}

}  // namespace sharelens::testing
