// sharelens inspect PATH [--json FILE]
#include <iostream>

#include "app/cli/commands.hpp"
#include "core/atomic_file.hpp"
#include "core/checkpoint.hpp"
#include "core/inspect_report.hpp"
#include "core/run_dir.hpp"

namespace sharelens::cli {

int runInspect(Args& args) {
  const std::string path = args.positional("PATH (a .safetensors file or a model directory)");
  const auto jsonOut = args.option("json");
  args.finish();
  const auto checkpoint = Checkpoint::open(resolveModelPath(path));
  const Json report = inspectCheckpoint(*checkpoint);
  std::cout << formatInspectReport(report);
  if (jsonOut) writeFileAtomically(*jsonOut, report.dump(2) + "\n");
  return 0;
}

}  // namespace sharelens::cli
