#include "core/checkpoint.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <fstream>
#include <set>

#include "core/error.hpp"
#include "core/gguf.hpp"
#include "core/llama2c.hpp"
#include "core/naming.hpp"
#include "core/torch_zip.hpp"

namespace fs = std::filesystem;

namespace sharelens {
namespace {

constexpr const char* kIndexName = "model.safetensors.index.json";
constexpr const char* kTorchIndexName = "pytorch_model.bin.index.json";
constexpr const char* kTorchFileName = "pytorch_model.bin";

std::vector<fs::path> safetensorsFilesIn(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_regular_file() && entry.path().extension() == ".safetensors") out.push_back(entry.path());
  std::sort(out.begin(), out.end(), [](const fs::path& a, const fs::path& b) {
    return naturalLess(a.filename().string(), b.filename().string());
  });
  return out;
}

// A shard name from an index must be a plain file name in the index's directory.
void checkShardName(const std::string& shard, const fs::path& indexPath, const std::string& tensor) {
  const fs::path p(shard);
  if (shard.empty() || p.is_absolute() || p.has_parent_path() || shard == "." || shard == "..")
    throw Error({.what = "shard file name must be a plain file name",
                 .where = indexPath.string() + ": weight_map['" + tensor + "']",
                 .expected = "a file in the same directory, like model-00001-of-00002.safetensors",
                 .found = "'" + shard + "'",
                 .hint = "fix the index; paths outside the model directory are refused"});
}

enum class FileFormat { Safetensors, TorchZip, TorchLegacy, Llama2c, Gguf };

// The first bytes decide, not the name: llama2.c files are .bin like PyTorch's.
FileFormat formatOf(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::array<std::byte, 64> head{};
  in.read(reinterpret_cast<char*>(head.data()), head.size());
  const std::span<const std::byte> read = std::span(head).first(static_cast<size_t>(in.gcount()));
  std::error_code ec;
  const uint64_t size = fs::file_size(path, ec);
  if (ec || path.extension() == ".safetensors") return FileFormat::Safetensors;
  if (looksLikeZip(read)) return FileFormat::TorchZip;
  if (looksLikeGguf(read)) return FileFormat::Gguf;
  if (looksLikeLlama2c(read, size)) return FileFormat::Llama2c;  // its size must match exactly: asked first
  // torch.save before 1.6 (or with _use_new_zipfile_serialization=False): a protocol-2 pickle that begins
  // with PyTorch's magic number, the long 0x1950a86a20f9469cfc6c.
  static constexpr uint8_t kLegacyTorch[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c,
                                             0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};
  if (read.size() >= sizeof kLegacyTorch && std::memcmp(read.data(), kLegacyTorch, sizeof kLegacyTorch) == 0)
    return FileFormat::TorchLegacy;
  return FileFormat::Safetensors;
}

[[noreturn]] void refuseLegacyTorch(const fs::path& path) {
  throw Error({.what = "PyTorch's legacy (pre-1.6) checkpoint format",
               .where = path.string(),
               .expected = "the zip format torch.save writes since PyTorch 1.6",
               .found = "a bare pickle",
               .hint = "load it in PyTorch and save it again with torch.save, or save it as safetensors"});
}

// One file of tensors, safetensors or a PyTorch zip (pytorch_model.bin, a shard of either kind of index).
std::unique_ptr<SafetensorsFile> openTensorFile(const fs::path& path) {
  const FileFormat format = formatOf(path);
  if (format == FileFormat::TorchLegacy) refuseLegacyTorch(path);
  return format == FileFormat::TorchZip ? openTorchZip(path) : SafetensorsFile::open(path);
}

}  // namespace

