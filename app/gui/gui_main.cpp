#include "app/gui/gui_main.hpp"

#include <imgui.h>

#include <iostream>
#include <memory>
#include <optional>

#include "app/cli/args.hpp"
#include "app/export/png.hpp"
#include "app/gui/platform.hpp"
#include "core/checkpoint.hpp"
#include "core/error.hpp"
#include "core/inspect_report.hpp"
#include "core/naming.hpp"

namespace sharelens::gui {
namespace {

struct OpenModel {
  std::unique_ptr<Checkpoint> checkpoint;
  Json report;
};

void drawModel(const std::optional<OpenModel>& model, std::string& error) {
  if (!error.empty()) ImGui::TextColored(ImVec4(1, 0.4f, 0.4f, 1), "%s", error.c_str());
  if (!model) {
    ImGui::TextUnformatted("Drop a .safetensors file or a model directory onto the window.");
    return;
  }
  const Json& r = model->report;
  ImGui::Text("%s", r["path"].get<std::string>().c_str());
  ImGui::Text("family: %s", r["family"].is_null() ? "unknown" : r["family"].get<std::string>().c_str());
  if (ImGui::BeginTable("tensors", 4, ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY | ImGuiTableFlags_Resizable)) {
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("name");
    ImGui::TableSetupColumn("dtype");
    ImGui::TableSetupColumn("shape");
    ImGui::TableSetupColumn("role");
    ImGui::TableHeadersRow();
    const Json& tensors = r["tensors"];
    ImGuiListClipper clipper;
    clipper.Begin(static_cast<int>(tensors.size()));
    while (clipper.Step())
      for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
        const Json& t = tensors[static_cast<size_t>(i)];
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(t["name"].get<std::string>().c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(t["dtype"].get<std::string>().c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(shapeToString(t["shape"].get<std::vector<int64_t>>()).c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(t["role"].get<std::string>().c_str());
      }
    ImGui::EndTable();
  }
}

}  // namespace

int runGuiFromArgs(const std::vector<std::string>& argv) {
  try {
    cli::Args args("", "sharelens [PATH] [--screenshot FILE.png --frames N]", argv);
    const bool demo = args.flag("demo");  // the demo workspace (filled in by the full app)
    (void)demo;
    const auto screenshot = args.option("screenshot");
    const int frames = static_cast<int>(args.integer("frames", 1, 100000).value_or(3));
    const auto path = args.optionalPositional();
    args.finish();

    Platform platform({.title = "ShareLens", .visible = !screenshot.has_value()});
    std::optional<OpenModel> model;
    std::string error;
    auto open = [&](const std::string& p) {
      try {
        OpenModel m;
        m.checkpoint = Checkpoint::open(p);
        m.report = inspectCheckpoint(*m.checkpoint);
        model = std::move(m);
        error.clear();
      } catch (const Error& e) {
        error = e.what();
      }
    };
    if (path) open(*path);
    std::vector<std::string> dropped;
    platform.onDrop([&](std::vector<std::string> files) { dropped = std::move(files); });

    for (int frame = 0; !platform.shouldClose(); ++frame) {
      if (screenshot) platform.pollEvents(); else platform.waitEvents(0.5);
      if (!dropped.empty()) {
        open(dropped.front());
        dropped.clear();
      }
      platform.beginFrame();
      const ImGuiViewport* vp = ImGui::GetMainViewport();
      ImGui::SetNextWindowPos(vp->WorkPos);
      ImGui::SetNextWindowSize(vp->WorkSize);
      ImGui::Begin("ShareLens", nullptr, ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove);
      drawModel(model, error);
      ImGui::End();
      const bool last = screenshot && frame + 1 >= frames;
      if (last) platform.captureNextFrame();
      platform.endFrame();
      if (last) {
        const RgbaImage& image = platform.lastCapture();
        writePngRgba(*screenshot, image.width, image.height, image.pixels);
        break;
      }
    }
    return 0;
  } catch (const Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace sharelens::gui
