// Experiments (issue 11): a paper's claim as arms x seeds. Pick a shipped experiment (assets/experiments) or
// make one of the Designer's topology and its parameter-matched baseline, plan it (as `experiment plan`: the
// learning rates, tokens and seeds sized from an A/A pilot; the planned experiment is then the one shown),
// run it in the background (N runs at a time, resuming what is unfinished), watch the queue, and read the
// answer: each arm's final held-out NLL with its 95% interval (a matched baseline hatched), mean validation
// curves with +-1 sd bands against tokens or FLOPs, and the verdict on the paper's claim. Every figure
// exports to PNG, SVG and PDF.
#include <imgui.h>

#include <algorithm>
#include <deque>
#include <mutex>

#include "app/gui/ui_probe.hpp"
#include "app/gui/view.hpp"
#include "app/plot/figures.hpp"
#include "app/workflows/experiment_derive.hpp"
#include "core/assets.hpp"
#include "core/error.hpp"
#include "core/experiment_report.hpp"
#include "core/naming.hpp"
#include "core/param_count.hpp"
#include "trainer/experiment_plan.hpp"

namespace sharelens::gui {
namespace {

namespace fs = std::filesystem;

// What a running experiment's job shares with the view: its log lines, and how it ended.
struct RunLog {
  std::mutex mutex;
  std::deque<std::string> lines;
  bool running = true;
  std::string outcome;
  void add(const std::string& line) {
    std::lock_guard lock(mutex);
    lines.push_back(line);
    while (lines.size() > 200) lines.pop_front();
  }
};

class ExperimentsPanel : public View {
 public:
  ExperimentsPanel() { listShipped(); }
  ViewId id() const override { return ViewId::Experiments; }

  std::vector<std::pair<std::string, plot::Figure>> figures(AppContext&) override {
    if (!m_report) return {};
    return {{m_report->experiment.name + "-forest", plot::experimentForestFigure(*m_report)},
            {m_report->experiment.name + "-curves", plot::experimentCurvesFigure(*m_report, m_flops)}};
  }

  // An experiment's directory (experiment.json inside) or an experiment file.
  bool openPath(AppContext&, const fs::path& path) override {
    if (fs::is_directory(path) && fs::exists(path / "experiment.json")) {
      load(path / "experiment.json");
      std::snprintf(m_out, sizeof m_out, "%s", path.string().c_str());
      outputChanged();
      if (m_experiment) m_planNote = planNoteForOutput();
      return true;
    }
    if (path.extension() == ".json" && fs::is_regular_file(path)) {
      try {
        if (readJsonFile(path).value("schema", "") != kExperimentSchema) return false;
      } catch (const Error&) {
        return false;
      }
      load(path);
      return true;
    }
    return false;
  }

  void draw(AppContext& ctx) override {
    refreshReport(ctx);
    if (ImGui::BeginTable("##experiments", 2, ImGuiTableFlags_Resizable | ImGuiTableFlags_BordersInnerV)) {
      ImGui::TableSetupColumn("setup", ImGuiTableColumnFlags_WidthFixed, 430);
      ImGui::TableSetupColumn("results", ImGuiTableColumnFlags_WidthStretch);
      ImGui::TableNextColumn();
      ImGui::BeginChild("##setup");
      drawSetup(ctx);
      ImGui::EndChild();
      ImGui::TableNextColumn();
      drawResults(ctx);
      ImGui::EndTable();
    }
  }

 private:
  void listShipped() {
    m_shipped.clear();
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(assetsDirectory() / "experiments", ec))
      if (e.path().extension() == ".json") m_shipped.push_back(e.path());
    std::sort(m_shipped.begin(), m_shipped.end());
  }

  // Reads the chosen experiment (a named error shown where the experiment would be).
  void load(const fs::path& file) {
    m_problem.clear();
    try {
      m_experiment = readExperimentFile(file);
      m_planNote = planNoteFor(file);
      setOutput(m_experiment->name);
    } catch (const Error& e) {
      m_experiment.reset();
      m_problem = e.what();
    }
  }

