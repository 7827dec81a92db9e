// Real Cairo exports to PNG, SVG and PDF: the same texts at the same places in each, page sizes, panels,
// one-column figures whose legend goes below the data, default file names, and the shipped colour maps.
#include <cairo-pdf.h>
#include <cairo.h>
#include <gtest/gtest.h>
#include <imgui_internal.h>  // ImDrawListSharedData, for a draw list outside a frame

#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <span>
#include <sstream>
#include <tuple>

#include "analysis/activations.hpp"
#include "analysis/difference_maps.hpp"
#include "analysis/directshare.hpp"
#include "analysis/embedding_study.hpp"
#include "analysis/esd.hpp"
#include "analysis/matrix_pca.hpp"
#include "analysis/spectra.hpp"
#include "app/export/cairo_canvas.hpp"
#include "app/export/figure_export.hpp"
#include "app/export/svg_canvas.hpp"
#include "app/plot/figure_registry.hpp"
#include "app/plot/figures.hpp"
#include "app/plot/imgui_canvas.hpp"
#include "app/plot/list_renderer.hpp"
#include "app/plot/plot_widget.hpp"
#include "core/assets.hpp"
#include "core/error.hpp"
#include "core/experiment_report.hpp"
#include "core/param_count.hpp"
#include "core/statistics.hpp"
#include "core/topology.hpp"
#include "core/topology_edit.hpp"
#include "tests/app/plot_test_canvases.hpp"
#include "tests/support/colour_distance.hpp"
#include "tests/support/errors.hpp"
#include "tests/support/hf_fixtures.hpp"
#include "tests/support/process.hpp"

