// Topology designer: the layers as a column of blocks coloured by unique weight (attention and FFN side by
// side) to paint by click or drag, presets, LoRA ranks, head sharing, MASA, FFN tying, embeddings, a live
// parameter budget with the parameter-matched baseline, topology files, and Launch (with baseline).
#include <imgui.h>

#include <chrono>
#include <cstdio>
#include <optional>

#include "app/gui/ui_probe.hpp"
#include "app/gui/view.hpp"
#include "app/plot/figures.hpp"
#include "app/plot/plot_widget.hpp"
#include "core/error.hpp"
#include "core/naming.hpp"
#include "core/param_count.hpp"
#include "core/topology_edit.hpp"
#include "core/topology_presets.hpp"

namespace sharelens::gui {
namespace {

bool inputInt64(const char* label, int64_t& value, int64_t lo, int64_t hi) {
  int v = static_cast<int>(value);
  ImGui::SetNextItemWidth(120);
  const bool changed = ImGui::InputInt(label, &v, 1, 16);
  value = std::clamp<int64_t>(v, lo, hi);
  return changed;
}

// Whether the segment from `a` to `b` passes through the rectangle from `min` to `max` (Liang-Barsky: the
// part of the segment inside each axis's slab, intersected).
bool segmentCrosses(ImVec2 a, ImVec2 b, ImVec2 min, ImVec2 max) {
  float enter = 0, leave = 1;
  const float from[2] = {a.x, a.y}, step[2] = {b.x - a.x, b.y - a.y};
  const float low[2] = {min.x, min.y}, high[2] = {max.x, max.y};
  for (int axis = 0; axis < 2; ++axis) {
    if (step[axis] == 0) {
      if (from[axis] < low[axis] || from[axis] >= high[axis]) return false;
      continue;
    }
    float t0 = (low[axis] - from[axis]) / step[axis], t1 = (high[axis] - from[axis]) / step[axis];
    if (t0 > t1) std::swap(t0, t1);
    enter = std::max(enter, t0);
    leave = std::min(leave, t1);
    if (enter > leave) return false;
  }
  return true;
}

class DesignerPanel : public DesignerApi {
 public:
  DesignerPanel() : m_topology(demoTopology()) {}
  ViewId id() const override { return ViewId::Designer; }

  // A topology from elsewhere: tied head pairs (DirectShare) ask whether to merge them into the design or
  // replace it; anything else replaces it.
  void receive(const Topology& t) override {
    m_unique = 0;  // U follows the topology that arrives
    if (t.tiedHeads.empty()) {
      replaceDesign(t);
      return;
    }
    m_pending = t;
    m_askPending = true;
  }
  Topology topology() const override { return m_topology; }

  std::vector<std::pair<std::string, plot::Figure>> figures(AppContext&) override {
    return {{"topology-" + m_topology.name, plot::topologyFigure(m_topology)},
            {"topology-graph-" + m_topology.name, plot::topologyGraphFigure(m_topology)}};
  }

  void draw(AppContext& ctx) override {
    drawPendingQuestion(ctx);
    std::string problem;
    try {
      validateTopology(m_topology, "topology");
    } catch (const Error& e) {
      problem = e.what();
    }
    // The settings and the budget keep their widths in a wide window and give way in a narrow one, so that
    // the layer columns between them stay readable at 1024 pixels.
    const float wide = ImGui::GetContentRegionAvail().x;
    // A Resizable table applies its setup widths when it is first seen: keyed to the window's width in steps
    // of 128 pixels, the columns are laid out again when the window is resized.
    const std::string table = "##designer" + std::to_string(static_cast<int>(wide / 128));
    if (ImGui::BeginTable(table.c_str(), 3, ImGuiTableFlags_Resizable | ImGuiTableFlags_BordersInnerV)) {
      ImGui::TableSetupColumn("settings", ImGuiTableColumnFlags_WidthFixed,
                              std::clamp(wide * 0.32f, 300.0f, 360.0f));
      ImGui::TableSetupColumn("layers", ImGuiTableColumnFlags_WidthStretch);
      ImGui::TableSetupColumn("budget", ImGuiTableColumnFlags_WidthFixed,
                              std::clamp(wide * 0.32f, 300.0f, 380.0f));
      ImGui::TableNextColumn();
      ImGui::BeginChild("##settings");
      drawSettings();
      ImGui::EndChild();
      ImGui::TableNextColumn();
      drawLayers(ctx);
      followName();
      ImGui::TableNextColumn();
      ImGui::BeginChild("##budget");
      drawBudget(ctx, problem);
      ImGui::EndChild();
      ImGui::EndTable();
    }
  }