  // What a plan's planned.json was planned to: "planned (DIR/plan.md): 12 seeds x 3.8M tokens per run, about
  // 41 min of training on this machine"; empty for any other file (one as shipped: its own seeds and tokens).
  static std::string planNoteFor(const fs::path& file) {
    if (file.filename() != "planned.json") return "";
    const fs::path planJson = file.parent_path() / "plan.json";
    try {
      const Json recommended = readJsonFile(planJson).at("recommended");
      std::string note = "planned (" + (file.parent_path() / "plan.md").string() +
                         "): " + std::to_string(recommended.at("seeds").get<int>()) + " seeds x " +
                         humanCount(recommended.at("tokens").get<double>()) + " tokens per run";
      // (plans made before the estimate existed have none)
      if (const auto seconds = recommended.find("expected_wall_seconds");
          seconds != recommended.end() && seconds->is_number())
        note += ", about " + humanDuration(seconds->get<double>()) + " of training on this machine";
      return note;
    } catch (const std::exception& e) {  // a planned.json without its plan: still planned, its record unread
      return "planned; its plan record " + planJson.string() + " could not be read (" + e.what() + ")";
    }
  }

  // An output directory's experiment was planned when the plan beside it (planDirectory) planned what it
  // trains (tokens, learning rates, arms; its seeds may have grown since): that plan's note; "" otherwise.
  std::string planNoteForOutput() const {
    const fs::path planned = planDirectory() / "planned.json";
    std::error_code ec;
    if (!fs::exists(planned, ec)) return "";
    const auto trains = [](const Experiment& e) {
      return experimentTrainingIdentityLessSeeds(experimentToJson(e));
    };
    try {
      if (trains(readExperimentFile(planned)) != trains(*m_experiment)) return "";
    } catch (const Error&) {
      return "";
    }
    return planNoteFor(planned);
  }

  // A newly chosen experiment runs as its file plans it until the user asks for fewer seeds or steps.
  void setOutput(const std::string& name) {
    m_seeds = static_cast<int>(m_experiment->seeds.size());
    m_steps = 0;
    const std::string dir = (Settings::dataDirectory() / "experiments" / fileStem(name)).string();
    std::snprintf(m_out, sizeof m_out, "%s", dir.c_str());
    outputChanged();
  }

  // Another output directory: the last one's report (its figures, its "As run") goes at once, and the new
  // one is read on the next frame (a read of the old one still in flight is dropped: refreshReport).
  void outputChanged() {
    ++m_shownGeneration;
    m_report.reset();
    m_hasRuns = false;
    m_reportThrottle.reset();
  }

  // The Designer's topology as an arm, its parameter-matched baseline (solved as the low-rank sharing paper
  // does) as the reference.
  void fromDesigner(AppContext& ctx) {
    const Topology t = ctx.designerTopology();
    Json arm = {{"name", fileStem(t.name)}, {"topology", topologyToJson(t)}, {"expect", "no-worse"}};
    const Json j = {
        {"schema", kExperimentSchema},
        {"name", fileStem(t.name) + "-vs-baseline"},
        {"description", "The Designer's topology against its parameter-matched baseline."},
        {"corpus", "brown"},
        {"seeds", 3},
        {"tokens", 262144},
        {"eval_tokens", 8192},
        {"train", {{"batch_size", 16}, {"eval_every", 32}}},
        {"reference", "baseline"},
        {"arms", Json::array({arm, {{"name", "baseline"}, {"matched_baseline_of", fileStem(t.name)}}})}};
    m_problem.clear();
    try {
      m_experiment = experimentFromJson(j, "the Designer's topology", ".");
      m_planNote.clear();
      setOutput(m_experiment->name);
    } catch (const Error& e) {
      m_experiment.reset();
      m_problem = e.what();
    }
  }

