// Locating and loading ShareLens's own plugins (shared objects that keep a conflicting dependency out of the
// main process's global symbol scope): the CUDA backend, which must not make CUDA a start-up requirement,
// and SentencePiece, whose bundled protobuf-lite would otherwise interpose on LibTorch's libprotobuf.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace sharelens {

struct PluginSpec {
  std::string fileName;     // e.g. "libsharelens_spm.so"
  std::string envOverride;  // an environment variable holding an explicit path, checked first
  bool isolateSymbols =
      false;  // RTLD_DEEPBIND: the plugin and its dependencies bind to their own symbols first
};

// Where a plugin is looked for, in order: $envOverride, beside the executable, its parent directory, ../lib,
// and the build directory the code was compiled in.
std::vector<std::filesystem::path> pluginCandidates(const PluginSpec& spec);

// dlopen()s the first candidate that exists and returns dlsym(entryPoint), or nullptr with *error saying why
// (not found: the candidates tried; found but unloadable: dlerror). Plugins are never unloaded.
void* loadPluginEntryPoint(const PluginSpec& spec, const char* entryPoint, std::string* error);

}  // namespace sharelens
