#include "app/gui/app.hpp"

#include <GLFW/glfw3.h>

#include <imgui.h>

#include <malloc.h>
#include <signal.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <ctime>
#include <deque>
#include <iostream>
#include <random>
#include <utility>

#include "app/export/figure_export.hpp"
#include "app/export/png.hpp"
#include "app/gui/figure_size_picker.hpp"
#include "app/gui/file_browser.hpp"
#include "app/gui/frame_times.hpp"
#include "app/gui/platform.hpp"
#include "app/gui/ui_probe.hpp"
#include "app/gui/view.hpp"
#include "app/plot/figures.hpp"
#include "app/plot/plot_widget.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/topology_presets.hpp"

namespace fs = std::filesystem;

namespace sharelens::gui {
namespace {

using Clock = std::chrono::steady_clock;

std::atomic<int> g_screenshotRequested{0};  // set by SIGUSR1 (--screenshot-on-signal); lock-free
static_assert(std::atomic<int>::is_always_lock_free, "set from a signal handler");

struct Message {
  std::string text;
  std::string time;
};

std::string clockTime() {
  const std::time_t now = std::time(nullptr);
  char buf[16];
  std::strftime(buf, sizeof buf, "%H:%M:%S", std::localtime(&now));
  return buf;
}

class App {
 public:
  explicit App(const GuiOptions& options)
      : m_options(options),
        m_settings(Settings::load(&m_settingsProblem)),
        m_platform({.title = "ShareLens",
                    .width = options.width,
                    .height = options.height,
                    .visible = (!options.screenshot || options.screenshotOnSignal) && !options.benchUi,
                    .iniPath = (Settings::file().parent_path() / "imgui.ini").string()}),
        m_jobs(
            2, [] { Platform::wake(); },
            [this](const std::string& job, const std::string& message) { error(job + ": " + message); }),
        m_workspace(
            m_jobs, [this](const std::string& message) { error(message); },
            [this](const fs::path& opened) {  // read: only now is it the workspace, and a recent file
              m_settings.addRecent(fs::absolute(opened).string());
              // a checkpoint shows in the Model view; a run stays in the Training view that open() chose
              if (!m_options.view && !m_workspace.followed()) m_requestedView = ViewId::Model;
            }),
        m_context{m_workspace,
                  m_runs,
                  m_jobs,
                  m_settings,
                  m_textures,
                  m_figures,
                  plot::Style::dark(),
                  [this](const std::string& m) { error(m); },
                  [this](const std::string& m) { notify(m); },
                  [this](const fs::path& p) { open(p); },
                  [this](const Topology& t) { toDesigner(t); },
                  [this] { return m_designer->topology(); },
                  [this](ViewId v) { m_requestedView = v; },
                  [this](std::vector<plot::Figure> panels, const std::string& stem, const std::string& ext,
                         const ExportOptions& o) { askExportPath(std::move(panels), stem, ext, o); },
                  [this](const std::string& model, int64_t step, const std::string& view,
                         const std::string& ext, std::function<void(const fs::path&)> write) {
                    askTablePath(model, step, view, ext, std::move(write));
                  }} {
    if (!m_settingsProblem.empty()) error(m_settingsProblem);
    std::error_code ec;
    fs::create_directories(Settings::file().parent_path(), ec);
    applyTheme();
#define SHARELENS_VIEW(id, label, factory) m_views.push_back(factory());
#include "app/gui/view_list.def"
#undef SHARELENS_VIEW
    for (const auto& v : m_views)
      if (v->id() == ViewId::Designer) m_designer = &dynamic_cast<DesignerApi&>(*v);
    if (options.benchUi) m_views.push_back(makeUiBenchView(options.benchLive));
    m_platform.onDrop([this](std::vector<std::string> files) {
      for (const std::string& f : files) open(f);
    });
    m_requestedView =
        options.view ? *options.view : viewFromLabel(m_settings.lastView).value_or(ViewId::Model);
  }

  ~App() {
    m_jobs.cancelAll();
    try {
      m_settings.save();
    } catch (const Error&) {
    }
  }

