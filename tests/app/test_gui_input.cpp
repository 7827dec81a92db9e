// Scripted input on the real window (GuiInput, tests/app/gui_session.hpp): what clicking, dragging and typing
// in the Model, Designer, Training and Experiments views does, checked through the state the app reports and
// the files it writes.
#include "core/assets.hpp"
#include "core/experiment.hpp"
#include "tests/app/gui_session.hpp"

namespace sharelens::gui_test {
namespace {

// Model view: clicking a tensor's row opens its details, computed over every element.
TEST_F(GuiInput, ClickingATensorShowsItsDetails) {
  const auto ckpt = Checkpoint::open(resolveModelPath(s_dir / "run"));
  ASSERT_GE(ckpt->tensorNames().size(), 3u);
  const std::string tensor = ckpt->tensorNames()[2];  // the third row, on screen without scrolling
  const auto s = session("model", binaryOn("run") + " --view model --exit-after 60",
                         {"click tensor/" + tensor, "waitfor '\"ready\":true'", "sleep 0.5"});
  ASSERT_EQ(s.result.exitCode, 0) << s.result.err;
  const Json details = readState(s.state)["state"]["model/details"];
  EXPECT_EQ(details["tensor"], tensor);
  EXPECT_EQ(details["ready"], true);
  EXPECT_EQ(details["numel"].get<uint64_t>(), ckpt->at(tensor).info->numel);
  EXPECT_GT(details["std"].get<double>(), 0.0);
}

// Issue 41 item 7: before a run's first evaluation the validation panel says so in words instead of drawing
// an empty 0-1 plot; with evaluations it plots them.
TEST_F(GuiInput, TheValidationPanelSaysNoEvaluationYetBeforeTheFirst) {
  const fs::path fresh = s_dir / "not-evaluated";
  fs::create_directories(fresh);
  fs::copy(s_dir / "run", fresh, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  std::ifstream in(fresh / "metrics.jsonl");
  std::string kept;
  for (std::string line; std::getline(in, line);) {
    if (line.find("\"val_loss\"") == std::string::npos) {
      kept += line + "\n";
      continue;
    }
    Json point = Json::parse(line);
    point.erase("val_loss");  // as logged before the first evaluation
    kept += point.dump() + "\n";
  }
  in.close();
  std::ofstream(fresh / "metrics.jsonl") << kept;
  for (const auto& [input, expected] : {std::pair{"not-evaluated", "noevaluationyet"}, {"run", "plot"}}) {
    const auto s =
        session(std::string("validation-") + input, binaryOn(input) + " --view training --exit-after 60",
                {"waitfor '\"training/validation\":\"" + std::string(expected) + "\"'"});
    EXPECT_EQ(s.result.exitCode, 0) << input << ": " << s.result.err;
  }
}

// Issue 41 item 8: the Model view compares the shown checkpoint with another step of its run, tensor by
// tensor (core/checkpoint_diff, as `sharelens diff`): the most changed first, as the library finds them.
TEST_F(GuiInput, TheModelViewShowsEachTensorsDifferenceFromAnotherStep) {
  const auto latest = Checkpoint::open(resolveModelPath(s_dir / "run"));
  const auto early = Checkpoint::open(checkpointDirectory(s_dir / "run", 10));
  const CheckpointDifference expected = diffCheckpoints(*latest, *early);
  ASSERT_GE(expected.tensors.size(), 3u);
  const auto s = session("model-diff", binaryOn("run") + " --view model --exit-after 60",
                         {"click model/diff-with", "click 'model/diff-with/step 10'",
                          "waitfor '\"model/diff\":{\"other\"' && waitfor '\"ready\":true'", "sleep 0.5"});
  ASSERT_EQ(s.result.exitCode, 0) << s.result.err;
  const Json diff = readState(s.state)["state"]["model/diff"];
  EXPECT_EQ(diff["other"], checkpointDirectory(s_dir / "run", 10).string());
  ASSERT_EQ(diff["top"].size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(diff["top"][i][0], expected.tensors[i].name);
    EXPECT_DOUBLE_EQ(diff["top"][i][1].get<double>(), expected.tensors[i].relative);
  }
  EXPECT_GT(expected.tensors[0].relative, 0) << "ten steps of training changed something";
}

// File > Open (Ctrl+O) lists the home folder with run directories marked; a double-click on one opens it.
// Both are typed while the app is stopped: a key's press and release, and a double-click's two clicks, each
// reach it within one frame, as quick input does on a slow frame. ImGui 1.86 alone sees neither (CI saw both
// fail under load); the platform layer latches them.
TEST_F(GuiInput, TheOpenDialogsBrowserOpensARunWithADoubleClick) {
  const auto s =
      session("open", "HOME=" + shellQuote(s_dir.string()) + " " + kBinary + " --exit-after 60",
              {"waitfor '\"frame\"'", "sleep 0.5", "frozen xdotool key ctrl+o", "hover browser/run",
               "frozen xdotool click --repeat 2 --delay 80 1", "waitfor '\"workspace/model\"'", "sleep 0.3"});
  ASSERT_EQ(s.result.exitCode, 0) << s.result.err;
  const std::string model = readState(s.state)["state"]["workspace/model"];
  EXPECT_EQ(fs::path(model).parent_path().parent_path(), s_dir / "run")
      << model << ": not a checkpoint of the run";
}

// Issue 41 item 2: a file that fails to open leaves the model being worked on where it was, and only what
// opened goes to Recent. The path is typed into the Open dialog (Ctrl+O puts the cursor in its path box).
TEST_F(GuiInput, AFailedOpenKeepsTheCurrentModelAndStaysOutOfRecent) {
  const fs::path broken = s_dir / "broken-open.safetensors";
  std::ofstream(broken) << "not a safetensors file at all";
  const fs::path after = s_dir / "after-failed-open.json";
  const auto s = session(
      "failed-open", dataHome(s_dir / "xdg-failed-open") + binaryOn("qwen") + " --exit-after 60",
      {"waitfor '\"workspace/model\"'", "frozen xdotool key ctrl+o", "hover open/path",
       "xdotool type --delay 5 " + shellQuote(broken.string()),
       "xdotool keydown Return; sleep 0.3; xdotool keyup Return",  // held across a frame, as a person does
       "waitfor '\"errors/count\":1'", "sleep 1", "flat > " + shellQuote(after.string())});
  ASSERT_EQ(s.result.exitCode, 0) << s.result.err;
  const Json state = readState(after)["state"];
  EXPECT_EQ(state.value("workspace/model", Json()), (s_dir / "qwen").string())
      << "the failed open replaced the model";
  EXPECT_NE(state.value("errors/notice", "").find("broken-open.safetensors"), std::string::npos)
      << "the error shows as a notice";
  const std::vector<std::string> recent = state.value("recent", std::vector<std::string>{});
  EXPECT_EQ(recent, std::vector<std::string>{(s_dir / "qwen").string()}) << "Recent holds only what opened";
}

// Issue 41 item 1: the Designer's U slider keeps what it is set to and rebuilds the current pattern with it
// (it snapped back on every frame before, so a U could only come from a shipped preset); a pattern's
// button then builds that pattern with the same U. A click 24 px into the slider sets it near its minimum.
// The name follows the design (describeDesign: its pattern, L, U, then its LoRA and embeddings) until the
// user types one, which then stays through edits.
TEST_F(GuiInput, TheDesignersUniqueBlocksSliderRebuildsThePatternAndStaysWhereItIsSet) {
  const fs::path after = s_dir / "after-slider.json", named = s_dir / "after-naming.json";
  const auto s =
      session("designer-u", dataHome(s_dir / "xdg-designer") + kBinary + " --view designer --exit-after 60",
              {"waitfor '\"designer/topology\"'", "click designer/unique", "sleep 0.5",
               "waitfor '\"name\":\"cycle-L6-U1-'", "click designer/pattern/sequence",
               "waitfor '\"name\":\"sequence-L6-U1-'", "sleep 0.5", "flat > " + shellQuote(after.string()),
               "click designer/name", "frozen xdotool key ctrl+a", "xdotool type --delay 5 mine",
               "waitfor '\"name\":\"mine\"'", "click designer/pattern/cycle",
               "waitfor '\"pattern\":\"cycle\"'", "sleep 0.5", "flat > " + shellQuote(named.string())});
  ASSERT_EQ(s.result.exitCode, 0) << s.result.err;
  const Json designed = readState(after)["state"]["designer/topology"];
  EXPECT_EQ(designed["slider_u"], 1) << "the slider snapped back";
  EXPECT_EQ(designed["unique"], 1);
  EXPECT_EQ(designed["pattern"], "sequence");
  EXPECT_EQ(readState(named)["state"]["designer/topology"]["name"], "mine") << "the user's name stays";
}

// Issue 41 item 1: the Designer designs more than the layer pattern. Ticking MASA makes the attention matrix
// atoms (and takes head sharing off: the two parameterisations exclude each other), unticking the tied
// embeddings unties them, and a click near the start of the attention LoRA slider lowers its rank; the
// topology holds each and the name says it (describeDesign: "-masa<S>-<projections>", "-tied" only when tied,
// "-lora<r>" only with a rank).
TEST_F(GuiInput, TheDesignersMasaEmbeddingAndLoraControlsChangeTheDesign) {
  const fs::path before = s_dir / "designer-controls-before.json", after = s_dir / "designer-controls.json";
  const auto s =
      session("designer-controls",
              dataHome(s_dir / "xdg-designer-controls") + kBinary + " --view designer --exit-after 60",
              {"waitfor '\"designer/topology\"'", "sleep 0.5", "flat > " + shellQuote(before.string()),
               "click designer/masa", "waitfor '\"masa\":true'", "click designer/tied",
               "waitfor '\"tied_embeddings\":false'", "click designer/attention-lora", "sleep 0.5",
               "flat > " + shellQuote(after.string())});
  ASSERT_EQ(s.result.exitCode, 0) << s.result.err;
  const Json was = readState(before)["state"]["designer/topology"],
             is = readState(after)["state"]["designer/topology"];
  EXPECT_EQ(was["masa"], false);
  EXPECT_EQ(was["tied_embeddings"], true);
  EXPECT_EQ(is["masa"], true);
  EXPECT_EQ(is["head_sharing"], 0) << "no head sharing under MASA";
  EXPECT_EQ(is["tied_embeddings"], false);
  EXPECT_NE(is["attention_lora"], was["attention_lora"]) << "the slider did not set the rank";
  EXPECT_LT(is["attention_lora"].get<int>(), 16) << "24 px into a 120 px slider of 0..64";
  const std::string name = is["name"];
  EXPECT_NE(name.find("-masa"), std::string::npos) << name;
  EXPECT_EQ(name.find("-tied"), std::string::npos) << name;
  EXPECT_EQ(name.find("-lora") != std::string::npos, is["attention_lora"].get<int>() > 0) << name;
}

// Issue 41 item 1: dragging down the Designer's attention column with brush block 0 paints every layer the
// pointer passed, also those a quick stroke crosses between two frames (here one jump from layer 1 to layer
// 4: before, layers 2 and 3 kept their blocks), leaves the FFN column as it was and names the design after
// what it now is. The Designer opens on the demo design (Cycle, 0 1 2 0 1 2), so every layer of the stroke
// but layer 3 changes block. Then the brush dragged to its end (a new block) and a stroke over FFN layers 0
// to 2 gives the three one new block: the brush follows its block through the renumbering (before, each layer
// after the first got another block).
TEST_F(GuiInput, ADragDownTheDesignersColumnPaintsEveryLayerItPasses) {
  const Topology demo = demoTopology();
  ASSERT_GE(demo.attention.assign.size(), 6u);
  // Layers `from` to `to` painted one block, the blocks then numbered in order of first use, as the Designer
  // keeps them (-1: a block no layer has yet).
  auto painted = [](std::vector<int64_t> assign, size_t from, size_t to, int64_t block) {
    for (size_t l = from; l <= to; ++l) assign[l] = block;
    std::map<int64_t, int64_t> renumbered;
    for (int64_t& b : assign)
      b = renumbered.emplace(b, static_cast<int64_t>(renumbered.size())).first->second;
    return assign;
  };
  const std::vector<int64_t> attention = painted(demo.attention.assign, 1, 4, 0);
  const std::vector<int64_t> ffn = painted(demo.ffn.assign, 0, 2, -1);
  const fs::path before = s_dir / "before-drag.json", after = s_dir / "after-drag.json",
                 afterFfn = s_dir / "after-ffn-drag.json";
  const auto s = session(
      "designer-drag", dataHome(s_dir / "xdg-drag") + kBinary + " --view designer --exit-after 60",
      {"waitfor '\"designer/cell/attention/4\"'", "sleep 0.5", "flat > " + shellQuote(before.string()),
       "hover designer/cell/attention/1", "press",
       "xy=$(pos designer/cell/attention/4) && xdotool mousemove $xy", "sleep 0.4", "release",
       "waitfor '\"attention\":" + Json(attention).dump() + "'", "sleep 0.5",
       "flat > " + shellQuote(after.string()),
       // the brush slider dragged past its right end: the highest number, a new block
       "hover designer/brush", "press", "xdotool mousemove_relative 400 0", "sleep 0.3", "release",
       "waitfor '\"brush\":" + std::to_string(demo.ffn.uniqueBlocks()) + "'", "hover designer/cell/ffn/0",
       "press", "xy=$(pos designer/cell/ffn/2) && xdotool mousemove $xy", "sleep 0.4", "release",
       "waitfor '\"ffn\":" + Json(ffn).dump() + "'", "sleep 0.5", "flat > " + shellQuote(afterFfn.string())});
  ASSERT_EQ(s.result.exitCode, 0) << s.result.err;
  const Json was = readState(before)["state"]["designer/topology"];
  const Json now = readState(after)["state"]["designer/topology"];
  EXPECT_EQ(was["attention"].get<std::vector<int64_t>>(), demo.attention.assign);
  EXPECT_EQ(now["attention"].get<std::vector<int64_t>>(), attention) << was.dump() << "\n" << now.dump();
  EXPECT_EQ(now["ffn"], was["ffn"]);
  EXPECT_EQ(now["name"].get<std::string>().rfind("custom-L" + std::to_string(attention.size()), 0), 0u)
      << now["name"];
  const Json last = readState(afterFfn)["state"]["designer/topology"];
  EXPECT_EQ(last["ffn"].get<std::vector<int64_t>>(), ffn);
  EXPECT_EQ(last["attention"], now["attention"]);
}

// Issue 41 item 7: the status line names a plot's gestures (zoom, pan, box, reset, legend) while the pointer
// is on a plot, and says the usual otherwise.
TEST_F(GuiInput, TheStatusLineNamesThePlotGesturesOnAPlot) {
  const auto s =
      session("gestures", dataHome(s_dir / "xdg-gestures") + kBinary + " --view designer --exit-after 60",
              {"waitfor '\"designer/graph\"'", "hover designer/name", "waitfor '\"status/line\":\"ready\"'",
               "hover designer/graph", "waitfor '\"status/line\":\"plot:wheelzoomsx'", "hover designer/name",
               "waitfor '\"status/line\":\"ready\"'"});
  EXPECT_EQ(s.result.exitCode, 0) << s.result.err;
}

// Issue 41 item 4: the Experiments view's seeds and steps are what its Run trains, as `experiment run --seeds
// K
// --steps N`: the Designer's topology against its matched baseline (a file of 3 seeds) run with 2 seeds of 3
// steps leaves each arm exactly seeds 1 and 2, each trained 3 steps. A click near the left end of the seeds
// slider (2 to 3) sets 2; the steps box is typed into.
TEST_F(GuiInput, TheExperimentsSeedsAndStepsAreWhatItsRunTrains) {
  const fs::path home = s_dir / "xdg-experiments";
  fs::remove_all(home);
  const auto s = session(
      "experiments-size", dataHome(home) + kBinary + " --view experiments --exit-after 400",
      {"waitfor '\"experiments/from-designer\"'", "click experiments/from-designer",
       "waitfor '\"experiments/run-size\":{\"seeds\":3,\"steps\":0}'", "click experiments/seeds",
       // a click into a number box selects its text, which the typed digit replaces
       "waitfor '\"experiments/run-size\":{\"seeds\":2,'", "click experiments/steps", "sleep 0.5",
       "xdotool type --delay 50 3", "waitfor '\"experiments/run-size\":{\"seeds\":2,\"steps\":3}'",
       "click experiments/run",
       // training and evaluating six tiny runs (three arms, two seeds): up to three times waitfor's minute
       "waitfor '\"experiments/outcome\"' || waitfor '\"experiments/outcome\"' || "
       "waitfor '\"experiments/outcome\"'",
       "waitfor '\"experiments/outcome\":\"finished\"'"});
  ASSERT_EQ(s.result.exitCode, 0) << s.result.err;
  std::map<std::string, std::set<std::string>> seedsOfArm;
  for (const fs::path& run : runDirectoriesBelow(home / "sharelens" / "experiments", 3)) {
    SCOPED_TRACE(run.string());
    seedsOfArm[run.parent_path().filename().string()].insert(run.filename().string());
    MetricsReader metrics(run / "metrics.jsonl");
    metrics.poll();
    ASSERT_FALSE(metrics.points().empty());
    EXPECT_EQ(metrics.points().back().step, 3);
  }
  const std::set<std::string> twoSeeds{"seed-1", "seed-2"};
  ASSERT_EQ(seedsOfArm.size(), 3u) << "the Designer's arm, its matched baseline and the A/A arm";
  for (const auto& [arm, seeds] : seedsOfArm) EXPECT_EQ(seeds, twoSeeds) << arm;
}

// Issue 35 item 2, in the GUI: an experiment file as written is "not planned"; Plan runs `experiment plan` on
// it in the background (the learning-rate sweep and the A/A pilot) into OUT-plan, then shows the planned
// experiment (planned.json: its seeds sized by the pilot) with what it was planned to, unless another
// experiment was chosen meanwhile. A tiny file: two arms' sweep at 3 rates x 2 seeds and a pilot of 3 seeds
// at one budget, each run 10 steps.
TEST_F(GuiInput, PlanSizesTheExperimentAndShowsThePlannedOne) {
  const fs::path home = s_dir / "xdg-plan";
  fs::remove_all(home);
  writeFileAtomically(s_dir / "plan-me.json", R"({"schema": "sharelens.experiment/1", "name": "plan-me",
    "corpus": "brown", "seeds": 3, "tokens": 2560, "eval_tokens": 4096,
    "train": {"batch_size": 4, "eval_every": 5, "checkpoint_every": 10}, "reference": "baseline",
    "plan": {"pilot_seeds": 3, "pilot_budgets": [1.0], "lr_budget": 1.0, "target_half_width": 0.2,
             "max_seeds": 10, "min_tokens_per_parameter": 0},
    "arms": [{"name": "cycle", "topology": {"preset": "cycle", "layers": 2, "unique": 1, "d_model": 32,
              "heads": 2, "kv_heads": 2, "ffn": 64, "vocab": 512, "context": 64}},
             {"name": "baseline", "matched_baseline_of": "cycle"}]})");
  // An output of the user's own, typed with a trailing slash: the plan goes beside it, not inside it, and the
  // planned experiment is shown to run into it (not into the default output its name gives).
  const std::string custom = (home / "custom-out").string() + "/";
  const auto s = session(
      "experiments-plan", dataHome(home) + binaryOn("plan-me.json") + " --view experiments --exit-after 400",
      {"waitfor '\"experiments/planned\":false'", "click experiments/out-path", "frozen xdotool key ctrl+a",
       "xdotool type --delay 5 " + shellQuote(custom),
       "xdotool keydown Return; sleep 0.3; xdotool keyup Return",
       "waitfor '\"experiments/out\":\"" + custom + "\"'", "click experiments/plan",
       // 12 sweep runs and 6 pilot runs of 10 steps, each evaluated: up to three times waitfor's minute
       "waitfor '\"experiments/outcome\"' || waitfor '\"experiments/outcome\"' || "
       "waitfor '\"experiments/outcome\"'",
       "waitfor '\"experiments/outcome\":\"planned\"'", "waitfor '\"experiments/planned\":true'"});
  ASSERT_EQ(s.result.exitCode, 0) << s.result.err;
  const fs::path plan = home / "custom-out-plan";
  const Json recommended = readJsonFile(plan / "plan.json")["recommended"];
  const Experiment planned = readExperimentFile(plan / "planned.json");
  EXPECT_EQ(static_cast<int>(planned.seeds.size()), recommended["seeds"].get<int>());
  EXPECT_EQ(planned.tokens, recommended["tokens"].get<int64_t>());
  // The view shows the planned experiment, to run with the plan's seeds into the output chosen before.
  const Json state = readState(s.state)["state"];
  EXPECT_EQ(state["experiments/run-size"]["seeds"], recommended["seeds"]) << state.dump();
  EXPECT_EQ(state["experiments/out"], custom) << state.dump();

  // Its output opened later, once it holds the planned experiment (as Run writes it), says it was planned.
  fs::create_directories(custom);
  writeFileAtomically(fs::path(custom) / "experiment.json", experimentToJson(planned).dump(2));
  const auto reopened =
      session("experiments-plan-reopened",
              dataHome(home) + kBinary + " " + shellQuote(custom) + " --view experiments --exit-after 60",
              {"waitfor '\"experiments/planned\":true'"});
  EXPECT_EQ(reopened.result.exitCode, 0) << reopened.result.err;
  // The same output holding the file as written (its tokens are the plan's here: one pilot budget of the
  // whole; its learning rates are not the sweep's) is not planned.
  writeFileAtomically(fs::path(custom) / "experiment.json",
                      experimentToJson(readExperimentFile(s_dir / "plan-me.json")).dump(2));
  const auto asWritten =
      session("experiments-plan-as-written",
              dataHome(home) + kBinary + " " + shellQuote(custom) + " --view experiments --exit-after 60",
              {"waitfor '\"experiments/planned\":false'"});
  EXPECT_EQ(asWritten.result.exitCode, 0) << asWritten.result.err;

  // Another experiment chosen while a plan runs stays shown when the plan ends (before, the plan's outcome
  // replaced it): here the Designer's, chosen as Plan starts on a fresh output.
  const fs::path other = s_dir / "xdg-plan-other";
  fs::remove_all(other);
  const auto again = session(
      "experiments-plan-other",
      dataHome(other) + binaryOn("plan-me.json") + " --view experiments --exit-after 400",
      {"waitfor '\"experiments/planned\":false'", "click experiments/plan", "click experiments/from-designer",
       "waitfor '\"experiments/outcome\"' || waitfor '\"experiments/outcome\"' || "
       "waitfor '\"experiments/outcome\"'",
       "waitfor '\"experiments/outcome\":\"planned\"'", "sleep 1"});
  ASSERT_EQ(again.result.exitCode, 0) << again.result.err;
  EXPECT_TRUE(fs::exists(other / "sharelens" / "experiments" / "plan-me-plan" / "planned.json"));
  const Json shown = readState(again.state)["state"];
  EXPECT_EQ(shown["experiments/planned"], false) << shown.dump();
  EXPECT_NE(shown["experiments/out"].get<std::string>().find("-vs-baseline"), std::string::npos)
      << shown.dump();
}

// Issue 35: where an arm's interval came out wider than the plan's target, the Experiments view says how many
// seeds its spread needs and its seeds slider goes that far (`experiment run --seeds K` adds them). The
// shipped head-sharing experiment with 3 seeds evaluated: the shared arm's differences 0.01, 0.02, 0.03 have
// sd 0.01 and half-width 4.3027 x 0.01 / sqrt(3) = 0.0248; sized as the plan sizes, from the sd's 80% upper
// confidence bound 0.01 x sqrt(2 / 0.44629) = 0.02117 (chi-squared with 2 degrees of freedom: -2 ln 0.8),
// the t tables give 2.4469 x 0.02117 / sqrt(7) = 0.0196 and 2.5706 x 0.02117 / sqrt(6) = 0.0222: +-0.02
// needs 7 seeds.
TEST_F(GuiInput, TheExperimentsSeedsGoAsFarAsTheWidestIntervalNeeds) {
  const fs::path dir = s_dir / "wide-experiment";
  Experiment e = readExperimentFile(assetsDirectory() / "experiments" / "head_sharing.json");
  e.seeds = {1, 2, 3};
  fs::create_directories(dir);
  writeFileAtomically(dir / "experiment.json", experimentToJson(e).dump(2));
  for (uint64_t seed = 1; seed <= 3; ++seed)
    for (const ExperimentArm& arm : e.arms) {
      const double nll = arm.name == e.reference ? 5.0
                         : arm.aaOf.empty()      ? 5.0 + 0.01 * static_cast<double>(seed)
                                                 : 5.0 + 0.001 * (static_cast<double>(seed) - 2.0);
      const fs::path run = experimentRunDirectory(dir, arm.name, seed);
      fs::create_directories(run);
      writeFileAtomically(run / "eval.json", Json{{"nll", nll}}.dump());
    }
  const auto s =
      session("experiments-wide", binaryOn("wide-experiment") + " --view experiments --exit-after 90",
              {"waitfor '\"experiments/seeds-offered\":7'"});
  EXPECT_EQ(s.result.exitCode, 0) << s.result.err;
}

// Issue 41 item 4: a folder of runs two levels deep (ARM/seed-K) opens on the Training view, its seeds
// named apart in the legend;
// "group seeds" draws the two seeds of one arm as one curve and the other arm as its own; "analyse" on a run
// opens the Spectrum view (a tab to the left of Training: before, a view's request for a tab on its left was
// dropped, and "analyse" stayed on Training).
TEST_F(GuiInput, SeedsOfAnArmAreOneCurveAndAnalyseOpensTheSpectrum) {
  const fs::path runs = s_dir / "seeds";
  copyRunAsArms(runs, [](Json&) {});
  const auto s =
      session("seeds", dataHome(s_dir / "xdg-seeds") + binaryOn("seeds") + " --exit-after 60",
              {"waitfor '\"view\":\"Training\"'",
               // the two seeds told apart in the legend (they read the same, twice)
               "waitfor '\"training/curves\":[\"gui-test-cycle-masa(seed1)\",\"gui-test-cycle-masa(seed2)\","
               "\"other\"]'",
               "click training/group-seeds",
               "waitfor '\"training/curves\":[\"gui-test-cycle-masa(2seeds)\",\"other\"]'",
               "click run/other/analyse", "waitfor '\"view\":\"Spectrum\"'"});
  EXPECT_EQ(s.result.exitCode, 0) << s.result.err;
}

// Issue 41 item 4: the run table says what sets each run apart (here the seed and, for one run, the learning
// rate; its other topology is its name, the line above, and is not said twice), shows the tags a run's
// notes.json holds, and its notes dialog writes them back.
TEST_F(GuiInput, TheRunTableComparesConfigsAndKeepsTagsAndNotes) {
  const fs::path runs = s_dir / "compare";
  copyRunAsArms(runs, [](Json& other) { other["config"]["lr"] = 0.01; });
  writeRunNotes(runs / "cycle" / "seed-1", {{"reference"}, "the first seed"});
  const fs::path other = runs / "other" / "seed-1";
  // (The state is matched with its spaces removed.)
  const auto s =
      session("compare", dataHome(s_dir / "xdg-compare") + binaryOn("compare") + " --exit-after 60",
              {"waitfor '\"view\":\"Training\"'", "waitfor '\"differs\":\"lr0.01,seed1\"'",
               "waitfor '\"tags\":[\"reference\"]'", "click run/other/notes", "click notes-dialog/tags",
               "xdotool type --delay 5 'ablation, lr high'", "click notes-dialog/save",
               "waitfor '\"tags\":[\"ablation\",\"lrhigh\"]'"});
  ASSERT_EQ(s.result.exitCode, 0) << s.result.err;
  EXPECT_EQ(readRunNotes(other).tags, (std::vector<std::string>{"ablation", "lr high"}));
  // Each run's tokens/s and memory (issue 41 item 4): its last step's metrics.jsonl line (events such as
  // "checkpoint" follow it), and the prediction run.json recorded beside the measured peak.
  std::ifstream metrics(other / "metrics.jsonl");
  std::string line, lastLine;
  while (std::getline(metrics, line))
    if (line.find("\"tokens_per_s\"") != std::string::npos) lastLine = line;
  ASSERT_FALSE(lastLine.empty()) << "no step in " << other / "metrics.jsonl";
  const Json last = Json::parse(lastLine), record = readState(other / "run.json");
  const Json shown = readState(s.state)["state"]["training/runs"];
  const auto row = std::find_if(shown.begin(), shown.end(), [](const Json& r) {
    return r["label"].get<std::string>().find("other") != std::string::npos;
  });
  ASSERT_NE(row, shown.end()) << shown.dump();
  ASSERT_TRUE(row->contains("throughput_memory")) << row->dump();
  const std::string throughput = (*row)["throughput_memory"][0], memory = (*row)["throughput_memory"][1];
  EXPECT_NE(throughput.find(humanCount(last["tokens_per_s"].get<double>()) + " tok/s"), std::string::npos)
      << throughput << " against " << lastLine;
  EXPECT_EQ(memory, "tensors " + humanBytes(last["tensor_peak_bytes"].get<double>()) + " / " +
                        humanBytes(record["memory_estimate"]["total_bytes"].get<double>()))
      << lastLine;
}

// Issue 41 item 6: Ctrl+S on the Training view offers a file named after the run it shows, not after the
// checkpoint the analysis views hold (before: "<model>-step30-training-loss.png").
TEST_F(GuiInput, CtrlSOnTheTrainingViewNamesTheFileAfterTheRun) {
  const auto s = session("ctrl-s", dataHome(s_dir / "xdg-ctrl-s") + binaryOn("run") + " --exit-after 60",
                         {"waitfor '\"view\":\"Training\"'", "waitfor '\"training/curves\"'", "sleep 0.5",
                          "frozen xdotool key ctrl+s", "waitfor '/gui-test-cycle-masa-training-loss.png\"'"});
  EXPECT_EQ(s.result.exitCode, 0) << s.result.err;
}

// Launching from the Designer leaves the analysis views on the model they show unless "follow" is ticked.
TEST_F(GuiInput, ALaunchedRunIsFollowedOnlyWhenAsked) {
  const fs::path after = s_dir / "after-launch.json";
  const auto s =
      session("launch", dataHome(s_dir / "xdg-launch") + binaryOn("run") + " --view designer --exit-after 90",
              {"waitfor '\"workspace/model\"'", "click designer/launch", "waitfor '\"state\":\"running\"'",
               "sleep 0.5", "flat > " + shellQuote(after.string())});
  ASSERT_EQ(s.result.exitCode, 0) << s.result.err;
  const Json state = readState(after);
  const std::string model = state["state"]["workspace/model"];
  EXPECT_EQ(fs::path(model).parent_path().parent_path(), s_dir / "run") << "the views jumped to " << model;
  EXPECT_EQ(state["state"]["workspace/following"], (s_dir / "run").string())
      << "the views follow the launched run instead of the one opened";
  EXPECT_EQ(state["view"], "Training");
}

// ESD tab: clicking the alpha header sorts the matrices by their power-law alpha, smallest first (checked
// against the report `sharelens analyze --esd` writes); a second click sorts largest first.
TEST_F(GuiInput, TheEsdTableSortsByAlphaWhenItsHeaderIsClicked) {
  const auto [smallest, largest] = alphaExtremes();
  ASSERT_FALSE(smallest.empty());
  const auto s = session("esd", binaryOn("run") + " --view esd --exit-after 60",
                         {"click esd/header/alpha", "waitfor '\"esd/first\":\"" + smallest + "\"'",
                          "click esd/header/alpha", "waitfor '\"esd/first\":\"" + largest + "\"'"});
  EXPECT_EQ(s.result.exitCode, 0) << "smallest alpha " << smallest << ", largest " << largest << "\n"
                                  << s.result.err;
}

// Training view: Stop asks first; "Keep training" leaves the run training, "Stop" stops it with a checkpoint.
TEST_F(GuiInput, StopAsksBeforeStoppingARun) {
  const fs::path data = s_dir / "xdg", afterKeep = s_dir / "after-keep.json",
                 afterEscape = s_dir / "after-escape.json";
  const auto s = session(
      "train", dataHome(data) + kBinary + " --demo --exit-after 120",
      {"waitfor '\"state\":\"running\"'", "click 'run/demo-cycle-L6-U3/stop'", "click 'stop-dialog/keep'",
       "sleep 1", "flat > " + shellQuote(afterKeep.string()), "click 'run/demo-cycle-L6-U3/stop'",
       "waitfor '\"stop-dialog/keep\"'", "frozen xdotool key Escape", "sleep 1",
       "flat > " + shellQuote(afterEscape.string()), "click 'run/demo-cycle-L6-U3/stop'",
       "click 'stop-dialog/stop'", "waitfor '\"label\":\"demo-cycle-L6-U3\",\"state\":\"stopped\"'"});
  ASSERT_EQ(s.result.exitCode, 0) << s.result.err;
  for (const fs::path& after : {afterKeep, afterEscape}) {  // "Keep training", then Escape: still running
    std::ifstream in(after);
    const std::string kept((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_NE(kept.find("\"label\":\"demo-cycle-L6-U3\",\"state\":\"running\""), std::string::npos)
        << after.filename() << " stopped the run: " << kept;
    EXPECT_EQ(kept.find("\"stop-dialog/keep\""), std::string::npos)
        << after.filename() << " left the dialog open";
  }
  EXPECT_TRUE(latestCheckpoint(data / "sharelens" / "demo" / "model").has_value()) << "no checkpoint on stop";
}

// Issue 41 items 7 and 4: closing the window while runs train asks first ("Keep working" keeps them
// training); "Stop the runs and quit" stops each with a checkpoint and quits. A later session that opens
// the run directory can continue the stopped run from that checkpoint (before, only the session that had
// started a run could continue it).
TEST_F(GuiInput, QuittingWhileTrainingAsksAndTheStoppedRunContinuesInTheNextSession) {
  const fs::path data = s_dir / "xdg-quit", afterKeep = s_dir / "after-quit-keep.json";
  const auto s = session(
      "quit", dataHome(data) + kBinary + " --demo --exit-after 120",
      {"waitfor '\"state\":\"running\"'", "sleep 0.5", "frozen xdotool key ctrl+q",
       "waitfor '\"quit/asking\"'", "click quit/keep", "sleep 1", "flat > " + shellQuote(afterKeep.string()),
       "kill -0 $app", "frozen xdotool key ctrl+q", "waitfor '\"quit/asking\"'", "click quit/stop",
       "for i in $(seq 300); do kill -0 $app 2>/dev/null || break; sleep 0.2; done",
       "! kill -0 $app 2>/dev/null"});
  ASSERT_EQ(s.result.exitCode, 0) << s.result.err;
  std::ifstream keep(afterKeep);
  const std::string kept((std::istreambuf_iterator<char>(keep)), std::istreambuf_iterator<char>());
  EXPECT_NE(kept.find("\"state\":\"running\""), std::string::npos)
      << "Keep working stopped the runs: " << kept;
  const fs::path model = data / "sharelens" / "demo" / "model";
  const auto saved = latestCheckpoint(model);
  ASSERT_TRUE(saved.has_value()) << "quitting saved no checkpoint";
  // Stopped by the quit, not by --exit-after or a crash: the run logged its stop, and its checkpoint is at
  // the step it stopped at.
  std::ifstream metrics(model / "metrics.jsonl");
  int64_t stoppedAt = -1;
  for (std::string line; std::getline(metrics, line);)
    if (line.find("\"event\":\"stop\"") != std::string::npos) stoppedAt = Json::parse(line)["step"];
  ASSERT_GE(stoppedAt, 0) << "no stop event in the model run's metrics";
  EXPECT_EQ(saved->step, stoppedAt) << "the checkpoint is not the one saved when it stopped";

  const auto next = session("continue",
                            dataHome(s_dir / "xdg-continue") + binaryOn("xdg-quit/sharelens/demo/model") +
                                " --view training --exit-after 60",
                            {"click run/demo-cycle-L6-U3/continue",
                             "waitfor '\"label\":\"demo-cycle-L6-U3\",\"state\":\"running\"'", "sleep 1"});
  EXPECT_EQ(next.result.exitCode, 0) << "the reopened run did not continue: " << next.result.err;
}

// Issue 41 item 4: a run whose process was killed (no stop or finish logged, no process holding its
// directory's lock) reads "interrupted" and continues from its last checkpoint; while another process holds
// the lock it offers no "continue" (before, only a logged stop offered it, so a crashed run never could).
TEST_F(GuiInput, AKilledRunReadsInterruptedAndContinuesFromItsLastCheckpoint) {
  const fs::path killed = s_dir / "killed", held = s_dir / "while-held.json";
  fs::copy(s_dir / "run", killed, fs::copy_options::recursive);
  fs::remove_all(killed / "checkpoints" / "step-0000030");  // killed after step 20's checkpoint
  ASSERT_EQ(latestCheckpoint(killed).value().step, 20);
  {
    std::ifstream in(killed / "metrics.jsonl");
    std::string kept;
    for (std::string line; std::getline(in, line);)
      if (line.find("\"event\":\"finish\"") == std::string::npos) kept += line + "\n";
    in.close();
    std::ofstream(killed / "metrics.jsonl") << kept;
  }
  const std::string app = binaryOn("killed") + " --view training --exit-after 60";
  {
    const DirectoryLock writer(killed, "training run");  // as a live `sharelens train` holds it
    const auto s = session(
        "killed-held", dataHome(s_dir / "xdg-killed-held") + app,
        {"waitfor '\"label\":\"gui-test-cycle-masa\"'", "sleep 1.5", "flat > " + shellQuote(held.string())});
    ASSERT_EQ(s.result.exitCode, 0) << s.result.err;
  }
  std::ifstream in(held);
  const std::string whileHeld((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(whileHeld.find("run/gui-test-cycle-masa/continue"), std::string::npos)
      << "a run another process writes offered continue";
  EXPECT_EQ(whileHeld.find("interrupted"), std::string::npos) << whileHeld;
  const auto s = session(
      "killed", dataHome(s_dir / "xdg-killed") + app,
      {"waitfor '\"label\":\"gui-test-cycle-masa\",\"state\":\"interrupted\"'",
       "click run/gui-test-cycle-masa/continue",
       "for i in $(seq 150); do [ -d " + shellQuote((killed / "checkpoints" / "step-0000030").string()) +
           " ] && break; sleep 0.2; done",
       "sleep 1"});
  ASSERT_EQ(s.result.exitCode, 0) << s.result.err;
  const auto latest = latestCheckpoint(killed);
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->step, 30) << "continued from step 20 to the run's end";
}

// Issue 41 item 7: CSV goes through the Save As dialog; Ctrl+A selects the path box's text, so a new path
// replaces it; a folder that is not there is said and made only by "Create the folder and save" (Enter does
// not make it); Ctrl+S opens the dialog for the view's figure and Escape closes it.
TEST_F(GuiInput, SaveAsAsksBeforeMakingAFolderAndEscapeClosesIt) {
  const fs::path target = s_dir / "new-folder" / "deeper" / "curves.csv", after = s_dir / "after-save.json";
  const auto s = session(
      "save-as", binaryOn("run") + " --view training --exit-after 60",
      {"click training/export-csv", "waitfor '\"export/path\"'", "click export/path",
       "waitfor '\"export/editing\":true'",  // the click reached the path box
       "frozen xdotool key ctrl+a", "xdotool type --delay 5 " + shellQuote(target.string()),
       // Ctrl+A selected the offered path, so the typed one replaced it (on a fresh machine the
       // exports folder is missing too: the path is what says the typing landed).
       "waitfor '\"export/path\":\"" + target.string() + "\"'", "waitfor '\"export/missing-folder\":true'",
       "xdotool keydown Return; sleep 0.3; xdotool keyup Return", "sleep 0.5",
       "waitfor '\"export/missing-folder\":true'",  // Enter saved nothing: the dialog is still asking
       "click export/save",
       "for i in $(seq 50); do [ -f " + shellQuote(target.string()) + " ] && break; sleep 0.2; done",
       "frozen xdotool key ctrl+s", "waitfor '\"export/path\"'", "frozen xdotool key Escape",
       // until the dialog's state goes (a loaded machine takes its time), at most a minute
       "for i in $(seq 300); do flat | grep -qF '\"export/path\"' || break; sleep 0.2; done",
       "flat > " + shellQuote(after.string())});
  ASSERT_EQ(s.result.exitCode, 0) << s.result.err;
  ASSERT_TRUE(fs::exists(target)) << "the CSV was not written where the dialog was told";
  std::ifstream csv(target);
  std::string header;
  std::getline(csv, header);
  EXPECT_NE(header.find("step"), std::string::npos) << header;
  EXPECT_FALSE(readState(after)["state"].contains("export/path")) << "Escape left the dialog open";
}

}  // namespace
}  // namespace sharelens::gui_test
