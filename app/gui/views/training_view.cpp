// Training monitor: every run (embedded, or attached from a directory another process writes), live curves
// of loss, validation loss, learning rate, gradient norm and tokens/s with EMA smoothing over the raw points,
// overlays labelled by topology, and pause / resume / stop / checkpoint-now for embedded runs.
#include <imgui.h>

#include <cstdio>
#include <map>
#include <optional>

#include "app/gui/ui_probe.hpp"
#include "app/gui/view.hpp"
#include "app/gui/views/training_panels.hpp"
#include "app/plot/figures.hpp"
#include "app/plot/plot_widget.hpp"
#include "core/error.hpp"
#include "core/metrics_csv.hpp"
#include "core/naming.hpp"
#include "core/run_groups.hpp"
#include "core/run_notes.hpp"

namespace sharelens::gui {
namespace {

class TrainingPanel : public View {
 public:
  ViewId id() const override { return ViewId::Training; }

  std::vector<std::pair<std::string, plot::Figure>> figures(AppContext& ctx) override {
    const auto curves = visible(ctx);
    if (curves.empty()) return {};
    const std::span<const plot::Figure> panels = m_panels.figures(curves, m_options, seedGroups(ctx));
    return {{"training-" + metricStem(m_options.metric), panels[0]}, {"training-validation", panels[1]}};
  }

  // Named after the runs shown, not the model the analysis views hold.
  std::string figureSubject(AppContext& ctx) override { return runsSubject(labelsOf(visible(ctx))); }

  static std::vector<std::string> labelsOf(const std::vector<plot::RunCurve>& curves) {
    std::vector<std::string> out;
    for (const plot::RunCurve& c : curves) out.push_back(c.label);
    return out;
  }

  void draw(AppContext& ctx) override {
    drawRunTable(ctx);
    ImGui::SetNextItemWidth(300);
    ImGui::InputTextWithHint("##attach", "run directory to attach", m_attach, sizeof m_attach);
    ImGui::SameLine();
    if (ImGui::Button("Attach")) {
      try {
        ctx.runs.attach(m_attach);
      } catch (const Error& e) {
        ctx.reportError(e.what());
      }
    }
    // The plot controls flow onto the next line in a narrow window rather than off its right edge.
    sameLineIfFits(labelledWidth(150, "metric"), 30);
    const char* metrics[] = {"loss", "validation loss", "learning rate", "gradient norm", "tokens / s"};
    int metric = static_cast<int>(m_options.metric);
    ImGui::SetNextItemWidth(150);
    if (ImGui::Combo("metric", &metric, metrics, 5)) m_options.metric = static_cast<plot::RunMetric>(metric);
    sameLineIfFits(labelledWidth(110, "x axis"));
    const char* axes[] = {"step", "tokens", "seconds"};
    int axis = static_cast<int>(m_options.axis);
    ImGui::SetNextItemWidth(110);
    if (ImGui::Combo("x axis", &axis, axes, 3)) m_options.axis = static_cast<plot::RunAxis>(axis);
    sameLineIfFits(labelledWidth(140, "smoothing"));
    ImGui::SetNextItemWidth(140);
    ImGui::SliderFloat("smoothing", &m_options.smoothing, 0.0f, 0.99f, "%.2f");
    sameLineIfFits(labelledWidth(ImGui::GetFrameHeight(), "log y"));
    ImGui::Checkbox("log y", &m_options.logY);
    probe::item("training/log-y");
    sameLineIfFits(labelledWidth(ImGui::GetFrameHeight(), "group seeds"));
    ImGui::Checkbox("group seeds", &m_options.groupSeeds);
    probe::item("training/group-seeds");
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip(
          "runs that differ only in their seeds (an experiment's arm) as one curve: the mean over seeds at "
          "each step all of them logged, with the 95%% Student-t interval of that mean as a band");
    const auto curves = visible(ctx);
    if (curves.empty()) {
      ImGui::TextWrapped(
          "No runs yet: launch one from the Designer, start `sharelens --demo`, or attach a run directory "
          "written by `sharelens train`.");
      return;
    }
    // The chosen metric and the validation loss; exported together, side by side on one page.
    // Named after the runs shown, not the model the analysis views hold.
    const std::vector<SeedGroup> groups = seedGroups(ctx);
    drawExportButtons(ctx, m_panels.figures(curves, m_options, groups),
                      "training-" + metricStem(m_options.metric), &m_panels.metricState(),
                      figureSubject(ctx));
    sameLineIfFits(buttonWidth("Export CSV"));
    const bool csv = ImGui::SmallButton("Export CSV");
    probe::item("training/export-csv");
    if (csv) exportCsv(ctx, curves, m_options.groupSeeds ? &groups : nullptr);
    m_panels.draw(ctx, curves, m_options, ImVec2(0, 0), groups);
  }

