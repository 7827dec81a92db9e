#include "core/run_notes.hpp"

#include <algorithm>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/json_util.hpp"
#include "core/text.hpp"

namespace sharelens {
std::vector<std::string> parseTags(std::string_view text) {
  std::vector<std::string> tags;
  for (std::string_view tag : splitList(text, ','))
    if (std::find(tags.begin(), tags.end(), tag) == tags.end()) tags.emplace_back(tag);
  return tags;
}

std::string joinTags(const std::vector<std::string>& tags) {
  std::string out;
  for (const std::string& t : tags) out += (out.empty() ? "" : ", ") + t;
  return out;
}

RunNotes readRunNotes(const std::filesystem::path& runDir) {
  const std::filesystem::path file = runDir / "notes.json";
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) return {};
  const Json j = readJsonFile(file);
  auto fail = [&](const std::string& field, const std::string& expected, const std::string& found) {
    throw Error({.what = "unreadable run notes",
                 .where = file.string() + ": " + field,
                 .expected = expected,
                 .found = found,
                 .hint = "fix or delete the file; the run itself is unaffected"});
  };
  if (!j.is_object()) fail("the document", "an object", j.type_name());
  if (j.value("schema", "") != kRunNotesSchema)
    fail("schema", std::string(kRunNotesSchema), j.contains("schema") ? j["schema"].dump() : "none");
  RunNotes notes;
  if (j.contains("tags")) {
    if (!j["tags"].is_array()) fail("tags", "an array of strings", j["tags"].type_name());
    std::string joined;
    for (const Json& t : j["tags"]) {
      if (!t.is_string()) fail("tags", "an array of strings", "an element " + std::string(t.type_name()));
      joined += t.get<std::string>() + ",";
    }
    notes.tags = parseTags(joined);
  }
  if (j.contains("note")) {
    if (!j["note"].is_string()) fail("note", "a string", j["note"].type_name());
    notes.note = j["note"].get<std::string>();
  }
  return notes;
}

void writeRunNotes(const std::filesystem::path& runDir, const RunNotes& notes) {
  const std::filesystem::path file = runDir / "notes.json";
  if (notes.empty()) {
    std::error_code ec;
    std::filesystem::remove(file, ec);
    if (ec)
      throw Error({.what = "cannot remove the run notes", .where = file.string(), .found = ec.message()});
    return;
  }
  const Json j = {{"schema", kRunNotesSchema}, {"tags", notes.tags}, {"note", notes.note}};
  writeFileAtomically(file, j.dump(2) + "\n");
}

}  // namespace sharelens
