// What the GUI-machinery tests share: draining the job system's mailbox as the frame loop does, and
// recording how a job ended.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include "app/gui/jobs.hpp"

namespace sharelens::gui_test {

struct Ended {
  std::optional<gui::JobSystem::Status> status;
  std::string error;
};

// Drains the mailbox the way the frame loop does until `done` holds (or 10 s pass).
template <class Done>
void drainUntil(gui::JobSystem& jobs, Done done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    jobs.drainCompletions();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  jobs.drainCompletions();
}

inline gui::JobSystem::Finished record(Ended& e) {
  return [&e](gui::JobSystem::Status s, const std::string& error) {
    e.status = s;
    e.error = error;
  };
}

}  // namespace sharelens::gui_test