 private:
  static std::string metricStem(plot::RunMetric m) {
    std::string s(plot::runMetricName(m));
    for (char& c : s) c = c == ' ' || c == '/' ? '-' : c;
    return s;
  }

  // Every shown run's logged steps, one row each, or with the seeds grouped each group's mean and interval
  // per step (core/metrics_csv.hpp), Save As a CSV file.
  static void exportCsv(AppContext& ctx, const std::vector<plot::RunCurve>& curves,
                        const std::vector<SeedGroup>* groups) {
    // The points as they are now (written when the dialog's Save is pressed, frames later, by when a run may
    // have gone from the monitor).
    std::vector<std::pair<std::string, std::vector<MetricPoint>>> copy;
    for (const plot::RunCurve& c : curves) copy.emplace_back(c.label, *c.points);
    std::vector<std::pair<std::string, std::vector<size_t>>> members;  // group label, indices into copy
    if (groups)
      for (const SeedGroup& g : *groups) members.emplace_back(g.label, g.members);
    ctx.saveTableAs(runsSubject(labelsOf(curves)) + (groups && curves.size() > 1 ? "-seed-groups" : ""), -1,
                    "training", "csv",
                    [copy = std::move(copy), members = std::move(members),
                     grouped = groups != nullptr](const std::filesystem::path& path) {
                      if (grouped) {
                        std::vector<CurveGroup> now;
                        for (const auto& [label, indices] : members) {
                          CurveGroup& g = now.emplace_back(CurveGroup{label, {}});
                          for (size_t i : indices) g.members.push_back({label, &copy.at(i).second, 0});
                        }
                        writeSeedGroupsCsv(now, path);
                        return;
                      }
                      std::vector<plot::RunCurve> now;
                      for (const auto& [label, points] : copy) now.push_back({label, &points, 0});
                      writeMetricsCsv(now, path);
                    });
  }

  // The shown runs' legend labels and seed groups, as `export --view training` names them
  // (core/run_groups' monitorLabels: an arm's seeds are not three "baseline" entries in the legend and CSV).
  static MonitorLabels shownLabels(AppContext& ctx, bool groups, std::vector<RunEntry*>* entries = nullptr) {
    std::vector<LabelledRun> shown;
    for (auto& r : ctx.runs.runs())
      if (r->visible) {
        shown.push_back({r->label, r->record ? &*r->record : nullptr, r->dir.filename().string()});
        if (entries) entries->push_back(r.get());
      }
    return monitorLabels(shown, groups);
  }

  // The shown runs (in visible()'s order) grouped by what they share but their seeds; none unless grouping
  // is on.
  std::vector<SeedGroup> seedGroups(AppContext& ctx) const {
    return m_options.groupSeeds ? shownLabels(ctx, true).groups : std::vector<SeedGroup>{};
  }