 private:
  void drawSettings() {
    Topology& t = m_topology;
    char name[128];
    std::snprintf(name, sizeof name, "%s", t.name.c_str());
    ImGui::SetNextItemWidth(240);
    if (ImGui::InputText("name", name, sizeof name)) {
      t.name = name;
      m_nameFollows = false;  // named by the user: kept through edits
    }
    probe::item("designer/name");

    drawSectionHeader("model");
    int64_t layers = t.model.layers;
    if (inputInt64("layers", layers, 1, 256)) keepingUsersName([&] { resizeLayers(t, layers); });
    if (inputInt64("d_model", t.model.dModel, 8, 16384) | inputInt64("heads", t.model.heads, 1, 256) |
        inputInt64("KV heads", t.model.kvHeads, 1, 256))
      syncHeadDim(t.model);
    ImGui::SameLine();
    ImGui::TextDisabled("head_dim %lld", static_cast<long long>(t.model.headDim));
    inputInt64("FFN", t.model.ffn, 8, 1 << 18);
    inputInt64("vocab", t.model.vocab, 256, 1 << 20);
    inputInt64("context", t.model.context, 8, 1 << 16);

    drawSectionHeader("sharing pattern");
    // U is the designer's own setting (the topology's count of unique blocks when it arrives or is
    // rebuilt): moving it rebuilds the current pattern at once; a pattern's button builds that pattern
    // with it.
    if (m_unique < 1) m_unique = static_cast<int>(std::max<int64_t>(1, t.attention.uniqueBlocks()));
    m_unique = std::min(m_unique, static_cast<int>(t.model.layers));
    const std::optional<SharingPattern> current = parsePattern(t.provenance.pattern);
    ImGui::SetNextItemWidth(200);
    const bool movedU = ImGui::SliderInt("unique blocks U", &m_unique, 1, static_cast<int>(t.model.layers));
    probe::item("designer/unique");
    if (ImGui::IsItemHovered() && (!current || *current == SharingPattern::Vanilla))
      ImGui::SetTooltip("%s", current
                                  ? "vanilla has a block per layer: U is used by the pattern you choose next"
                                  : "a painted design: U is used by the pattern you choose next");
    auto build = [&](SharingPattern p) {
      try {
        keepingUsersName([&] { m_note = applyPattern(t, p, m_unique); });
      } catch (const Error& e) {
        m_note = e.what();
      }
    };
    if (movedU && current && *current != SharingPattern::Vanilla) build(*current);
    for (SharingPattern p : kAllPatterns) {
      if (p != SharingPattern::Vanilla) ImGui::SameLine(0, 4);
      if (p == SharingPattern::Bulge) ImGui::NewLine();
      if (ImGui::SmallButton(std::string(patternName(p)).c_str())) build(p);
      probe::item("designer/pattern/", patternName(p));
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", std::string(patternNote(p)).c_str());
    }
    probe::state("designer/topology", [&] {
      return Json{{"name", t.name},
                  {"pattern", t.provenance.pattern},
                  {"layers", t.model.layers},
                  {"unique", t.attention.uniqueBlocks()},
                  {"attention", t.attention.assign},
                  {"ffn", t.ffn.assign},
                  {"slider_u", m_unique},
                  {"brush", m_brush},
                  {"attention_lora", t.attention.loraRank},
                  {"head_sharing", static_cast<int>(t.headSharing.mode)},
                  {"masa", t.masa.enabled},
                  {"tied_embeddings", t.embedding.tied}};
    });
    drawNote("bulge and hierarchy: our reading of the papers' figures");
    ImGui::TextUnformatted("depth:");
    for (const char* m : {"1.5", "3", "skinny"}) {
      ImGui::SameLine();
      if (ImGui::SmallButton((std::string("x") + m).c_str())) applyDepth(m, m_unique);
    }
    ImGui::SetNextItemWidth(120);
    int attnRank = static_cast<int>(t.attention.loraRank), ffnRank = static_cast<int>(t.ffn.loraRank);
    if (ImGui::SliderInt("LoRA rank, attention", &attnRank, 0, 64)) t.attention.loraRank = attnRank;
    probe::item("designer/attention-lora");
    ImGui::SetNextItemWidth(120);
    if (ImGui::SliderInt("LoRA rank, FFN", &ffnRank, 0, 64)) t.ffn.loraRank = ffnRank;
    ImGui::SetNextItemWidth(120);
    ImGui::SliderInt("##interior", &m_interior, 0, static_cast<int>((t.model.layers - 1) / 2));
    ImGui::SameLine();
    if (ImGui::Button("tie interior FFNs")) {
      t.ffn.assign = interiorTieAssignment(t.model.layers, m_interior);
      t.provenance.note += "; interior FFN tied";
    }

    drawSectionHeader("heads");
    int mode = static_cast<int>(t.headSharing.mode);
    const char* modes[] = {"none", "shared base + per-head LoRA", "QKV shared + LoRA"};
    ImGui::SetNextItemWidth(200);
    ImGui::BeginDisabled(
        t.masa.enabled);  // the two parameterisations of attention weights exclude each other
    if (ImGui::Combo("head sharing", &mode, modes, 3))
      t.headSharing.mode = static_cast<HeadSharingMode>(mode);
    ImGui::EndDisabled();
    if (t.masa.enabled)
      drawNote("head sharing does not apply under MASA: each layer's attention weights are sums of atoms");
    if (t.headSharing.mode != HeadSharingMode::None) {
      int rank = static_cast<int>(t.headSharing.loraRank);
      ImGui::SetNextItemWidth(120);
      if (ImGui::SliderInt("per-head LoRA rank", &rank, 0, static_cast<int>(t.model.headDim)))
        t.headSharing.loraRank = rank;
    }
    drawNote("tied head pairs: " + std::to_string(t.tiedHeads.size()) + " (DirectShare view sends them)");
    if (!t.tiedHeads.empty() && ImGui::SmallButton("clear tied heads")) t.tiedHeads.clear();
    float gamma = static_cast<float>(t.postShare.gamma);
    ImGui::SetNextItemWidth(120);
    if (ImGui::SliderFloat("PostShare gamma", &gamma, 0.0f, 1.0f)) t.postShare.gamma = gamma;
    if (t.postShare.gamma > 0 && t.postShare.pairs.empty() && !t.tiedHeads.empty() &&
        ImGui::SmallButton("penalise the tied pairs instead"))
      std::swap(t.postShare.pairs, t.tiedHeads);

    drawSectionHeader("MASA");
    ImGui::Checkbox("matrix atoms in attention", &t.masa.enabled);
    probe::item("designer/masa");
    if (t.masa.enabled) {
      t.headSharing.mode = HeadSharingMode::None;  // said next to the (disabled) head-sharing control
      int atoms = static_cast<int>(t.masa.atoms);
      ImGui::SetNextItemWidth(120);
      if (ImGui::SliderInt("atoms S", &atoms, 1, static_cast<int>(t.model.layers))) t.masa.atoms = atoms;
      for (Proj p : {Proj::Q, Proj::K, Proj::V, Proj::O}) {
        bool on =
            std::find(t.masa.projections.begin(), t.masa.projections.end(), p) != t.masa.projections.end();
        ImGui::SameLine();
        if (ImGui::Checkbox(std::string(projName(p)).c_str(), &on)) {
          std::erase(t.masa.projections, p);
          if (on) t.masa.projections.push_back(p);
        }
      }
      ImGui::Checkbox("MLP coefficients (block embedding -> 3-layer MLP)", &t.masa.mlpCoefficients);
    }

    drawSectionHeader("embeddings");
    ImGui::Checkbox("tied input/output", &t.embedding.tied);
    probe::item("designer/tied");
    int rank = static_cast<int>(t.embedding.factorRank);
    ImGui::SetNextItemWidth(160);
    if (ImGui::SliderInt("factor rank r_e (0: none)", &rank, 0, static_cast<int>(t.model.dModel) - 1))
      t.embedding.factorRank = rank;
    if (!m_note.empty()) drawWarning("%s", m_note.c_str());
  }