std::unique_ptr<Checkpoint> Checkpoint::open(const fs::path& path) {
  std::unique_ptr<Checkpoint> ckpt(new Checkpoint());
  ckpt->m_path = path;
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw Error({.what = "no such file or directory",
                 .where = path.string(),
                 .hint = "pass a .safetensors file or a model directory"});
  if (fs::is_directory(path)) {
    ckpt->m_directory = path;
    if (fs::exists(path / kIndexName)) {
      ckpt->openSharded(path / kIndexName);
    } else if (fs::exists(path / "model.safetensors")) {
      ckpt->addFile(SafetensorsFile::open(path / "model.safetensors"));
    } else if (fs::exists(path / kTorchIndexName)) {
      ckpt->openSharded(path / kTorchIndexName);
      ckpt->m_format = "pytorch zip";
    } else if (fs::exists(path / kTorchFileName)) {
      ckpt->addFile(openTensorFile(path / kTorchFileName));
      ckpt->m_format = "pytorch zip";
    } else {
      auto files = safetensorsFilesIn(path);
      if (files.empty())
        throw Error({.what = "no checkpoint files in directory",
                     .where = path.string(),
                     .expected = "model.safetensors, " + std::string(kIndexName) + ", one *.safetensors, " +
                                 kTorchFileName + " or " + kTorchIndexName,
                     .found = "none",
                     .hint = "pass a llama2.c .bin or another file directly"});
      if (files.size() > 1)
        throw Error({.what = "several safetensors files but no index",
                     .where = path.string(),
                     .expected = std::string(kIndexName) + " listing the shards",
                     .found = std::to_string(files.size()) + " files (" + files[0].filename().string() +
                              ", " + files[1].filename().string() + ", ...)",
                     .hint = "pass one file directly, or add the index"});
      ckpt->addFile(SafetensorsFile::open(files[0]));
    }
  } else if (path.filename() == kIndexName || path.filename() == kTorchIndexName) {
    ckpt->m_directory = path.parent_path();
    ckpt->openSharded(path);
    if (path.filename() == kTorchIndexName) ckpt->m_format = "pytorch zip";
  } else {
    ckpt->m_directory = path.has_parent_path() ? path.parent_path() : fs::path(".");
    ckpt->openFile(path);
  }
  if (!ckpt->m_config && fs::exists(ckpt->m_directory / "config.json")) {
    ckpt->m_config = readJsonFile(ckpt->m_directory / "config.json");
    ckpt->m_configSource = ckpt->m_directory / "config.json";
  }
  ckpt->finishIndex();
  return ckpt;
}

// One file given directly, of whichever format its first bytes say.
void Checkpoint::openFile(const fs::path& path) {
  switch (formatOf(path)) {
    case FileFormat::TorchLegacy:
      refuseLegacyTorch(path);
    case FileFormat::TorchZip:
      addFile(openTorchZip(path));
      m_format = "pytorch zip";
      return;
    case FileFormat::Llama2c: {
      Llama2cCheckpoint llama2c = openLlama2c(path);
      addSelfDescribingFile(path, std::move(llama2c.tensors), std::move(llama2c.config), llama2c.format);
      return;
    }
    case FileFormat::Gguf: {
      GgufCheckpoint gguf = openGguf(path);
      addSelfDescribingFile(path, std::move(gguf.tensors), std::move(gguf.config), gguf.format);
      return;
    }
    case FileFormat::Safetensors:
      try {
        addFile(SafetensorsFile::open(path));
      } catch (const Error& e) {
        if (path.extension() == ".safetensors") throw;
        throw Error(
            {.what = "not a checkpoint format ShareLens reads",
             .where = path.string(),
             .found = "not a PyTorch zip, GGUF, a llama2.c checkpoint or safetensors (" +
                      std::string(e.what()) + ")",
             .hint =
                 "ShareLens reads safetensors and PyTorch zip checkpoints (config.json beside them), GGUF "
                 "files (llama, qwen2, qwen3, gemma3) and llama2.c checkpoints (legacy, version 1 and "
                 "version 2); the pre-1.6 PyTorch format "
                 "is not read: re-save it with torch.save"});
      }
      return;
  }
}

// A file whose header carries its config (llama2.c, GGUF): the config comes from it, not a config.json.
void Checkpoint::addSelfDescribingFile(const fs::path& path, std::unique_ptr<SafetensorsFile> tensors,
                                       Json config, std::string format) {
  m_config = std::move(config);
  m_configSource = path;
  m_format = std::move(format);
  addFile(std::move(tensors));
}

std::optional<fs::path> Checkpoint::configPath() const {
  return m_configSource;
}

