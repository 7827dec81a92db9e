// Model: what the checkpoint is -- family, shape, parameters by role, every tensor, the per-layer view, and
// the chosen tensor in detail (statistics over every element, histogram, first values; Netron's pane); and,
// against another checkpoint (another step of the run, or any file), how much each tensor differs
// (core/checkpoint_diff, as `sharelens diff`).
#include <imgui.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>

#include "app/gui/ui_probe.hpp"
#include "app/gui/view.hpp"
#include "app/plot/figures.hpp"
#include "app/plot/plot_widget.hpp"
#include "core/checkpoint_diff.hpp"
#include "core/error.hpp"
#include "core/naming.hpp"
#include "core/run_dir.hpp"
#include "core/safetensors.hpp"
#include "core/tensor_summary.hpp"

namespace sharelens::gui {
namespace {

class ModelPanel : public View {
 public:
  ViewId id() const override { return ViewId::Model; }

  // The clicked tensor's histogram, as `export --view tensor-histogram --tensor NAME` draws it.
  std::vector<std::pair<std::string, plot::Figure>> figures(AppContext&) override {
    if (!m_details || !m_details->summary) return {};
    return {{"tensor-histogram-" + fileStem(m_details->name), m_details->histogram}};
  }

  void draw(AppContext& ctx) override {
    drawStepSlider(ctx);
    if (drawNoModelHint(ctx)) return;
    const LoadedModel& m = *ctx.workspace.current();
    // The tensor filter belongs to one model: kept across a run's checkpoints, cleared for another model.
    // (Looked up when the shown checkpoint changes, not every frame: it asks the file system.)
    if (m.path != m_shownPath) {
      m_shownPath = m.path;
      const std::filesystem::path model = runDirectoryOf(m.path).value_or(m.path);
      if (model != m_filteredModel) m_filter[0] = 0, dropDetails(ctx);
      m_filteredModel = model;
      if (m_details) summarize(ctx, m, m_details->name);  // the same tensor at the newly shown checkpoint
      if (m_comparison) compare(ctx, m, m_comparison->other);  // the same other checkpoint, from this one
    }
    const Json& r = *m.report;
    ImGui::Text("%s", m.path.c_str());
    if (const std::string format = r.value("format", "safetensors"); format != "safetensors")
      ImGui::Text("format: %s", format.c_str());
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
      drawTensors(ctx, m, r);
      drawDetails(ctx);
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

  // One row per layer. A model whose layers share weights (a ShareLens topology) gets a column naming the
  // stored block each layer's attention and FFN come from, so Cycle or Sequence can be read off the table.
  static void drawLayers(const Json& r) {
    if (!r.contains("layers")) return;
    drawSectionHeader("layers");
    auto text = [](const Json& v) { return v.is_string() ? v.get<std::string>() : std::string("-"); };
    std::map<std::string, int> uses;
    for (const Json& layer : r["layers"])
      for (const char* key : {"attention_source", "ffn_source"})
        if (layer.contains(key) && layer[key].is_string()) ++uses[layer[key].get<std::string>()];
    const bool shared = std::any_of(uses.begin(), uses.end(), [](const auto& u) { return u.second > 1; });
    if (ImGui::BeginTable("layers", shared ? 5 : 4,
                          ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY | ImGuiTableFlags_BordersInnerV,
                          ImVec2(0, 260))) {
      ImGui::TableSetupColumn("layer", ImGuiTableColumnFlags_WidthFixed, ImGui::CalcTextSize("layer").x);
      if (shared)
        ImGui::TableSetupColumn("block (attention / FFN)", ImGuiTableColumnFlags_WidthStretch, 2.2f);
      ImGui::TableSetupColumn("projections", ImGuiTableColumnFlags_WidthStretch, 1.6f);
      ImGui::TableSetupColumn("norms", ImGuiTableColumnFlags_WidthStretch, 1.0f);
      ImGui::TableSetupColumn("biases", ImGuiTableColumnFlags_WidthStretch, 0.6f);
      ImGui::TableHeadersRow();
      for (const Json& layer : r["layers"]) {
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::Text("%lld", layer["index"].get<long long>());
        if (shared) {
          ImGui::TableNextColumn();
          const std::string attention = text(layer.value("attention_source", Json())),
                            ffn = text(layer.value("ffn_source", Json()));
          ImGui::Text("%s / %s", attention.c_str(), ffn.c_str());
          if (ImGui::IsItemHovered())
            ImGui::SetTooltip("%s is used by %d layers, %s by %d", attention.c_str(), uses[attention],
                              ffn.c_str(), uses[ffn]);
        }
        for (const char* key : {"roles", "norms", "biases"}) {
          ImGui::TableNextColumn();
          std::string line;
          for (const Json& v : layer[key]) line += v.get<std::string>() + " ";
          ImGui::TextUnformatted(line.c_str());
        }
      }
      ImGui::EndTable();
    }
  }

  // How this checkpoint differs from another, tensor by tensor: computed on a job into a state its
  // completion shares (a view moving to another checkpoint meanwhile starts a new one and drops this).
  struct Comparison {
    std::filesystem::path other;
    std::optional<CheckpointDifference> difference;
    std::map<std::string, size_t> rankOf;  // a tensor's place in `difference` (the most changed first)
    std::string error;
    uint64_t job = 0;
  };

  void compare(AppContext& ctx, const LoadedModel& m, std::filesystem::path other) {
    if (m_comparison && !m_comparison->difference && m_comparison->error.empty())
      ctx.jobs.cancel(m_comparison->job);
    auto c = std::make_shared<Comparison>();
    c->other = std::move(other);
    m_comparison = c;
    c->job = ctx.jobs.submit(
        "difference from " + c->other.filename().string(),
        [c, a = m.checkpoint](const TaskContext& task) -> JobSystem::Completion {
          const auto b = Checkpoint::open(resolveModelPath(c->other));
          CheckpointDifference d = diffCheckpoints(*a, *b, task);
          return [c, d = std::move(d)]() mutable {
            c->difference = std::move(d);
            for (size_t i = 0; i < c->difference->tensors.size(); ++i)
              c->rankOf[c->difference->tensors[i].name] = i;
          };
        },
        [c](JobSystem::Status status, const std::string& error) {
          if (status == JobSystem::Status::Failed) c->error = error;
          if (status == JobSystem::Status::Cancelled) c->error = "cancelled";
        });
  }

  // "difference from": another checkpoint of the run (by step) or a path; then the tensor table gains each
  // tensor's relative difference and cosine, the most changed first.
  void drawComparisonChoice(AppContext& ctx, const LoadedModel& m) {
    ImGui::TextUnformatted("difference from");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(140);
    const std::optional<std::filesystem::path> run = runDirectoryOf(m.path);
    const std::string preview = m_comparison ? m_comparison->other.filename().string() : "(none)";
    if (ImGui::BeginCombo("##diff-with", preview.c_str())) {  // the run's steps, read while it is open
      if (run)
        for (const CheckpointEntry& c : listCheckpoints(*run)) {
          if (c.dir == m.path) continue;
          const std::string label = "step " + std::to_string(c.step);
          if (ImGui::Selectable(label.c_str())) compare(ctx, m, c.dir);
          probe::item("model/diff-with/", label);
        }
      ImGui::EndCombo();
    }
    probe::item("model/diff-with");
    sameLineIfFits(260);
    ImGui::SetNextItemWidth(200);
    const bool entered = ImGui::InputTextWithHint("##diff-path", "or a checkpoint's path", m_comparePath,
                                                  sizeof m_comparePath, ImGuiInputTextFlags_EnterReturnsTrue);
    if (entered && m_comparePath[0] != 0) compare(ctx, m, m_comparePath);
    if (m_comparison) {
      ImGui::SameLine();
      if (ImGui::SmallButton("clear")) m_comparison.reset();
    }
    if (!m_comparison) return;
    const Comparison& c = *m_comparison;
    probe::state("model/diff", [&] {
      Json top = Json::array();
      if (c.difference)
        for (size_t i = 0; i < std::min<size_t>(3, c.difference->tensors.size()); ++i)
          top.push_back({c.difference->tensors[i].name, c.difference->tensors[i].relative});
      return Json{{"other", c.other.string()}, {"ready", c.difference.has_value()}, {"top", top}};
    });
    if (!c.error.empty())
      ImGui::TextColored(ImVec4(1, 0.4f, 0.4f, 1), "%s", c.error.c_str());
    else if (!c.difference)
      drawPending("comparing every tensor");
    else
      drawNote(
          std::to_string(c.difference->tensors.size()) +
          " tensors compared: ||A - B|| / ||A|| and cosine, the most changed first" +
          (c.difference->onlyInA.size() + c.difference->onlyInB.size() + c.difference->shapeMismatch.size() >
                   0
               ? "; " + std::to_string(c.difference->onlyInA.size() + c.difference->onlyInB.size()) +
                     " in one only, " + std::to_string(c.difference->shapeMismatch.size()) +
                     " of another shape"
               : ""));
  }

  void drawTensors(AppContext& ctx, const LoadedModel& m, const Json& r) {
    drawSectionHeader("tensors (click one for its details)");
    drawComparisonChoice(ctx, m);
    ImGui::SetNextItemWidth(-1);
    ImGui::InputTextWithHint("##filter", "filter tensors by name", m_filter, sizeof m_filter);
    const float height = m_details ? std::max(120.0f, ImGui::GetContentRegionAvail().y - 330.0f) : 0.0f;
    const Comparison* compared = m_comparison && m_comparison->difference ? m_comparison.get() : nullptr;
    if (ImGui::BeginTable("tensors", compared ? 6 : 4,
                          ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY | ImGuiTableFlags_Resizable,
                          ImVec2(0, height))) {
      ImGui::TableSetupScrollFreeze(0, 1);
      ImGui::TableSetupColumn("name");
      ImGui::TableSetupColumn("dtype");
      ImGui::TableSetupColumn("shape");
      ImGui::TableSetupColumn("role");
      if (compared) {
        ImGui::TableSetupColumn("||A-B||/||A||");
        ImGui::TableSetupColumn("cosine");
      }
      ImGui::TableHeadersRow();
      std::vector<const Json*> rows;
      for (const Json& t : r["tensors"])
        if (m_filter[0] == 0 || t["name"].get<std::string>().find(m_filter) != std::string::npos)
          rows.push_back(&t);
      // The tensor's place in the comparison's order (diffCheckpoints': the most changed first), past the
      // end for one not compared (in one checkpoint only).
      auto rankOf = [&](const Json* t) {
        const auto found = compared->rankOf.find((*t)["name"].get<std::string>());
        return found == compared->rankOf.end() ? compared->difference->tensors.size() : found->second;
      };
      auto differenceOf = [&](const Json* t) -> const TensorDifference* {
        const size_t rank = rankOf(t);
        return rank < compared->difference->tensors.size() ? &compared->difference->tensors[rank] : nullptr;
      };
      if (compared)
        std::stable_sort(rows.begin(), rows.end(),
                         [&](const Json* x, const Json* y) { return rankOf(x) < rankOf(y); });
      ImGuiListClipper clipper;
      clipper.Begin(static_cast<int>(rows.size()));
      while (clipper.Step())
        for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
          const Json& t = *rows[static_cast<size_t>(i)];
          ImGui::TableNextRow();
          ImGui::TableNextColumn();
          const std::string name = t["name"].get<std::string>();
          const bool chosen = m_details && m_details->name == name;
          const bool failed =
              chosen && !m_details->error.empty();  // a failed or cancelled one may be retried
          if (ImGui::Selectable(name.c_str(), chosen, ImGuiSelectableFlags_SpanAllColumns) &&
              (!chosen || failed))
            summarize(ctx, m, name);
          probe::item("tensor/", name);
          ImGui::TableNextColumn();
          ImGui::TextUnformatted(t.value("stored", t["dtype"].get<std::string>()).c_str());
          ImGui::TableNextColumn();
          ImGui::TextUnformatted(shapeToString(t["shape"].get<std::vector<int64_t>>()).c_str());
          ImGui::TableNextColumn();
          ImGui::TextUnformatted(t["role"].get<std::string>().c_str());
          if (compared) {
            const TensorDifference* d = differenceOf(&t);
            ImGui::TableNextColumn();
            if (d) ImGui::Text("%.4g", d->relative);
            ImGui::TableNextColumn();
            if (d) ImGui::Text("%.6f", d->cosine);
          }
        }
      ImGui::EndTable();
    }
  }