  void applyDepth(const std::string& multiplier, int unique) {
    PresetSpec spec;
    spec.pattern = parsePattern(m_topology.provenance.pattern).value_or(SharingPattern::Cycle);
    spec.uniqueBlocks = unique;
    spec.depthMultiplier = multiplier;
    spec.base = m_topology.model;
    spec.loraRank = m_topology.attention.loraRank;
    spec.tiedEmbeddings = m_topology.embedding.tied;
    try {
      Topology grown = makePreset(spec);
      grown.headSharing = m_topology.headSharing;
      grown.embedding = m_topology.embedding;
      keepingUsersName([&] { m_topology = grown; });
    } catch (const Error& e) {
      m_note = e.what();
    }
  }

  // The column of layers: click or drag to paint the brush block; hover to see the assignment. Beside it
  // (below it in a narrow pane), the same assignment as a graph (plot::topologyGraphFigure).
  void drawLayers(AppContext& ctx) {
    Topology& t = m_topology;
    ImGui::SetNextItemWidth(120);
    ImGui::SliderInt("brush block", &m_brush, 0,
                     static_cast<int>(std::max(t.attention.uniqueBlocks(), t.ffn.uniqueBlocks())));
    probe::item("designer/brush");
    const char* hint = "(the highest number starts a new block)";
    sameLineIfFits(ImGui::CalcTextSize(hint).x);
    drawNote(hint);
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    const float pane = ImGui::GetContentRegionAvail().x;
    // The graph goes beside the column where the pane holds both (the graph at least 240 px, wide enough for
    // its two columns of blocks), the column taking 55% of it (from 200 to 420 px) and the graph the rest; in
    // a narrower pane (a 1024-px window leaves about 340) it goes below the column, which then takes at most
    // half the height.
    constexpr float kColumn = 420, kNarrowColumn = 200, kGraph = 240;
    const float spacing = ImGui::GetStyle().ItemSpacing.x;
    const bool beside = pane >= kNarrowColumn + kGraph + spacing;
    const float width =
        beside ? std::clamp(pane * 0.55f, kNarrowColumn, std::min(kColumn, pane - kGraph - spacing))
               : std::min(kColumn, pane);
    const float height = ImGui::GetContentRegionAvail().y * (beside ? 1.0f : 0.5f);
    const float rowH = std::clamp((height - 30) / static_cast<float>(t.model.layers), 6.0f, 28.0f);
    constexpr float kLabels = 60, kGap = 8;           // the layer numbers' margin; between the two columns
    const float colW = (width - kLabels - kGap) / 2;  // attention and FFN end at the button's right edge
    ImGui::InvisibleButton("##layers", ImVec2(width, rowH * static_cast<float>(t.model.layers) + 20));
    probe::item("designer/column");  // the painted cells lie inside it
    const bool active = ImGui::IsItemActive(), hovered = ImGui::IsItemHovered();
    {  // the graph: in the rest of the pane as tall as the column, or below it in the rest of the height
      if (beside) ImGui::SameLine();
      const plot::Figure& graph = ctx.figures.get(nullptr, "topology-graph:" + topologyToJson(t).dump(),
                                                  [&] { return plot::topologyGraphFigure(t); });
      // Beside a short column (few layers) the graph may run on into the empty height below it, up to 1.4
      // times its width, rather than be squeezed to the column's height.
      const float graphW = pane - width - spacing;
      const float graphH =
          beside ? std::max(rowH * static_cast<float>(t.model.layers) + 20,
                            std::min(ImGui::GetContentRegionAvail().y - 4, std::max(240.0f, 1.4f * graphW)))
                 : std::max(kGraph, ImGui::GetContentRegionAvail().y - 4);
      plot::plotWidget("##topology-graph", graph, m_graphState, ImVec2(-1, graphH), ctx.textures, ctx.style);
      probe::item("designer/graph");
    }
    const ImVec2 mouse = ImGui::GetIO().MousePos;
    // A drag paints every cell the pointer passed over since the last frame, not only the one it is on: a
    // quick stroke down the column moves many rows a frame.
    const ImVec2 moved = ImGui::GetIO().MouseDelta;
    const ImVec2 strokeFrom =
        ImGui::IsMouseClicked(ImGuiMouseButton_Left) ? mouse : ImVec2(mouse.x - moved.x, mouse.y - moved.y);
    dl->AddText({origin.x + kLabels, origin.y}, IM_COL32(200, 200, 200, 255), "attention");
    dl->AddText({origin.x + kLabels + colW + kGap, origin.y}, IM_COL32(200, 200, 200, 255), "FFN");
    const int64_t blocks = std::max(t.attention.uniqueBlocks(), t.ffn.uniqueBlocks());
    for (int64_t l = 0; l < t.model.layers; ++l) {
      const float y = origin.y + 18 + rowH * static_cast<float>(l);
      const std::string label = std::to_string(l);
      if (rowH >= 10)
        dl->AddText({origin.x + 30, y + (rowH - ImGui::GetFontSize()) / 2}, IM_COL32(170, 170, 170, 255),
                    label.c_str());
      for (int c = 0; c < 2; ++c) {
        const BlockSharing& s = c == 0 ? t.attention : t.ffn;
        const int64_t b = s.assign[static_cast<size_t>(l)];
        const float x = origin.x + kLabels + (colW + kGap) * static_cast<float>(c);
        const ImVec2 min{x, y + 1}, max{x + colW, y + rowH - 1};
        const plot::Rgb color = plot::categoryColor(b, blocks);  // as the graph beside and the exported map
        dl->AddRectFilled(min, max, plot::toImColor(color));
        probe::area(min.x, min.y, max.x, max.y, "designer/cell/", c == 0 ? "attention/" : "ffn/", label);
        if (rowH >= 12) {
          char text[16];
          std::snprintf(text, sizeof text, "%c%lld%s", c == 0 ? 'A' : 'F', static_cast<long long>(b),
                        s.loraRank > 0 && s.usersOf(b) > 1 ? " +LoRA" : "");
          dl->AddText(
              {min.x + 4, min.y + (rowH - ImGui::GetFontSize()) / 2 - 1},
              color.r + color.g + color.b > 380 ? IM_COL32(20, 20, 20, 255) : IM_COL32(240, 240, 240, 255),
              text);
        }
        const bool over = mouse.x >= min.x && mouse.x < max.x && mouse.y >= min.y && mouse.y < max.y;
        if (over && hovered)
          ImGui::SetTooltip("layer %lld %s: block %lld, shared by %lld layers", static_cast<long long>(l),
                            c == 0 ? "attention" : "FFN", static_cast<long long>(b),
                            static_cast<long long>(s.usersOf(b)));
        if (active && segmentCrosses(strokeFrom, mouse, min, max)) {
          // The brush follows its block through the renumbering, so the stroke's layers share one block.
          m_brush = static_cast<int>(
              paintBlock(t, c == 0 ? DesignColumn::Attention : DesignColumn::Ffn, l, m_brush));
          m_unique = 0;  // U follows what was painted
        }
      }
    }
  }

