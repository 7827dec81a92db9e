// The real sharelens executable, as a user runs it: output, --json, and exit status 2 with a named error.
#include <gtest/gtest.h>

#include <tuple>

#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>

#include "analysis/registry.hpp"
#include "app/cli/args.hpp"
#include "app/gui/view_id.hpp"
#include "app/plot/figure_registry.hpp"
#include "app/plot/figures.hpp"
#include "core/atomic_file.hpp"
#include "core/checkpoint.hpp"
#include "core/derived_checkpoint.hpp"
#include "core/json_util.hpp"
#include "core/safetensors.hpp"
#include "core/topology_presets.hpp"
#include "tests/app/cli_test_support.hpp"
#include "tests/support/errors.hpp"
#include "tests/support/hf_fixtures.hpp"
#include "tests/support/malformed.hpp"

namespace sharelens {
namespace {

using namespace cli_test;

// `diff` (issue 41 item 8; the numbers are test_checkpoint_diff's): a sharded model against itself changes
// nothing, every tensor listed in the JSON; a missing second path is a named error.
TEST(Cli, DiffListsEveryTensorAndAMissingCheckpointIsANamedError) {
  const auto dir = testing::makeTempDir("cli-diff");
  auto spec = testing::defaultSpec(Family::Llama);
  spec.shards = 2;
  testing::writeHfFixture(dir / "m", spec);
  auto r = runProcess(kBinary + " diff " + shellQuote((dir / "m").string()) + " " +
                      shellQuote((dir / "m").string()) + " --top 3 --json " +
                      shellQuote((dir / "d.json").string()));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("tensors compared, the most changed first"), std::string::npos) << r.out;
  const Json report = readJsonFile(dir / "d.json");
  const auto ckpt = Checkpoint::open(dir / "m");
  ASSERT_EQ(report["tensors"].size(), ckpt->tensorCount());
  for (const Json& t : report["tensors"]) EXPECT_EQ(t["relative_frobenius"], 0.0) << t["name"];
  r = runProcess(kBinary + " diff " + shellQuote((dir / "m").string()) + " " +
                 shellQuote((dir / "gone").string()));
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("gone"), std::string::npos) << r.err;
  fs::remove_all(dir);
}

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

TEST(Cli, RankAgainstStepFollowsARunsMatricesThroughEveryCheckpoint) {
  const auto run = testing::makeTempDir("cli-dynamics");
  std::ofstream(run / "run.json") << R"({"schema":"sharelens.run/1","topology":{"name":"qwen3"}})";
  for (int64_t step : {10, 20, 40}) {
    auto spec = testing::defaultSpec(Family::Qwen3);
    spec.seed = static_cast<uint64_t>(step);
    const fs::path dir = run / "checkpoints" / ("step-00000" + std::to_string(step));
    testing::writeHfFixture(dir, spec);
    std::ofstream(dir / "COMPLETE") << "";
  }
  const std::string svg = (run / "ranks.svg").string();
  auto r =
      runProcess(kBinary + " export --view rank-vs-step --input " + shellQuote(run.string()) +
                 " --matrices layers.0.q,layers.2.k.head.1 --quantity stable-rank --out " + shellQuote(svg));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  std::ifstream in(svg);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("<svg"),
            std::string::npos);  // the figure's numbers are checked in Figures.RankDynamics...
  EXPECT_NE(text.find(">layers.0.q</text>"), std::string::npos) << "the legend names the matrices as text";
  // ESD alpha and the weights' percentile bands against step (issue 41 item 8), each its own figure
  for (const auto& [quantity, title] : {std::pair{"esd-alpha", "ESD power-law alpha against training step"},
                                        std::pair{"weights", "Weight distribution against training step"}}) {
    r = runProcess(kBinary + " export --view rank-vs-step --input " + shellQuote(run.string()) +
                   " --matrices layers.0.q --quantity " + quantity + " --out " + shellQuote(svg));
    ASSERT_EQ(r.exitCode, 0) << quantity << ": " << r.err;
    std::ifstream shown(svg);
    const std::string drawn((std::istreambuf_iterator<char>(shown)), std::istreambuf_iterator<char>());
    EXPECT_NE(drawn.find(title), std::string::npos) << quantity;
  }
  r = runProcess(kBinary + " export --view rank-vs-step --input " + shellQuote(run.string()) +
                 " --matrices layers.0.q --quantity entropy --out " + shellQuote(svg));
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("--quantity"), std::string::npos) << r.err;
  r = runProcess(kBinary + " export --view rank-vs-step --input " + shellQuote(run.string()) +
                 " --matrices layers.7.q --out " + shellQuote(svg));
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("no matrix layers.7.q"), std::string::npos) << r.err;
  r = runProcess(kBinary + " inspect " + shellQuote((run / "checkpoints" / "step-0000010").string()));
  EXPECT_NE(r.out.find("family      qwen3"), std::string::npos) << r.out;
  fs::remove_all(run);
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

