// libFuzzer target for the PyTorch zip reader (core/torch_zip) behind Checkpoint::open: the bytes are a
// .bin file (the zip directory and the restricted unpickler); when it opens, every tensor is read, so a
// layout that lies about its storage is caught reading out of bounds by ASan. Any failure must be a named
// Error. Seeds: make_fixtures --seeds (our own writer's files).
#include <cstddef>
#include <cstdint>

#include "core/checkpoint.hpp"
#include "core/error.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace sl = sharelens;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto file = sl::fuzz::scratch("torch-zip") / "pytorch_model.bin";
  sl::fuzz::writeFile(file, {reinterpret_cast<const char*>(data), size});
  try {
    const auto ckpt = sl::Checkpoint::open(file);
    for (const std::string& name : ckpt->tensorNames())
      if (ckpt->at(name).info->numel <= (1u << 16)) (void)ckpt->readFloat(name);
  } catch (const sl::Error&) {
  }
  return 0;
}