  void drawBudget(AppContext& ctx, const std::string& problem) {
    const Topology& t = m_topology;
    drawSectionHeader("parameter budget");
    if (!problem.empty()) {
      ImGui::PushTextWrapPos();
      ImGui::TextColored(ImVec4(1, 0.45f, 0.45f, 1), "%s", problem.c_str());
      ImGui::PopTextWrapPos();
      return;
    }
    const ParamBudget b = countParameters(t);
    for (int g = 0; g < kParamGroupCount; ++g) {
      if (b.groups[g] == 0) continue;
      const float share = static_cast<float>(b.groups[g]) / static_cast<float>(b.total);
      ImGui::ProgressBar(share, ImVec2(150, 0), humanCount(static_cast<double>(b.groups[g])).c_str());
      ImGui::SameLine();
      ImGui::Text("%s", std::string(paramGroupName(static_cast<ParamGroup>(g))).c_str());
    }
    ImGui::TextWrapped("total %s (%lld): %.1f%% of the unshared %s",
                       humanCount(static_cast<double>(b.total)).c_str(), static_cast<long long>(b.total),
                       100.0 * static_cast<double>(b.total) / static_cast<double>(b.denseEquivalent),
                       humanCount(static_cast<double>(b.denseEquivalent)).c_str());
    ImGui::Text("rho %.3f, training %s FLOP/token", b.rho, humanCount(b.trainFlopsPerToken).c_str());
    const MemoryEstimate mem = estimateTrainingMemory(t, m_batch);
    ImGui::Text("training memory at batch %d: %s", m_batch, humanBytes(mem.total()).c_str());
    drawBaseline(b);

    drawSectionHeader("file");
    ImGui::SetNextItemWidth(-1);
    ImGui::InputTextWithHint("##path", "topology.json", m_path, sizeof m_path);
    if (ImGui::Button("Save")) {
      try {
        writeTopologyFile(t, m_path);
        ctx.notify(std::string("saved ") + m_path);
      } catch (const Error& e) {
        ctx.reportError(e.what());
      }
    }
    ImGui::SameLine();
    if (ImGui::Button("Load")) {
      try {
        receive(readTopologyFile(m_path));
      } catch (const Error& e) {
        ctx.reportError(e.what());
      }
    }
    // The presets ShareLens ships (assets/topologies): one per pattern at L = 12, U = 4, and the demo.
    ImGui::SameLine();
    ImGui::SetNextItemWidth(-1);
    if (ImGui::BeginCombo("##shipped", "open a shipped preset")) {
      for (const auto& file : shippedTopologies())
        if (ImGui::Selectable(file.stem().string().c_str())) {
          try {
            receive(readTopologyFile(file));
          } catch (const Error& e) {
            ctx.reportError(e.what());
          }
        }
      ImGui::EndCombo();
    }

    drawSectionHeader("train");
    ImGui::SetNextItemWidth(120);
    ImGui::InputInt("steps", &m_steps, 100, 1000);
    ImGui::SetNextItemWidth(120);
    ImGui::InputInt("batch", &m_batch, 1, 8);
    ImGui::SetNextItemWidth(120);
    ImGui::InputFloat("learning rate", &m_lr, 0, 0, "%.1e");
    ImGui::SetNextItemWidth(120);
    const std::string corpus = drawCorpusCombo("corpus", m_corpus);
    m_steps = std::max(1, m_steps);
    m_batch = std::max(1, m_batch);
    for (bool baseline : {false, true}) {
      if (baseline) ImGui::SameLine();
      const bool clicked = ImGui::Button(baseline ? "Launch with baseline" : "Launch");
      probe::item(baseline ? "designer/launch-with-baseline" : "designer/launch");
      if (clicked) launch(ctx, baseline, corpus);
    }
    sameLineIfFits(labelledWidth(ImGui::GetFrameHeight(), "follow it in the analysis views"));
    ImGui::Checkbox("follow it in the analysis views", &m_followLaunched);
    probe::item("designer/follow");
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip(
          "the Model, Spectrum, Heads ... views switch to the new run and move with each checkpoint;\n"
          "off, they keep what they show (\"analyse\" in the Training tab follows a run later)");
  }

