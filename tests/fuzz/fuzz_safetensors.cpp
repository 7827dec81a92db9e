// libFuzzer target for the safetensors header parser and, when it accepts, the float conversion of every
// tensor (so a header that lies about its ranges would be caught reading out of bounds by ASan).
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/error.hpp"
#include "core/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> file(reinterpret_cast<const std::byte*>(data), size);
  try {
    const sharelens::SafetensorsHeader header = sharelens::parseSafetensorsHeader(file, "fuzz.safetensors");
    std::vector<float> out;
    for (const sharelens::TensorInfo& t : header.tensors) {
      if (t.numel > (1u << 16)) continue;
      out.resize(t.numel);
      sharelens::convertToFloat(t.dtype, file.data() + header.dataOffset + t.dataBegin, t.numel, out.data());
    }
  } catch (const sharelens::Error&) {
  }
  return 0;
}
