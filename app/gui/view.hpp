// A view is one tab of the main window (ImHex's View is the model): it draws its content from the workspace
// and hands the figures it shows to File > Export and `sharelens export`.
#pragma once

#include <span>

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "app/export/figure_export.hpp"
#include "app/gui/jobs.hpp"
#include "app/gui/run_book.hpp"
#include "app/gui/settings.hpp"
#include "app/gui/view_id.hpp"
#include "app/gui/workspace.hpp"
#include "app/plot/figure.hpp"
#include "app/plot/figure_cache.hpp"
#include "app/plot/figure_registry.hpp"
#include "app/plot/imgui_canvas.hpp"
#include "app/plot/plot_widget.hpp"

namespace sharelens::gui {

struct AppContext {
  Workspace& workspace;
  RunBook& runs;
  JobSystem& jobs;
  Settings& settings;
  plot::TextureCache& textures;
  plot::FigureCache& figures;  // figures of results, built once while shown (the app ends its frame)
  plot::Style style;
  std::function<void(const std::string&)> reportError;     // shown in the error panel
  std::function<void(const std::string&)> notify;          // shown in the status line
  std::function<void(const std::filesystem::path&)> open;  // checkpoint, run directory or topology file
  std::function<void(const Topology&)> sendToDesigner;
  std::function<Topology()> designerTopology;  // what the Designer holds now
  std::function<void(ViewId)> showView;
  // Save As for a figure, or panels side by side on one page (file stem, extension, the zoom seen on
  // screen): the app asks for the path.
  std::function<void(std::vector<plot::Figure>, const std::string&, const std::string&, const ExportOptions&)>
      saveFigureAs;
  // Save As for a table: offered as <model>-<step>-<view>.<ext> in the exports folder; `write` writes the
  // chosen path on a worker thread (JobSystem's Files lane), so it must own copies of what it writes.
  std::function<void(const std::string& model, int64_t step, const std::string& view, const std::string& ext,
                     std::function<void(const std::filesystem::path&)> write)>
      saveTableAs;
};

class View {
 public:
  virtual ~View() = default;
  virtual ViewId id() const = 0;
  const char* name() const { return viewLabel(id()); }
  virtual void draw(AppContext& ctx) = 0;
  // What the view shows now, as (file stem, figure), for export.
  virtual std::vector<std::pair<std::string, plot::Figure>> figures(AppContext& ctx) { return {}; }
  // What its figures' files are named after: empty for the model the analysis views hold; the Training
  // view names its runs.
  virtual std::string figureSubject(AppContext& ctx) { return {}; }
  // A path this view opens itself (an experiment directory, ...): true when it took it.
  virtual bool openPath(AppContext& ctx, const std::filesystem::path& path) { return false; }
};

// Every public view's factory (app/gui/view_list.def).
#define SHARELENS_VIEW(id, label, factory) std::unique_ptr<View> factory();
#include "app/gui/view_list.def"
#undef SHARELENS_VIEW
std::unique_ptr<View> makeUiBenchView(bool live);  // --bench-ui only; live: one run gains a step every 250 ms
// The Designer as the app and the other views reach it (makeDesignerView's view is one).
class DesignerApi : public View {
 public:
  virtual void receive(const Topology& topology) = 0;  // a topology to edit (merge or replace is asked)
  virtual Topology topology() const = 0;               // what it holds now
};

// Shared widgets.
void drawStepSlider(AppContext& ctx);   // scrub a followed run's checkpoints
bool drawNoModelHint(AppContext& ctx);  // true when there is no model (and a hint was drawn)
void drawPending(const char* what);
// How the model's analysis `id` stands: true when its result is there; otherwise draws "computing ...", why
// it cannot run, that it was cancelled, or its error -- with a button to compute it (again) -- and returns
// false.
bool drawAnalysisState(AppContext& ctx, const LoadedModel& model, std::string_view id);
// The figure `id` of the figure registry (app/plot/figure_registry.hpp), drawn from the model's result of the
// analysis it names with the view's choices, and cached with that result under `id` and `key` (the choices
// that make it): what a view shows and exports is what `sharelens export --view id` renders. nullptr while
// the analysis has no result. Choices the result cannot give draw an empty figure that says why (the
// registry's named Error), never an exception out of a draw().
const plot::Figure* registryFigure(AppContext& ctx, const LoadedModel& model, plot::FigureId id,
                                   const plot::FigureParams& params, const std::string& key = "");

void drawSectionHeader(const char* label);  // a labelled separator between groups of controls
void drawNote(const std::string& text);     // secondary text, dimmed, wrapped at the column's edge
// Text in the views' one warning colour (amber): a caveat beside a result (a diverged seed, non-finite
// values left out, a baseline that cannot be built), not an error.
void drawWarning(const char* format, ...) IM_FMTARGS(1);
// Flow layout for a row of controls: the next item goes on the same line when `width` pixels of it fit
// before the window's right edge, else it starts the next line -- a narrow window wraps a toolbar instead of
// pushing its last controls out of sight (1024 x 700 and up, issue 41).
void sameLineIfFits(float width, float spacing = -1.0f);
// Escape pressed this frame while no text box holds the keyboard: what closes a dialog (or the error panel)
// as its Cancel would.
bool escapePressed();
float buttonWidth(const char* label);                     // a button's width with its label (to "##")
float labelledWidth(float itemWidth, const char* label);  // a widget of `itemWidth` and its label
// A combo of the named corpora (core/corpus.hpp namedCorpora(), each with its description as a tooltip);
// `index` is the chosen one's position. Returns the chosen corpus's name.
std::string drawCorpusCombo(const char* label, int& index);
void drawExportButtons(AppContext& ctx, const plot::Figure& figure, const std::string& stem,
                       const plot::PlotState* state);
// The same for panels side by side (the training view's two plots), the first panel's zoom kept. The buttons
// join the line before where they fit, unless `ownLine`.
void drawExportButtons(AppContext& ctx, std::span<const plot::Figure> panels, const std::string& stem,
                       const plot::PlotState* state, const std::string& subject = "", bool ownLine = false);
// A figure with its Export png / svg / pdf buttons on a line above it, the two `width` x `height` together:
// for views that show several figures at once, each exportable on its own.
void plotWithExports(AppContext& ctx, const char* id, const plot::Figure& figure, plot::PlotState& state,
                     float width, float height, const std::string& stem);

}  // namespace sharelens::gui
