// Figures shown from their picture (app/plot/figure_raster.hpp) against the same figures drawn in place, in
// a real (hidden) GLFW window with Mesa's GL under Xvfb: ctest runs this binary through xvfb-run. Each
// check reads the window's pixels back after the frame was drawn from the picture, then after it was drawn
// with the cache off, and compares them; the cache's own counts say which way each frame went.
#define GL_GLEXT_PROTOTYPES
#include <GL/gl.h>
#include <GL/glext.h>
#include <gtest/gtest.h>
#include <imgui.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "app/gui/platform.hpp"
#include "app/plot/imgui_canvas.hpp"
#include "app/plot/plot_widget.hpp"
#include "tests/support/colour_distance.hpp"

namespace sharelens {
namespace {

// Issue 38: the worker's wait on the UI thread's fence is bounded. A fence that never signals (each
// glClientWaitSync slice times out) gives up after the limit, and at once when the wait stops mattering
// (the worker stopping, the job abandoned); a signalled or failed fence is answered as such.
TEST(FenceWait, AFenceThatNeverSignalsGivesUpAfterTheLimitOrWhenToldTo) {
  using namespace std::chrono;
  using plot::SyncAnswer;
  int asked = 0;
  const auto never = [&](nanoseconds slice) {
    ++asked;
    std::this_thread::sleep_for(slice);
    return SyncAnswer::TimedOut;
  };
  const auto start = steady_clock::now();
  EXPECT_EQ(plot::waitForFence(
                never, [] { return false; }, milliseconds(300), milliseconds(20)),
            SyncAnswer::TimedOut);
  const auto took = steady_clock::now() - start;
  EXPECT_GE(took, milliseconds(300));
  EXPECT_LT(took, seconds(3)) << "it kept waiting past its limit";
  EXPECT_GE(asked, 10);

  asked = 0;
  EXPECT_EQ(plot::waitForFence(
                never, [&] { return asked >= 3; }, hours(1), milliseconds(1)),
            SyncAnswer::TimedOut);
  EXPECT_EQ(asked, 3) << "stops asking once the wait no longer matters";

  asked = 0;
  const auto third = [&](nanoseconds) { return ++asked < 3 ? SyncAnswer::TimedOut : SyncAnswer::Signalled; };
  EXPECT_EQ(plot::waitForFence(
                third, [] { return false; }, hours(1)),
            SyncAnswer::Signalled);
  EXPECT_EQ(
      plot::waitForFence([](nanoseconds) { return SyncAnswer::Failed; }, [] { return false; }, hours(1)),
      SyncAnswer::Failed);
}

using gui::Platform;
using gui::RgbaImage;
using plot::Figure;
using plot::FigureRasters;

// Opens once: when asked, `delay` after openAfter() was asked (from a thread of its own, so that this one can
// go on to what must come first), or at the end of its scope (a failed assertion returns early: a worker
// still held at the end of a test would never be joined).
class Gate {
 public:
  Gate() : m_opened(m_promise.get_future().share()) {}
  ~Gate() { open(); }  // then the opener, if any, is joined
  void open() {
    std::call_once(m_once, [this] { m_promise.set_value(); });
  }
  void openAfter(std::chrono::milliseconds delay) {
    m_opener = std::jthread([this, delay] {
      std::this_thread::sleep_for(delay);
      open();
    });
  }
  std::shared_future<void> opened() const { return m_opened; }

 private:
  std::promise<void> m_promise;
  std::shared_future<void> m_opened;
  std::once_flag m_once;
  std::jthread m_opener;  // last: joined before the rest goes
};

class FigureRaster : public ::testing::Test {
 protected:
  // One window for the suite: GLFW is started and ended once.
  static void SetUpTestSuite() {
    if (std::getenv("DISPLAY"))
      s_platform = new Platform(gui::PlatformOptions{.width = 900, .height = 640, .visible = false});
  }
  static void TearDownTestSuite() {
    delete s_platform;
    s_platform = nullptr;
  }
  void SetUp() override {
    if (!s_platform) GTEST_SKIP() << "no X display (ctest runs this test under xvfb-run)";
    m_platform = s_platform;
    m_textures = std::make_unique<plot::TextureCache>();
    m_textures->rasters().startWorker(pictureContext());
  }
  void TearDown() override { m_textures.reset(); }  // its GL objects go while the context lives

  // The picture worker's context; a failure, and a context that is never made current (its jobs fail) when
  // GLFW cannot make one.
  static plot::SharedGlContext pictureContext() {
    std::optional<plot::SharedGlContext> context = s_platform->pictureContext();
    if (context) return std::move(*context);
    ADD_FAILURE() << "GLFW could not make the picture worker's context";
    return {.makeCurrent = [] {}, .release = [] {}};
  }
  // The picture worker's context, whose making current on the worker's thread waits for `gate`: the worker
  // begins no job before the gate opens.
  static plot::SharedGlContext heldContext(const Gate& gate) {
    plot::SharedGlContext context = pictureContext();
    context.makeCurrent = [held = gate.opened(), makeCurrent = context.makeCurrent] {
      held.wait();
      makeCurrent();
    };
    return context;
  }
  // A texture cache whose worker is held until `gate` opens.
  void startHeldWorker(const Gate& gate) {
    m_textures.reset();  // its worker lets go of the context
    m_textures = std::make_unique<plot::TextureCache>();
    m_textures->rasters().startWorker(heldContext(gate));
  }
  // Renderbuffers alive in the window's share group (names are handed out from 1 up, and never reused
  // while alive).
  static size_t liveRenderbuffers() {
    size_t live = 0;
    for (GLuint name = 1; name <= 4096; ++name) live += glIsRenderbuffer(name) == GL_TRUE;
    return live;
  }

