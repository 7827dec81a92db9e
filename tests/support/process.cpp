#include "tests/support/process.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

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

ScopedEnvironmentVariable::ScopedEnvironmentVariable(std::string name, const std::string& value)
    : m_name(std::move(name)) {
  if (const char* previous = std::getenv(m_name.c_str())) m_previous = previous;
  ::setenv(m_name.c_str(), value.c_str(), 1);
}

ScopedEnvironmentVariable::~ScopedEnvironmentVariable() {
  if (m_previous)
    ::setenv(m_name.c_str(), m_previous->c_str(), 1);
  else
    ::unsetenv(m_name.c_str());
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

bool stopThisProcessFromOutside(int afterMs, int forMs) {
  const pid_t self = ::getpid();
  const pid_t helper = ::fork();
  if (helper < 0) return false;
  if (helper == 0) {  // only async-signal-safe calls in the child of a threaded process
    auto sleepMs = [](int ms) {
      timespec wait{ms / 1000, static_cast<long>(ms % 1000) * 1'000'000L};
      while (::nanosleep(&wait, &wait) != 0) {
      }
    };
    sleepMs(afterMs);
    const bool stopped = ::kill(self, SIGSTOP) == 0;
    sleepMs(forMs);
    const bool continued = ::kill(self, SIGCONT) == 0;
    ::_exit(stopped && continued ? 0 : 1);
  }
  int status = 0;
  while (::waitpid(helper, &status, 0) < 0)
    if (errno != EINTR) return false;  // no such child (SIGCHLD ignored): do not spin
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace sharelens::testing
