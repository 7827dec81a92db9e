#include "trainer/evaluate.hpp"

#include <torch/cuda.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/arch/family.hpp"
#include "core/corpus.hpp"
#include "core/error.hpp"
#include "core/run_dir.hpp"
#include "trainer/fused_ops.hpp"
#include "trainer/hf_tokenizer.hpp"
#include "trainer/inference_model.hpp"
#include "trainer/scoring.hpp"
#include "trainer/torch_compat.hpp"

namespace fs = std::filesystem;

namespace sharelens {
namespace {

// Logits of one batch are B x W x V floats; keep them near 256 MB whatever the vocabulary.
constexpr int64_t kLogitBudget = int64_t{64} << 20;

torch::Device deviceFor(const std::string& name) {
  if (name == "cpu") return torch::kCPU;
  if (name == "cuda") {
    if (!torch::cuda::is_available())
      throw Error({.what = "CUDA requested but unavailable",
                   .where = "--device cuda",
                   .found = "LibTorch " + std::string(TORCH_VERSION) + " without a usable GPU",
                   .hint = "use --device cpu"});
    return torch::Device(torch::kCUDA, 0);
  }
  throw Error({.what = "unknown device", .where = "--device", .expected = "cpu or cuda", .found = name});
}

}  // namespace

HeldOutSource heldOutSource(const fs::path& path, const EvalOptions& options) {
  HeldOutSource s{"brown", 0.05};
  const auto run = runDirectoryOf(path);
  if (run) {
    const Json record = readJsonFile(*run / "run.json");
    if (const Json* config = record.contains("config") ? &record["config"] : nullptr) {
      if (config->contains("corpus") && (*config)["corpus"].is_string())
        s.corpus = (*config)["corpus"].get<std::string>();
      if (config->contains("validation_fraction") && (*config)["validation_fraction"].is_number())
        s.validationFraction = (*config)["validation_fraction"].get<double>();
    }
  }
  const HeldOutSource trained = s;
  if (options.corpus) s.corpus = *options.corpus;
  if (options.validationFraction) s.validationFraction = *options.validationFraction;
  // Documents are held out by a hash below the share (splitByDocument), so a larger share of the run's own
  // corpus takes in documents the run trained on: its "held-out" loss would not be one.
  if (run && s.corpus == trained.corpus && s.validationFraction > trained.validationFraction)
    throw Error(
        {.what = "this share of the corpus includes documents the run trained on",
         .where = "--validation-fraction",
         .expected = "at most " + std::to_string(trained.validationFraction) +
                     " (the run's held-out share, " + (*run / "run.json").string() + ")",
         .found = std::to_string(s.validationFraction),
         .hint = "leave it out to score the run's own held-out documents, or evaluate on another corpus"});
  return s;
}

double EvalResult::standardError() const {
  const size_t n = windowNll.size();
  if (n < 2 || tokens == 0) return NAN;
  // Ratio estimator of a mean over clusters (windows) of unequal size.
  const double mean = nll, avgTokens = static_cast<double>(tokens) / static_cast<double>(n);
  double sum = 0;
  for (size_t i = 0; i < n; ++i) {
    const double r = windowNll[i] - mean * static_cast<double>(windowTokens[i]);
    sum += r * r;
  }
  return std::sqrt(sum / static_cast<double>(n - 1) / static_cast<double>(n)) / avgTokens;
}

HeldOutText heldOutTokens(const fs::path& path, const EvalOptions& options, const TaskContext& ctx) {
  HeldOutText out;
  if (!options.tokenIds.empty()) {
    out.ids = options.tokenIds;
    if (static_cast<int64_t>(out.ids.size()) - 1 > options.tokens)
      out.ids.resize(static_cast<size_t>(options.tokens + 1));
    out.tokenizer = "token ids given by the caller";
    out.description = "token ids";
    out.documentStarts = {0};
    out.documentIds = {"token ids"};
    return out;
  }
  const auto tokenizer = tokenizerForCheckpoint(path);
  out.tokenizer = tokenizer->describe();
  const HeldOutSource source = heldOutSource(path, options);
  ctx.report(0.02, "eval: tokenising the held-out split of " + source.corpus);
  const Corpus corpus = loadCorpus(source.corpus);
  const CorpusSplit split = splitByDocument(corpus, source.validationFraction);
  const int eos = tokenizer->eosId();
  size_t documents = 0;
  for (const Document* d : split.validation) {
    ctx.throwIfCancelled();
    const std::vector<int> ids = tokenizer->encode(d->text, false);
    if (ids.empty() && eos < 0) continue;
    out.documentStarts.push_back(static_cast<int64_t>(out.ids.size()));
    out.documentIds.push_back(d->id);
    out.ids.insert(out.ids.end(), ids.begin(), ids.end());
    if (eos >= 0) out.ids.push_back(eos);
    ++documents;
    if (static_cast<int64_t>(out.ids.size()) > options.tokens) break;
  }
  if (static_cast<int64_t>(out.ids.size()) - 1 > options.tokens)
    out.ids.resize(static_cast<size_t>(options.tokens + 1));
  char share[32];
  std::snprintf(share, sizeof share, "%g%%", 100.0 * source.validationFraction);
  out.description = "held-out split of " + corpus.name + " (" + share + " of documents; " +
                    std::to_string(documents) + " of " + std::to_string(split.validation.size()) + " used)";
  return out;
}

void requireScorable(const HeldOutText& text, int64_t vocab) {
  if (text.ids.size() < 2)
    throw Error({.what = "too little text to evaluate",
                 .where = text.description,
                 .expected = ">= 2 tokens",
                 .found = std::to_string(text.ids.size()),
                 .hint = "use a larger corpus or a larger validation share"});
  for (int id : text.ids)
    if (id < 0 || id >= vocab)
      throw Error({.what = "token id outside the model's vocabulary",
                   .where = text.tokenizer,
                   .expected = "ids in [0, " + std::to_string(vocab) + ")",
                   .found = std::to_string(id),
                   .hint = "the tokenizer beside the weights belongs to another model"});
}

int64_t evalWindow(const EvalOptions& options, int64_t context) {
  return options.window > 0 ? std::min(options.window, context) : std::min<int64_t>(context, 1024);
}

// Batches of consecutive windows of equal length (only the last window can be shorter), at most
// kEvalBatchTokens predicted tokens each: the size at which the training step's GEMMs and elementwise kernels
// run from cache (measured on the 1M-parameter model: 65k-token batches ran 1.3x slower than 4k-token ones).
constexpr int64_t kEvalBatchTokens = 4096;

EvalResult scoreTokens(const InferenceModel& model, const HeldOutText& text, int64_t window,
                       const TaskContext& ctx) {
  EvalResult r;
  r.window = window;
  const std::vector<int>& ids = text.ids;
  const int64_t n = static_cast<int64_t>(ids.size());
  const torch::Device device = model.device();
  const int64_t perBatch = std::clamp<int64_t>(
      std::min(kEvalBatchTokens / window, kLogitBudget / std::max<int64_t>(1, model.vocab()) / window), 1,
      int64_t{1} << 20);
  r.documentIds = text.documentIds;
  r.documentNll.assign(text.documentIds.size(), 0.0);
  r.documentTokens.assign(text.documentIds.size(), 0);
  double total = 0;
  std::vector<int64_t> starts;
  for (int64_t s = 0; s + 1 < n; s += window) starts.push_back(s);
  for (size_t i = 0; i < starts.size();) {
    ctx.throwIfCancelled();
    const int64_t length = std::min(window + 1, n - starts[i]);
    std::vector<int64_t> batch;
    size_t j = i;
    for (; j < starts.size() && static_cast<int64_t>(j - i) < perBatch &&
           std::min(window + 1, n - starts[j]) == length;
         ++j)
      batch.insert(batch.end(), ids.begin() + starts[j], ids.begin() + starts[j] + length);
    const int64_t b = static_cast<int64_t>(j - i), predicted = length - 1;
    const torch::Tensor tokens = at::tensor(batch, at::kLong).view({b, length}).to(device);
    const torch::Tensor logits = model.logits(model.forward(tokens.narrow(1, 0, predicted)));  // [b, T, V]
    const torch::Tensor nll =  // [b T] float64 on the CPU, row-major: window k's tokens at k T ...
        tokenNll(logits.reshape({b * predicted, -1}).to(at::kFloat).contiguous(),
                 tokens.narrow(1, 1, predicted).reshape({-1}).contiguous())
            .to(at::kCPU)
            .contiguous();
    const double* v = nll.data_ptr<double>();
    for (int64_t k = 0; k < b; ++k) {
      double sum = 0;
      // The target of window k's token t is ids[starts[i + k] + 1 + t]: its document takes its NLL.
      const int64_t first = starts[i + static_cast<size_t>(k)] + 1;
      const std::vector<int64_t>& docStarts = text.documentStarts;
      // The last document starting at or before `first` (-1: none, only when there are no documents).
      int64_t doc = std::upper_bound(docStarts.begin(), docStarts.end(), first) - docStarts.begin() - 1;
      for (int64_t t = 0; t < predicted; ++t) {
        while (doc + 1 < static_cast<int64_t>(docStarts.size()) && docStarts[doc + 1] <= first + t) ++doc;
        const double x = v[k * predicted + t];
        sum += x;
        if (doc >= 0) {
          r.documentNll[static_cast<size_t>(doc)] += x;
          ++r.documentTokens[static_cast<size_t>(doc)];
        }
      }
      r.windowNll.push_back(sum);
      r.windowTokens.push_back(predicted);
      total += sum;
      r.tokens += predicted;
    }
    i = j;
    ctx.report(0.05 + 0.95 * static_cast<double>(i) / static_cast<double>(starts.size()),
               "eval: " + std::to_string(r.tokens) + " tokens scored");
  }
  r.nll = r.tokens ? total / static_cast<double>(r.tokens) : NAN;
  r.perplexity = std::exp(r.nll);
  return r;
}

EvalResult evaluateCheckpoint(const fs::path& path, const EvalOptions& options, const TaskContext& ctx) {
  using clock = std::chrono::steady_clock;
  const auto started = clock::now();
  if (options.tokens < 1)
    throw Error({.what = "nothing to evaluate",
                 .where = "--tokens",
                 .expected = ">= 1",
                 .found = std::to_string(options.tokens)});
  const ComputeThreads computeThreads(options.threads > 0 ? options.threads : ctx.threadCount());
  const torch::Device device = deviceFor(options.device);
  const auto ckpt = Checkpoint::open(resolveModelPath(path));
  const ModelView view = openModelView(*ckpt);
  const HeldOutText text = heldOutTokens(path, options, ctx);
  requireScorable(text, view.shape.vocab);
  ctx.report(0.04, "eval: loading the model");
  const InferenceModel model(*ckpt, view, device);
  const int64_t window = evalWindow(options, model.context());
  EvalResult r = scoreTokens(model, text, window, ctx);
  r.source = path.string();
  r.tokenizer = text.tokenizer;
  r.text = text.description;
  r.seconds = std::chrono::duration<double>(clock::now() - started).count();
  return r;
}

Json evalResultToJson(const EvalResult& r) {
  const double se = r.standardError();
  return {{"schema", "sharelens.eval/1"},
          {"source", r.source},
          {"tokenizer", r.tokenizer},
          {"text", r.text},
          {"tokens", r.tokens},
          {"window", r.window},
          {"windows", r.windowNll.size()},
          {"nll", r.nll},
          {"nll_standard_error", std::isfinite(se) ? Json(se) : Json(nullptr)},
          {"perplexity", r.perplexity},
          {"seconds", r.seconds},
          {"window_nll", r.windowNll},
          {"window_tokens", r.windowTokens},
          {"document_ids", r.documentIds},
          {"document_nll", r.documentNll},
          {"document_tokens", r.documentTokens}};
}

EvalResult evalResultFromJson(const Json& j, const std::string& where) {
  EvalResult r;
  try {
    r.source = j.at("source").get<std::string>();
    r.tokenizer = j.at("tokenizer").get<std::string>();
    r.text = j.at("text").get<std::string>();
    r.tokens = j.at("tokens").get<int64_t>();
    r.window = j.at("window").get<int64_t>();
    r.nll = j.at("nll").is_number() ? j.at("nll").get<double>() : NAN;
    r.perplexity = j.at("perplexity").is_number() ? j.at("perplexity").get<double>() : NAN;
    r.seconds = j.at("seconds").get<double>();
    r.windowNll = j.at("window_nll").get<std::vector<double>>();
    r.windowTokens = j.at("window_tokens").get<std::vector<int64_t>>();
    r.documentIds = j.at("document_ids").get<std::vector<std::string>>();
    r.documentNll = j.at("document_nll").get<std::vector<double>>();
    r.documentTokens = j.at("document_tokens").get<std::vector<int64_t>>();
  } catch (const Json::exception& e) {
    throw Error({.what = "not an evaluation written by this version",
                 .where = where,
                 .expected = "sharelens.eval/1 with per-window and per-document sums",
                 .found = e.what(),
                 .hint = "remove the file; the evaluation is run again"});
  }
  if (r.documentNll.size() != r.documentIds.size() || r.documentTokens.size() != r.documentIds.size())
    throw Error(
        {.what = "document_nll and document_tokens differ in length from document_ids",
         .where = where,
         .expected = std::to_string(r.documentIds.size()),
         .found = std::to_string(r.documentNll.size()) + " and " + std::to_string(r.documentTokens.size())});
  if (r.windowNll.size() != r.windowTokens.size())
    throw Error({.what = "window_nll and window_tokens differ in length",
                 .where = where,
                 .expected = std::to_string(r.windowNll.size()),
                 .found = std::to_string(r.windowTokens.size())});
  return r;
}

}  // namespace sharelens
