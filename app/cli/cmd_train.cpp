// sharelens topology --preset NAME --layers L --unique U [...] --out FILE   a preset as a topology file
// sharelens params TOPOLOGY [--match-baseline OUT.json] [--batch N] [--json FILE]
// sharelens train --topology FILE --corpus CORPUS|DIR --out RUN_DIR [--steps N] [--resume] [--threads N]
//                 [--compare] [--batch N] [--lr X] [--seed S] [--device cpu|cuda] [--checkpoint-every N]
//                 [--eval-every N] [--eval-batches N]   (validation: every N steps, on N fixed batches)
// sharelens export-hf PATH OUT_DIR     materialised per-layer weights in Hugging Face Llama layout
#include <array>
#include <cstdio>
#include <iostream>
#include <thread>

#include "app/cli/commands.hpp"
#include "app/cli/launcher.hpp"
#include "app/cli/progress_printer.hpp"
#include "app/workflows/post_share.hpp"
#include "core/arch/family.hpp"
#include "core/atomic_file.hpp"
#include "core/compressed_checkpoint.hpp"
#include "core/error.hpp"
#include "core/hf_export.hpp"
#include "core/machine.hpp"
#include "core/naming.hpp"
#include "core/output_guard.hpp"
#include "core/param_count.hpp"
#include "core/run_dir.hpp"
#include "core/topology_presets.hpp"
#include "trainer/run_controller.hpp"