  void drawSetup(AppContext& ctx) {
    drawSectionHeader("experiment");
    const std::string current = m_experiment ? m_experiment->name : std::string("choose one");
    ImGui::SetNextItemWidth(260);
    if (ImGui::BeginCombo("##shipped", current.c_str())) {
      for (const fs::path& f : m_shipped)
        if (ImGui::Selectable(f.stem().string().c_str())) load(f);
      ImGui::EndCombo();
    }
    ImGui::SameLine();
    const bool designer = ImGui::Button("Designer's topology");
    probe::item("experiments/from-designer");
    if (designer) fromDesigner(ctx);
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("the topology in the Designer as an arm, beside its parameter-matched baseline");
    if (!m_problem.empty()) {
      ImGui::PushTextWrapPos(0);
      ImGui::TextColored(ImVec4(1, 0.55f, 0.5f, 1), "%s", m_problem.c_str());
      ImGui::PopTextWrapPos();
    }
    if (!m_experiment) return;
    const Experiment& e = *m_experiment;
    ImGui::PushTextWrapPos(0);
    if (!e.claim.statement.empty())
      ImGui::TextWrapped("Claim (%s, %s): %s", e.claim.paper.c_str(), e.claim.section.c_str(),
                         e.claim.statement.c_str());
    if (!e.description.empty()) ImGui::TextDisabled("%s", e.description.c_str());
    if (m_report)  // the protocol the output's runs were trained with
      if (const std::string protocol = m_report->protocolText(); !protocol.empty())
        ImGui::TextDisabled("As run: %s", protocol.c_str());
    ImGui::PopTextWrapPos();
    ImGui::Text("%zu seeds, %.2fM tokens per run on %s, reference: %s", e.seeds.size(),
                static_cast<double>(e.tokens) / 1e6, e.corpus.c_str(), e.reference.c_str());
    ImGui::PushTextWrapPos(0);
    if (!m_planNote.empty())
      ImGui::TextDisabled("%s", m_planNote.c_str());
    else
      ImGui::TextDisabled(
          "not planned: the seeds and tokens are the file's own. Plan sweeps each arm's learning rate and "
          "pilots the reference against its A/A arm, then sizes tokens and seeds for a paired interval of "
          "+-%g nats (as `sharelens experiment plan`)",
          e.plan.targetHalfWidth);
    probe::state("experiments/planned", [&] { return Json(!m_planNote.empty()); });
    ImGui::PopTextWrapPos();
    if (ImGui::BeginTable("##arms", 3, ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerH)) {
      for (const char* c : {"arm", "parameters (non-emb.)", "claim"}) ImGui::TableSetupColumn(c);
      ImGui::TableHeadersRow();
      for (const ExperimentArm& a : e.arms) {
        const ParamBudget b = countParameters(a.topology);
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(a.name.c_str());
        if (a.derive && ImGui::IsItemHovered())
          ImGui::SetTooltip("%s of %s", a.derive->method.c_str(), a.derive->from.c_str());
        if (!a.matchedBaselineOf.empty() && ImGui::IsItemHovered())
          ImGui::SetTooltip("matched to %s", a.matchedBaselineOf.c_str());
        ImGui::TableNextColumn();
        ImGui::Text("%s (%s)", humanCount(static_cast<double>(b.total)).c_str(),
                    humanCount(static_cast<double>(b.nonEmbedding)).c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(a.expect.empty() ? "" : a.expect.c_str());
      }
      ImGui::EndTable();
    }
    drawSectionHeader("run");
    ImGui::SetNextItemWidth(-1);
    ImGui::InputText("##out", m_out, sizeof m_out);
    probe::item("experiments/out-path");
    if (ImGui::IsItemDeactivatedAfterEdit()) outputChanged();
    ImGui::SetNextItemWidth(100);
    ImGui::SliderInt("runs at a time (0: one per core)", &m_parallel, 0, 4);
    drawRunSize();
    const bool running = m_log && m_log->running;
    ImGui::BeginDisabled(running);
    if (ImGui::Button(fs::exists(fs::path(m_out) / "experiment.json") ? "Resume" : "Run")) start(ctx);
    probe::item("experiments/run");
    ImGui::SameLine();
    // A planned experiment is the plan's outcome; an output holding runs holds the experiment as it was run,
    // which the planned one (other tokens, seeds, learning rates) could not continue.
    ImGui::BeginDisabled(!m_planNote.empty() || m_hasRuns);
    if (ImGui::Button("Plan")) startPlan(ctx);
    probe::item("experiments/plan");
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) {
      const std::string planDir = planDirectory().string();
      if (running)
        ImGui::SetTooltip("a plan or run of this view is under way");
      else if (!m_planNote.empty())
        ImGui::SetTooltip("planned already");
      else if (m_hasRuns)
        ImGui::SetTooltip(
            "the output holds runs of this experiment as written: choose another output to plan "
            "for (the plan goes beside it)");
      else
        ImGui::SetTooltip(
            "plan this experiment into %s (resumable; the seeds and steps above do not apply), then show "
            "the planned experiment, ready to run",
            planDir.c_str());
    }
    ImGui::EndDisabled();
    ImGui::EndDisabled();
    if (running) {
      ImGui::SameLine();
      if (ImGui::Button("Stop")) ctx.jobs.cancel(m_job);
    }
    // Its runs' curves on the Training view, the seeds of an arm as one mean curve with its band there.
    if (m_hasRuns) {
      ImGui::SameLine();
      const bool show = ImGui::Button("Runs in Training");
      probe::item("experiments/runs-in-training");
      if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "follow every run of this experiment on the Training view (tick \"group seeds\" "
            "there for each arm's mean over seeds with its 95%% interval)");
      if (show) {
        try {
          ctx.runs.attach(m_out);
          ctx.showView(ViewId::Training);
        } catch (const Error& e) {
          ctx.reportError(e.what());
        }
      }
    }
    drawQueue();
  }