  // The chosen tensor's details, computed on a job (a 128M-element embedding takes a while) into a state the
  // completion shares, so that a view switching models meanwhile only drops it.
  struct Details {
    std::string name;
    std::filesystem::path checkpoint;
    std::optional<TensorSummary> summary;
    plot::Figure histogram;
    std::string error;
    uint64_t job = 0;
  };

  // `name` by value: it may be the current details' own name, which replacing them frees.
  void summarize(AppContext& ctx, const LoadedModel& m, std::string name) {
    dropDetails(ctx);
    if (!m.checkpoint->find(name)) return;  // not in this checkpoint (another run's layout): nothing to show
    auto details = std::make_shared<Details>();
    details->name = std::move(name);
    details->checkpoint = m.path;
    m_details = details;
    m_histogramState = {};  // a new histogram starts unzoomed
    details->job = ctx.jobs.submit(
        "details of " + details->name,
        [details, ckpt = m.checkpoint](const TaskContext& task) -> JobSystem::Completion {
          TensorSummary s =
              summarizeTensor(*ckpt, details->name, TensorSummary::kBins, TensorSummary::kPreview, task);
          return [details, s = std::move(s)]() mutable {
            details->histogram = plot::tensorHistogramFigure(s);
            details->summary = std::move(s);
          };
        },
        [details](JobSystem::Status status, const std::string& error) {
          if (status == JobSystem::Status::Failed) details->error = error;
          if (status == JobSystem::Status::Cancelled) details->error = "cancelled: click the tensor again";
        });
  }

