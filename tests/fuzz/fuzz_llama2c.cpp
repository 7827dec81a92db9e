// libFuzzer target for the llama2.c reader (core/llama2c) behind Checkpoint::open: the bytes are a .bin file;
// when it opens, every tensor is read as floats (wq and wk through their row order, version 2 through its
// int8 groups and scales), so a layout that lies about its ranges is caught reading out of bounds by ASan.
// Any failure must be a named Error. Seeds: make_fixtures --seeds (every version, tied and untied).
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sharelens::fuzz::openAndReadEveryTensor({reinterpret_cast<const char*>(data), size}, "llama2c",
                                          "model.bin");
  return 0;
}