  // Seeds and steps of this run of the experiment, as `experiment run --seeds K --steps N` sets them: fewer
  // seeds or steps for a quick look, the file's for the comparison it was planned for.
  void drawRunSize() {
    const int fileSeeds = static_cast<int>(m_experiment->seeds.size());
    const int mostSeeds = std::max(fileSeeds, seedsTheReportAsksFor());
    ImGui::SetNextItemWidth(100);
    if (mostSeeds > 2)
      ImGui::SliderInt("seeds", &m_seeds, 2, mostSeeds);
    else
      ImGui::TextDisabled("%d seeds", fileSeeds);
    probe::item("experiments/seeds");
    probe::state("experiments/seeds-offered", [&] { return Json(mostSeeds); });
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip(mostSeeds > fileSeeds
                            ? "the first K of the file's %d seeds; fewer seeds, wider intervals; "
                              "more, up to what the widest interval's spread needs, are added "
                              "to the finished runs"
                            : "the first K of the file's %d seeds; fewer seeds, wider intervals",
                        fileSeeds);
    sameLineIfFits(labelledWidth(120, "steps per run (0: the file's token budget)"));
    ImGui::SetNextItemWidth(120);
    if (ImGui::InputInt("steps per run (0: the file's token budget)", &m_steps, 100, 1000))
      m_steps = std::clamp(m_steps, 0, 10'000'000);
    probe::item("experiments/steps");
    probe::state("experiments/out", [&] { return Json(std::string(m_out)); });
    probe::state("experiments/run-size", [&] { return Json{{"seeds", m_seeds}, {"steps", m_steps}}; });
    if (m_seeds < fileSeeds || m_steps > 0)
      ImGui::TextColored(ImVec4(0.95f, 0.8f, 0.3f, 1),
                         "a smaller run than the file plans: its intervals are not the planned ones");
    else if (m_seeds > fileSeeds)
      ImGui::TextDisabled("adds seeds %d to %d to the finished runs", fileSeeds + 1, m_seeds);
  }

  // The most seeds any arm's measured spread needs for the plan's target half-width (0 without a report);
  // at most kMostSeedsOffered, a slider's worth.
  int seedsTheReportAsksFor() const {
    constexpr int kMostSeedsOffered = 64;
    int most = 0;
    if (m_report)
      for (const ArmSummary& a : m_report->arms)
        if (a.asksForSeeds() && a.difference.halfWidth > m_report->experiment.plan.targetHalfWidth) {
          most = std::max(most, a.seedsForTarget > 0 ? a.seedsForTarget : kMostSeedsOffered);
        }
    return std::min(most, kMostSeedsOffered);
  }

