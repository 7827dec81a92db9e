// Where a command may write (DESIGN.md section 3, "Outputs"). Every command that writes declares, before any
// work, what it reads (an InputFootprint) and what it will write (DeclaredOutput); checkOutputs() refuses
// with a named Error, so nothing is computed that cannot be saved and nothing the command reads is replaced:
//   - an output is never an input, nor inside one: a checkpoint's footprint is each file it reads, its model
//     folder (where its config.json lives), and the whole run directory it belongs to (RUN for
//     RUN/checkpoints/step-N), all by real path (symlinks and ".." resolved). Into a model folder (not a run)
//     a command may write a file the model never reads (a report beside it), never one it would (weights,
//     an index, config.json, tokenizer files) nor a directory;
//   - a directory output never holds an input either (writing it would merge into or replace the input);
//   - a file output's directory exists and is writable and the file is not a directory; a directory output
//     is absent or empty (it is written whole through a StagedDirectory) unless `resumable` says the command
//     continues its own earlier output there;
//   - no two outputs are the same path, and no path is empty.
// The writes themselves then go through AtomicFile / StagedDirectory (core/atomic_file.hpp), which also
// clear what a killed earlier writer left behind.
#pragma once

#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sharelens {

class Checkpoint;

class InputFootprint {
 public:
  void addCheckpoint(const Checkpoint& checkpoint);
  void addFile(const std::filesystem::path& file);            // a file read (a corpus file, a topology)
  void addDirectory(const std::filesystem::path& directory);  // read as a whole (a run, a corpus folder)
  void addModelFolder(
      const std::filesystem::path& directory);  // read by file name (kCompanionFiles, weights)

  // The input (as the user named it) that `out` would overwrite, lie in or hold; empty when none.
  std::string overlapWith(const std::filesystem::path& out, bool outIsDirectory) const;

 private:
  enum class Kind { File, Directory, ModelFolder };
  struct Entry {
    std::filesystem::path real;  // weakly canonical
    std::string shown;           // as the user named it
    Kind kind = Kind::File;
  };
  void add(const std::filesystem::path& path, Kind kind);
  std::string overlapOf(const std::filesystem::path& target, bool outIsDirectory) const;  // a real path
  std::vector<Entry> m_entries;
};

struct DeclaredOutput {
  enum class Kind { File, Directory };
  static DeclaredOutput file(std::filesystem::path path, std::string role) {
    return {std::move(path), Kind::File, std::move(role)};
  }
  static DeclaredOutput directory(std::filesystem::path path, std::string role, bool resumable = false) {
    return {std::move(path), Kind::Directory, std::move(role), resumable};
  }

  std::filesystem::path path;
  Kind kind = Kind::File;
  std::string role;        // how the user gave it: "OUT_DIR", "--json", "--out"
  bool resumable = false;  // a directory the command continues (its own earlier, unfinished output)
};

// Throws a named Error for the first output that may not be written (see the header comment).
void checkOutputs(std::string_view command, const InputFootprint& inputs,
                  std::span<const DeclaredOutput> outputs);
// The common case: a command that reads one checkpoint.
void checkOutputs(std::string_view command, const Checkpoint& input, std::span<const DeclaredOutput> outputs);

}  // namespace sharelens
