// The training benchmarks' model sizes (bench_train --size, bench_gemm --size): "10m" (the original ~10M-
// parameter model, context 256), the claims experiments' sizes (issue 37: about 0.3M, 1M and 3M non-embedding
// parameters, vocabulary 1024, context 128) and "gpu", the experiments' GPU profile (12 x 512, 8 heads, 4 KV,
// FFN 1376, context 512). torch_train_peer.py --size builds the same shapes.
#pragma once

#include <stdexcept>
#include <string>

#include "core/topology.hpp"

namespace sharelens {

inline ModelDims benchModelDims(const std::string& size) {
  auto dims = [](int64_t vocab, int64_t dModel, int64_t layers, int64_t heads, int64_t kvHeads,
                 int64_t headDim, int64_t ffn, int64_t context) {
    return ModelDims{.vocab = vocab,
                     .dModel = dModel,
                     .layers = layers,
                     .heads = heads,
                     .kvHeads = kvHeads,
                     .headDim = headDim,
                     .ffn = ffn,
                     .context = context};
  };
  //                                  vocab  d    L  H  KV  hd  FFN  T
  if (size == "10m") return dims(8192, 320, 8, 8, 4, 40, 864, 256);
  if (size == "0.3m") return dims(1024, 80, 4, 4, 2, 20, 216, 128);
  if (size == "1m") return dims(1024, 128, 6, 4, 4, 32, 344, 128);  // issue 37's example
  if (size == "3m") return dims(1024, 192, 7, 6, 3, 32, 512, 128);
  if (size == "gpu") return dims(1024, 512, 12, 8, 4, 64, 1376, 512);
  throw std::invalid_argument("--size " + size + ": expected 10m, 0.3m, 1m, 3m or gpu");
}

}  // namespace sharelens
