#include "app/cli/commands.hpp"

#include <cstdio>
#include <iostream>
#include <span>

#include "analysis/embedding_study.hpp"
#include "app/gui/view_id.hpp"
#include "app/plot/figures.hpp"
#include "core/compression_methods.hpp"
#include "core/corpus.hpp"
#include "core/error.hpp"
#include "core/topology_presets.hpp"

namespace sharelens::cli {
namespace {

// The parts of the usage text that registries own, so that they cannot drift from what the commands accept.

// "[--activations] [--spectra] ...": each analysis of the registry as its flag (embedding-loss with its
// token count inside its brackets).
std::string analysisFlags() {
  std::string out;
  for (const AnalysisKind& k : analysisKinds()) {
    out += (out.empty() ? "[--" : " [--") + std::string(k.id);
    if (k.id == analyses::kEmbeddingLoss.id) out += " [--embedding-loss-tokens 8192]";
    out += "]";
  }
  return out;
}

// "--activations and --embedding-loss": the analyses `analyze` runs only when named.
std::string analysesOnlyWhenNamed() {
  std::vector<std::string> named;
  for (const AnalysisKind& k : analysisKinds())
    if (!k.inDefaultSet) named.push_back("--" + std::string(k.id));
  std::string out;
  for (size_t i = 0; i < named.size(); ++i)
    out += (i == 0 ? "" : i + 1 == named.size() ? " and " : ", ") + named[i];
  return out;
}

std::string joined(std::span<const std::string_view> names, std::string_view separator) {
  std::string out;
  for (std::string_view n : names) out += (out.empty() ? "" : std::string(separator)) + std::string(n);
  return out;
}

// "vanilla|sequence|...": the sharing patterns `topology --preset` builds.
std::string patternChoices() {
  std::vector<std::string_view> names;
  for (SharingPattern p : kAllPatterns) names.push_back(patternName(p));
  return joined(names, "|");
}

}  // namespace

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      {"inspect", "sharelens inspect PATH [--json FILE] [--tensor NAME [--bins N]]",
       "family, config, tensors, parameters by role and the per-layer view of a checkpoint", runInspect},
      {"diff", "sharelens diff A B [--top 30] [--json FILE]",
       "tensor by tensor, how checkpoint B differs from A (two steps of a run, a model and its fine-tune): "
       "relative Frobenius difference, cosine and largest change, the most changed first; tensors only in "
       "one, or of other shapes",
       runDiff},
      {"dump-view", "sharelens dump-view PATH OUT.safetensors",
       "write every canonical matrix (per layer, per head) as F32 safetensors", runDumpView},
      {"analyze",
       "sharelens analyze PATH " + analysisFlags() + " " + analysisParameterUsage() +
           " [--masa-groups 0-5,6-11|kl|kl:G|kl-peaks] [--directshare-out DIR] [--device cpu|cuda] "
           "[--threads N] --json FILE",
       "the analyses of the registry as one JSON report (when no analysis is named, all but " +
           analysesOnlyWhenNamed() +
           ", which run the model over text): "
           "spectra, "
           "head and layer difference maps, Matrix PCA, learned MASA atoms, DirectShare, the embedding "
           "study, "
           "and the "
           "model run over text (layer-output differences, logit-lens drift, attention similarity)",
       runAnalyze},
      {"topology",
       "sharelens topology --preset " + patternChoices() +
           " --layers L "
           "--unique U "
           "[--depth 1|1.5|3|skinny] [--d-model D] [--heads H] [--kv-heads K] [--ffn F] [--vocab V] "
           "[--context "
           "T] "
           "[--lora-rank R | --parameter-matched] [--ffn-tie-interior K] [--embedding-rank R] "
           "[--untied-embeddings] "
           "--out FILE",
       "write a sharing-topology preset as a topology file, and print its parameter budget; "
       "--parameter-matched "
       "builds it as we read [LRS] Table 3 (U = L/2, the LoRA rank solved to the unshared model's "
       "parameters; "
       "the paper states neither, this reading reproduces its ranks)",
       runTopology},
      {"params",
       "sharelens params TOPOLOGY [--match-baseline OUT.json] [--solve-lora-rank N | --budget-of OTHER.json "
       "[--lora layer|head] --out SOLVED.json] [--batch N] [--anywhere] [--json FILE]",
       "parameters by group, rho, FLOPs per token, training memory; the parameter-matched baseline "
       "(non-embedding "
       "parameters matched); the LoRA rank that meets a non-embedding budget. Refuses what `train` here "
       "cannot hold "
       "(--anywhere plans for another machine)",
       runParams},
      {"train",
       "sharelens train (--topology FILE | --init CHECKPOINT [--postshare ALPHA --gamma G] [--context T]) "
       "--corpus CORPUS|DIR --out RUN_DIR [--steps N] [--resume] [--threads N] [--compare] [--batch N] "
       "[--lr X] "
       "[--warmup N] [--seed S] [--device cpu|cuda] [--checkpoint-every N] [--keep-checkpoints log|all|N] "
       "[--eval-every N] [--eval-batches N] [--eval-tokens N|all] "
       "[--nproc N] [--dist-timeout S] [--check-weights-every K]",
       "pretrain a topology (with --compare beside its parameter-matched baseline), or post-train a "
       "checkpoint "
       "(with --postshare: PostShare on its DirectShare pairs, then the four models evaluated)",
       runTrain},
      {"eval",
       "sharelens eval CHECKPOINT [--corpus CORPUS|DIR] [--tokens 32768] [--window W] [--token-ids FILE] "
       "[--validation-fraction 0.05] [--device cpu|cuda] [--threads N] [--json FILE]",
       "validation NLL per token and perplexity on held-out text, with the checkpoint's own tokenizer (a "
       "run's "
       "checkpoint: its own corpus and held-out documents unless --corpus / --validation-fraction say "
       "otherwise)",
       runEval},
      {"experiment",
       "sharelens experiment run FILE --out DIR [--archive DIR] [--profile NAME] [--parallel N (default: "
       "one run per thread)] [--steps N] [--seeds K] [--threads N] | "
       "sharelens experiment plan FILE --out DIR [--archive DIR] [--profile NAME] [--parallel N] "
       "[--threads N] | "
       "sharelens experiment sizes FILE [--profile NAME] | "
       "sharelens experiment report DIR [--json FILE] [--md FILE] [--figures DIR] [--reproduce COMMAND] "
       "[--summary FILE]",
       "run a paper's claim as arms x seeds (resuming what is unfinished); size it (what each arm holds and "
       "costs, tokens per parameter at each pilot budget); plan it first (a learning-rate "
       "sweep per arm, a pilot of the reference and its A/A arm: the tokens and seeds that reach the file's "
       "target interval, written as DIR/planned.json); or report it: held-out NLL with 95% intervals over "
       "seeds, paired differences to the reference arm, and a verdict; --archive keeps the finished runs' "
       "results (no checkpoints) in a directory to commit, and continues from them on a fresh clone; "
       "--seeds K above the file's adds seeds to the finished runs; --summary writes the one-row table "
       "docs/CLAIMS.md's summary is made of",
       runExperimentCommand},
      {"compress",
       "sharelens compress PATH [--method " + compressionMethodList("|") +
           "] --ratio A [--groups kl:G|0-0,1-10,11-11] "
           "[--atoms B] [--budget exact|eq13] [--allocation tail-energy|by-shape] "
           "[--projections q,k,v,o] [--calibration CORPUS[:N] | --calibration-ids FILE] "
           "[--logit-lens per-sample|mean-state] "
           "[--eval [--eval-tokens N|all | --eval-ids FILE]] "
           "[--sweep 0.9,0.8,0.7,0.6 [--methods " +
           compressionMethodList(",") +
           "]] [--device cpu|cuda] [--threads N] --out "
           "DIR [--json FILE]",
       "compress a pretrained model's attention without training: MASA (Matrix PCA atoms per layer group + "
       "whitened "
       "low-rank residuals, ranks moved within Q, K and O, V by the paper's Algorithm 1) or the SVD-LLM "
       "baseline, to a checkpoint "
       "every "
       "command opens; --sweep writes models, a table and a figure of perplexity against ratio",
       runCompress},
      {"export-hf", "sharelens export-hf PATH OUT_DIR",
       "materialise a ShareLens checkpoint's per-layer weights in Hugging Face Llama layout (a compressed "
       "checkpoint: "
       "its own family's layout)",
       runExportHf},
      {"export",
       "sharelens export --view ID --input PATH --out FILE.{png,svg,pdf,csv (training)} [--formats "
       "png,svg,pdf "
       "(the figure in each: --out's name with each extension; training: csv too)] [--layer L] [--proj "
       "P (heads: that projection's heads only)] [--fit-range (heads: colours span the shown ranks)] "
       "[--linear-y] [--absolute (spectrum: sigma_i, not sigma_i / sigma_1)] "
       "[--group G] "
       "[--colormap C] [--matrices A,B] [--quantity " +
           joined(plot::kRankQuantityNames, "|") +
           "] [training: --input RUN[,RUN...] (run or experiment directories) --metric " +
           joined(plot::kRunMetricIds, "|") + " --axis " + joined(plot::kRunAxisIds, "|") +
           " --smoothing S --log-y --group-seeds] [experiment-curves: --axis tokens|flops] "
           "[tensor-histogram: --tensor NAME] [head-pair-spectrum: --layer L --pair A,B (head labels: "
           "q0,k1)] "
           "[--size screen|single|double|WxH (inches)] [--dpi N] [--font-scale F] [--width PT] [--height PT] "
           "[--no-title (a paper's caption carries it)] " +
           analysisParameterUsage(),
       "render a figure (" + exportViewIds() +
           ") without a window; PATH is a checkpoint, a report from analyze, a run directory, a topology "
           "(topology, topology-graph: or a run's), an experiment's --out (experiment-*) or a sweep's "
           "(compression-sweep)",
       runExport},
      {"hidden-states", "sharelens hidden-states PATH --token-ids FILE --out OUT.safetensors",
       "the residual stream after every layer (and the logits) of a token sequence", runHiddenStates},
      {"tokenize",
       "sharelens tokenize PATH [--text TEXT | --file FILE | --texts-json FILE] [--special] [--json FILE]",
       "token ids with a checkpoint's tokenizer (tokenizer.json or SentencePiece)", runTokenize},
      {"convert", "sharelens convert PATH OUT.safetensors [--dtype F32|F16|BF16|F64]",
       "one safetensors file from a checkpoint (shards merged; a GGUF, llama2.c or PyTorch file with its "
       "config.json beside, quantised tensors dequantised), "
       "floating tensors in one dtype",
       runConvert},
  };
  return table;
}