  // The shown runs' curves, each under its legend label.
  std::vector<plot::RunCurve> visible(AppContext& ctx) {
    std::vector<RunEntry*> entries;
    const std::vector<std::string> labels = shownLabels(ctx, false, &entries).runs;
    std::vector<plot::RunCurve> out;
    for (size_t i = 0; i < entries.size(); ++i)
      out.push_back({labels[i], &entries[i]->metrics.points(), entries[i]->metrics.revision()});
    return out;
  }

  // One row per run: what it is (topology, directory, what sets it apart from the other runs, parameters,
  // rho, FLOPs per token, from its run.json), where it is (state, progress, latest numbers, last
  // checkpoint), the researcher's tags and note, and what can be done with it.
  void drawRunTable(AppContext& ctx) {
    const std::vector<std::string> differences = configDifferenceLines(ctx);
    // Fixed columns fit their content (the controls and the latest numbers must never be clipped); the run's
    // name and its notes share what is left, in proportion to the least each needs. A row is three lines
    // tall: the state goes above the progress bar, and the controls take two lines where needed ("pause
    // checkpoint now" above "stop analyse"), so that every column fits 1024 px; a narrower window scrolls
    // the table sideways instead of cutting columns off.
    const ImGuiStyle& style = ImGui::GetStyle();
    auto widthOf = [&](const char* widest) { return ImGui::CalcTextSize(widest).x; };
    const float controlsWidth =
                    widthOf("resume checkpoint now") + 4 * style.FramePadding.x + style.ItemSpacing.x,
                latestWidth = widthOf("tensors 144.0 MiB / 218.4 MiB"),
                progressWidth = widthOf("10000 / 10000") + 2 * style.FramePadding.x,
                runWidth = widthOf("baseline-aa/seed-1"), notesWidth = widthOf("ablation");
    float least = controlsWidth + latestWidth + progressWidth + runWidth + notesWidth;
    for (const char* w : {"show", "000.0M", "0.000", "FLOP/tok"}) least += widthOf(w);
    least += 9 * 2 * style.CellPadding.x;
    if (!ImGui::BeginTable(
            "##runs", 9,
            ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerH | ImGuiTableFlags_ScrollY |
                ImGuiTableFlags_ScrollX | ImGuiTableFlags_Resizable,
            ImVec2(0, std::min(220.0f, 34.0f + 60.0f * static_cast<float>(ctx.runs.runs().size()))),
            std::max(ImGui::GetContentRegionAvail().x - style.ScrollbarSize, least)))
      return;
    auto fixed = [&](const char* name, const char* widest) {
      ImGui::TableSetupColumn(name, ImGuiTableColumnFlags_WidthFixed, widthOf(widest));
    };
    fixed("show", "show");
    ImGui::TableSetupColumn("run", ImGuiTableColumnFlags_WidthStretch, runWidth);
    fixed("params", "000.0M");
    fixed("rho", "0.000");
    fixed("FLOP/tok", "FLOP/tok");
    ImGui::TableSetupColumn("state", ImGuiTableColumnFlags_WidthFixed, progressWidth);
    ImGui::TableSetupColumn("latest", ImGuiTableColumnFlags_WidthFixed, latestWidth);
    ImGui::TableSetupColumn("notes", ImGuiTableColumnFlags_WidthStretch, notesWidth);
    ImGui::TableSetupColumn("controls", ImGuiTableColumnFlags_WidthFixed, controlsWidth);
    ImGui::TableHeadersRow();
    const RunEntry* removed = nullptr;
    int id = 0;
    for (auto& r : ctx.runs.runs()) {
      const std::string& differs = differences[static_cast<size_t>(id)];
      ImGui::PushID(id++);
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::Checkbox("##show", &r->visible);
      ImGui::TableNextColumn();
      drawRunName(*r, differs);
      drawBudgetCells(*r);
      ImGui::TableNextColumn();
      drawState(*r);
      const float fraction =
          r->totalSteps > 0 ? static_cast<float>(r->lastStep()) / static_cast<float>(r->totalSteps) : 0.0f;
      char overlay[64];
      std::snprintf(overlay, sizeof overlay, "%lld / %lld", static_cast<long long>(r->lastStep()),
                    static_cast<long long>(r->totalSteps));
      ImGui::ProgressBar(fraction, ImVec2(-1, 0), overlay);
      ImGui::TableNextColumn();
      drawLatest(*r);
      ImGui::TableNextColumn();
      drawNotes(*r);
      ImGui::TableNextColumn();
      if (drawControls(ctx, *r)) removed = r.get();
      ImGui::PopID();
    }
    ImGui::EndTable();
    probe::state("training/runs", [&] {
      Json runs = Json::array();
      for (size_t i = 0; i < ctx.runs.runs().size(); ++i) {
        const RunEntry& r = *ctx.runs.runs()[i];
        Json run = {{"label", r.label},
                    {"state", r.controller ? std::string(runStateName(r.controller->state())) : r.status},
                    {"differs", differences[i]},
                    {"tags", r.notes.tags}};
        // The latest column's texts, under a key sorted after "state" (tests match "label":..,"state":..).
        if (const auto& points = r.metrics.points(); !points.empty())
          run["throughput_memory"] = {throughputText(points.back()), memoryText(r, points.back())};
        runs.push_back(std::move(run));
      }
      return runs;
    });
    drawStopConfirmation(ctx);
    drawNotesEditor(ctx);
    if (removed) {  // after the loop: the table iterated over the list
      const std::string label = removed->label;
      if (ctx.runs.remove(removed))
        ctx.notify("removed " + label + " from the monitor (its directory stays)");
    }
  }

