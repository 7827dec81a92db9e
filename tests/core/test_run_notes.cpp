// A run's tags and note (core/run_notes.hpp): kept beside the run, written whole or not at all, and a bad
// file is a named error rather than lost notes.
#include <gtest/gtest.h>

#include <fstream>

#include "core/error.hpp"
#include "core/run_notes.hpp"
#include "tests/support/hf_fixtures.hpp"

namespace sharelens {
namespace {

namespace fs = std::filesystem;

TEST(RunNotes, TagsAreTrimmedCommaSeparatedAndEachKeptOnce) {
  EXPECT_EQ(parseTags("baseline, lr sweep ,,baseline,  "),
            (std::vector<std::string>{"baseline", "lr sweep"}));
  EXPECT_TRUE(parseTags("").empty());
  EXPECT_TRUE(parseTags(" , ,").empty());
  EXPECT_EQ(joinTags({"a", "b c"}), "a, b c");
  EXPECT_EQ(parseTags(joinTags({"a", "b c"})), (std::vector<std::string>{"a", "b c"}));
}

TEST(RunNotes, RoundTripThroughTheRunDirectoryAndEmptyNotesRemoveTheFile) {
  const fs::path dir = testing::makeTempDir("run-notes");
  EXPECT_TRUE(readRunNotes(dir).empty()) << "a run without notes";
  const RunNotes notes{{"baseline", "lr sweep"}, "diverged after warmup;\nrerun with clip 0.5"};
  writeRunNotes(dir, notes);
  const RunNotes back = readRunNotes(dir);
  EXPECT_EQ(back.tags, notes.tags);
  EXPECT_EQ(back.note, notes.note);
  std::ifstream in(dir / "notes.json");
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(text.find("sharelens.notes/1"), std::string::npos);
  writeRunNotes(dir, {});
  EXPECT_FALSE(fs::exists(dir / "notes.json"));
  for (const auto& e : fs::directory_iterator(dir)) ADD_FAILURE() << "left behind: " << e.path();
  fs::remove_all(dir);
}

TEST(RunNotes, AMalformedFileIsANamedErrorNotEmptyNotes) {
  const fs::path dir = testing::makeTempDir("run-notes-bad");
  const std::pair<const char*, const char*> cases[] = {
      {"[1, 2]", "the document"},
      {R"({"schema": "sharelens.run/1"})", "schema"},
      {R"({"schema": "sharelens.notes/1", "tags": "baseline"})", "tags"},
      {R"({"schema": "sharelens.notes/1", "tags": [1]})", "tags"},
      {R"({"schema": "sharelens.notes/1", "note": 3})", "note"},
  };
  for (const auto& [content, field] : cases) {
    std::ofstream(dir / "notes.json") << content;
    try {
      readRunNotes(dir);
      ADD_FAILURE() << content << " was read";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("notes.json"), std::string::npos) << what;
      EXPECT_NE(what.find(field), std::string::npos) << what;
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sharelens