  int run() {
    if (m_options.uiState) {
      probe::enable(*m_options.uiState);
      // Without a window manager (Xvfb) nothing gives the window focus, and ImGui's GLFW backend reads the
      // pointer only in a focused window: a scripted click would go unseen.
      glfwFocusWindow(m_platform.window());
    }
    if (m_options.figureCache)
      if (std::optional<plot::SharedGlContext> context = m_platform.pictureContext())
        m_textures.rasters().startWorker(std::move(*context));
    if (m_options.demo) startDemo();
    if (m_options.benchUi) startBenchUi();
    if (m_options.path) open(*m_options.path);
    const auto started = Clock::now();
    auto lastEvent = started;  // the window's first frames settle too
    for (int frame = 0;; ++frame) {
      if (m_platform.shouldClose() && !m_quitConfirmed) {
        // Closing the window stops embedded runs (each saves a checkpoint first): asked, not done silently.
        if (!m_runs.anyHoldingItsDirectory() || m_options.screenshot || m_options.benchUi) break;
        m_platform.cancelClose();
        m_quitDialog = true;
      }
      // Confirmed: the runs were asked to stop; frames go on (the status line says so) until each has
      // saved its checkpoint and let its directory go.
      if (m_quitConfirmed && !m_runs.anyHoldingItsDirectory()) break;
      const bool animating = !m_jobs.idle() || m_runs.anyTraining() || m_workspace.busy();
      // For a moment after an event the frames come quickly: ImGui draws what a click or a key did (a popup
      // opened, a row selected) a frame later, and no further event may come to draw it. Idle, two a second.
      const bool settling = Clock::now() - lastEvent < kSettleAfterEvent;
      if ((m_options.screenshot && !m_options.screenshotOnSignal) || m_options.benchUi)
        m_platform.pollEvents();
      else if (m_platform.waitEvents(animating || settling ? 0.05 : 0.5))
        lastEvent = Clock::now();
      const auto frameStart = Clock::now();
      m_jobs.drainCompletions();
      m_workspace.poll(m_settings.threshold);
      m_runs
          .poll();  // here, not in a view's draw: runs advance whichever tab is showing (rate-limited inside)
      m_platform.beginFrame();
      // Figures use the UI font's size; it is known only inside a frame (the atlas builds on the first).
      m_context.style.fontSize = ImGui::GetFontSize();
      m_context.style.titleSize = ImGui::GetFontSize() * 1.1f;
      drawMainWindow();
      if (const LoadedModel* m = m_workspace.current())
        probe::state("workspace/model", [&] { return m->path.string(); });
      else if (probe::enabled())
        probe::clearState("workspace/model");
      if (const auto& run = m_workspace.followed())
        probe::state("workspace/following", [&] { return run->string(); });
      probe::state("errors/count", [&] { return m_errors.size(); });
      probe::state("recent", [&] { return m_settings.recent; });
      const auto built = Clock::now();
      const bool capture = m_options.screenshot && readyForScreenshot(frame, started);
      if (capture && m_options.screenshotOnSignal) g_screenshotRequested = 0, m_screenshotAsked.reset();
      if (capture) m_platform.captureNextFrame();
      m_platform.render();
      const auto submitted = Clock::now();
      m_platform.present();
      const auto presented = Clock::now();
      m_textures.rasters().renderPictures();  // after the swap: see figure_raster.hpp and frame_times.hpp
      m_frameTimes.add({frameStart, built, submitted, presented, Clock::now()});
      m_textures.endFrame();
      m_figures.endFrame();
      if (capture) {
        const RgbaImage& image = m_platform.lastCapture();
        if (!m_options.screenshotOnSignal) {
          writePngRgba(*m_options.screenshot, image.width, image.height, image.pixels);
          break;
        }
        const fs::path shot(*m_options.screenshot);  // whole or not at all: a script waits for the count
        try {
          writePngRgba(fs::path(shot).concat(".part"), image.width, image.height, image.pixels);
          fs::rename(fs::path(shot).concat(".part"), shot);
          ++m_screenshots;
        } catch (const std::exception& e) {
          error("screenshot: " + std::string(e.what()));
        }
      }
      if (m_options.screenshotOnSignal) probe::state("screenshots", [&] { return m_screenshots; });
      probe::endFrame(m_platform.window(), frame, m_current ? m_current->name() : "");
      if (m_options.benchUi && frame + 1 >= m_options.frames) break;
      if (m_options.exitAfterSeconds &&
          Clock::now() - started > std::chrono::seconds(*m_options.exitAfterSeconds))
        break;
    }
    if (m_options.frameStats) writeFrameStats(*m_options.frameStats);
    return 0;
  }

 private:
  bool readyForScreenshot(int frame, Clock::time_point started) {
    if (m_options.screenshotOnSignal) {  // when asked, and not while a figure shows its previous picture
      if (g_screenshotRequested == 0) return false;
      if (!m_screenshotAsked) m_screenshotAsked = Clock::now();
      // A figure redrawn every frame (a live run's curves) may always be between pictures: not for ever.
      const bool waited = Clock::now() - *m_screenshotAsked > std::chrono::seconds(m_options.maxWaitSeconds);
      return waited || !m_textures.rasters().showingPrevious();
    }
    if (frame + 1 < m_options.frames) return false;
    const bool waitedLongEnough = Clock::now() - started > std::chrono::seconds(m_options.maxWaitSeconds);
    // Not while a figure shows its previous picture, its new one on its way (a few frames).
    if (m_textures.rasters().showingPrevious() && !waitedLongEnough) return false;
    // The demo's picture shows its two runs' curves, not runs still preparing (frames alone pass in seconds
    // now that unchanged figures are shown from a picture).
    constexpr int64_t kDemoStepsShown = 10;
    if (m_options.demo) return m_runs.everyRunHasLogged(kDemoStepsShown) || waitedLongEnough;
    return (m_jobs.idle() && !m_workspace.busy()) || waitedLongEnough;
  }