TEST(Cli, ShardSymlinkLoopsAndConfigFieldsOfTheWrongTypeAreNamedErrors) {
  const auto dir = testing::makeTempDir("cli-lenient");
  auto spec = testing::defaultSpec(Family::Llama);
  spec.shards = 2;
  testing::writeHfFixture(dir / "loop", spec);
  fs::remove(dir / "loop" / "model-00002-of-00002.safetensors");
  fs::create_symlink("model-00002-of-00002.safetensors", dir / "loop" / "model-00002-of-00002.safetensors");
  auto r = runProcess(kBinary + " inspect " + shellQuote((dir / "loop").string()));
  EXPECT_EQ(r.exitCode, 2) << r.err;
  EXPECT_NE(r.err.find("model-00002-of-00002.safetensors"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("symbolic link"), std::string::npos) << r.err;

  // A forward pass never runs on a silently substituted default.
  testing::writeHfFixture(dir / "eps", testing::defaultSpec(Family::Llama));
  Json config = readJsonFile(dir / "eps" / "config.json");
  config["rms_norm_eps"] = "llama";
  std::ofstream(dir / "eps" / "config.json") << config.dump();
  std::ofstream(dir / "ids.txt") << "1, 2, 3";
  r = runProcess(kBinary + " hidden-states " + shellQuote((dir / "eps").string()) + " --token-ids " +
                 shellQuote((dir / "ids.txt").string()) + " --out " +
                 shellQuote((dir / "h.safetensors").string()));
  EXPECT_EQ(r.exitCode, 2) << r.err;
  EXPECT_NE(r.err.find("field 'rms_norm_eps': wrong type (expected a number, found a string"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(dir / "h.safetensors"));
  fs::remove_all(dir);
}

// Issue 38: a command's usage is written by hand beside its code; an option the command reads that its usage
// does not list (whole: "--eval" is not "--eval-every") is a named error when the arguments are finished,
// so every test that runs the command catches a usage that lost an option.
TEST(Args, AnOptionReadButMissingFromTheUsageIsANamedError) {
  ::setenv("SHARELENS_CHECK_USAGE", "1", 1);
  cli::Args listed("train", "sharelens train [--eval-every N] [--resume]", {"--eval-every", "3"});
  EXPECT_EQ(listed.integer("eval-every", 1, 100), 3);
  EXPECT_FALSE(listed.flag("resume"));
  EXPECT_NO_THROW(listed.finish());

  cli::Args unlisted("train", "sharelens train [--eval-every N]", {"--eval-every", "3"});
  EXPECT_EQ(unlisted.integer("eval-every", 1, 100), 3);
  EXPECT_FALSE(unlisted.option("eval").has_value());  // asked for, not given: still a lost option
  const std::string e = testing::errorOf([&] { unlisted.finish(); });
  EXPECT_NE(e.find("option --eval is read but its usage does not list it"), std::string::npos) << e;
  EXPECT_NE(e.find("sharelens train"), std::string::npos) << e;
  EXPECT_NE(e.find("app/cli/commands.cpp"), std::string::npos) << e;

  ::unsetenv("SHARELENS_CHECK_USAGE");  // a user's command: not failed over a word missing from its help
  cli::Args users("train", "sharelens train [--eval-every N]", {});
  EXPECT_FALSE(users.option("eval").has_value());
  EXPECT_NO_THROW(users.finish());
  ::setenv("SHARELENS_CHECK_USAGE", "1", 1);  // as for the other tests' commands
}

// `--version` names the commit the binary was built from, as git itself reports the checkout it was built in
// (cmake/source_revision.cmake), so that a result can be traced to its code.
TEST(Cli, VersionNamesTheSourceRevisionTheBinaryWasBuiltFrom) {
  const auto r = runProcess(kBinary + " --version");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_match(
      r.out, m, std::regex(R"(sharelens \d+\.\d+\.\d+ \(source (unknown|([0-9a-f]{12,40})(-dirty)?)\)\n)")))
      << r.out;
  const auto head = runProcess("git -C " + shellQuote(SHARELENS_SOURCE_DIR) + " rev-parse HEAD");
  if (head.exitCode != 0) GTEST_SKIP() << "the source tree is not a git checkout: " << head.err;
  ASSERT_TRUE(m[2].matched) << "built in a git checkout, yet no revision: " << r.out;
  EXPECT_EQ(head.out.substr(0, static_cast<size_t>(m[2].length())), m[2].str()) << "rebuild after committing";
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
  for (const char* guiFlag : {"--demo", "--view", "--screenshot"})
    EXPECT_NE(r.out.find(guiFlag), std::string::npos) << guiFlag;
  // The usage text names what the registries hold (issue 38: it had drifted from them), and `export` accepts
  // every figure it names.
  for (const AnalysisKind& k : analysisKinds())
    EXPECT_NE(r.out.find("[--" + std::string(k.id) + (k.id == "embedding-loss" ? " [" : "]")),
              std::string::npos)
        << "analyze --" << k.id;
  // The lists, cut out of the text and compared whole.
  auto between = [&](const std::string& before, const std::string& after) {
    const size_t start = r.out.find(before);
    if (start == std::string::npos) return std::string("(no '" + before + "')");
    const size_t from = start + before.size();
    return r.out.substr(from, r.out.find(after, from) - from);
  };
  auto split = [](const std::string& text, const std::string& separator) {
    std::set<std::string> parts;
    for (size_t at = 0; at <= text.size();) {
      const size_t next = std::min(text.find(separator, at), text.size());
      parts.insert(text.substr(at, next - at));
      at = next + separator.size();
    }
    return parts;
  };
  std::set<std::string> figures = {
      "training",        "rank-vs-step",      "topology",          "topology-graph",   "experiment-forest",
      "experiment-bars", "experiment-curves", "compression-sweep", "tensor-histogram", "head-pair-spectrum"};
  for (const plot::FigureKind& k : plot::figureKinds()) figures.emplace(k.id);
  EXPECT_EQ(split(between("render a figure (", ") without a window"), ", "), figures);
  std::set<std::string> quantities(plot::kRankQuantityNames.begin(), plot::kRankQuantityNames.end());
  EXPECT_EQ(split(between("[--quantity ", "]"), "|"), quantities);
  std::set<std::string> views;
  for (const gui::ViewId v : gui::publicViews()) views.emplace(gui::viewLabel(v));
  EXPECT_EQ(split(between("start on a view (any case): ", "\n"), ", "), views);
  std::set<std::string> patterns;
  for (SharingPattern p : kAllPatterns) patterns.emplace(patternName(p));
  EXPECT_EQ(split(between("topology --preset ", " --layers"), "|"), patterns);
  for (const char* view : {"esd", "esd-alpha", "embedding-loss", "rank-vs-step", "experiment-bars"}) {
    const auto e = runProcess(kBinary + " export --view " + view + " --input /nonexistent --out /tmp/x.png");
    EXPECT_EQ(e.err.find("unknown view"), std::string::npos) << view << ": " << e.err;
  }
  // A mistyped command is an error, not a model path for the GUI.
  r = runProcess(kBinary + " frobnicate");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("unknown command"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'frobnicate'"), std::string::npos) << r.err;
  // An unknown tab is refused before any window opens, with the tabs that exist (by the GUI: a build without
  // it refuses every window alike, TheHeadlessExecutableLinksNoGlGlfwOrImGui).
  r = runProcess(kBinary + " --view Spectra");
  EXPECT_EQ(r.exitCode, 2);
  if (SHARELENS_GUI_BUILT) {
    EXPECT_NE(r.err.find("unknown view"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("Spectrum, Heads"), std::string::npos) << r.err;
  }
  // More unique blocks than layers is refused, not silently clamped.
  const fs::path dir = testing::makeTempDir("cli-bad-args");
  r = runProcess(kBinary + " topology --preset cycle --layers 4 --unique 9 --out " +
                 shellQuote((dir / "t.json").string()));
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("unique blocks out of range"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "t.json"));
  fs::remove_all(dir);
}

// Issue 38: the headless commands need no GL. The executable's own dependencies name no libGL, libOpenGL,
// libGLX, libglfw or libimgui (before the GUI became the plugin libsharelens_gui.so they named libglfw and
// libOpenGL); libglfw and libimgui are nowhere in its dependency closure (Debian's LibTorch brings libGL
// itself, through OpenCV's highgui and Qt5; pip's LibTorch does not). A GUI plugin that cannot load is a
// named error, and the commands run regardless.
TEST(Cli, TheHeadlessExecutableLinksNoGlGlfwOrImGui) {
  const auto needed = runProcess("readelf -d " + shellQuote(kBinary));
  ASSERT_EQ(needed.exitCode, 0) << needed.err;
  ASSERT_NE(needed.out.find("libtorch"), std::string::npos) << needed.out;  // the listing is the real one
  for (const char* gl : {"libGL.so", "libOpenGL", "libGLX", "libglfw", "libimgui"})
    EXPECT_EQ(needed.out.find(gl), std::string::npos) << gl << " in\n" << needed.out;
  const auto closure = runProcess("ldd " + shellQuote(kBinary));
  ASSERT_EQ(closure.exitCode, 0) << closure.err;
  for (const char* gui : {"libglfw", "libimgui"})
    EXPECT_EQ(closure.out.find(gui), std::string::npos) << gui << " in\n" << closure.out;

  auto r = runProcess("SHARELENS_GUI_PLUGIN=/etc/hostname " + kBinary + " --demo");
  EXPECT_EQ(r.exitCode, 2);
  if (SHARELENS_GUI_BUILT) {
    EXPECT_NE(r.err.find("the GUI cannot start"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("/etc/hostname"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("every subcommand runs without them"), std::string::npos) << r.err;
  } else {  // -DSHARELENS_BUILD_GUI=OFF: there is no plugin to look for
    EXPECT_NE(r.err.find("this sharelens has no GUI (expected a subcommand, found --demo)"),
              std::string::npos)
        << r.err;
  }
  const fs::path dir = testing::makeTempDir("cli-headless");
  r = runProcess("SHARELENS_GUI_PLUGIN=/etc/hostname " + kBinary +
                 " topology --preset cycle --layers 4 --unique 2 --d-model 32 --heads 2 --out " +
                 shellQuote((dir / "t.json").string()));
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir / "t.json"));

  // train, analyze and export, with no display and no GUI plugin, the loader reporting every library it
  // loads and for whom (LD_DEBUG=files): nothing of the GUI (GLFW, ImGui, the plugin) is loaded, and a GL
  // library only where Debian's LibTorch needs one (OpenCV's highgui, Qt5), never for ShareLens's own code.
  const std::string headless =
      "env -u DISPLAY -u WAYLAND_DISPLAY SHARELENS_GUI_PLUGIN=/etc/hostname "
      "LD_DEBUG=files " +
      kBinary;
  const std::string run = shellQuote((dir / "run").string());
  const std::vector<std::string> commands = {
      headless + " train --topology " + shellQuote((dir / "t.json").string()) +
          " --corpus brown --steps 2 --batch 2 --threads 1 --eval-every 2 --checkpoint-every 2 --out " + run,
      headless + " analyze " + run + " --spectra --json " + shellQuote((dir / "a.json").string()),
      headless + " export --view spectrum --input " + run + " --out " + shellQuote((dir / "s.pdf").string())};
  for (const std::string& command : commands) {
    r = runProcess(command);
    ASSERT_EQ(r.exitCode, 0) << command << "\n"
                             << r.err.substr(r.err.size() > 4000 ? r.err.size() - 4000 : 0);
    std::istringstream loads(r.err);
    int loaded = 0;
    for (std::string line; std::getline(loads, line);) {
      const size_t file = line.find("file="), by = line.find("needed by ");
      if (file == std::string::npos || by == std::string::npos) continue;
      ++loaded;
      const std::string library = line.substr(file + 5, line.find_first_of(" [;", file + 5) - file - 5);
      const std::string neededBy = line.substr(by + 10, line.find(" [", by + 10) - by - 10);
      for (const char* gui : {"libglfw", "libimgui", "libsharelens_gui"})
        EXPECT_EQ(library.find(gui), std::string::npos) << command << ": " << line;
      const bool gl = library.rfind("libGL", 0) == 0 || library.rfind("libOpenGL", 0) == 0 ||
                      library.rfind("libEGL", 0) == 0;
      if (gl) {
        EXPECT_TRUE(
            neededBy.find("opencv") != std::string::npos || neededBy.find("Qt5") != std::string::npos ||
            neededBy.find("libGL") != std::string::npos || neededBy.find("libOpenGL") != std::string::npos ||
            neededBy.find("libGLX") != std::string::npos || neededBy.find("libEGL") != std::string::npos)
            << command << ": " << library << " loaded for " << neededBy << ", not through LibTorch's OpenCV";
      }
    }
    EXPECT_GT(loaded, 10) << "LD_DEBUG reported no loads: the check saw nothing\n" << r.err.substr(0, 2000);
  }
  EXPECT_TRUE(fs::exists(dir / "s.pdf"));
  fs::remove_all(dir);
}

// Issue-9 bad input: a ratio outside (0, 1), a checkpoint without a tokenizer, a budget no LoRA rank meets --
// each a named error, and nothing written.
TEST(Cli, MethodsRefuseBadInputBeforeWritingAnything) {
  const auto dir = testing::makeTempDir("cli-methods");
  testing::writeHfFixture(dir / "m", testing::defaultSpec(Family::Llama));
  Json config = readJsonFile(dir / "m" / "config.json");
  config["rope_scaling"] =
      nullptr;  // post-training refuses llama3 RoPE scaling; this test is about the tokenizer
  std::ofstream(dir / "m" / "config.json") << config.dump();
  const std::string m = shellQuote((dir / "m").string());
  auto r = runProcess(kBinary + " eval " + m + " --json " + shellQuote((dir / "e.json").string()));
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("no tokenizer for the checkpoint"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "e.json"));
  for (const char* ratio : {"1.5", "0", "1", "nan"}) {
    r = runProcess(kBinary + " train --init " + m + " --postshare " + ratio + " --out " +
                   shellQuote((dir / "ps").string()));
    EXPECT_EQ(r.exitCode, 2) << ratio;
    EXPECT_NE(r.err.find("--postshare"), std::string::npos) << r.err;
  }
  r = runProcess(kBinary + " train --init " + m + " --postshare 0.25 --out " +
                 shellQuote((dir / "ps").string()));
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("no tokenizer for the checkpoint"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "ps"));
  r = runProcess(kBinary + " analyze " + m + " --directshare --ratio 1.2 --json " +
                 shellQuote((dir / "a.json").string()));
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("--ratio"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "a.json"));
  r = runProcess(kBinary + " topology --preset cycle --layers 6 --unique 3 --out " +
                 shellQuote((dir / "t.json").string()));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  r = runProcess(kBinary + " params " + shellQuote((dir / "t.json").string()) +
                 " --solve-lora-rank 10 --out " + shellQuote((dir / "solved.json").string()));
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("no layer LoRA rank comes within 0.5%"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "solved.json"));
  fs::remove_all(dir);
}

