// `sharelens analyze`, the whole report of a model as a user runs it: every section written, the default
// report of a small model, an activation that overflows as a named error, bad flags, and Ctrl-C.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/atomic_file.hpp"
#include "core/checkpoint.hpp"
#include "core/json_util.hpp"
#include "core/safetensors.hpp"
#include "tests/app/cli_test_support.hpp"
#include "tests/support/hf_fixtures.hpp"

namespace sharelens {
namespace {

using namespace cli_test;

TEST(CliAnalyze, WritesEverySectionOfTheReport) {
  const auto dir = testing::makeTempDir("cli-analyze");
  testing::writeHfFixture(dir / "m", testing::defaultSpec(Family::Gemma3));
  const auto r = runProcess(kBinary + " analyze " + shellQuote((dir / "m").string()) + " --json " +
                            shellQuote((dir / "a.json").string()) + " --directshare-out " +
                            shellQuote((dir / "shared").string()));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const Json report = readJsonFile(dir / "a.json");
  EXPECT_EQ(report["schema"], "sharelens.analysis/1");
  for (const char* key :
       {"spectra", "head_differences", "layer_differences", "matrix_pca", "directshare", "embedding"})
    EXPECT_TRUE(report.contains(key)) << key;
  EXPECT_EQ(report["head_differences"]["layers"][0]["labels"].size(), 4u + 1u + 1u + 4u)
      << "Gemma: 4 q, 1 k, 1 v and 4 o heads";
  EXPECT_EQ(report["layer_differences"]["maps"].size(), 7u);
  EXPECT_TRUE(std::filesystem::exists(dir / "shared" / "model.safetensors"));
  std::filesystem::remove_all(dir);
}

TEST(CliAnalyze, AModelOfTwoLayersGetsTheDefaultReportAndOneGroupPerLayer) {
  // The default MASA grouping, kl (3 groups), asks for more groups than two layers have: the default is
  // fitted to the model (one group per layer) in analyze and compress; a G typed beyond the layers is an
  // error.
  const auto dir = testing::makeTempDir("cli-analyze-2");
  auto spec = testing::defaultSpec(Family::Llama);
  spec.layers = 2;
  testing::writeHfFixture(dir / "m", spec);
  const std::string model = shellQuote((dir / "m").string());
  auto r = runProcess(kBinary + " analyze " + model + " --json " + shellQuote((dir / "a.json").string()));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(readJsonFile(dir / "a.json")["layer_differences"]["maps"][0]["effective_rank"].size(), 2u);
  std::string ids;
  for (int i = 0; i < 96; ++i) ids += std::to_string((7 * i + 3) % spec.vocab) + " ";
  writeFileAtomically(dir / "ids.txt", ids);
  r = runProcess(kBinary + " analyze " + model + " --activations --token-ids " +
                 shellQuote((dir / "ids.txt").string()) + " --json " + shellQuote((dir / "b.json").string()));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const Json lens = readJsonFile(dir / "b.json")["activations"]["logit_lens"];
  EXPECT_EQ(lens["kl_drift"].size(), 1u) << "one pair of consecutive layers";
  EXPECT_EQ(lens["groups"], Json::parse("[[0], [1]]")) << "one group per layer";
  r = runProcess(kBinary + " analyze " + model + " --activations --masa-groups kl --token-ids " +
                 shellQuote((dir / "ids.txt").string()) + " --json /dev/null");
  EXPECT_EQ(r.exitCode, 0) << "kl is the default grouping, fitted alike: " << r.err;
  r = runProcess(kBinary + " compress " + model + " --ratio 0.8 --calibration-ids " +
                 shellQuote((dir / "ids.txt").string()) + " --out " + shellQuote((dir / "c").string()));
  // Fitted too: the plan is reached, where two single-layer groups keep their layers whole (nothing to
  // compress, a named error with a hint) instead of the group count being refused.
  EXPECT_EQ(r.err.find("group count"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("single-layer groups keep their layer whole"), std::string::npos) << r.err;
  r = runProcess(kBinary + " analyze " + model + " --activations --masa-groups kl:3 --token-ids " +
                 shellQuote((dir / "ids.txt").string()) + " --json /dev/null");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("more groups than layers"), std::string::npos) << r.err;
  std::filesystem::remove_all(dir);
}

TEST(CliAnalyze, AnActivationThatOverflowsIsANamedErrorNotAFullRankRow) {
  // Finite weights can still overflow float32 in the forward pass: layer 1's MLP input projections scaled by
  // 1e25, so that silu(gate) * up is past float's 3.4e38.
  const auto dir = testing::makeTempDir("cli-analyze-inf");
  auto spec = testing::defaultSpec(Family::Llama);
  testing::writeHfFixture(dir / "m", spec);
  {
    const auto ckpt = Checkpoint::open(dir / "m");
    std::vector<EncodedTensor> tensors;
    for (const std::string& name : ckpt->tensorNames()) {
      std::vector<float> v = ckpt->readFloat(name);
      if (name == "model.layers.1.mlp.gate_proj.weight" || name == "model.layers.1.mlp.up_proj.weight")
        for (float& x : v) x *= 1e25f;
      tensors.push_back(EncodedTensor::fromFloats(name, DType::F32, ckpt->at(name).info->shape, v));
    }
    writeSafetensors(dir / "m" / "model.safetensors.new", tensors);
  }
  std::filesystem::rename(dir / "m" / "model.safetensors.new", dir / "m" / "model.safetensors");
  std::string ids;
  for (int i = 0; i < 64; ++i) ids += std::to_string((5 * i + 1) % spec.vocab) + " ";
  writeFileAtomically(dir / "ids.txt", ids);
  const auto r =
      runProcess(kBinary + " analyze " + shellQuote((dir / "m").string()) + " --activations --token-ids " +
                 shellQuote((dir / "ids.txt").string()) + " --json " + shellQuote((dir / "a.json").string()));
  EXPECT_EQ(r.exitCode, 2) << r.err;
  EXPECT_NE(r.err.find("residual stream holds a non-finite value"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("layer 1's contribution"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "a.json")) << "no report half written";
  std::filesystem::remove_all(dir);
}

TEST(CliAnalyze, BadFlagsAreNamedErrors) {
  const auto dir = testing::makeTempDir("cli-analyze");
  testing::writeHfFixture(dir, testing::defaultSpec(Family::Llama));
  auto r = runProcess(kBinary + " analyze " + shellQuote(dir.string()) + " --threshold 1.5 --json /dev/null");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("--threshold"), std::string::npos) << r.err;
  r = runProcess(kBinary + " analyze " + shellQuote(dir.string()) + " --spectra");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("--json"), std::string::npos) << r.err;
  r = runProcess(kBinary + " analyze " + shellQuote(dir.string()) +
                 " --masa --masa-groups 0-7 --json /dev/null");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("layer out of range"), std::string::npos) << r.err;
  r = runProcess(kBinary + " analyze " + shellQuote(dir.string()) + " --spectra --device cuda --json " +
                 shellQuote((dir / "a.json").string()));
  EXPECT_EQ(r.exitCode, 0) << "no GPU is a note, not an error: " << r.err;
  std::filesystem::remove_all(dir);
}

TEST(CliAnalyze, CtrlCCancelsCleanlyAndWritesNothing) {
  const auto dir = testing::makeTempDir("cli-cancel");
  auto spec = testing::defaultSpec(Family::Llama);
  spec.hidden = 512;
  spec.ffn = 1536;
  spec.heads = 8;
  spec.kvHeads = 8;
  spec.headDim = 64;
  spec.layers = 12;
  testing::writeHfFixture(dir / "m", spec);
  // Start in the background and interrupt it until it ends, then report the exit status. A background job of
  // a script starts with SIGINT ignored, so one sent before the analysis installs its handler is lost (on a
  // loaded machine start-up can take longer than any fixed sleep); the handler itself ignores repeats.
  const std::string out = (dir / "a.json").string();
  const auto r =
      runProcess("(" + kBinary + " analyze " + shellQuote((dir / "m").string()) +
                 " --layers --threads 1 --json " + shellQuote(out) +
                 " & pid=$!; while kill -0 $pid 2>/dev/null; do sleep 0.3; kill -INT $pid 2>/dev/null; "
                 "done; wait $pid; echo status=$?)");
  EXPECT_NE(r.out.find("status=130"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.err.find("cancel"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sharelens