namespace sharelens {
namespace {

using namespace plot;
namespace fs = std::filesystem;

TEST(Export, PngSvgAndPdfWithTheSameLabels) {
  const fs::path dir = testing::makeTempDir("export");
  MatrixSpectrum m{{"layers.0.q"}, {}};
  for (int i = 0; i < 64; ++i) m.spectrum.sigma.push_back(std::exp(-i / 10.0));
  m.spectrum.effectiveRank = 30;
  const Figure f = spectrumFigure({&m}, true, "Export title & <more>");
  ExportOptions options;
  options.size = {640, 400, 72, 1};
  for (const char* ext : {"png", "svg", "pdf"}) exportFigure(f, dir / (std::string("f.") + ext), options);
  cairo_surface_t* png = cairo_image_surface_create_from_png((dir / "f.png").c_str());
  ASSERT_EQ(cairo_surface_status(png), CAIRO_STATUS_SUCCESS);
  EXPECT_EQ(cairo_image_surface_get_width(png), 640);
  EXPECT_EQ(cairo_image_surface_get_height(png), 400);
  cairo_surface_destroy(png);
  const std::string svg = slurp(dir / "f.svg");
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(svg.find(">Export title &amp; &lt;more&gt;</text>"), std::string::npos)
      << "text stays text, escaped";
  EXPECT_NE(svg.find(">index i</text>"), std::string::npos) << "axis labels are text";
  EXPECT_EQ(svg.find("glyph"), std::string::npos) << "no text drawn as glyph outlines";
  EXPECT_EQ(slurp(dir / "f.pdf").substr(0, 5), "%PDF-");
  EXPECT_THROW(exportFigure(f, dir / "f.bmp"), Error);
  EXPECT_FALSE(fs::exists(dir / "f.bmp"));
  fs::remove_all(dir);
}

// A PNG shows a heatmap with more cells than pixels by its cells' mean colours, and magnified cells crisp:
// each sampled pixel is within a rounding of a colour a closed form gives. A checkerboard of 2,048 x 2,048
// cells of 0 and 1 in about 360 x 360 pixels is the mean of its two colours everywhere (nearest sampling
// shows one or the other, or a moire); an 8 x 8 one is each pixel one of the two. (Exports keep cells
// square: both axes scale alike.)
TEST(Export, APngShowsAHeatmapWithMoreCellsThanPixelsAsTheirMeanColour) {
  const fs::path dir = testing::makeTempDir("export-heatmap");
  for (const int side : {2048, 8}) {
    Heatmap h;
    h.rows = h.cols = side;
    for (int r = 0; r < side; ++r)
      for (int c = 0; c < side; ++c) h.values.push_back(static_cast<float>((r + c) % 2));
    Figure f;
    f.heatmap = h;
    ExportOptions options;
    options.size = {640, 400, 72, 1};
    exportFigure(f, dir / "f.png", options);
    cairo_surface_t* png = cairo_image_surface_create_from_png((dir / "f.png").c_str());
    ASSERT_EQ(cairo_surface_status(png), CAIRO_STATUS_SUCCESS);
    const Rgb zero = heatmapCellColor(h, 0), one = heatmapCellColor(h, 1);
    const std::vector<testing::DoubledRgb> allowed =
        side == 2048
            ? std::vector{testing::meanOf(zero.r, zero.g, zero.b, one.r, one.g, one.b)}
            : std::vector{testing::doubled(zero.r, zero.g, zero.b), testing::doubled(one.r, one.g, one.b)};
    const unsigned char* data = cairo_image_surface_get_data(png);
    const int stride = cairo_image_surface_get_stride(png);
    int worst = 0;
    // 20 x 20 pixels left of the middle: inside the map, clear of the colour bar on its right.
    for (int y = 190; y < 210; ++y)
      for (int x = 270; x < 290; ++x) {
        const uint32_t argb = *reinterpret_cast<const uint32_t*>(data + y * stride + 4 * x);
        worst = std::max(worst, testing::twiceDistanceToNearest(
                                    {static_cast<int>(argb >> 16 & 0xFF), static_cast<int>(argb >> 8 & 0xFF),
                                     static_cast<int>(argb & 0xFF)},
                                    allowed));
      }
    cairo_surface_destroy(png);
    EXPECT_LE(worst, 3) << side << " x " << side << " cells: each pixel "
                        << (side == 2048 ? "the mean" : "0 or 1") << " (twice the largest channel distance)";
  }
  fs::remove_all(dir);
}

// The PDF's page box, "/MediaBox [ 0 0 W H ]", as Cairo writes it (uncompressed).
std::pair<double, double> pdfPageSize(const std::string& pdf) {
  const size_t at = pdf.find("/MediaBox");
  if (at == std::string::npos) return {0, 0};
  std::istringstream in(pdf.substr(pdf.find('[', at) + 1, 80));
  double x0, y0, w, h;
  in >> x0 >> y0 >> w >> h;
  return {w - x0, h - y0};
}

// Journal sizes: a single column is 3.5 in wide, so the PDF and SVG pages are 3.5 x 72 = 252 pt and the PNG
// 3.5 x 300 dpi = 1050 pixels; its text is 8 pt (13 pt x 8/13) and its title 15 x 8/13 = 9.23 pt.
TEST(Export, SizePresetsGiveThePageInPointsAndThePngAtItsDpi) {
  const fs::path dir = testing::makeTempDir("export-sizes");
  Heatmap h;
  h.rows = 4;
  h.cols = 12;
  h.values.assign(48, 0.5f);
  Figure f;
  f.title = "Heads";
  f.heatmap = h;
  ExportOptions options;
  options.size = parseFigureSize("single", "--size");
  for (const char* ext : {"png", "svg", "pdf"}) exportFigure(f, dir / (std::string("f.") + ext), options);
  cairo_surface_t* png = cairo_image_surface_create_from_png((dir / "f.png").c_str());
  EXPECT_EQ(cairo_image_surface_get_width(png), 1050);
  EXPECT_EQ(cairo_image_surface_get_height(png), 780);
  cairo_surface_destroy(png);
  const auto [w, h2] = pdfPageSize(slurp(dir / "f.pdf"));
  EXPECT_NEAR(w, 252, 0.01);
  EXPECT_NEAR(h2, 187.2, 0.01);
  const std::string svg = slurp(dir / "f.svg");
  EXPECT_NE(svg.find("width=\"252pt\" height=\"187.2pt\""), std::string::npos);
  EXPECT_NE(svg.find("font-size=\"9.23\" fill=\"#1e1e1e\">Heads</text>"), std::string::npos);
  EXPECT_NE(svg.find("font-size=\"8\""), std::string::npos);
  // Square cells: the embedded 12 x 4 image is drawn three times as wide as it is tall.
  const size_t image = svg.find("<image ");
  ASSERT_NE(image, std::string::npos);
  double iw = 0, ih = 0;
  std::sscanf(svg.c_str() + svg.find("width=", image), "width=\"%lf\" height=\"%lf\"", &iw, &ih);
  EXPECT_NEAR(iw / ih, 3.0, 0.02) << iw << " x " << ih;

  const FigureSize custom = parseFigureSize("5x2.5", "--size");
  EXPECT_DOUBLE_EQ(custom.widthPt, 360);
  EXPECT_DOUBLE_EQ(custom.heightPt, 180);
  EXPECT_EQ(custom.pixelWidth(), 1500);
  for (const char* bad : {"5x", "x2", "5by2", "-1x2", "0x2", "medium", "1e9x1"}) {
    try {
      parseFigureSize(bad, "--size");
      ADD_FAILURE() << bad << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--size"), std::string::npos) << e.what();
    }
  }
  options.size.dpi = 2400;  // 7 in x 2400 dpi = 16,800 px fits, 10 in does not
  options.size.widthPt = 720;
  EXPECT_THROW(exportFigure(f, dir / "big.png", options), Error);
  EXPECT_FALSE(fs::exists(dir / "big.png"));
  EXPECT_NO_THROW(exportFigure(f, dir / "big.pdf", options)) << "dpi limits only the PNG";
  options.size = parseFigureSize("100x50", "--size");  // a poster: 30,000 px at 300 dpi, fine as a PDF
  EXPECT_NO_THROW(exportFigure(f, dir / "poster.pdf", options));
  EXPECT_THROW(exportFigure(f, dir / "poster.png", options), Error);
  fs::remove_all(dir);
}

// A forest plot at the one-column size, under a two-line title and a three-line subtitle, leaves a data
// area too short to give half of it to a five-entry legend, and every corner covers data: the export grows
// taller rather than lay the legend over the data, the data area keeps its height, the legend sits below the
// x axis, the y label is wrapped to the plot it stands beside, and every text stays inside the page. The
// page's height is the size exportFigure returns (PNG pixels, PDF and SVG points).
TEST(Export, AOneColumnFigureGrowsTallerRatherThanLayItsLegendOverTheData) {
  ExperimentReport r = forestReport("head-sharing");
  r.arms[0].difference = meanInterval(std::vector<double>{0.01, -0.02, 0.0, 0.015});
  r.arms[0].documentDifference = {
      .estimate = 0.001, .lo = -0.001, .hi = 0.003, .clusters = 40, .resamples = 2000};
  r.arms[0].expect = "no-worse";
  r.arms[0].margin = 0.02;
  r.arms[0].paperEffect = -0.022;
  r.arms[2].aaOf = "baseline";
  r.arms[2].difference = meanInterval(std::vector<double>{-0.01, 0.0, -0.02, 0.002});
  r.arms[2].documentDifference = {
      .estimate = -0.008, .lo = -0.009, .hi = -0.007, .clusters = 40, .resamples = 2000};
  Figure f = experimentForestFigure(r);
  f.title = "head-sharing: each arm minus baseline, paired by seed (95% intervals; below 0 is better)";
  f.subtitle =
      "Leveraging Low-Rank Structure for Effective Weight-Sharing in Language Models (the low-rank "
      "sharing paper), Sec. 4.2 (Eq. 1, Fig. 4a), App. A, Table 1";
  const FigureSize single = parseFigureSize("single", "--size");
  Style exportStyle = Style::light();  // as figure_export draws the one-column preset
  exportStyle.legendBelowRatherThanOverData = exportStyle.squareHeatmapCells = true;
  exportStyle.fontSize *= static_cast<float>(single.fontScale);
  exportStyle.titleSize *= static_cast<float>(single.fontScale);
  TextBoxes c;
  const Point asked{static_cast<float>(single.widthPt), static_cast<float>(single.heightPt)};
  const FigureLayout cramped = layoutFigure(f, c, exportStyle, {0, 0}, asked);
  ASSERT_GT(cramped.heightWanted, 0) << "at 2.6 in the legend has no room below";
  const Point grown{asked.x, asked.y + std::ceil(cramped.heightWanted)};
  const FigureLayout l = layoutFigure(f, c, exportStyle, {0, 0}, grown);
  EXPECT_EQ(l.heightWanted, 0);
  ASSERT_FALSE(l.legend.empty());
  for (const auto& row : l.legend) EXPECT_GT(row.min.y, l.plotMax.y) << "below the data";
  EXPECT_NEAR(l.plotMax.y - l.plotMin.y, cramped.plotMax.y - cramped.plotMin.y, 1.0)
      << "the data area keeps the height it had";
  drawFigure(c, f, l, exportStyle);
  for (const TextBoxes::Box& b : c.boxes) {
    EXPECT_GE(b.min.x, -0.01f) << b.text;
    EXPECT_GE(b.min.y, -0.01f) << b.text;
    EXPECT_LE(b.max.x, grown.x + 0.01f) << b.text;
    EXPECT_LE(b.max.y, grown.y + 0.01f) << b.text;
  }
  // (never at under half its length, the rule that keeps a squeezed plot's label from a word per line)
  const float wrapAt = std::max(l.plotMax.y - l.plotMin.y, c.textSize(f.yLabel, exportStyle.fontSize).x / 2);
  for (const std::string& line : l.yLabelLines)
    EXPECT_LE(c.textSize(line, exportStyle.fontSize).x, wrapAt + 0.5f) << line;

  const fs::path dir = testing::makeTempDir("export-grown");
  ExportOptions options;
  options.size = single;
  const FigureSize written = exportFigure(f, dir / "forest.png", options);  // laid out in Cairo's metrics
  EXPECT_EQ(written.widthPt, single.widthPt);
  EXPECT_GT(written.heightPt, single.heightPt);
  cairo_surface_t* png = cairo_image_surface_create_from_png((dir / "forest.png").c_str());
  EXPECT_EQ(cairo_image_surface_get_height(png), written.pixelHeight());
  cairo_surface_destroy(png);
  exportFigure(f, dir / "forest.pdf", options);
  EXPECT_NEAR(pdfPageSize(slurp(dir / "forest.pdf")).second, written.heightPt, 0.01);
  // In Cairo's own metrics, as the export measured: at the height written the legend is below the data. So
  // too for a legend taller than the data area it would stand beside (nine runs with long names, one to a
  // line), which one growth by the legend's height alone would leave over the data.
  Figure runs;
  runs.title = f.title;
  runs.subtitle = f.subtitle;
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> anywhere(0, 1);
  for (int r = 0; r < 9; ++r) {
    Series s;
    s.label = "cycle-rev L8 U4 r8 (seed " + std::to_string(r + 1) + ", lr 0.003)";
    for (int i = 0; i < 200; ++i) s.x.push_back(i), s.y.push_back(anywhere(rng));
    runs.series.push_back(s);
  }
  for (const Figure* figure : {&f, &runs}) {
    const FigureSize page = exportFigure(*figure, dir / "page.svg", options);
    SvgCanvas cairo(page.widthPt, page.heightPt);
    const FigureLayout atPage =
        layoutFigure(*figure, cairo, exportStyle, {0, 0},
                     {static_cast<float>(page.widthPt), static_cast<float>(page.heightPt)});
    ASSERT_FALSE(atPage.legend.empty());
    for (const auto& row : atPage.legend)
      EXPECT_GE(row.min.y, atPage.plotMax.y) << figure->series.size() << " series: below the data";
    EXPECT_GT(page.heightPt, single.heightPt);
  }
  EXPECT_NE(
      exportedFileDescription(dir / "forest.png", single, written).find("taller than the 2.60 in asked"),
      std::string::npos);
  EXPECT_EQ(exportedFileDescription(dir / "forest.png", single, single), (dir / "forest.png").string());
  fs::remove_all(dir);
}

// Panels share a page side by side: each title is centred in its own half (the training export's loss and
// validation loss).
TEST(Export, PanelsShareThePageSideBySide) {
  const fs::path dir = testing::makeTempDir("export-panels");
  Figure left, right;
  left.title = "Left panel";
  right.title = "Right panel";
  for (Figure* f : {&left, &right}) f->series.push_back({"s", {1, 2, 3}, {3, 1, 2}});
  ExportOptions options;
  options.size = parseFigureSize("double", "--size");  // 504 pt wide: panels of 252 pt
  const std::vector<Figure> panels = {left, right};
  exportPanels(panels, dir / "p.svg", options);
  exportPanels(panels, dir / "p.png", options);
  const std::string svg = slurp(dir / "p.svg");
  auto titleX = [&](const std::string& title) {
    const size_t end = svg.find(">" + title + "</text>");
    if (end == std::string::npos) return -1.0;
    const size_t x = svg.rfind("<text x=\"", end);
    return std::stod(svg.substr(x + 9));
  };
  const double l = titleX("Left panel"), r = titleX("Right panel");
  EXPECT_GT(l, 0);
  EXPECT_LT(l, 252);
  EXPECT_GT(r, 252) << "the second panel starts at half the page";
  EXPECT_LT(r, 504);
  fs::remove_all(dir);
}

// Panels that name the same runs in the same colours (the training export's loss beside its validation loss)
// share one legend below both, across the page: at one-column width each half is narrower than a long run
// name, and eighteen runs' legend in either half lay over its data. Each name is written once, below both
// panels' x labels and inside the page, which grows taller for it. Panels whose names disagree in colour keep
// a legend each.
TEST(Export, PanelsThatNameTheSameRunsShareOneLegendBelowThem) {
  const fs::path dir = testing::makeTempDir("export-shared-legend");
  Figure loss, validation;
  loss.title = "Training: loss";
  validation.title = "Training: validation loss";
  loss.xLabel = validation.xLabel = "step";
  for (int r = 0; r < 18; ++r) {
    const std::string name = (r < 6    ? "baseline"
                              : r < 12 ? "baseline-aa"
                                       : "qkv-shared") +
                             std::string(" (seed ") + std::to_string(r % 6 + 1) + ")";
    Series s{.label = name, .color = seriesColor(r)};
    for (int i = 0; i < 100; ++i) s.x.push_back(i), s.y.push_back(5.0 - 0.01 * i + 0.01 * r);
    loss.series.push_back(s);
    s.style = SeriesStyle::LineAndMarkers;  // drawn with markers, listed with the same swatch
    validation.series.push_back(s);
  }
  ExportOptions options;
  options.size = parseFigureSize("single", "--size");
  const std::vector<Figure> panels = {loss, validation};
  const FigureSize written = exportPanels(panels, dir / "p.svg", options);
  EXPECT_GT(written.heightPt, options.size.heightPt) << "grown for the legend";
  struct Text {
    double x, y;
    std::string text;
  };
  auto texts = [&](const fs::path& file) {
    const std::string svg = slurp(file);
    std::vector<Text> out;
    const std::regex text(R"re(<text x="([-0-9.e]+)" y="([-0-9.e]+)"[^>]*>([^<]*)</text>)re");
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), text); it != std::sregex_iterator(); ++it)
      out.push_back({std::stod((*it)[1]), std::stod((*it)[2]), (*it)[3]});
    return out;
  };
  const std::vector<Text> page = texts(dir / "p.svg");
  double xLabelsBottom = 0;
  int xLabels = 0;
  for (const Text& t : page)
    if (t.text == "step") xLabelsBottom = std::max(xLabelsBottom, t.y), ++xLabels;
  ASSERT_EQ(xLabels, 2);
  for (const Series& s : loss.series) {
    const auto named =
        std::count_if(page.begin(), page.end(), [&](const Text& t) { return t.text == s.label; });
    EXPECT_EQ(named, 1) << s.label << ": one legend for both panels";
    for (const Text& t : page)
      if (t.text == s.label) {
        EXPECT_GT(t.y, xLabelsBottom) << s.label << ": below both panels";
        EXPECT_LE(t.y, written.heightPt) << s.label;
      }
  }
  validation.series[3].color = {1, 2, 3};  // one name in another colour: not one run's swatch
  const std::vector<Figure> disagreeing = {loss, validation};
  exportPanels(disagreeing, dir / "q.svg", options);
  const std::vector<Text> apart = texts(dir / "q.svg");
  EXPECT_EQ(std::count_if(apart.begin(), apart.end(),
                          [&](const Text& t) { return t.text == loss.series[0].label; }),
            2)
      << "each panel keeps its own legend";
  fs::remove_all(dir);
}

