#include "app/cli/progress_printer.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>

namespace sharelens::cli {
namespace {

struct sigaction g_previousInt {
}, g_previousTerm{};

// When the first stop signal came (CLOCK_MONOTONIC, ns; 0: none yet, no stop asked for).
std::atomic<int64_t> g_firstSignalNs{0};
constexpr int64_t kSecondSignalAfterNs = 1'000'000'000;

int64_t monotonicNs() {  // clock_gettime is async-signal-safe
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

// Ctrl-C and SIGTERM (a scheduler's or `kill`'s stop) alike: the task stops where it can, a training run
// saving a checkpoint of the step it reached. Another one at least a second later takes the signal's default
// action at once (what a task that never polls for a stop needs; a checkpoint being written is left as its
// earlier complete ones). Within that second it is the same stop arriving twice -- a terminal's Ctrl-C or a
// scheduler's SIGTERM to every process, and the --nproc launcher passing it on -- and changes nothing.
void onStopSignal(int signal) {
  const int64_t now = monotonicNs();
  int64_t first = 0;
  if (!g_firstSignalNs.compare_exchange_strong(first, now) && now - first >= kSecondSignalAfterNs) {
    ::signal(signal, SIG_DFL);
    ::raise(signal);
  }
}

}  // namespace

CancellableTask::CancellableTask(int threads) {
  m_context.stop = m_stop.get_token();
  m_context.progress = &m_progress;
  m_context.threads = threads;
  g_firstSignalNs.store(0);
  struct sigaction action {};
  action.sa_handler = onStopSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &g_previousInt);
  sigaction(SIGTERM, &action, &g_previousTerm);
  const bool terminal = ::isatty(STDERR_FILENO);
  m_printer = std::jthread([this, terminal](std::stop_token stop) {
    using clock = std::chrono::steady_clock;
    auto lastLine = clock::now();
    std::string lastPrinted;
    while (!stop.stop_requested()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (g_firstSignalNs.load() != 0 && !m_stop.stop_requested()) {
        m_stop.request_stop();
        std::fprintf(stderr,
                     "\ncancelling (Ctrl-C or SIGTERM; another one a second later ends it at once)...\n");
      }
      const auto now = clock::now();
      if (terminal && now - lastLine > std::chrono::milliseconds(500)) {
        std::fprintf(stderr, "\r\033[K%5.1f%%  %s", 100.0 * m_progress.fraction(),
                     m_progress.stage().c_str());
        lastLine = now;
      } else if (!terminal &&
                 now - lastLine > std::chrono::seconds(10)) {  // a log: only lines that say something new
        char line[512];
        std::snprintf(line, sizeof line, "%5.1f%%  %s", 100.0 * m_progress.fraction(),
                      m_progress.stage().c_str());
        if (line != lastPrinted) std::fprintf(stderr, "%s\n", line);
        lastPrinted = line;
        lastLine = now;
      }
    }
    if (terminal) std::fprintf(stderr, "\r\033[K");
  });
}

void CancellableTask::finish() {
  if (m_finished) return;
  m_finished = true;
  m_printer.request_stop();
  if (m_printer.joinable()) m_printer.join();
  sigaction(SIGINT, &g_previousInt, nullptr);
  sigaction(SIGTERM, &g_previousTerm, nullptr);
}

CancellableTask::~CancellableTask() {
  finish();
}

}  // namespace sharelens::cli
