#include "app/cli/commands.hpp"

#include <cstdio>
#include <iostream>

#include "core/error.hpp"

namespace sharelens::cli {

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      {"inspect", "sharelens inspect PATH [--json FILE]",
       "family, config, tensors, parameters by role and the per-layer view of a checkpoint", runInspect},
      {"dump-view", "sharelens dump-view PATH OUT.safetensors",
       "write every canonical matrix (per layer, per head) as F32 safetensors", runDumpView},
      {"analyze",
       "sharelens analyze PATH [--spectra] [--heads] [--layers] [--masa] [--directshare RATIO] [--embedding] "
       "[--threshold 0.95] [--device cpu|cuda] [--threads N] [--masa-groups 0-5,6-11] [--directshare-out DIR] "
       "--json FILE",
       "spectra, head/layer difference maps, Matrix PCA, DirectShare and embedding study as one JSON report",
       runAnalyze},
      {"convert", "sharelens convert PATH OUT.safetensors [--dtype F32|F16|BF16|F64]",
       "merge shards into one file and convert floating tensors to one dtype", runConvert},
  };
  return table;
}

const Command* findCommand(std::string_view name) {
  for (const Command& c : commands())
    if (c.name == name) return &c;
  return nullptr;
}

void printUsage() {
  std::cout << "usage: sharelens [PATH]            open the GUI (on a checkpoint or run directory)\n"
               "       sharelens COMMAND [ARGS]\n\ncommands:\n";
  for (const Command& c : commands()) std::cout << "  " << c.usage << "\n      " << c.summary << "\n";
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
  } catch (const Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace sharelens::cli