  void error(const std::string& message) {
    m_errors.push_back({message, clockTime()});
    if (m_errors.size() > 200) m_errors.pop_front();
    m_errorNoticeUntil = Clock::now() + kErrorNoticeSeconds;
  }
  void notify(const std::string& message) {
    m_status = {message, clockTime()};
  }

  void applyTheme() {
    if (m_settings.darkTheme)
      ImGui::StyleColorsDark();
    else
      ImGui::StyleColorsLight();
    ImGui::GetStyle().ScaleAllSizes(m_platform.contentScale());
    // Dialogs and menus opaque: the views' text must not show through them (ImGui's themes leave popups at
    // 94% opacity), and the dimmed background behind a modal dialog darker.
    ImGuiStyle& style = ImGui::GetStyle();
    style.Colors[ImGuiCol_PopupBg].w = 1.0f;
    style.Colors[ImGuiCol_WindowBg].w = 1.0f;
    style.Colors[ImGuiCol_ModalWindowDimBg].w = 0.55f;
    m_context.style = m_settings.darkTheme ? plot::Style::dark() : plot::Style::light();
  }

  void open(const fs::path& path) {
    try {
      if (!fs::exists(path))
        throw Error({.what = "no such file or directory", .where = path.string(), .hint = "check the path"});
      for (auto& v : m_views)  // a view that opens this kind of path itself (an experiment directory)
        if (v->openPath(m_context, path)) {
          if (!m_options.view) m_requestedView = v->id();
          m_settings.addRecent(fs::absolute(path).string());
          return;
        }
      if (path.extension() == ".json" && !fs::is_directory(path) &&
          path.filename() != "model.safetensors.index.json" && path.filename() != "config.json") {
        toDesigner(readTopologyFile(path));
        m_settings.addRecent(fs::absolute(path).string());
      } else if (isRunDirectory(path)) {
        // its curves show at once; the workspace and Recent take it once its latest checkpoint is read
        m_runs.attach(path);
        m_workspace.follow(path, m_settings.threshold, path);
        if (!m_options.view) m_requestedView = ViewId::Training;
      } else if (const auto runs = runDirectoriesBelow(path, 2); !runs.empty()) {
        // train --compare's pair, or a folder of runs (an experiment's ARM/seed-K)
        m_runs.attach(path);
        const auto model =
            std::find_if(runs.begin(), runs.end(), [](const fs::path& r) { return r.filename() == "model"; });
        m_workspace.follow(model != runs.end() ? *model : runs.front(), m_settings.threshold, path);
        if (!m_options.view) m_requestedView = ViewId::Training;
      } else {
        m_workspace.open(path, m_settings.threshold);  // Recent and the Model view once it has been read
      }
    } catch (const Error& e) {
      error(e.what());
    }
  }

  void toDesigner(const Topology& t) {
    m_designer->receive(t);
    m_requestedView = ViewId::Designer;
  }

  // The demo: the default shared topology and its parameter-matched baseline training on Brown, followed by
  // the analysis views. Resumes the previous demo when there is one.
  void startDemo() {
    const fs::path dir = Settings::dataDirectory() / "demo";
    try {
      if (isRunDirectory(dir / "model")) {
        for (const char* role : {"model", "baseline"})
          if (isRunDirectory(dir / role)) {
            const Json record = readJsonFile(dir / role / "run.json");
            const auto last = latestCheckpoint(dir / role);
            if (last && last->step >= record["config"].value("steps", int64_t{0}))
              m_runs.attach(dir / role);
            else
              m_runs.resumeEmbedded(dir / role, 1);
          }
      } else {
        TrainConfig c;
        c.steps = 600;
        c.batchSize = 16;
        c.checkpointEvery = 25;
        c.evalEvery = 25;
        c.keepCheckpoints = CheckpointRetention::all();
        m_runs.launch(demoTopology(), c, dir, /*withBaseline=*/true);
      }
      m_workspace.follow(dir / "model", m_settings.threshold);
      notify("demo: training " + demoTopology().name +
             " and its parameter-matched baseline on the Brown corpus");
    } catch (const Error& e) {
      error(e.what());
    }
    if (!m_options.view) m_requestedView = ViewId::Training;
  }

