#include "core/outside_stops.hpp"

#include <signal.h>
#include <time.h>

#include <atomic>
#include <cerrno>
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
static_assert(std::atomic<int64_t>::is_always_lock_free && std::atomic<uint64_t>::is_always_lock_free,
              "the SIGCONT handler may only touch lock-free atomics");
struct sigaction g_previousContinue {};

int64_t monotonicNanos() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

bool heartbeatIsStale(int64_t now) {
  return now - g_heartbeatNanos.load() > 2 * kTickNanos;
}

void onContinue(int signal, siginfo_t* info, void* context) {
  const int savedErrno = errno;  // the interrupted code's, whatever the chained handler does
  const int64_t now = monotonicNanos();
  const int64_t sinceHeartbeat = now - g_heartbeatNanos.exchange(now);
  if (sinceHeartbeat > 2 * kTickNanos) g_stoppedNanos.fetch_add(sinceHeartbeat - kTickNanos);
  g_continuations.fetch_add(1);
  if (g_previousContinue.sa_flags & SA_SIGINFO) {
    if (g_previousContinue.sa_sigaction != nullptr) g_previousContinue.sa_sigaction(signal, info, context);
  } else if (g_previousContinue.sa_handler != SIG_DFL && g_previousContinue.sa_handler != SIG_IGN) {
    g_previousContinue.sa_handler(signal);
  }
  errno = savedErrno;
}

[[noreturn]] void beat() {
  int heldTicks = 0;
  for (;;) {
    std::this_thread::sleep_for(kOutsideStopTick);
    const int64_t now = monotonicNanos();
    int64_t seen = g_heartbeatNanos.load();
    if (now - seen > 2 * kTickNanos && ++heldTicks <= kPatienceTicks)
      continue;  // left for the SIGCONT handler, if this was a stop
    heldTicks = 0;
    // Not over a newer time: a stop between the clock read and here ends in a handler that wrote one, and a
    // later SIGCONT would count that stop again from this older beat.
    g_heartbeatNanos.compare_exchange_strong(seen, now);
  }
}

// Started once; the thread is never joined (a child forked from this process has no such thread to join at
// its exit, and the thread may still beat while the process's statics are destroyed).
bool startOnce() {
  static const bool started = [] {
    g_heartbeatNanos.store(monotonicNanos());
    // The thread first: if it cannot start (this throws), nothing is installed and the next call tries again.
    std::thread(beat).detach();
    // The previous handler read before ours is live (a SIGCONT then finds it whole), and never ours (which
    // would call itself).
    struct sigaction previous {};
    sigaction(SIGCONT, nullptr, &previous);
    if (!((previous.sa_flags & SA_SIGINFO) && previous.sa_sigaction == onContinue))
      g_previousContinue = previous;
    struct sigaction action {};
    action.sa_sigaction = onContinue;
    action.sa_flags = SA_SIGINFO | SA_RESTART;  // system calls it interrupts go on
    sigemptyset(&action.sa_mask);
    sigaction(SIGCONT, &action, nullptr);
    return true;
  }();
  return started;
}

}  // namespace

double secondsStoppedFromOutside() {
  startOnce();
  // A SIGCONT wakes every thread at once and its handler runs on one of them: a caller scheduled first would
  // take the stop for running time. While the heartbeat is stale (a stop just ended, or the heartbeat thread
  // is starved) wait up to a tick for the handler, or the heartbeat, to refresh it.
  const int64_t deadline = monotonicNanos() + kTickNanos;
  for (int64_t now = monotonicNanos(); heartbeatIsStale(now) && now < deadline; now = monotonicNanos())
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return static_cast<double>(g_stoppedNanos.load()) * 1e-9;
}

uint64_t outsideContinuations() {
  startOnce();
  return g_continuations.load();
}

}  // namespace sharelens
