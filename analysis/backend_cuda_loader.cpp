// Finds and loads the CUDA backend plugin (libsharelens_cuda.so) on first use. The plugin is built when the
// CUDA toolkit is present; the sharelens binary never links CUDA itself, so it starts on machines without
// CUDA libraries and reports why the GPU path is unavailable instead.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "analysis/backend.hpp"

namespace fs = std::filesystem;

namespace sharelens {
namespace {

using Factory = LinalgBackend* (*)(std::string*);

std::vector<fs::path> pluginCandidates() {
  std::vector<fs::path> out;
  if (const char* env = std::getenv("SHARELENS_CUDA_PLUGIN")) out.emplace_back(env);
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    out.push_back(exe.parent_path() / "libsharelens_cuda.so");
    out.push_back(exe.parent_path().parent_path() / "libsharelens_cuda.so");
    out.push_back(exe.parent_path().parent_path() / "lib" / "libsharelens_cuda.so");
  }
#ifdef SHARELENS_PLUGIN_DIR
  out.push_back(fs::path(SHARELENS_PLUGIN_DIR) / "libsharelens_cuda.so");
#endif
  return out;
}

Factory loadFactory(std::string& error) {
  for (const fs::path& candidate : pluginCandidates()) {
    if (!fs::exists(candidate)) continue;
    void* handle = ::dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      error = std::string("cannot load ") + candidate.string() + ": " + ::dlerror();
      return nullptr;
    }
    if (auto factory = reinterpret_cast<Factory>(::dlsym(handle, "sharelens_create_cuda_backend"))) return factory;
    error = candidate.string() + " has no sharelens_create_cuda_backend";
    return nullptr;
  }
  error = "libsharelens_cuda.so not found (this build has no CUDA support; configure with nvcc on the PATH)";
  return nullptr;
}

}  // namespace

std::unique_ptr<LinalgBackend> makeCudaBackend(std::string* whyNot) {
  static std::once_flag once;
  static Factory factory = nullptr;
  static std::string loadError;
  std::call_once(once, [] { factory = loadFactory(loadError); });
  if (!factory) {
    if (whyNot) *whyNot = loadError;
    return nullptr;
  }
  std::string reason;
  std::unique_ptr<LinalgBackend> backend(factory(&reason));
  if (!backend && whyNot) *whyNot = reason;
  return backend;
}

}  // namespace sharelens
