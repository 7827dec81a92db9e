// Shared by the libFuzzer targets: a private scratch directory (on tmpfs when there is one) and the text
// format that lets a mutator reach the checkpoint reader through file contents it can edit.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace sharelens::fuzz {

// /dev/shm/sharelens-fuzz-<pid>-<tag> (or the temp directory), created once per process.
const std::filesystem::path& scratch(const std::string& tag);

void writeFile(const std::filesystem::path& path, std::string_view bytes);

// "config.json text \n@@\n tensor lines": each tensor line is "NAME DTYPE D0 D1 ...". Writes config.json
// (when the first part is not empty) and model.safetensors (zero data; tensors past a small size budget
// dropped) into `dir`. Returns false when nothing could be written.
bool writeCheckpointFromText(std::string_view input, const std::filesystem::path& dir);

// Writes the input as `name` in a scratch directory of its own (`tag`) and opens it as a checkpoint; when it
// opens, every tensor of up to 65,536 elements is read as floats, so a layout that lies about its ranges is
// caught reading out of bounds. A named Error is an accepted outcome (the fuzz targets for whole files).
void openAndReadEveryTensor(std::string_view input, const std::string& tag, const std::string& name);

// The inverse, for seeds: a real checkpoint directory as that text.
std::string checkpointAsText(const std::filesystem::path& dir);

}  // namespace sharelens::fuzz
