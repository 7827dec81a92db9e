#include "core/output_guard.hpp"

#include <unistd.h>

#include <set>

#include "core/checkpoint.hpp"
#include "core/error.hpp"
#include "core/run_dir.hpp"

namespace fs = std::filesystem;

namespace sharelens {
namespace {

fs::path realPath(const fs::path& path) {
  std::error_code ec;
  fs::path real = fs::weakly_canonical(fs::absolute(path, ec), ec);
  return ec ? fs::absolute(path).lexically_normal() : real;
}

// `inner` is `outer` or lies inside it (both real paths).
bool within(const fs::path& inner, const fs::path& outer) {
  const fs::path relative = inner.lexically_relative(outer);
  return !relative.empty() && *relative.begin() != "..";
}

// The nearest directory at or above `path` that exists (where a directory output would be created).
fs::path nearestExisting(fs::path path) {
  std::error_code ec;
  while (!path.empty() && !fs::exists(path, ec) && path.has_parent_path() && path != path.parent_path())
    path = path.parent_path();
  return path;
}

}  // namespace

// Whether a model folder's reader would take `name` as part of the model.
bool readAsPartOfAModel(const std::string& name) {
  const fs::path p(name);
  if (p.extension() == ".safetensors" || name.ends_with(".index.json")) return true;
  for (const char* companion : kCompanionFiles)
    if (name == companion) return true;
  return false;
}

void InputFootprint::add(const fs::path& path, Kind kind) {
  m_entries.push_back({realPath(path), path.string(), kind});
}

void InputFootprint::addFile(const fs::path& file) {
  add(file, Kind::File);
}
void InputFootprint::addDirectory(const fs::path& directory) {
  add(directory, Kind::Directory);
}
void InputFootprint::addModelFolder(const fs::path& directory) {
  add(directory, Kind::ModelFolder);
}

void InputFootprint::addCheckpoint(const Checkpoint& checkpoint) {
  for (const auto& file : checkpoint.files()) addFile(file->path());
  // Its directory is part of it when the checkpoint is that directory: opened as one, sharded (the shards
  // and index live there), or with the config.json (and tokenizer files) the model is read with.
  std::error_code ec;
  if (fs::is_directory(checkpoint.path(), ec) || checkpoint.sharded() || checkpoint.config())
    addModelFolder(checkpoint.directory());
  if (const auto run = runDirectoryOf(checkpoint.directory())) addDirectory(*run);
}

std::string InputFootprint::overlapWith(const fs::path& out, bool outIsDirectory) const {
  // A link is checked where it leads and where it is: a Hugging Face cache's snapshots/X/config.json links
  // into blobs/, outside the model folder, and the file written is the blob (core/atomic_file.hpp follows
  // links).
  if (std::string input = overlapOf(realPath(out), outIsDirectory); !input.empty()) return input;
  return overlapOf(realPath(out.parent_path().empty() ? fs::path(".") : out.parent_path()) / out.filename(),
                   outIsDirectory);
}

std::string InputFootprint::overlapOf(const fs::path& target, bool outIsDirectory) const {
  for (const Entry& e : m_entries) {
    if (e.real == target) return e.shown;
    if (outIsDirectory && within(e.real, target)) return e.shown;  // the output directory holds the input
    if (e.kind == Kind::File || !within(target, e.real)) continue;
    if (e.kind == Kind::Directory || outIsDirectory) return e.shown;
    // A file in a model folder: refused where the model would read it, or in a folder of the model's own.
    if (target.parent_path() != e.real || readAsPartOfAModel(target.filename().string())) return e.shown;
  }
  return {};
}

void checkOutputs(std::string_view command, const InputFootprint& inputs,
                  std::span<const DeclaredOutput> outputs) {
  std::set<fs::path> seen;
  for (const DeclaredOutput& o : outputs) {
    const bool directory = o.kind == DeclaredOutput::Kind::Directory;
    const std::string where =
        std::string(command) + ": " + o.role + " " + (o.path.empty() ? "''" : o.path.string());
    auto refuse = [&](std::string what, std::string expected, std::string found, std::string hint) {
      throw Error({.what = std::move(what),
                   .where = where,
                   .expected = std::move(expected),
                   .found = std::move(found),
                   .hint = std::move(hint)});
    };
    if (o.path.empty())
      refuse("an empty output path", directory ? "a directory to create" : "a file to write", "''",
             "give a path");
    const fs::path target = realPath(o.path);
    std::error_code ec;
    const fs::file_status status = fs::status(o.path, ec);
    // Two outputs into /dev/null are no clash: nothing is kept there.
    if (!fs::is_character_file(status) && !seen.insert(target).second)
      refuse("two outputs are the same path", "a different path for each output", target.string(),
             "give each output its own path");
    if (const std::string input = inputs.overlapWith(o.path, directory); !input.empty())
      refuse(directory ? "the output directory would overwrite, hold or lie in an input it is read from"
                       : "the output would overwrite or lie in an input it is read from",
             "a path outside " + input, target.string(), "write to another directory");
    if (!directory) {
      if (fs::is_directory(status))
        refuse("the output file is a directory", "a file name", "a directory", "name a file inside it");
      // /dev/null or a pipe is written where it is (core/atomic_file.hpp): its own permission counts, not its
      // directory's.
      if (fs::is_character_file(status) || fs::is_fifo(status)) {
        if (::access(o.path.c_str(), W_OK) != 0)
          refuse("the output is not writable", "a writable device or pipe", o.path.string(),
                 "choose another path");
        continue;
      }
      const fs::path parent = target.parent_path();
      if (!fs::is_directory(parent, ec))
        refuse("the output file's directory does not exist", "an existing directory",
               "no directory " + parent.string(), "create it first or choose another path");
      if (::access(parent.c_str(), W_OK) != 0)
        refuse("the output file's directory is not writable", "a writable directory", parent.string(),
               "choose another path");
      continue;
    }
    if (fs::exists(status) && !fs::is_directory(status))
      refuse("the output directory is a file", "a directory to create", "a file", "choose another path");
    if (fs::is_directory(status) && !o.resumable && !fs::is_empty(o.path, ec))
      refuse("the output directory already exists and is not empty", "a new or empty directory",
             "a directory with files", "choose a new directory, or remove this one first");
    const fs::path existing = nearestExisting(target);
    if (!fs::is_directory(existing, ec) || ::access(existing.c_str(), W_OK) != 0)
      refuse(
          "the output directory cannot be created", "a path under a writable directory",
          existing.string() + (fs::is_directory(existing, ec) ? " is not writable" : " is not a directory"),
          "choose another path");
  }
}

void checkOutputs(std::string_view command, const Checkpoint& input,
                  std::span<const DeclaredOutput> outputs) {
  InputFootprint inputs;
  inputs.addCheckpoint(input);
  checkOutputs(command, inputs, outputs);
}

}  // namespace sharelens
