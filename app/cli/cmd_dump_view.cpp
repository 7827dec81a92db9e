// sharelens dump-view PATH OUT.safetensors
// Materialises the canonical view as F32: layers.{L}.{proj} (out x in), layers.{L}.{proj}.head.{H} for the
// attention projections, layers.{L}.{proj}.bias, embedding, output_head, position_embedding. Useful for
// feeding other tools, and the peer test compares it with an independent PyTorch reading.
#include <array>
#include <iostream>

#include "app/cli/commands.hpp"
#include "core/arch/family.hpp"
#include "core/checkpoint.hpp"
#include "core/output_guard.hpp"
#include "core/run_dir.hpp"

namespace sharelens::cli {
namespace {

EncodedTensor encode(std::string name, const FloatMatrix& m) {
  return EncodedTensor::fromFloats(std::move(name), DType::F32, {m.rows, m.cols}, m.data);
}

}  // namespace

int runDumpView(Args& args) {
  const std::string path = args.positional("PATH");
  const std::string out = args.positional("OUT.safetensors");
  args.finish();
  const auto ckpt = Checkpoint::open(resolveModelPath(path));
  checkOutputs("sharelens dump-view", *ckpt, std::array{DeclaredOutput::file(out, "OUT.safetensors")});
  const ModelView view = openModelView(*ckpt);
  std::vector<EncodedTensor> tensors;
  if (view.embedding) tensors.push_back(encode("embedding", materialize(*ckpt, *view.embedding)));
  if (view.outputHead && !view.shape.tiedEmbeddings)
    tensors.push_back(encode("output_head", materialize(*ckpt, *view.outputHead)));
  if (view.positionEmbedding)
    tensors.push_back(encode("position_embedding", materialize(*ckpt, *view.positionEmbedding)));
  for (const LayerView& layer : view.layers) {
    const std::string base = "layers." + std::to_string(layer.index) + ".";
    for (Proj p : kAllProjs) {
      if (!layer.has(p)) continue;
      const std::string name = base + std::string(projName(p));
      tensors.push_back(encode(name, materialize(*ckpt, layer.at(p))));
      if (isAttentionProj(p) && view.hasHeads())
        for (int64_t h = 0; h < view.headCount(p); ++h)
          tensors.push_back(encode(name + ".head." + std::to_string(h),
                                   materialize(*ckpt, view.headMatrix(layer.index, p, h))));
      if (const auto& bias = layer.bias[static_cast<int>(p)]) {
        const std::vector<float> b = materialize(*ckpt, *bias);
        tensors.push_back(
            EncodedTensor::fromFloats(name + ".bias", DType::F32, {static_cast<int64_t>(b.size())}, b));
      }
    }
  }
  writeSafetensors(out, tensors, {{"source", path}, {"family", std::string(familyName(view.family))}});
  std::cout << "wrote " << tensors.size() << " tensors to " << out << "\n";
  return 0;
}

}  // namespace sharelens::cli
