#include "app/workflows/post_share.hpp"

#include <array>
#include <cmath>

#include "core/arch/family.hpp"
#include "core/atomic_file.hpp"
#include "core/directory_lock.hpp"
#include "core/error.hpp"
#include "core/hf_export.hpp"
#include "core/output_guard.hpp"
#include "core/run_dir.hpp"
#include "trainer/hf_tokenizer.hpp"
#include "trainer/train_config.hpp"

namespace fs = std::filesystem;

namespace sharelens {
namespace {

// An earlier, unfinished PostShare in OUT/run is continued only when it is this one: the same model to
// post-train (topology, with the same pairs and gamma) and the same training options (threads may differ).
void refuseAnotherPostShare(const Json& record, const RunRequest& request, const fs::path& runJson) {
  std::string differ;
  const Json topology = topologyToJson(request.topology);
  if (record.value("topology", Json()) != topology)
    differ += " the model (checkpoint, --postshare ratio, --gamma or --context)";
  Json config = trainConfigToJson(request.config), recorded = record.value("config", Json::object());
  for (Json* j : {&config, &recorded}) j->erase("threads");
  for (const auto& [key, value] : config.items())
    if (recorded.value(key, Json()) != value)
      differ +=
          " " + key + " (run.json " + recorded.value(key, Json()).dump() + ", now " + value.dump() + ")";
  if (!differ.empty())
    throw Error({.what = "the directory holds another PostShare run, stopped before it finished",
                 .where = runJson.string(),
                 .expected = "the same command as the one that started it",
                 .found = "differs in" + differ,
                 .hint = "run that command again to continue it, or choose another --out"});
}

}  // namespace

PostShareReport runPostShare(const PostShareOptions& o, const TaskContext& ctx,
                             const std::function<void(const StepMetrics&)>& onStep) {
  if (!(o.gamma >= 0.0 && std::isfinite(o.gamma)))
    throw Error({.what = "PostShare's penalty weight is out of range",
                 .where = "--gamma",
                 .expected = ">= 0 (0: the same post-training without the penalty, PostShare's control)",
                 .found = std::to_string(o.gamma)});
  const auto ckpt = Checkpoint::open(resolveModelPath(o.init));
  const fs::path runDir = o.outDir / "run";
  // OUT is this job's: new, empty, or an earlier run of the same command stopped part-way (its post-training
  // resumes from its newest checkpoint; the shared models and the report are made again from it).
  {
    InputFootprint inputs;
    inputs.addCheckpoint(*ckpt);
    const bool earlier = fs::exists(runDir / "run.json");
    checkOutputs("PostShare", inputs, std::array{DeclaredOutput::directory(o.outDir, "--out", earlier)});
    if (fs::exists(o.outDir / "postshare.json"))
      throw Error({.what = "the directory already holds a finished PostShare run",
                   .where = o.outDir.string(),
                   .found = (o.outDir / "postshare.json").string(),
                   .hint = "its report is there; choose another --out for a new run"});
  }
  const ModelView view = openModelView(*ckpt);
  Topology topology = topologyOfCheckpoint(*ckpt, view, o.maxContext);
  if (!topology.isUnshared())
    throw Error({.what = "PostShare needs a checkpoint with unshared attention",
                 .where = o.init.string(),
                 .found = "topology '" + topology.name + "' shares weights",
                 .hint = "`sharelens export-hf` materialises it; post-train that"});
  // Everything that can be refused is checked before anything is trained or written.
  checkDirectShareWritable(*ckpt, view);
  (void)tokenizerFileForCheckpoint(o.init);  // every model is evaluated with the checkpoint's own tokenizer

  PostShareReport report;
  report.pairs = computeDirectShare(*ckpt, view, o.ratio, ctx);
  if (report.pairs.chosen.empty())
    throw Error({.what = "PostShare with no pairs",
                 .where = "--postshare " + std::to_string(o.ratio),
                 .found = "0 units at this ratio",
                 .hint = "raise the ratio"});
  // OUT is made and locked once everything that can be refused was; a start refused later (by training's own
  // checks) leaves no empty OUT behind (remove() takes a directory only when it is empty).
  struct RemovedIfEmpty {
    fs::path dir;
    ~RemovedIfEmpty() {
      std::error_code ec;
      if (!dir.empty()) fs::remove(dir, ec);
    }
  } created{fs::exists(o.outDir) ? fs::path() : o.outDir};
  fs::create_directories(o.outDir);
  const DirectoryLock lock(o.outDir, "PostShare run");
  RunRequest request;
  request.topology = topology;
  request.topology.name = topology.name + "-postshare";
  request.topology.postShare.gamma = o.gamma;
  for (const UnitMatch& m : report.pairs.chosen)
    request.topology.postShare.pairs.push_back(
        {m.target.layer, m.target.unit, m.source.layer, m.source.unit});
  request.config = o.config;
  request.runDir = runDir;
  request.initFrom = o.init;
  if (fs::exists(runDir / "run.json")) {
    const Json record = readJsonFile(runDir / "run.json");
    // A run started before the initialisation seed and the data offset existed ran with neither: it
    // continues as it began.
    const Json recordedConfig = record.value("config", Json::object());
    if (!recordedConfig.contains("init_seed")) request.config.initSeed = 0;
    if (!recordedConfig.contains("data_offset")) request.config.dataOffset = 0;
    Json upgraded = record;
    if (upgraded.contains("config") && upgraded["config"].is_object()) {
      if (!recordedConfig.contains("init_seed")) upgraded["config"]["init_seed"] = 0;
      if (!recordedConfig.contains("data_offset")) upgraded["config"]["data_offset"] = 0;
    }
    refuseAnotherPostShare(upgraded, request, runDir / "run.json");
    request.resume = true;
  }
  report.training = runTraining(request, ctx, onStep, &report.message);
  if (report.training != RunState::Finished) return report;  // stopped: the same command continues it
  const auto last = latestCheckpoint(request.runDir);
  if (!last)
    throw Error({.what = "post-training wrote no checkpoint",
                 .where = request.runDir.string(),
                 .found = report.message});
  // The shared models, made from the finished run (again, if an earlier attempt was stopped while it wrote
  // them: what it left is this job's own unfinished output).
  for (const char* name : {"directshare", "postshare"}) fs::remove_all(o.outDir / name);
  writeDirectSharedCheckpoint(*ckpt, view, report.pairs, o.outDir / "directshare");
  {
    const auto trained = Checkpoint::open(last->dir);
    writeDirectSharedCheckpoint(*trained, openModelView(*trained), report.pairs, o.outDir / "postshare");
  }
  // All four on the same text in the same windows: the post-trained models run at the (capped) training
  // context, so the original is scored in windows no longer than that too; otherwise the NLLs differ by
  // context length alone.
  EvalOptions eval = o.eval;
  if (eval.window <= 0) eval.window = std::min<int64_t>(topology.model.context, 1024);
  if (!eval.corpus) eval.corpus = o.config.corpus;
  if (!eval.validationFraction) eval.validationFraction = o.config.validationFraction;
  report.original = evaluateCheckpoint(o.init, eval, ctx);
  report.directShare = evaluateCheckpoint(o.outDir / "directshare", eval, ctx);
  report.postTrained = evaluateCheckpoint(last->dir, eval, ctx);
  report.postShare = evaluateCheckpoint(o.outDir / "postshare", eval, ctx);
  writeFileAtomically(o.outDir / "postshare.json", report.toJson().dump(2) + "\n");
  return report;
}

Json PostShareReport::toJson() const {
  Json pairsJson = Json::array();
  for (const UnitMatch& m : pairs.chosen)
    pairsJson.push_back({{"target", {m.target.layer, m.target.unit}},
                         {"source", {m.source.layer, m.source.unit}},
                         {"similarity", m.similarity}});
  return {{"schema", "sharelens.postshare/1"},
          {"ratio", pairs.ratio},
          {"achieved_ratio", pairs.achievedRatio()},
          {"unit", pairs.unitKind},
          {"pairs", pairsJson},
          {"parameters_saved", pairs.parametersSaved},
          {"saved_share_of_attention", pairs.savedShareOfAttention(false)},
          {"saved_share_of_attention_with_o", pairs.savedShareOfAttention(true)},
          {"training", std::string(runStateName(training))},
          {"message", message},
          {"eval",
           {{"original", evalResultToJson(original)},
            {"directshare", evalResultToJson(directShare)},
            {"post_trained", evalResultToJson(postTrained)},
            {"postshare", evalResultToJson(postShare)}}}};
}

}  // namespace sharelens
