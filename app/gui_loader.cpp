#include "app/gui_loader.hpp"

#include <iostream>

#include "core/error.hpp"
#include "core/plugin.hpp"

namespace sharelens {

int runGuiPlugin(const std::vector<std::string>& args) {
  using Entry = int (*)(int, const char* const*);
  if (!SHARELENS_GUI_BUILT) {
    std::cerr << "error: "
              << Error({.what = "this sharelens has no GUI",
                        .where = "sharelens",
                        .expected = "a subcommand",
                        .found = args.empty() ? "no subcommand" : args.front(),
                        .hint = "it was built with -DSHARELENS_BUILD_GUI=OFF; `sharelens --help` lists the "
                                "subcommands, which all run without a window"})
                     .what()
              << "\n";
    return 2;
  }
  const PluginSpec spec{.fileName = "libsharelens_gui.so", .envOverride = "SHARELENS_GUI_PLUGIN"};
  std::string whyNot;
  const auto entry = reinterpret_cast<Entry>(loadPluginEntryPoint(spec, "sharelens_gui_main", &whyNot));
  if (!entry) {
    std::cerr << "error: "
              << Error({.what = "the GUI cannot start",
                        .where = spec.fileName,
                        .found = whyNot,
                        .hint = "the GUI needs libGL and libglfw; every subcommand runs without them "
                                "(`sharelens --help` lists them)"})
                     .what()
              << "\n";
    return 2;
  }
  std::vector<const char*> argv;
  argv.reserve(args.size());
  for (const auto& a : args) argv.push_back(a.c_str());
  return entry(static_cast<int>(argv.size()), argv.data());
}

}  // namespace sharelens