  void startBenchUi() {
    m_platform.setVsync(false);
    TrainConfig c;
    c.steps = 100000;
    c.checkpointEvery = 100000;
    c.threads = 1;
    const fs::path dir = fs::temp_directory_path() / ("sharelens-bench-ui-" + std::to_string(::getpid()));
    m_runs.launch(debugTopology(), c, dir, false);
    m_requestedView = ViewId::UiBench;
  }

  void writeFrameStats(const std::string& path) {
    Json j = m_frameTimes.summary(/*warmUp=*/10);
    j["training"] = m_runs.anyTraining();
    const plot::FigureRasters::Counts figures = m_textures.rasters().counts();
    j["figures"] = {{"cache", m_textures.rasters().enabled()},
                    {"in_place", figures.inPlace},
                    {"pictured", figures.pictured},
                    {"background_cleared", figures.cleared},
                    {"reused", figures.reused},
                    {"previous_picture", figures.previous}};
    writeFileAtomically(path, j.dump(2) + "\n");
    std::cout << "UI-thread frame time: p50 " << j["p50_ms"] << " ms, p99 " << j["p99_ms"] << " ms, max "
              << j["max_ms"] << " ms over " << j["frames"] << " frames (building p99 " << j["build"]["p99_ms"]
              << " ms, GL submission p99 " << j["submit"]["p99_ms"]
              << " ms, handing pictures to the worker p99 " << j["pictures"]["p99_ms"]
              << " ms); presenting (not counted): p50 " << j["present"]["p50_ms"] << " ms, p99 "
              << j["present"]["p99_ms"] << " ms; figures shown from "
              << "their picture " << figures.reused << " times, from their previous picture while a new one "
              << "was made " << figures.previous << " times, in place " << figures.inPlace << " times ("
              << figures.pictured << " pictures made, " << figures.cleared
              << " renders with their background cleared in)\n";
  }

  void drawMainWindow() {
    const ImGuiViewport* vp = ImGui::GetMainViewport();
    ImGui::SetNextWindowPos(vp->WorkPos);
    ImGui::SetNextWindowSize(vp->WorkSize);
    ImGui::Begin("##main", nullptr,
                 ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_MenuBar |
                     ImGuiWindowFlags_NoBringToFrontOnFocus | ImGuiWindowFlags_NoSavedSettings);
    drawMenu();
    const auto jobs = m_jobs.jobs();
    const float footer =
        ImGui::GetFrameHeightWithSpacing() * (1.0f + static_cast<float>(std::min<size_t>(jobs.size(), 4)));
    ImGui::BeginChild("##content", ImVec2(0, -footer));
    if (ImGui::BeginTabBar("##views")) {
      // Taken before the views draw: a view that asks for another tab while drawing (Training's "analyse",
      // Experiments' "Runs in Training") gets it on the next frame, whichever side of it that tab is.
      const std::optional<ViewId> requested = std::exchange(m_requestedView, std::nullopt);
      for (auto& view : m_views) {
        ImGuiTabItemFlags flags = 0;
        if (requested == view->id()) flags |= ImGuiTabItemFlags_SetSelected;
        const bool open = ImGui::BeginTabItem(view->name(), nullptr, flags);
        probe::item("tab/", view->name());
        if (open) {
          m_current = view.get();
          m_settings.lastView = view->name();
          ImGui::BeginChild("##view");
          view->draw(m_context);
          ImGui::EndChild();
          ImGui::EndTabItem();
        }
      }
      ImGui::EndTabBar();
    }
    ImGui::EndChild();
    drawJobBar(jobs);
    ImGui::End();
    drawErrors();
    drawOpenDialog();
    if (m_export) drawExportDialog();
    drawQuitDialog();
  }