  // Merge the incoming tied heads into the design, replace the design, or keep it.
  void drawPendingQuestion(AppContext& ctx) {
    if (m_askPending) {
      ImGui::OpenPopup("Tied heads from DirectShare");
      m_askPending = false;
    }
    if (!ImGui::BeginPopupModal("Tied heads from DirectShare", nullptr, ImGuiWindowFlags_AlwaysAutoResize))
      return;
    ImGui::Text("%zu tied head pairs from %s.", m_pending.tiedHeads.size(), m_pending.name.c_str());
    std::string whyNot;
    try {
      Topology probe = m_topology;
      mergeTiedHeads(probe, m_pending);
    } catch (const Error& e) {
      whyNot = e.what();
    }
    ImGui::BeginDisabled(!whyNot.empty());
    if (ImGui::Button("Merge into the current design")) {
      const int64_t added = mergeTiedHeads(m_topology, m_pending);
      ctx.notify("merged " + std::to_string(added) + " tied head pairs into " + m_topology.name);
      ImGui::CloseCurrentPopup();
    }
    ImGui::EndDisabled();
    if (!whyNot.empty()) {
      ImGui::PushTextWrapPos(480);
      ImGui::TextDisabled("cannot merge: %s", whyNot.c_str());
      ImGui::PopTextWrapPos();
    }
    if (ImGui::Button("Replace the design")) {
      replaceDesign(m_pending);
      m_unique = 0;
      ImGui::CloseCurrentPopup();
    }
    ImGui::SameLine();
    if (ImGui::Button("Cancel") || escapePressed()) ImGui::CloseCurrentPopup();
    ImGui::EndPopup();
  }

