#include "tests/fuzz/fuzz_support.hpp"

#include <unistd.h>

#include <fstream>
#include <optional>
#include <sstream>

#include "core/checkpoint.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/inspect_report.hpp"
#include "core/safetensors.hpp"

namespace fs = std::filesystem;

namespace sharelens::fuzz {
namespace {

constexpr uint64_t kMaxBytes = uint64_t{1} << 22;  // per checkpoint: keeps every iteration cheap

}  // namespace

const fs::path& scratch(const std::string& tag) {
  static const fs::path dir = [&] {
    const fs::path root = fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    fs::path d = root / ("sharelens-fuzz-" + std::to_string(::getpid()) + "-" + tag);
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

void writeFile(const fs::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

bool writeCheckpointFromText(std::string_view input, const fs::path& dir) {
  std::error_code ec;
  fs::remove(dir / "config.json", ec);
  fs::remove(dir / "model.safetensors", ec);
  const size_t split = input.find("\n@@\n");
  const std::string_view config = input.substr(0, split);
  const std::string_view tensors =
      split == std::string_view::npos ? std::string_view() : input.substr(split + 4);
  if (!config.empty()) writeFile(dir / "config.json", config);

  struct Spec {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
    uint64_t bytes;
  };
  // "NAME DTYPE D0 D1 ...", or nothing when the line is not one or the tensor is over the budget.
  auto parseLine = [](const std::string& line) -> std::optional<Spec> {
    std::istringstream words(line);
    std::string name, dtypeText;
    if (!(words >> name >> dtypeText)) return std::nullopt;
    const auto dtype = parseDType(dtypeText);
    if (!dtype) return std::nullopt;
    Spec s{name, *dtype, {}, dtypeSize(*dtype)};
    for (long long d; words >> d;) {
      if (d < 0 || d > (1 << 20)) return std::nullopt;
      s.shape.push_back(d);
      s.bytes *= static_cast<uint64_t>(d);
      if (s.bytes > kMaxBytes) return std::nullopt;
    }
    return s;
  };
  std::vector<Spec> specs;
  uint64_t total = 0;
  std::istringstream lines{std::string(tensors)};
  for (std::string line; std::getline(lines, line);) {
    auto spec = parseLine(line);
    if (!spec || total + spec->bytes > kMaxBytes) continue;
    total += spec->bytes;
    specs.push_back(std::move(*spec));
  }
  const std::vector<std::byte> zeros(total);
  std::vector<TensorWrite> writes;
  uint64_t at = 0;
  for (const Spec& s : specs) {
    writes.push_back({s.name, s.dtype, s.shape, std::span(zeros.data() + at, s.bytes)});
    at += s.bytes;
  }
  try {
    writeSafetensors(dir / "model.safetensors", writes);
  } catch (
      const Error&) {  // names the writer refuses (duplicates, empty): the input is simply not a checkpoint
    return false;
  }
  return true;
}

std::string checkpointAsText(const fs::path& dir) {
  std::string out;
  if (fs::exists(dir / "config.json")) {
    std::ifstream in(dir / "config.json");
    out.assign(std::istreambuf_iterator<char>(in), {});
  }
  out += "\n@@\n";
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".safetensors") continue;
    const auto file = SafetensorsFile::open(e.path());
    for (const TensorInfo& t : file->tensors()) {
      out += t.name + " " + std::string(dtypeName(t.dtype));
      for (int64_t d : t.shape) out += " " + std::to_string(d);
      out += "\n";
    }
  }
  return out;
}

void openAndReadEveryTensor(std::string_view input, const std::string& tag, const std::string& name) {
  const fs::path file = scratch(tag) / name;
  writeFile(file, input);
  try {
    const auto ckpt = Checkpoint::open(file);
    for (const std::string& tensor : ckpt->tensorNames())
      if (ckpt->at(tensor).info->numel <= (1u << 16)) (void)ckpt->readFloat(tensor);
    // What `sharelens inspect` and `convert` make of it: the model view, the report and the config as text
    // (a name or value that JSON cannot hold would throw here, outside the error model).
    const Json report = inspectCheckpoint(*ckpt);
    (void)report.dump();
    (void)formatInspectReport(report);
    if (ckpt->config()) (void)ckpt->config()->dump();
  } catch (const Error&) {
  }
}

}  // namespace sharelens::fuzz
