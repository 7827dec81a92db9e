// PyTorch zip checkpoints for tests and fuzz seeds, written by our own writer from the format as torch.save
// lays it out (a stored zip of ARCHIVE/data.pkl, a protocol-2 pickle of an OrderedDict of
// torch._utils._rebuild_tensor_v2 calls over persistent storages, and ARCHIVE/data/KEY, one per storage).
// The reader under test (core/torch_zip) shares no code with it; tests/peer/peer_torch_bin.py checks the
// reader against files PyTorch itself wrote.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace sharelens::testing {

struct TorchTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;  // stored as torch.FloatStorage
};

using ZipEntries = std::vector<std::pair<std::string, std::vector<std::byte>>>;

// A stored (uncompressed) zip of these entries, with their CRC-32s.
std::vector<std::byte> zipBytes(const ZipEntries& entries);
// data.pkl for these tensors, each over its own storage "0", "1", ...
std::vector<std::byte> statePickle(const std::vector<TorchTensor>& tensors);
// The whole file: ARCHIVE/data.pkl, ARCHIVE/data/N, ARCHIVE/version.
std::vector<std::byte> torchZipBytes(const std::vector<TorchTensor>& tensors,
                                     const std::string& archive = "archive");

}  // namespace sharelens::testing
