// sharelens analyze PATH [--spectra] [--heads] [--layers] [--masa] [--directshare RATIO] [--embedding]
//                        [--threshold 0.95] [--device cpu|cuda] [--threads N] [--masa-groups G]
//                        [--directshare-out DIR] --json FILE
// With no analysis flags, runs them all (DirectShare at ratio 0.25). Progress goes to stderr; Ctrl-C stops
// at the next matrix, writes nothing and exits 130.
#include <chrono>
#include <iostream>

#include "analysis/report_json.hpp"
#include "trainer/embedding_truncation.hpp"
#include "trainer/forward_probe.hpp"
#include "app/cli/commands.hpp"
#include "core/run_dir.hpp"
#include "app/cli/progress_printer.hpp"
#include "core/arch/family.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"

namespace sharelens::cli {
namespace {

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int runAnalyze(Args& args) {
  const std::string path = args.positional("PATH");
  bool spectra = args.flag("spectra"), heads = args.flag("heads"), layers = args.flag("layers"),
       masa = args.flag("masa"), embedding = args.flag("embedding");
  const bool activations = args.flag("activations");
  const bool headsQkvOnly = args.flag("heads-qkv-only");
  const bool embeddingLoss = args.flag("embedding-loss");
  EvalOptions lossEval;
  lossEval.tokens = args.integer("embedding-loss-tokens", 2, 100'000'000).value_or(8192);
  ProbeOptions probe;
  probe.tokens = args.integer("tokens", 2, 100'000'000).value_or(probe.tokens);
  probe.corpus = args.option("corpus", probe.corpus);
  probe.logitLensTokens = args.integer("logit-lens-tokens", 0, 100'000'000).value_or(probe.logitLensTokens);
  probe.attentionTokens = args.integer("attention-tokens", 0, 1'000'000).value_or(probe.attentionTokens);
  const auto tokenIdsFile = args.option("token-ids");
  auto directShareRatio = args.number("directshare", 0.0, 1.0);
  const auto directShareOut = args.option("directshare-out");
  const auto masaGroups = args.option("masa-groups");
  const double threshold = args.number("threshold", 1e-6, 1.0).value_or(0.95);
  const std::string device = args.option("device", "cpu");
  const int threads = static_cast<int>(args.integer("threads", 1, 1024).value_or(0));
  const auto jsonOut = args.option("json");
  args.finish();
  if (!jsonOut)
    throw Error({.what = "missing --json FILE", .where = "sharelens analyze", .hint = "usage: " + args.usage()});
  if (!(threshold > 0.0 && threshold <= 1.0))
    throw Error({.what = "threshold out of range", .where = "sharelens analyze --threshold",
                 .expected = "a fraction in (0, 1]", .found = std::to_string(threshold)});
  if (device != "cpu" && device != "cuda")
    throw Error({.what = "unknown device", .where = "sharelens analyze --device", .expected = "cpu or cuda",
                 .found = device});
  if (!spectra && !heads && !layers && !masa && !embedding && !directShareRatio && !activations) {
    spectra = heads = layers = masa = embedding = true;
    directShareRatio = 0.25;
  }

  const auto ckpt = Checkpoint::open(resolveModelPath(path));
  const ModelView view = openModelView(*ckpt);
  std::string note;
  auto backend = selectBackend(device == "cuda" ? Device::Cuda : Device::Cpu, &note);
  if (!note.empty()) std::cerr << "note: " << note << "\n";

  CancellableTask task(threads);
  Json report = {{"schema", kAnalysisSchema},
                 {"source", path},
                 {"family", familyName(view.family)},
                 {"model_type", view.modelType},
                 {"threshold", threshold},
                 {"backend", backend->name()},
                 {"shape",
                  {{"layers", view.shape.layers}, {"hidden", view.shape.hidden}, {"heads", view.shape.heads},
                   {"kv_heads", view.shape.kvHeads}, {"head_dim", view.shape.headDim}, {"ffn", view.shape.ffn},
                   {"vocab", view.shape.vocab}, {"tied_embeddings", view.shape.tiedEmbeddings}}},
                 {"notes", note.empty() ? Json::array() : Json::array({note})}};
  Json timing = Json::object();
  auto timed = [&](const char* name, auto&& fn) {
    const auto start = std::chrono::steady_clock::now();
    task.progress().set(0.0, name);
    fn();
    timing[std::string(name) + "_s"] = secondsSince(start);
  };
  const TaskContext& ctx = task.context();
  std::optional<ProbeResult> probed;
  if (activations)
    timed("activations", [&] {
      probe.device = device;
      probe.threads = threads;
      if (tokenIdsFile) {
        probe.tokenIds = readTokenIds(*tokenIdsFile);
        probe.tokens = static_cast<int64_t>(probe.tokenIds.size());
      }
      probed = probeCheckpoint(path, probe, ctx);
      const auto rankStart = std::chrono::steady_clock::now();
      const RankMap map = pairwiseDifferenceMap(probed->residualDeltas, *backend, threshold, ctx);
      const double rankSeconds = secondsSince(rankStart);
      Json similarity = Json::array();
      const FloatMatrix& s = probed->attentionSimilarity;
      for (int64_t r = 0; r < s.rows; ++r) similarity.push_back(std::vector<float>(s.row(r), s.row(r) + s.cols));
      report["activations"] = {
          {"tokens", probed->tokens},
          {"corpus", tokenIdsFile ? *tokenIdsFile : probe.corpus},
          {"tokenizer", probed->tokenizer},
          {"token_ids", probed->tokenIds},
          {"layer_output_differences",
           {{"threshold", threshold}, {"effective_rank", Json::array()}, {"relative_difference", Json::array()}}},
          {"logit_lens", {{"tokens", std::min(probe.logitLensTokens, probed->tokens)}, {"kl_drift", probed->klDrift},
                          {"groups", groupsFromKlDrift(probed->klDrift, probed->layers)}}},
          {"attention_similarity", {{"tokens", std::min(probe.attentionTokens, probed->tokens)}, {"labels", probed->headLabels},
                                    {"similarity", similarity}}},
          {"timing", {{"forward_s", probed->forwardSeconds}, {"logit_lens_s", probed->logitLensSeconds},
                      {"rank_map_s", rankSeconds}}},
          {"peak_resident_bytes", probed->peakResidentBytes}};
      Json& maps = report["activations"]["layer_output_differences"];
      for (int64_t i = 0; i < map.n; ++i) {
        maps["effective_rank"].push_back(std::vector<int32_t>(map.rank.begin() + i * map.n, map.rank.begin() + (i + 1) * map.n));
        maps["relative_difference"].push_back(
            std::vector<float>(map.relativeDifference.begin() + i * map.n, map.relativeDifference.begin() + (i + 1) * map.n));
      }
    });
  if (spectra)
    timed("spectra", [&] { report["spectra"] = toJson(computeSpectra(*ckpt, view, *backend, {threshold}, ctx)); });
  if (heads)
    timed("head_differences",
          [&] { report["head_differences"] = toJson(computeHeadDifferences(*ckpt, view, *backend, {.threshold = threshold, .includeOutput = !headsQkvOnly}, ctx)); });
  if (layers)
    timed("layer_differences", [&] {
      report["layer_differences"] = toJson(computeLayerDifferences(*ckpt, view, *backend, threshold, kAllProjs, ctx));
    });
  if (masa)
    timed("matrix_pca", [&] {
      MatrixPcaOptions options;
      if (masaGroups && *masaGroups == "kl") {
        if (!probed)
          throw Error({.what = "--masa-groups kl needs the logit-lens drift", .where = "sharelens analyze",
                       .hint = "add --activations"});
        options.groups = groupsFromKlDrift(probed->klDrift, view.shape.layers);
      } else if (masaGroups) {
        options.groups = parseLayerGroups(*masaGroups, view.shape.layers);
      }
      report["matrix_pca"] = toJson(computeMatrixPca(*ckpt, view, options, ctx));
    });
  if (directShareRatio)
    timed("directshare", [&] {
      const DirectShareResult share = computeDirectShare(*ckpt, view, *directShareRatio, ctx);
      report["directshare"] = toJson(share);
      if (directShareOut) {
        writeDirectSharedCheckpoint(*ckpt, view, share, *directShareOut);
        std::cerr << "wrote the shared model to " << *directShareOut << "\n";
      }
    });
  if (embedding || embeddingLoss)
    timed("embedding", [&] {
      EmbeddingStudy study = computeEmbeddingStudy(*ckpt, view, *backend, threshold, ctx);
      if (embeddingLoss) {  // Fig. 2c: held-out loss with the trained embedding truncated to each rank
        lossEval.corpus = probe.corpus;
        lossEval.threads = threads;
        if (tokenIdsFile) lossEval.tokenIds = readTokenIds(*tokenIdsFile);
        std::vector<int64_t> ranks;
        for (const FactorizationPoint& p : study.curve) ranks.push_back(p.rank);
        const auto losses = truncatedEmbeddingLosses(path, ranks, lossEval, ctx);
        study.fullRankValidationNll = losses.front().eval.nll;
        study.validationText = losses.front().eval.text + ", " + std::to_string(losses.front().eval.tokens) + " tokens";
        for (size_t i = 0; i < study.curve.size(); ++i) study.curve[i].validationNll = losses[i + 1].eval.nll;
      }
      report["embedding"] = toJson(study);
    });
  report["timing"] = timing;
  task.finish();
  writeFileAtomically(*jsonOut, report.dump() + "\n");
  std::cerr << "wrote " << *jsonOut << "\n";
  return 0;
}

}  // namespace sharelens::cli
