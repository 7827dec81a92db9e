#include "core/assets.hpp"

#include <unistd.h>

#include <cstdlib>

namespace fs = std::filesystem;

namespace sharelens {

fs::path assetsDirectory() {
  if (const char* env = std::getenv("SHARELENS_ASSETS"); env && *env) return env;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec)
    for (const fs::path& candidate :
         {exe.parent_path() / "assets", exe.parent_path().parent_path() / "share" / "sharelens" / "assets"})
      if (fs::is_directory(candidate, ec)) return candidate;
  return fs::path(SHARELENS_SOURCE_DIR) / "assets";
}

}  // namespace sharelens
