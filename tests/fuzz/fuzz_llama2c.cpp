// libFuzzer target for the llama2.c reader (core/llama2c) behind Checkpoint::open: the bytes are a .bin file;
// when it opens, every tensor is read as floats (wq and wk through their row order, version 2 through its
// int8 groups and scales), so a layout that lies about its ranges is caught reading out of bounds by ASan.
// Any failure must be a named Error. Seeds: make_fixtures --seeds (every version, tied and untied).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/checkpoint.hpp"
#include "core/error.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace sl = sharelens;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto file = sl::fuzz::scratch("llama2c") / "model.bin";
  sl::fuzz::writeFile(file, {reinterpret_cast<const char*>(data), size});
  try {
    const auto ckpt = sl::Checkpoint::open(file);
    for (const std::string& name : ckpt->tensorNames())
      if (ckpt->at(name).info->numel <= (1u << 16)) (void)ckpt->readFloat(name);
  } catch (const sl::Error&) {
  }
  return 0;
}