  // The parameter-matched baseline, recomputed whenever the design changes (keyed on its JSON), so the number
  // next to "Launch with baseline" is always the one that launch would train.
  void drawBaseline(const ParamBudget& b) {
    const std::string key = topologyToJson(m_topology).dump();
    if (key != m_baselineKey) {
      m_baselineKey = key;
      m_baseline.reset();
      m_baselineProblem.clear();
      try {
        m_baseline = parameterMatchedBaseline(m_topology);
      } catch (const Error& e) {
        m_baselineProblem = e.what();
      }
    }
    drawSectionHeader("parameter-matched baseline");
    ImGui::PushTextWrapPos();
    if (!m_baseline) {
      drawWarning("no baseline: %s", m_baselineProblem.c_str());
      ImGui::PopTextWrapPos();
      return;
    }
    const ParamBudget bb = countParameters(*m_baseline);
    ImGui::TextDisabled(
        "matched: non-embedding parameters (the low-rank sharing paper's model size); the "
        "embedding treatment is carried over; depth %lld, width shrunk uniformly",
        static_cast<long long>(m_baseline->model.layers));
    ImGui::Text("d_model %lld, head_dim %lld, FFN %lld", static_cast<long long>(m_baseline->model.dModel),
                static_cast<long long>(m_baseline->model.headDim),
                static_cast<long long>(m_baseline->model.ffn));
    ImGui::Text("non-embedding %s vs %s (%+.2f%%)", humanCount(static_cast<double>(bb.nonEmbedding)).c_str(),
                humanCount(static_cast<double>(b.nonEmbedding)).c_str(),
                100.0 * (static_cast<double>(bb.nonEmbedding) / static_cast<double>(b.nonEmbedding) - 1));
    ImGui::Text("total %s vs %s", humanCount(static_cast<double>(bb.total)).c_str(),
                humanCount(static_cast<double>(b.total)).c_str());
    ImGui::PopTextWrapPos();
  }

