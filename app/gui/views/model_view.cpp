// Model: what the checkpoint is -- family, shape, parameters by role, every tensor, the per-layer view.
#include <imgui.h>

#include "app/gui/view.hpp"
#include "core/naming.hpp"
#include "core/run_dir.hpp"
#include "core/safetensors.hpp"

namespace sharelens::gui {
namespace {

class ModelPanel : public View {
 public:
  ViewId id() const override { return ViewId::Model; }

  void draw(AppContext& ctx) override {
    drawStepSlider(ctx);
    if (drawNoModelHint(ctx)) return;
    const LoadedModel& m = *ctx.workspace.current();
    // The tensor filter belongs to one model: kept across a run's checkpoints, cleared for another model.
    // (Looked up when the shown checkpoint changes, not every frame: it asks the file system.)
    if (m.path != m_shownPath) {
      m_shownPath = m.path;
      const std::filesystem::path model = runDirectoryOf(m.path).value_or(m.path);
      if (model != m_filteredModel) m_filter[0] = 0;
      m_filteredModel = model;
    }
    const Json& r = *m.report;
    ImGui::Text("%s", m.path.c_str());
    ImGui::Text("family: %s%s", r["family"].is_null() ? "unknown" : r["family"].get<std::string>().c_str(),
                r.contains("model_type")
                    ? ("  (model_type " + r["model_type"].get<std::string>() + ")").c_str()
                    : "");
    if (r.contains("shape")) {
      const Json& s = r["shape"];
      ImGui::Text(
          "%lld layers, %lld query heads, %lld KV heads, head_dim %lld, hidden %lld, FFN %lld, vocab %lld, "
          "context %lld",
          s["layers"].get<long long>(), s["heads"].get<long long>(), s["kv_heads"].get<long long>(),
          s["head_dim"].get<long long>(), s["hidden"].get<long long>(), s["ffn"].get<long long>(),
          s["vocab"].get<long long>(), s["context"].get<long long>());
      ImGui::Text("embeddings %s", r["tied_embeddings"].get<bool>() ? "tied" : "untied");
    }
    if (ImGui::BeginTable("##split", 2, ImGuiTableFlags_Resizable)) {
      ImGui::TableNextColumn();
      drawParameters(r);
      drawLayers(r);
      ImGui::TableNextColumn();
      drawTensors(r);
      ImGui::EndTable();
    }
  }

 private:
  static void drawParameters(const Json& r) {
    if (!r.contains("parameters")) return;
    drawSectionHeader("parameters by role");
    const double total = std::max(1.0, r["parameters"]["total"].get<double>());
    for (const auto& [role, count] : r["parameters"].items()) {
      if (role == "total" || count.get<int64_t>() == 0) continue;
      const float share = static_cast<float>(count.get<double>() / total);
      ImGui::ProgressBar(share, ImVec2(160, 0), humanCount(count.get<double>()).c_str());
      ImGui::SameLine();
      ImGui::Text("%-12s %5.1f%%", role.c_str(), 100.0f * share);
    }
    ImGui::Text("total %s (%lld)", humanCount(total).c_str(), r["parameters"]["total"].get<long long>());
    for (const char* list : {"missing", "unexpected", "notes"})
      if (r.contains(list) && !r[list].empty()) {
        drawSectionHeader(list);
        for (const Json& item : r[list]) ImGui::BulletText("%s", item.get<std::string>().c_str());
      }
  }

  static void drawLayers(const Json& r) {
    if (!r.contains("layers")) return;
    drawSectionHeader("layers");
    if (ImGui::BeginTable("layers", 4,
                          ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY | ImGuiTableFlags_BordersInnerV,
                          ImVec2(0, 260))) {
      ImGui::TableSetupColumn("layer");
      ImGui::TableSetupColumn("projections");
      ImGui::TableSetupColumn("norms");
      ImGui::TableSetupColumn("biases");
      ImGui::TableHeadersRow();
      for (const Json& layer : r["layers"]) {
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::Text("%lld", layer["index"].get<long long>());
        for (const char* key : {"roles", "norms", "biases"}) {
          ImGui::TableNextColumn();
          std::string text;
          for (const Json& v : layer[key]) text += v.get<std::string>() + " ";
          ImGui::TextUnformatted(text.c_str());
        }
      }
      ImGui::EndTable();
    }
  }

  void drawTensors(const Json& r) {
    drawSectionHeader("tensors");
    ImGui::SetNextItemWidth(-1);
    ImGui::InputTextWithHint("##filter", "filter tensors by name", m_filter, sizeof m_filter);
    if (ImGui::BeginTable("tensors", 4,
                          ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY | ImGuiTableFlags_Resizable)) {
      ImGui::TableSetupScrollFreeze(0, 1);
      ImGui::TableSetupColumn("name");
      ImGui::TableSetupColumn("dtype");
      ImGui::TableSetupColumn("shape");
      ImGui::TableSetupColumn("role");
      ImGui::TableHeadersRow();
      std::vector<const Json*> rows;
      for (const Json& t : r["tensors"])
        if (m_filter[0] == 0 || t["name"].get<std::string>().find(m_filter) != std::string::npos)
          rows.push_back(&t);
      ImGuiListClipper clipper;
      clipper.Begin(static_cast<int>(rows.size()));
      while (clipper.Step())
        for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
          const Json& t = *rows[static_cast<size_t>(i)];
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

  char m_filter[128] = "";
  std::filesystem::path m_shownPath, m_filteredModel;
};

}  // namespace

std::unique_ptr<View> makeModelView() {
  return std::make_unique<ModelPanel>();
}

}  // namespace sharelens::gui
