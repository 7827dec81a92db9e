#include "trainer/forward_probe.hpp"

#include <sys/resource.h>
#include <torch/cuda.h>

#include <algorithm>
#include <chrono>

#include "core/arch/family.hpp"
#include "core/corpus.hpp"
#include "core/error.hpp"
#include "core/run_dir.hpp"
#include "trainer/hf_tokenizer.hpp"
#include "trainer/inference_model.hpp"
#include "trainer/torch_compat.hpp"

namespace sharelens {
namespace {

FloatMatrix toMatrix(const torch::Tensor& t2d) {
  const torch::Tensor c = t2d.to(at::kCPU, at::kFloat).contiguous();
  FloatMatrix m(c.size(0), c.size(1));
  std::copy(c.data_ptr<float>(), c.data_ptr<float>() + c.numel(), m.data.begin());
  return m;
}

int64_t peakResidentBytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;
}

}  // namespace

ActivationData probeCheckpoint(const std::filesystem::path& path, const ProbeOptions& options,
                               const TaskContext& ctx) {
  using clock = std::chrono::steady_clock;
  const int threads = options.threads > 0 ? options.threads : ctx.threadCount();
  const ComputeThreads computeThreads(threads);
  const auto ckpt = Checkpoint::open(resolveModelPath(path));
  const ModelView view = openModelView(*ckpt);
  torch::Device device = torch::kCPU;
  if (options.device == "cuda") {
    if (!torch::cuda::is_available())
      throw Error(
          {.what = "CUDA requested but unavailable", .where = "--device cuda", .hint = "use --device cpu"});
    device = torch::Device(torch::kCUDA, 0);
  }
  ctx.report(0.0, "activations: opening the model");
  // Streamed: one layer's weights are resident at a time. Resident, the model's float32 copy would sit beside
  // the residual contributions, which are kept whole (4.6 GiB beside 3.1 GiB for 25,000 tokens of a 1B
  // model).
  InferenceModel model(*ckpt, view, device, InferenceModel::Weights::Streamed);
  ActivationData r;
  r.corpus = options.tokenIds.empty() ? options.corpus : "token ids";
  r.layers = model.layers();
  r.hidden = view.shape.hidden;
  r.heads = view.shape.heads;

  // Real text, tokenised with the checkpoint's own tokenizer, until there are enough tokens.
  std::vector<int> stream = options.tokenIds;
  if (stream.empty()) {
    const auto tokenizer = tokenizerForCheckpoint(path);
    r.tokenizer = tokenizer->describe();
    ctx.report(0.02, "activations: tokenising " + options.corpus);
    const Corpus corpus = loadCorpus(options.corpus);
    for (const Document& d : corpus.documents) {
      const std::vector<int> ids = tokenizer->encode(d.text, false);
      stream.insert(stream.end(), ids.begin(), ids.end());
      if (static_cast<int64_t>(stream.size()) >= options.tokens) break;
    }
  } else {
    r.tokenizer = "token ids given by the caller";
  }
  r.tokens = std::min<int64_t>(options.tokens, static_cast<int64_t>(stream.size()));
  stream.resize(static_cast<size_t>(r.tokens));
  r.tokenIds = stream;
  for (int id : stream)
    if (id < 0 || id >= view.shape.vocab)
      throw Error({.what = "the tokenizer produces ids outside the model's vocabulary",
                   .where = r.tokenizer,
                   .expected = "< " + std::to_string(view.shape.vocab),
                   .found = std::to_string(id),
                   .hint = "the tokenizer beside the weights belongs to another model"});

  const int64_t chunk = std::min(options.chunk, model.context());
  const bool perTokenLens = options.logitLens == "per-token";
  checkLogitLens(options.logitLens);
  // The residual stream of every window of `chunk` tokens, [1, n, d] each, advanced a layer at a time over
  // all of them (as calibration does). Each window is its own sequence, as when each went through the whole
  // model in turn, and the numbers are those: the same operations on the same shapes.
  ctx.report(0.03, "activations: embedding " + std::to_string(r.tokens) + " tokens");
  const auto started = clock::now();
  std::vector<torch::Tensor> windows = model.embedWindows(stream, chunk);
  // Per-token lens: the first windows' streams after each layer, until logitLensTokens tokens are covered
  // ([window][layer] -> [n, d]); the V-wide softmaxes come after the last layer.
  size_t lensWindows = 0;
  for (int64_t covered = 0;
       perTokenLens && r.layers >= 2 && lensWindows < windows.size() && covered < options.logitLensTokens;)
    covered += windows[lensWindows++].size(1);
  std::vector<std::vector<torch::Tensor>> lensStates(lensWindows);
  // The attention maps: one short sample sequence of its own, advanced with the windows.
  const int64_t sample = std::min({options.attentionTokens, model.context(), r.tokens});
  torch::Tensor sampleStream =
      sample >= 2 ? model.embedWindows({stream.begin(), stream.begin() + sample}, sample).front()
                  : torch::Tensor();
  std::vector<torch::Tensor> maps;  // (layer, head) -> the flattened [T, T] map

  r.residualDeltas.assign(static_cast<size_t>(r.layers), FloatMatrix(r.tokens, r.hidden));
  // Each window's mean of each block's output h_l (double): [windows, layers, d], for the mean-state and
  // per-sample lenses.
  std::vector<int64_t> windowTokens;
  for (const torch::Tensor& x : windows) windowTokens.push_back(x.size(1));
  torch::Tensor windowMeans = at::zeros({static_cast<int64_t>(windows.size()), r.layers, r.hidden},
                                        at::TensorOptions().dtype(at::kDouble).device(device));
  for (int64_t l = 0; l < r.layers; ++l) {
    ctx.throwIfCancelled();
    model.loadLayer(l);
    int64_t at = 0;
    for (size_t w = 0; w < windows.size(); ++w) {
      ctx.throwIfCancelled();
      torch::Tensor& x = windows[w];
      const torch::Tensor after = model.runLayer(l, x);
      const torch::Tensor delta = (after - x).squeeze(0).to(at::kCPU).contiguous();  // dh_l = h_l - h_{l-1}
      std::copy(delta.data_ptr<float>(), delta.data_ptr<float>() + delta.numel(),
                r.residualDeltas[static_cast<size_t>(l)].row(at));
      windowMeans[static_cast<int64_t>(w)][l] = after.squeeze(0).to(at::kDouble).mean(0);
      if (w < lensWindows) lensStates[w].push_back(after.squeeze(0));
      at += x.size(1);
      x = after;
      ctx.report(
          0.05 + 0.85 * static_cast<double>(l * r.tokens + at) / static_cast<double>(r.layers * r.tokens),
          "activations: layer " + std::to_string(l + 1) + " / " + std::to_string(r.layers) + ", " +
              std::to_string(at) + " / " + std::to_string(r.tokens) + " tokens");
    }
    if (sampleStream.defined()) {
      InferenceModel::Trace trace;
      sampleStream = model.runLayer(l, sampleStream, &trace, /*captureAttention=*/true);
      for (int64_t h = 0; h < r.heads; ++h) {
        maps.push_back(trace.attention.front().select(0, 0).select(0, h).reshape({-1}));
        r.headLabels.push_back("L" + std::to_string(l) + ".h" + std::to_string(h));
      }
    }
    model.unloadLayer(l);
  }
  windows.clear();
  r.forwardSeconds = std::chrono::duration<double>(clock::now() - started).count();

  ctx.report(0.92, "activations: logit lens");
  const auto lensStart = clock::now();
  if (perTokenLens) {
    std::vector<double> klSum(static_cast<size_t>(std::max<int64_t>(0, r.layers - 1)), 0.0);
    int64_t klTokens = 0;
    // The logits of a window's tokens once per layer (a streamed model rebuilds its output head each call),
    // their log-probabilities in double: between late layers a token's KL is ~1e-4, where float's ~1e-6
    // error in each log-probability would be a percent. In double kLensRows tokens at a time ([rows, V]).
    constexpr int64_t kLensRows = 64;
    for (const std::vector<torch::Tensor>& states : lensStates) {
      ctx.throwIfCancelled();
      const int64_t n = states.front().size(0);
      torch::Tensor previous = model.logits(states.front());  // [n, V], float
      for (int64_t l = 1; l < r.layers; ++l) {
        const torch::Tensor current = model.logits(states[static_cast<size_t>(l)]);
        for (int64_t row = 0; row < n; row += kLensRows) {
          const int64_t rows = std::min(kLensRows, n - row);
          const torch::Tensor p = at::log_softmax(previous.narrow(0, row, rows).to(torch::kDouble), -1);
          const torch::Tensor q = at::log_softmax(current.narrow(0, row, rows).to(torch::kDouble), -1);
          klSum[static_cast<size_t>(l - 1)] += (p.exp() * (p - q)).sum().item<double>();
        }
        previous = current;
      }
      klTokens += n;
    }
    for (double sum : klSum) r.klDrift.push_back(klTokens ? sum / static_cast<double>(klTokens) : 0.0);
    r.logitLensTokens = klTokens;
  } else if (r.layers >= 2 && r.tokens > 0) {
    r.klDrift = model.klDriftOfMeans(lensMeans(windowMeans, windowTokens, options.logitLens));
    r.logitLensTokens = r.tokens;
  }
  r.logitLensSeconds = std::chrono::duration<double>(clock::now() - lensStart).count();

  // Attention maps of the sample: cosine similarity between every pair of (layer, head).
  if (!maps.empty()) {
    const torch::Tensor x = at::stack(maps);
    const torch::Tensor unit = x / x.norm(2, 1, true).clamp_min(1e-12);
    r.attentionSimilarity = toMatrix(at::matmul(unit, unit.t()));
    r.attentionTokens = sample;
  }
  r.peakResidentBytes = peakResidentBytes();
  ctx.report(1.0, "activations: done");
  return r;
}

std::vector<FloatMatrix> hiddenStates(const Checkpoint& ckpt, const std::vector<int>& tokens) {
  const ModelView view = openModelView(ckpt);
  const InferenceModel model(ckpt, view, torch::kCPU);
  InferenceModel::Trace trace;
  model.forward(at::tensor(std::vector<int64_t>(tokens.begin(), tokens.end()), at::kLong).unsqueeze(0),
                &trace);
  std::vector<FloatMatrix> out;
  for (const torch::Tensor& h : trace.residual) out.push_back(toMatrix(h.squeeze(0)));
  out.push_back(toMatrix(model.logits(trace.residual.back().squeeze(0))));  // last: the logits
  return out;
}

}  // namespace sharelens