// Commands that write a model refuse an output that is, or lies in, the checkpoint they read, and `train`
// refuses a model's folder as its run directory: each would replace or hide the input.
TEST(Cli, AnOutputThatWouldOverwriteTheInputIsRefusedAndTheInputIsUnchanged) {
  const auto dir = testing::makeTempDir("cli-overwrite");
  testing::writeHfFixture(dir / "m", testing::defaultSpec(Family::Llama));
  const std::string m = shellQuote((dir / "m").string());
  const std::string weights = readTextFile(dir / "m" / "model.safetensors");
  const std::string config = readTextFile(dir / "m" / "config.json");
  fs::create_directories(dir / "elsewhere");
  std::ofstream(dir / "ids.txt") << "1 2 3\n";
  const std::string ids = shellQuote((dir / "ids.txt").string());
  for (const std::string& command :
       {" export-hf " + m + " " + m,
        " dump-view " + m + " " + shellQuote((dir / "m" / "model.safetensors").string()),
        " convert " + m + " " + shellQuote((dir / "m" / "f32.safetensors").string()),
        " hidden-states " + m + " --token-ids " + ids + " --out " +
            shellQuote((dir / "m" / "h.safetensors").string())}) {
    const auto r = runProcess(kBinary + command);
    EXPECT_EQ(r.exitCode, 2) << command << ": " << r.err;
    EXPECT_NE(r.err.find("an input it is read from"), std::string::npos) << r.err;
  }
  EXPECT_FALSE(fs::exists(dir / "m" / "f32.safetensors"));
  EXPECT_FALSE(fs::exists(dir / "m" / "h.safetensors"));
  auto r = runProcess(kBinary + " topology --preset vanilla --layers 2 --unique 2 --out " +
                      shellQuote((dir / "t.json").string()));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  r = runProcess(kBinary + " train --topology " + shellQuote((dir / "t.json").string()) +
                 " --corpus brown --steps 2 --threads 1 --out " + m);
  EXPECT_EQ(r.exitCode, 2) << r.err;
  EXPECT_NE(r.err.find("holds a model, not a run"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "m" / "run.json"));
  EXPECT_FALSE(fs::exists(dir / "m" / "checkpoints"));
  EXPECT_EQ(readTextFile(dir / "m" / "model.safetensors"), weights);
  EXPECT_EQ(readTextFile(dir / "m" / "config.json"), config);
  std::ofstream(dir / "far.txt") << "1 2 999\n";  // the fixture's vocabulary is smaller
  r = runProcess(kBinary + " hidden-states " + m + " --token-ids " + shellQuote((dir / "far.txt").string()) +
                 " --out " + shellQuote((dir / "elsewhere" / "h.safetensors").string()));
  EXPECT_EQ(r.exitCode, 2) << r.err;
  EXPECT_NE(r.err.find("token 2 of the input: token id outside the model's vocabulary"), std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(dir / "elsewhere" / "h.safetensors"));
  // Writing beside it is fine.
  r = runProcess(kBinary + " convert " + m + " " +
                 shellQuote((dir / "elsewhere" / "f32.safetensors").string()));
  EXPECT_EQ(r.exitCode, 0) << r.err;
  fs::remove_all(dir);
}

