#include "core/run_dir.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/naming.hpp"
#include "core/text.hpp"

namespace fs = std::filesystem;

namespace sharelens {
namespace {

// One metrics.jsonl line; discarded when it is not JSON. The parser takes a NUL byte for the end of input,
// so a line with one is refused here rather than read up to it.
Json parseRecordLine(std::string_view line) {
  if (line.find('\0') != std::string_view::npos) return Json(Json::value_t::discarded);
  return Json::parse(line, nullptr, /*allow_exceptions=*/false);
}

}  // namespace

bool isRunDirectory(const fs::path& dir) {
  std::error_code ec;  // a folder that cannot be searched is not a run directory, and no exception
  return fs::is_directory(dir, ec) && fs::exists(dir / "run.json", ec);
}

std::vector<fs::path> runDirectoriesIn(const fs::path& dir) {
  std::vector<fs::path> runs;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (isRunDirectory(it->path())) runs.push_back(it->path());
  std::sort(runs.begin(), runs.end());
  return runs;
}

std::vector<fs::path> runDirectoriesBelow(const fs::path& dir, int depth) {
  std::vector<fs::path> runs;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (isRunDirectory(it->path())) {
      runs.push_back(it->path());
    } else if (std::error_code entry; depth > 1 && it->is_directory(entry) && !it->is_symlink(entry)) {
      for (fs::path& run : runDirectoriesBelow(it->path(), depth - 1)) runs.push_back(std::move(run));
    }
  }
  std::sort(runs.begin(), runs.end());
  return runs;
}

fs::path checkpointDirectory(const fs::path& runDir, int64_t step) {
  char name[32];
  std::snprintf(name, sizeof name, "step-%07lld", static_cast<long long>(step));
  return runDir / "checkpoints" / name;
}

std::vector<CheckpointEntry> listCheckpoints(const fs::path& runDir) {
  std::vector<CheckpointEntry> out;
  const fs::path dir = runDir / "checkpoints";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!startsWith(name, "step-") || name.size() > 24 || !fs::exists(it->path() / kCompleteMarker, ec))
      continue;
    // Only the names we write ("step-0000010"): "step-10", "step-10x" or "step--1" would list a step twice.
    const auto step = parseWholeInt(std::string_view(name).substr(5));
    if (!step || *step < 0 || checkpointDirectory(runDir, *step).filename() != name) continue;
    out.push_back({*step, it->path()});
  }
  std::sort(out.begin(), out.end(),
            [](const CheckpointEntry& a, const CheckpointEntry& b) { return a.step < b.step; });
  return out;
}

std::optional<CheckpointEntry> latestCheckpoint(const fs::path& runDir) {
  auto all = listCheckpoints(runDir);
  if (all.empty()) return std::nullopt;
  return all.back();
}

MetricPoint metricFromJson(const Json& j) {
  MetricPoint p;
  auto number = [&](const char* key, double fallback) {
    auto it = j.find(key);
    return it != j.end() && it->is_number() ? it->get<double>() : fallback;
  };
  p.step = j.at("step").get<int64_t>();
  p.tokens = number("tokens", 0);
  p.loss = number("loss", NAN);
  p.valLoss = number("val_loss", NAN);
  p.lr = number("lr", NAN);
  p.gradNorm = number("grad_norm", NAN);
  p.tokensPerSecond = number("tokens_per_s", NAN);
  p.elapsed = number("elapsed", 0);
  p.penalty = number("postshare_penalty", NAN);
  p.worldSize = static_cast<int>(number("world_size", 1));
  p.tensorPeakBytes = number("tensor_peak_bytes", NAN);
  p.processPeakBytes = number("rss_peak_bytes", NAN);
  if (auto it = j.find("rank_tokens_per_s"); it != j.end() && it->is_array())
    for (const Json& v : *it)
      if (v.is_number()) p.rankTokensPerSecond.push_back(v.get<double>());
  return p;
}

Json metricToJson(const MetricPoint& p) {
  Json j = {{"step", p.step}, {"tokens", p.tokens}, {"elapsed", p.elapsed}};
  auto put = [&](const char* key, double v) {
    if (!std::isnan(v)) j[key] = v;
  };
  put("loss", p.loss);
  put("val_loss", p.valLoss);
  put("lr", p.lr);
  put("grad_norm", p.gradNorm);
  put("tokens_per_s", p.tokensPerSecond);
  put("postshare_penalty", p.penalty);
  put("tensor_peak_bytes", p.tensorPeakBytes);
  put("rss_peak_bytes", p.processPeakBytes);
  if (p.worldSize > 1) {
    j["world_size"] = p.worldSize;
    j["rank_tokens_per_s"] = p.rankTokensPerSecond;
  }
  return j;
}

uint64_t MetricsReader::nextRevision() {
  static std::atomic<uint64_t> next{1};
  return next++;
}

