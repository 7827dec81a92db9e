// libFuzzer target: config.json + tensor names and shapes -> Checkpoint, family detection, the model view,
// the inspect report, and (for small models) every per-layer and per-head matrix materialised. Input format:
// fuzz_support.hpp (config text, "\n@@\n", "NAME DTYPE D0 D1 ..." lines). Any failure must be a named Error.
#include <cstddef>
#include <cstdint>

#include "core/arch/family.hpp"
#include "core/checkpoint.hpp"
#include "core/error.hpp"
#include "core/inspect_report.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace sl = sharelens;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto& dir = sl::fuzz::scratch("model-view");
  if (!sl::fuzz::writeCheckpointFromText({reinterpret_cast<const char*>(data), size}, dir)) return 0;
  try {
    const auto ckpt = sl::Checkpoint::open(dir);
    (void)sl::inspectCheckpoint(*ckpt);
    const sl::ModelView view = sl::openModelView(*ckpt);
    if (!view.missing.empty() || view.layers.size() > 64) return 0;
    for (const sl::LayerView& layer : view.layers)
      for (sl::Proj p : sl::kAllProjs) {
        if (!layer.has(p)) continue;
        (void)sl::materialize(*ckpt, layer.at(p));
        if (view.hasHeads() && sl::isAttentionProj(p))
          for (int64_t h = 0; h < view.headCount(p) && h < 64; ++h)
            (void)sl::materialize(*ckpt, view.headMatrix(layer.index, p, h));
      }
    if (view.embedding) (void)sl::materialize(*ckpt, *view.embedding);
  } catch (const sl::Error&) {
  }
  return 0;
}
