// A researcher's own words about a run: tags to sort and filter by ("baseline", "lr-sweep") and a free note
// ("diverged after the warmup; rerun with clip 0.5"), kept beside the run in RUN_DIR/notes.json so that they
// travel with it (schema sharelens.notes/1).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace sharelens {

inline constexpr std::string_view kRunNotesSchema = "sharelens.notes/1";

struct RunNotes {
  std::vector<std::string> tags;  // trimmed, non-empty, without commas, each once, in the order given
  std::string note;
  bool empty() const { return tags.empty() && note.empty(); }
};

// "baseline, lr sweep ,,baseline" -> {"baseline", "lr sweep"}: split on commas (splitList: spaces and tabs
// trimmed, empty pieces dropped), repeated tags dropped.
std::vector<std::string> parseTags(std::string_view text);
std::string joinTags(const std::vector<std::string>& tags);  // "baseline, lr sweep"

// The run's notes; empty when it has none. A notes.json that is not the schema's throws a named Error (the
// file, the field, what was expected).
RunNotes readRunNotes(const std::filesystem::path& runDir);
// Writes them atomically (a crash leaves the old file or the new one, never half of one); empty notes
// remove the file.
void writeRunNotes(const std::filesystem::path& runDir, const RunNotes& notes);

}  // namespace sharelens