  // Where Plan writes: beside the output, as `experiment plan FILE --out OUT-plan` (runs/NAME-plan).
  fs::path planDirectory() const {
    fs::path out = fs::path(m_out).lexically_normal();
    if (out.filename().empty()) out = out.parent_path();  // "runs/x/": beside x, not inside it
    return out.string() + "-plan";
  }

  // `experiment plan` on the chosen experiment, in the background; once planned, the view shows the planned
  // experiment (its planned.json), to be run into the same output -- unless another experiment or output was
  // chosen meanwhile, which stays, and the notification says where the plan is. A plan already made is read,
  // not redone.
  void startPlan(AppContext& ctx) {
    // The button goes by the last report read, which lags a newly chosen output by a report job: look now.
    std::error_code ec;
    if (fs::exists(fs::path(m_out) / "experiment.json", ec) && !runDirectoriesBelow(m_out, 2).empty()) {
      m_hasRuns = true;
      ctx.notify(std::string(m_out) +
                 " holds runs of this experiment as written: choose another output to plan for");
      return;
    }
    const Experiment e = *m_experiment;
    const fs::path planDir = planDirectory();
    const std::string out = m_out;
    const uint64_t shown = m_shownGeneration;
    ExperimentRunOptions options;
    options.parallel = m_parallel;
    options.deriveArm = experimentDeriver();
    submitLogged(ctx, "plan " + e.name, "planned",
                 [this, &ctx, e, planDir, out, options, shown](const TaskContext& task, const LogSink& log) {
                   planExperiment(e, planDir, options, task, log);
                   return [this, &ctx, planDir, out, shown] {  // on the UI thread: the view outlives its jobs
                     if (shown != m_shownGeneration) {
                       ctx.notify("planned into " + planDir.string() + ": open its planned.json to run it");
                       return;
                     }
                     load(planDir / "planned.json");
                     std::snprintf(m_out, sizeof m_out, "%s",
                                   out.c_str());  // the output chosen before planning
                     outputChanged();
                   };
                 });
  }

  void start(AppContext& ctx) {
    const Experiment e = *m_experiment;
    const fs::path out = m_out;
    ExperimentRunOptions options;
    options.parallel = m_parallel;
    if (m_seeds >= 2 && m_seeds != static_cast<int>(e.seeds.size())) options.seeds = m_seeds;
    if (m_steps > 0) options.steps = m_steps;
    options.deriveArm = experimentDeriver();
    options.tolerateFailedRuns =
        true;  // as `experiment run`: a diverged seed is an outcome the report counts
    submitLogged(ctx, "experiment " + e.name, "finished",
                 [e, out, options](const TaskContext& task, const LogSink& log) -> JobSystem::Completion {
                   runExperiment(e, out, options, task, log);
                   return nullptr;
                 });
    m_reportThrottle.reset();
  }

  using LogSink = std::function<void(const std::string&)>;
  // A plan or a run as a long job whose log lines and outcome the queue shows: `work` runs on the job's
  // thread, writing to the log; `done` ("planned", "finished") is the outcome when it succeeds.
  void submitLogged(AppContext& ctx, const std::string& title, const std::string& done,
                    std::function<JobSystem::Completion(const TaskContext&, const LogSink&)> work) {
    auto log = std::make_shared<RunLog>();
    m_log = log;
    m_job = ctx.jobs.submit(
        title,
        [work = std::move(work), log](const TaskContext& task) {
          return work(task, [log](const std::string& line) { log->add(line); });
        },
        [log, &ctx, title, done](JobSystem::Status status, const std::string& error) {
          log->running = false;
          log->outcome = status == JobSystem::Status::Ok          ? done
                         : status == JobSystem::Status::Cancelled ? "stopped"
                                                                  : error;
          ctx.notify(title + ": " + (status == JobSystem::Status::Ok ? done : "ended"));
        },
        JobSystem::Lane::Long);
  }