void Checkpoint::addFile(std::unique_ptr<SafetensorsFile> file) {
  for (const TensorInfo& t : file->tensors()) {
    auto [it, inserted] = m_byName.emplace(t.name, TensorRef{file.get(), &t});
    if (!inserted)
      throw Error(
          {.what = "tensor appears in two files",
           .where = "tensor '" + t.name + "'",
           .found = it->second.file->path().filename().string() + " and " + file->path().filename().string(),
           .hint = "the shards overlap; re-export the checkpoint"});
  }
  for (const auto& [k, v] : file->metadata()) m_metadata.emplace(k, v);
  m_files.push_back(std::move(file));
}

void Checkpoint::openSharded(const fs::path& indexPath) {
  m_sharded = true;
  const Json index = readJsonFile(indexPath);
  const JsonObject root(index, indexPath.string());
  const Json& weightMap = root.requireObject("weight_map").raw();
  // shard file -> tensors the index places there
  std::map<std::string, std::vector<std::string>> byShard;
  for (const auto& [tensor, shard] : weightMap.items()) {
    if (!shard.is_string())
      throw Error({.what = "weight_map values must be shard file names",
                   .where = indexPath.string() + ": weight_map['" + tensor + "']",
                   .expected = "a string",
                   .found = jsonTypeName(shard)});
    checkShardName(shard.get<std::string>(), indexPath, tensor);
    byShard[shard.get<std::string>()].push_back(tensor);
  }
  if (byShard.empty())
    throw Error(
        {.what = "weight_map is empty", .where = indexPath.string(), .hint = "the index lists no tensors"});
  const fs::path dir = indexPath.parent_path();
  for (const auto& [shard, tensors] : byShard) {
    const fs::path shardPath = dir / shard;
    std::error_code ec;
    const bool present = fs::exists(shardPath, ec);
    if (ec)  // a symlink loop, a component that is a file, no permission
      throw Error({.what = "cannot reach shard: " + ec.message(),
                   .where = shardPath.string(),
                   .expected = "the file named by " + indexPath.filename().string() + " for '" +
                               tensors.front() + "'",
                   .hint = "fix the file or the symbolic link the index points at"});
    if (!present)
      throw Error({.what = "missing shard",
                   .where = shardPath.string(),
                   .expected = "the file named by " + indexPath.filename().string() + " (it holds '" +
                               tensors.front() + "' and " + std::to_string(tensors.size() - 1) + " more)",
                   .found = "no such file",
                   .hint = "download every shard of the checkpoint"});
    addFile(openTensorFile(shardPath));
    const SafetensorsFile& file = *m_files.back();
    std::set<std::string_view> listed(tensors.begin(), tensors.end());
    for (const std::string& tensor : tensors)
      if (!file.find(tensor))
        throw Error({.what = "index names a tensor its shard does not contain",
                     .where = indexPath.string() + ": weight_map['" + tensor + "']",
                     .expected = "tensor in " + shard,
                     .found = "not there",
                     .hint = "the index and the shards are from different exports"});
    for (const TensorInfo& t : file.tensors())
      if (!listed.count(t.name)) m_unindexed.push_back(t.name);
  }
}

void Checkpoint::finishIndex() {
  m_names.reserve(m_byName.size());
  for (const auto& [name, ref] : m_byName) m_names.emplace_back(name);
  std::sort(m_names.begin(), m_names.end(), naturalLess);
}

const TensorRef* Checkpoint::find(std::string_view name) const {
  auto it = m_byName.find(name);
  return it == m_byName.end() ? nullptr : &it->second;
}

const TensorRef& Checkpoint::at(std::string_view name) const {
  if (const TensorRef* r = find(name)) return *r;
  throw Error({.what = "tensor not found",
               .where = m_path.string() + ": tensor '" + std::string(name) + "'",
               .hint = "run `sharelens inspect " + m_path.string() + "` to list the tensors it has"});
}

uint64_t Checkpoint::totalBytes() const {
  uint64_t total = 0;
  for (const auto& f : m_files) total += f->fileSize();
  return total;
}

void Checkpoint::releasePages(std::string_view name) const {
  if (const TensorRef* ref = find(name)) ref->file->releasePages(*ref->info);
}

std::vector<float> Checkpoint::readFloat(std::string_view name) const {
  const TensorRef& ref = at(name);
  return ref.file->readFloat(*ref.info);
}

}  // namespace sharelens
