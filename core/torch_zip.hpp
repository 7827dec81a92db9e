// PyTorch checkpoints in the zip format torch.save writes since 1.6 (`pytorch_model.bin`, `.pt`, `.pth`),
// read behind the same Checkpoint as safetensors, without running any of their code:
//   - the zip's central directory is read (ZIP64 too); entries must be stored, not compressed (torch.save
//     never compresses), and lie inside the file;
//   - ARCHIVE/data.pkl is read by a restricted unpickler that builds only what torch.load(weights_only=True)
//     allows for a state dict -- dicts, OrderedDicts, lists, tuples, strings, numbers, tensors
//     (torch._utils._rebuild_tensor_v2, _rebuild_parameter) over typed storages (torch.FloatStorage, ...)
//     -- and refuses every other global by name;
//   - each tensor becomes a TensorInfo over its storage entry ARCHIVE/data/KEY, read lazily; nested dicts
//     are flattened with dots ("model.layers.0..."); contiguous tensors only (a state dict's are).
// The legacy (pre-1.6, non-zip) format is refused by name.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>

#include "core/safetensors.hpp"

namespace sharelens {

// Whether a file starts as a zip archive does ("PK\x03\x04").
bool looksLikeZip(std::span<const std::byte> head);

// Throws a named Error (the file, the entry or pickle position, expected against found) on a malformed or
// disallowed file.
std::unique_ptr<SafetensorsFile> openTorchZip(const std::filesystem::path& path);

}  // namespace sharelens