// Issue 40's "Data lost": export-hf into the checkpoint folder of its own input (the newest step of a run),
// into another step of the same run, or into the folder of a file it was given replaced those checkpoints.
// Each is refused with nothing written, and what export-hf does write appears whole or not at all.
TEST(Cli, ExportHfNeverWritesIntoTheRunOrModelFolderItReads) {
  const auto dir = testing::makeTempDir("cli-export-run");
  const fs::path run = testing::writeFixtureRun(dir / "run");
  const fs::path step6 = run / "checkpoints" / "step-0000006", step4 = run / "checkpoints" / "step-0000004";
  testing::writeHfFixture(dir / "fx", testing::defaultSpec(Family::Llama));
  auto snapshot = [&] {
    std::map<std::string, std::string> files;
    for (const auto& e : fs::recursive_directory_iterator(dir))
      if (e.is_regular_file()) files[e.path().string()] = readTextFile(e.path());
    return files;
  };
  const auto before = snapshot();
  auto q = [](const fs::path& p) { return " " + shellQuote(p.string()); };
  for (const std::string& args :
       {q(step6 / "model.safetensors") + q(step6), q(run) + q(step4), q(run) + q(run / "exported"),
        q(dir / "fx" / "model.safetensors") + q(dir / "fx"), q(step4) + q(dir)}) {
    const auto r = runProcess(kBinary + " export-hf" + args);
    EXPECT_EQ(r.exitCode, 2) << args << ": " << r.err;
    EXPECT_NE(r.err.find("an input it is read from"), std::string::npos) << args << ": " << r.err;
  }
  EXPECT_EQ(snapshot(), before) << "every file as it was, nothing added";
  auto r = runProcess(kBinary + " export-hf" + q(run) + " ''");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("OUT_DIR '': an empty output path"), std::string::npos) << r.err;
  r = runProcess(kBinary + " export-hf" + q(run) + q(dir / "out"));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir / "out" / "config.json"));
  for (const auto& e : fs::directory_iterator(dir))
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << "left " << e.path();
  r = runProcess(kBinary + " export-hf" + q(run) + q(dir / "out"));
  EXPECT_EQ(r.exitCode, 2) << "never merged into an existing export";
  EXPECT_NE(r.err.find("already exists and is not empty"), std::string::npos) << r.err;
  fs::remove_all(dir);
}

