// The GUI tests' fixture: the real window under Xvfb, as a person uses it. `Gui` trains a short real run of a
// shared topology and writes checkpoints of other formats once per test binary; `GuiInput` drives the window
// with xdotool from the positions the app's --ui-state file gives (tests/app/test_gui_input.cpp: what a
// click does; tests/app/test_gui_views.cpp: what each view draws and exports).
#pragma once

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

namespace sharelens::gui_test {

namespace fs = std::filesystem;
using testing::runProcess;
using testing::shellQuote;

inline const std::string kBinary = SHARELENS_BINARY;
// Every view `--view` opens, from the list the app itself keeps (app/gui/view_id.hpp).
inline std::vector<std::string> viewLabels() {
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

// Key autorepeat starts only after 100 s: at the server's default 660 ms, a key xdotool held down while a
// loaded machine (CI beside a training run) descheduled it repeated, and a typed "xdg-plan" arrived as
// "xdg--plan".
inline std::string xvfb(const std::string& command) {
  return "xvfb-run -a -s '-screen 0 1600x1000x24 -ardelay 100000' " + command;
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
  static inline fs::path s_dir;
};

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
  // `dblclick KEY`; `press` and `release` the left button and wait until the app has seen it (a drag whose
  // move reaches a loaded app before its press would move nothing); `frozen COMMAND...` runs the command
  // (xdotool's input) while the app is stopped, so that all its events reach the app in one frame, as quick
  // input does on a slow frame.
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
           "press() { xdotool mousedown 1 && waitfor '\"mouse_down\":true'; }\n"
           "release() { xdotool mouseup 1 && waitfor '\"mouse_down\":false'; }\n"
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

}  // namespace sharelens::gui_test
