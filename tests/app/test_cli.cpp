// The real sharelens executable, as a user runs it: output, --json, and exit status 2 with a named error.
#include <gtest/gtest.h>

#include <fstream>

#include "core/json_util.hpp"
#include "tests/support/hf_fixtures.hpp"
#include "tests/support/malformed.hpp"
#include "tests/support/process.hpp"

namespace sharelens {
namespace {

namespace fs = std::filesystem;
using testing::runProcess;
using testing::shellQuote;

const std::string kBinary = SHARELENS_BINARY;

TEST(Cli, InspectPrintsFamilyTensorsRolesAndLayers) {
  const auto dir = testing::makeTempDir("cli");
  auto spec = testing::defaultSpec(Family::Qwen2);
  spec.shards = 2;
  testing::writeHfFixture(dir, spec);
  const auto r = runProcess(kBinary + " inspect " + shellQuote(dir.string()) + " --json " +
                            shellQuote((dir / "report.json").string()));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("family      qwen2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("model.layers.2.self_attn.k_proj.bias"), std::string::npos);
  EXPECT_NE(r.out.find("parameters by role"), std::string::npos);
  EXPECT_NE(r.out.find("query heads 4, KV heads 1, head_dim 16"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tied embeddings: no"), std::string::npos);
  const Json report = readJsonFile(dir / "report.json");
  EXPECT_EQ(report["family"], "qwen2");
  EXPECT_EQ(report["files"].size(), 2u);
  EXPECT_EQ(report["layers"].size(), 3u);
  EXPECT_EQ(report["layers"][0]["biases"], Json({"q", "k", "v"}));
  int64_t sum = 0;
  for (const auto& t : report["tensors"]) {
    int64_t n = 1;
    for (int64_t d : t["shape"]) n *= d;
    sum += n;
  }
  EXPECT_EQ(report["parameters"]["total"].get<int64_t>(), sum);
  fs::remove_all(dir);
}

TEST(Cli, MalformedFileExitsWithStatusTwoAndANamedError) {
  const auto dir = testing::makeTempDir("cli");
  for (const auto& c : testing::malformedCorpus()) {
    if (c.name != "offsets_overlap" && c.name != "unknown_dtype" && c.name != "truncated_at_20") continue;
    const auto path = dir / (c.name + ".safetensors");
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(c.bytes.data()), static_cast<std::streamsize>(c.bytes.size()));
    const auto r = runProcess(kBinary + " inspect " + shellQuote(path.string()));
    EXPECT_EQ(r.exitCode, 2) << c.name;
    EXPECT_NE(r.err.find("error: " + path.string()), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("Hint:"), std::string::npos) << r.err;
  }
  fs::remove_all(dir);
}

TEST(Cli, ContradictingConfigAndMissingShardExitTwo) {
  const auto dir = testing::makeTempDir("cli");
  auto spec = testing::defaultSpec(Family::Llama);
  spec.shards = 2;
  testing::writeHfFixture(dir, spec);
  fs::remove(dir / "model-00001-of-00002.safetensors");
  auto r = runProcess(kBinary + " inspect " + shellQuote(dir.string()));
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("missing shard"), std::string::npos) << r.err;
  fs::remove_all(dir);
}

TEST(Cli, BadArgumentsExitTwoWithUsage) {
  auto r = runProcess(kBinary + " inspect");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("usage: sharelens inspect"), std::string::npos) << r.err;
  r = runProcess(kBinary + " inspect /tmp --frobnicate");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("--frobnicate"), std::string::npos) << r.err;
  r = runProcess(kBinary + " --help");
  EXPECT_EQ(r.exitCode, 0);
  EXPECT_NE(r.out.find("inspect"), std::string::npos);
}

TEST(Cli, DumpViewWritesEveryCanonicalMatrix) {
  const auto dir = testing::makeTempDir("cli");
  testing::writeHfFixture(dir / "m", testing::defaultSpec(Family::Gpt2));
  const auto r = runProcess(kBinary + " dump-view " + shellQuote((dir / "m").string()) + " " +
                            shellQuote((dir / "view.safetensors").string()));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const auto file = SafetensorsFile::open(dir / "view.safetensors");
  EXPECT_TRUE(file->find("layers.2.q.head.3"));
  EXPECT_TRUE(file->find("layers.0.down"));
  EXPECT_TRUE(file->find("position_embedding"));
  EXPECT_EQ(file->at("layers.1.o.head.0").shape, (std::vector<int64_t>{64, 16}));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sharelens