  // Every arm x seed with its state (from the directory: finished, training, queued), then the last log
  // lines.
  void drawQueue() {
    if (m_report) {
      drawSectionHeader("queue");
      if (ImGui::BeginTable("##queue", 4, ImGuiTableFlags_RowBg)) {
        for (const RunSummary& r : m_report->runs) {
          ImGui::TableNextRow();
          ImGui::TableNextColumn();
          ImGui::TextUnformatted(r.arm.c_str());
          ImGui::TableNextColumn();
          ImGui::Text("seed %llu", static_cast<unsigned long long>(r.seed));
          ImGui::TableNextColumn();
          ImGui::TextUnformatted(r.finished     ? "finished"
                                 : r.failed     ? "diverged"
                                 : r.tokens > 0 ? "training"
                                                : "queued");
          ImGui::TableNextColumn();
          if (r.finished)
            ImGui::TextDisabled("NLL %.4f", r.finalNll);
          else if (r.tokens > 0)
            ImGui::TextDisabled("%.2fM tokens", r.tokens / 1e6);
        }
        ImGui::EndTable();
      }
    }
    if (!m_log) return;
    std::lock_guard lock(m_log->mutex);
    if (!m_log->running) {
      ImGui::TextColored(ImVec4(0.6f, 0.9f, 0.6f, 1), "%s", m_log->outcome.c_str());
      probe::state("experiments/outcome", [&] { return Json(m_log->outcome); });
    }
    ImGui::BeginChild("##log", ImVec2(0, 140), true);
    for (const std::string& line : m_log->lines) ImGui::TextUnformatted(line.c_str());
    if (m_log->running) ImGui::SetScrollHereY(1.0f);
    ImGui::EndChild();
  }

  // The report of the output directory, read again about once a second on an analysis worker (it reads
  // every run's metrics and evaluation and bootstraps the documents: tenths of a second for a claims
  // experiment, which the UI thread must not wait for); the last one stays shown meanwhile. One at a time:
  // a directory changed while one is reading is read again after it.
  void refreshReport(AppContext& ctx) {
    if (m_reportJob || !m_reportThrottle.due()) return;
    std::error_code ec;
    if (!fs::exists(fs::path(m_out) / "experiment.json", ec)) {  // not an experiment's output (yet): no scan
      m_report.reset();
      m_hasRuns = false;
      return;
    }
    const fs::path out = m_out;
    m_reportJob = ctx.jobs.submit(
        "experiment report",
        [this, out](const TaskContext&) -> JobSystem::Completion {
          const bool hasRuns = !runDirectoriesBelow(out, 2).empty();
          std::shared_ptr<const ExperimentReport> report;
          std::string problem;
          try {
            report = std::make_shared<const ExperimentReport>(reportExperiment(out));
          } catch (const Error& e) {
            problem = e.what();
          }
          return [this, out, hasRuns, report, problem] {  // on the UI thread: the view outlives its jobs
            if (out != fs::path(m_out)) return;           // another directory was chosen meanwhile
            m_hasRuns = hasRuns;
            m_report = report;
            if (!problem.empty()) m_problem = problem;
          };
        },
        [this](JobSystem::Status, const std::string&) { m_reportJob = 0; }, JobSystem::Lane::Analysis,
        JobSystem::Shown::Quiet);
  }