  // Per run, "lr 0.003, seed 2": the options it does not share with every other run on the monitor
  // (core/run_groups.hpp), recomputed when a run comes, goes or writes its run.json.
  std::vector<std::string> configDifferenceLines(AppContext& ctx) {
    std::vector<const Json*> records;
    std::vector<std::pair<std::filesystem::path, bool>> runs;
    for (const auto& r : ctx.runs.runs()) {
      records.push_back(r->record ? &*r->record : nullptr);
      runs.emplace_back(r->dir, r->record.has_value());
    }
    if (runs != m_differencesOf) {  // a run's record, once read, does not change
      m_differencesOf = std::move(runs);
      m_differenceLines.clear();
      for (const auto& fields : configDifferences(records)) {
        std::string line;  // the topology is the run's name, on the line above
        for (const auto& [name, value] : fields)
          if (name != "topology") line += (line.empty() ? "" : ", ") + name + " " + value;
        m_differenceLines.push_back(std::move(line));
      }
    }
    return m_differenceLines;
  }

  static void drawRunName(const RunEntry& r, const std::string& differs) {
    ImGui::TextUnformatted(r.label.c_str());
    if (const size_t skipped = r.metrics.malformedLines(); skipped > 0) {
      ImGui::SameLine();
      ImGui::TextColored(ImVec4(1, 0.7f, 0.3f, 1), "(!)");
      if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "%zu line(s) of metrics.jsonl skipped: not JSON objects, or steps that are negative or "
            "implausibly large",
            skipped);
    }
    const std::filesystem::path shown = r.dir.parent_path().filename() / r.dir.filename();
    ImGui::TextDisabled("%s", shown.c_str());  // the directory's last two parts, whole on hover
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", r.dir.c_str());
    if (!differs.empty()) {
      ImGui::TextColored(ImVec4(0.55f, 0.75f, 0.95f, 1), "%s", differs.c_str());
      if (ImGui::IsItemHovered())
        ImGui::SetTooltip("what this run does not share with every other run here:\n%s", differs.c_str());
    }
  }