// The SVG is well-formed XML whose text elements carry the figure's words (read by Python's own parser).
TEST(Export, SvgIsWellFormedXmlToAnIndependentParser) {
  if (testing::runProcess("/usr/bin/python3 -c 'import xml.etree.ElementTree'").exitCode != 0)
    GTEST_SKIP() << "no /usr/bin/python3";
  const fs::path dir = testing::makeTempDir("export-svg");
  MatrixSpectrum m{{"layers.0.q"}, {}};
  for (int i = 0; i < 32; ++i) m.spectrum.sigma.push_back(1.0 / (1 + i));
  exportFigure(spectrumFigure({&m}, true, "A \"quoted\" title"), dir / "f.svg");
  const auto r = testing::runProcess(
      "/usr/bin/python3 -c 'import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1]).getroot(); "
      "ns = \"{http://www.w3.org/2000/svg}\"; print(r.get(\"width\")); "
      "print(\"|\".join(t.text for t in r.iter(ns + \"text\")))' " +
      testing::shellQuote((dir / "f.svg").string()));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')), "1200pt");
  EXPECT_NE(r.out.find("A \"quoted\" title"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("|index i"), std::string::npos) << r.out;
  fs::remove_all(dir);
}

// Save As names: <model>-<step>-<view>.<ext>, made safe for a file name, and never an existing file.
TEST(Export, DefaultNamesCarryModelStepAndViewAndNeverOverwrite) {
  const fs::path dir = testing::makeTempDir("export-names");
  EXPECT_EQ(defaultExportPath(dir, "cycle-3of6 (model)", 400, "spectrum", "pdf"),
            dir / "cycle-3of6_model-step400-spectrum.pdf");
  // A followed run's checkpoint is labelled with its step already: the name says it once.
  EXPECT_EQ(defaultExportPath(dir, "baseline @ step 15", 15, "spectrum", "png"),
            dir / "baseline-step15-spectrum.png");
  EXPECT_EQ(defaultExportPath(dir, "gpt2", -1, "heads", "svg"), dir / "gpt2-heads.svg");
  EXPECT_EQ(defaultExportPath(dir, "///", -1, "heads", "png"), dir / "model-heads.png");
  std::ofstream(dir / "gpt2-heads.svg") << "x";
  std::ofstream(dir / "gpt2-heads-2.svg") << "x";
  EXPECT_EQ(defaultExportPath(dir, "gpt2", -1, "heads", "svg"), dir / "gpt2-heads-3.svg");
  fs::remove_all(dir);
}

// The colour maps ship as assets: the table runs from the file's first anchor to its last (CIELAB
// interpolation passes through its anchors), and a broken file is a named error with the field and a hint.
TEST(Colormaps, TablesComeFromTheShippedFilesAndBrokenFilesAreNamedErrors) {
  const auto anchors = plot::readColormapAnchors(assetsDirectory() / "colormaps" / "viridis.json");
  ASSERT_EQ(anchors.front(), 0x440154u);
  const auto& table = plot::colormapTable(plot::Colormap::Viridis);
  auto hex = [](const plot::Rgb& c) { return (uint32_t{c.r} << 16) | (uint32_t{c.g} << 8) | c.b; };
  auto near = [&](uint32_t a, uint32_t b) {
    for (int shift : {16, 8, 0})
      if (std::abs(static_cast<int>((a >> shift) & 0xff) - static_cast<int>((b >> shift) & 0xff)) > 1)
        return false;
    return true;
  };
  EXPECT_TRUE(near(hex(table.front()), anchors.front())) << std::hex << hex(table.front());
  EXPECT_TRUE(near(hex(table.back()), anchors.back())) << std::hex << hex(table.back());

  const fs::path dir = testing::makeTempDir("colormaps");
  const auto errorFor = [&](const std::string& text) {
    std::ofstream(dir / "bad.json") << text;
    try {
      plot::readColormapAnchors(dir / "bad.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::string e = errorFor(R"({"anchors": ["#440154", "blue"]})");
  EXPECT_NE(e.find("bad.json"), std::string::npos) << e;
  EXPECT_NE(e.find("anchors"), std::string::npos) << e;
  EXPECT_NE(e.find("#rrggbb"), std::string::npos) << e;
  e = errorFor(R"({"anchors": ["#440154"]})");
  EXPECT_NE(e.find("at least 2"), std::string::npos) << e;
  e = errorFor(R"({"name": "x"})");
  EXPECT_NE(e.find("anchors"), std::string::npos) << e;
  fs::remove(dir / "bad.json");
  e = errorFor("");
  EXPECT_NE(e.find("bad.json"), std::string::npos) << e;
  fs::remove_all(dir);
}

// Passes everything to the canvas it wraps, and keeps each text drawn with where it was anchored.
class TextRecorder : public Canvas {
 public:
  explicit TextRecorder(Canvas& inner) : m_inner(inner) {}
  void line(Point a, Point b, Rgb c, float w, bool d) override { m_inner.line(a, b, c, w, d); }
  void polyline(std::span<const Point> p, Rgb c, float w, bool d) override { m_inner.polyline(p, c, w, d); }
  void rect(Point a, Point b, Rgb c, float w) override { m_inner.rect(a, b, c, w); }
  void fillRect(Point a, Point b, Rgb c, float alpha) override { m_inner.fillRect(a, b, c, alpha); }
  void fillQuad(Point a, Point b, Point c, Point d, Rgb col, float alpha) override {
    m_inner.fillQuad(a, b, c, d, col, alpha);
  }
  void circle(Point c, float r, Rgb col) override { m_inner.circle(c, r, col); }
  void columnBand(std::span<const ColumnSpan> c, Rgb col, float w) override { m_inner.columnBand(c, col, w); }
  void text(Point at, std::string_view t, Rgb c, float size, Align h, Align v, bool vertical) override {
    texts.push_back({std::string(t), at});
    m_inner.text(at, t, c, size, h, v, vertical);
  }
  Point textSize(std::string_view t, float size) override { return m_inner.textSize(t, size); }
  void heatmapCells(Point a, Point b, const Heatmap& h) override { m_inner.heatmapCells(a, b, h); }
  void colorbar(Point a, Point b, Colormap c) override { m_inner.colorbar(a, b, c); }
  void pushClip(Point a, Point b) override { m_inner.pushClip(a, b); }
  void popClip() override { m_inner.popClip(); }
  std::vector<std::pair<std::string, Point>> texts;

 private:
  Canvas& m_inner;
};

// The three export formats lay a figure out alike: the same tick labels, legend rows and titles at the same
// places, whichever surface measures the text. (An image surface rounds advances to its pixels: the SVG
// canvas, which measures on one, and the PNG export chose other ticks than the PDF at the one-column size.)
TEST(Export, SvgPdfAndPngPlaceTheSameTextsAtTheSamePlaces) {
  Figure f;
  f.title = "Singular-value spectra";
  f.xLabel = "index i";
  f.yLabel = "sigma_i / sigma_1";
  f.yScale = Scale::Log10;
  for (int r = 0; r < 3; ++r) {
    Series s;
    s.label = "layers." + std::to_string(2 * r) + ".q  (rank " + std::to_string(21 + r) + ")";
    for (int i = 0; i < 64; ++i) {
      s.x.push_back(i);
      s.y.push_back(std::pow(10.0, -3.0 * i / 63.0 - 0.1 * r));
    }
    f.series.push_back(s);
  }
  const double widthPt = 3.5 * 72, heightPt = 2.6 * 72;
  Style style = Style::light();
  style.fontSize *= 8.0f / 13.0f;  // the one-column preset's 8 pt text
  style.titleSize *= 8.0f / 13.0f;
  auto draw = [&](Canvas& target) {
    TextRecorder recorder(target);
    const FigureLayout layout =
        layoutFigure(f, recorder, style, {0, 0}, {static_cast<float>(widthPt), static_cast<float>(heightPt)});
    drawFigure(recorder, f, layout, style);
    return recorder.texts;
  };
  SvgCanvas svg(widthPt, heightPt);
  const auto svgTexts = draw(svg);
  cairo_surface_t* pdf = cairo_pdf_surface_create_for_stream(nullptr, nullptr, widthPt, heightPt);
  cairo_t* pdfContext = cairo_create(pdf);
  const auto pdfTexts = [&] {
    sharelens::CairoCanvas canvas(pdfContext);
    return draw(canvas);
  }();
  const double dpi = 300;
  cairo_surface_t* png = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, static_cast<int>(widthPt * dpi / 72),
                                                    static_cast<int>(heightPt * dpi / 72));
  cairo_t* pngContext = cairo_create(png);
  cairo_scale(pngContext, dpi / 72, dpi / 72);
  const auto pngTexts = [&] {
    sharelens::CairoCanvas canvas(pngContext);
    return draw(canvas);
  }();
  for (cairo_t* cr : {pdfContext, pngContext}) cairo_destroy(cr);
  for (cairo_surface_t* s : {pdf, png}) cairo_surface_destroy(s);

  ASSERT_GE(pdfTexts.size(), 10u) << "title, axis labels, ticks and legend";
  for (const auto& [name, other] : {std::pair{"SVG", svgTexts}, std::pair{"PNG", pngTexts}}) {
    ASSERT_EQ(other.size(), pdfTexts.size()) << name << " draws as many texts as the PDF";
    for (size_t i = 0; i < pdfTexts.size(); ++i) {
      EXPECT_EQ(other[i].first, pdfTexts[i].first) << name << " text " << i;
      EXPECT_NEAR(other[i].second.x, pdfTexts[i].second.x, 1e-3) << name << " '" << pdfTexts[i].first << "'";
      EXPECT_NEAR(other[i].second.y, pdfTexts[i].second.y, 1e-3) << name << " '" << pdfTexts[i].first << "'";
    }
  }
}

// An export's legend never covers data: with every corner of the plot crossed by noisy curves it goes below
// the plot, in columns that fit the figure, and the data area gives up the room; with an empty corner it
// stays there, and on screen (where it is clicked to hide a series) it stays in the emptiest corner.
TEST(Figures, AnExportsLegendGoesBelowThePlotRatherThanOverItsData) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> anywhere(0, 1);
  Figure filled;
  filled.xLabel = "step";
  for (int r = 0; r < 5; ++r) {
    Series s;
    s.label = "seed " + std::to_string(r);
    for (int i = 0; i < 400; ++i) s.x.push_back(i), s.y.push_back(anywhere(rng));
    filled.series.push_back(s);
  }
  Figure cornerFree;  // a falling curve: the top-right corner is empty
  Series falling;
  falling.label = "loss";
  for (int i = 0; i < 400; ++i) falling.x.push_back(i), falling.y.push_back(1.0 / (1 + i));
  cornerFree.series.push_back(falling);
  Style exportStyle = Style::light();
  exportStyle.legendBelowRatherThanOverData = true;
  const Point size{252, 187};  // the one-column preset, in points
  MeasuringCanvas c;

  const FigureLayout below = layoutFigure(filled, c, exportStyle, {0, 0}, size);
  ASSERT_EQ(below.legend.size(), 5u);
  const FigureLayout screen = layoutFigure(filled, c, Style::light(), {0, 0}, size);
  EXPECT_LT(below.plotMax.y, screen.plotMax.y) << "the data area gave up room for the legend";
  // Tick length 4, the tick labels and the axis label below them, 6 apart.
  const float xLabelBottom = below.plotMax.y + 4 + 6 + 2 * c.textSize("0", exportStyle.fontSize).y;
  std::set<float> columns;
  for (size_t i = 0; i < below.legend.size(); ++i) {
    const auto& row = below.legend[i];
    EXPECT_GT(row.min.y, xLabelBottom) << "row " << i << " is below the x tick labels";
    EXPECT_LE(row.max.y, size.y) << "row " << i << " is inside the figure";
    EXPECT_GE(row.min.x, 0.0f);
    EXPECT_LE(row.max.x, size.x);
    columns.insert(row.min.x);
    for (size_t j = 0; j < i; ++j) {
      const auto& other = below.legend[j];
      EXPECT_FALSE(row.min.x < other.max.x && other.min.x < row.max.x && row.min.y < other.max.y &&
                   other.min.y < row.max.y)
          << "rows " << j << " and " << i << " overlap";
    }
  }
  EXPECT_GE(columns.size(), 2u) << "five short labels share the width in columns";

  for (const FigureLayout& inside : {screen, layoutFigure(cornerFree, c, exportStyle, {0, 0}, size)})
    for (const auto& row : inside.legend) {
      EXPECT_GE(row.min.y, inside.plotMin.y);
      EXPECT_LE(row.max.y, inside.plotMax.y) << "a corner of the plot";
    }
}

// Issue 41 item 6: an experiment's forest plot exported at the one-column size (252 x 187 pt) had its title
// and turned y label cut off at the figure's edges (the title never wrapped; the y label was placed with its
// top, not its middle, at the plot's middle) and, without its title (`export --no-title`), its five-entry
// legend over the data (one entry per line below would leave under half the plot). Every text's box now lies
// inside the figure, and the untitled figure's legend goes below, packed into fewer lines than it has
// entries. (With a title and three lines of subtitle no legend fits below a 2.6 in one-column plot: the
// export grows taller, Export.AOneColumnFigureGrowsTallerRatherThanLayItsLegendOverTheData.)
TEST(Figures, AOneColumnExportKeepsEveryTextInsideTheFigureAndItsLegendOffTheData) {
  Figure f;
  f.title = "qkv-sharing: each arm minus baseline, paired by seed (95% intervals; below 0 is better)";
  f.subtitle = "Leveraging Low-Rank Structure for Effective Weight-Sharing in Language Models, Table 1";
  f.yLabel = "held-out NLL difference (nats / token)";
  f.xCategories = {"qkv-shared", "baseline-aa (A/A)"};
  for (const char* label : {"no difference", "no-worse margin", "over held-out documents (bootstrap)",
                            "over seeds (t)", "the paper's difference"}) {
    Series s;  // each reference line crosses the whole plot, so every corner holds data
    s.label = label;
    s.x = {-0.5, 0, 0.5, 1, 1.5};
    s.y = {0.02 * std::sin(static_cast<double>(f.series.size())), -0.02, 0.02, -0.02, 0.0};
    f.series.push_back(s);
  }
  Style exportStyle = Style::light();  // as figure_export draws the one-column preset: 8 pt text
  exportStyle.legendBelowRatherThanOverData = true;
  exportStyle.fontSize *= 8.0f / 13.0f, exportStyle.titleSize *= 8.0f / 13.0f;
  const Point size{252, 187};
  TextBoxes c;
  const FigureLayout l = layoutFigure(f, c, exportStyle, {0, 0}, size);
  drawFigure(c, f, l, exportStyle);
  ASSERT_FALSE(c.boxes.empty());
  for (const TextBoxes::Box& b : c.boxes) {
    EXPECT_GE(b.min.x, -0.01f) << b.text;
    EXPECT_GE(b.min.y, -0.01f) << b.text;
    EXPECT_LE(b.max.x, size.x + 0.01f) << b.text;
    EXPECT_LE(b.max.y, size.y + 0.01f) << b.text;
  }
  // The y label left of the plot, each line centred on the plot's height where the figure allows it.
  ASSERT_FALSE(l.yLabelLines.empty());
  for (const std::string& line : l.yLabelLines) {
    const auto box =
        std::find_if(c.boxes.begin(), c.boxes.end(), [&](const TextBoxes::Box& b) { return b.text == line; });
    ASSERT_NE(box, c.boxes.end()) << line;
    EXPECT_LT(box->max.x, l.plotMin.x) << "left of the plot";
    const float middle = (l.plotMin.y + l.plotMax.y) / 2, half = (box->max.y - box->min.y) / 2;
    if (middle - half >= 8 && middle + half <= size.y - 8) {  // the figure's padding allows it: centred
      EXPECT_NEAR((box->min.y + box->max.y) / 2, middle, 0.01) << line;
    }
  }
  f.title.clear(), f.subtitle.clear();
  const FigureLayout untitled = layoutFigure(f, c, exportStyle, {0, 0}, size);
  ASSERT_EQ(untitled.legend.size(), 5u);
  std::set<float> lines;
  for (const auto& row : untitled.legend) {
    EXPECT_GT(row.min.y, untitled.plotMax.y) << "below the plot, not over its data";
    EXPECT_LE(row.max.y, size.y);
    lines.insert(row.min.y);
  }
  EXPECT_LT(lines.size(), 5u) << "packed, not one entry per line";
}

}  // namespace
}  // namespace sharelens
