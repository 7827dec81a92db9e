// sharelens eval CHECKPOINT [--corpus CORPUS|DIR] [--tokens N|all] [--window W] [--token-ids FILE]
//                [--validation-fraction F] [--device cpu|cuda] [--threads N] [--json FILE]
// Validation NLL per token and perplexity of anything the model views open (trainer/evaluate.hpp).
#include <array>
#include <cstdio>
#include <iostream>

#include "app/cli/commands.hpp"
#include "app/cli/progress_printer.hpp"
#include "core/atomic_file.hpp"
#include "core/checkpoint.hpp"
#include "core/error.hpp"
#include "core/output_guard.hpp"
#include "core/run_dir.hpp"
#include "trainer/evaluate.hpp"

namespace sharelens::cli {

EvalOptions parseEvalOptions(Args& args) {
  EvalOptions o;
  o.corpus = args.option("corpus");
  o.tokens = args.integerOrWord("tokens", 1, 1'000'000'000, "all", kEveryHeldOutToken).value_or(o.tokens);
  o.window = args.integer("window", 1, 1 << 20).value_or(0);
  o.validationFraction = args.number("validation-fraction", 1e-6, 1.0 - 1e-6);
  if (const auto ids = args.option("token-ids")) o.tokenIds = readTokenIds(*ids);
  o.device = args.option("device", o.device);
  o.threads = static_cast<int>(args.integer("threads", 1, 1024).value_or(0));
  return o;
}

void printEval(const EvalResult& r) {
  std::printf(
      "%s\n  nll %.4f nats/token (+- %.4f), perplexity %.3f\n  %lld tokens in %zu windows of %lld, %s\n"
      "  tokenizer: %s\n",
      r.source.c_str(), r.nll, r.standardError(), r.perplexity, static_cast<long long>(r.tokens),
      r.windowNll.size(), static_cast<long long>(r.window), r.text.c_str(), r.tokenizer.c_str());
}

int runEval(Args& args) {
  const std::string path = args.positional("CHECKPOINT");
  const EvalOptions options = parseEvalOptions(args);
  const auto jsonOut = args.option("json");
  args.finish();
  if (jsonOut)
    checkOutputs("sharelens eval", *Checkpoint::open(resolveModelPath(path)),
                 std::array{DeclaredOutput::file(*jsonOut, "--json")});
  CancellableTask task(options.threads);
  const EvalResult r = evaluateCheckpoint(path, options, task.context());
  task.finish();
  printEval(r);
  if (jsonOut) writeFileAtomically(*jsonOut, evalResultToJson(r).dump(2) + "\n");
  return 0;
}

}  // namespace sharelens::cli
