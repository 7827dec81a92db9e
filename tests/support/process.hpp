// Runs a command through /bin/sh and captures its exit status, stdout and stderr (tests of the real CLI).
#pragma once

#include <optional>
#include <string>

namespace sharelens::testing {

struct ProcessResult {
  int exitCode = -1;
  std::string out;
  std::string err;
};

ProcessResult runProcess(const std::string& command);
std::string shellQuote(const std::string& s);
// A TCP port on the loopback interface that nothing listens on now (for a test's c10d rendezvous).
int freeLoopbackPort();  // core's freeLoopbackPort, named for the tests

// Stops this whole process from outside, as `kill -STOP` would, after `afterMs`, for `forMs`, then continues
// it (SIGCONT): a forked helper sends both signals, and this returns once the helper has exited, so the stop
// is over. Returns whether the helper sent both.
bool stopThisProcessFromOutside(int afterMs, int forMs);

// Sets an environment variable of this process for a scope (a fault-injection switch for one test's own
// runs) and puts back what was there before, unset or its old value, when the scope ends. Set it only while
// no other thread reads the environment.
class ScopedEnvironmentVariable {
 public:
  ScopedEnvironmentVariable(std::string name, const std::string& value);
  ~ScopedEnvironmentVariable();
  ScopedEnvironmentVariable(const ScopedEnvironmentVariable&) = delete;
  ScopedEnvironmentVariable& operator=(const ScopedEnvironmentVariable&) = delete;

 private:
  std::string m_name;
  std::optional<std::string> m_previous;
};

}  // namespace sharelens::testing
