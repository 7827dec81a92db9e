#include "app/cli/progress_printer.hpp"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

namespace sharelens::cli {
namespace {

std::atomic<bool> g_interrupted{false};
struct sigaction g_previousInt {
}, g_previousTerm{};

// Ctrl-C and SIGTERM (a scheduler's or `kill`'s stop) alike: the task stops where it can, a training run
// saving a checkpoint of the step it reached.
void onStopSignal(int) {
  g_interrupted.store(true);
}

}  // namespace

CancellableTask::CancellableTask(int threads) {
  m_context.stop = m_stop.get_token();
  m_context.progress = &m_progress;
  m_context.threads = threads;
  g_interrupted.store(false);
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
      if (g_interrupted.exchange(false) && !m_stop.stop_requested()) {
        m_stop.request_stop();
        std::fprintf(stderr, "\ncancelling (Ctrl-C or SIGTERM)...\n");
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