  // One frame of a window filling the screen, with `content` drawn into it as the app draws a view, and the
  // pictures handed to the worker where the app hands them (after the swap); returns the pixels drawn
  // (before it). The frame then waits for the worker (m_waitForPictures): what the worker does between two
  // frames is then always all it was given, and the counts of each test come out the same every run.
  RgbaImage windowFrame(const std::function<void(const plot::Style&)>& content) {
    m_platform->beginFrame();
    plot::Style style;
    style.fontSize = ImGui::GetFontSize();
    style.titleSize = style.fontSize * 1.1f;
    ImGui::SetNextWindowPos({0, 0});
    ImGui::SetNextWindowSize(ImGui::GetIO().DisplaySize);
    ImGui::Begin("##test", nullptr, ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoSavedSettings);
    content(style);
    ImGui::End();
    m_platform->render();
    m_vertices = ImGui::GetDrawData()->TotalVtxCount;
    m_indices = ImGui::GetDrawData()->TotalIdxCount;
    RgbaImage image = m_platform->captureFramebuffer();
    m_platform->present();
    m_textures->rasters().renderPictures();
    if (m_waitForPictures) m_textures->rasters().waitForPictures();
    m_textures->endFrame();
    return image;
  }
  // One frame with `f` filling the window. The figure is drawn by plotWidget, which no pointer hovers here
  // (its changes come on their own), or, `userDriven`, into the same place by the calls plotWidget makes,
  // told that the person is working it.
  RgbaImage frame(const Figure& f, bool userDriven = false) {
    return windowFrame([&](const plot::Style& style) {
      // A figure at a fractional position unless a test says otherwise (ImGui's layout keeps items on whole
      // pixels, the cursor need not be): the picture's grid is rounded out to the screen's pixels.
      const ImVec2 at = ImGui::GetCursorScreenPos();
      ImGui::SetCursorScreenPos({at.x + m_offset.x, at.y + m_offset.y});
      if (!userDriven) {
        plot::plotWidget("##figure", f, m_state, m_size, *m_textures, style);
        return;
      }
      const ImVec2 min = ImGui::GetCursorScreenPos();
      const ImVec2 size =
          plot::wholePixelSize(min, ImGui::GetContentRegionAvail());  // as plotWidget lays it out
      const ImVec2 max{min.x + size.x, min.y + size.y};
      ImDrawList* own = m_textures->rasters().begin(ImGui::GetID("##figure"), min, max, /*userDriven=*/true);
      plot::ImGuiCanvas canvas(own, *m_textures);
      const plot::FigureLayout layout =
          plot::layoutFigure(f, canvas, style, {min.x, min.y}, {size.x, size.y});
      plot::drawFigure(canvas, f, layout, style);
      m_textures->rasters().finish(ImGui::GetWindowDrawList(), m_textures->generation());
    });
  }
  // Frames of `f` until its picture is made (copied into its texture, shown from the frame it is made):
  // returns how many frames that took (three when the worker is waited for: changed, the same twice and
  // handed to the worker, done and copied).
  int framesUntilPictured(const Figure& f, bool userDriven = false) {
    const uint64_t pictured = counts().pictured;
    for (int frames = 1; frames <= 100; ++frames) {
      frame(f, userDriven);
      if (counts().pictured > pictured) return frames;
    }
    ADD_FAILURE() << "no picture was made in 100 frames";
    return 0;
  }
  // The frame drawn in place, with the cache off.
  RgbaImage direct(const Figure& f) {
    m_textures->rasters().setEnabled(false);
    RgbaImage image = frame(f);
    m_textures->rasters().setEnabled(true);
    return image;
  }
  // The frame drawn from the picture, after the frames that make it: changed, the same twice (handed to the
  // worker), the same once the worker is done (pictured).
  RgbaImage fromPicture(const Figure& f) {
    framesUntilPictured(f);
    const uint64_t reused = counts().reused;
    RgbaImage image = frame(f);
    EXPECT_EQ(counts().reused, reused + 1) << "an unchanged figure comes from its picture once it is made";
    return image;
  }
  FigureRasters::Counts counts() const { return m_textures->rasters().counts(); }
  void expectPicturedAgainOnChange(const Figure& original, const Figure& changed, size_t ties);

