// Evaluation of any checkpoint the model views open (DESIGN.md section 4, "Evaluation"): the mean
// next-token negative log-likelihood in nats per token, and perplexity exp(NLL), on held-out text tokenised
// with the checkpoint's own tokenizer. Torch-free interface; every derived model (DirectShare, PostShare,
// compressed, truncated embeddings) is scored through the same function, so their numbers are comparable.
//
// Text: the corpus's held-out documents (the same document-hash split training uses, so a ShareLens run is
// scored on text it never saw), each encoded without special tokens and joined with the tokenizer's EOS
// token. Windows: W + 1 tokens with stride W (W = min(context, 1024) unless given), so every token after
// the first of the stream is predicted exactly once, from the tokens before it in its window.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/corpus.hpp"
#include "core/json_util.hpp"
#include "core/task.hpp"

namespace sharelens {

struct EvalOptions {
  // The text. Unset: a ShareLens run's own corpus and validation share (from its run.json), so a run is
  // scored on the documents it held out; brown and 0.05 (training's defaults) for anything else.
  std::optional<std::string> corpus;         // a named corpus (core/corpus.hpp) or a directory of .txt files
  std::optional<double> validationFraction;  // the held-out share of documents
  int64_t tokens = 32768;  // at most this many tokens of held-out text are scored (kEveryHeldOutToken: all)
  int64_t window = 0;      // tokens predicted per window; 0: min(context, 1024)
  std::vector<int> tokenIds;  // when given: score exactly these tokens instead of corpus text
  std::string device = "cpu";
  int threads = 0;
};

struct EvalResult {
  std::string source;     // the path evaluated
  std::string tokenizer;  // what tokenised the text
  std::string text;       // "held-out split of brown (5% of documents, 23 documents)" or "token ids"
  int64_t tokens = 0;     // predicted tokens
  int64_t window = 0;
  double nll = 0;         // nats per token
  double perplexity = 0;  // exp(nll)
  double seconds = 0;
  std::vector<double> windowNll;      // summed NLL of each window (for paired comparisons)
  std::vector<int64_t> windowTokens;  // predicted tokens of each window
  // The same sums per held-out document (a token counts for the document it belongs to, whichever window
  // predicted it): what a document-level bootstrap resamples. One entry, "token ids", for given ids.
  std::vector<std::string> documentIds;
  std::vector<double> documentNll;
  std::vector<int64_t> documentTokens;
  // Standard error of the mean NLL, treating windows as independent samples (ratio estimator).
  double standardError() const;
};

EvalResult evaluateCheckpoint(const std::filesystem::path& checkpointPath, const EvalOptions& options,
                              const TaskContext& ctx);

// The held-out token stream eval scores (exposed for other callers that must score the same text).
struct HeldOutText {
  std::vector<int> ids;
  std::string tokenizer, description;
  std::vector<int64_t> documentStarts;   // where each document's tokens begin in `ids` (the first is 0)
  std::vector<std::string> documentIds;  // the corpus's id of each document
};
// Where the held-out text comes from for `path` under `options` (the run's own corpus and share when unset).
struct HeldOutSource {
  std::string corpus;
  double validationFraction = 0.05;
};
HeldOutSource heldOutSource(const std::filesystem::path& checkpointPath, const EvalOptions& options);

HeldOutText heldOutTokens(const std::filesystem::path& checkpointPath, const EvalOptions& options,
                          const TaskContext& ctx);

// A named Error unless `text` has two tokens or more, all in [0, vocab) (what every scorer checks first).
void requireScorable(const HeldOutText& text, int64_t vocab);
// Tokens predicted per window for a model of `context`: options.window capped at it, else min(context, 1024).
int64_t evalWindow(const EvalOptions& options, int64_t context);

Json evalResultToJson(const EvalResult& r);  // with the per-window sums
// The inverse, for a job that continues from evaluations it wrote (`where` names the file in errors).
EvalResult evalResultFromJson(const Json& j, const std::string& where);

}  // namespace sharelens
