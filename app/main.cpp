// sharelens: with a subcommand, the headless CLI; without one, the GUI.
#include <iostream>
#include <string>
#include <vector>

#include "app/cli/commands.hpp"
#include "app/gui/gui_main.hpp"
#include "core/error.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty()) {
    if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
      sharelens::cli::printUsage();
      return 0;
    }
    if (const auto* command = sharelens::cli::findCommand(args[0]))
      return sharelens::cli::runCommand(*command, std::vector<std::string>(args.begin() + 1, args.end()));
  }
  return sharelens::gui::runGuiFromArgs(args);
}
