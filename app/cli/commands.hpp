// The sharelens subcommands. Each takes its arguments and returns the process exit status:
// 0 success, 2 bad input (a sharelens::Error: bad file, bad flag), 130 cancelled (Ctrl-C).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "analysis/registry.hpp"
#include "app/cli/args.hpp"
#include "trainer/evaluate.hpp"

namespace sharelens::cli {

struct Command {
  std::string_view name;
  std::string usage;  // parts come from the registries (analyses, figures, views)
  std::string summary;
  int (*run)(Args& args);
};

const std::vector<Command>& commands();
const Command* findCommand(std::string_view name);

// Runs `fn` and maps sharelens::Error to a message on stderr and exit status 2.
int runCommand(const Command& command, std::vector<std::string> argv);
void printUsage();

int runInspect(Args& args);
int runDiff(Args& args);
int runDumpView(Args& args);
int runConvert(Args& args);
int runAnalyze(Args& args);
int runTopology(Args& args);
int runParams(Args& args);
int runTrain(Args& args);
int runExportHf(Args& args);
int runHiddenStates(Args& args);
int runTokenize(Args& args);
int runExport(Args& args);
int runEval(Args& args);
int runExperimentCommand(Args& args);
int runCompress(Args& args);
// "spectrum, heads, ..., training, rank-vs-step, topology": what `export --view` draws (the figure registry's
// figures, and the figures of runs and topology files).
std::string exportViewIds();
std::vector<int> readTokenIds(const std::string& path);
// --corpus, --tokens, --window, --validation-fraction, --token-ids, --device, --threads (shared by every
// command that evaluates), and the result as `eval` prints it.
EvalOptions parseEvalOptions(Args& args);
// --threshold, --lowest-pairs, --heads-qkv-only, --ratio, --tokens, --corpus, --token-ids, --logit-lens,
// --logit-lens-tokens, --attention-tokens, --embedding-loss-tokens: the registry's parameters
// (analysis/registry.hpp), shared by `analyze` and `export`; analysisParameterUsage() lists them for both
// usages.
AnalysisParams parseAnalysisParams(Args& args);
std::string analysisParameterUsage();
void printEval(const EvalResult& r);

}  // namespace sharelens::cli
