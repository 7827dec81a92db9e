#include "app/gui/gui_main.hpp"

#include <iostream>

#include "app/cli/args.hpp"
#include "app/gui/app.hpp"
#include "app/plot/colormap.hpp"
#include "core/error.hpp"
#include "core/topology_presets.hpp"

namespace sharelens::gui {

int runGuiFromArgs(const std::vector<std::string>& argv) {
  try {
    cli::Args args(
        "",
        "sharelens [PATH] [--demo] [--view NAME] [--screenshot FILE.png --frames N] "
        "[--frame-stats FILE.json] [--no-figure-cache] "
        "[--bench-ui [--bench-live] --frames N] [--size WxH] [--max-wait SECONDS] "
        "[--ui-state FILE.json --exit-after SECONDS [--screenshot FILE.png --screenshot-on-signal]]",
        argv);
    GuiOptions o;
    o.demo = args.flag("demo");
    o.benchUi = args.flag("bench-ui");
    o.benchLive = args.flag("bench-live");
    if (o.benchLive && !o.benchUi)
      throw Error({.what = "--bench-live changes the frame-time benchmark's scene",
                   .where = "--bench-live",
                   .expected = "--bench-ui beside it",
                   .hint = "sharelens --bench-ui --bench-live --frame-stats f.json"});
    o.screenshot = args.option("screenshot");
    o.screenshotOnSignal = args.flag("screenshot-on-signal");
    if (o.screenshotOnSignal && !o.screenshot)
      throw Error({.what = "--screenshot-on-signal writes the --screenshot file on SIGUSR1",
                   .where = "--screenshot-on-signal",
                   .expected = "--screenshot FILE.png beside it",
                   .hint = "sharelens --ui-state s.json --screenshot shot.png --screenshot-on-signal"});
    o.frames = static_cast<int>(args.integer("frames", 1, 10'000'000).value_or(o.benchUi ? 600 : 3));
    o.maxWaitSeconds = static_cast<int>(args.integer("max-wait", 0, 86400).value_or(120));
    if (auto view = args.option("view")) {
      o.view = viewFromLabel(*view);
      if (!o.view)
        throw Error({.what = "unknown view",
                     .where = "--view",
                     .expected = viewLabels(),
                     .found = "'" + *view + "'",
                     .hint = "name one of the main window's tabs (any case)"});
    }
    o.frameStats = args.option("frame-stats");
    o.figureCache = !args.flag("no-figure-cache");
    o.uiState = args.option("ui-state");
    if (auto seconds = args.integer("exit-after", 1, 86400)) o.exitAfterSeconds = static_cast<int>(*seconds);
    if (auto size = args.option("size")) {
      const auto x = size->find('x');
      try {
        o.width = std::stoi(size->substr(0, x));
        o.height = std::stoi(size->substr(x + 1));
      } catch (const std::exception&) {
        throw Error({.what = "bad window size",
                     .where = "--size",
                     .expected = "WIDTHxHEIGHT, like 1600x1000",
                     .found = *size});
      }
    }
    o.path = args.optionalPositional();
    args.finish();
    plot::loadColormaps();  // a missing or broken colour map is reported here, not mid-frame
    demoTopology();         // so is the Designer's starting design (assets/topologies/demo.json)
    return runGui(o);
  } catch (...) {
    bool internal = false;
    const Error error = errorFromException(std::current_exception(), &internal);
    std::cerr << "error: " << error.what() << "\n";
    return internal ? 1 : 2;
  }
}

}  // namespace sharelens::gui
