// What the real window draws (Gui and GuiInput, tests/app/gui_session.hpp): `sharelens --screenshot` of every
// view on a real trained run and of checkpoints of every format, each with content and each unlike the
// others; dialogs over views; toolbars inside the window at three sizes; and every figure the views export,
// byte for byte what the headless `sharelens export` renders.
#include "tests/app/gui_session.hpp"

namespace sharelens::gui_test {
namespace {

// Issue 41 item 7: dialogs are opaque. The Open dialog drawn over two views as different as the Heads map (a
// colour heatmap) and the Spectrum (lines on white) is the same picture, pixel for pixel, but for its text
// cursor's blink: with ImGui's default popup opacity (94%) the views showed through and most of its pixels
// differed. Screenshots are taken on SIGUSR1 with the dialog open; the probe gives its rectangle.
TEST_F(GuiInput, TheOpenDialogIsOpaqueOverEveryView) {
  const fs::path shot = s_dir / "dialog-shot.png";
  const auto saved = [&](const std::string& name) { return s_dir / ("dialog-" + name); };
  std::vector<std::string> steps = {"waitfor '\"tab/Spectrum\"'"};
  int shots = 0;
  // Each view twice: as drawn, then with the dialog open over it (the state file gives the dialog's place).
  for (const auto& [view, drawn] :
       {std::pair{"Heads", "export/heads-layer0/pdf"}, {"Spectrum", "export/spectrum/pdf"}}) {
    const std::string v = view;
    const auto take = [&](const std::string& name) {
      return "kill -USR1 $app && waitfor '\"screenshots\":" + std::to_string(++shots) + "' && cp " +
             shellQuote(shot.string()) + " " + shellQuote(saved(name + ".png").string());
    };
    steps.insert(
        steps.end(),
        {"click tab/" + v, "waitfor '\"view\":\"" + v + "\"' && waitfor '\"" + drawn + "\"' && sleep 1",
         take(v), "frozen xdotool key ctrl+o", "waitfor '\"dialog/open\"' && sleep 0.5", take(v + "-open"),
         "cp " + shellQuote((s_dir / "ui-dialog.json").string()) + " " +
             shellQuote(saved(v + "-open.json").string()),
         "frozen xdotool key Escape", "sleep 0.5"});
  }
  // HOME: the dialog lists the same folder both times, whoever runs the test
  const auto s =
      session("dialog",
              "HOME=" + shellQuote(s_dir.string()) + " " + dataHome(s_dir / "xdg-dialog") + binaryOn("run") +
                  " --exit-after 90 --screenshot " + shellQuote(shot.string()) + " --screenshot-on-signal",
              steps);
  ASSERT_EQ(s.result.exitCode, 0) << s.result.err;
  std::map<std::string, Image> behind, dialogs;
  for (const std::string view : {"Heads", "Spectrum"}) {
    const Json probe = readState(saved(view + "-open.json"));
    ASSERT_TRUE(probe["rects"].contains("dialog/open")) << view;
    const Json rect = probe["rects"]["dialog/open"];  // centred: it may sit a pixel apart the second time
    const Image open = Image::load(saved(view + "-open.png")), shown = Image::load(saved(view + ".png"));
    ASSERT_GT(open.width, 0) << view;
    ASSERT_GT(shown.width, 0) << view;
    dialogs[view] = open.crop(rect[0], rect[1], rect[2], rect[3]);
    behind[view] = shown.crop(rect[0], rect[1], rect[2], rect[3]);
  }
  ASSERT_GT(dialogs["Heads"].pixels.size(), 100000u) << "a dialog of 560 px and more";
  ASSERT_EQ(dialogs["Heads"].width, dialogs["Spectrum"].width);
  ASSERT_EQ(dialogs["Heads"].height, dialogs["Spectrum"].height);
  // What the dialog covers differs between the two views over most of its place: a translucent dialog would
  // show it.
  EXPECT_GT(behind["Heads"].differenceFrom(behind["Spectrum"]), 0.3) << "the views look alike there";
  EXPECT_LT(dialogs["Heads"].differenceFrom(dialogs["Spectrum"]), 0.005)
      << "the views show through the Open dialog";
}

// Issue 38: the views build their figures through the figure registry (app/plot/figure_registry.hpp), so what
// a view exports and what `sharelens export --view` renders of the same model are one figure -- before, the
// two were built by separate code and already differed in names and subtitles. Byte for byte, per view; the
// Training view's panels and `export --view training` through plot::trainingPanels, with the runs labelled
// by core/run_groups' runLabel (the command used to label and smooth them by its own code). Every analysis
// view's first figure, with the analyses' default parameters on both sides.
// The figures a view shows of what was clicked in it are exported the same way: the Model view's histogram of
// a tensor (`--view tensor-histogram --tensor NAME`) and the Heads view's spectrum of a clicked pair
// (`--view head-pair-spectrum --layer L --pair A,B`, read back from the view's probe).
TEST_F(GuiInput, AViewsExportIsTheHeadlessExportOfTheSameFigure) {
  const std::string tensor = Checkpoint::open(resolveModelPath(s_dir / "run"))->tensorNames()[2];
  // The first row of the Heads view's lowest-rank pairs (the heads/lowest/ item nearest the top).
  const std::string firstPair =
      "/usr/bin/python3 -c 'import json, sys; items = json.load(open(sys.argv[1]))[\"items\"]; "
      "print(min((k for k in items if k.startswith(\"heads/lowest/\")), key=lambda k: items[k][1]))' " +
      shellQuote((s_dir / "ui-same-head-pair-spectrum.json").string());
  struct Case {
    std::string view, figure, button;
    std::vector<std::string> before;  // script steps that make the figure
    std::string args;                 // of `export`, beyond --view, --input and --out
  };
  const std::vector<Case> cases = {
      {"Heads", "heads", "heads-layer0"},
      {"Layers", "layers", "layers-q"},
      {"Spectrum", "spectrum", "spectrum"},
      {"MASA", "masa-coefficients", "masa-coefficients"},
      {"DirectShare", "directshare", "directshare"},
      {"Embedding", "embedding-spectrum", "embedding-spectrum"},
      {"ESD", "esd-alpha", "esd-alpha"},
      {"Training", "training", "training-loss"},
      {"Model",
       "tensor-histogram",
       "tensor-histogram-" + fileStem(tensor),
       {"click tensor/" + tensor, "waitfor '\"ready\":true'"},
       "--tensor " + tensor},
      {"Heads",
       "head-pair-spectrum",
       "head-pair-spectrum",
       {"waitfor '\"heads/lowest/'", "sleep 1", "key=$(" + firstPair + ") && click \"$key\""}},
  };
  for (const Case& c : cases) {
    const fs::path data = s_dir / ("xdg-same-" + c.figure);
    std::vector<std::string> script = c.before;
    for (const std::string& step :
         {"waitfor '\"export/" + c.button + "/svg\"'", std::string("sleep 1"),
          "click export/" + c.button + "/svg", std::string("waitfor '\"export/path\"'"),
          std::string("click export/save"),
          "for i in $(seq 100); do ls " + shellQuote((data / "sharelens" / "exports").string()) +
              "/*.svg >/dev/null 2>&1 && break; sleep 0.2; done; sleep 0.5"})
      script.push_back(step);
    const auto s =
        session("same-" + c.figure,
                dataHome(data) + binaryOn("run") + " --view " + c.view + " --exit-after 90", script);
    ASSERT_EQ(s.result.exitCode, 0) << c.view << ": " << s.result.err;
    std::vector<fs::path> written;
    for (const auto& e : fs::directory_iterator(data / "sharelens" / "exports")) written.push_back(e.path());
    ASSERT_EQ(written.size(), 1u) << c.view;
    std::string args = c.args;
    if (c.figure == "head-pair-spectrum") {  // the clicked pair, "layer L: A - B", as export names it
      const std::string pair = readState(s.state)["state"]["heads/pair"].get<std::string>();
      const size_t colon = pair.find(": "), dash = pair.find(" - ");
      ASSERT_TRUE(pair.rfind("layer ", 0) == 0 && colon != std::string::npos && dash != std::string::npos)
          << pair;
      args = "--layer " + pair.substr(6, colon - 6) + " --pair " + pair.substr(colon + 2, dash - colon - 2) +
             "," + pair.substr(dash + 3);
    }
    const fs::path headless = s_dir / ("same-" + c.figure + ".svg");
    const auto r = runProcess(kBinary + " export --view " + c.figure + " --input " +
                              shellQuote((s_dir / "run").string()) + " --out " +
                              shellQuote(headless.string()) + " " + args);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_EQ(readTextFile(written[0]), readTextFile(headless)) << c.view << ": " << written[0];
  }
}

// Issue 41 item 4: Compress on a ShareLens checkpoint (composed weights: shared blocks, LoRA, MASA) offers to
// write it as a plain Hugging Face checkpoint -- what only `sharelens export-hf` did before -- and opens it.
TEST_F(GuiInput, CompressWritesASharedCheckpointAsAPlainOneAndOpensIt) {
  const fs::path data = s_dir / "xdg-plain";
  const auto s =
      session("plain", dataHome(data) + binaryOn("run") + " --view masa --exit-after 90",
              {"click masa/tab/compress", "click compress/write-plain",
               "waitfor '\"workspace/model\":\"" + (data / "sharelens" / "exports").string() + "'"});
  ASSERT_EQ(s.result.exitCode, 0) << s.result.err;
  const fs::path exports = data / "sharelens" / "exports";
  std::vector<fs::path> written;
  for (const auto& e : fs::directory_iterator(exports)) written.push_back(e.path());
  ASSERT_EQ(written.size(), 1u);
  EXPECT_TRUE(fs::exists(written[0] / "model.safetensors"));
  EXPECT_TRUE(fs::exists(written[0] / "config.json"));
  // The plain copy is a Llama model with every layer's own attention weights.
  const auto plain = Checkpoint::open(written[0]);
  EXPECT_TRUE(plain->find("model.layers.0.self_attn.q_proj.weight") != nullptr);
  EXPECT_EQ(openModelView(*plain).family, Family::Llama);
}

TEST_F(Gui, EveryViewRendersContentAndTheViewsDiffer) {
  std::map<std::string, Image> shots;
  for (const std::string& view : viewLabels()) {
    const fs::path png = s_dir / (std::string(view) + ".png");
    const auto r =
        runProcess(xvfb(kBinary + " --screenshot " + shellQuote(png.string()) + " --frames 8 --view " + view +
                        " " + shellQuote((s_dir / "run").string())));
    ASSERT_EQ(r.exitCode, 0) << view << ": " << r.err;
    const Image img = Image::load(png);
    ASSERT_EQ(img.width, 1600) << view;
    EXPECT_GT(img.distinctColors(), 40u) << view << " looks blank";
    EXPECT_GT(img.inked(), 0.03) << view << " has almost nothing drawn";
    shots[view] = img;
  }
  for (auto a = shots.begin(); a != shots.end(); ++a)
    for (auto b = std::next(a); b != shots.end(); ++b)
      EXPECT_GT(a->second.differenceFrom(b->second), 0.02)
          << a->first << " and " << b->first << " look the same";
}

// Issue 39 item 4: a Hugging Face checkpoint, the same model as pytorch_model.bin and as a Q8_0 GGUF file,
// and a llama2.c file open in the analysis views (that the copies' numbers are their original's is
// peer_torch_bin's and peer_gguf's to check).
TEST_F(Gui, AHuggingFacePyTorchGgufOrLlama2cCheckpointOpensInTheAnalysisViews) {
  for (const char* view : {"Model", "Heads", "Embedding"}) {
    std::map<std::string, Image> shots;
    for (const char* input : {"qwen", "qwen-torch", "qwen.gguf", "stories.bin"}) {
      const fs::path png = s_dir / (std::string(input) + "-" + view + ".png");
      const auto r =
          runProcess(xvfb(kBinary + " --screenshot " + shellQuote(png.string()) + " --frames 6 --view " +
                          view + " " + shellQuote((s_dir / input).string())));
      ASSERT_EQ(r.exitCode, 0) << input << ": " << r.err;
      shots[input] = Image::load(png);
      EXPECT_GT(shots[input].distinctColors(), 40u) << input << " " << view;
    }
    EXPECT_GT(shots["qwen"].differenceFrom(shots["stories.bin"]), 0.02) << view << ": another model";
  }
}

// Issue 41 items 1 and 3: at 1024 x 700 and up, the Designer shows its layer -> block graph (it was hidden
// at 1024) and its FFN column (it was clipped), the ESD view its density (it was drawn below a screen of
// blank space) and alpha plot (squashed) one above the other, each tall enough to read, and every view's
// toolbar -- its Export buttons, the Training view's log y -- lies inside the window, wrapping onto another
// line rather than running off the right edge (at 1024 the Training view's log y and Export buttons and the
// ESD view's were off-screen). One session per size clicks through the views; the probe gives each toolbar
// item's rectangle and the window's size.
TEST_F(GuiInput, EveryViewsToolbarStaysInsideTheWindowAtThreeSizes) {
  // (view, the probe key that says it has been drawn); every view the app lists must be here
  const std::vector<std::pair<std::string, std::string>> views = {
      {"Spectrum", "export/spectrum/pdf"},
      {"Heads", "export/heads-layer0/pdf"},
      {"Layers", "export/layers-q/pdf"},
      {"DirectShare", "export/directshare/pdf"},
      {"ESD", "esd/plot/density"},
      {"Training", "training/log-y"},
      {"Designer", "designer/graph"},
      {"Model", "model/diff-with"},
      {"MASA", "export/masa-coefficients/pdf"},
      {"Embedding", "export/embedding-spectrum/pdf"},
      {"Experiments", "experiments/steps"}};
  for (const std::string& label : viewLabels())
    ASSERT_TRUE(std::any_of(views.begin(), views.end(), [&](const auto& v) { return v.first == label; }))
        << label << ": a view this test does not lay out (add it and the probe key it draws)";
  // An ESD row to click (its density is drawn): the one the alpha header's sort puts on top, in sight at
  // every size (the table scrolls).
  const std::string matrix = alphaExtremes().first;
  ASSERT_FALSE(matrix.empty());
  // What each view's controls are named (the probe's keys): checked inside the window at every size.
  const std::vector<std::string> controls = {"export/",         "training/",    "run/",
                                             "model/diff-with", "experiments/", "masa/tab/"};
  for (const std::string size : {"1024x700", "1366x768", "1600x1000"}) {  // the last fills the Xvfb screen
    const fs::path state = s_dir / ("ui-layout-" + size + ".json");
    // The first click waits for the window to be mapped under the pointer (a click before that is lost).
    std::vector<std::string> steps = {"waitfor '\"tab/Spectrum\"'", "sleep 1"};
    for (const auto& [view, key] : views) {
      steps.push_back("click tab/" + view);
      if (view == "Experiments")  // an experiment to show: the Designer's topology beside its baseline
        steps.push_back("waitfor '\"experiments/from-designer\"' && click experiments/from-designer");
      if (view == "ESD")
        steps.push_back(
            "waitfor '\"export/esd-alpha/pdf\"' && click esd/header/alpha && waitfor '\"esd/first\":\"" +
            matrix + "\"' && click esd/" + matrix);
      steps.push_back("waitfor '\"view\":\"" + view + "\"' && waitfor '\"" + key + "\"' && sleep 0.5");
      steps.push_back("cp " + shellQuote(state.string()) + " " +
                      shellQuote((s_dir / ("layout-" + size + "-" + view + ".json")).string()));
    }
    const auto s =
        session("layout-" + size, binaryOn("run") + " --size " + size + " --exit-after 120", steps);
    ASSERT_EQ(s.result.exitCode, 0) << size << ": " << s.result.err;
    for (const auto& [view, key] : views) {
      const Json probe = readState(s_dir / ("layout-" + size + "-" + view + ".json"));
      const int width = probe["window"][0], height = probe["window"][1];
      EXPECT_EQ(std::to_string(width) + "x" + std::to_string(height), size);
      if (view == "Designer") {  // the layer -> block graph: beside the column, or below it at 1024 x 700
        ASSERT_TRUE(probe["rects"].contains(key)) << size << ": the Designer shows no graph";
        const Json& r = probe["rects"][key];
        EXPECT_TRUE(r[0] >= 0 && r[1] >= 0 && r[2] <= width && r[3] <= height)
            << size << ": graph at " << r.dump();
        EXPECT_GE(r[3].get<int>() - r[1].get<int>(), 200) << size << ": graph at " << r.dump();
        // wide enough to show both columns of blocks (beside the column at 1366 it had 190 px)
        EXPECT_GE(r[2].get<int>() - r[0].get<int>(), 240) << size << ": graph at " << r.dump();
        // Each FFN cell inside the window and inside the painted column (it was clipped at 1024), wide
        // enough for its label ("F3 +LoRA"), right of its layer's attention cell and clear of the graph.
        ASSERT_TRUE(probe["rects"].contains("designer/column")) << size;
        const Json& column = probe["rects"]["designer/column"];
        int ffnCells = 0;
        for (const auto& [item, cell] : probe["rects"].items())
          if (item.rfind("designer/cell/ffn/", 0) == 0) {
            ++ffnCells;
            EXPECT_TRUE(cell[0] >= 0 && cell[1] >= 0 && cell[2] <= width && cell[3] <= height)
                << size << ": " << item << " at " << cell.dump() << " is outside the window";
            EXPECT_TRUE(cell[0] >= column[0] && cell[2] <= column[2] && cell[1] >= column[1] &&
                        cell[3] <= column[3])
                << size << ": " << item << " at " << cell.dump() << " is outside its column "
                << column.dump();
            EXPECT_GE(cell[2].get<int>() - cell[0].get<int>(), 60)
                << size << ": " << item << " at " << cell.dump();
            const std::string attention = "designer/cell/attention/" + item.substr(18);
            ASSERT_TRUE(probe["rects"].contains(attention)) << size << ": " << attention;
            EXPECT_LE(probe["rects"][attention][2].get<int>(), cell[0].get<int>())
                << size << ": " << item << " overlaps " << attention;
            EXPECT_TRUE(cell[2] <= r[0] || cell[0] >= r[2] || cell[3] <= r[1] || cell[1] >= r[3])
                << size << ": " << item << " at " << cell.dump() << " overlaps the graph at " << r.dump();
          }
        EXPECT_GT(ffnCells, 0) << size << ": the Designer drew no FFN column";
        continue;
      }
      if (view == "ESD") {  // the density above the alpha plot, both inside the window and readable
        ASSERT_TRUE(probe["rects"].contains("esd/plot/density") && probe["rects"].contains("esd/plot/alpha"))
            << size << ": the ESD view's plots were not drawn";
        const Json &density = probe["rects"]["esd/plot/density"], &alpha = probe["rects"]["esd/plot/alpha"];
        for (const Json* r : {&density, &alpha}) {
          EXPECT_TRUE((*r)[0] >= 0 && (*r)[1] >= 0 && (*r)[2] <= width && (*r)[3] <= height)
              << size << ": ESD plot at " << r->dump();
          EXPECT_GE((*r)[3].get<int>() - (*r)[1].get<int>(), 150) << size << ": ESD plot at " << r->dump();
          EXPECT_GE((*r)[2].get<int>() - (*r)[0].get<int>(), 250) << size << ": ESD plot at " << r->dump();
        }
        EXPECT_LT(density[1].get<int>(), height / 3) << size << ": the density starts below blank space";
        EXPECT_LE(density[3].get<int>(), alpha[1].get<int>()) << size << ": the plots overlap";
      }
      int toolbar = 0, runControls = 0;
      for (const auto& [item, r] : probe["rects"].items()) {
        // the run table's buttons too: its columns fit 1024 px instead of scrolling or cutting them off
        runControls += item.rfind("run/", 0) == 0;
        if (std::none_of(controls.begin(), controls.end(),
                         [&](const std::string& c) { return item.rfind(c, 0) == 0; }))
          continue;
        ++toolbar;
        EXPECT_TRUE(r[0] >= 0 && r[1] >= 0 && r[2] <= width && r[3] <= height)
            << size << " " << view << ": " << item << " at " << r.dump() << " is outside the window";
      }
      // Exports in png, svg and pdf; the Model view's comparison; the Experiments view's seeds and steps.
      EXPECT_GE(toolbar, view == "Model"         ? 1
                         : view == "Experiments" ? 2
                                                 : 3)
          << size << " " << view << ": its toolbar was not drawn";
      if (view == "Training") {
        EXPECT_GE(runControls, 2) << size << ": the run's analyse and remove";
      }
    }
  }
}

// Issue 41 item 5: a row of the model's lowest-rank head pairs, clicked, shows that pair's spectrum (it only
// moved the map to the pair's layer before).
TEST_F(GuiInput, ClickingALowestRankPairShowsItsSpectrum) {
  const fs::path after = s_dir / "after-lowest.json";
  // The table's first row: the heads/lowest/ item nearest the top (keys sort by name, not by row).
  const std::string firstRow =
      "/usr/bin/python3 -c 'import json, sys; items = json.load(open(sys.argv[1]))[\"items\"]; "
      "print(min((k for k in items if k.startswith(\"heads/lowest/\")), key=lambda k: items[k][1]))' " +
      shellQuote((s_dir / "ui-lowest.json").string());
  const auto s = session("lowest", binaryOn("qwen") + " --view heads --exit-after 60",
                         {"waitfor '\"heads/lowest/'", "sleep 1", "key=$(" + firstRow + ") && click \"$key\"",
                          "waitfor '\"heads/pair\":\"layer'", "flat > " + shellQuote(after.string())});
  ASSERT_EQ(s.result.exitCode, 0) << s.result.err;
  const Json probe = readState(after);
  std::string key;  // heads/lowest/<layer>/<a>-<b> of the first row, the one clicked
  int top = 1 << 30;
  for (const auto& [item, at] : probe["items"].items())
    if (item.rfind("heads/lowest/", 0) == 0 && at[1].get<int>() < top) key = item, top = at[1].get<int>();
  ASSERT_FALSE(key.empty());
  const std::string rest = key.substr(std::string("heads/lowest/").size());
  const std::string layer = rest.substr(0, rest.find('/')), pair = rest.substr(rest.find('/') + 1);
  // ("flat" took the spaces out of the file: "layer 0: q0 - q1" reads "layer0:q0-q1".)
  EXPECT_EQ(probe["state"]["heads/pair"], "layer" + layer + ":" + pair);
}

// Issue 41 item 5: the heads map shows one projection's heads when asked, and its export is named for it. The
// map of all pairs stays the default: it is the paper's own (LRS Sec. 3.1, "pairwise differences between all
// attention weight matrices within each layer"; its Fig. 2a finds the lowest pairs among heads rather than
// across Q, K and V), but most of its cells cross projections, and one projection's block is what chooses an
// adapter rank for that projection.
TEST_F(GuiInput, TheHeadsMapShowsOneProjectionsHeadsWhenChosen) {
  const fs::path state = s_dir / "ui-heads-q.json", before = s_dir / "heads-before.json";
  const auto s = session("heads-q", binaryOn("qwen") + " --view heads --exit-after 60",
                         {"waitfor '\"heads/rows\":[\"'", "sleep 0.5",
                          "cp " + shellQuote(state.string()) + " " + shellQuote(before.string()),
                          "click heads/choice", "waitfor '\"heads/choice/q\"' && click heads/choice/q",
                          "waitfor '\"export/heads-layer0-q/pdf\"'", "sleep 0.5"});
  ASSERT_EQ(s.result.exitCode, 0) << s.result.err;
  const auto rows = [](const Json& probe) {
    return probe["state"]["heads/rows"].get<std::vector<std::string>>();
  };
  const std::vector<std::string> all = rows(readState(before)), q = rows(readState(state));
  EXPECT_TRUE(std::any_of(all.begin(), all.end(), [](const std::string& r) { return r[0] == 'k'; }))
      << "all pairs: q, k, v (and o) heads";
  ASSERT_FALSE(q.empty());
  EXPECT_LT(q.size(), all.size());
  for (const std::string& r : q) EXPECT_EQ(r[0], 'q') << r;
}

// The Open dialog's browser lists llama2.c and PyTorch files, and a double click opens one.
TEST_F(GuiInput, TheOpenDialogsBrowserOpensALlama2cFile) {
  const fs::path home = s_dir / "llama2c-home";  // s_dir fills with other tests' files, below the list's fold
  const auto s =
      session("open-bin", "HOME=" + shellQuote(home.string()) + " " + kBinary + " --exit-after 60",
              {"waitfor '\"frame\"'", "sleep 0.5", "frozen xdotool key ctrl+o", "hover browser/stories.bin",
               "frozen xdotool click --repeat 2 --delay 80 1", "waitfor '\"workspace/model\"'", "sleep 0.3"});
  ASSERT_EQ(s.result.exitCode, 0) << s.result.err;
  EXPECT_EQ(readState(s.state)["state"]["workspace/model"], (home / "stories.bin").string());
}

// The figures `export` renders, as its usage lists them ("render a figure (a, b, ...)"), which it takes from
// the figure registry and the file figures' table: a figure added there is exported here too.
std::vector<std::string> exportFigureNames() {
  const std::string usage = runProcess(kBinary + " --help").out;
  const std::string opening = "render a figure (";
  const size_t from = usage.find(opening);
  if (from == std::string::npos) return {};
  const size_t begin = from + opening.size(), end = usage.find(')', begin);
  std::vector<std::string> names;
  std::stringstream list(usage.substr(begin, end - begin));
  for (std::string name; std::getline(list, name, ',');)
    if (const size_t start = name.find_first_not_of(' '); start != std::string::npos)
      names.push_back(name.substr(start));
  return names;
}

TEST_F(Gui, HeadlessExportOfEveryView) {
  // Figures of another input, exported by the tests that make one: an experiment's output (test_experiment
  // compares them with `experiment report --figures` byte for byte), a compression sweep's
  // (test_compress_cli), and a run's matrices over its checkpoints (below, with --matrices).
  const std::set<std::string> elsewhere = {"experiment-forest", "experiment-bars", "experiment-curves",
                                           "compression-sweep", "rank-vs-step"};
  const std::vector<std::string> views = exportFigureNames();
  ASSERT_GE(views.size(), 20u) << "export's usage no longer lists its figures";
  const std::string tensor = Checkpoint::open(resolveModelPath(s_dir / "run"))->tensorNames().front();
  for (const std::string& view : views) {
    if (elsewhere.count(view)) continue;
    // `topology` from its file; every other figure (`topology-graph` too: its run's topology) from the run
    const std::string input = view == "topology" ? "t.json" : "run";
    // The three formats of one figure from one command (--formats: one analysis), named after --out.
    const auto r =
        runProcess(kBinary + " export --view " + view + " --input " + shellQuote((s_dir / input).string()) +
                   " --out " + shellQuote((s_dir / ("export-" + view + ".png")).string()) +
                   " --formats png,svg,pdf --tokens 512 --embedding-loss-tokens 1024" +
                   (view == "masa-correlation" ? " --proj q" : "") +
                   (view == "tensor-histogram" ? " --tensor " + tensor : "") +
                   (view == "head-pair-spectrum" ? " --layer 1 --pair q0,o3" : ""));
    ASSERT_EQ(r.exitCode, 0) << view << ": " << r.err;
    for (const char* ext : {"png", "svg", "pdf"}) {
      const fs::path out = s_dir / ("export-" + view + "." + ext);
      ASSERT_TRUE(fs::exists(out)) << out << " " << r.out;
      EXPECT_GT(fs::file_size(out), 1000u) << view << "." << ext;
    }
  }
  // A format of --formats is the file that format's own --out writes, byte for byte (the SVG: cairo's PDF
  // carries its creation date).
  const fs::path alone = s_dir / "alone-spectrum.svg";
  auto single = runProcess(kBinary + " export --view spectrum --input " +
                           shellQuote((s_dir / "run").string()) + " --out " + shellQuote(alone.string()));
  ASSERT_EQ(single.exitCode, 0) << single.err;
  EXPECT_EQ(readTextFile(alone), readTextFile(s_dir / "export-spectrum.svg"));
  single = runProcess(kBinary + " export --view spectrum --input " + shellQuote((s_dir / "run").string()) +
                      " --out " + shellQuote(alone.string()) + " --formats svg,csv");
  EXPECT_EQ(single.exitCode, 2);
  EXPECT_NE(single.err.find("unknown export format"), std::string::npos) << single.err;
  EXPECT_NE(single.err.find("found csv"), std::string::npos) << single.err;
  single = runProcess(kBinary + " export --view spectrum --input " + shellQuote((s_dir / "run").string()) +
                      " --out " + shellQuote((s_dir / "").string()) + " --formats svg");
  EXPECT_EQ(single.exitCode, 2);
  EXPECT_NE(single.err.find("names no file"), std::string::npos) << single.err;
  // A run's matrices through its checkpoints (10, 20, 30).
  const fs::path ranks = s_dir / "export-rank-vs-step.pdf";
  auto r =
      runProcess(kBinary + " export --view rank-vs-step --matrices layers.0.q,layers.1.q.head.0 --input " +
                 shellQuote((s_dir / "run").string()) + " --out " + shellQuote(ranks.string()));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_GT(fs::file_size(ranks), 1000u);
  // The training curves as CSV: a header and one row per step the run logged; the same bytes, and the view's
  // panels as a PDF, from --formats (any case).
  const fs::path csv = s_dir / "training.csv";
  r = runProcess(kBinary + " export --view training --input " + shellQuote((s_dir / "run").string()) +
                 " --out " + shellQuote(csv.string()));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  r = runProcess(kBinary + " export --view training --input " + shellQuote((s_dir / "run").string()) +
                 " --out " + shellQuote((s_dir / "both.CSV").string()) + " --formats CSV,pdf");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(readTextFile(s_dir / "both.csv"), readTextFile(csv));
  EXPECT_GT(fs::file_size(s_dir / "both.pdf"), 1000u);
  std::ifstream in(csv);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  MetricsReader reader(s_dir / "run" / "metrics.jsonl");
  reader.poll();
  ASSERT_EQ(lines.size(), reader.points().size() + 1);
  EXPECT_EQ(lines[0],
            "run,step,tokens,elapsed_s,loss,val_loss,lr,grad_norm,tokens_per_s,postshare_penalty,"
            "tensor_peak_bytes,rss_peak_bytes");
  EXPECT_EQ(lines.back().rfind("gui-test-cycle-masa,30,", 0), 0u) << lines.back();
  const auto bad = runProcess(kBinary + " export --view nonsense --input " +
                              shellQuote((s_dir / "run").string()) + " --out /tmp/x.png");
  EXPECT_EQ(bad.exitCode, 2);
  EXPECT_NE(bad.err.find("unknown view"), std::string::npos);
}

TEST_F(Gui, UnreadableInputIsAnErrorInThePanelNotACrash) {
  const fs::path bad = s_dir / "broken.safetensors";
  std::ofstream(bad) << "not a safetensors file at all";
  const fs::path png = s_dir / "broken.png";
  const auto r = runProcess(xvfb(kBinary + " --screenshot " + shellQuote(png.string()) + " --frames 6 " +
                                 shellQuote(bad.string())));
  EXPECT_EQ(r.exitCode, 0) << "the window stays up: " << r.err;
  EXPECT_GT(Image::load(png).distinctColors(), 10u);
}

}  // namespace
}  // namespace sharelens::gui_test
