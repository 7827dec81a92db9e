// MASA on a pretrained model (issue 10), end to end through the real CLI: a model pretrained here for a few
// hundred steps is compressed in a sweep; at the same target ratio the refined residuals beat the atoms
// alone; every compressed checkpoint opens (inspect), runs (hidden-states), evaluates, exports back to its
// family's layout with the same NLL, and holds exactly the parameters it claims; bad input is refused before
// anything is written.
#include <gtest/gtest.h>

#include <functional>
#include <iostream>

#include "core/atomic_file.hpp"
#include "core/fault_injection.hpp"
#include "core/run_dir.hpp"
#include "tests/support/hf_fixtures.hpp"
#include "tests/support/process.hpp"

namespace sharelens {
namespace {

namespace fs = std::filesystem;
using testing::runProcess;
using testing::shellQuote;

const std::string kBinary = SHARELENS_BINARY;

std::string q(const fs::path& p) {
  return shellQuote(p.string());
}

// One pretrained model for both halves (ctest runs each test in its own process; training takes most of the
// time).
class Compress : public ::testing::Test {
 protected:
  void SetUp() override {
    s_dir = testing::makeTempDir("compress");
    auto r =
        runProcess(kBinary +
                   " topology --preset vanilla --layers 4 --unique 4 --d-model 128 --heads 4 --kv-heads 2 "
                   "--ffn 256 --vocab 512 --context 64 --out " +
                   q(s_dir / "t.json"));
    ASSERT_EQ(r.exitCode, 0) << r.err;
    r = runProcess(kBinary + " train --topology " + q(s_dir / "t.json") + " --corpus brown --out " +
                   q(s_dir / "run") +
                   " --steps 300 --batch 8 --threads 2 --eval-every 300 --checkpoint-every 300");
    ASSERT_EQ(r.exitCode, 0) << r.err;
  }
  void TearDown() override { fs::remove_all(s_dir); }
  void sweepAndRoundTrip();
  void killedSweepResumes();
  void badInput();
  fs::path s_dir;
};

TEST_F(Compress, OnAPretrainedModelSweepRoundTripAndBadInput) {
  sweepAndRoundTrip();
  killedSweepResumes();
  badInput();
}

void Compress::sweepAndRoundTrip() {
  const fs::path sweep = s_dir / "sweep";
  auto r = runProcess(kBinary + " compress " + q(s_dir / "run") +
                      " --sweep 0.8,0.6 --groups kl:2 --eval-tokens 8192 --out " + q(sweep));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  for (const char* f : {"sweep.json", "sweep.md", "sweep.svg", "sweep.png", "sweep.pdf"})
    EXPECT_TRUE(fs::exists(sweep / f)) << f;
  // Drawn again from sweep.json alone (`export --view compression-sweep`, as for another size): the same
  // figure, so the file holds everything the figure shows.
  r = runProcess(kBinary + " export --view compression-sweep --input " + q(sweep) + " --out " +
                 q(s_dir / "again.svg"));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(readTextFile(s_dir / "again.svg"), readTextFile(sweep / "sweep.svg"));
  // A damaged sweep.json names the point and the field; the evaluation's own advice (delete the file, it is
  // computed again) would lose the sweep here and is not given.
  for (const auto& [damage, expected] :
       std::vector<std::pair<std::function<void(Json&)>, std::vector<std::string>>>{
           {[](Json& j) { j["points"][1]["ratio"] = "x"; }, {"points[1]", "ratio"}},
           {[](Json& j) { j["points"][0]["eval"].erase("nll"); }, {"points[0].eval", "point 0 (", "nll"}},
           {[](Json& j) { j["schema"] = 3; }, {"not a compression sweep"}}}) {
    Json j = readJsonFile(sweep / "sweep.json");
    damage(j);
    writeFileAtomically(s_dir / "damaged.json", j.dump());
    r = runProcess(kBinary + " export --view compression-sweep --input " + q(s_dir / "damaged.json") +
                   " --out " + q(s_dir / "damaged.svg"));
    EXPECT_NE(r.exitCode, 0);
    for (const std::string& part : expected)
      EXPECT_NE(r.err.find(part), std::string::npos) << part << ": " << r.err;
    EXPECT_EQ(r.err.find("remove the file"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(s_dir / "damaged.svg"));
  }
  const Json report = readJsonFile(sweep / "sweep.json");
  std::map<std::pair<std::string, double>, Json> points;
  for (const Json& p : report["points"])
    points[{p["method"].get<std::string>(), p["ratio"].get<double>()}] = p;
  ASSERT_EQ(points.size(), 6u);
  for (double ratio : {0.8, 0.6}) {
    const double refined = points.at({"masa", ratio})["eval"]["nll"],
                 atomsOnly = points.at({"masa-noref", ratio})["eval"]["nll"];
    EXPECT_LT(refined, atomsOnly) << "at ratio " << ratio << " the refined residuals must lower the loss";
    for (const char* method : {"masa", "masa-noref", "svd"})
      EXPECT_LE(points.at({method, ratio})["achieved_ratio"].get<double>(), ratio + 1e-12)
          << method << " " << ratio;
  }
  // One compressed model: opens, runs, evaluates; export-hf restores the Llama layout with the same NLL;
  // exact counts.
  const fs::path model = sweep / "masa-0.60";
  const Json compress = readJsonFile(model / "compress.json");
  EXPECT_EQ(compress["parameters"], points.at({"masa", 0.6})["parameters"]);
  r = runProcess(kBinary + " inspect " + q(model) + " --json " + q(s_dir / "inspect.json"));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  int64_t stored = 0;
  const Json inspect =
      readJsonFile(s_dir / "inspect.json");  // kept: a range-for over a temporary's member dangles
  for (const Json& t : inspect["tensors"])
    if (t["name"].get<std::string>().rfind("compressed.", 0) == 0) {
      int64_t n = 1;
      for (int64_t d : t["shape"]) n *= d;
      stored += n;
      EXPECT_NE(t["role"], "other") << t["name"];
    }
  EXPECT_EQ(stored, compress["parameters"].get<int64_t>())
      << "the file holds exactly the parameters the plan printed";
  writeFileAtomically(s_dir / "ids.txt", "5 17 99 3 42 7 8 200 11");
  r = runProcess(kBinary + " hidden-states " + q(model) + " --token-ids " + q(s_dir / "ids.txt") + " --out " +
                 q(s_dir / "h.st"));
  EXPECT_EQ(r.exitCode, 0) << r.err;
  r = runProcess(kBinary + " export-hf " + q(model) + " " + q(s_dir / "export"));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  r = runProcess(kBinary + " eval " + q(s_dir / "export") + " --tokens 8192 --json " + q(s_dir / "e.json"));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NEAR(readJsonFile(s_dir / "e.json")["nll"].get<double>(),
              points.at({"masa", 0.6})["eval"]["nll"].get<double>(), 1e-5);
}

// Issue 40: a sweep killed after its second point keeps the finished points in OUT's partial directory (no
// OUT yet); the same command run again continues from them and ends with the unkilled sweep's numbers; a
// sweep with other settings is refused there, naming it.
void Compress::killedSweepResumes() {
  if (!fault::compiledIn()) {  // the rest of the test still runs
    std::cout << "[ SKIPPED  ] the killed sweep needs a build with -DSHARELENS_FAULT_INJECTION=ON\n";
    return;
  }
  const fs::path sweep = s_dir / "killed";
  const std::string command =
      kBinary + " compress " + q(s_dir / "run") + " --sweep 0.8,0.6 --groups kl:2 --eval-tokens 8192 --out ";
  auto r = runProcess("SHARELENS_TEST_KILL_AFTER_SWEEP_POINT=2 " + command + q(sweep));
  ASSERT_NE(r.exitCode, 0) << "the sweep was to be killed after its second point";
  EXPECT_FALSE(fs::exists(sweep)) << "OUT appears only whole";
  ASSERT_TRUE(fs::exists(s_dir / ".killed.partial" / "masa-noref-0.80" / "eval.json"));
  r = runProcess(command + q(sweep) + " --methods svd");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("an interrupted sweep with other settings"), std::string::npos) << r.err;
  r = runProcess(command + q(sweep));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_FALSE(fs::exists(s_dir / ".killed.partial"));
  const Json resumed = readJsonFile(sweep / "sweep.json"),
             whole = readJsonFile(s_dir / "sweep" / "sweep.json");
  EXPECT_EQ(resumed["resumed_points"], 2);
  EXPECT_EQ(whole["resumed_points"], 0);
  ASSERT_EQ(resumed["points"].size(), whole["points"].size());
  for (size_t i = 0; i < whole["points"].size(); ++i) {
    EXPECT_EQ(resumed["points"][i]["parameters"], whole["points"][i]["parameters"]) << i;
    EXPECT_NEAR(resumed["points"][i]["eval"]["nll"].get<double>(),
                whole["points"][i]["eval"]["nll"].get<double>(), 1e-9)
        << i;
  }
  for (const char* f : {"sweep.md", "sweep.svg", "sweep.png", "sweep.pdf", "svd-0.60/eval.json"})
    EXPECT_TRUE(fs::exists(sweep / f)) << f;
}

void Compress::badInput() {
  const std::string base = kBinary + " compress " + q(s_dir / "run") + " --out " + q(s_dir / "bad");
  struct Case {
    std::string args, mentions;
  };
  const std::vector<Case> cases = {
      {" --ratio 1.5", "compression ratio out of range"},
      {" --ratio 0", "compression ratio out of range"},
      {" --ratio 0.8 --groups 0-1,2-3 --atoms 3", "more atoms than layers in a group"},
      {" --ratio 0.8 --groups 0-1,3-3", "do not cover every layer"},
      {" --ratio 0.8 --calibration brown:20", "too few calibration tokens"},
      {" --ratio 0.8 --method zip", "unknown compression method"},
      {" --ratio 0.3 --groups 0-0,1-1,2-3", "the atoms alone exceed the target"},
      {" --sweep 0.8,1.2", "not a compression ratio"},
      {" --sweep 0.3 --groups 0-0,1-1,2-3",
       "the atoms alone exceed the target"},  // refused after calibration
      // Issue 40: --atoms was checked only with explicit groups; kl:3 of 4 layers makes groups of 2 at most.
      {" --ratio 0.8 --groups kl:3 --atoms 3", "more atoms than any layer group can hold"},
      {" --ratio 0.8 --atoms 0", "more atoms than any layer group can hold"},
      {" --ratio 0.8 --budget eq14", "unknown residual budget"},
      {" --ratio 0.8 --allocation balanced", "unknown rank allocation"},
      {" --ratio 0.8 --logit-lens per-token", "the per-token lens is not part of calibration"},
  };
  for (const Case& c : cases) {
    const auto r = runProcess(base + c.args);
    EXPECT_EQ(r.exitCode, 2) << c.args << ": " << r.err;
    EXPECT_NE(r.err.find(c.mentions), std::string::npos) << c.args << ": " << r.err;
    EXPECT_FALSE(fs::exists(s_dir / "bad")) << c.args << " wrote something";
    EXPECT_FALSE(fs::exists(s_dir / ".bad.partial")) << c.args << " left a partial output";
  }
  // A checkpoint with neither a tokenizer nor calibration ids.
  const fs::path bare = s_dir / "bare";
  fs::create_directories(bare);
  const fs::path step = latestCheckpoint(s_dir / "run")->dir;
  fs::copy_file(step / "model.safetensors", bare / "model.safetensors");
  fs::copy_file(step / "config.json", bare / "config.json");
  const auto r = runProcess(kBinary + " compress " + q(bare) + " --ratio 0.8 --out " + q(s_dir / "bad"));
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("no tokenizer"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(s_dir / "bad"));
  for (const auto& e : fs::directory_iterator(s_dir))
    EXPECT_EQ(e.path().filename().string().find(".bad.tmp"), std::string::npos);
}

}  // namespace
}  // namespace sharelens