  // Its tags, the note's first line (the whole note on hover) and the button that edits them.
  void drawNotes(const RunEntry& r) {
    if (!r.notes.tags.empty())
      ImGui::TextColored(ImVec4(0.95f, 0.8f, 0.4f, 1), "%s", joinTags(r.notes.tags).c_str());
    if (!r.notes.note.empty()) {
      const std::string firstLine = r.notes.note.substr(0, r.notes.note.find('\n'));
      ImGui::TextDisabled("%s", firstLine.c_str());
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", r.notes.note.c_str());
    }
    if (!r.notesProblem.empty()) {
      ImGui::TextColored(ImVec4(1, 0.4f, 0.4f, 1), "notes.json unreadable");
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", r.notesProblem.c_str());
    }
    const bool edit = ImGui::SmallButton("notes");
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("tags and a note, kept in %s", (r.dir / "notes.json").c_str());
    probe::item("run/", r.label, "/notes");
    if (edit) m_editNotes = r.dir;
  }

  // The notes dialog: tags (comma separated) and a free note, saved into the run's directory.
  void drawNotesEditor(AppContext& ctx) {
    if (!m_editNotes.empty()) {
      ImGui::OpenPopup("Run notes");
      m_notesOf = m_editNotes;
      m_editNotes.clear();
      if (RunEntry* r = ctx.runs.find(m_notesOf)) {
        try {  // as the file is now: another process (or an editor) may have changed it
          r->notes = readRunNotes(r->dir);
          r->notesProblem.clear();
        } catch (const Error& e) {
          r->notesProblem = e.what();
        }
        const std::string tags = joinTags(r->notes.tags);
        // Text longer than the boxes hold is not cut and saved back: it is edited in the file instead.
        m_notesTooLong = tags.size() >= sizeof m_tagsText || r->notes.note.size() >= sizeof m_noteText;
        std::snprintf(m_tagsText, sizeof m_tagsText, "%s", m_notesTooLong ? "" : tags.c_str());
        std::snprintf(m_noteText, sizeof m_noteText, "%s", m_notesTooLong ? "" : r->notes.note.c_str());
      }
    }
    if (!ImGui::BeginPopupModal("Run notes", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) return;
    RunEntry* r = ctx.runs.find(m_notesOf);
    if (!r) {  // taken off the monitor meanwhile
      ImGui::CloseCurrentPopup();
      ImGui::EndPopup();
      return;
    }
    ImGui::TextUnformatted(r->label.c_str());
    ImGui::TextDisabled("saved in %s", (r->dir / "notes.json").c_str());
    if (!r->notesProblem.empty())
      ImGui::TextColored(ImVec4(1, 0.4f, 0.4f, 1), "%s\nSaving replaces the file.", r->notesProblem.c_str());
    if (m_notesTooLong) {
      ImGui::TextColored(ImVec4(1, 0.7f, 0.3f, 1),
                         "The notes are longer than this dialog holds (%zu bytes):", sizeof m_noteText - 1);
      ImGui::TextUnformatted("edit notes.json itself; nothing here changes them.");
      if (ImGui::Button("Close") || escapePressed()) ImGui::CloseCurrentPopup();
      ImGui::EndPopup();
      return;
    }
    ImGui::SetNextItemWidth(460);
    ImGui::InputTextWithHint("tags", "comma separated: baseline, lr sweep", m_tagsText, sizeof m_tagsText);
    probe::item("notes-dialog/tags");
    ImGui::InputTextMultiline("note", m_noteText, sizeof m_noteText, ImVec2(460, 140));
    probe::item("notes-dialog/note");
    const bool save = ImGui::Button("Save");
    probe::item("notes-dialog/save");
    if (save) {
      const RunNotes notes{parseTags(m_tagsText), m_noteText};
      try {
        writeRunNotes(r->dir, notes);
        r->notes = notes;
        r->notesProblem.clear();
        ctx.notify("saved the notes of " + r->label);
        ImGui::CloseCurrentPopup();
      } catch (const Error& e) {
        ctx.reportError(e.what());
      }
    }
    ImGui::SameLine();
    if (ImGui::Button("Cancel") || escapePressed()) ImGui::CloseCurrentPopup();
    ImGui::EndPopup();
  }

  // run.json's budget: total parameters, rho (the embedding's share) and training FLOPs per token; a dash
  // until the run has written it, or when a hand-edited file holds something else.
  static void drawBudgetCells(const RunEntry& r) {
    auto number = [&](const char* key) -> std::optional<double> {
      if (!r.record || !r.record->is_object()) return std::nullopt;
      const auto p = r.record->find("parameters");
      if (p == r.record->end() || !p->is_object()) return std::nullopt;
      const auto v = p->find(key);
      return v != p->end() && v->is_number() ? std::optional<double>(v->get<double>()) : std::nullopt;
    };
    const auto total = number("total"), rho = number("rho"), flops = number("train_flops_per_token");
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(total ? humanCount(*total).c_str() : "-");
    if (total && ImGui::IsItemHovered()) ImGui::SetTooltip("%.0f parameters", *total);
    ImGui::TableNextColumn();
    if (rho)
      ImGui::Text("%.3f", *rho);
    else
      ImGui::TextUnformatted("-");
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("rho: the embedding's share of all parameters");
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(flops ? humanCount(*flops).c_str() : "-");
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("training FLOPs per token (forward and backward)");
  }

  static void drawState(const RunEntry& r) {
    if (!r.controller) {
      ImGui::TextUnformatted(r.status.c_str());
      return;
    }
    const RunState s = r.controller->state();
    ImGui::TextUnformatted(std::string(runStateName(s)).c_str());
    bool hovered = ImGui::IsItemHovered();
    if (s == RunState::Failed) {
      // Wrapped inside the column (as wide as "10000 / 10000"), its first ~40 characters in about three
      // lines of it (one line cut at the column's edge hid the cause); the whole message on hover.
      const std::string m = r.controller->message();
      ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1, 0.4f, 0.4f, 1));
      ImGui::TextWrapped("%s", m.size() > 42 ? (m.substr(0, 39) + "...").c_str() : m.c_str());
      ImGui::PopStyleColor();
      hovered = hovered || ImGui::IsItemHovered();
    } else if (s == RunState::Preparing && !r.controller->message().empty()) {
      // What the run is doing before its first step ("tokenising"; a resumed run shows its old curve
      // meanwhile), on one line cut at the column's edge, so the row keeps its three lines; whole on hover.
      ImGui::TextDisabled("%s", r.controller->message().c_str());
      hovered = hovered || ImGui::IsItemHovered();
    }
    if ((s == RunState::Failed || s == RunState::Preparing) && hovered) {
      ImGui::BeginTooltip();
      ImGui::PushTextWrapPos(ImGui::GetFontSize() * 40);
      ImGui::TextUnformatted(r.controller->message().c_str());
      ImGui::PopTextWrapPos();
      ImGui::EndTooltip();
    }
  }