  void drawResults(AppContext& ctx) {
    if (!m_report) {
      ImGui::TextWrapped(
          "Run an experiment to see each arm's held-out NLL with its 95%% interval over seeds, the paired "
          "differences to the reference arm, and the mean curves.");
      return;
    }
    const ExperimentReport& r = *m_report;
    const double target = r.experiment.plan.targetHalfWidth;
    for (const ArmSummary& a : r.arms) {
      if (a.name == r.experiment.reference || a.difference.n == 0) {  // no difference to show: its divergence
        if (const std::string diverged = a.divergedSeedsText(r.experiment.seeds.size()); !diverged.empty())
          drawWarning("%s%s: %s diverged", a.name.c_str(),
                      a.name == r.experiment.reference ? " (the reference)" : "", diverged.c_str());
        continue;
      }
      ImGui::Text("%s vs %s: %+.4f +- %.4f nats (%s)%s%s", a.name.c_str(), r.experiment.reference.c_str(),
                  a.difference.mean, a.difference.halfWidth, std::string(verdictName(a.verdict)).c_str(),
                  a.expect.empty() ? "" : "; the paper's claim: ",
                  a.expect.empty() ? "" : std::string(claimOutcomeName(a.claim)).c_str());
      if (const std::string placement = a.paperEffectPlacement(); !placement.empty()) {
        ImGui::SameLine();
        ImGui::TextDisabled("(paper %+.3f: %s)", *a.paperEffect, placement.c_str());
        if (ImGui::IsItemHovered())
          ImGui::SetTooltip("the paper's own difference (%s) falls %s this 95%% interval%s",
                            a.paperSource.empty() ? "its table" : a.paperSource.c_str(), placement.c_str(),
                            placement == "below"   ? ": against the reference, this arm does worse here"
                            : placement == "above" ? ": against the reference, this arm does better here"
                                                   : "");
      }
      if (const std::string diverged = a.divergedSeedsText(r.experiment.seeds.size()); !diverged.empty()) {
        ImGui::SameLine();
        drawWarning("(%s diverged)", diverged.c_str());
        if (ImGui::IsItemHovered())
          ImGui::SetTooltip(
              "those runs' losses are not finite: they pair with nothing, and the interval is over "
              "the seeds that finished");
      }
      if (a.asksForSeeds() &&
          a.difference.halfWidth > target) {  // wider than planned: seeds its spread needs
        const int seeds = a.seedsForTarget;
        ImGui::SameLine();
        if (seeds > 0)
          ImGui::TextDisabled("(+-%g needs %d seeds)", target, seeds);
        else
          ImGui::TextDisabled("(+-%g needs more than 1000 seeds)", target);
        if (ImGui::IsItemHovered()) {
          const std::string bound = a.sizingBoundText(r.experiment.plan);
          const std::string needs = seeds > 0 ? std::to_string(seeds) : "more than 1000";
          ImGui::SetTooltip(
              "wider than the plan's target: at this arm's seed spread (sd %.4f%s),\n+-%g needs %s seeds at "
              "this budget; `sharelens experiment run FILE --out DIR --seeds K` adds seeds to the finished "
              "ones",
              a.difference.sd, bound.c_str(), target, needs.c_str());
        }
      }
    }
    const plot::Figure forest = plot::experimentForestFigure(r);
    const plot::Figure curves = plot::experimentCurvesFigure(r, m_flops);
    ImGui::TextDisabled("paired differences:");
    drawExportButtons(ctx, forest, r.experiment.name + "-forest", &m_barsState);
    ImGui::Checkbox("curves against FLOPs", &m_flops);
    drawExportButtons(ctx, curves, r.experiment.name + (m_flops ? "-curves-flops" : "-curves-tokens"),
                      &m_curvesState);
    const float h = (ImGui::GetContentRegionAvail().y - 10) / 2;
    plot::plotWidget("##forest", forest, m_barsState, ImVec2(-1, h), ctx.textures, ctx.style);
    plot::plotWidget("##curves", curves, m_curvesState, ImVec2(-1, h), ctx.textures, ctx.style);
  }

  std::vector<fs::path> m_shipped;
  std::optional<Experiment> m_experiment;
  std::string m_problem;
  std::string m_planNote;  // planNoteFor the file shown: what it was planned to, empty when not planned
  uint64_t m_shownGeneration = 0;  // counts the experiments and outputs chosen (outputChanged)
  char m_out[512] = "";
  int m_parallel = 0;
  bool m_hasRuns = false;  // the output directory holds runs (refreshed with the report)
  int m_seeds = 0;         // the first K of the file's seeds (`experiment run --seeds K`)
  int m_steps = 0;         // steps per run instead of the file's token budget (`--steps N`); 0: the budget
  uint64_t m_job = 0;
  std::shared_ptr<RunLog> m_log;
  std::shared_ptr<const ExperimentReport> m_report;
  uint64_t m_reportJob = 0;  // the report being read (refreshReport), 0 when none
  PollThrottle m_reportThrottle{std::chrono::milliseconds(1000)};
  bool m_flops = false;
  plot::PlotState m_barsState, m_curvesState;
};

}  // namespace

std::unique_ptr<View> makeExperimentsView() {
  return std::make_unique<ExperimentsPanel>();
}

}  // namespace sharelens::gui
