#include "trainer/torch_io.hpp"

#include "core/error.hpp"
#include "core/safetensors.hpp"

namespace sharelens {

void writeTensors(const std::filesystem::path& path, const NamedTensors& tensors,
                  const std::map<std::string, std::string>& metadata) {
  std::vector<TensorWrite> writes;
  for (const auto& [name, tensor] : tensors) {
    if (!tensor.is_contiguous() || tensor.scalar_type() != at::kFloat || !tensor.device().is_cpu())
      throw Error(
          {.what = "tensors to write must be contiguous CPU float32", .where = path.string() + ": " + name});
    const auto bytes = std::span(reinterpret_cast<const std::byte*>(tensor.data_ptr<float>()),
                                 static_cast<size_t>(tensor.numel()) * sizeof(float));
    writes.push_back(
        {name, DType::F32, std::vector<int64_t>(tensor.sizes().begin(), tensor.sizes().end()), bytes});
  }
  writeSafetensors(path, writes, metadata);
}

std::map<std::string, torch::Tensor> readTensors(const std::filesystem::path& path) {
  const auto file = SafetensorsFile::open(path);
  std::map<std::string, torch::Tensor> out;
  for (const TensorInfo& t : file->tensors()) {
    torch::Tensor tensor = at::empty(t.shape, at::TensorOptions().dtype(at::kFloat));
    file->readFloat(t, 0, std::span<float>(tensor.data_ptr<float>(), t.numel));
    out.emplace(t.name, tensor);
  }
  return out;
}

}  // namespace sharelens