  // The run's latest loss and throughput, as the table shows them.
  static std::string throughputText(const MetricPoint& last) {
    char loss[48];
    std::snprintf(loss, sizeof loss, "loss %.3f  ", last.loss);
    return loss + humanCount(last.tokensPerSecond) + " tok/s";
  }

  // The run's CPU tensors at their peak (trainer/tensor_memory.hpp) beside what `params` predicted for it
  // (run.json's memory_estimate); empty when the run did not log them.
  static std::string memoryText(const RunEntry& r, const MetricPoint& last) {
    if (std::isnan(last.tensorPeakBytes)) return {};
    std::optional<double> predicted;
    if (r.record && r.record->is_object())
      if (const auto e = r.record->find("memory_estimate"); e != r.record->end() && e->is_object())
        if (const auto t = e->find("total_bytes"); t != e->end() && t->is_number())
          predicted = t->get<double>();
    return "tensors " + humanBytes(last.tensorPeakBytes) + (predicted ? " / " + humanBytes(*predicted) : "");
  }

  // memoryText, and the process's peak resident set on hover.
  static void drawMemory(const RunEntry& r, const MetricPoint& last) {
    const std::string text = memoryText(r, last);
    if (text.empty()) return;
    ImGui::TextDisabled("%s", text.c_str());
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip(
          "this run's CPU tensors at their peak (weights, gradients, AdamW moments, a step's activations)\n"
          "/ what `sharelens params` predicts for its batch; the process's peak resident set: %s",
          std::isnan(last.processPeakBytes) ? "-" : humanBytes(last.processPeakBytes).c_str());
  }

