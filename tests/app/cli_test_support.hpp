// What the CLI's tests (test_cli.cpp, test_cli_analyze.cpp: one executable) share: the sharelens executable
// under test (SHARELENS_BINARY, set by tests/CMakeLists.txt) and the process helpers they run it with.
#pragma once

#include <filesystem>
#include <string>

#include "tests/support/process.hpp"

namespace sharelens::cli_test {

namespace fs = std::filesystem;
using testing::runProcess;
using testing::shellQuote;

inline const std::string kBinary = SHARELENS_BINARY;

}  // namespace sharelens::cli_test
