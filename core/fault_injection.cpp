#include "core/fault_injection.hpp"

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <string>
#include <thread>

#include <unistd.h>

namespace sharelens::fault {

#ifdef SHARELENS_FAULT_INJECTION

namespace {

// Read at each question, not once per process, so that a test can set a switch for its own runs and clear
// it after them (testing::ScopedEnvironmentVariable) without deciding what every later test in the same
// process sees. Only tests set these, and only while no run of theirs is going.
std::string variable(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

// "7,9,12-": listed steps, and every step from a number followed by '-'. Unparsable items never match, nor
// does anything when the list is empty (the variable unset).
bool stepListContains(const std::string& spec, int64_t step) {
  size_t start = 0;
  while (start < spec.size()) {
    size_t end = spec.find(',', start);
    if (end == std::string::npos) end = spec.size();
    std::string item = spec.substr(start, end - start);
    start = end + 1;
    const bool openEnded = !item.empty() && item.back() == '-';
    if (openEnded) item.pop_back();
    char* parsedEnd = nullptr;
    const long long first = std::strtoll(item.c_str(), &parsedEnd, 10);
    if (item.empty() || *parsedEnd != '\0') continue;
    if (openEnded ? step >= first : step == first) return true;
  }
  return false;
}

}  // namespace

bool compiledIn() {
  return true;
}

bool nonFiniteLossAt(int64_t step) {
  const std::string spec = variable("SHARELENS_TEST_NONFINITE_STEPS");
  return stepListContains(spec, step);
}

bool outOfMemoryAt(int64_t step) {
  const std::string spec = variable("SHARELENS_TEST_OOM_STEPS");
  return stepListContains(spec, step);
}

bool validationOutOfMemoryAt(int64_t step) {
  const std::string spec = variable("SHARELENS_TEST_VALIDATION_OOM_STEPS");
  return stepListContains(spec, step);
}

bool updateFailsAt(int64_t update) {
  const std::string spec = variable("SHARELENS_TEST_UPDATE_FAIL_STEPS");
  return stepListContains(spec, update);
}

void maybeKillInCheckpoint(std::string_view stage, int checkpointWritesSoFar) {
  const std::string want = variable("SHARELENS_TEST_KILL_IN_CHECKPOINT");
  if (!want.empty() && want == stage && checkpointWritesSoFar >= 2) ::kill(::getpid(), SIGKILL);
}

void delayBeforePauseWait() {
  const long ms = std::atol(variable("SHARELENS_TEST_PAUSE_WAIT_DELAY_MS").c_str());
  if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

void maybeKillAfterSweepPoint(int pointsFinished) {
  const std::string want = variable("SHARELENS_TEST_KILL_AFTER_SWEEP_POINT");
  if (!want.empty() && want == std::to_string(pointsFinished)) ::kill(::getpid(), SIGKILL);
}

#else

bool compiledIn() {
  return false;
}
bool nonFiniteLossAt(int64_t) {
  return false;
}
bool outOfMemoryAt(int64_t) {
  return false;
}
bool validationOutOfMemoryAt(int64_t) {
  return false;
}
bool updateFailsAt(int64_t) {
  return false;
}
void maybeKillInCheckpoint(std::string_view, int) {}
void maybeKillAfterSweepPoint(int) {}
void delayBeforePauseWait() {}

#endif

}  // namespace sharelens::fault
