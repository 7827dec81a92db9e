// A checkpoint: one safetensors file, or a sharded set described by model.safetensors.index.json, plus the
// Hugging Face config.json when there is one; or a file of another format read behind the same interface
// (a llama2.c checkpoint, core/llama2c.hpp, or a GGUF file, core/gguf.hpp, whose config comes from its
// header; a PyTorch zip, core/torch_zip.hpp). Tensors are looked up by name across shards.
//
// Accepted paths:
//   file.safetensors            (config.json beside it is used when present)
//   DIR/ with model.safetensors.index.json + shards
//   DIR/ with model.safetensors, or exactly one *.safetensors file
//   DIR/ with pytorch_model.bin.index.json + shards, or pytorch_model.bin; file.pt / file.pth
//   file.gguf (or any name)     GGUF v2 / v3 (llama, qwen2, qwen3, gemma3), told by its magic
//   file.bin (or any name)      a llama2.c checkpoint: legacy, version 1 or version 2, told by its contents
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/json_util.hpp"
#include "core/safetensors.hpp"

namespace sharelens {

// The files read beside a checkpoint's weights (its config, tokenizer and generation settings): what a copy
// of the model carries along, and what no command may write into a model's folder.
inline constexpr const char* kCompanionFiles[] = {
    "config.json",           "tokenizer.json",          "tokenizer.model",
    "tokenizer_config.json", "special_tokens_map.json", "generation_config.json"};

struct TensorRef {
  const SafetensorsFile* file = nullptr;
  const TensorInfo* info = nullptr;
};

class Checkpoint {
 public:
  static std::unique_ptr<Checkpoint> open(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return m_path; }            // as given
  const std::filesystem::path& directory() const { return m_directory; }  // where config.json lives
  bool sharded() const { return m_sharded; }
  const std::optional<Json>& config() const { return m_config; }
  // Where the config came from, for messages: config.json, or the checkpoint file whose header it was made
  // from.
  std::optional<std::filesystem::path> configPath() const;
  std::string format() const { return m_format; }  // "safetensors", "llama2.c legacy (v0)", ...
  const std::vector<std::unique_ptr<SafetensorsFile>>& files() const { return m_files; }

  // All tensor names in natural order ("layers.2" before "layers.10").
  const std::vector<std::string>& tensorNames() const { return m_names; }
  size_t tensorCount() const { return m_names.size(); }
  const TensorRef* find(std::string_view name) const;
  const TensorRef& at(std::string_view name) const;  // throws a named Error
  uint64_t totalBytes() const;

  // `__metadata__` of all files merged (first file wins on conflicts).
  const std::map<std::string, std::string>& metadata() const { return m_metadata; }
  // Tensors present in shards but not in the index's weight_map (kept, and reported by inspect).
  const std::vector<std::string>& unindexedTensors() const { return m_unindexed; }

  std::vector<float> readFloat(std::string_view name) const;
  // Drops a tensor's mapped pages from the resident set (a loader that has converted it keeps RSS to its
  // copy).
  void releasePages(std::string_view name) const;

 private:
  Checkpoint() = default;
  void addFile(std::unique_ptr<SafetensorsFile> file);
  void addSelfDescribingFile(const std::filesystem::path& path, std::unique_ptr<SafetensorsFile> tensors,
                             Json config, std::string format);
  void openSharded(const std::filesystem::path& indexPath);
  void openFile(const std::filesystem::path& path);
  void finishIndex();

  std::filesystem::path m_path;
  std::filesystem::path m_directory;
  bool m_sharded = false;
  std::optional<Json> m_config;
  std::optional<std::filesystem::path> m_configSource;
  std::string m_format = "safetensors";
  std::vector<std::unique_ptr<SafetensorsFile>> m_files;
  std::unordered_map<std::string_view, TensorRef> m_byName;
  std::vector<std::string> m_names;
  std::map<std::string, std::string> m_metadata;
  std::vector<std::string> m_unindexed;
};

}  // namespace sharelens
