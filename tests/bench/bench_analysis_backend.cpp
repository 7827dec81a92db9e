// The analyses' linear algebra on one backend, without the app (issue 37 goal 4): spectra, head-difference
// and layer-difference maps of a checkpoint with the CPU (LAPACK) or the CUDA (cuSOLVER) backend, timed per
// analysis and written in `sharelens analyze --json`'s schema, so that torch_analysis_peer.py --device cuda
// compares its ranks and times against torch.linalg on the same GPU. The CLI needs Cairo and the GUI's
// libraries; this needs only analysis/ and core/, so it builds on a GPU machine that has neither
// (tests/tools/device_check.sh).
// usage: bench_analysis_backend CHECKPOINT --device cpu|cuda --json OUT [--threads N] [--repeat N]
// --repeat N runs each analysis N times and keeps the fastest (the first CUDA call pays for the context and
// the solver's workspace).
#include <chrono>
#include <cstdio>
#include <string>

#include "analysis/backend.hpp"
#include "analysis/registry.hpp"
#include "core/arch/family.hpp"
#include "core/atomic_file.hpp"
#include "core/checkpoint.hpp"
#include "core/error.hpp"
#include "core/inspect_report.hpp"
#include "core/run_dir.hpp"

using namespace sharelens;

int main(int argc, char** argv) try {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: bench_analysis_backend CHECKPOINT --device cpu|cuda --json OUT [--threads N] "
                 "[--repeat N]\n");
    return 2;
  }
  const std::string path = argv[1];
  std::string device = "cpu", jsonOut;
  int threads = 0, repeat = 1;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--device")
      device = v;
    else if (a == "--json")
      jsonOut = v;
    else if (a == "--threads")
      threads = std::stoi(v);
    else if (a == "--repeat")
      repeat = std::max(1, std::stoi(v));
    else
      throw Error({.what = "unknown option", .where = "bench_analysis_backend", .found = a});
  }
  if (device != "cpu" && device != "cuda")
    throw Error({.what = "unknown device", .where = "--device", .expected = "cpu or cuda", .found = device});
  std::string whyNot;
  const auto backend = device == "cuda" ? makeCudaBackend(&whyNot) : makeCpuBackend();
  if (!backend)  // unlike the CLI, a benchmark of the CUDA backend never falls back to the CPU
    throw Error(
        {.what = "no CUDA backend", .where = "bench_analysis_backend --device cuda", .found = whyNot});
  const auto ckpt = Checkpoint::open(resolveModelPath(path));
  const ModelView view = openModelView(*ckpt);
  const AnalysisInput input{*ckpt, view, *backend, {}};
  const TaskContext ctx{.threads = threads};
  Json report = {{"source", path}, {"backend", backend->name()}, {"shape", modelShapeToJson(view.shape)}};
  Json timing = Json::object();
  for (const char* id : {"spectra", "heads", "layers"}) {
    const AnalysisKind& kind = analysis(id);
    double best = 1e300;
    AnalysisResult result;
    for (int r = 0; r < repeat; ++r) {
      const auto start = std::chrono::steady_clock::now();
      result = kind.run(input, AnalysisParams{}, ctx);
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    report[std::string(kind.jsonKey)] = kind.toJson(result);
    timing[std::string(id) + "_s"] = best;
    std::printf("%s on %s: %.3f s (best of %d)\n", id, backend->name().c_str(), best, repeat);
  }
  report["timing"] = timing;
  if (!jsonOut.empty()) writeFileAtomically(jsonOut, report.dump() + "\n");
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_analysis_backend: %s\n", e.what());
  return 1;
}
