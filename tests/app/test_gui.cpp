// The real window under Xvfb, as a person uses it: `sharelens --screenshot` of every view on a real trained
// run, and of a Hugging Face checkpoint. Each image must have content (not a blank window) and each view must
// look different from the others. The headless `sharelens export` of every view is exercised too.
#include <cairo.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "app/gui/view_id.hpp"
#include "core/arch/family.hpp"
#include "core/atomic_file.hpp"
#include "core/checkpoint.hpp"
#include "core/checkpoint_diff.hpp"
#include "core/directory_lock.hpp"
#include "core/json_util.hpp"
#include "core/naming.hpp"
#include "core/run_dir.hpp"
#include "core/run_notes.hpp"
#include "core/topology_presets.hpp"
#include "tests/support/gguf_fixtures.hpp"
#include "tests/support/hf_fixtures.hpp"
#include "tests/support/llama2c_fixtures.hpp"
#include "tests/support/process.hpp"
#include "tests/support/torch_zip_fixtures.hpp"

namespace sharelens {
namespace {

namespace fs = std::filesystem;
using testing::runProcess;
using testing::shellQuote;

const std::string kBinary = SHARELENS_BINARY;
// Every view `--view` opens, from the list the app itself keeps (app/gui/view_id.hpp).
std::vector<std::string> viewLabels() {
  std::vector<std::string> out;
  for (const gui::ViewId v : gui::publicViews()) out.emplace_back(gui::viewLabel(v));
  return out;
}

struct Image {
  int width = 0, height = 0;
  std::vector<uint32_t> pixels;
  static Image load(const fs::path& p) {
    Image img;
    cairo_surface_t* s = cairo_image_surface_create_from_png(p.c_str());
    if (cairo_surface_status(s) != CAIRO_STATUS_SUCCESS) return img;
    img.width = cairo_image_surface_get_width(s);
    img.height = cairo_image_surface_get_height(s);
    const int stride = cairo_image_surface_get_stride(s);
    const unsigned char* data = cairo_image_surface_get_data(s);
    for (int y = 0; y < img.height; ++y)
      for (int x = 0; x < img.width; ++x)
        img.pixels.push_back(reinterpret_cast<const uint32_t*>(data + y * stride)[x] & 0xffffff);
    cairo_surface_destroy(s);
    return img;
  }
  size_t distinctColors() const { return std::set<uint32_t>(pixels.begin(), pixels.end()).size(); }
  // Fraction of pixels that differ from the most common (background) colour.
  double inked() const {
    std::map<uint32_t, size_t> counts;
    for (uint32_t p : pixels) ++counts[p];
    size_t top = 0;
    for (auto& [c, n] : counts) top = std::max(top, n);
    return 1.0 - static_cast<double>(top) / static_cast<double>(pixels.size());
  }
  Image crop(int x0, int y0, int x1, int y1) const {  // [x0, x1) x [y0, y1), clamped to the image
    Image c;
    x0 = std::clamp(x0, 0, width), x1 = std::clamp(x1, x0, width);
    y0 = std::clamp(y0, 0, height), y1 = std::clamp(y1, y0, height);
    c.width = x1 - x0, c.height = y1 - y0;
    for (int y = y0; y < y1; ++y)
      for (int x = x0; x < x1; ++x) c.pixels.push_back(pixels[static_cast<size_t>(y) * width + x]);
    return c;
  }
  double differenceFrom(const Image& o) const {
    if (o.pixels.size() != pixels.size()) return 1.0;
    size_t diff = 0;
    for (size_t i = 0; i < pixels.size(); ++i) diff += pixels[i] != o.pixels[i];
    return static_cast<double>(diff) / static_cast<double>(pixels.size());
  }
};

std::string xvfb(const std::string& command) {
  return "xvfb-run -a -s '-screen 0 1600x1000x24' " + command;
}

class Gui : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    s_dir = testing::makeTempDir("gui");
    // A real (short) training run of a shared topology on Brown: every view has something to show.
    Topology t = debugTopology();
    t.masa = {true, {Proj::Q, Proj::O}, 2, {}, false, 8, 16};
    t.name = "gui-test-cycle-masa";
    writeTopologyFile(t, s_dir / "t.json");
    const auto r = runProcess(
        kBinary + " train --topology " + shellQuote((s_dir / "t.json").string()) +
        " --corpus brown --steps 30 --batch 4 --threads 2 --checkpoint-every 10 --eval-every 10 --out " +
        shellQuote((s_dir / "run").string()));
    ASSERT_EQ(r.exitCode, 0) << r.err;
    auto spec = testing::defaultSpec(Family::Qwen2);
    spec.structured = true;
    spec.layers = 4;
    testing::writeHfFixture(s_dir / "qwen", spec);
    // The same model as a PyTorch checkpoint (pytorch_model.bin beside its config.json), and a llama2.c file.
    const auto qwen = Checkpoint::open(s_dir / "qwen");
    std::vector<testing::TorchTensor> tensors;
    for (const std::string& name : qwen->tensorNames())
      tensors.push_back({name, qwen->at(name).info->shape, qwen->readFloat(name)});
    fs::create_directories(s_dir / "qwen-torch");
    fs::copy_file(s_dir / "qwen" / "config.json", s_dir / "qwen-torch" / "config.json");
    const std::vector<std::byte> bin = testing::torchZipBytes(tensors);
    std::ofstream(s_dir / "qwen-torch" / "pytorch_model.bin", std::ios::binary)
        .write(reinterpret_cast<const char*>(bin.data()), static_cast<std::streamsize>(bin.size()));
    testing::writeLlama2c(s_dir / "stories.bin", {});
    testing::writeGgufFromHf(s_dir / "qwen", s_dir / "qwen.gguf", {.matrixType = testing::kGgmlQ8_0});
    testing::writeLlama2c(s_dir / "llama2c-home" / "stories.bin", {});  // a folder the browser shows whole
  }
  static void TearDownTestSuite() { fs::remove_all(s_dir); }
  static fs::path s_dir;
};
fs::path Gui::s_dir;

// Scripted input on the real window: the app runs visibly under Xvfb with --ui-state, which says where its
// widgets are on the screen; xdotool moves the X pointer there and clicks, exactly as a person's mouse
// would; the test then reads what the views hold. Skipped where xdotool is missing (CI installs it).
class GuiInput : public Gui {
 protected:
  void SetUp() override {
    if (runProcess("command -v xdotool").exitCode != 0) GTEST_SKIP() << "xdotool is not installed";
  }
  // Shell functions for the script: `waitfor TEXT` until the state file (spaces removed) holds TEXT;
  // `hover KEY` moves the pointer to the widget as the state file gives it, and waits until the app has seen
  // it there (GLFW reads the pointer only once the window has focus or the pointer has entered it: a move
  // made before that is seen only when the pointer moves again, and a click would land where ImGui last saw
  // the pointer; it fails, naming the widget, when the app never sees it); `click KEY` also clicks;
  // `dblclick KEY`; `frozen COMMAND...` runs the command (xdotool's input) while the app is stopped, so
  // that all its events reach the app in one frame, as quick input does on a slow frame.
  static std::string helpers(const fs::path& state) {
    const std::string s = shellQuote(state.string());
    return "flat() { tr -d ' \\n' < " + s +
           " 2>/dev/null; }\n"
           "waitfor() { for i in $(seq 300); do flat | grep -qF \"$1\" && return 0; sleep 0.2; done; "
           "echo \"timed out waiting for $1\" >&2; flat >&2; return 1; }\n"
           "pos() { /usr/bin/python3 -c 'import json, sys; x, y = "
           "json.load(open(sys.argv[1]))[\"items\"][sys.argv[2]]; "
           "print(x, y)' " +
           s +
           " \"$1\" 2>/dev/null; }\n"
           "hover() { xy=; for i in $(seq 300); do xy=$(pos \"$1\") && break; sleep 0.2; done; "
           "[ -n \"$xy\" ] || { echo \"no widget $1 on screen\" >&2; flat >&2; return 1; }; "
           "for i in $(seq 25); do xdotool mousemove_relative 1 1 mousemove $xy; sleep 0.2; "
           "flat | grep -qF \"\\\"mouse\\\":[${xy/ /,}]\" && { sleep 0.1; return 0; }; done; "
           "echo \"the app did not see the pointer at $1 ($xy)\" >&2; flat >&2; return 1; }\n"
           "click() { hover \"$1\" && xdotool click ${2:-} 1 && sleep 0.3; }\n"
           "dblclick() { click \"$1\" '--repeat 2 --delay 80'; }\n"
           "frozen() { kill -STOP $app || return 1; \"$@\"; rc=$?; sleep 0.2; kill -CONT $app; return $rc; "
           "}\n";
  }
  static Json readState(const fs::path& state) {
    std::ifstream in(state);
    return Json::parse(in);
  }
  // The matrices of the shared run with the smallest and the largest power-law alpha, from the report
  // `sharelens analyze --esd` writes (empty names when it failed, which the caller asserts on).
  static std::pair<std::string, std::string> alphaExtremes() {
    static std::pair<std::string, std::string> found;  // the suite's run does not change: analysed once
    if (!found.first.empty()) return found;
    const fs::path report = s_dir / "esd.json";
    const auto analyzed = runProcess(kBinary + " analyze " + shellQuote((s_dir / "run").string()) +
                                     " --esd --json " + shellQuote(report.string()));
    EXPECT_EQ(analyzed.exitCode, 0) << analyzed.err;
    if (analyzed.exitCode != 0) return {};
    std::string smallest, largest;
    double lo = INFINITY, hi = -INFINITY;
    const Json esd = readState(report)["esd"];  // a copy: the loop must not walk into a destroyed temporary
    for (const Json& e : esd)
      if (e["alpha"].is_number()) {
        if (e["alpha"].get<double>() < lo) lo = e["alpha"], smallest = e["name"];
        if (e["alpha"].get<double>() > hi) hi = e["alpha"], largest = e["name"];
      }
    found = {smallest, largest};
    return found;
  }
  // Runs `app` (environment, binary and arguments) visibly under Xvfb with --ui-state, then each step in
  // turn; the first step that fails ends the session with exit status 3 + its index. The app is closed at
  // the end either way.
  struct Session {
    testing::ProcessResult result;
    fs::path state;
  };
  static Session session(const std::string& name, const std::string& app,
                         const std::vector<std::string>& steps) {
    const fs::path state = s_dir / ("ui-" + name + ".json");
    std::string script = helpers(state) + app + " --ui-state " + shellQuote(state.string()) + " & app=$!\n";
    for (size_t i = 0; i < steps.size(); ++i)
      script += "{ " + steps[i] + "; } || { kill $app; exit " + std::to_string(3 + i) + "; }\n";
    script += "kill $app; wait $app; exit 0\n";
    const fs::path file = s_dir / (name + ".sh");
    std::ofstream(file) << script;
    return {runProcess(xvfb("bash " + shellQuote(file.string()))), state};
  }
  static std::string binaryOn(const std::string& input) {
    return kBinary + " " + shellQuote((s_dir / input).string());
  }
  static std::string dataHome(const fs::path& dir) {  // settings and runs of the session kept apart
    return "XDG_DATA_HOME=" + shellQuote(dir.string()) + " XDG_CONFIG_HOME=" + shellQuote(dir.string()) + " ";
  }
  // The test run copied as three runs of an experiment's folder, OUT/ARM/seed-K: arm "cycle" with seeds 1 and
  // 2 (the run's own topology), and arm "other" with seed 1 (its topology renamed "other", and `changeOther`
  // applied to its run.json).
  static void copyRunAsArms(const fs::path& out, const std::function<void(Json&)>& changeOther) {
    for (const auto& [arm, seed] : {std::pair{"cycle", 1}, {"cycle", 2}, {"other", 1}}) {
      const fs::path dir = out / arm / ("seed-" + std::to_string(seed));
      fs::create_directories(dir.parent_path());
      fs::copy(s_dir / "run", dir, fs::copy_options::recursive);
      Json record = readState(dir / "run.json");
      record["seed"] = seed;
      record["config"]["seed"] = seed;
      if (std::string(arm) == "other") {
        record["topology"]["name"] = "other";
        changeOther(record);
      }
      std::ofstream(dir / "run.json") << record.dump(2);
    }
  }
};

