#include "app/gui/views/compress_panel.hpp"

#include <imgui.h>

#include <cstdio>
#include <sstream>

#include "analysis/matrix_pca.hpp"
#include "app/export/figure_export.hpp"
#include "app/gui/ui_probe.hpp"
#include "app/gui/view.hpp"
#include "app/plot/figures.hpp"
#include "core/atomic_file.hpp"
#include "core/compression_methods.hpp"
#include "core/error.hpp"
#include "core/hf_export.hpp"
#include "core/naming.hpp"

namespace fs = std::filesystem;

namespace sharelens::gui {
namespace {

std::vector<double> ratiosOf(const std::string& text) {
  std::vector<double> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    size_t used = 0;
    double v = 0;
    try {
      v = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || !(v > 0 && v < 1))
      throw Error({.what = "not a compression ratio",
                   .where = "sweep ratios",
                   .expected = "fractions in (0, 1), e.g. 0.9,0.8",
                   .found = "'" + item + "'"});
    out.push_back(v);
  }
  return out;
}

std::string threeDecimals(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", v);
  return text;
}

// Layer groups with their atoms, beta, and every matrix's rank (a plan, or a compressed checkpoint's record).
void drawGroupsAndRanks(const std::string& method, const std::vector<std::vector<int64_t>>& groups,
                        const std::vector<int64_t>& atoms, const std::vector<double>& beta,
                        const std::map<Proj, std::vector<int64_t>>& ranks) {
  if (!groups.empty()) {
    std::string text;
    for (size_t g = 0; g < groups.size(); ++g)
      text += (g ? ", " : "") + std::to_string(groups[g].front()) + "-" + std::to_string(groups[g].back()) +
              " (" + std::to_string(atoms[g]) + (atoms[g] == 1 ? " atom" : " atoms") +
              (method == "masa" && g < beta.size() && beta[g] > 0 ? ", beta " + threeDecimals(beta[g]) : "") +
              ")";
    ImGui::TextWrapped("layer groups: %s", text.c_str());
  }
  if (method == "masa")
    ImGui::TextDisabled(
        "beta: the share of a refined layer's parameters its residual terms keep (MASA Eq. 13)");
  if (ranks.empty()) return;
  const int64_t layers = static_cast<int64_t>(ranks.begin()->second.size());
  ImGui::TextDisabled("rank of each layer's low-rank term (%s)",
                      method == "svd" ? "the whole matrix" : "its refined residual");
  if (ImGui::BeginTable("##ranks", static_cast<int>(ranks.size()) + 1,
                        ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY | ImGuiTableFlags_BordersInnerV,
                        ImVec2(360, std::min(220.0f, 24.0f + 20.0f * static_cast<float>(layers))))) {
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("layer");
    for (const auto& [p, r] : ranks) ImGui::TableSetupColumn(std::string(projName(p)).c_str());
    ImGui::TableHeadersRow();
    for (int64_t l = 0; l < layers; ++l) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::Text("%lld", static_cast<long long>(l));
      for (const auto& [p, r] : ranks) {
        ImGui::TableNextColumn();
        ImGui::Text("%lld", static_cast<long long>(r[static_cast<size_t>(l)]));
      }
    }
    ImGui::EndTable();
  }
}

}  // namespace

void CompressPanel::drawPlan(const CompressionPlan& plan) {
  drawGroupsAndRanks(plan.spec.method, plan.spec.groups, plan.atoms, plan.beta, plan.ranks);
}

std::vector<std::pair<std::string, plot::Figure>> CompressPanel::figures() const {
  if (!m_outcome || m_outcome->running || !m_outcome->sweep || !m_outcome->error.empty()) return {};
  return {{"compression-sweep", plot::compressionSweepFigure(m_outcome->sweepReport)}};
}