// export-hf of a Llama-family checkpoint keeps the model's own settings: only the dtype of what it writes
// changes (it once wrote default RoPE base and epsilon and dropped rope_scaling, changing the model).
TEST(Cli, ExportHfOfALlamaCheckpointKeepsItsConfigAndRefusesOtherFamilies) {
  const auto dir = testing::makeTempDir("cli-export-hf");
  testing::writeHfFixture(dir / "m", testing::defaultSpec(Family::Llama));
  Json config = readJsonFile(dir / "m" / "config.json");
  config["rope_theta"] = 500000.0;
  config["rms_norm_eps"] = 1e-6;
  config["bos_token_id"] = 7;
  std::ofstream(dir / "m" / "config.json") << config.dump();
  auto r = runProcess(kBinary + " export-hf " + shellQuote((dir / "m").string()) + " " +
                      shellQuote((dir / "out").string()));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  Json exported = readJsonFile(dir / "out" / "config.json");
  EXPECT_EQ(exported.at("torch_dtype"), "float32");
  exported["torch_dtype"] = config.value("torch_dtype", Json());
  if (exported["torch_dtype"].is_null()) exported.erase("torch_dtype");
  EXPECT_EQ(exported, config) << "every other field as the source had it";
  testing::writeHfFixture(dir / "q", testing::defaultSpec(Family::Qwen2));
  r = runProcess(kBinary + " export-hf " + shellQuote((dir / "q").string()) + " " +
                 shellQuote((dir / "q-out").string()));
  EXPECT_EQ(r.exitCode, 2) << r.err;
  EXPECT_NE(r.err.find("found qwen2"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "q-out"));
  fs::remove_all(dir);
}