  void launch(AppContext& ctx, bool withBaseline, const std::string& corpus) {
    TrainConfig c;
    c.steps = m_steps;
    c.batchSize = m_batch;
    c.lr = m_lr;
    c.corpus = corpus;
    c.checkpointEvery = std::max(10, m_steps / 20);
    c.evalEvery = std::max(5, m_steps / 40);
    const auto stamp =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    const auto dir =
        std::filesystem::path(ctx.settings.runsDirectory) / (m_topology.name + "-" + std::to_string(stamp));
    try {
      const auto modelRun = ctx.runs.launch(m_topology, c, dir, withBaseline);
      // The analysis views move to the new run only when asked, or when they show nothing yet.
      if (m_followLaunched || !ctx.workspace.current())
        ctx.workspace.follow(modelRun, ctx.settings.threshold);
      else
        ctx.notify("launched " + m_topology.name + "; the analysis views keep " +
                   ctx.workspace.current()->label + " (\"analyse\" in the Training tab follows the run)");
      ctx.showView(ViewId::Training);
    } catch (const Error& e) {
      ctx.reportError(e.what());
    }
  }

  // A design that arrives (a preset, a file, DirectShare's ties) keeps its own name until it is edited.
  void replaceDesign(const Topology& t) {
    m_topology = t;
    m_structure.clear();
    m_nameFollows = true;
  }

  // An edit that names what it builds (applyPattern, resizeLayers), leaving a name the user typed as it was.
  template <class Edit>
  void keepingUsersName(Edit&& edit) {
    const std::string name = m_topology.name;
    edit();
    if (!m_nameFollows) m_topology.name = name;
  }

  // After every edit (anything but the name and provenance changed since the last frame) the design is named
  // for what it now is (describeDesign), unless the user has named it.
  void followName() {
    Topology unnamed = m_topology;
    unnamed.name.clear();
    unnamed.provenance = {};
    std::string structure = topologyToJson(unnamed).dump();
    if (structure == m_structure) return;
    const bool edited = !m_structure.empty();
    m_structure = std::move(structure);
    if (edited && m_nameFollows) m_topology.name = describeDesign(m_topology);
  }

  Topology m_topology;
  std::string m_structure;        // the design as followName last saw it, less its name
  bool m_nameFollows = true;      // the name follows the design until the user types one
  bool m_followLaunched = false;  // the analysis views follow a launched run (always when they are empty)
  Topology m_pending;             // a topology with tied heads waiting for merge-or-replace
  bool m_askPending = false;
  std::optional<Topology> m_baseline;  // of m_baselineKey's design
  std::string m_baselineKey, m_baselineProblem;
  std::string m_note;
  int m_unique = 0;  // the U slider's value; 0: take it from the topology on the next frame
  int m_brush = 0, m_interior = 1, m_steps = 600, m_batch = 16, m_corpus = 0;
  plot::PlotState m_graphState;  // the layer -> block graph's zoom
  float m_lr = 3e-3f;
  char m_path[512] = "topology.json";
};

}  // namespace

std::unique_ptr<View> makeDesignerView() {
  return std::make_unique<DesignerPanel>();
}

}  // namespace sharelens::gui
