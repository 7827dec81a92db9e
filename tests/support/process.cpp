#include "tests/support/process.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/machine.hpp"
#include "tests/support/hf_fixtures.hpp"

namespace sharelens::testing {

std::string shellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

int freeLoopbackPort() {
  return sharelens::freeLoopbackPort("a test's c10d rendezvous");
}

ProcessResult runProcess(const std::string& command) {
  // every command a test runs checks that its usage lists the options it reads (cli::Args::finish)
  ::setenv("SHARELENS_CHECK_USAGE", "1", 0);
  const auto dir = makeTempDir("proc");
  const auto outPath = dir / "out", errPath = dir / "err";
  const std::string full = command + " >" + shellQuote(outPath) + " 2>" + shellQuote(errPath);
  const int status = std::system(full.c_str());
  ProcessResult r;
  r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  auto slurp = [](const std::filesystem::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  r.out = slurp(outPath);
  r.err = slurp(errPath);
  std::filesystem::remove_all(dir);
  return r;
}

}  // namespace sharelens::testing