  // Forgets the shown details, cancelling their job if it still runs (a superseded read of every element).
  void dropDetails(AppContext& ctx) {
    if (m_details && !m_details->summary && m_details->error.empty()) ctx.jobs.cancel(m_details->job);
    m_details.reset();
  }

  void drawDetails(AppContext& ctx) {
    if (!m_details) return;
    const Details& d = *m_details;
    probe::state("model/details", [&] {
      return Json{{"tensor", d.name},
                  {"ready", d.summary.has_value()},
                  {"numel", d.summary ? d.summary->numel : 0},
                  {"mean", d.summary ? d.summary->mean : 0.0},
                  {"std", d.summary ? d.summary->std : 0.0}};
    });
    drawSectionHeader(d.name.c_str());
    if (!d.error.empty()) {
      ImGui::TextColored(ImVec4(1, 0.4f, 0.4f, 1), "%s", d.error.c_str());
      return;
    }
    if (!d.summary) {
      drawPending("reading every element");
      return;
    }
    const TensorSummary& s = *d.summary;
    ImGui::Text("%s %s, %s elements, %s", std::string(dtypeName(s.dtype)).c_str(),
                shapeToString(s.shape).c_str(), humanCount(static_cast<double>(s.numel)).c_str(),
                humanBytes(static_cast<double>(s.bytes)).c_str());
    ImGui::Text("min %.5g   max %.5g   mean %.5g   std %.5g", s.min, s.max, s.mean, s.std);
    ImGui::Text("zeros %llu   NaN %llu   inf %llu", static_cast<unsigned long long>(s.zeros),
                static_cast<unsigned long long>(s.nan), static_cast<unsigned long long>(s.infinite));
    if (s.nan + s.infinite > 0) {
      ImGui::SameLine();
      drawWarning("(statistics over the finite values)");
    }
    std::string preview = "first values:";
    char number[32];
    for (float v : s.preview) {
      std::snprintf(number, sizeof number, "  %.3g", v);
      preview += number;
    }
    ImGui::TextWrapped("%s", preview.c_str());
    if (!s.histogram.empty())
      plotWithExports(ctx, "##tensor-histogram", d.histogram, m_histogramState, -1,
                      200 + ImGui::GetFrameHeightWithSpacing(), "tensor-histogram-" + fileStem(d.name));
  }

  char m_filter[128] = "";
  std::filesystem::path m_shownPath, m_filteredModel;
  std::shared_ptr<Details> m_details;
  plot::PlotState m_histogramState;
  std::shared_ptr<Comparison> m_comparison;
  char m_comparePath[512] = "";
};

}  // namespace

std::unique_ptr<View> makeModelView() {
  return std::make_unique<ModelPanel>();
}

}  // namespace sharelens::gui