  void drawLatest(const RunEntry& r) {
    const auto& points = r.metrics.points();
    if (!points.empty()) {
      const MetricPoint& last = points.back();
      ImGui::TextUnformatted(throughputText(last).c_str());
      drawMemory(r, last);
      if (last.worldSize > 1) {  // a distributed run: its world size, and each rank's throughput on hover
        ImGui::SameLine();
        ImGui::TextDisabled("%d ranks", last.worldSize);
        if (ImGui::IsItemHovered()) {
          std::string perRank;
          for (size_t i = 0; i < last.rankTokensPerSecond.size(); ++i)
            perRank +=
                "rank " + std::to_string(i) + ": " + humanCount(last.rankTokensPerSecond[i]) + " tok/s\n";
          ImGui::SetTooltip("data parallel over %d ranks (the step runs at the slowest)\n%s", last.worldSize,
                            perRank.c_str());
        }
      }
    }
    // The last checkpoint, and whether one asked for is still being written.
    const auto asked = m_checkpointAsked.find(r.dir);
    const bool waiting = asked != m_checkpointAsked.end() && r.latestCheckpoint < asked->second;
    if (waiting)
      ImGui::TextColored(ImVec4(0.95f, 0.8f, 0.3f, 1), "checkpoint asked at step %lld: writing...",
                         static_cast<long long>(asked->second));
    else if (r.latestCheckpoint >= 0)
      ImGui::TextDisabled("checkpoint at step %lld", static_cast<long long>(r.latestCheckpoint));
  }

  // Returns true when the user asked to take the run off the monitor.
  bool drawControls(AppContext& ctx, RunEntry& r) {
    bool drawn = false;  // SameLine before a cell's first item would follow the previous column
    auto next = [&](const char* button) {  // beside the last button where it fits the cell, else below
      if (drawn) sameLineIfFits(buttonWidth(button));
      drawn = true;
    };
    const RunState s = r.controller ? r.controller->state() : RunState::Finished;
    const bool live = r.controller && (s == RunState::Running || s == RunState::Paused);
    if (r.controller && s == RunState::Running && (next("pause"), ImGui::SmallButton("pause")))
      r.controller->pause();
    if (r.controller && s == RunState::Paused && (next("resume"), ImGui::SmallButton("resume")))
      r.controller->resume();
    if (live) {
      next("checkpoint now");
      if (ImGui::SmallButton("checkpoint now")) {
        r.controller->checkpointNow();
        m_checkpointAsked[r.dir] = r.lastStep();
        ctx.notify("checkpoint of " + r.label + " asked for at step " + std::to_string(r.lastStep()));
      }
      next("stop");
      if (ImGui::SmallButton("stop")) m_confirmStop = r.dir;  // asked in a popup first
      probe::item("run/", r.label, "/stop");
    }
    // A stopped run continues from its latest checkpoint: one this window ran, or one attached or reopened
    // later (stopped by another process, a quit, a crash). A run another process still writes refuses, by
    // its directory lock, with a named error.
    const bool stoppedHere = r.controller && s == RunState::Stopped;
    const bool stoppedElsewhere =  // not one still training elsewhere
        !r.controller && (r.status == "stopped" || r.status == "interrupted");
    if ((stoppedHere || stoppedElsewhere) && r.latestCheckpoint >= 0) {
      next("continue");
      const bool clicked = ImGui::SmallButton("continue");
      probe::item("run/", r.label, "/continue");
      if (clicked) {
        try {
          ctx.runs.resumeEmbedded(r.dir, recordedThreads(r));
          ctx.notify("continuing " + r.label + " from step " + std::to_string(r.latestCheckpoint));
        } catch (const Error& e) {
          ctx.reportError(e.what());
        }
      }
    }
    if (r.latestCheckpoint >= 0) {
      next("analyse");
      const bool analyse = ImGui::SmallButton("analyse");
      probe::item("run/", r.label, "/analyse");
      if (analyse) {
        ctx.workspace.follow(r.dir, ctx.settings.threshold);
        ctx.showView(ViewId::Spectrum);
      }
    }
    if (!live && !(r.controller && s == RunState::Preparing)) {
      next("remove");
      const bool remove = ImGui::SmallButton("remove");
      probe::item("run/", r.label, "/remove");
      if (remove) return true;
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("take the run off the monitor; its directory stays");
    }
    return false;
  }