namespace sharelens::cli {
namespace {

Json budgetReport(const Topology& t, int64_t batch) {
  const ParamBudget b = countParameters(t);
  const MemoryEstimate mem = estimateTrainingMemory(t, batch);
  Json groups = Json::object();
  for (int g = 0; g < kParamGroupCount; ++g)
    groups[std::string(paramGroupName(static_cast<ParamGroup>(g)))] = b.groups[g];
  return {{"name", t.name},
          {"total", b.total},
          {"non_embedding", b.nonEmbedding},
          {"dense_equivalent", b.denseEquivalent},
          {"groups", groups},
          {"rho", b.rho},
          {"train_flops_per_token", b.trainFlopsPerToken},
          {"forward_flops_per_token", b.forwardFlopsPerToken},
          {"notes", topologyNotes(t)},
          {"training_memory_bytes",
           {{"parameters_and_optimizer", mem.parameterBytes},
            {"activations", mem.activationBytes},
            {"batch", batch}}}};
}

void printBudget(const Json& r) {
  std::printf("%s\n", r["name"].get<std::string>().c_str());
  for (const Json& note : r["notes"]) std::printf("  note: %s\n", note.get<std::string>().c_str());
  const double total = r["total"].get<double>();
  for (const auto& [group, count] : r["groups"].items())
    if (count.get<int64_t>() > 0)
      std::printf("  %-18s %12lld  %8s  %5.1f%%\n", group.c_str(),
                  static_cast<long long>(count.get<int64_t>()), humanCount(count.get<double>()).c_str(),
                  100.0 * count.get<double>() / total);
  std::printf("  %-18s %12lld  %8s  (%.1f%% of the unshared %s)\n", "total",
              static_cast<long long>(r["total"].get<int64_t>()), humanCount(total).c_str(),
              100.0 * total / r["dense_equivalent"].get<double>(),
              humanCount(r["dense_equivalent"].get<double>()).c_str());
  std::printf("  %-18s %12lld  %8s\n", "non-embedding",
              static_cast<long long>(r["non_embedding"].get<int64_t>()),
              humanCount(r["non_embedding"].get<double>()).c_str());
  std::printf("  rho (embedding share)   %.3f\n", r["rho"].get<double>());
  std::printf("  training FLOPs / token  %s\n", humanCount(r["train_flops_per_token"].get<double>()).c_str());
  const Json& m = r["training_memory_bytes"];
  std::printf(
      "  training memory         %s (weights + AdamW %s, activations at batch %lld %s)\n",
      humanBytes(m["parameters_and_optimizer"].get<double>() + m["activations"].get<double>()).c_str(),
      humanBytes(m["parameters_and_optimizer"].get<double>()).c_str(),
      static_cast<long long>(m["batch"].get<int64_t>()), humanBytes(m["activations"].get<double>()).c_str());
  const double memory = static_cast<double>(physicalMemoryBytes());
  if (memory > 0 && m["parameters_and_optimizer"].get<double>() + m["activations"].get<double>() > memory)
    std::printf("  note: more than this machine's %s; `train` here would refuse it\n",
                humanBytes(memory).c_str());  // --anywhere
}

}  // namespace

int runTopology(Args& args) {
  const std::string presetName = args.option("preset", "cycle");
  const auto pattern = parsePattern(presetName);
  if (!pattern)
    throw Error({.what = "unknown preset",
                 .where = "sharelens topology --preset",
                 .expected = patternList(),
                 .found = presetName});
  PresetSpec spec;
  spec.pattern = *pattern;
  spec.base = demoTopology().model;
  spec.base.layers = args.integer("layers", 1, 512).value_or(spec.base.layers);
  spec.uniqueBlocks = args.integer("unique", 1, 512).value_or(3);
  spec.depthMultiplier = args.option("depth", "1");
  spec.base.dModel = args.integer("d-model", 8, 65536).value_or(spec.base.dModel);
  spec.base.heads = args.integer("heads", 1, 1024).value_or(spec.base.heads);
  spec.base.kvHeads = args.integer("kv-heads", 1, 1024).value_or(spec.base.kvHeads);
  spec.base.headDim = spec.base.dModel / spec.base.heads;
  spec.base.ffn = args.integer("ffn", 1, 1 << 20).value_or(spec.base.ffn);
  spec.base.vocab = args.integer("vocab", 16, 1 << 20).value_or(spec.base.vocab);
  spec.base.context = args.integer("context", 2, 1 << 20).value_or(spec.base.context);
  spec.loraRank = args.integer("lora-rank", 0, 4096).value_or(spec.loraRank);
  spec.parameterMatched =
      args.flag("parameter-matched");  // [LRS] Table 3 as we read it: U = L/2, the LoRA rank solved
  const auto interior = args.integer("ffn-tie-interior", 0, 512);
  const bool untied = args.flag("untied-embeddings");
  const auto factor = args.integer("embedding-rank", 0, 65536);
  const std::string out = args.option("out", "");
  args.finish();
  if (out.empty())
    throw Error(
        {.what = "missing --out FILE", .where = "sharelens topology", .hint = "usage: " + args.usage()});
  spec.tiedEmbeddings = !untied;
  if (spec.parameterMatched && (interior || factor))
    throw Error({.what = "a parameter-matched preset cannot be changed after its rank is solved",
                 .where = interior ? "--ffn-tie-interior" : "--embedding-rank",
                 .expected = "--parameter-matched alone, or the option without it",
                 .found = "both",
                 .hint = "the solved LoRA rank would no longer match the unshared model's parameters"});
  Topology t = makePreset(spec);
  if (interior) {
    t.ffn.assign = interiorTieAssignment(t.model.layers, *interior);
    t.ffn.loraRank = spec.loraRank;
    t.provenance.note += "; FFN of layers " + std::to_string(*interior) + ".." +
                         std::to_string(t.model.layers - *interior - 1) + " tied";
  }
  if (factor) t.embedding.factorRank = *factor;
  writeTopologyFile(t, out);
  std::cout << "wrote " << out << "\n";
  printBudget(budgetReport(t, 16));
  return 0;
}

int runParams(Args& args) {
  const std::string path = args.positional("TOPOLOGY");
  const auto baselineOut = args.option("match-baseline");
  const auto budget = args.integer("solve-lora-rank", 1, int64_t{1} << 50);
  const auto budgetOf = args.option("budget-of");
  const std::string loraKind = args.option("lora", "layer");
  const auto solvedOut = args.option("out");
  const int64_t batch = args.integer("batch", 1, 1 << 20).value_or(16);
  const auto jsonOut = args.option("json");
  const bool anywhere = args.flag("anywhere");  // plan for another machine: skip this one's memory check
  args.finish();
  Topology t = readTopologyFile(path);
  // What `train` here would refuse, `params` refuses too (a plan for a bigger machine says --anywhere).
  if (!anywhere)
    requireFitsInMemory(estimateTrainingMemory(t, batch).total(),
                        "training '" + t.name + "' at batch " + std::to_string(batch),
                        "shrink the model or --batch; or add --anywhere to plan for a larger machine");
  if (budgetOf && budget)
    throw Error({.what = "give the budget once",
                 .where = "sharelens params",
                 .hint = "--solve-lora-rank N or --budget-of FILE"});
  if (budgetOf || budget) {  // the inverse problem: the LoRA rank that meets a non-embedding budget
    const int64_t target = budget ? *budget : countParameters(readTopologyFile(*budgetOf)).nonEmbedding;
    if (!solvedOut)
      throw Error({.what = "missing --out FILE for the solved topology", .where = "sharelens params"});
    t = solveLoraRank(t, target, loraKind);
    writeTopologyFile(t, *solvedOut);
    std::printf(
        "%s LoRA rank %lld meets %lld non-embedding parameters (%+.3f%%) -> %s\n\n", loraKind.c_str(),
        static_cast<long long>(loraKind == "head" ? t.headSharing.loraRank : t.attention.loraRank),
        static_cast<long long>(target),
        100.0 * (static_cast<double>(countParameters(t).nonEmbedding) / static_cast<double>(target) - 1.0),
        solvedOut->c_str());
  }
  Json report = {{"topology", budgetReport(t, batch)}};
  printBudget(report["topology"]);
  if (baselineOut) {
    const Topology base = parameterMatchedBaseline(t);
    writeTopologyFile(base, *baselineOut);
    report["baseline"] = budgetReport(base, batch);
    report["matched"] = "non_embedding";
    std::printf(
        "\nparameter-matched baseline -> %s (depth %lld, d_model %lld, head_dim %lld, ffn_dim %lld)\n",
        baselineOut->c_str(), static_cast<long long>(base.model.layers),
        static_cast<long long>(base.model.dModel), static_cast<long long>(base.model.headDim),
        static_cast<long long>(base.model.ffn));
    printBudget(report["baseline"]);
    const double diff = report["baseline"]["non_embedding"].get<double>() /
                            report["topology"]["non_embedding"].get<double>() -
                        1.0;
    std::printf("  matched: non-embedding parameters (attention, FFN, LoRA, MASA, norms), %+.3f%%\n",
                100.0 * diff);
    std::printf(
        "  embedding carried over (%s%s): %s vs %s\n", base.embedding.tied ? "tied" : "untied",
        base.embedding.factorRank > 0 ? (", rank " + std::to_string(base.embedding.factorRank)).c_str() : "",
        humanCount(report["baseline"]["total"].get<double>() -
                   report["baseline"]["non_embedding"].get<double>())
            .c_str(),
        humanCount(report["topology"]["total"].get<double>() -
                   report["topology"]["non_embedding"].get<double>())
            .c_str());
  }
  if (jsonOut) writeFileAtomically(*jsonOut, report.dump(2) + "\n");
  return 0;
}

int runTrain(Args& args) {
  if (const auto nproc = args.integer("nproc", 1, 256); nproc && *nproc > 1) {  // launch the local ranks
    if (distributedFromEnvironment().enabled())
      throw Error({.what = "--nproc inside a distributed launch",
                   .where = "sharelens train",
                   .hint = "let torchrun (or this launcher) start the ranks, not both"});
    return launchLocalRanks(static_cast<int>(*nproc), args.remaining(), 30.0);
  }
  RunRequest request;
  request.distributed = distributedFromEnvironment();
  endWithLauncher(30.0);
  request.distributed.checkWeightsEvery = args.integer("check-weights-every", 1, 1 << 30).value_or(0);
  request.distributed.timeoutSeconds =
      args.number("dist-timeout", 1, 86400).value_or(request.distributed.timeoutSeconds);
  const auto topologyPath = args.option("topology");
  const auto init = args.option("init");
  const auto postShareRatio = args.number("postshare", 0.0, 1.0);
  const double gamma = args.number("gamma", 0.0, 1e6).value_or(kPostShareGamma);
  const std::optional<long long> contextGiven = args.integer("context", 2, 1 << 20);
  const int64_t context = contextGiven.value_or(256);
  const auto corpus = args.option("corpus");
  request.config.corpus = corpus.value_or(request.config.corpus);
  const auto out = args.option("out");
  request.resume = args.flag("resume");
  const bool compare = args.flag("compare");
  const auto steps = args.integer("steps", 1, 100'000'000);
  request.config.steps = steps.value_or(request.config.steps);
  if (request.resume) request.resumeToSteps = steps;
  request.config.threads = static_cast<int>(args.integer("threads", 1, 1024).value_or(0));
  if (request.config.threads == 0 &&
      request.distributed.localWorldSize > 1)  // the machine's cores shared by its ranks
    request.config.threads = std::max(
        1, static_cast<int>(std::thread::hardware_concurrency()) / request.distributed.localWorldSize);
  // The run's options as given, each with its key in run.json: a resumed run keeps those it started with, so
  // one given with --resume must say the same (a script may repeat its whole command).
  struct GivenOption {
    std::string flag, key;  // "--batch", "batch_size" (run.json's config; "init" is the record's own)
    Json value;
  };
  std::vector<GivenOption> givenOptions;
  auto given = [&](auto value, const char* flag, const char* key) {
    if (value) givenOptions.push_back({std::string("--") + flag, key, Json(*value)});
    return value;
  };
  if (init) given(std::optional(std::filesystem::absolute(*init).string()), "init", "init");
  given(corpus, "corpus", "corpus");
  request.config.batchSize =
      given(args.integer("batch", 1, 1 << 16), "batch", "batch_size").value_or(request.config.batchSize);
  const auto lrGiven = given(args.number("lr", 1e-12, 10.0), "lr", "lr");
  request.config.lr = lrGiven.value_or(request.config.lr);
  request.config.warmupSteps =
      given(args.integer("warmup", 0, 1 << 30), "warmup", "warmup_steps")
          .value_or(std::min<int64_t>(request.config.warmupSteps, request.config.steps / 5));
  request.config.seed = static_cast<uint64_t>(given(args.integer("seed", 0, INT64_MAX), "seed", "seed")
                                                  .value_or(static_cast<int64_t>(request.config.seed)));
  request.config.device = given(args.option("device"), "device", "device").value_or(request.config.device);
  request.config.checkpointEvery =
      given(args.integer("checkpoint-every", 1, 1 << 30), "checkpoint-every", "checkpoint_every")
          .value_or(request.config.checkpointEvery);
  request.config.evalEvery = given(args.integer("eval-every", 1, 1 << 30), "eval-every", "eval_every")
                                 .value_or(request.config.evalEvery);
  request.config.evalBatches = given(args.integer("eval-batches", 1, 1 << 20), "eval-batches", "eval_batches")
                                   .value_or(request.config.evalBatches);
  if (auto keep = args.option("keep-checkpoints")) {
    request.config.keepCheckpoints = parseCheckpointRetention(*keep, "--keep-checkpoints");
    given(std::optional(checkpointRetentionToJson(request.config.keepCheckpoints)), "keep-checkpoints",
          "keep_checkpoints");
  }
  EvalOptions eval;
  eval.corpus = request.config.corpus;
  eval.tokens =
      args.integerOrWord("eval-tokens", 1, 1'000'000'000, "all", kEveryHeldOutToken).value_or(eval.tokens);
  args.finish();
  if (!out)
    throw Error(
        {.what = "missing --out RUN_DIR", .where = "sharelens train", .hint = "usage: " + args.usage()});
  if (const std::filesystem::path runJson = std::filesystem::path(*out) / "run.json";
      request.resume && !givenOptions.empty() && std::filesystem::exists(runJson)) {
    const Json record = readJsonFile(runJson);
    const Json config = record.value("config", Json::object());
    std::string given, recorded;
    for (const GivenOption& o : givenOptions) {
      const Json was = o.key == "init" ? record.value("init", Json()) : config.value(o.key, Json());
      if (was == o.value) continue;
      given += (given.empty() ? "" : ", ") + o.flag + " " + o.value.dump();
      recorded += (recorded.empty() ? "" : ", ") + o.key + " " + was.dump();
    }
    if (!given.empty())
      throw Error({.what = "a resumed run keeps the options it started with",
                   .where = "sharelens train --resume: " + given,
                   .expected = recorded + " (" + runJson.string() + ")",
                   .found = given,
                   .hint = "leave them out (--steps may make the run longer), or, to train on with other "
                           "options, start a new run from one of its checkpoints: sharelens train --init " +
                           *out + "/checkpoints/step-N ... --out NEW_RUN"});
  }
  if (request.config.device != "cpu" && request.config.device != "cuda")
    throw Error({.what = "unknown device",
                 .where = "sharelens train --device",
                 .expected = "cpu or cuda",
                 .found = request.config.device});
  if (postShareRatio && !init)
    throw Error({.what = "--postshare needs --init CHECKPOINT",
                 .where = "sharelens train",
                 .hint = "PostShare post-trains a pretrained checkpoint"});
  if (postShareRatio && (*postShareRatio <= 0.0 || *postShareRatio >= 1.0))
    throw Error({.what = "sharing ratio out of range",
                 .where = "sharelens train --postshare",
                 .expected = "a fraction in (0, 1)",
                 .found = std::to_string(*postShareRatio)});
  if (init && contextGiven) {  // the checkpoint's own context caps it: say so instead of training shorter
    const auto ckpt = Checkpoint::open(resolveModelPath(*init));
    const int64_t own = topologyOfCheckpoint(*ckpt, openModelView(*ckpt), context).model.context;
    if (own < context)
      throw Error({.what = "--context is longer than the checkpoint's context",
                   .where = "sharelens train --context",
                   .expected = "at most " + std::to_string(own) + " (" + *init + ")",
                   .found = std::to_string(context),
                   .hint = "its position tables stop there; leave --context out or give at most that"});
  }
  request.runDir = *out;
  CancellableTask task(request.config.threads);
  const bool quiet = request.distributed.rank != 0;  // rank 0 speaks for the run
  auto printer = [&](const std::string& role, const StepMetrics& m) {
    if (quiet || (m.step % 10 != 0 && !std::isfinite(m.valLoss))) return;
    std::fprintf(stderr, "\r\033[K%s%s step %6lld  loss %.4f%s  lr %.2e  %.0f tok/s\n", role.c_str(),
                 role.empty() ? "" : ":", static_cast<long long>(m.step), m.loss,
                 std::isfinite(m.valLoss) ? ("  val " + std::to_string(m.valLoss).substr(0, 6)).c_str() : "",
                 m.lr, m.tokensPerSecond);
  };
  if (postShareRatio) {  // post-train with the PostShare penalty on the DirectShare pairs, then share them
    PostShareOptions o{.init = *init,
                       .ratio = *postShareRatio,
                       .gamma = gamma,
                       .maxContext = context,
                       .config = request.config,
                       .eval = eval,
                       .outDir = *out};
    if (!lrGiven) o.config.lr = kPostShareLr;  // the paper's post-training rate, not pretraining's
    // A ShareLens run pretrained on this corpus with this seed: post-train on the batches after its last
    // (replaying its first ones would be more of the same pretraining, not recovery).
    if (const auto run = runDirectoryOf(*init); run && std::filesystem::exists(*run / "run.json")) {
      const Json pretrained = readJsonFile(*run / "run.json").value("config", Json::object());
      if (pretrained.value("corpus", std::string()) == o.config.corpus &&
          pretrained.value("seed", uint64_t{0}) == o.config.seed)
        o.config.dataOffset =
            pretrained.value("steps", int64_t{0}) + pretrained.value("data_offset", int64_t{0});
    }
    const PostShareReport r = runPostShare(o, task.context(), [&](const StepMetrics& m) { printer("", m); });
    task.finish();
    if (r.training != RunState::Finished) {  // nothing shared or reported yet: the same command continues it
      std::cout << "PostShare " << runStateName(r.training)
                << " before the shared models were made: " << r.message
                << "\nrun the same command again to continue from " << *out << "/run\n";
      return r.training == RunState::Stopped ? 130 : 1;
    }
    std::printf("PostShare at alpha %.3f (%zu %s, %s parameters saved), held-out NLL on %s:\n",
                r.pairs.achievedRatio(), r.pairs.chosen.size(),
                r.pairs.unitKind == "head" ? "heads" : "KV groups",
                humanCount(static_cast<double>(r.pairs.parametersSaved)).c_str(), r.original.text.c_str());
    for (const auto& [label, e] : {std::pair{"original", &r.original},
                                   {"DirectShare alone", &r.directShare},
                                   {"post-trained, unshared", &r.postTrained},
                                   {"PostShare", &r.postShare}})
      std::printf("  %-24s nll %.4f (+- %.4f)  perplexity %8.3f\n", label, e->nll, e->standardError(),
                  e->perplexity);
    std::printf("wrote %s/postshare.json\n", out->c_str());
    return 0;
  }
  if (init && !request.resume) {  // post-training: the checkpoint's topology, weights and tokenizer
    const auto ckpt = Checkpoint::open(resolveModelPath(*init));
    request.topology = topologyOfCheckpoint(*ckpt, openModelView(*ckpt), context);
    if (topologyPath)
      throw Error({.what = "give --init or --topology, not both",
                   .where = "sharelens train",
                   .hint = "a post-training run takes its topology from the checkpoint"});
    request.initFrom = *init;
  }
  if (request.resume && topologyPath) {  // only used if the run never got as far as run.json
    request.topology = readTopologyFile(*topologyPath);
    request.startIfNothingToResume = true;
  }
  if (!request.resume && !init) {
    if (!topologyPath)
      throw Error({.what = "missing --topology FILE",
                   .where = "sharelens train",
                   .hint = "write one with `sharelens topology --preset cycle --out t.json`, or pass "
                           "--resume or --init"});
    request.topology = readTopologyFile(*topologyPath);
  }
  if (compare) {
    if (request.resume)
      throw Error({.what = "--compare cannot --resume",
                   .where = "sharelens train",
                   .hint = "resume each run directory (RUN_DIR/model, RUN_DIR/baseline) on its own"});
    const auto [model, baseline] = runComparison(request, task.context(), printer);
    task.finish();
    std::cout << "model: " << runStateName(model) << ", baseline: " << runStateName(baseline) << " (" << *out
              << ")\n";
    return model == RunState::Finished && baseline == RunState::Finished
               ? 0
               : (task.context().stop.stop_requested() ? 130 : 1);
  }
  std::string message;
  const RunState state = runTraining(
      request, task.context(), [&](const StepMetrics& m) { printer("", m); }, &message);
  task.finish();
  if (!quiet) std::cout << runStateName(state) << ": " << message << " (" << *out << ")\n";
  if (state == RunState::Stopped) return 130;
  return state == RunState::Finished ? 0 : 1;
}

int runExportHf(Args& args) {
  const std::string path = args.positional("PATH (checkpoint or run directory)");
  const std::string out = args.positional("OUT_DIR");
  args.finish();
  const auto ckpt = Checkpoint::open(resolveModelPath(path));
  checkOutputs("sharelens export-hf", *ckpt, std::array{DeclaredOutput::directory(out, "OUT_DIR")});
  const ModelView view = openModelView(*ckpt);
  std::cout << "wrote " << writePlainHfCheckpoint(*ckpt, view, out) << "\n";
  return 0;
}

}  // namespace sharelens::cli