void CompressPanel::start(AppContext& ctx, const LoadedModel& m, bool sweep) {
  CompressOptions o;
  std::vector<double> ratios;
  try {
    o.spec.method = std::string(kCompressionMethods[static_cast<size_t>(m_method)].name);
    o.spec.ratio = m_ratio;
    if (m_atoms > 0) o.spec.atoms = m_atoms;
    if (const auto kl = parseKlGrouping(m_groups)) {
      if (*kl == 0)
        throw Error({.what = "kl-peaks does not fix the number of groups",
                     .where = "groups",
                     .expected = "kl:G or ranges"});
      o.klGroups = *kl;
    } else {
      o.spec.groups = parseLayerGroups(m_groups, m.view->shape.layers);
    }
    o.calibration.tokens = m_tokens;
    if (sweep) ratios = ratiosOf(m_sweep);
  } catch (const Error& e) {
    ctx.reportError(e.what());
    return;
  }
  char suffix[64];
  std::snprintf(suffix, sizeof suffix, sweep ? "-sweep-" : "-%s-a%.2f-", o.spec.method.c_str(), o.spec.ratio);
  o.out = Settings::exportsDirectory() / (fileStem(m.label) + suffix + timestampForFileName());
  auto outcome = std::make_shared<Outcome>();
  outcome->sweep = sweep;
  m_outcome = outcome;
  const std::filesystem::path source = m.path;
  ctx.jobs.submit(
      sweep ? "compression sweep of " + m.label : "compress " + m.label,
      [outcome, o, ratios, source, sweep, this, &ctx](const TaskContext& task) -> JobSystem::Completion {
        if (sweep) {
          EvalOptions eval;
          eval.tokens = kGuiEvalTokens;
          SweepReport r = sweepCompression(
              source, o, ratios, compressionMethodNames(), eval, task,
              [](const std::filesystem::path& staged, const SweepReport& report) {
                const plot::Figure figure = plot::compressionSweepFigure(report);
                for (const char* ext : {"svg", "png", "pdf"})
                  exportFigure(figure, staged / (std::string("sweep.") + ext), ExportOptions{});
              });
          return [outcome, r = std::move(r), &ctx, out = o.out] {
            outcome->sweepReport = r;
            outcome->running = false;
            ctx.notify("wrote the sweep to " + out.string());
          };
        }
        CompressionReport r = compressCheckpoint(source, o, task);  // writes OUT/compress.json
        return [outcome, r = std::move(r), source, this, &ctx] {
          outcome->compression = r;
          outcome->running = false;
          ctx.notify("wrote " + r.out.string());
          char what[96];
          std::snprintf(what, sizeof what, "%s at %.2f", r.plan.spec.method.c_str(), r.plan.spec.ratio);
          m_eval.start(ctx, source, r.out, what);
        };
      },
      [outcome](JobSystem::Status status, const std::string& error) {
        if (status == JobSystem::Status::Ok) return;
        outcome->running = false;
        outcome->error = status == JobSystem::Status::Cancelled ? "cancelled" : error;
      },
      JobSystem::Lane::Long);
}

void CompressPanel::writePlain(AppContext& ctx, const LoadedModel& m) {
  const std::string stem = fileStem(m.label) + "-hf";
  const fs::path exports = Settings::exportsDirectory();
  fs::path out = exports / stem;
  for (int n = 2; fs::exists(out); ++n) out = exports / (stem + "-" + std::to_string(n));
  const auto checkpoint = m.checkpoint;
  const auto view = m.view;
  ctx.jobs.submit(
      "write " + m.label + " as a Hugging Face checkpoint",
      [checkpoint, view, out, exports, &ctx](const TaskContext&) -> JobSystem::Completion {
        fs::create_directories(exports);
        const std::string what = writePlainHfCheckpoint(*checkpoint, *view, out);
        return [what, out, &ctx] {
          ctx.notify("wrote " + what);
          ctx.open(out);  // opened: ready to compress, evaluate or analyse as a plain model
        };
      },
      [](JobSystem::Status, const std::string&) {}, JobSystem::Lane::Long);
}

