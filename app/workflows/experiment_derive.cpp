#include "app/workflows/experiment_derive.hpp"

#include "analysis/directshare.hpp"
#include "app/workflows/post_share.hpp"
#include "core/arch/family.hpp"
#include "core/error.hpp"
#include "core/run_dir.hpp"

namespace fs = std::filesystem;

namespace sharelens {

DeriveArm experimentDeriver() {
  return [](const Experiment& e, const ExperimentArm& arm, uint64_t seed, const fs::path& sourceRun,
            const fs::path& runDir, int threads, const TaskContext& ctx) -> DerivedModel {
    const DerivedArm& d = *arm.derive;
    if (d.method == "directshare") {  // DirectShare alone: the source's final model with its pairs shared
      const auto ckpt = Checkpoint::open(resolveModelPath(sourceRun));
      const ModelView view = openModelView(*ckpt);
      const DirectShareResult pairs = computeDirectShare(*ckpt, view, d.ratio, ctx);
      writeDirectSharedCheckpoint(*ckpt, view, pairs, runDir / "model");
      return {runDir / "model", pairs.parametersTotal - pairs.parametersSaved, pairs.parametersSaved};
    }
    PostShareOptions
        o;  // PostShare: post-train the source's final model with the penalty on its pairs, then share
    o.init = sourceRun;
    o.ratio = d.ratio;
    o.gamma = d.gamma;
    o.maxContext = arm.topology.model.context;
    o.config = experimentTrainConfig(e, e.arm(d.from), seed);
    // Post-training draws the batches after the pretraining's (issue 35: replaying its first batches would
    // measure more pretraining, not recovery).
    o.config.dataOffset = o.config.steps;
    o.config.steps = d.steps;
    o.config.lr = d.lr;
    o.config.warmupSteps = std::min<int64_t>(o.config.warmupSteps, d.steps / 10);
    o.config.checkpointEvery = d.steps;
    o.config.evalEvery = d.steps;
    o.config.threads = threads;
    o.eval.corpus = e.corpus;
    o.eval.tokens = e.evalTokens;
    o.eval.threads = threads;
    o.outDir = runDir / "postshare-run";
    const PostShareReport r = runPostShare(o, ctx, nullptr);
    if (r.training == RunState::Failed)  // non-finite steps: an outcome of the arm (the runner records it)
      throw RunDiverged(
          {.what = "PostShare's post-training diverged", .where = o.outDir.string(), .found = r.message});
    if (r.training != RunState::Finished)
      throw Error({.what = "PostShare's post-training did not finish",
                   .where = o.outDir.string(),
                   .found = r.message});
    return {o.outDir / "postshare", r.pairs.parametersTotal - r.pairs.parametersSaved,
            r.pairs.parametersSaved};
  };
}

}  // namespace sharelens