size_t MetricsReader::poll() {
  std::ifstream in(m_file, std::ios::binary);
  if (!in) return 0;
  in.seekg(0, std::ios::end);
  const uint64_t size = static_cast<uint64_t>(in.tellg());
  if (size < m_offset) {  // truncated or replaced: start over
    m_offset = 0;
    m_points.clear();
    m_events.clear();
    m_revision = nextRevision();
  }
  if (size == m_offset) return 0;
  std::string chunk(size - m_offset, '\0');
  in.seekg(static_cast<std::streamoff>(m_offset));
  in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
  const size_t lastNewline = chunk.rfind('\n');
  if (lastNewline == std::string::npos) return 0;  // only a torn line so far
  size_t consumed = 0, start = 0;
  bool changed = false, inOrder = true;  // in order: each new step after the last one (a run's usual log)
  while (start <= lastNewline) {
    const size_t end = chunk.find('\n', start);
    const std::string_view line(chunk.data() + start, end - start);
    start = end + 1;
    ++consumed;
    if (line.empty()) continue;
    Json j = parseRecordLine(line);
    if (j.is_discarded() || !j.is_object()) {
      ++m_malformed;
      continue;
    }
    if (j.contains("event")) {  // events() promises a string "event": readers compare it without checking
      if (j["event"].is_string())
        m_events.push_back(std::move(j));
      else
        ++m_malformed;
      continue;
    }
    // A step is a non-negative integer of plausible size (JSON's 2^64 - 1 would read back as -1).
    if (!j.contains("step") || !j["step"].is_number_integer() || j["step"].get<double>() < 0 ||
        j["step"].get<double>() > kMaxMetricStep) {
      ++m_malformed;
      continue;
    }
    MetricPoint point = metricFromJson(j);
    inOrder = inOrder && (m_points.empty() || point.step > m_points.back().step);
    m_points.push_back(std::move(point));
    changed = true;
  }
  m_offset += lastNewline + 1;
  if (changed && !inOrder) {  // a step logged again (a resumed run): keep step order, the last entry wins
    std::map<int64_t, MetricPoint> byStep;
    for (MetricPoint& p : m_points) byStep[p.step] = std::move(p);
    m_points.clear();
    for (auto& [step, p] : byStep) m_points.push_back(std::move(p));
  }
  if (changed) m_revision = nextRevision();
  return consumed;
}

int64_t trimMetricsFile(const fs::path& file, int64_t maxStep) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return 0;
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string kept;
  int64_t dropped = 0;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    if (end == std::string::npos) {  // a torn last line: the write the kill interrupted
      ++dropped;
      break;
    }
    const std::string_view line(text.data() + start, end - start);
    start = end + 1;
    const Json j = parseRecordLine(line);
    const bool after = j.is_object() && j.contains("step") && j["step"].is_number() &&
                       j["step"].get<double>() > static_cast<double>(maxStep);
    // The resumed run logs its own finish; an "event" that is not a string is not one of ours, kept as it is.
    const bool finish =
        j.is_object() && j.contains("event") && j["event"].is_string() && j["event"] == "finish";
    if (after || finish) {
      ++dropped;
      continue;
    }
    kept.append(line);
    kept.push_back('\n');
  }
  if (dropped > 0) writeFileAtomically(file, kept);
  return dropped;
}

fs::path resolveModelPath(const fs::path& path) {
  if (!isRunDirectory(path)) return path;
  if (auto latest = latestCheckpoint(path)) return latest->dir;
  throw Error(
      {.what = "the run has no complete checkpoint yet",
       .where = path.string(),
       .hint =
           "wait for the first checkpoint (checkpoint_every steps), or save one from the training monitor"});
}

std::optional<fs::path> runDirectoryOf(const fs::path& path) {
  if (isRunDirectory(path)) return path;
  const fs::path dir = fs::is_directory(path) ? path : path.parent_path();
  const fs::path run = dir.parent_path().parent_path();  // RUN/checkpoints/step-N -> RUN
  if (dir.parent_path().filename() == "checkpoints" && isRunDirectory(run)) return run;
  return std::nullopt;
}

// All or nothing: a line the disk takes only part of (full, or over a file-size limit) is cut back off, so a
// later line never follows a fragment (trimMetricsFile drops only a torn last line, the one a kill leaves).
void appendJsonLine(const fs::path& file, const Json& line) {
  const std::string text = line.dump() + '\n';
  const int fd = ::open(file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    throw Error({.what = "cannot append to file",
                 .where = file.string(),
                 .found = std::strerror(errno),
                 .hint = "check the run directory is writable"});
  struct stat before {};
  const bool sized = ::fstat(fd, &before) == 0 && S_ISREG(before.st_mode);
  size_t written = 0;
  int error = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = n < 0 ? errno : ENOSPC;
      break;
    }
    written += static_cast<size_t>(n);
  }
  if (error != 0 && written > 0 && sized) (void)::ftruncate(fd, before.st_size);  // one writer: ours
  ::close(fd);
  if (error != 0)  // a full disk shows here, not at the open
    throw Error({.what = "cannot write to file",
                 .where = file.string(),
                 .found = std::strerror(error),
                 .hint = "free some space on that disk; the run's checkpoints are complete and it resumes "
                         "from the latest with --resume"});
}

}  // namespace sharelens
