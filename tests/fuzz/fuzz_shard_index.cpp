// libFuzzer target: model.safetensors.index.json beside two valid shards of a small Llama checkpoint (written
// once per process). The index decides which shards are opened and which tensors they must hold.
#include <cstddef>
#include <cstdint>

#include "core/arch/family.hpp"
#include "core/checkpoint.hpp"
#include "core/error.hpp"
#include "tests/fuzz/fuzz_support.hpp"
#include "tests/support/hf_fixtures.hpp"

namespace sl = sharelens;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::filesystem::path dir = [] {
    const auto d = sl::fuzz::scratch("index");
    auto spec = sl::testing::defaultSpec(sl::Family::Llama);
    spec.shards = 2;
    spec.layers = 2;
    sl::testing::writeHfFixture(d, spec);
    return d;
  }();
  sl::fuzz::writeFile(dir / "model.safetensors.index.json", {reinterpret_cast<const char*>(data), size});
  try {
    const auto ckpt = sl::Checkpoint::open(dir);
    (void)sl::openModelView(*ckpt);
  } catch (const sl::Error&) {
  }
  return 0;
}
