// sharelens: with a subcommand, the headless CLI; without one, the GUI (its plugin, app/gui_loader.hpp).
#include <csignal>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "app/cli/commands.hpp"
#include "app/gui_loader.hpp"
#include "core/build_info.hpp"
#include "core/error.hpp"
#include "core/heap.hpp"
#include "trainer/tensor_memory.hpp"

int main(int argc, char** argv) {
  // Before any thread exists: LibTorch reads its CPU allocator without a lock (trainer/tensor_memory.hpp).
  sharelens::installTensorMemoryCounting();
  // A pipe whose reader went away (`--json /dev/stdout | head`) is an EPIPE error with a message, not a
  // silent death by SIGPIPE (core/atomic_file.hpp writes into pipes).
  std::signal(SIGPIPE, SIG_IGN);
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty()) {
    const std::string& first = args[0];
    if (first == "--help" || first == "-h" || first == "help") {
      sharelens::cli::printUsage();
      return 0;
    }
    if (first == "--version") {  // what a bug report or a result's provenance needs
      std::cout << "sharelens " << sharelens::sharelensVersion() << " (source " << sharelens::sourceRevision()
                << ")\n";
      return 0;
    }
    if (const auto* command = sharelens::cli::findCommand(first)) {
      // The commands' large per-layer buffers; the GUI tunes the heap for its frames instead (gui/app.cpp).
      sharelens::keepLargeBuffersInHeap();
      return sharelens::cli::runCommand(*command, std::vector<std::string>(args.begin() + 1, args.end()));
    }
    // A bare word that names neither a command nor something on disk is a mistyped command, not a model.
    std::error_code ec;
    if (!first.empty() && first[0] != '-' && !std::filesystem::exists(first, ec) &&
        first.find('/') == std::string::npos && first.find('.') == std::string::npos) {
      std::cerr << "error: "
                << sharelens::Error(
                       {.what = "unknown command",
                        .where = "sharelens",
                        .found = "'" + first + "'",
                        .hint = "`sharelens --help` lists the commands; to open a model, give its path"})
                       .what()
                << "\n";
      return 2;
    }
  }
  return sharelens::runGuiPlugin(args);
}
