// Safetensors <-> torch tensors (CPU, float32), through core's validated reader and atomic writer.
#pragma once

#include <torch/types.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace sharelens {

using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

void writeTensors(const std::filesystem::path& path, const NamedTensors& tensors,
                  const std::map<std::string, std::string>& metadata);
std::map<std::string, torch::Tensor> readTensors(
    const std::filesystem::path& path);  // every tensor as float32

}  // namespace sharelens