  void drawMenu() {
    if (!ImGui::BeginMenuBar()) return;
    if (ImGui::BeginMenu("File")) {
      if (ImGui::MenuItem("Open...", "Ctrl+O")) m_openDialog = true;
      if (ImGui::BeginMenu("Recent", !m_settings.recent.empty())) {
        for (const std::string& r : std::vector<std::string>(m_settings.recent))
          if (ImGui::MenuItem(r.c_str())) open(r);
        ImGui::EndMenu();
      }
      if (ImGui::MenuItem("Save the view's figure as...", "Ctrl+S", false, m_current != nullptr))
        saveCurrentView();
      if (ImGui::BeginMenu("Export view", m_current != nullptr)) {
        for (auto& [stem, figure] : m_current->figures(m_context))
          for (const char* ext : {"png", "svg", "pdf"})
            if (ImGui::MenuItem((stem + "." + ext + "...").c_str())) {
              ExportOptions o;
              o.subject = m_current->figureSubject(m_context);
              askExportPath({figure}, stem, ext, o);
            }
        ImGui::EndMenu();
      }
      if (ImGui::MenuItem("Start the demo")) startDemo();
      ImGui::Separator();
      if (ImGui::MenuItem("Quit", "Ctrl+Q")) m_platform.requestClose();
      ImGui::EndMenu();
    }
    if (ImGui::BeginMenu("Analysis")) {
      float threshold = static_cast<float>(m_settings.threshold);
      if (ImGui::SliderFloat("energy threshold", &threshold, 0.5f, 0.999f, "%.3f"))
        m_settings.threshold = threshold;
      if (ImGui::MenuItem("Recompute for this threshold")) m_workspace.analyseAll(m_settings.threshold);
      ImGui::EndMenu();
    }
    if (ImGui::BeginMenu("View")) {
      for (auto& v : m_views)
        if (ImGui::MenuItem(v->name())) m_requestedView = v->id();
      ImGui::Separator();
      if (ImGui::MenuItem("Dark theme", nullptr, &m_settings.darkTheme)) applyTheme();
      if (ImGui::BeginMenu("Colormap")) {
        for (plot::Colormap c : plot::kAllColormaps)
          if (ImGui::MenuItem(std::string(plot::colormapName(c)).c_str(), nullptr, m_settings.colormap == c))
            m_settings.colormap = c;
        ImGui::EndMenu();
      }
      if (ImGui::MenuItem("Errors", nullptr, &m_showErrors)) {
      }
      ImGui::EndMenu();
    }
    // Shortcuts, not while a dialog is open (a Ctrl+S in the CSV dialog would replace what it saves).
    if (!ImGui::IsPopupOpen("", ImGuiPopupFlags_AnyPopupId)) {
      if (m_platform.keyPressed(GLFW_KEY_O, GLFW_MOD_CONTROL)) m_openDialog = true;
      if (m_platform.keyPressed(GLFW_KEY_Q, GLFW_MOD_CONTROL)) m_platform.requestClose();
      if (m_platform.keyPressed(GLFW_KEY_S, GLFW_MOD_CONTROL)) saveCurrentView();
    }
    if (const LoadedModel* m = m_workspace.current()) {
      ImGui::Separator();
      ImGui::TextDisabled("%s", m->label.c_str());
    }
    if (std::abs(m_settings.threshold - 0.95) >
        5e-4) {  // said wherever the results are read, not only in the menu
      ImGui::Separator();
      ImGui::TextColored(ImVec4(0.95f, 0.65f, 0.2f, 1), "energy threshold %s",
                         plot::percentText(m_settings.threshold).c_str());
    }
    ImGui::EndMenuBar();
  }

  // Save As: the path is offered as <model>-<step>-<view>.<ext> in the exports folder (never an existing
  // file), and the user may change it before saving.
  void askExportPath(std::vector<plot::Figure> panels, const std::string& stem, const std::string& ext,
                     const ExportOptions& options = {}) {
    const fs::path dir = Settings::exportsDirectory();
    const LoadedModel* model = m_workspace.current();
    const fs::path path =
        !options.subject.empty()
            ? defaultExportPath(dir, options.subject, -1, stem, ext)
            : defaultExportPath(dir, model ? model->label : "sharelens", model ? model->step : -1, stem, ext);
    m_export = PendingExport{std::move(panels), options, {}, {}};
    std::snprintf(m_export->path, sizeof m_export->path, "%s", path.c_str());
    m_exportDialog = true;  // opened from the window's level, where drawExportDialog looks for it
  }

  // Ctrl+S: Save As for the shown view's (first) figure, offered as PNG; the extension typed decides.
  void saveCurrentView() {
    if (!m_current) return;
    auto figures = m_current->figures(m_context);
    if (figures.empty()) {
      notify("this view has no figure to save yet");
      return;
    }
    ExportOptions o;
    o.subject = m_current->figureSubject(m_context);
    askExportPath({std::move(figures.front().second)}, figures.front().first, "png", o);
  }

  // The same dialog for a table (CSV): `write` writes the chosen path.
  void askTablePath(const std::string& model, int64_t step, const std::string& view, const std::string& ext,
                    std::function<void(const fs::path&)> write) {
    const fs::path path = defaultExportPath(Settings::exportsDirectory(), model, step, view, ext);
    m_export = PendingExport{{}, {}, std::move(write), {}};
    std::snprintf(m_export->path, sizeof m_export->path, "%s", path.c_str());
    m_exportDialog = true;
  }

