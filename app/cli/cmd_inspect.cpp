// sharelens inspect PATH [--json FILE] [--tensor NAME [--bins N]]
#include <iostream>

#include "app/cli/commands.hpp"
#include "core/atomic_file.hpp"
#include "core/checkpoint.hpp"
#include "core/inspect_report.hpp"
#include "core/run_dir.hpp"
#include "core/tensor_summary.hpp"

namespace sharelens::cli {

int runInspect(Args& args) {
  const std::string path = args.positional("PATH (a .safetensors file or a model directory)");
  const auto jsonOut = args.option("json");
  const auto tensor = args.option("tensor");
  const int bins = static_cast<int>(args.integer("bins", 1, 10000).value_or(40));
  args.finish();
  const auto checkpoint = Checkpoint::open(resolveModelPath(path));
  if (tensor) {  // one tensor in detail: its statistics over every element, histogram and first values
    std::cout << formatTensorSummary(summarizeTensor(*checkpoint, *tensor, bins));
    return 0;
  }
  const Json report = inspectCheckpoint(*checkpoint);
  std::cout << formatInspectReport(report);
  if (jsonOut) writeFileAtomically(*jsonOut, report.dump(2) + "\n");
  return 0;
}

}  // namespace sharelens::cli
