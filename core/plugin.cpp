#include "core/plugin.hpp"

#include <dlfcn.h>

#include <cstdlib>

namespace fs = std::filesystem;

namespace sharelens {

std::vector<fs::path> pluginCandidates(const PluginSpec& spec) {
  std::vector<fs::path> out;
  if (!spec.envOverride.empty())
    if (const char* env = std::getenv(spec.envOverride.c_str()); env && *env) out.emplace_back(env);
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    out.push_back(exe.parent_path() / spec.fileName);
    out.push_back(exe.parent_path().parent_path() / spec.fileName);
    out.push_back(exe.parent_path().parent_path() / "lib" / spec.fileName);
  }
#ifdef SHARELENS_PLUGIN_DIR
  out.push_back(fs::path(SHARELENS_PLUGIN_DIR) / spec.fileName);
#endif
  return out;
}

void* loadPluginEntryPoint(const PluginSpec& spec, const char* entryPoint, std::string* error) {
  std::string tried;
  for (const fs::path& candidate : pluginCandidates(spec)) {
    tried += (tried.empty() ? "" : ", ") + candidate.string();
    if (!fs::exists(candidate)) continue;
    int flags = RTLD_NOW | RTLD_LOCAL;
#ifdef RTLD_DEEPBIND
    if (spec.isolateSymbols) flags |= RTLD_DEEPBIND;
#endif
    void* handle = ::dlopen(candidate.c_str(), flags);
    if (!handle) {
      if (error) *error = "cannot load " + candidate.string() + ": " + ::dlerror();
      return nullptr;
    }
    if (void* symbol = ::dlsym(handle, entryPoint)) return symbol;
    if (error) *error = candidate.string() + " has no entry point " + entryPoint;
    return nullptr;
  }
  if (error) *error = spec.fileName + " not found (looked in " + tried + ")";
  return nullptr;
}

}  // namespace sharelens