  void drawExportDialog() {
    if (m_exportDialog) {
      ImGui::OpenPopup("Save figure as");
      m_exportDialog = false;
    }
    if (!ImGui::BeginPopupModal("Save figure as", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) return;
    probe::state("export/path", [&] { return std::string(m_export->path); });
    const bool table = static_cast<bool>(m_export->writeTable);
    if (table) {
      ImGui::TextUnformatted("A table, written as CSV:");
    } else {
      drawFigureSizePicker(m_exportSize);
      ImGui::TextUnformatted("PNG, SVG or PDF, from the extension:");
    }
    ImGui::SetNextItemWidth(640);
    const bool enter = ImGui::InputText("##exportpath", m_export->path, sizeof m_export->path,
                                        ImGuiInputTextFlags_EnterReturnsTrue);
    probe::item("export/path");
    probe::state("export/editing", [] { return ImGui::IsItemActive(); });  // the path box has the keyboard
    m_saveBrowser.draw(m_export->path, sizeof m_export->path, 200);
    const fs::path path = m_export->path;
    std::error_code ec;
    if (fs::exists(path, ec))
      ImGui::TextColored(ImVec4(0.95f, 0.65f, 0.2f, 1), "%s exists: Save replaces it",
                         path.filename().c_str());
    // A folder that is not there is said, and made only when asked: an edited path does not silently grow
    // a tree of folders.
    const bool missingFolder = path.has_parent_path() && !fs::is_directory(path.parent_path(), ec);
    if (missingFolder)
      ImGui::TextColored(ImVec4(0.95f, 0.65f, 0.2f, 1), "the folder %s does not exist",
                         path.parent_path().c_str());
    const bool save =
        ImGui::Button(missingFolder ? "Create the folder and save" : "Save") || (enter && !missingFolder);
    probe::item("export/save");
    probe::state("export/missing-folder", [&] { return missingFolder; });
    if (save) {
      saveInBackground(std::move(*m_export), path, missingFolder);
      m_export.reset();
      ImGui::CloseCurrentPopup();
    }
    ImGui::SameLine();
    if (ImGui::Button("Cancel") || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape), false)) {
      m_export.reset();
      ImGui::CloseCurrentPopup();
    }
    ImGui::EndPopup();
  }

  // Asked when the window is closed while runs train here: quitting stops them (each saves a checkpoint
  // first, and continues from it when relaunched or resumed).
  void drawQuitDialog() {
    if (m_quitDialog) {
      ImGui::OpenPopup("Quit while training?");
      m_quitDialog = false;
    }
    if (!ImGui::BeginPopupModal("Quit while training?", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) return;
    probe::state("quit/asking", [] { return true; });
    size_t training = 0;
    for (const auto& r : m_runs.runs())
      if (m_runs.isTraining(r->dir)) ++training;
    ImGui::Text("%zu run%s training in this window.", training, training == 1 ? " is" : "s are");
    ImGui::TextUnformatted(
        "Quitting stops them: each saves a checkpoint first, and continues from it when resumed\n"
        "(the Training view's resume, or `sharelens train --resume DIR`).");
    const bool stop = ImGui::Button("Stop the runs and quit");
    probe::item("quit/stop");
    ImGui::SameLine();
    const bool keep =
        ImGui::Button("Keep working") || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape), false);
    probe::item("quit/keep");
    if (stop) {
      m_quitConfirmed = true;
      m_runs.stopAll();
      notify("stopping the runs (each saves a checkpoint), then quitting");
    }
    if (stop || keep) ImGui::CloseCurrentPopup();
    ImGui::EndPopup();
  }

  void drawJobBar(const std::vector<JobSystem::Info>& jobs) {
    ImGui::Separator();
    for (size_t i = 0; i < jobs.size() && i < 4; ++i) {
      const auto& j = jobs[i];
      ImGui::PushID(static_cast<int>(j.id));
      ImGui::BeginDisabled(!j.cancellable);  // a save being written finishes
      if (ImGui::SmallButton("x")) m_jobs.cancel(j.id);
      ImGui::EndDisabled();
      ImGui::SameLine();
      ImGui::ProgressBar(static_cast<float>(j.fraction), ImVec2(180, 0), j.started ? nullptr : "queued");
      ImGui::SameLine();
      ImGui::Text("%s  %s", j.name.c_str(), j.stage.c_str());
      ImGui::PopID();
    }
    if (jobs.size() > 4) ImGui::TextDisabled("... and %zu more jobs", jobs.size() - 4);
    // The status line: the gestures where the pointer is on a plot, else the last message.
    const std::string status = plot::plotHoveredThisFrame() ? std::string(plot::kPlotGestures)
                               : m_status.text.empty()      ? std::string("ready")
                                                            : m_status.time + "  " + m_status.text;
    ImGui::TextDisabled("%s", status.c_str());
    probe::state("status/line", [&] { return Json(status); });
    if (!m_errors.empty()) {
      ImGui::SameLine(ImGui::GetWindowWidth() - 160);
      if (ImGui::SmallButton(("errors (" + std::to_string(m_errors.size()) + ")").c_str()))
        m_showErrors = !m_showErrors;
    }
  }