  static Platform* s_platform;
  Platform* m_platform = nullptr;
  int m_vertices = 0, m_indices = 0;  // handed to GL by the last frame's window
  bool m_waitForPictures = true;      // each frame waits for the worker to render what it was given
  ImVec2 m_offset{0.5f, 7.5f};        // of the figure from the window's cursor
  ImVec2 m_size{-1, -1};              // of the figure plotWidget draws: the window's remaining space
  std::unique_ptr<plot::TextureCache> m_textures;
  plot::PlotState m_state, m_stateB;
};

Platform* FigureRaster::s_platform = nullptr;

struct Difference {
  size_t pixels = 0;          // differing in any colour channel
  size_t beyondRounding = 0;  // differing by more than one in some channel
  int largest = 0;            // over the colour channels
};
Difference compare(const RgbaImage& a, const RgbaImage& b) {
  Difference d;
  EXPECT_EQ(a.pixels.size(), b.pixels.size());
  for (size_t i = 0; i + 3 < std::min(a.pixels.size(), b.pixels.size()); i += 4) {
    int most = 0;
    for (size_t c = 0; c < 3; ++c)
      most = std::max(most, std::abs(int(a.pixels[i + c]) - int(b.pixels[i + c])));
    d.pixels += most > 0;
    d.beyondRounding += most > 1;
    d.largest = std::max(d.largest, most);
  }
  return d;
}

// A training-loss figure as the Training view draws it: a noisy curve dense enough to be drawn as a band, a
// smooth one, validation markers and a legend.
Figure lossFigure(int points) {
  Figure f;
  f.title = "loss";
  f.xLabel = "step";
  f.yLabel = "loss";
  f.yScale = plot::Scale::Log10;
  std::mt19937 rng(3);
  std::normal_distribution<double> noise(0, 0.05);
  plot::Series raw{.label = "raw"}, smooth{.label = "EMA", .color = {230, 159, 0}};
  plot::Series validation{.label = "validation", .color = {0, 158, 115}, .style = plot::SeriesStyle::Markers};
  for (int i = 1; i <= points; ++i) {
    const double trend = 3.0 * std::pow(i, -0.2);
    raw.x.push_back(i), raw.y.push_back(trend * std::exp(noise(rng)));
    smooth.x.push_back(i), smooth.y.push_back(trend);
    if (i % 500 == 0) validation.x.push_back(i), validation.y.push_back(trend * 1.02);
  }
  f.series = {raw, smooth, validation};
  return f;
}

// `runs` noisy losses of `points` steps each, one over another, as the Training view compares runs.
Figure runsFigure(int runs, int points) {
  Figure f = lossFigure(points);
  const plot::Series raw = f.series[0];
  for (int r = 1; r < runs; ++r) {
    plot::Series s = raw;
    s.label = "run " + std::to_string(r);
    s.color = {static_cast<uint8_t>(20 * r), 90, static_cast<uint8_t>(250 - 15 * r)};
    for (double& y : s.y) y *= 1.0 + 0.04 * r;
    f.series.push_back(s);
  }
  return f;
}

TEST_F(FigureRaster, AnUnchangedFigureIsShownFromItsPictureAsItIsDrawnInPlace) {
  const Figure f = runsFigure(14, 20000);
  const RgbaImage inPlace = direct(f);
  const int inPlaceVertices = m_vertices;
  ASSERT_GT(m_indices, 60000) << "a figure of many runs: tens of thousands of triangles for the worker";
  const int frames = framesUntilPictured(f);
  EXPECT_EQ(frames, 3) << "changed, the same twice (handed to the worker), the same again (pictured)";
  EXPECT_EQ(counts().inPlace, static_cast<uint64_t>(frames - 1))
      << "with no picture before it, drawn in place until its picture is made";
  EXPECT_EQ(counts().previous, 0u);
  const uint64_t reused = counts().reused;
  const RgbaImage cached = frame(f);
  EXPECT_EQ(counts().reused, reused + 1);
  EXPECT_EQ(counts().pictured, 1u);
  EXPECT_LT(m_vertices * 10, inPlaceVertices) << "the picture's frame hands GL a quad, not the curves";
  const Difference d = compare(cached, inPlace);
  // llvmpipe blends into the picture's RGBA8 renderbuffer and into the window's own format with different
  // rounding: a channel may differ by one. A picture a pixel off, or blended twice, differs by far more.
  EXPECT_LE(d.largest, 1) << d.pixels << " pixels differ";
  EXPECT_LT(d.pixels, cached.pixels.size() / 4 / 100) << "over 1% of the window differs";
}

// A figure on whole pixels fills its picture with its background, which is cleared into those pixels instead
// (list_renderer.hpp's openingFill); plotWidget lays a figure given a fractional size out on whole pixels.
// One starting on a fractional pixel leaves the picture's first column and row half outside its background
// and is rendered with the background drawn. Each looks as drawing in place does.
TEST_F(FigureRaster, ABackgroundFillingThePictureIsClearedIntoItWithTheSamePixels) {
  const Figure f = runsFigure(3, 5000);
  struct Case {
    ImVec2 offset, size;
    bool cleared;
  };
  for (const Case& c : {Case{{0.5f, 7.5f}, {-1, -1}, false}, Case{{3, 7}, {-1, -1}, true},
                        Case{{3, 7}, {600.5f, 400.5f}, true}}) {
    m_offset = c.offset, m_size = c.size;
    const std::string where = "at (" + std::to_string(c.offset.x) + ", " + std::to_string(c.offset.y) +
                              ") of size " + std::to_string(c.size.x) + " x " + std::to_string(c.size.y);
    const RgbaImage inPlace = direct(f);
    const uint64_t cleared = counts().cleared;
    const RgbaImage cached = fromPicture(f);
    EXPECT_EQ(counts().cleared, cleared + (c.cleared ? 1 : 0)) << where;
    const Difference d = compare(cached, inPlace);
    EXPECT_LE(d.largest, 1) << d.pixels << " pixels differ " << where;
    EXPECT_LT(d.pixels, cached.pixels.size() / 4 / 100) << "over 1% of the window differs " << where;
  }
}

// A checkerboard of `side` x `side` cells of 0 and 1 (Viridis over [0, 1]).
Figure checkerboard(int side) {
  plot::Heatmap h;
  h.rows = h.cols = side;
  for (int r = 0; r < side; ++r)
    for (int c = 0; c < side; ++c) h.values.push_back(static_cast<float>((r + c) % 2));
  Figure f;
  f.title = "checkerboard";
  f.heatmap = h;
  return f;
}

// Where a heatmap's cells outnumber the pixels, each pixel shows its cells' mean colour (the texture's mip
// levels), not whichever cell nearest sampling lands on: a checkerboard of 2,048 x 2,048 cells in about
// 500 x 500 pixels is the mean of its two colours everywhere, where nearest sampling shows one colour or the
// other (or a moire of both). Magnified, cells stay crisp: every pixel one of the two.
TEST_F(FigureRaster, AHeatmapWithMoreCellsThanPixelsShowsTheirMeanColour) {
  for (const int side : {2048, 8}) {
    const Figure f = checkerboard(side);
    plot::FigureLayout layout;
    const RgbaImage image = windowFrame([&](const plot::Style& style) {
      const ImVec2 min = ImGui::GetCursorScreenPos(), avail = ImGui::GetContentRegionAvail();
      plot::ImGuiCanvas canvas(ImGui::GetWindowDrawList(), *m_textures);
      layout = plot::layoutFigure(f, canvas, style, {min.x, min.y}, {avail.x, avail.y});
      plot::drawFigure(canvas, f, layout, style);
    });
    const plot::Rgb zero = plot::heatmapCellColor(*f.heatmap, 0), one = plot::heatmapCellColor(*f.heatmap, 1);
    const int cx = static_cast<int>((layout.plotMin.x + layout.plotMax.x) / 2);
    const int cy = static_cast<int>((layout.plotMin.y + layout.plotMax.y) / 2);
    ASSERT_LT(layout.plotMax.x - layout.plotMin.x, 1024) << "fewer pixels than cells: the case under test";
    // 2,048: the two colours' mean; 8: either colour (twice the channel distance, so a rounding is 2).
    const std::vector<testing::DoubledRgb> allowed =
        side == 2048
            ? std::vector{testing::meanOf(zero.r, zero.g, zero.b, one.r, one.g, one.b)}
            : std::vector{testing::doubled(zero.r, zero.g, zero.b), testing::doubled(one.r, one.g, one.b)};
    int worst = 0;
    for (int y = cy - 20; y < cy + 20; ++y)
      for (int x = cx - 20; x < cx + 20; ++x) {
        const uint8_t* px = &image.pixels[static_cast<size_t>(4 * (y * image.width + x))];
        worst = std::max(worst, testing::twiceDistanceToNearest({px[0], px[1], px[2]}, allowed));
      }
    if (side == 2048)
      EXPECT_LE(worst, 6)
          << "twice the largest channel distance from the two colours' mean, over 40 x 40 pixels";
    else
      EXPECT_LE(worst, 2) << "magnified cells are drawn nearest: each pixel a cell's own colour";
  }
}

TEST_F(FigureRaster, AFigureIsPicturedAnewOnceATextureIsMade) {
  // A texture made under a freed one's GL name could hold other content behind the same draw commands, so a
  // drawing is not taken for the one pictured across the making of any texture: the figure is pictured anew.
  const Figure f = lossFigure(1000);
  fromPicture(f);
  const FigureRasters::Counts shown = counts();
  const uint64_t generation = m_textures->generation();
  m_textures->colorbar(plot::Colormap::Magma);  // a texture the figure does not use
  ASSERT_EQ(m_textures->generation(), generation + 1);
  frame(f);
  EXPECT_EQ(counts().reused, shown.reused) << "not shown as the picture of what it draws now";
  EXPECT_EQ(counts().previous, shown.previous + 1) << "its previous picture, while the new one is made";
  framesUntilPictured(f);
  EXPECT_EQ(counts().pictured, shown.pictured + 1);
  EXPECT_EQ(counts().inPlace, shown.inPlace) << "never drawn in place: it had a picture of its size";
}

// From a figure shown from its picture, a change that comes on its own (`changed`: new data) is shown from
// the previous picture, never drawn in place, until its own picture is made, which looks as drawing it in
// place does: at most `ties` pixels differ by more than a rounding.
void FigureRaster::expectPicturedAgainOnChange(const Figure& original, const Figure& changed, size_t ties) {
  const RgbaImage inPlace = direct(changed);
  const RgbaImage before = fromPicture(original);
  const FigureRasters::Counts shown = counts();
  const RgbaImage first = frame(changed);
  EXPECT_EQ(counts().previous, shown.previous + 1) << "the changed figure is shown from its previous picture";
  EXPECT_EQ(counts().reused, shown.reused);
  EXPECT_EQ(compare(before, first).pixels, 0u) << "as it was, while the new picture is made";
  const int frames = framesUntilPictured(changed);
  const RgbaImage pictured = frame(changed);
  EXPECT_EQ(counts().pictured, shown.pictured + 1) << "the changed figure is pictured again";
  EXPECT_EQ(counts().inPlace, shown.inPlace) << "and never drawn in place meanwhile";
  EXPECT_EQ(counts().previous, shown.previous + static_cast<uint64_t>(frames))
      << "each frame before the new picture came from the previous one";
  EXPECT_LE(compare(pictured, inPlace).beyondRounding, ties)
      << "the new picture is what drawing in place gives";
  EXPECT_GT(compare(before, pictured).pixels, 100u) << "and shows the change";
  frame(changed);
  EXPECT_EQ(counts().reused, shown.reused + 2);
}

TEST_F(FigureRaster, AChangeThePersonMakesIsDrawnInPlaceAtOnce) {
  // Zooming, panning, box zooming: their input is on screen in the frame it comes, not a few frames later.
  const Figure f = lossFigure(5000);
  Figure zoomed = f;
  zoomed.xRange = plot::Range{1000, 2000};
  const RgbaImage inPlace = direct(zoomed);
  framesUntilPictured(f, /*userDriven=*/true);
  const FigureRasters::Counts shown = counts();
  const RgbaImage first = frame(zoomed, /*userDriven=*/true);
  EXPECT_EQ(counts().inPlace, shown.inPlace + 1) << "the changed figure is drawn in place at once";
  EXPECT_EQ(counts().previous, shown.previous);
  EXPECT_LE(compare(first, inPlace).largest, 1) << "what drawing it in place with the cache off gives";
  framesUntilPictured(zoomed, /*userDriven=*/true);
  EXPECT_EQ(counts().previous, shown.previous) << "never its previous picture";
}

TEST_F(FigureRaster, AnotherFigureInTheSamePlaceIsDrawnAtOnce) {
  // Another matrix, model or view in the same widget, no pointer on it: never shown over the last figure's
  // picture, which shows something else.
  const Figure f = lossFigure(5000);
  Figure other = lossFigure(3000);
  other.title = "another figure";
  const RgbaImage inPlace = direct(other);
  fromPicture(f);
  const FigureRasters::Counts shown = counts();
  const RgbaImage first = frame(other);
  EXPECT_EQ(counts().inPlace, shown.inPlace + 1) << "the other figure is drawn in place at once";
  EXPECT_EQ(counts().previous, shown.previous) << "not the last figure's picture";
  EXPECT_LE(compare(first, inPlace).largest, 1) << "what drawing it in place with the cache off gives";
}

TEST_F(FigureRaster, AFigureChangingEveryOtherFrameIsDrawnInPlaceOnceItsPictureFallsBehind) {
  // Each change is replaced before its picture is done: the previous picture would be shown for ever.
  Figure f = lossFigure(2000);
  fromPicture(f);
  const FigureRasters::Counts shown = counts();
  for (int i = 0; i < 40; ++i) {
    if (i % 2 == 0) f.series[0].x.push_back(2001 + i), f.series[0].y.push_back(3.0);
    frame(f);
  }
  EXPECT_LE(counts().previous - shown.previous, 16u) << "at most FigureRasters::kMostFramesBehind frames";
  EXPECT_GT(counts().inPlace, shown.inPlace) << "then drawn as it is";
}

TEST_F(FigureRaster, TwoFiguresHandedToTheWorkerInOneFrameEachGetTheirOwnPicture) {
  // Two large figures handed to the worker in the same frame, rendered one after the other through its one
  // ListRenderer: each picture is what drawing its own figure in place gives.
  const Figure a = runsFigure(14, 20000);
  Figure b = runsFigure(14, 20000);
  for (plot::Series& s : b.series)
    for (double& y : s.y) y *= 3;  // other pixels throughout
  auto twoFrame = [&](bool cache) {
    m_textures->rasters().setEnabled(cache);
    RgbaImage image = windowFrame([&](const plot::Style& style) {
      const float half = ImGui::GetContentRegionAvail().y / 2 - ImGui::GetStyle().ItemSpacing.y;
      plot::plotWidget("##a", a, m_state, ImVec2(-1, half), *m_textures, style);
      plot::plotWidget("##b", b, m_stateB, ImVec2(-1, half), *m_textures, style);
    });
    m_textures->rasters().setEnabled(true);
    return image;
  };
  const RgbaImage inPlace = twoFrame(false);
  for (int i = 0; i < 100 && counts().pictured < 2; ++i) twoFrame(true);
  ASSERT_EQ(counts().pictured, 2u);
  const uint64_t reused = counts().reused;
  const RgbaImage pictured = twoFrame(true);
  EXPECT_EQ(counts().reused, reused + 2) << "both from their pictures";
  const Difference d = compare(pictured, inPlace);
  EXPECT_LE(d.largest, 1) << d.pixels << " pixels differ";
}

TEST_F(FigureRaster, AfterADrawingInPlaceTheOlderPictureIsNotShownAgain) {
  // A zoom drawn in place at once, then the pointer leaves the figure: the screen already shows the zoom,
  // and showing the picture from before it while the zoom's own is made would take the figure back.
  const Figure f = lossFigure(5000);
  Figure zoomed = f;
  zoomed.xRange = plot::Range{1000, 2000};
  fromPicture(f);
  const FigureRasters::Counts shown = counts();
  frame(zoomed, /*userDriven=*/true);
  const int frames = framesUntilPictured(zoomed);
  EXPECT_EQ(counts().previous, shown.previous) << "the picture from before the zoom never came back";
  EXPECT_EQ(counts().inPlace, shown.inPlace + static_cast<uint64_t>(frames)) << "in place until pictured";
}

TEST_F(FigureRaster, AFigureChangingEveryFrameIsDrawnInPlaceAfterTwoChanges) {
  // A stale picture is shown for at most two changes in a row: a figure changing every frame (an animation)
  // is drawn as it is.
  Figure f = lossFigure(2000);
  fromPicture(f);
  const FigureRasters::Counts shown = counts();
  for (int i = 0; i < 5; ++i) {
    f.series[0].x.push_back(2001 + i), f.series[0].y.push_back(3.0);
    frame(f);
  }
  EXPECT_EQ(counts().previous, shown.previous + 2);
  EXPECT_EQ(counts().inPlace, shown.inPlace + 3);
}

TEST_F(FigureRaster, ANewPointIsShownFromThePreviousPictureUntilItsOwnIsMade) {
  const Figure f = lossFigure(5000);
  Figure more = f;
  more.series[0].x.push_back(5001), more.series[0].y.push_back(20.0);  // a spike the eye cannot miss
  expectPicturedAgainOnChange(f, more, 0);
}

TEST_F(FigureRaster, AHeatmapWithNewValuesInTheSameLayoutIsPicturedAgain) {
  // Its vertices stay the same (one quad over the same cells); the new texture, made while the old one
  // still exists, has another name, and that is the whole change.
  Figure f;
  f.title = "ranks";
  plot::Heatmap h;
  h.rows = h.cols = 24;
  for (int64_t i = 0; i < h.rows * h.cols; ++i) h.values.push_back(static_cast<float>(i % 7) / 7.0f);
  f.heatmap = h;
  Figure changed = f;
  changed.heatmap->cachedFingerprint = 0;
  std::fill(changed.heatmap->values.begin(), changed.heatmap->values.begin() + 24 * 12, 1.0f);  // top half
  // Where a cell's edge lies exactly on a row of pixel centres, the picture's projection and the window's
  // round that tie differently and the row takes the next cell's colour: one row of the map (about 500
  // pixels here), where a stale picture differs in over 200,000.
  expectPicturedAgainOnChange(f, changed, 900);
}

TEST_F(FigureRaster, FramesGoOnWhileThePictureIsBeingRendered) {
  // The UI thread never waits for a picture: with the worker held back before its first job, every frame is
  // drawn (the figure in place, as before it had any picture), and the picture comes once the worker runs.
  Gate gate;
  startHeldWorker(gate);
  const Figure f = lossFigure(5000);
  const RgbaImage inPlace = direct(f);
  m_waitForPictures = false;
  for (int i = 0; i < 10; ++i) frame(f);
  EXPECT_EQ(counts().pictured, 0u) << "the worker has not run";
  EXPECT_EQ(counts().inPlace, 10u) << "every frame was drawn, in place";
  gate.open();
  m_textures->rasters().waitForPictures();
  const RgbaImage pictured = frame(f);
  EXPECT_EQ(counts().pictured, 1u) << "pictured once the worker ran";
  EXPECT_EQ(counts().reused, 0u);
  EXPECT_LE(compare(pictured, inPlace).largest, 1) << "as drawing it in place gives";
}

TEST_F(FigureRaster, AFigureGoneWhileItsPictureIsOutLeavesItsRenderbufferToTheJob) {
  // A figure leaves the screen while the worker holds its job: the job is skipped, and its renderbuffer
  // lives until the worker is done with it (so that its name cannot go to another picture while the worker
  // may still draw into it). The figure that takes the place gets a renderbuffer and a picture of its own.
  Gate gate;
  startHeldWorker(gate);
  const Figure gone = lossFigure(3000), next = runsFigure(3, 3000);
  const RgbaImage nextInPlace = direct(next);
  m_waitForPictures = false;
  frame(gone);
  frame(gone);  // the same twice: handed to the worker
  const size_t withGone = liveRenderbuffers();
  windowFrame([](const plot::Style&) {});  // not on screen: its picture is freed at the end of the frame
  EXPECT_EQ(liveRenderbuffers(), withGone) << "the job holds the freed picture's renderbuffer";
  frame(next);
  frame(next);  // handed to the worker behind the first
  EXPECT_EQ(liveRenderbuffers(), withGone + 1) << "the new picture has a renderbuffer of its own";
  gate.open();
  m_textures->rasters().waitForPictures();
  const RgbaImage pictured =
      frame(next);  // copies the new picture, then collects the jobs the worker is done with
  EXPECT_EQ(liveRenderbuffers(), withGone)
      << "the skipped job's renderbuffer is deleted once the worker is done";
  EXPECT_EQ(counts().pictured, 1u) << "the figure on screen has its picture";
  EXPECT_LE(compare(pictured, nextInPlace).largest, 1) << "as drawing it in place gives";
}

// Two jobs drawing nothing into 8 x 8 renderbuffers, each handed over behind a fence of its own: the first's
// picture was freed while it was out (abandoned, its renderbuffer left to it), the second's picture still
// owns its renderbuffer.
struct TwoJobs {
  GLuint renderbuffers[2] = {0, 0};
  std::vector<GLsync> fences;
  std::vector<std::shared_ptr<plot::PictureJob>> jobs;
  TwoJobs() {
    glGenRenderbuffers(2, renderbuffers);
    for (GLuint renderbuffer : renderbuffers) {
      glBindRenderbuffer(GL_RENDERBUFFER, renderbuffer);
      glRenderbufferStorage(GL_RENDERBUFFER, GL_RGBA8, 8, 8);
      auto job = std::make_shared<plot::PictureJob>();
      job->renderbuffer = renderbuffer;
      job->width = job->height = 8;
      fences.push_back(glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0));
      job->ready = fences.back();
      jobs.push_back(std::move(job));
    }
    jobs[0]->orphanedRenderbuffer = renderbuffers[0];
    jobs[0]->abandoned = true;
    glFlush();  // the fences reach the renderer before the worker waits for them
  }
  ~TwoJobs() { glDeleteRenderbuffers(1, &renderbuffers[1]); }
  // What every path leaves: the fences deleted (by the worker, or by the UI thread for a job never begun),
  // the orphaned renderbuffer deleted, the picture's own renderbuffer alive, and no GL error on this thread.
  void expectFreedAsTheyShouldBe() const {
    EXPECT_EQ(glIsRenderbuffer(renderbuffers[0]), GL_FALSE) << "the freed picture's renderbuffer is deleted";
    EXPECT_EQ(glIsRenderbuffer(renderbuffers[1]), GL_TRUE) << "its picture's own, left to it";
    for (GLsync fence : fences) EXPECT_EQ(glIsSync(fence), GL_FALSE) << "every fence is deleted";
    for (const auto& job : jobs) EXPECT_EQ(job->ready, nullptr);
    EXPECT_EQ(glGetError(), static_cast<GLenum>(GL_NO_ERROR)) << "nothing deleted twice";
  }
};

TEST_F(FigureRaster, AnAbandonedJobIsSkippedAndItsRenderbufferFreedOnceCollected) {
  m_textures.reset();  // this test's worker has the picture context to itself
  plot::PictureWorker worker(pictureContext());
  while (glGetError() != GL_NO_ERROR) {
  }
  TwoJobs two;
  for (const auto& job : two.jobs) worker.submit(job);
  worker.waitUntilIdle();
  EXPECT_EQ(two.jobs[0]->state.load(), plot::PictureJob::State::Out) << "abandoned: skipped, never drawn";
  EXPECT_EQ(two.jobs[1]->state.load(), plot::PictureJob::State::Done) << "drawn (cleared: nothing to draw)";
  EXPECT_EQ(glIsRenderbuffer(two.renderbuffers[0]), GL_TRUE) << "freed on the UI thread, when collected";
  worker.collect();
  two.expectFreedAsTheyShouldBe();
}

TEST_F(FigureRaster, AWorkerStoppedBeforeItsJobsBeganDeletesOnlyWhatTheyWereLeft) {
  // Jobs still waiting when the worker stops are dropped undrawn, and the UI thread deletes what they hold.
  // The worker is held until 500 ms after the stop is asked for, so it finds the stop before the jobs (were
  // this thread held up longer, the worker would draw the second job first and free the rest itself: the
  // same things are freed either way).
  m_textures.reset();  // this test's worker has the picture context to itself
  Gate gate;
  auto worker = std::make_unique<plot::PictureWorker>(heldContext(gate));
  while (glGetError() != GL_NO_ERROR) {
  }
  TwoJobs two;
  for (const auto& job : two.jobs) worker->submit(job);
  gate.openAfter(std::chrono::milliseconds(500));
  worker.reset();
  EXPECT_EQ(two.jobs[0]->state.load(), plot::PictureJob::State::Out) << "an abandoned job is never drawn";
  two.expectFreedAsTheyShouldBe();
}

TEST_F(FigureRaster, APictureOutWhenTheWorkerStopsIsMadeAnewByTheNext) {
  // The worker stops with a picture handed to it and never begun (TextureCache stops it before freeing the
  // textures it may sample): the figure keeps being drawn, and a worker started later makes its picture.
  Gate gate;
  startHeldWorker(gate);
  const Figure f = lossFigure(4000);
  const RgbaImage inPlace = direct(f);
  m_waitForPictures = false;
  frame(f);
  frame(f);  // handed to the held worker
  // Held until 500 ms after the stop is asked for (were this thread held up longer, the worker would draw
  // the picture first, and the next worker's first frame would show it: the test passes either way).
  gate.openAfter(std::chrono::milliseconds(500));
  m_textures->rasters().stopWorker();
  EXPECT_EQ(counts().pictured, 0u);
  m_textures->rasters().startWorker(pictureContext());
  m_waitForPictures = true;
  const RgbaImage pictured = fromPicture(f);
  EXPECT_EQ(counts().pictured, 1u);
  EXPECT_LE(compare(pictured, inPlace).largest, 1) << "as drawing it in place gives";
}

TEST_F(FigureRaster, OffDrawsEveryFigureInPlace) {
  m_textures->rasters().setEnabled(false);
  const Figure f = lossFigure(1000);
  frame(f);
  frame(f);
  EXPECT_EQ(counts().inPlace, 0u);
  EXPECT_EQ(counts().pictured, 0u);
  EXPECT_EQ(counts().reused, 0u);
}

// The triangles a list's commands from `fromCommand` on hand GL, each vertex as it reaches the renderer
// (position, uv, colour), with the clip of the command that draws it.
struct ResolvedVertex {
  ImVec2 pos, uv;
  ImU32 col;
  ImVec4 clip;
};
std::vector<ResolvedVertex> resolved(const ImDrawList& list, int fromCommand) {
  std::vector<ResolvedVertex> out;
  for (int c = fromCommand; c < list.CmdBuffer.Size; ++c) {
    const ImDrawCmd& cmd = list.CmdBuffer[c];
    for (unsigned k = 0; k < cmd.ElemCount; ++k) {
      const ImDrawVert& v =
          list.VtxBuffer[static_cast<int>(cmd.VtxOffset + list.IdxBuffer[cmd.IdxOffset + k])];
      out.push_back({v.pos, v.uv, v.col, cmd.ClipRect});
    }
  }
  return out;
}

// A figure's list of over 65,536 vertices (its own commands at two vertex offsets) appended to a window's
// list that already holds some: every triangle reaches GL with the same vertices, in the same order, clipped
// to the figure's clip within the window's.
TEST_F(FigureRaster, AFigureDrawnInPlaceIsItsListCopiedVertexForVertex) {
  m_platform->beginFrame();
  const ImTextureID font = ImGui::GetFont()->ContainerAtlas->TexID;
  auto freshList = [&](ImVec2 min, ImVec2 max) {
    auto list = std::make_unique<ImDrawList>(ImGui::GetDrawListSharedData());
    list->_ResetForNewFrame();
    list->Flags |= ImDrawListFlags_AllowVtxOffset;
    list->PushTextureID(font);
    list->PushClipRect(min, max, false);
    return list;
  };
  const auto figure = freshList({0, 0}, {300, 300});
  for (int i = 0; i < 17000; ++i) {  // 68,000 vertices
    const auto x = static_cast<float>(i % 200), y = static_cast<float>(i / 200);
    figure->AddRectFilled({x, y}, {x + 0.5f, y + 0.75f}, IM_COL32(i % 256, (i / 256) % 256, 7, 255));
    if (i == 9000) figure->PushClipRect({10, 10}, {250, 120}, true);  // a second clip, part of the way
  }
  figure->PopClipRect();
  ASSERT_GT(figure->VtxBuffer.Size, 65536);
  ASSERT_TRUE(std::any_of(figure->CmdBuffer.begin(), figure->CmdBuffer.end(), [](const ImDrawCmd& c) {
    return c.VtxOffset > 0;
  })) << "the figure's own list needed a second vertex offset";
  const auto window = freshList({5, 0}, {900, 100});
  for (int i = 0; i < 1000; ++i) window->AddRectFilled({1, 1}, {2, 2}, IM_COL32_WHITE);  // already there
  const int before = window->CmdBuffer.Size - 1;  // the current command: appended to only when it matches
  const int drawnBefore = static_cast<int>(window->CmdBuffer.back().ElemCount);
  plot::appendDrawing(*window, figure->VtxBuffer, figure->IdxBuffer, figure->CmdBuffer);
  std::vector<ResolvedVertex> got = resolved(*window, before), expected = resolved(*figure, 0);
  got.erase(got.begin(), got.begin() + drawnBefore);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t k = 0; k < got.size(); ++k) {
    const ResolvedVertex &g = got[k], &e = expected[k];
    ASSERT_TRUE(g.pos.x == e.pos.x && g.pos.y == e.pos.y && g.uv.x == e.uv.x && g.uv.y == e.uv.y &&
                g.col == e.col)
        << "vertex " << k << " of the appended triangles";
    const ImVec4 clip{std::max(e.clip.x, 5.0f), std::max(e.clip.y, 0.0f), std::min(e.clip.z, 900.0f),
                      std::min(e.clip.w, 100.0f)};
    ASSERT_TRUE(g.clip.x == clip.x && g.clip.y == clip.y && g.clip.z == clip.z && g.clip.w == clip.w)
        << "vertex " << k << ": the figure's clip within the window's";
  }
  ImGui::EndFrame();
}

}  // namespace
}  // namespace sharelens
