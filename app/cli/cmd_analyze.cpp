// sharelens analyze PATH [--spectra] [--heads] [--layers] [--masa] [--directshare RATIO] [--embedding]
//                        [--threshold 0.95] [--device cpu|cuda] [--threads N] [--masa-groups G]
//                        [--directshare-out DIR] --json FILE
// With no analysis flags, runs them all (DirectShare at ratio 0.25). Progress goes to stderr; Ctrl-C stops
// at the next matrix, writes nothing and exits 130.
#include <chrono>
#include <iostream>

#include "analysis/report_json.hpp"
#include "app/cli/commands.hpp"
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
  auto directShareRatio = args.number("directshare");
  const auto directShareOut = args.option("directshare-out");
  const auto masaGroups = args.option("masa-groups");
  const double threshold = args.number("threshold").value_or(0.95);
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
  if (!spectra && !heads && !layers && !masa && !embedding && !directShareRatio) {
    spectra = heads = layers = masa = embedding = true;
    directShareRatio = 0.25;
  }

  const auto ckpt = Checkpoint::open(path);
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
  if (spectra)
    timed("spectra", [&] { report["spectra"] = toJson(computeSpectra(*ckpt, view, *backend, {threshold}, ctx)); });
  if (heads)
    timed("head_differences",
          [&] { report["head_differences"] = toJson(computeHeadDifferences(*ckpt, view, *backend, threshold, 50, ctx)); });
  if (layers)
    timed("layer_differences", [&] {
      report["layer_differences"] = toJson(computeLayerDifferences(*ckpt, view, *backend, threshold, kAllProjs, ctx));
    });
  if (masa)
    timed("matrix_pca", [&] {
      MatrixPcaOptions options;
      if (masaGroups) options.groups = parseLayerGroups(*masaGroups, view.shape.layers);
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
  if (embedding)
    timed("embedding",
          [&] { report["embedding"] = toJson(computeEmbeddingStudy(*ckpt, view, *backend, threshold, ctx)); });
  report["timing"] = timing;
  task.finish();
  writeFileAtomically(*jsonOut, report.dump() + "\n");
  std::cerr << "wrote " << *jsonOut << "\n";
  return 0;
}

}  // namespace sharelens::cli