  // A new error shows as a notice of one message at the bottom right for a few seconds (kept while the
  // pointer is on it), then folds into the job bar's "errors (N)" button, which opens the whole list: an
  // error never covers the panes until closed by hand.
  void drawErrors() {
    if (m_errors.empty()) return;
    if (!m_showErrors) {
      if (Clock::now() < m_errorNoticeUntil) drawErrorNotice();
      return;
    }
    const ImGuiViewport* vp = ImGui::GetMainViewport();
    ImGui::SetNextWindowPos({vp->WorkPos.x + vp->WorkSize.x - 20, vp->WorkPos.y + vp->WorkSize.y - 60},
                            ImGuiCond_Always, {1, 1});
    ImGui::SetNextWindowSize({640, 0}, ImGuiCond_Always);
    ImGui::Begin("Errors", &m_showErrors,
                 ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_AlwaysAutoResize);
    for (const Message& e : m_errors) {
      ImGui::TextDisabled("%s", e.time.c_str());
      ImGui::SameLine();
      ImGui::PushTextWrapPos(620);
      ImGui::TextColored(ImVec4(1, 0.55f, 0.5f, 1), "%s", e.text.c_str());
      ImGui::PopTextWrapPos();
    }
    if (ImGui::Button("Clear")) m_errors.clear();
    // Escape closes the panel, as it closes the dialogs (when no text box has the keyboard).
    if (escapePressed() &&
        !ImGui::IsPopupOpen("", ImGuiPopupFlags_AnyPopupId))  // a dialog's Escape is its own
      m_showErrors = false;
    ImGui::End();
  }

  void drawErrorNotice() {
    const ImGuiViewport* vp = ImGui::GetMainViewport();
    const float width = std::min(520.0f, vp->WorkSize.x * 0.5f);
    ImGui::SetNextWindowPos({vp->WorkPos.x + vp->WorkSize.x - 20, vp->WorkPos.y + vp->WorkSize.y - 60},
                            ImGuiCond_Always, {1, 1});
    ImGui::SetNextWindowSize({width, 0}, ImGuiCond_Always);
    ImGui::SetNextWindowBgAlpha(0.95f);
    ImGui::Begin("##error-notice", nullptr,
                 ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoSavedSettings |
                     ImGuiWindowFlags_NoFocusOnAppearing | ImGuiWindowFlags_NoNav |
                     ImGuiWindowFlags_AlwaysAutoResize);
    const Message& last = m_errors.back();
    ImGui::PushTextWrapPos(width - 16);
    ImGui::TextColored(ImVec4(1, 0.55f, 0.5f, 1), "%s", last.text.c_str());
    ImGui::PopTextWrapPos();
    if (ImGui::SmallButton("details")) m_showErrors = true;
    ImGui::SameLine();
    if (ImGui::SmallButton("dismiss")) m_errorNoticeUntil = {};
    if (ImGui::IsWindowHovered(ImGuiHoveredFlags_ChildWindows))
      m_errorNoticeUntil = std::max(m_errorNoticeUntil, Clock::now() + std::chrono::seconds(2));
    probe::state("errors/notice", [&] { return last.text; });
    ImGui::End();
  }