// Model view: clicking a tensor's row opens its details, computed over every element.
TEST_F(GuiInput, ClickingATensorShowsItsDetails) {
  const auto ckpt = Checkpoint::open(resolveModelPath(s_dir / "run"));
  ASSERT_GE(ckpt->tensorNames().size(), 3u);
  const std::string tensor = ckpt->tensorNames()[2];  // the third row, on screen without scrolling
  const auto s = session("model", binaryOn("run") + " --view model --exit-after 60",
                         {"click tensor/" + tensor, "waitfor '\"ready\":true'", "sleep 0.5"});
  ASSERT_EQ(s.result.exitCode, 0) << s.result.err;
  const Json details = readState(s.state)["state"]["model/details"];
  EXPECT_EQ(details["tensor"], tensor);
  EXPECT_EQ(details["ready"], true);
  EXPECT_EQ(details["numel"].get<uint64_t>(), ckpt->at(tensor).info->numel);
  EXPECT_GT(details["std"].get<double>(), 0.0);
}

// Issue 41 item 7: before a run's first evaluation the validation panel says so in words instead of drawing
// an empty 0-1 plot; with evaluations it plots them.
TEST_F(GuiInput, TheValidationPanelSaysNoEvaluationYetBeforeTheFirst) {
  const fs::path fresh = s_dir / "not-evaluated";
  fs::create_directories(fresh);
  fs::copy(s_dir / "run", fresh, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  std::ifstream in(fresh / "metrics.jsonl");
  std::string kept;
  for (std::string line; std::getline(in, line);) {
    if (line.find("\"val_loss\"") == std::string::npos) {
      kept += line + "\n";
      continue;
    }
    Json point = Json::parse(line);
    point.erase("val_loss");  // as logged before the first evaluation
    kept += point.dump() + "\n";
  }
  in.close();
  std::ofstream(fresh / "metrics.jsonl") << kept;
  for (const auto& [input, expected] : {std::pair{"not-evaluated", "noevaluationyet"}, {"run", "plot"}}) {
    const auto s =
        session(std::string("validation-") + input, binaryOn(input) + " --view training --exit-after 60",
                {"waitfor '\"training/validation\":\"" + std::string(expected) + "\"'"});
    EXPECT_EQ(s.result.exitCode, 0) << input << ": " << s.result.err;
  }
}

// Issue 41 item 8: the Model view compares the shown checkpoint with another step of its run, tensor by
// tensor (core/checkpoint_diff, as `sharelens diff`): the most changed first, as the library finds them.
TEST_F(GuiInput, TheModelViewShowsEachTensorsDifferenceFromAnotherStep) {
  const auto latest = Checkpoint::open(resolveModelPath(s_dir / "run"));
  const auto early = Checkpoint::open(checkpointDirectory(s_dir / "run", 10));
  const CheckpointDifference expected = diffCheckpoints(*latest, *early);
  ASSERT_GE(expected.tensors.size(), 3u);
  const auto s = session("model-diff", binaryOn("run") + " --view model --exit-after 60",
                         {"click model/diff-with", "click 'model/diff-with/step 10'",
                          "waitfor '\"model/diff\":{\"other\"' && waitfor '\"ready\":true'", "sleep 0.5"});
  ASSERT_EQ(s.result.exitCode, 0) << s.result.err;
  const Json diff = readState(s.state)["state"]["model/diff"];
  EXPECT_EQ(diff["other"], checkpointDirectory(s_dir / "run", 10).string());
  ASSERT_EQ(diff["top"].size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(diff["top"][i][0], expected.tensors[i].name);
    EXPECT_DOUBLE_EQ(diff["top"][i][1].get<double>(), expected.tensors[i].relative);
  }
  EXPECT_GT(expected.tensors[0].relative, 0) << "ten steps of training changed something";
}

// File > Open (Ctrl+O) lists the home folder with run directories marked; a double-click on one opens it.
// Both are typed while the app is stopped: a key's press and release, and a double-click's two clicks, each
// reach it within one frame, as quick input does on a slow frame. ImGui 1.86 alone sees neither (CI saw both
// fail under load); the platform layer latches them.
TEST_F(GuiInput, TheOpenDialogsBrowserOpensARunWithADoubleClick) {
  const auto s =
      session("open", "HOME=" + shellQuote(s_dir.string()) + " " + kBinary + " --exit-after 60",
              {"waitfor '\"frame\"'", "sleep 0.5", "frozen xdotool key ctrl+o", "hover browser/run",
               "frozen xdotool click --repeat 2 --delay 80 1", "waitfor '\"workspace/model\"'", "sleep 0.3"});
  ASSERT_EQ(s.result.exitCode, 0) << s.result.err;
  const std::string model = readState(s.state)["state"]["workspace/model"];
  EXPECT_EQ(fs::path(model).parent_path().parent_path(), s_dir / "run")
      << model << ": not a checkpoint of the run";
}

// Issue 41 item 2: a file that fails to open leaves the model being worked on where it was, and only what
// opened goes to Recent. The path is typed into the Open dialog (Ctrl+O puts the cursor in its path box).
TEST_F(GuiInput, AFailedOpenKeepsTheCurrentModelAndStaysOutOfRecent) {
  const fs::path broken = s_dir / "broken-open.safetensors";
  std::ofstream(broken) << "not a safetensors file at all";
  const fs::path after = s_dir / "after-failed-open.json";
  const auto s = session(
      "failed-open", dataHome(s_dir / "xdg-failed-open") + binaryOn("qwen") + " --exit-after 60",
      {"waitfor '\"workspace/model\"'", "frozen xdotool key ctrl+o", "hover open/path",
       "xdotool type --delay 5 " + shellQuote(broken.string()),
       "xdotool keydown Return; sleep 0.3; xdotool keyup Return",  // held across a frame, as a person does
       "waitfor '\"errors/count\":1'", "sleep 1", "flat > " + shellQuote(after.string())});
  ASSERT_EQ(s.result.exitCode, 0) << s.result.err;
  const Json state = readState(after)["state"];
  EXPECT_EQ(state.value("workspace/model", Json()), (s_dir / "qwen").string())
      << "the failed open replaced the model";
  EXPECT_NE(state.value("errors/notice", "").find("broken-open.safetensors"), std::string::npos)
      << "the error shows as a notice";
  const std::vector<std::string> recent = state.value("recent", std::vector<std::string>{});
  EXPECT_EQ(recent, std::vector<std::string>{(s_dir / "qwen").string()}) << "Recent holds only what opened";
}

// Issue 41 item 1: the Designer's U slider keeps what it is set to and rebuilds the current pattern with it
// (it snapped back on every frame before, so a U could only come from a shipped preset); a pattern's
// button then builds that pattern with the same U. A click 24 px into the slider sets it near its minimum.
// The name follows the design (describeDesign: its pattern, L, U, then its LoRA and embeddings) until the
// user types one, which then stays through edits.
TEST_F(GuiInput, TheDesignersUniqueBlocksSliderRebuildsThePatternAndStaysWhereItIsSet) {
  const fs::path after = s_dir / "after-slider.json", named = s_dir / "after-naming.json";
  const auto s =
      session("designer-u", dataHome(s_dir / "xdg-designer") + kBinary + " --view designer --exit-after 60",
              {"waitfor '\"designer/topology\"'", "click designer/unique", "sleep 0.5",
               "waitfor '\"name\":\"cycle-L6-U1-'", "click designer/pattern/sequence",
               "waitfor '\"name\":\"sequence-L6-U1-'", "sleep 0.5", "flat > " + shellQuote(after.string()),
               "click designer/name", "frozen xdotool key ctrl+a", "xdotool type --delay 5 mine",
               "waitfor '\"name\":\"mine\"'", "click designer/pattern/cycle",
               "waitfor '\"pattern\":\"cycle\"'", "sleep 0.5", "flat > " + shellQuote(named.string())});
  ASSERT_EQ(s.result.exitCode, 0) << s.result.err;
  const Json designed = readState(after)["state"]["designer/topology"];
  EXPECT_EQ(designed["slider_u"], 1) << "the slider snapped back";
  EXPECT_EQ(designed["unique"], 1);
  EXPECT_EQ(designed["pattern"], "sequence");
  EXPECT_EQ(readState(named)["state"]["designer/topology"]["name"], "mine") << "the user's name stays";
}

// Issue 41 item 1: the Designer designs more than the layer pattern. Ticking MASA makes the attention matrix
// atoms (and takes head sharing off: the two parameterisations exclude each other), unticking the tied
// embeddings unties them, and a click near the start of the attention LoRA slider lowers its rank; the
// topology holds each and the name says it (describeDesign: "-masa<S>-<projections>", "-tied" only when tied,
// "-lora<r>" only with a rank).
TEST_F(GuiInput, TheDesignersMasaEmbeddingAndLoraControlsChangeTheDesign) {
  const fs::path before = s_dir / "designer-controls-before.json", after = s_dir / "designer-controls.json";
  const auto s =
      session("designer-controls",
              dataHome(s_dir / "xdg-designer-controls") + kBinary + " --view designer --exit-after 60",
              {"waitfor '\"designer/topology\"'", "sleep 0.5", "flat > " + shellQuote(before.string()),
               "click designer/masa", "waitfor '\"masa\":true'", "click designer/tied",
               "waitfor '\"tied_embeddings\":false'", "click designer/attention-lora", "sleep 0.5",
               "flat > " + shellQuote(after.string())});
  ASSERT_EQ(s.result.exitCode, 0) << s.result.err;
  const Json was = readState(before)["state"]["designer/topology"],
             is = readState(after)["state"]["designer/topology"];
  EXPECT_EQ(was["masa"], false);
  EXPECT_EQ(was["tied_embeddings"], true);
  EXPECT_EQ(is["masa"], true);
  EXPECT_EQ(is["head_sharing"], 0) << "no head sharing under MASA";
  EXPECT_EQ(is["tied_embeddings"], false);
  EXPECT_NE(is["attention_lora"], was["attention_lora"]) << "the slider did not set the rank";
  EXPECT_LT(is["attention_lora"].get<int>(), 16) << "24 px into a 120 px slider of 0..64";
  const std::string name = is["name"];
  EXPECT_NE(name.find("-masa"), std::string::npos) << name;
  EXPECT_EQ(name.find("-tied"), std::string::npos) << name;
  EXPECT_EQ(name.find("-lora") != std::string::npos, is["attention_lora"].get<int>() > 0) << name;
}

// Issue 41 item 1: dragging down the Designer's attention column with brush block 0 paints every layer the
// pointer passed, also those a quick stroke crosses between two frames (here one jump from layer 1 to layer
// 4: before, layers 2 and 3 kept their blocks), leaves the FFN column as it was and names the design after
// what it now is. The Designer opens on the demo design (Cycle, 0 1 2 0 1 2), so every layer of the stroke
// but layer 3 changes block. Then the brush dragged to its end (a new block) and a stroke over FFN layers 0
// to 2 gives the three one new block: the brush follows its block through the renumbering (before, each layer
// after the first got another block).
TEST_F(GuiInput, ADragDownTheDesignersColumnPaintsEveryLayerItPasses) {
  const Topology demo = demoTopology();
  ASSERT_GE(demo.attention.assign.size(), 6u);
  // Layers `from` to `to` painted one block, the blocks then numbered in order of first use, as the Designer
  // keeps them (-1: a block no layer has yet).
  auto painted = [](std::vector<int64_t> assign, size_t from, size_t to, int64_t block) {
    for (size_t l = from; l <= to; ++l) assign[l] = block;
    std::map<int64_t, int64_t> renumbered;
    for (int64_t& b : assign)
      b = renumbered.emplace(b, static_cast<int64_t>(renumbered.size())).first->second;
    return assign;
  };
  const std::vector<int64_t> attention = painted(demo.attention.assign, 1, 4, 0);
  const std::vector<int64_t> ffn = painted(demo.ffn.assign, 0, 2, -1);
  const fs::path before = s_dir / "before-drag.json", after = s_dir / "after-drag.json",
                 afterFfn = s_dir / "after-ffn-drag.json";
  const auto s = session(
      "designer-drag", dataHome(s_dir / "xdg-drag") + kBinary + " --view designer --exit-after 60",
      {"waitfor '\"designer/cell/attention/4\"'", "sleep 0.5", "flat > " + shellQuote(before.string()),
       "hover designer/cell/attention/1", "xdotool mousedown 1", "sleep 0.4",
       "xy=$(pos designer/cell/attention/4) && xdotool mousemove $xy", "sleep 0.4", "xdotool mouseup 1",
       "waitfor '\"attention\":" + Json(attention).dump() + "'", "sleep 0.5",
       "flat > " + shellQuote(after.string()),
       // the brush slider dragged past its right end: the highest number, a new block
       "hover designer/brush", "xdotool mousedown 1", "sleep 0.3", "xdotool mousemove_relative 400 0",
       "sleep 0.3", "xdotool mouseup 1",
       "waitfor '\"brush\":" + std::to_string(demo.ffn.uniqueBlocks()) + "'", "hover designer/cell/ffn/0",
       "xdotool mousedown 1", "sleep 0.4", "xy=$(pos designer/cell/ffn/2) && xdotool mousemove $xy",
       "sleep 0.4", "xdotool mouseup 1", "waitfor '\"ffn\":" + Json(ffn).dump() + "'", "sleep 0.5",
       "flat > " + shellQuote(afterFfn.string())});
  ASSERT_EQ(s.result.exitCode, 0) << s.result.err;
  const Json was = readState(before)["state"]["designer/topology"];
  const Json now = readState(after)["state"]["designer/topology"];
  EXPECT_EQ(was["attention"].get<std::vector<int64_t>>(), demo.attention.assign);
  EXPECT_EQ(now["attention"].get<std::vector<int64_t>>(), attention) << was.dump() << "\n" << now.dump();
  EXPECT_EQ(now["ffn"], was["ffn"]);
  EXPECT_EQ(now["name"].get<std::string>().rfind("custom-L" + std::to_string(attention.size()), 0), 0u)
      << now["name"];
  const Json last = readState(afterFfn)["state"]["designer/topology"];
  EXPECT_EQ(last["ffn"].get<std::vector<int64_t>>(), ffn);
  EXPECT_EQ(last["attention"], now["attention"]);
}

// Issue 41 item 7: the status line names a plot's gestures (zoom, pan, box, reset, legend) while the pointer
// is on a plot, and says the usual otherwise.
TEST_F(GuiInput, TheStatusLineNamesThePlotGesturesOnAPlot) {
  const auto s =
      session("gestures", dataHome(s_dir / "xdg-gestures") + kBinary + " --view designer --exit-after 60",
              {"waitfor '\"designer/graph\"'", "hover designer/name", "waitfor '\"status/line\":\"ready\"'",
               "hover designer/graph", "waitfor '\"status/line\":\"plot:wheelzoomsx'", "hover designer/name",
               "waitfor '\"status/line\":\"ready\"'"});
  EXPECT_EQ(s.result.exitCode, 0) << s.result.err;
}

// Issue 41 item 4: the Experiments view's seeds and steps are what its Run trains, as `experiment run --seeds
// K
// --steps N`: the Designer's topology against its matched baseline (a file of 3 seeds) run with 2 seeds of 3
// steps leaves each arm exactly seeds 1 and 2, each trained 3 steps. A click near the left end of the seeds
// slider (2 to 3) sets 2; the steps box is typed into.
TEST_F(GuiInput, TheExperimentsSeedsAndStepsAreWhatItsRunTrains) {
  const fs::path home = s_dir / "xdg-experiments";
  fs::remove_all(home);
  const auto s = session(
      "experiments-size", dataHome(home) + kBinary + " --view experiments --exit-after 400",
      {"waitfor '\"experiments/from-designer\"'", "click experiments/from-designer",
       "waitfor '\"experiments/run-size\":{\"seeds\":3,\"steps\":0}'", "click experiments/seeds",
       // a click into a number box selects its text, which the typed digit replaces
       "waitfor '\"experiments/run-size\":{\"seeds\":2,'", "click experiments/steps", "sleep 0.5",
       "xdotool type --delay 50 3", "waitfor '\"experiments/run-size\":{\"seeds\":2,\"steps\":3}'",
       "click experiments/run",
       // training and evaluating six tiny runs (three arms, two seeds): up to three times waitfor's minute
       "waitfor '\"experiments/outcome\"' || waitfor '\"experiments/outcome\"' || "
       "waitfor '\"experiments/outcome\"'",
       "waitfor '\"experiments/outcome\":\"finished\"'"});
  ASSERT_EQ(s.result.exitCode, 0) << s.result.err;
  std::map<std::string, std::set<std::string>> seedsOfArm;
  for (const fs::path& run : runDirectoriesBelow(home / "sharelens" / "experiments", 3)) {
    SCOPED_TRACE(run.string());
    seedsOfArm[run.parent_path().filename().string()].insert(run.filename().string());
    MetricsReader metrics(run / "metrics.jsonl");
    metrics.poll();
    ASSERT_FALSE(metrics.points().empty());
    EXPECT_EQ(metrics.points().back().step, 3);
  }
  const std::set<std::string> twoSeeds{"seed-1", "seed-2"};
  ASSERT_EQ(seedsOfArm.size(), 3u) << "the Designer's arm, its matched baseline and the A/A arm";
  for (const auto& [arm, seeds] : seedsOfArm) EXPECT_EQ(seeds, twoSeeds) << arm;
}

// Issue 41 item 4: a folder of runs two levels deep (ARM/seed-K) opens on the Training view, its seeds
// named apart in the legend;
// "group seeds" draws the two seeds of one arm as one curve and the other arm as its own; "analyse" on a run
// opens the Spectrum view (a tab to the left of Training: before, a view's request for a tab on its left was
// dropped, and "analyse" stayed on Training).
TEST_F(GuiInput, SeedsOfAnArmAreOneCurveAndAnalyseOpensTheSpectrum) {
  const fs::path runs = s_dir / "seeds";
  copyRunAsArms(runs, [](Json&) {});
  const auto s =
      session("seeds", dataHome(s_dir / "xdg-seeds") + binaryOn("seeds") + " --exit-after 60",
              {"waitfor '\"view\":\"Training\"'",
               // the two seeds told apart in the legend (they read the same, twice)
               "waitfor '\"training/curves\":[\"gui-test-cycle-masa(seed1)\",\"gui-test-cycle-masa(seed2)\","
               "\"other\"]'",
               "click training/group-seeds",
               "waitfor '\"training/curves\":[\"gui-test-cycle-masa(2seeds)\",\"other\"]'",
               "click run/other/analyse", "waitfor '\"view\":\"Spectrum\"'"});
  EXPECT_EQ(s.result.exitCode, 0) << s.result.err;
}

// Issue 41 item 4: the run table says what sets each run apart (here the seed and, for one run, the learning
// rate; its other topology is its name, the line above, and is not said twice), shows the tags a run's
// notes.json holds, and its notes dialog writes them back.
TEST_F(GuiInput, TheRunTableComparesConfigsAndKeepsTagsAndNotes) {
  const fs::path runs = s_dir / "compare";
  copyRunAsArms(runs, [](Json& other) { other["config"]["lr"] = 0.01; });
  writeRunNotes(runs / "cycle" / "seed-1", {{"reference"}, "the first seed"});
  const fs::path other = runs / "other" / "seed-1";
  // (The state is matched with its spaces removed.)
  const auto s =
      session("compare", dataHome(s_dir / "xdg-compare") + binaryOn("compare") + " --exit-after 60",
              {"waitfor '\"view\":\"Training\"'", "waitfor '\"differs\":\"lr0.01,seed1\"'",
               "waitfor '\"tags\":[\"reference\"]'", "click run/other/notes", "click notes-dialog/tags",
               "xdotool type --delay 5 'ablation, lr high'", "click notes-dialog/save",
               "waitfor '\"tags\":[\"ablation\",\"lrhigh\"]'"});
  ASSERT_EQ(s.result.exitCode, 0) << s.result.err;
  EXPECT_EQ(readRunNotes(other).tags, (std::vector<std::string>{"ablation", "lr high"}));
  // Each run's tokens/s and memory (issue 41 item 4): its last step's metrics.jsonl line (events such as
  // "checkpoint" follow it), and the prediction run.json recorded beside the measured peak.
  std::ifstream metrics(other / "metrics.jsonl");
  std::string line, lastLine;
  while (std::getline(metrics, line))
    if (line.find("\"tokens_per_s\"") != std::string::npos) lastLine = line;
  ASSERT_FALSE(lastLine.empty()) << "no step in " << other / "metrics.jsonl";
  const Json last = Json::parse(lastLine), record = readState(other / "run.json");
  const Json shown = readState(s.state)["state"]["training/runs"];
  const auto row = std::find_if(shown.begin(), shown.end(), [](const Json& r) {
    return r["label"].get<std::string>().find("other") != std::string::npos;
  });
  ASSERT_NE(row, shown.end()) << shown.dump();
  ASSERT_TRUE(row->contains("throughput_memory")) << row->dump();
  const std::string throughput = (*row)["throughput_memory"][0], memory = (*row)["throughput_memory"][1];
  EXPECT_NE(throughput.find(humanCount(last["tokens_per_s"].get<double>()) + " tok/s"), std::string::npos)
      << throughput << " against " << lastLine;
  EXPECT_EQ(memory, "tensors " + humanBytes(last["tensor_peak_bytes"].get<double>()) + " / " +
                        humanBytes(record["memory_estimate"]["total_bytes"].get<double>()))
      << lastLine;
}

// Issue 41 item 6: Ctrl+S on the Training view offers a file named after the run it shows, not after the
// checkpoint the analysis views hold (before: "<model>-step30-training-loss.png").
TEST_F(GuiInput, CtrlSOnTheTrainingViewNamesTheFileAfterTheRun) {
  const auto s = session("ctrl-s", dataHome(s_dir / "xdg-ctrl-s") + binaryOn("run") + " --exit-after 60",
                         {"waitfor '\"view\":\"Training\"'", "waitfor '\"training/curves\"'", "sleep 0.5",
                          "frozen xdotool key ctrl+s", "waitfor '/gui-test-cycle-masa-training-loss.png\"'"});
  EXPECT_EQ(s.result.exitCode, 0) << s.result.err;
}

// Launching from the Designer leaves the analysis views on the model they show unless "follow" is ticked.
TEST_F(GuiInput, ALaunchedRunIsFollowedOnlyWhenAsked) {
  const fs::path after = s_dir / "after-launch.json";
  const auto s =
      session("launch", dataHome(s_dir / "xdg-launch") + binaryOn("run") + " --view designer --exit-after 90",
              {"waitfor '\"workspace/model\"'", "click designer/launch", "waitfor '\"state\":\"running\"'",
               "sleep 0.5", "flat > " + shellQuote(after.string())});
  ASSERT_EQ(s.result.exitCode, 0) << s.result.err;
  const Json state = readState(after);
  const std::string model = state["state"]["workspace/model"];
  EXPECT_EQ(fs::path(model).parent_path().parent_path(), s_dir / "run") << "the views jumped to " << model;
  EXPECT_EQ(state["state"]["workspace/following"], (s_dir / "run").string())
      << "the views follow the launched run instead of the one opened";
  EXPECT_EQ(state["view"], "Training");
}

// ESD tab: clicking the alpha header sorts the matrices by their power-law alpha, smallest first (checked
// against the report `sharelens analyze --esd` writes); a second click sorts largest first.
TEST_F(GuiInput, TheEsdTableSortsByAlphaWhenItsHeaderIsClicked) {
  const auto [smallest, largest] = alphaExtremes();
  ASSERT_FALSE(smallest.empty());
  const auto s = session("esd", binaryOn("run") + " --view esd --exit-after 60",
                         {"click esd/header/alpha", "waitfor '\"esd/first\":\"" + smallest + "\"'",
                          "click esd/header/alpha", "waitfor '\"esd/first\":\"" + largest + "\"'"});
  EXPECT_EQ(s.result.exitCode, 0) << "smallest alpha " << smallest << ", largest " << largest << "\n"
                                  << s.result.err;
}

// Training view: Stop asks first; "Keep training" leaves the run training, "Stop" stops it with a checkpoint.
TEST_F(GuiInput, StopAsksBeforeStoppingARun) {
  const fs::path data = s_dir / "xdg", afterKeep = s_dir / "after-keep.json",
                 afterEscape = s_dir / "after-escape.json";
  const auto s = session(
      "train", dataHome(data) + kBinary + " --demo --exit-after 120",
      {"waitfor '\"state\":\"running\"'", "click 'run/demo-cycle-L6-U3/stop'", "click 'stop-dialog/keep'",
       "sleep 1", "flat > " + shellQuote(afterKeep.string()), "click 'run/demo-cycle-L6-U3/stop'",
       "waitfor '\"stop-dialog/keep\"'", "frozen xdotool key Escape", "sleep 1",
       "flat > " + shellQuote(afterEscape.string()), "click 'run/demo-cycle-L6-U3/stop'",
       "click 'stop-dialog/stop'", "waitfor '\"label\":\"demo-cycle-L6-U3\",\"state\":\"stopped\"'"});
  ASSERT_EQ(s.result.exitCode, 0) << s.result.err;
  for (const fs::path& after : {afterKeep, afterEscape}) {  // "Keep training", then Escape: still running
    std::ifstream in(after);
    const std::string kept((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_NE(kept.find("\"label\":\"demo-cycle-L6-U3\",\"state\":\"running\""), std::string::npos)
        << after.filename() << " stopped the run: " << kept;
    EXPECT_EQ(kept.find("\"stop-dialog/keep\""), std::string::npos)
        << after.filename() << " left the dialog open";
  }
  EXPECT_TRUE(latestCheckpoint(data / "sharelens" / "demo" / "model").has_value()) << "no checkpoint on stop";
}

// Issue 41 items 7 and 4: closing the window while runs train asks first ("Keep working" keeps them
// training); "Stop the runs and quit" stops each with a checkpoint and quits. A later session that opens
// the run directory can continue the stopped run from that checkpoint (before, only the session that had
// started a run could continue it).
TEST_F(GuiInput, QuittingWhileTrainingAsksAndTheStoppedRunContinuesInTheNextSession) {
  const fs::path data = s_dir / "xdg-quit", afterKeep = s_dir / "after-quit-keep.json";
  const auto s = session(
      "quit", dataHome(data) + kBinary + " --demo --exit-after 120",
      {"waitfor '\"state\":\"running\"'", "sleep 0.5", "frozen xdotool key ctrl+q",
       "waitfor '\"quit/asking\"'", "click quit/keep", "sleep 1", "flat > " + shellQuote(afterKeep.string()),
       "kill -0 $app", "frozen xdotool key ctrl+q", "waitfor '\"quit/asking\"'", "click quit/stop",
       "for i in $(seq 300); do kill -0 $app 2>/dev/null || break; sleep 0.2; done",
       "! kill -0 $app 2>/dev/null"});
  ASSERT_EQ(s.result.exitCode, 0) << s.result.err;
  std::ifstream keep(afterKeep);
  const std::string kept((std::istreambuf_iterator<char>(keep)), std::istreambuf_iterator<char>());
  EXPECT_NE(kept.find("\"state\":\"running\""), std::string::npos)
      << "Keep working stopped the runs: " << kept;
  const fs::path model = data / "sharelens" / "demo" / "model";
  const auto saved = latestCheckpoint(model);
  ASSERT_TRUE(saved.has_value()) << "quitting saved no checkpoint";
  // Stopped by the quit, not by --exit-after or a crash: the run logged its stop, and its checkpoint is at
  // the step it stopped at.
  std::ifstream metrics(model / "metrics.jsonl");
  int64_t stoppedAt = -1;
  for (std::string line; std::getline(metrics, line);)
    if (line.find("\"event\":\"stop\"") != std::string::npos) stoppedAt = Json::parse(line)["step"];
  ASSERT_GE(stoppedAt, 0) << "no stop event in the model run's metrics";
  EXPECT_EQ(saved->step, stoppedAt) << "the checkpoint is not the one saved when it stopped";

  const auto next = session("continue",
                            dataHome(s_dir / "xdg-continue") + binaryOn("xdg-quit/sharelens/demo/model") +
                                " --view training --exit-after 60",
                            {"click run/demo-cycle-L6-U3/continue",
                             "waitfor '\"label\":\"demo-cycle-L6-U3\",\"state\":\"running\"'", "sleep 1"});
  EXPECT_EQ(next.result.exitCode, 0) << "the reopened run did not continue: " << next.result.err;
}

// Issue 41 item 4: a run whose process was killed (no stop or finish logged, no process holding its
// directory's lock) reads "interrupted" and continues from its last checkpoint; while another process holds
// the lock it offers no "continue" (before, only a logged stop offered it, so a crashed run never could).
TEST_F(GuiInput, AKilledRunReadsInterruptedAndContinuesFromItsLastCheckpoint) {
  const fs::path killed = s_dir / "killed", held = s_dir / "while-held.json";
  fs::copy(s_dir / "run", killed, fs::copy_options::recursive);
  fs::remove_all(killed / "checkpoints" / "step-0000030");  // killed after step 20's checkpoint
  ASSERT_EQ(latestCheckpoint(killed).value().step, 20);
  {
    std::ifstream in(killed / "metrics.jsonl");
    std::string kept;
    for (std::string line; std::getline(in, line);)
      if (line.find("\"event\":\"finish\"") == std::string::npos) kept += line + "\n";
    in.close();
    std::ofstream(killed / "metrics.jsonl") << kept;
  }
  const std::string app = binaryOn("killed") + " --view training --exit-after 60";
  {
    const DirectoryLock writer(killed, "training run");  // as a live `sharelens train` holds it
    const auto s = session(
        "killed-held", dataHome(s_dir / "xdg-killed-held") + app,
        {"waitfor '\"label\":\"gui-test-cycle-masa\"'", "sleep 1.5", "flat > " + shellQuote(held.string())});
    ASSERT_EQ(s.result.exitCode, 0) << s.result.err;
  }
  std::ifstream in(held);
  const std::string whileHeld((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(whileHeld.find("run/gui-test-cycle-masa/continue"), std::string::npos)
      << "a run another process writes offered continue";
  EXPECT_EQ(whileHeld.find("interrupted"), std::string::npos) << whileHeld;
  const auto s = session(
      "killed", dataHome(s_dir / "xdg-killed") + app,
      {"waitfor '\"label\":\"gui-test-cycle-masa\",\"state\":\"interrupted\"'",
       "click run/gui-test-cycle-masa/continue",
       "for i in $(seq 150); do [ -d " + shellQuote((killed / "checkpoints" / "step-0000030").string()) +
           " ] && break; sleep 0.2; done",
       "sleep 1"});
  ASSERT_EQ(s.result.exitCode, 0) << s.result.err;
  const auto latest = latestCheckpoint(killed);
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->step, 30) << "continued from step 20 to the run's end";
}

// Issue 41 item 7: CSV goes through the Save As dialog; Ctrl+A selects the path box's text, so a new path
// replaces it; a folder that is not there is said and made only by "Create the folder and save" (Enter does
// not make it); Ctrl+S opens the dialog for the view's figure and Escape closes it.
TEST_F(GuiInput, SaveAsAsksBeforeMakingAFolderAndEscapeClosesIt) {
  const fs::path target = s_dir / "new-folder" / "deeper" / "curves.csv", after = s_dir / "after-save.json";
  const auto s = session(
      "save-as", binaryOn("run") + " --view training --exit-after 60",
      {"click training/export-csv", "waitfor '\"export/path\"'", "click export/path",
       "waitfor '\"export/editing\":true'",  // the click reached the path box
       "frozen xdotool key ctrl+a", "xdotool type --delay 5 " + shellQuote(target.string()),
       // Ctrl+A selected the offered path, so the typed one replaced it (on a fresh machine the
       // exports folder is missing too: the path is what says the typing landed).
       "waitfor '\"export/path\":\"" + target.string() + "\"'", "waitfor '\"export/missing-folder\":true'",
       "xdotool keydown Return; sleep 0.3; xdotool keyup Return", "sleep 0.5",
       "waitfor '\"export/missing-folder\":true'",  // Enter saved nothing: the dialog is still asking
       "click export/save",
       "for i in $(seq 50); do [ -f " + shellQuote(target.string()) + " ] && break; sleep 0.2; done",
       "frozen xdotool key ctrl+s", "waitfor '\"export/path\"'", "frozen xdotool key Escape", "sleep 1",
       "flat > " + shellQuote(after.string())});
  ASSERT_EQ(s.result.exitCode, 0) << s.result.err;
  ASSERT_TRUE(fs::exists(target)) << "the CSV was not written where the dialog was told";
  std::ifstream csv(target);
  std::string header;
  std::getline(csv, header);
  EXPECT_NE(header.find("step"), std::string::npos) << header;
  EXPECT_FALSE(readState(after)["state"].contains("export/path")) << "Escape left the dialog open";
}

// Issue 41 item 7: dialogs are opaque. The Open dialog drawn over two views as different as the Heads map (a
// colour heatmap) and the Spectrum (lines on white) is the same picture, pixel for pixel, but for its text
// cursor's blink: with ImGui's default popup opacity (94%) the views showed through and most of its pixels
// differed. Screenshots are taken on SIGUSR1 with the dialog open; the probe gives its rectangle.
TEST_F(GuiInput, TheOpenDialogIsOpaqueOverEveryView) {
  const fs::path shot = s_dir / "dialog-shot.png";
  const auto saved = [&](const std::string& name) { return s_dir / ("dialog-" + name); };
  std::vector<std::string> steps = {"waitfor '\"tab/Spectrum\"'"};
  int shots = 0;
  // Each view twice: as drawn, then with the dialog open over it (the state file gives the dialog's place).
  for (const auto& [view, drawn] :
       {std::pair{"Heads", "export/heads-layer0/pdf"}, {"Spectrum", "export/spectrum/pdf"}}) {
    const std::string v = view;
    const auto take = [&](const std::string& name) {
      return "kill -USR1 $app && waitfor '\"screenshots\":" + std::to_string(++shots) + "' && cp " +
             shellQuote(shot.string()) + " " + shellQuote(saved(name + ".png").string());
    };
    steps.insert(
        steps.end(),
        {"click tab/" + v, "waitfor '\"view\":\"" + v + "\"' && waitfor '\"" + drawn + "\"' && sleep 1",
         take(v), "frozen xdotool key ctrl+o", "waitfor '\"dialog/open\"' && sleep 0.5", take(v + "-open"),
         "cp " + shellQuote((s_dir / "ui-dialog.json").string()) + " " +
             shellQuote(saved(v + "-open.json").string()),
         "frozen xdotool key Escape", "sleep 0.5"});
  }
  // HOME: the dialog lists the same folder both times, whoever runs the test
  const auto s =
      session("dialog",
              "HOME=" + shellQuote(s_dir.string()) + " " + dataHome(s_dir / "xdg-dialog") + binaryOn("run") +
                  " --exit-after 90 --screenshot " + shellQuote(shot.string()) + " --screenshot-on-signal",
              steps);
  ASSERT_EQ(s.result.exitCode, 0) << s.result.err;
  std::map<std::string, Image> behind, dialogs;
  for (const std::string view : {"Heads", "Spectrum"}) {
    const Json probe = readState(saved(view + "-open.json"));
    ASSERT_TRUE(probe["rects"].contains("dialog/open")) << view;
    const Json rect = probe["rects"]["dialog/open"];  // centred: it may sit a pixel apart the second time
    const Image open = Image::load(saved(view + "-open.png")), shown = Image::load(saved(view + ".png"));
    ASSERT_GT(open.width, 0) << view;
    ASSERT_GT(shown.width, 0) << view;
    dialogs[view] = open.crop(rect[0], rect[1], rect[2], rect[3]);
    behind[view] = shown.crop(rect[0], rect[1], rect[2], rect[3]);
  }
  ASSERT_GT(dialogs["Heads"].pixels.size(), 100000u) << "a dialog of 560 px and more";
  ASSERT_EQ(dialogs["Heads"].width, dialogs["Spectrum"].width);
  ASSERT_EQ(dialogs["Heads"].height, dialogs["Spectrum"].height);
  // What the dialog covers differs between the two views over most of its place: a translucent dialog would
  // show it.
  EXPECT_GT(behind["Heads"].differenceFrom(behind["Spectrum"]), 0.3) << "the views look alike there";
  EXPECT_LT(dialogs["Heads"].differenceFrom(dialogs["Spectrum"]), 0.005)
      << "the views show through the Open dialog";
}

// Issue 38: the views build their figures through the figure registry (app/plot/figure_registry.hpp), so what
// a view exports and what `sharelens export --view` renders of the same model are one figure -- before, the
// two were built by separate code and already differed in names and subtitles. Byte for byte, per view; the
// Training view's panels and `export --view training` through plot::trainingPanels, with the runs labelled
// by core/run_groups' runLabel (the command used to label and smooth them by its own code). Every analysis
// view's first figure, with the analyses' default parameters on both sides.
// The figures a view shows of what was clicked in it are exported the same way: the Model view's histogram of
// a tensor (`--view tensor-histogram --tensor NAME`) and the Heads view's spectrum of a clicked pair
// (`--view head-pair-spectrum --layer L --pair A,B`, read back from the view's probe).
TEST_F(GuiInput, AViewsExportIsTheHeadlessExportOfTheSameFigure) {
  const std::string tensor = Checkpoint::open(resolveModelPath(s_dir / "run"))->tensorNames()[2];
  // The first row of the Heads view's lowest-rank pairs (the heads/lowest/ item nearest the top).
  const std::string firstPair =
      "/usr/bin/python3 -c 'import json, sys; items = json.load(open(sys.argv[1]))[\"items\"]; "
      "print(min((k for k in items if k.startswith(\"heads/lowest/\")), key=lambda k: items[k][1]))' " +
      shellQuote((s_dir / "ui-same-head-pair-spectrum.json").string());
  struct Case {
    std::string view, figure, button;
    std::vector<std::string> before;  // script steps that make the figure
    std::string args;                 // of `export`, beyond --view, --input and --out
  };
  const std::vector<Case> cases = {
      {"Heads", "heads", "heads-layer0"},
      {"Layers", "layers", "layers-q"},
      {"Spectrum", "spectrum", "spectrum"},
      {"MASA", "masa-coefficients", "masa-coefficients"},
      {"DirectShare", "directshare", "directshare"},
      {"Embedding", "embedding-spectrum", "embedding-spectrum"},
      {"ESD", "esd-alpha", "esd-alpha"},
      {"Training", "training", "training-loss"},
      {"Model",
       "tensor-histogram",
       "tensor-histogram-" + fileStem(tensor),
       {"click tensor/" + tensor, "waitfor '\"ready\":true'"},
       "--tensor " + tensor},
      {"Heads",
       "head-pair-spectrum",
       "head-pair-spectrum",
       {"waitfor '\"heads/lowest/'", "sleep 1", "key=$(" + firstPair + ") && click \"$key\""}},
  };
  for (const Case& c : cases) {
    const fs::path data = s_dir / ("xdg-same-" + c.figure);
    std::vector<std::string> script = c.before;
    for (const std::string& step :
         {"waitfor '\"export/" + c.button + "/svg\"'", std::string("sleep 1"),
          "click export/" + c.button + "/svg", std::string("waitfor '\"export/path\"'"),
          std::string("click export/save"),
          "for i in $(seq 100); do ls " + shellQuote((data / "sharelens" / "exports").string()) +
              "/*.svg >/dev/null 2>&1 && break; sleep 0.2; done; sleep 0.5"})
      script.push_back(step);
    const auto s =
        session("same-" + c.figure,
                dataHome(data) + binaryOn("run") + " --view " + c.view + " --exit-after 90", script);
    ASSERT_EQ(s.result.exitCode, 0) << c.view << ": " << s.result.err;
    std::vector<fs::path> written;
    for (const auto& e : fs::directory_iterator(data / "sharelens" / "exports")) written.push_back(e.path());
    ASSERT_EQ(written.size(), 1u) << c.view;
    std::string args = c.args;
    if (c.figure == "head-pair-spectrum") {  // the clicked pair, "layer L: A - B", as export names it
      const std::string pair = readState(s.state)["state"]["heads/pair"].get<std::string>();
      const size_t colon = pair.find(": "), dash = pair.find(" - ");
      ASSERT_TRUE(pair.rfind("layer ", 0) == 0 && colon != std::string::npos && dash != std::string::npos)
          << pair;
      args = "--layer " + pair.substr(6, colon - 6) + " --pair " + pair.substr(colon + 2, dash - colon - 2) +
             "," + pair.substr(dash + 3);
    }
    const fs::path headless = s_dir / ("same-" + c.figure + ".svg");
    const auto r = runProcess(kBinary + " export --view " + c.figure + " --input " +
                              shellQuote((s_dir / "run").string()) + " --out " +
                              shellQuote(headless.string()) + " " + args);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_EQ(readTextFile(written[0]), readTextFile(headless)) << c.view << ": " << written[0];
  }
}

// Issue 41 item 4: Compress on a ShareLens checkpoint (composed weights: shared blocks, LoRA, MASA) offers to
// write it as a plain Hugging Face checkpoint -- what only `sharelens export-hf` did before -- and opens it.
TEST_F(GuiInput, CompressWritesASharedCheckpointAsAPlainOneAndOpensIt) {
  const fs::path data = s_dir / "xdg-plain";
  const auto s =
      session("plain", dataHome(data) + binaryOn("run") + " --view masa --exit-after 90",
              {"click masa/tab/compress", "click compress/write-plain",
               "waitfor '\"workspace/model\":\"" + (data / "sharelens" / "exports").string() + "'"});
  ASSERT_EQ(s.result.exitCode, 0) << s.result.err;
  const fs::path exports = data / "sharelens" / "exports";
  std::vector<fs::path> written;
  for (const auto& e : fs::directory_iterator(exports)) written.push_back(e.path());
  ASSERT_EQ(written.size(), 1u);
  EXPECT_TRUE(fs::exists(written[0] / "model.safetensors"));
  EXPECT_TRUE(fs::exists(written[0] / "config.json"));
  // The plain copy is a Llama model with every layer's own attention weights.
  const auto plain = Checkpoint::open(written[0]);
  EXPECT_TRUE(plain->find("model.layers.0.self_attn.q_proj.weight") != nullptr);
  EXPECT_EQ(openModelView(*plain).family, Family::Llama);
}

TEST_F(Gui, EveryViewRendersContentAndTheViewsDiffer) {
  std::map<std::string, Image> shots;
  for (const std::string& view : viewLabels()) {
    const fs::path png = s_dir / (std::string(view) + ".png");
    const auto r =
        runProcess(xvfb(kBinary + " --screenshot " + shellQuote(png.string()) + " --frames 8 --view " + view +
                        " " + shellQuote((s_dir / "run").string())));
    ASSERT_EQ(r.exitCode, 0) << view << ": " << r.err;
    const Image img = Image::load(png);
    ASSERT_EQ(img.width, 1600) << view;
    EXPECT_GT(img.distinctColors(), 40u) << view << " looks blank";
    EXPECT_GT(img.inked(), 0.03) << view << " has almost nothing drawn";
    shots[view] = img;
  }
  for (auto a = shots.begin(); a != shots.end(); ++a)
    for (auto b = std::next(a); b != shots.end(); ++b)
      EXPECT_GT(a->second.differenceFrom(b->second), 0.02)
          << a->first << " and " << b->first << " look the same";
}

// Issue 39 item 4: a Hugging Face checkpoint, the same model as pytorch_model.bin and as a Q8_0 GGUF file,
// and a llama2.c file open in the analysis views (that the copies' numbers are their original's is
// peer_torch_bin's and peer_gguf's to check).
TEST_F(Gui, AHuggingFacePyTorchGgufOrLlama2cCheckpointOpensInTheAnalysisViews) {
  for (const char* view : {"Model", "Heads", "Embedding"}) {
    std::map<std::string, Image> shots;
    for (const char* input : {"qwen", "qwen-torch", "qwen.gguf", "stories.bin"}) {
      const fs::path png = s_dir / (std::string(input) + "-" + view + ".png");
      const auto r =
          runProcess(xvfb(kBinary + " --screenshot " + shellQuote(png.string()) + " --frames 6 --view " +
                          view + " " + shellQuote((s_dir / input).string())));
      ASSERT_EQ(r.exitCode, 0) << input << ": " << r.err;
      shots[input] = Image::load(png);
      EXPECT_GT(shots[input].distinctColors(), 40u) << input << " " << view;
    }
    EXPECT_GT(shots["qwen"].differenceFrom(shots["stories.bin"]), 0.02) << view << ": another model";
  }
}

// Issue 41 items 1 and 3: at 1024 x 700 and up, the Designer shows its layer -> block graph (it was hidden
// at 1024) and its FFN column (it was clipped), the ESD view its density (it was drawn below a screen of
// blank space) and alpha plot (squashed) one above the other, each tall enough to read, and every view's
// toolbar -- its Export buttons, the Training view's log y -- lies inside the window, wrapping onto another
// line rather than running off the right edge (at 1024 the Training view's log y and Export buttons and the
// ESD view's were off-screen). One session per size clicks through the views; the probe gives each toolbar
// item's rectangle and the window's size.
TEST_F(GuiInput, EveryViewsToolbarStaysInsideTheWindowAtThreeSizes) {
  // (view, the probe key that says it has been drawn); every view the app lists must be here
  const std::vector<std::pair<std::string, std::string>> views = {
      {"Spectrum", "export/spectrum/pdf"},
      {"Heads", "export/heads-layer0/pdf"},
      {"Layers", "export/layers-q/pdf"},
      {"DirectShare", "export/directshare/pdf"},
      {"ESD", "esd/plot/density"},
      {"Training", "training/log-y"},
      {"Designer", "designer/graph"},
      {"Model", "model/diff-with"},
      {"MASA", "export/masa-coefficients/pdf"},
      {"Embedding", "export/embedding-spectrum/pdf"},
      {"Experiments", "experiments/steps"}};
  for (const std::string& label : viewLabels())
    ASSERT_TRUE(std::any_of(views.begin(), views.end(), [&](const auto& v) { return v.first == label; }))
        << label << ": a view this test does not lay out (add it and the probe key it draws)";
  // An ESD row to click (its density is drawn): the one the alpha header's sort puts on top, in sight at
  // every size (the table scrolls).
  const std::string matrix = alphaExtremes().first;
  ASSERT_FALSE(matrix.empty());
  // What each view's controls are named (the probe's keys): checked inside the window at every size.
  const std::vector<std::string> controls = {"export/",         "training/",    "run/",
                                             "model/diff-with", "experiments/", "masa/tab/"};
  for (const std::string size : {"1024x700", "1366x768", "1600x1000"}) {  // the last fills the Xvfb screen
    const fs::path state = s_dir / ("ui-layout-" + size + ".json");
    // The first click waits for the window to be mapped under the pointer (a click before that is lost).
    std::vector<std::string> steps = {"waitfor '\"tab/Spectrum\"'", "sleep 1"};
    for (const auto& [view, key] : views) {
      steps.push_back("click tab/" + view);
      if (view == "Experiments")  // an experiment to show: the Designer's topology beside its baseline
        steps.push_back("waitfor '\"experiments/from-designer\"' && click experiments/from-designer");
      if (view == "ESD")
        steps.push_back(
            "waitfor '\"export/esd-alpha/pdf\"' && click esd/header/alpha && waitfor '\"esd/first\":\"" +
            matrix + "\"' && click esd/" + matrix);
      steps.push_back("waitfor '\"view\":\"" + view + "\"' && waitfor '\"" + key + "\"' && sleep 0.5");
      steps.push_back("cp " + shellQuote(state.string()) + " " +
                      shellQuote((s_dir / ("layout-" + size + "-" + view + ".json")).string()));
    }
    const auto s =
        session("layout-" + size, binaryOn("run") + " --size " + size + " --exit-after 120", steps);
    ASSERT_EQ(s.result.exitCode, 0) << size << ": " << s.result.err;
    for (const auto& [view, key] : views) {
      const Json probe = readState(s_dir / ("layout-" + size + "-" + view + ".json"));
      const int width = probe["window"][0], height = probe["window"][1];
      EXPECT_EQ(std::to_string(width) + "x" + std::to_string(height), size);
      if (view == "Designer") {  // the layer -> block graph: beside the column, or below it at 1024 x 700
        ASSERT_TRUE(probe["rects"].contains(key)) << size << ": the Designer shows no graph";
        const Json& r = probe["rects"][key];
        EXPECT_TRUE(r[0] >= 0 && r[1] >= 0 && r[2] <= width && r[3] <= height)
            << size << ": graph at " << r.dump();
        EXPECT_GE(r[3].get<int>() - r[1].get<int>(), 200) << size << ": graph at " << r.dump();
        // wide enough to show both columns of blocks (beside the column at 1366 it had 190 px)
        EXPECT_GE(r[2].get<int>() - r[0].get<int>(), 240) << size << ": graph at " << r.dump();
        // Each FFN cell inside the window and inside the painted column (it was clipped at 1024), wide
        // enough for its label ("F3 +LoRA"), right of its layer's attention cell and clear of the graph.
        ASSERT_TRUE(probe["rects"].contains("designer/column")) << size;
        const Json& column = probe["rects"]["designer/column"];
        int ffnCells = 0;
        for (const auto& [item, cell] : probe["rects"].items())
          if (item.rfind("designer/cell/ffn/", 0) == 0) {
            ++ffnCells;
            EXPECT_TRUE(cell[0] >= 0 && cell[1] >= 0 && cell[2] <= width && cell[3] <= height)
                << size << ": " << item << " at " << cell.dump() << " is outside the window";
            EXPECT_TRUE(cell[0] >= column[0] && cell[2] <= column[2] && cell[1] >= column[1] &&
                        cell[3] <= column[3])
                << size << ": " << item << " at " << cell.dump() << " is outside its column "
                << column.dump();
            EXPECT_GE(cell[2].get<int>() - cell[0].get<int>(), 60)
                << size << ": " << item << " at " << cell.dump();
            const std::string attention = "designer/cell/attention/" + item.substr(18);
            ASSERT_TRUE(probe["rects"].contains(attention)) << size << ": " << attention;
            EXPECT_LE(probe["rects"][attention][2].get<int>(), cell[0].get<int>())
                << size << ": " << item << " overlaps " << attention;
            EXPECT_TRUE(cell[2] <= r[0] || cell[0] >= r[2] || cell[3] <= r[1] || cell[1] >= r[3])
                << size << ": " << item << " at " << cell.dump() << " overlaps the graph at " << r.dump();
          }
        EXPECT_GT(ffnCells, 0) << size << ": the Designer drew no FFN column";
        continue;
      }
      if (view == "ESD") {  // the density above the alpha plot, both inside the window and readable
        ASSERT_TRUE(probe["rects"].contains("esd/plot/density") && probe["rects"].contains("esd/plot/alpha"))
            << size << ": the ESD view's plots were not drawn";
        const Json &density = probe["rects"]["esd/plot/density"], &alpha = probe["rects"]["esd/plot/alpha"];
        for (const Json* r : {&density, &alpha}) {
          EXPECT_TRUE((*r)[0] >= 0 && (*r)[1] >= 0 && (*r)[2] <= width && (*r)[3] <= height)
              << size << ": ESD plot at " << r->dump();
          EXPECT_GE((*r)[3].get<int>() - (*r)[1].get<int>(), 150) << size << ": ESD plot at " << r->dump();
          EXPECT_GE((*r)[2].get<int>() - (*r)[0].get<int>(), 250) << size << ": ESD plot at " << r->dump();
        }
        EXPECT_LT(density[1].get<int>(), height / 3) << size << ": the density starts below blank space";
        EXPECT_LE(density[3].get<int>(), alpha[1].get<int>()) << size << ": the plots overlap";
      }
      int toolbar = 0, runControls = 0;
      for (const auto& [item, r] : probe["rects"].items()) {
        // the run table's buttons too: its columns fit 1024 px instead of scrolling or cutting them off
        runControls += item.rfind("run/", 0) == 0;
        if (std::none_of(controls.begin(), controls.end(),
                         [&](const std::string& c) { return item.rfind(c, 0) == 0; }))
          continue;
        ++toolbar;
        EXPECT_TRUE(r[0] >= 0 && r[1] >= 0 && r[2] <= width && r[3] <= height)
            << size << " " << view << ": " << item << " at " << r.dump() << " is outside the window";
      }
      // Exports in png, svg and pdf; the Model view's comparison; the Experiments view's seeds and steps.
      EXPECT_GE(toolbar, view == "Model"         ? 1
                         : view == "Experiments" ? 2
                                                 : 3)
          << size << " " << view << ": its toolbar was not drawn";
      if (view == "Training") {
        EXPECT_GE(runControls, 2) << size << ": the run's analyse and remove";
      }
    }
  }
}

// Issue 41 item 5: a row of the model's lowest-rank head pairs, clicked, shows that pair's spectrum (it only
// moved the map to the pair's layer before).
TEST_F(GuiInput, ClickingALowestRankPairShowsItsSpectrum) {
  const fs::path after = s_dir / "after-lowest.json";
  // The table's first row: the heads/lowest/ item nearest the top (keys sort by name, not by row).
  const std::string firstRow =
      "/usr/bin/python3 -c 'import json, sys; items = json.load(open(sys.argv[1]))[\"items\"]; "
      "print(min((k for k in items if k.startswith(\"heads/lowest/\")), key=lambda k: items[k][1]))' " +
      shellQuote((s_dir / "ui-lowest.json").string());
  const auto s = session("lowest", binaryOn("qwen") + " --view heads --exit-after 60",
                         {"waitfor '\"heads/lowest/'", "sleep 1", "key=$(" + firstRow + ") && click \"$key\"",
                          "waitfor '\"heads/pair\":\"layer'", "flat > " + shellQuote(after.string())});
  ASSERT_EQ(s.result.exitCode, 0) << s.result.err;
  const Json probe = readState(after);
  std::string key;  // heads/lowest/<layer>/<a>-<b> of the first row, the one clicked
  int top = 1 << 30;
  for (const auto& [item, at] : probe["items"].items())
    if (item.rfind("heads/lowest/", 0) == 0 && at[1].get<int>() < top) key = item, top = at[1].get<int>();
  ASSERT_FALSE(key.empty());
  const std::string rest = key.substr(std::string("heads/lowest/").size());
  const std::string layer = rest.substr(0, rest.find('/')), pair = rest.substr(rest.find('/') + 1);
  // ("flat" took the spaces out of the file: "layer 0: q0 - q1" reads "layer0:q0-q1".)
  EXPECT_EQ(probe["state"]["heads/pair"], "layer" + layer + ":" + pair);
}

// Issue 41 item 5: the heads map shows one projection's heads when asked, and its export is named for it. The
// map of all pairs stays the default: it is the paper's own (LRS Sec. 3.1, "pairwise differences between all
// attention weight matrices within each layer"; its Fig. 2a finds the lowest pairs among heads rather than
// across Q, K and V), but most of its cells cross projections, and one projection's block is what chooses an
// adapter rank for that projection.
TEST_F(GuiInput, TheHeadsMapShowsOneProjectionsHeadsWhenChosen) {
  const fs::path state = s_dir / "ui-heads-q.json", before = s_dir / "heads-before.json";
  const auto s = session("heads-q", binaryOn("qwen") + " --view heads --exit-after 60",
                         {"waitfor '\"heads/rows\":[\"'", "sleep 0.5",
                          "cp " + shellQuote(state.string()) + " " + shellQuote(before.string()),
                          "click heads/choice", "waitfor '\"heads/choice/q\"' && click heads/choice/q",
                          "waitfor '\"export/heads-layer0-q/pdf\"'", "sleep 0.5"});
  ASSERT_EQ(s.result.exitCode, 0) << s.result.err;
  const auto rows = [](const Json& probe) {
    return probe["state"]["heads/rows"].get<std::vector<std::string>>();
  };
  const std::vector<std::string> all = rows(readState(before)), q = rows(readState(state));
  EXPECT_TRUE(std::any_of(all.begin(), all.end(), [](const std::string& r) { return r[0] == 'k'; }))
      << "all pairs: q, k, v (and o) heads";
  ASSERT_FALSE(q.empty());
  EXPECT_LT(q.size(), all.size());
  for (const std::string& r : q) EXPECT_EQ(r[0], 'q') << r;
}

// The Open dialog's browser lists llama2.c and PyTorch files, and a double click opens one.
TEST_F(GuiInput, TheOpenDialogsBrowserOpensALlama2cFile) {
  const fs::path home = s_dir / "llama2c-home";  // s_dir fills with other tests' files, below the list's fold
  const auto s =
      session("open-bin", "HOME=" + shellQuote(home.string()) + " " + kBinary + " --exit-after 60",
              {"waitfor '\"frame\"'", "sleep 0.5", "frozen xdotool key ctrl+o", "hover browser/stories.bin",
               "frozen xdotool click --repeat 2 --delay 80 1", "waitfor '\"workspace/model\"'", "sleep 0.3"});
  ASSERT_EQ(s.result.exitCode, 0) << s.result.err;
  EXPECT_EQ(readState(s.state)["state"]["workspace/model"], (home / "stories.bin").string());
}

// The figures `export` renders, as its usage lists them ("render a figure (a, b, ...)"), which it takes from
// the figure registry and the file figures' table: a figure added there is exported here too.
std::vector<std::string> exportFigureNames() {
  const std::string usage = runProcess(kBinary + " --help").out;
  const std::string opening = "render a figure (";
  const size_t from = usage.find(opening);
  if (from == std::string::npos) return {};
  const size_t begin = from + opening.size(), end = usage.find(')', begin);
  std::vector<std::string> names;
  std::stringstream list(usage.substr(begin, end - begin));
  for (std::string name; std::getline(list, name, ',');)
    if (const size_t start = name.find_first_not_of(' '); start != std::string::npos)
      names.push_back(name.substr(start));
  return names;
}

TEST_F(Gui, HeadlessExportOfEveryView) {
  // Figures of another input, exported by the tests that make one: an experiment's output (test_experiment
  // compares them with `experiment report --figures` byte for byte), a compression sweep's
  // (test_compress_cli), and a run's matrices over its checkpoints (below, with --matrices).
  const std::set<std::string> elsewhere = {"experiment-forest", "experiment-bars", "experiment-curves",
                                           "compression-sweep", "rank-vs-step"};
  const std::vector<std::string> views = exportFigureNames();
  ASSERT_GE(views.size(), 20u) << "export's usage no longer lists its figures";
  const std::string tensor = Checkpoint::open(resolveModelPath(s_dir / "run"))->tensorNames().front();
  for (const std::string& view : views) {
    if (elsewhere.count(view)) continue;
    // `topology` from its file; every other figure (`topology-graph` too: its run's topology) from the run
    const std::string input = view == "topology" ? "t.json" : "run";
    for (const char* ext : {"png", "svg", "pdf"}) {
      const fs::path out = s_dir / ("export-" + view + "." + ext);
      const auto r =
          runProcess(kBinary + " export --view " + view + " --input " + shellQuote((s_dir / input).string()) +
                     " --out " + shellQuote(out.string()) + " --tokens 512 --embedding-loss-tokens 1024" +
                     (view == "masa-correlation" ? " --proj q" : "") +
                     (view == "tensor-histogram" ? " --tensor " + tensor : "") +
                     (view == "head-pair-spectrum" ? " --layer 1 --pair q0,o3" : ""));
      ASSERT_EQ(r.exitCode, 0) << view << "." << ext << ": " << r.err;
      EXPECT_GT(fs::file_size(out), 1000u) << view << "." << ext;
    }
  }
  // A run's matrices through its checkpoints (10, 20, 30).
  const fs::path ranks = s_dir / "export-rank-vs-step.pdf";
  auto r =
      runProcess(kBinary + " export --view rank-vs-step --matrices layers.0.q,layers.1.q.head.0 --input " +
                 shellQuote((s_dir / "run").string()) + " --out " + shellQuote(ranks.string()));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_GT(fs::file_size(ranks), 1000u);
  // The training curves as CSV: a header and one row per step the run logged.
  const fs::path csv = s_dir / "training.csv";
  r = runProcess(kBinary + " export --view training --input " + shellQuote((s_dir / "run").string()) +
                 " --out " + shellQuote(csv.string()));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  std::ifstream in(csv);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  MetricsReader reader(s_dir / "run" / "metrics.jsonl");
  reader.poll();
  ASSERT_EQ(lines.size(), reader.points().size() + 1);
  EXPECT_EQ(lines[0],
            "run,step,tokens,elapsed_s,loss,val_loss,lr,grad_norm,tokens_per_s,postshare_penalty,"
            "tensor_peak_bytes,rss_peak_bytes");
  EXPECT_EQ(lines.back().rfind("gui-test-cycle-masa,30,", 0), 0u) << lines.back();
  const auto bad = runProcess(kBinary + " export --view nonsense --input " +
                              shellQuote((s_dir / "run").string()) + " --out /tmp/x.png");
  EXPECT_EQ(bad.exitCode, 2);
  EXPECT_NE(bad.err.find("unknown view"), std::string::npos);
}

TEST_F(Gui, UnreadableInputIsAnErrorInThePanelNotACrash) {
  const fs::path bad = s_dir / "broken.safetensors";
  std::ofstream(bad) << "not a safetensors file at all";
  const fs::path png = s_dir / "broken.png";
  const auto r = runProcess(xvfb(kBinary + " --screenshot " + shellQuote(png.string()) + " --frames 6 " +
                                 shellQuote(bad.string())));
  EXPECT_EQ(r.exitCode, 0) << "the window stays up: " << r.err;
  EXPECT_GT(Image::load(png).distinctColors(), 10u);
}

}  // namespace
}  // namespace sharelens
