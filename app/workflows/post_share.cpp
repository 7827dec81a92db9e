#include "app/workflows/post_share.hpp"

#include <cmath>

#include "core/arch/family.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/hf_export.hpp"
#include "core/run_dir.hpp"
#include "trainer/hf_tokenizer.hpp"

namespace fs = std::filesystem;

namespace sharelens {

PostShareReport runPostShare(const PostShareOptions& o, const TaskContext& ctx,
                             const std::function<void(const StepMetrics&)>& onStep) {
  if (!(o.gamma > 0.0 && std::isfinite(o.gamma)))
    throw Error({.what = "PostShare needs a positive penalty weight",
                 .where = "--gamma",
                 .expected = "> 0",
                 .found = std::to_string(o.gamma)});
  if (fs::exists(o.outDir / "postshare.json") || fs::exists(o.outDir / "run" / "run.json"))
    throw Error({.what = "the directory already holds a PostShare run",
                 .where = o.outDir.string(),
                 .hint = "choose another --out"});
  const auto ckpt = Checkpoint::open(resolveModelPath(o.init));
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
  RunRequest request;
  request.topology = topology;
  request.topology.name = topology.name + "-postshare";
  request.topology.postShare.gamma = o.gamma;
  for (const UnitMatch& m : report.pairs.chosen)
    request.topology.postShare.pairs.push_back(
        {m.target.layer, m.target.unit, m.source.layer, m.source.unit});
  request.config = o.config;
  request.runDir = o.outDir / "run";
  request.initFrom = o.init;
  report.training = runTraining(request, ctx, onStep, &report.message);
  const auto last = latestCheckpoint(request.runDir);
  if (!last)
    throw Error({.what = "post-training wrote no checkpoint",
                 .where = request.runDir.string(),
                 .found = report.message});
  // The shared models are written once training has accepted the request (it validates before it trains).
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
          {"training", std::string(runStateName(training))},
          {"message", message},
          {"eval",
           {{"original", evalResultToJson(original)},
            {"directshare", evalResultToJson(directShare)},
            {"post_trained", evalResultToJson(postTrained)},
            {"postshare", evalResultToJson(postShare)}}}};
}

}  // namespace sharelens