void CompressPanel::draw(AppContext& ctx, const LoadedModel& m) {
  if (const auto record =
          compressionRecordOf(*m.checkpoint)) {  // a compressed checkpoint: what was done to it
    ImGui::Text(
        "This checkpoint is compressed: %s at target ratio %.2f, %lld of %lld attention parameters (%.1f%%).",
        record->method.c_str(), record->targetRatio, static_cast<long long>(record->parameters),
        static_cast<long long>(record->originalParameters),
        100.0 * static_cast<double>(record->parameters) / static_cast<double>(record->originalParameters));
    ImGui::TextDisabled("compressed from %s", record->source.c_str());
    if (ImGui::Button("Write it back in its family's layout")) writePlain(ctx, m);
    probe::item("compress/write-plain");
    drawGroupsAndRanks(record->method, record->groups, record->atoms, record->beta, record->ranks);
    return;
  }
  if (m.view->family == Family::ShareLens) {  // composed weights: compression edits stored per-layer ones
    ImGui::TextWrapped(
        "This ShareLens checkpoint composes its attention from shared blocks, LoRA or MASA atoms; "
        "compression "
        "edits plain per-layer weights. Write it as a plain Hugging Face (Llama) checkpoint -- every layer's "
        "effective weights -- and compress that: it opens here when written.");
    if (ImGui::Button("Write as a plain Hugging Face checkpoint")) writePlain(ctx, m);
    probe::item("compress/write-plain");
    return;
  }
  ImGui::TextWrapped(
      "Compress the attention of this pretrained model without training: Matrix PCA atoms per layer group "
      "with calibration-whitened low-rank residuals (MASA), atoms alone, or every matrix's whitened SVD "
      "(SVD-LLM). The compressed model is written as a checkpoint and scored beside the original.");
  ImGui::SetNextItemWidth(280);
  ImGui::Combo(
      "method", &m_method,
      [](void*, int i, const char** label) {  // the labels are string literals: their data() ends in '\0'
        *label = kCompressionMethods[static_cast<size_t>(i)].label.data();
        return true;
      },
      nullptr, static_cast<int>(kCompressionMethods.size()));
  ImGui::SetNextItemWidth(200);
  ImGui::SliderFloat("ratio kept", &m_ratio, 0.05f, 0.95f, "%.2f");
  ImGui::SetNextItemWidth(200);
  ImGui::InputText("layer groups (kl, kl:G or 0-0,1-10,11-11)", m_groups, sizeof m_groups);
  ImGui::SetNextItemWidth(120);
  ImGui::InputInt("atoms per group (0: default)", &m_atoms);
  ImGui::SetNextItemWidth(120);
  ImGui::InputInt("calibration tokens (0: 8 x the widest input)", &m_tokens, 256, 1024);
  m_atoms = std::max(0, m_atoms);
  m_tokens = m_tokens <= 0 ? 0 : std::max(16, m_tokens);
  const bool busy = m_outcome && m_outcome->running;
  ImGui::BeginDisabled(busy);
  if (ImGui::Button("Compress")) start(ctx, m, false);
  ImGui::SameLine();
  ImGui::SetNextItemWidth(180);
  ImGui::InputText("##sweep", m_sweep, sizeof m_sweep);
  ImGui::SameLine();
  if (ImGui::Button("Sweep all three methods")) start(ctx, m, true);
  ImGui::EndDisabled();
  if (!m_outcome) return;
  const Outcome& o = *m_outcome;
  if (o.running) {
    drawPending(o.sweep ? "the compression sweep" : "the compressed model");
    return;
  }
  if (!o.error.empty()) {
    ImGui::PushTextWrapPos(0);
    ImGui::TextColored(ImVec4(1, 0.55f, 0.5f, 1), "%s", o.error.c_str());
    ImGui::PopTextWrapPos();
    return;
  }
  if (!o.sweep) {
    const CompressionReport& r = o.compression;
    ImGui::Text("wrote %s: %lld of %lld attention parameters (target %lld)", r.out.c_str(),
                static_cast<long long>(r.storedParameters), static_cast<long long>(r.plan.originalParameters),
                static_cast<long long>(r.plan.targetParameters));
    m_eval.draw();
    drawPlan(r.plan);
    return;
  }
  const plot::Figure curve = plot::compressionSweepFigure(o.sweepReport);
  drawExportButtons(ctx, curve, "compression-sweep", &m_curve);
  plot::plotWidget("##sweep-curve", curve, m_curve, ImVec2(-1, ImGui::GetContentRegionAvail().y - 10),
                   ctx.textures, ctx.style);
}

}  // namespace sharelens::gui
