// What built this binary, for the records that must say which code produced a result (a run's run.json,
// `sharelens --version`).
#pragma once

#include <string_view>

namespace sharelens {

// The project's version (CMakeLists.txt's project()).
std::string_view sharelensVersion();

// `git describe` of the source tree at build time: the commit (12 hex digits), "-dirty" when tracked files
// differed from it, "unknown" when the tree was not a git checkout (cmake/source_revision.cmake).
std::string_view sourceRevision();

}  // namespace sharelens
