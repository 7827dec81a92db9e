#include "core/outside_stops.hpp"

#include <signal.h>
#include <time.h>

#include <atomic>
#include <thread>

namespace sharelens {
namespace {

constexpr int64_t kTickNanos = std::chrono::nanoseconds(kOutsideStopTick).count();
// Ticks a late heartbeat waits for its SIGCONT before it is taken for a starved thread's.
constexpr int kPatienceTicks = 5;

// Lock-free atomics of a clock read with clock_gettime: both safe in a signal handler.
std::atomic<int64_t> g_heartbeatNanos{0};
std::atomic<int64_t> g_stoppedNanos{0};
std::atomic<uint64_t> g_continuations{0};
struct sigaction g_previousContinue {};

int64_t monotonicNanos() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

void onContinue(int signal, siginfo_t* info, void* context) {
  const int64_t now = monotonicNanos();
  const int64_t sinceHeartbeat = now - g_heartbeatNanos.exchange(now);
  if (sinceHeartbeat > 2 * kTickNanos) g_stoppedNanos.fetch_add(sinceHeartbeat - kTickNanos);
  g_continuations.fetch_add(1);
  if (g_previousContinue.sa_flags & SA_SIGINFO) {
    if (g_previousContinue.sa_sigaction != nullptr) g_previousContinue.sa_sigaction(signal, info, context);
  } else if (g_previousContinue.sa_handler != SIG_DFL && g_previousContinue.sa_handler != SIG_IGN) {
    g_previousContinue.sa_handler(signal);
  }
}

[[noreturn]] void beat() {
  int heldTicks = 0;
  for (;;) {
    std::this_thread::sleep_for(kOutsideStopTick);
    const int64_t now = monotonicNanos();
    if (now - g_heartbeatNanos.load() > 2 * kTickNanos && ++heldTicks <= kPatienceTicks)
      continue;  // left for the SIGCONT handler, if this was a stop
    heldTicks = 0;
    g_heartbeatNanos.store(now);
  }
}

// Started once; the thread is never joined (a child forked from this process has no such thread to join at
// its exit, and the thread may still beat while the process's statics are destroyed).
bool startOnce() {
  static const bool started = [] {
    g_heartbeatNanos.store(monotonicNanos());
    struct sigaction action {};
    action.sa_sigaction = onContinue;
    action.sa_flags = SA_SIGINFO | SA_RESTART;  // system calls it interrupts go on
    sigemptyset(&action.sa_mask);
    sigaction(SIGCONT, &action, &g_previousContinue);
    std::thread(beat).detach();
    return true;
  }();
  return started;
}

}  // namespace

double secondsStoppedFromOutside() {
  startOnce();
  return static_cast<double>(g_stoppedNanos.load()) * 1e-9;
}

uint64_t outsideContinuations() {
  startOnce();
  return g_continuations.load();
}

}  // namespace sharelens