const Command* findCommand(std::string_view name) {
  for (const Command& c : commands())
    if (c.name == name) return &c;
  return nullptr;
}

void printUsage() {
  std::cout
      << "usage: sharelens [PATH] [GUI OPTIONS]   open the GUI (on a checkpoint, run directory or topology)\n"
         "       sharelens COMMAND [ARGS]\n"
         "       sharelens --version          the version and the source revision it was built from\n\n"
         "GUI options:\n"
         "  --demo                  train the demo topology and its baseline, and follow them\n"
         "  --view NAME             start on a view (any case): "
      << gui::viewLabels()
      << "\n"
         "  --size WxH              window size\n"
         "for tests and benchmarks:\n"
         "  --screenshot FILE.png   save a screenshot after --frames N frames (default 3) and exit, once "
         "the\n"
         "                          jobs the view started are done or --max-wait S seconds (default 120) "
         "passed\n"
         "  --ui-state FILE.json    write widget positions and view state each frame (scripted clicks)\n"
         "  --exit-after S          close the window after S seconds\n"
         "  --bench-ui [--bench-live] --frames N --frame-stats FILE.json\n"
         "                          the frame-time benchmark's scene (--bench-live: one curve gains a step\n"
         "                          every 250 ms), its per-frame UI-thread times written to FILE.json\n"
         "  --no-figure-cache       draw every figure every frame instead of unchanged ones from a "
         "picture\n\n"
         "commands:\n";
  for (const Command& c : commands()) std::cout << "  " << c.usage << "\n      " << c.summary << "\n";
  std::cout << "\ncorpora (CORPUS; or a directory of .txt files):\n";
  for (const NamedCorpus& c : namedCorpora()) std::cout << "  " << c.name << ": " << c.description << "\n";
}

int runCommand(const Command& command, std::vector<std::string> argv) {
  for (const std::string& a : argv)
    if (a == "--help" || a == "-h") {
      std::cout << "usage: " << command.usage << "\n" << command.summary << "\n";
      return 0;
    }
  try {
    Args args(std::string(command.name), std::string(command.usage), std::move(argv));
    return command.run(args);
  } catch (const Cancelled&) {
    std::cerr << "sharelens " << command.name << ": cancelled\n";
    return 130;
  } catch (...) {
    bool internal = false;
    const Error error = errorFromException(std::current_exception(), &internal);
    std::cerr << "error: " << error.what() << "\n";
    return internal ? 1 : 2;
  }
}

}  // namespace sharelens::cli
