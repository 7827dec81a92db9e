// Figures shown from their picture (app/plot/figure_raster.hpp) against the same figures drawn in place, in
// a real (hidden) GLFW window with Mesa's GL under Xvfb: ctest runs this binary through xvfb-run. Each
// check reads the window's pixels back after the frame was drawn from the picture, then after it was drawn
// with the cache off, and compares them; the cache's own counts say which way each frame went.
#include <gtest/gtest.h>
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <random>
#include <vector>

#include "app/gui/platform.hpp"
#include "app/plot/imgui_canvas.hpp"
#include "app/plot/plot_widget.hpp"

namespace sharelens {
namespace {

using gui::Platform;
using gui::RgbaImage;
using plot::Figure;
using plot::FigureRasters;

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
  }
  void TearDown() override { m_textures.reset(); }  // its GL objects go while the context lives

  // One frame with `f` filling the window; returns the pixels drawn (before the swap).
  RgbaImage frame(const Figure& f) {
    m_platform->beginFrame();
    plot::Style style;
    style.fontSize = ImGui::GetFontSize();
    style.titleSize = style.fontSize * 1.1f;
    ImGui::SetNextWindowPos({0, 0});
    ImGui::SetNextWindowSize(ImGui::GetIO().DisplaySize);
    ImGui::Begin("##test", nullptr, ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoSavedSettings);
    // A figure at a fractional position (ImGui's layout keeps items on whole pixels, the cursor need not
    // be): the picture's grid is rounded out to the screen's pixels.
    const ImVec2 at = ImGui::GetCursorScreenPos();
    ImGui::SetCursorScreenPos({at.x + 0.5f, at.y + 7.5f});
    plot::plotWidget("##figure", f, m_state, ImVec2(-1, -1), *m_textures, style);
    ImGui::End();
    m_platform->render();
    m_vertices = ImGui::GetDrawData()->TotalVtxCount;
    RgbaImage image = m_platform->captureFramebuffer();
    m_platform->present();
    m_textures->endFrame();
    return image;
  }
  // The frame drawn in place, with the cache off.
  RgbaImage direct(const Figure& f) {
    m_textures->rasters().setEnabled(false);
    RgbaImage image = frame(f);
    m_textures->rasters().setEnabled(true);
    return image;
  }
  // The frame drawn from the picture, after the frames that make it: changed, the same twice (rendered
  // into the picture), the same thrice (pictured).
  RgbaImage fromPicture(const Figure& f) {
    for (int i = 0; i < 3; ++i) frame(f);
    const uint64_t reused = counts().reused;
    RgbaImage image = frame(f);
    EXPECT_EQ(counts().reused, reused + 1)
        << "the fourth frame of an unchanged figure comes from its picture";
    return image;
  }
  FigureRasters::Counts counts() const { return m_textures->rasters().counts(); }
  void expectPicturedAgainOnChange(const Figure& original, const Figure& changed, size_t ties);

  static Platform* s_platform;
  Platform* m_platform = nullptr;
  int m_vertices = 0;  // handed to GL by the last frame
  std::unique_ptr<plot::TextureCache> m_textures;
  plot::PlotState m_state;
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

TEST_F(FigureRaster, AnUnchangedFigureIsShownFromItsPictureAsItIsDrawnInPlace) {
  const Figure f = lossFigure(20000);
  const RgbaImage inPlace = direct(f);
  const int inPlaceVertices = m_vertices;
  const RgbaImage cached = fromPicture(f);
  EXPECT_EQ(counts().pictured, 1u);
  EXPECT_EQ(counts().inPlace, 2u) << "drawn in place while new (the first frame) and being pictured";
  EXPECT_LT(m_vertices * 10, inPlaceVertices) << "the picture's frame hands GL a quad, not the curves";
  const Difference d = compare(cached, inPlace);
  // llvmpipe blends into the picture's RGBA8 renderbuffer and into the window's own format with different
  // rounding: a channel may differ by one. A picture a pixel off, or blended twice, differs by far more.
  EXPECT_LE(d.largest, 1) << d.pixels << " pixels differ";
  EXPECT_LT(d.pixels, cached.pixels.size() / 4 / 100) << "over 1% of the window differs";
}

TEST_F(FigureRaster, AFigureIsDrawnInPlaceAgainOnceATextureIsMade) {
  // A texture made under a freed one's GL name could hold other content behind the same draw commands, so a
  // picture is not shown across the making of any texture: the figure is drawn in place, then pictured anew.
  const Figure f = lossFigure(1000);
  fromPicture(f);
  const FigureRasters::Counts shown = counts();
  const uint64_t generation = m_textures->generation();
  m_textures->colorbar(plot::Colormap::Magma);  // a texture the figure does not use
  ASSERT_EQ(m_textures->generation(), generation + 1);
  frame(f);
  EXPECT_EQ(counts().inPlace, shown.inPlace + 1);
  EXPECT_EQ(counts().reused, shown.reused);
  frame(f);
  frame(f);
  EXPECT_EQ(counts().pictured, shown.pictured + 1);
}

// From a figure shown from its picture, `changed` is drawn in place at once (not from the stale picture),
// then pictured again, and its new picture looks as drawing it in place does: at most `ties` pixels differ
// by more than a rounding.
void FigureRaster::expectPicturedAgainOnChange(const Figure& original, const Figure& changed, size_t ties) {
  const RgbaImage inPlace = direct(changed);
  const RgbaImage before = fromPicture(original);
  const FigureRasters::Counts shown = counts();
  const RgbaImage first = frame(changed);
  EXPECT_EQ(counts().inPlace, shown.inPlace + 1) << "the changed figure is drawn in place at once";
  EXPECT_EQ(counts().reused, shown.reused);
  EXPECT_GT(compare(before, first).pixels, 100u) << "the change is on screen at once";
  EXPECT_LE(compare(first, inPlace).largest, 1);
  frame(changed);  // rendered into the picture
  const RgbaImage pictured = frame(changed);
  EXPECT_EQ(counts().pictured, shown.pictured + 1) << "the changed figure is pictured again";
  EXPECT_LE(compare(pictured, inPlace).beyondRounding, ties)
      << "the new picture is what drawing in place gives";
  frame(changed);
  EXPECT_EQ(counts().reused, shown.reused + 1);
}

TEST_F(FigureRaster, ANewPointIsOnScreenAtOnceAndPicturedAgain) {
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
