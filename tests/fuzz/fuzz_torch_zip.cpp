// libFuzzer target for the PyTorch zip reader (core/torch_zip) behind Checkpoint::open: the bytes are a
// .bin file (the zip directory and the restricted unpickler); when it opens, every tensor is read, so a
// layout that lies about its storage is caught reading out of bounds by ASan. Any failure must be a named
// Error. Seeds: make_fixtures --seeds (our own writer's files).
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sharelens::fuzz::openAndReadEveryTensor({reinterpret_cast<const char*>(data), size}, "torch-zip",
                                          "pytorch_model.bin");
  return 0;
}
