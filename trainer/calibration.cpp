#include "trainer/calibration.hpp"

#include <sys/resource.h>
#include <torch/cuda.h>

#include <chrono>

#include "core/arch/family.hpp"
#include "core/corpus.hpp"
#include "core/error.hpp"
#include "core/run_dir.hpp"
#include "trainer/hf_tokenizer.hpp"
#include "trainer/inference_model.hpp"
#include "trainer/torch_compat.hpp"

namespace fs = std::filesystem;

namespace sharelens {
namespace {

// Calibration text: the corpus's training documents (never the held-out ones eval scores), each encoded
// without special tokens and followed by EOS, until `tokens` are there.
std::vector<int> calibrationTokens(const fs::path& path, const CalibrationOptions& o, std::string& text,
                                   std::string& tokenizerName, const TaskContext& ctx) {
  if (!o.tokenIds.empty()) {
    text = "token ids given by the caller";
    tokenizerName = "none";
    std::vector<int> ids = o.tokenIds;
    if (static_cast<int64_t>(ids.size()) > o.tokens) ids.resize(static_cast<size_t>(o.tokens));
    return ids;
  }
  const auto tokenizer = tokenizerForCheckpoint(path);
  tokenizerName = tokenizer->describe();
  ctx.report(0.01, "calibration: tokenising " + o.corpus);
  const Corpus corpus = loadCorpus(o.corpus);
  const CorpusSplit split = splitByDocument(corpus);
  std::vector<int> ids;
  for (const Document* d : split.train) {
    const std::vector<int> piece = tokenizer->encode(d->text, false);
    ids.insert(ids.end(), piece.begin(), piece.end());
    if (tokenizer->eosId() >= 0) ids.push_back(tokenizer->eosId());
    if (static_cast<int64_t>(ids.size()) >= o.tokens) break;
  }
  if (static_cast<int64_t>(ids.size()) > o.tokens) ids.resize(static_cast<size_t>(o.tokens));
  text = "training split of " + corpus.name + ", " + std::to_string(ids.size()) + " tokens";
  return ids;
}

// X += A^T A for the rows of a [B, T, n] activation, in double.
void accumulate(PackedSymmetric& x, const torch::Tensor& activation) {
  const torch::Tensor a = activation.reshape({-1, activation.size(-1)}).to(at::kDouble);
  const torch::Tensor gram = at::matmul(a.t(), a).to(at::kCPU).contiguous();
  x.addFull(gram.data_ptr<double>(), a.size(0));
}

}  // namespace

int64_t defaultCalibrationTokens(int64_t widestInput) {
  return std::max<int64_t>(2048, 8 * widestInput);
}

CalibrationResult calibrate(const fs::path& path, const CalibrationOptions& given, const TaskContext& ctx) {
  CalibrationOptions o = given;
  checkLogitLens(o.logitLens);
  if (o.logitLens == "per-token")
    throw Error({.what = "the per-token lens is not part of calibration",
                 .where = "--logit-lens per-token",
                 .expected = "per-sample or mean-state"});
  const auto started = std::chrono::steady_clock::now();
  const ComputeThreads computeThreads(o.threads > 0 ? o.threads : ctx.threadCount());
  torch::Device device = torch::kCPU;
  if (o.device == "cuda") {
    if (!torch::cuda::is_available())
      throw Error(
          {.what = "CUDA requested but unavailable", .where = "--device cuda", .hint = "use --device cpu"});
    device = torch::Device(torch::kCUDA, 0);
  }
  CalibrationResult r;
  const auto ckpt = Checkpoint::open(resolveModelPath(path));
  const ModelView view = openModelView(*ckpt);
  if (!view.hasHeads())
    throw Error({.what = "calibration needs the head counts",
                 .where = view.source,
                 .hint = "put the model's config.json next to the weights"});
  const int64_t widest = std::max(view.shape.hidden, view.shape.heads * view.shape.headDim);
  if (o.tokens <= 0) o.tokens = defaultCalibrationTokens(widest);
  const std::vector<int> ids = calibrationTokens(path, o, r.text, r.tokenizer, ctx);
  if (static_cast<int64_t>(ids.size()) < widest)
    throw Error({.what = "too few calibration tokens",
                 .where = r.text,
                 .expected = "at least " + std::to_string(widest) +
                             " (the widest projection input; fewer make its autocorrelation singular)",
                 .found = std::to_string(ids.size()),
                 .hint = "raise N in --calibration CORPUS:N, or give a longer --calibration-ids file"});
  for (int id : ids)
    if (id < 0 || id >= view.shape.vocab)
      throw Error({.what = "calibration token outside the model's vocabulary",
                   .where = r.text,
                   .expected = "ids in [0, " + std::to_string(view.shape.vocab) + ")",
                   .found = std::to_string(id),
                   .hint = "the ids (or the tokenizer beside the weights) belong to another model"});
  // A layer at a time over every window (SVD-LLM's streaming): one layer's weights and the windows'
  // activations are all that is resident, beside the accumulators.
  ctx.report(0.03, "calibration: embedding the tokens");
  InferenceModel model(*ckpt, view, device, InferenceModel::Weights::Streamed);
  const int64_t layers = model.layers(), d = view.shape.hidden, o_in = view.shape.heads * view.shape.headDim;
  r.layers.resize(static_cast<size_t>(layers));
  for (LayerInputAutocorrelation& l : r.layers) l = {PackedSymmetric(d), PackedSymmetric(o_in)};
  const int64_t chunk = std::min(o.chunk, model.context()), total = static_cast<int64_t>(ids.size());
  // [1, n, d] each: the residual stream of every window, advanced layer by layer
  std::vector<torch::Tensor> windows = model.embedWindows(ids, chunk);
  std::vector<int64_t> windowTokens;
  for (const torch::Tensor& x : windows) windowTokens.push_back(x.size(1));
  // Each window's (sample's) mean block output, for the grouping probe: [windows, layers, d].
  torch::Tensor windowMeans = at::zeros({static_cast<int64_t>(windows.size()), layers, d},
                                        at::TensorOptions().dtype(at::kDouble).device(device));
  for (int64_t l = 0; l < layers; ++l) {
    ctx.throwIfCancelled();
    model.loadLayer(l);
    for (size_t w = 0; w < windows.size(); ++w) {
      torch::Tensor& x = windows[w];
      InferenceModel::Trace trace;
      trace.tap = [&](int64_t layer, const torch::Tensor& attentionInput, const torch::Tensor& outputInput) {
        accumulate(r.layers[static_cast<size_t>(layer)].attentionInput, attentionInput);
        accumulate(r.layers[static_cast<size_t>(layer)].outputInput, outputInput);
      };
      x = model.runLayer(l, x, &trace);
      windowMeans[static_cast<int64_t>(w)][l] = x.squeeze(0).to(at::kDouble).mean(0);
    }
    model.unloadLayer(l);
    ctx.report(0.05 + 0.9 * static_cast<double>(l + 1) / static_cast<double>(layers),
               "calibration: layer " + std::to_string(l + 1) + " / " + std::to_string(layers));
  }
  r.tokens = total;
  if (layers >= 2) r.klDrift = model.klDriftOfMeans(lensMeans(windowMeans, windowTokens, o.logitLens));
  r.logitLens = o.logitLens;
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  r.peakResidentBytes = static_cast<int64_t>(usage.ru_maxrss) * 1024;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return r;
}

}  // namespace sharelens
