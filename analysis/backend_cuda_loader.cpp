// Finds and loads the CUDA backend plugin (libsharelens_cuda.so) on first use. The plugin is built when the
// CUDA toolkit is present; the sharelens binary never links CUDA itself, so it starts on machines without
// CUDA libraries and reports why the GPU path is unavailable instead.
#include <mutex>

#include "analysis/backend.hpp"
#include "core/plugin.hpp"

namespace sharelens {
namespace {

using Factory = LinalgBackend* (*)(std::string*);

Factory loadFactory(std::string& error) {
  const PluginSpec spec{.fileName = "libsharelens_cuda.so", .envOverride = "SHARELENS_CUDA_PLUGIN"};
  auto factory =
      reinterpret_cast<Factory>(loadPluginEntryPoint(spec, "sharelens_create_cuda_backend", &error));
  if (!factory && error.find("not found") != std::string::npos)
    error += "; this build has no CUDA support: configure with nvcc on the PATH";
  return factory;
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
