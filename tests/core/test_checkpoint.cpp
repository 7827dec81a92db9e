// Opening checkpoints: single files, sharded directories, and the ways a directory can be wrong.
#include <gtest/gtest.h>

#include <algorithm>

#include <cstring>
#include <functional>

#include "core/atomic_file.hpp"
#include "core/checkpoint.hpp"
#include "core/checkpoint_retention.hpp"
#include "core/error.hpp"
#include "core/naming.hpp"
#include "tests/support/errors.hpp"
#include "tests/support/hf_fixtures.hpp"

namespace sharelens {
namespace {

namespace fs = std::filesystem;

using testing::errorOf;

TEST(Checkpoint, ShardedDirectoryResolvesEveryTensor) {
  const auto dir = testing::makeTempDir("ckpt");
  auto spec = testing::defaultSpec(Family::Llama);
  spec.shards = 3;
  testing::writeHfFixture(dir, spec);
  const auto ckpt = Checkpoint::open(dir);
  EXPECT_TRUE(ckpt->sharded());
  EXPECT_EQ(ckpt->files().size(), 3u);
  EXPECT_TRUE(ckpt->find("model.layers.2.mlp.down_proj.weight"));
  EXPECT_TRUE(ckpt->config().has_value());
  EXPECT_TRUE(ckpt->unindexedTensors().empty());
  // Natural order: layers.2 sorts before layers.10 would; here check 0 < 1 < 2 ordering is numeric.
  const auto& names = ckpt->tensorNames();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end(), naturalLess));
  // Opening the index file directly works too.
  EXPECT_EQ(Checkpoint::open(dir / "model.safetensors.index.json")->tensorCount(), ckpt->tensorCount());
  fs::remove_all(dir);
}

TEST(Checkpoint, MissingShardNamesTheShardAndATensor) {
  const auto dir = testing::makeTempDir("ckpt");
  auto spec = testing::defaultSpec(Family::Qwen2);
  spec.shards = 2;
  testing::writeHfFixture(dir, spec);
  fs::remove(dir / "model-00002-of-00002.safetensors");
  const std::string e = errorOf([&] { Checkpoint::open(dir); });
  EXPECT_NE(e.find("missing shard"), std::string::npos) << e;
  EXPECT_NE(e.find("model-00002-of-00002.safetensors"), std::string::npos) << e;
  EXPECT_NE(e.find("Hint"), std::string::npos) << e;
  fs::remove_all(dir);
}

TEST(Checkpoint, IndexCannotPointOutsideTheDirectory) {
  const auto dir = testing::makeTempDir("ckpt");
  writeFileAtomically(dir / "model.safetensors.index.json", R"({"weight_map": {"w": "../../etc/passwd"}})");
  const std::string e = errorOf([&] { Checkpoint::open(dir); });
  EXPECT_NE(e.find("plain file name"), std::string::npos) << e;
  EXPECT_NE(e.find("weight_map['w']"), std::string::npos) << e;
  fs::remove_all(dir);
}

// libFuzzer's find: a number beyond a double threw nlohmann's out_of_range past every handler.
TEST(Checkpoint, AnIndexWithAnOutOfRangeNumberIsANamedError) {
  const auto dir = testing::makeTempDir("ckpt");
  writeFileAtomically(dir / "model.safetensors.index.json",
                      R"({"metadata": {"total_size": 1e1111111}, "weight_map": {}})");
  const std::string e = errorOf([&] { Checkpoint::open(dir); });
  EXPECT_NE(e.find("invalid JSON"), std::string::npos) << e;
  EXPECT_NE(e.find("model.safetensors.index.json"), std::string::npos) << e;
  EXPECT_NE(e.find("Hint"), std::string::npos) << e;
  fs::remove_all(dir);
}

TEST(Checkpoint, AnIndexWithJunkAfterANulByteIsANamedError) {
  // The JSON parser stops at a NUL as if the input ended; the junk after one must not pass unread.
  const auto dir = testing::makeTempDir("ckpt");
  writeFileAtomically(dir / "model.safetensors.index.json",
                      std::string("{\"metadata\": {}, \"weight_map\": {}}\0{junk", 40));
  const std::string e = errorOf([&] { Checkpoint::open(dir); });
  EXPECT_NE(e.find("NUL byte"), std::string::npos) << e;
  EXPECT_NE(e.find("model.safetensors.index.json:1:"), std::string::npos) << e;
  fs::remove_all(dir);
}

TEST(Checkpoint, IndexNamingAnAbsentTensor) {
  const auto dir = testing::makeTempDir("ckpt");
  auto spec = testing::defaultSpec(Family::Llama);
  spec.shards = 2;
  testing::writeHfFixture(dir, spec);
  auto index = readJsonFile(dir / "model.safetensors.index.json");
  index["weight_map"]["model.layers.99.ghost.weight"] = "model-00001-of-00002.safetensors";
  writeFileAtomically(dir / "model.safetensors.index.json", index.dump());
  const std::string e = errorOf([&] { Checkpoint::open(dir); });
  EXPECT_NE(e.find("model.layers.99.ghost.weight"), std::string::npos) << e;
  fs::remove_all(dir);
}