  void drawOpenDialog() {
    if (m_openDialog) {
      ImGui::OpenPopup("Open");
      m_openDialog = false;
    }
    if (!ImGui::BeginPopupModal("Open", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) return;
    const ImVec2 at = ImGui::GetWindowPos(), size = ImGui::GetWindowSize();
    probe::area(at.x, at.y, at.x + size.x, at.y + size.y, "dialog/open");  // a test looks through it
    ImGui::TextUnformatted(
        "A checkpoint (.safetensors, PyTorch or llama2.c .bin), a model or run directory, or a topology "
        "(.json):");
    ImGui::SetNextItemWidth(560);
    if (ImGui::IsWindowAppearing()) ImGui::SetKeyboardFocusHere();  // type a path at once
    const bool enter =
        ImGui::InputText("##path", m_openPath, sizeof m_openPath, ImGuiInputTextFlags_EnterReturnsTrue);
    probe::item("open/path");
    probe::state("open/path", [&] { return std::string(m_openPath); });
    const bool chosen = m_openBrowser.draw(m_openPath, sizeof m_openPath, 280);
    if (ImGui::Button("Open") || enter || chosen) {
      open(m_openPath);
      ImGui::CloseCurrentPopup();
    }
    ImGui::SameLine();
    if (ImGui::Button("Cancel") || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape), false))
      ImGui::CloseCurrentPopup();
    if (!m_settings.recent.empty()) drawSectionHeader("recent");
    for (const std::string& r : m_settings.recent)
      if (ImGui::Selectable(r.c_str(), false, ImGuiSelectableFlags_DontClosePopups))  // fills the path only
        std::snprintf(m_openPath, sizeof m_openPath, "%s", r.c_str());
    ImGui::EndPopup();
  }

  GuiOptions m_options;
  std::string m_settingsProblem;
  Settings m_settings;
  Platform m_platform;
  JobSystem m_jobs;
  Workspace m_workspace;
  RunBook m_runs;
  plot::TextureCache m_textures;
  plot::FigureCache m_figures;
  AppContext m_context;
  std::vector<std::unique_ptr<View>> m_views;
  DesignerApi* m_designer = nullptr;  // one of m_views
  struct PendingExport {
    std::vector<plot::Figure> panels;  // one figure, or several side by side
    ExportOptions options;             // the on-screen zoom and hidden series of an export button's plot
    std::function<void(const fs::path&)> writeTable;  // a table instead of figures (CSV)
    char path[1024];
  };

  // Writes what the Save As dialog asked a path for, on the Files lane (Cairo renders a large PNG or PDF for
  // seconds; the UI thread never waits on it): the status line says when it is written, the errors panel why
  // not.
  void saveInBackground(PendingExport what, const fs::path& path, bool makeFolder) {
    ExportOptions options = what.options;
    options.size = m_exportSize.size;
    m_jobs.submit(
        "save " + path.filename().string(),
        [this, what = std::move(what), path, makeFolder,
         options](const TaskContext&) -> JobSystem::Completion {
          if (makeFolder) {
            std::error_code ec;
            fs::create_directories(path.parent_path(), ec);
            if (ec)
              throw Error({.what = "cannot create the folder",
                           .where = path.parent_path().string(),
                           .found = ec.message(),
                           .hint = "choose a folder you can write to"});
          }
          if (what.writeTable) {
            what.writeTable(path);
            return [this, path] { notify("wrote " + path.string()); };
          }
          const FigureSize written = exportPanels(what.panels, path, options);
          return [this, path, options, written] {
            notify("exported " + exportedFileDescription(path, options.size, written));
          };
        },
        {}, JobSystem::Lane::Files);
  }

  std::optional<PendingExport> m_export;  // the figure the Save As dialog is asking a path for
  FigureSizeChoice m_exportSize;          // the page the last export used
  bool m_exportDialog = false;
  View* m_current = nullptr;
  std::optional<ViewId> m_requestedView;  // the tab to select on the next frame
  std::deque<Message> m_errors;
  Message m_status;
  bool m_showErrors = false, m_openDialog = false;
  int m_screenshots = 0;                               // written on SIGUSR1 (--screenshot-on-signal)
  bool m_quitDialog = false, m_quitConfirmed = false;  // the window was closed while runs train
  std::optional<Clock::time_point> m_screenshotAsked;  // when the pending SIGUSR1 screenshot was asked for
  static constexpr std::chrono::seconds kErrorNoticeSeconds{8};
  static constexpr std::chrono::milliseconds kSettleAfterEvent{400};  // quick frames after input (run())
  Clock::time_point m_errorNoticeUntil{};  // the newest error shows as a notice until then
  char m_openPath[1024] = "";
  FileBrowser m_openBrowser{{".safetensors", ".json", ".bin", ".pt", ".pth", ".gguf"}, /*saving=*/false};
  FileBrowser m_saveBrowser{{".png", ".svg", ".pdf", ".csv"}, /*saving=*/true};
  FrameTimes m_frameTimes;
};

}  // namespace

int runGui(const GuiOptions& options) {
  // Every frame the GL driver frees megabytes at the top of the heap and asks for them again in the next
  // (llvmpipe's vertex buffers above all). glibc gave them back to the kernel each time, and the next frame
  // paid for faulting them in again: 17% of the UI thread's time, and p99 20 ms instead of 10.5 ms on
  // --bench-ui. Up to 256 MiB of freed heap is kept instead (DESIGN.md section 6).
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  if (options.screenshotOnSignal) {
    struct sigaction action {};
    action.sa_handler = [](int) { g_screenshotRequested = 1; };
    action.sa_flags = SA_RESTART;  // an interrupted read or wait goes on
    sigemptyset(&action.sa_mask);
    sigaction(SIGUSR1, &action, nullptr);
  }
  App app(options);
  return app.run();
}

}  // namespace sharelens::gui