  // The threads the run was started with (run.json's config), so a continued run keeps its pace.
  static int recordedThreads(const RunEntry& r) {
    if (!r.record || !r.record->is_object()) return 1;
    const auto config = r.record->find("config");
    if (config == r.record->end() || !config->is_object()) return 1;
    const auto threads = config->find("threads");
    return threads != config->end() && threads->is_number_integer()
               ? static_cast<int>(std::clamp<int64_t>(threads->get<int64_t>(), 1, 256))
               : 1;
  }

  void drawStopConfirmation(AppContext& ctx) {
    if (!m_confirmStop.empty()) {
      ImGui::OpenPopup("Stop run?");
      m_stopping = m_confirmStop;
      m_confirmStop.clear();
    }
    if (!ImGui::BeginPopupModal("Stop run?", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) return;
    RunEntry* r = ctx.runs.find(m_stopping);
    if (r && r->controller) {
      ImGui::Text("Stop %s at step %lld?", r->label.c_str(), static_cast<long long>(r->lastStep()));
      ImGui::TextDisabled("A checkpoint is written first; \"continue\" resumes the run from it.");
      const bool stop = ImGui::Button("Stop");
      probe::item("stop-dialog/stop");
      if (stop) {
        r->controller->requestStop();
        ctx.notify("stopping " + r->label + " (writing its checkpoint)");
        ImGui::CloseCurrentPopup();
      }
      ImGui::SameLine();
    }
    const bool keep = ImGui::Button(r ? "Keep training" : "Close");
    probe::item("stop-dialog/keep");
    if (keep || escapePressed()) ImGui::CloseCurrentPopup();  // Escape keeps training, as the button does
    ImGui::EndPopup();
  }

  std::filesystem::path m_confirmStop, m_stopping;  // the run the Stop popup is asking about
  std::filesystem::path m_editNotes, m_notesOf;     // the run whose notes the notes dialog edits
  char m_tagsText[1024] = "", m_noteText[16384] = "";
  bool m_notesTooLong = false;  // the run's notes do not fit the boxes: the dialog only says so
  // The runs m_differenceLines were computed for: each one's directory and whether it had its run.json.
  std::vector<std::pair<std::filesystem::path, bool>> m_differencesOf;
  std::vector<std::string> m_differenceLines;
  std::map<std::filesystem::path, int64_t>
      m_checkpointAsked;  // run -> step at which "checkpoint now" was pressed
  TrainingPanelOptions m_options;
  char m_attach[512] = "";
  TrainingPanels m_panels;
};

}  // namespace

std::unique_ptr<View> makeTrainingView() {
  return std::make_unique<TrainingPanel>();
}

}  // namespace sharelens::gui
