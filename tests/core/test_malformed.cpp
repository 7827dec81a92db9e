// Every malformed file of the corpus gives a sharelens::Error naming the file, the problem, expected vs
// found and a hint -- never a crash. The same test runs under ASan + UBSan in .ci/run.
#include <gtest/gtest.h>

#include <fstream>

#include "core/error.hpp"
#include "core/safetensors.hpp"
#include "tests/support/hf_fixtures.hpp"
#include "tests/support/malformed.hpp"

namespace sharelens {
namespace {

TEST(Malformed, ValidBaselineParses) {
  const auto bytes = testing::validSafetensorsBytes();
  const auto header = parseSafetensorsHeader(bytes, "valid.safetensors");
  EXPECT_EQ(header.tensors.size(), 3u);
  EXPECT_EQ(header.metadata.at("format"), "pt");
}

TEST(Malformed, EveryCaseIsANamedErrorWithAHint) {
  const auto corpus = testing::malformedCorpus();
  ASSERT_GT(corpus.size(), 100u);
  for (const auto& c : corpus) {
    const std::string label = "/data/" + c.name + ".safetensors";
    try {
      parseSafetensorsHeader(c.bytes, label);
      ADD_FAILURE() << c.name << ": parsed without error";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(label), std::string::npos)
          << c.name << ": error does not name the file: " << message;
      EXPECT_FALSE(e.details().hint.empty()) << c.name << ": no hint: " << message;
      for (const std::string& needle : c.mustMention)
        EXPECT_NE(message.find(needle), std::string::npos)
            << c.name << ": missing '" << needle << "' in: " << message;
    }
  }
}

TEST(Malformed, ErrorsThroughTheFileReaderToo) {
  const auto dir = testing::makeTempDir("malformed");
  for (const auto& c : testing::malformedCorpus()) {
    if (c.bytes.size() > (1 << 20)) continue;
    const auto path = dir / (c.name + ".safetensors");
    {
      std::ofstream out(path, std::ios::binary);
      out.write(reinterpret_cast<const char*>(c.bytes.data()), static_cast<std::streamsize>(c.bytes.size()));
    }
    EXPECT_THROW(SafetensorsFile::open(path), Error) << c.name;
  }
  std::filesystem::remove_all(dir);
}

TEST(Malformed, UnknownEntryFieldsAreIgnoredAsTheReferenceReaderDoes) {
  const std::string header =
      R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"extra":{"nested":[1,{"a":2}]},"x":3}})";
  const auto bytes = testing::makeSafetensorsBytes(header, 4);
  const SafetensorsHeader parsed = parseSafetensorsHeader(bytes, "x");
  EXPECT_EQ(parsed.tensors.size(), 1u);
  // Accepted, but said (inspect lists these under notes).
  EXPECT_EQ(parsed.warnings, (std::vector<std::string>{"tensor 'w' has an unknown field 'extra' (ignored)",
                                                       "tensor 'w' has an unknown field 'x' (ignored)"}));
}

TEST(Malformed, TrailingSpacesAfterTheHeaderAreValidAnythingElseIsNot) {
  // As the reference reader (serde_json::from_str on the header bytes): whitespace padding is allowed, any
  // other byte after the JSON object is an error.
  const std::string entry = R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  EXPECT_EQ(parseSafetensorsHeader(testing::makeSafetensorsBytes(entry + "    ", 4), "x").tensors.size(), 1u);
  EXPECT_THROW(parseSafetensorsHeader(testing::makeSafetensorsBytes(entry + "xyz", 4), "x"), Error);
  EXPECT_THROW(parseSafetensorsHeader(testing::makeSafetensorsBytes(entry + "{}", 4), "x"), Error);
}

TEST(Malformed, ZeroSizedTensorsShareAnOffset) {
  const std::string header =
      R"({"e":{"dtype":"F32","shape":[0,5],"data_offsets":[0,0]},"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  const auto bytes = testing::makeSafetensorsBytes(header, 4);
  EXPECT_EQ(parseSafetensorsHeader(bytes, "x").tensors.size(), 2u);
}

}  // namespace
}  // namespace sharelens