// A copy of a Llama fixture with edits: `edit` changes tensors through a TensorEditor, `drop` removes some.
fs::path editedFixture(const fs::path& dir, const std::string& name,
                       const std::function<void(const Checkpoint&, TensorEditor&)>& edit,
                       const std::vector<std::string>& drop = {}) {
  const fs::path source = dir / "source";
  if (!fs::exists(source)) testing::writeHfFixture(source, testing::defaultSpec(Family::Llama));
  const auto ckpt = Checkpoint::open(source);
  TensorEditor editor(*ckpt);
  edit(*ckpt, editor);
  fs::create_directories(dir / name);
  editor.save(dir / name / "model.safetensors", ckpt->metadata(), drop);
  fs::copy_file(source / "config.json", dir / name / "config.json");
  return dir / name;
}

// Issue 15's messages: what went wrong names the file, the tensor, what was expected and found, and a hint.
TEST(Cli, AnalysisErrorsNameTheFileTheTensorAndWhatToDo) {
  const auto dir = testing::makeTempDir("cli-messages");
  const std::string q1 = "model.layers.1.self_attn.q_proj.weight";
  // A NaN in a weight: the error names the file, the tensor slice and the position, not LAPACK.
  const fs::path nan = editedFixture(dir, "nan", [&](const Checkpoint& c, TensorEditor& e) {
    FloatMatrix m = materialize(c, MatrixExpr::fromTensor(q1, 64, 64));
    m(5, 7) = NAN;
    e.write(MatrixExpr::fromTensor(q1, 64, 64), m);
  });
  auto r = runProcess(kBinary + " analyze " + shellQuote(nan.string()) + " --spectra --json " +
                      shellQuote((dir / "a.json").string()));
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find((nan / "model.safetensors").string()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(q1), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("NaN at [5, 7]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Hint:"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("dsyevd"), std::string::npos) << r.err;
  // A projection missing from one layer: named with the file and what to do.
  const fs::path missing = editedFixture(dir, "missing", [](const Checkpoint&, TensorEditor&) {},
                                         {"model.layers.1.self_attn.k_proj.weight"});
  r = runProcess(kBinary + " analyze " + shellQuote(missing.string()) + " --heads --json " +
                 shellQuote((dir / "a.json").string()));
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("layer 1 has no 'k' projection"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(missing.string()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Hint:"), std::string::npos) << r.err;
  // Two all-zero query heads: their pair is listed with a note, not as two identical heads.
  const fs::path zeros = editedFixture(dir, "zeros", [&](const Checkpoint& c, TensorEditor& e) {
    FloatMatrix m = materialize(c, MatrixExpr::fromTensor(q1, 64, 64));
    for (int64_t row = 0; row < 32; ++row)
      for (int64_t col = 0; col < 64; ++col) m(row, col) = 0.0f;
    e.write(MatrixExpr::fromTensor(q1, 64, 64), m);
  });
  r = runProcess(kBinary + " analyze " + shellQuote(zeros.string()) + " --heads --json " +
                 shellQuote((dir / "z.json").string()));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const Json report = readJsonFile(dir / "z.json");  // kept: a range-for over a temporary's member dangles
  bool noted = false;
  for (const Json& p : report["head_differences"]["lowest_pairs"])
    if (p["layer"] == 1 && p.value("note", "") == "both are zero matrices") noted = true;
  EXPECT_TRUE(noted) << "the pair of zero heads q0-q1 of layer 1 carries a note";
  fs::remove_all(dir);
}

// Issue 40's "silent wrong results": each ran to exit 0 on input it misread. Now each is a named error.
TEST(Cli, InputsThatWereReadWronglyWithoutAWordAreNamedErrors) {
  const auto dir = testing::makeTempDir("cli-silent");
  const std::string q1 = "model.layers.1.self_attn.q_proj.weight";
  // A weight stored as I32 was read as the integers it holds.
  {
    const fs::path source = dir / "source";
    testing::writeHfFixture(source, testing::defaultSpec(Family::Llama));
    const auto ckpt = Checkpoint::open(source);
    EncodedTensor ints{q1, DType::I32, {64, 64}, std::vector<std::byte>(64 * 64 * 4, std::byte{1})};
    fs::create_directories(dir / "ints");
    TensorEditor(*ckpt).save(dir / "ints" / "model.safetensors", ckpt->metadata(), {q1}, {ints});
    fs::copy_file(source / "config.json", dir / "ints" / "config.json");
  }
  const std::string ints = shellQuote((dir / "ints").string());
  const std::string json = shellQuote((dir / "a.json").string());
  for (const std::string& command :
       {" analyze " + ints + " --spectra --json " + json,
        " export-hf " + ints + " " + shellQuote((dir / "e").string()),
        " dump-view " + ints + " " + shellQuote((dir / "v.safetensors").string())}) {
    const auto r = runProcess(kBinary + command);
    EXPECT_EQ(r.exitCode, 2) << command << ": " << r.err;
    EXPECT_NE(r.err.find("tensor '" + q1 + "': a weight is stored as integers"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("found I32"), std::string::npos) << r.err;
  }
  const std::string m = shellQuote((dir / "source").string());
  // A config.json model_type of the wrong type was taken as none (the family guessed from tensor names), and
  // a rope_scaling that is not an object was ignored.
  for (const auto& [field, value, named] : std::vector<std::tuple<std::string, Json, std::string>>{
           {"model_type", 7, "field 'model_type'"}, {"rope_scaling", "llama3", "field 'rope_scaling'"}}) {
    const fs::path broken = dir / ("broken-" + field);
    testing::writeHfFixture(broken, testing::defaultSpec(Family::Llama));
    Json config = readJsonFile(broken / "config.json");
    config[field] = value;
    writeFileAtomically(broken / "config.json", config.dump(2));
    writeFileAtomically(dir / "ids.txt", "1,2,3,4");
    const auto r = runProcess(kBinary + " hidden-states " + shellQuote(broken.string()) + " --token-ids " +
                              shellQuote((dir / "ids.txt").string()) + " --out " +
                              shellQuote((dir / ("h-" + field + ".safetensors")).string()));
    EXPECT_EQ(r.exitCode, 2) << field << ": " << r.err;
    EXPECT_NE(r.err.find(named), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("wrong type"), std::string::npos) << r.err;
  }
  // Phi-3's config: rotating part of each head (partial_rotary_factor, which the forward does not do) and
  // longrope factors that are not head_dim / 2 numbers are refused by name, not computed as another model.
  for (const auto& [field, value, named] : std::vector<std::tuple<std::string, Json, std::string>>{
           {"partial_rotary_factor", 0.5, "partial rotary embeddings are not supported"},
           {"rope_scaling",
            Json{{"type", "longrope"}, {"short_factor", {1.0, 1.0}}, {"long_factor", {2.0, 2.0}}},
            "field 'rope_scaling.short_factor': longrope factors of the wrong form"}}) {
    const fs::path broken = dir / ("phi3-" + field);
    testing::writeHfFixture(broken, testing::defaultSpec(Family::Phi3));
    Json config = readJsonFile(broken / "config.json");
    config[field] = value;
    writeFileAtomically(broken / "config.json", config.dump(2));
    const auto r = runProcess(kBinary + " hidden-states " + shellQuote(broken.string()) + " --token-ids " +
                              shellQuote((dir / "ids.txt").string()) + " --out " +
                              shellQuote((dir / ("h-phi3-" + field + ".safetensors")).string()));
    EXPECT_EQ(r.exitCode, 2) << field << ": " << r.err;
    EXPECT_NE(r.err.find(named), std::string::npos) << r.err;
  }
  // An option given twice: the second silently lost to the first.
  auto r = runProcess(kBinary + " analyze " + m + " --spectra --json " + json + " --json " +
                      shellQuote((dir / "b.json").string()));
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("option --json given twice"), std::string::npos) << r.err;
  // A directory where a text file is expected was read as empty text.
  r = runProcess(kBinary + " params " + shellQuote(dir.string()));
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("expected a file, found a directory"), std::string::npos) << r.err;
  // --layer beyond the model drew layer 0's spectra.
  r = runProcess(kBinary + " export --view spectrum --input " + m + " --layer 99 --out " +
                 shellQuote((dir / "s.png").string()));
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("layer out of range"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "s.png"));
  r = runProcess(kBinary + " export --view spectrum --input " + m + " --layer 2 --out " +
                 shellQuote((dir / "s.svg").string()));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const std::string svg = readTextFile(dir / "s.svg");
  EXPECT_NE(svg.find("layers.2.q"), std::string::npos) << "the layer asked for";
  EXPECT_EQ(svg.find("layers.0.q"), std::string::npos) << "and no other";
  // A --json into a missing folder failed only after the analysis.
  r = runProcess(kBinary + " analyze " + m + " --spectra --json " +
                 shellQuote((dir / "no" / "a.json").string()));
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("--json " + (dir / "no" / "a.json").string() +
                       ": the output file's directory does not exist"),
            std::string::npos)
      << r.err;
  fs::remove_all(dir);
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