TEST(Checkpoint, DirectoryProblems) {
  const auto dir = testing::makeTempDir("ckpt");
  EXPECT_NE(errorOf([&] { Checkpoint::open(dir); }).find("no checkpoint files"), std::string::npos);
  EXPECT_NE(errorOf([&] { Checkpoint::open(dir / "nope"); }).find("no such file"), std::string::npos);
  testing::writeHfFixture(dir / "a", testing::defaultSpec(Family::Llama));
  fs::copy(dir / "a" / "model.safetensors", dir / "one.safetensors");
  fs::copy(dir / "a" / "model.safetensors", dir / "two.safetensors");
  EXPECT_NE(errorOf([&] { Checkpoint::open(dir); }).find("several safetensors files"), std::string::npos);
  fs::remove_all(dir);
}

TEST(Checkpoint, BrokenConfigJsonSaysLineAndColumn) {
  const auto dir = testing::makeTempDir("ckpt");
  testing::writeHfFixture(dir, testing::defaultSpec(Family::Llama));
  writeFileAtomically(dir / "config.json", "{\n  \"hidden_size\": 64,\n  \"model_type\": llama\n}");
  const std::string e = errorOf([&] { Checkpoint::open(dir); });
  EXPECT_NE(e.find("config.json:3:"), std::string::npos) << e;
  writeFileAtomically(dir / "config.json", R"({"hidden_size": 64, "hidden_size": 65})");
  EXPECT_NE(errorOf([&] { Checkpoint::open(dir); }).find("duplicate key 'hidden_size'"), std::string::npos);
  fs::remove_all(dir);
}

TEST(Naming, NaturalOrderAndTemplates) {
  EXPECT_TRUE(naturalLess("layers.2.w", "layers.10.w"));
  EXPECT_FALSE(naturalLess("layers.10.w", "layers.2.w"));
  EXPECT_TRUE(naturalLess("a", "b"));
  EXPECT_TRUE(naturalLess("x1", "x01a"));
  EXPECT_EQ(expandLayer("model.layers.{L}.mlp", 12), "model.layers.12.mlp");
  EXPECT_EQ(layerIndexAfter("model.layers.12.mlp.w", "model.layers."), 12);
  EXPECT_FALSE(layerIndexAfter("model.layers.x.mlp", "model.layers.").has_value());
}

}  // namespace
}  // namespace sharelens

namespace sharelens {
namespace {

// Retention (train --keep-checkpoints): which of 20 checkpoints, every 10 steps, each policy keeps.
TEST(CheckpointRetention, LogKeepsPowersOfTwoAndTheNewestThreeAllKeepsEveryOneNKeepsN) {
  std::vector<int64_t> steps;
  for (int64_t s = 10; s <= 200; s += 10) steps.push_back(s);
  auto kept = [&](const CheckpointRetention& policy) {
    const auto drop = checkpointsToDrop(steps, policy, 10);
    std::vector<int64_t> out;
    for (int64_t s : steps)
      if (std::find(drop.begin(), drop.end(), s) == drop.end()) out.push_back(s);
    return out;
  };
  EXPECT_EQ(kept(CheckpointRetention::logSpaced()),
            (std::vector<int64_t>{10, 20, 40, 80, 160, 180, 190, 200}));
  EXPECT_EQ(kept(CheckpointRetention::all()), steps);
  EXPECT_EQ(kept(CheckpointRetention::lastN(2)), (std::vector<int64_t>{190, 200}));
  EXPECT_EQ(checkpointsToDrop({15, 30}, CheckpointRetention::logSpaced(), 10), std::vector<int64_t>{});
}

TEST(CheckpointRetention, ParsesAllLogAndCountsAndNamesTheFieldOtherwise) {
  EXPECT_EQ(parseCheckpointRetention("all", "--keep-checkpoints").kind, CheckpointRetention::Kind::All);
  EXPECT_EQ(parseCheckpointRetention("log", "--keep-checkpoints").kind, CheckpointRetention::Kind::Log);
  EXPECT_EQ(parseCheckpointRetention("7", "--keep-checkpoints").newest, 7);
  for (const char* bad : {"0", "-3", "every", "3x", ""}) {
    const std::string e = errorOf([&] { parseCheckpointRetention(bad, "--keep-checkpoints"); });
    EXPECT_NE(e.find("--keep-checkpoints"), std::string::npos) << e;
    EXPECT_NE(e.find("all, log or a count"), std::string::npos) << e;
  }
  EXPECT_EQ(checkpointRetentionToJson(CheckpointRetention::lastN(4)), Json(4));
  EXPECT_EQ(checkpointRetentionToJson(CheckpointRetention::logSpaced()), Json("log"));
}

}  // namespace
}  // namespace sharelens
