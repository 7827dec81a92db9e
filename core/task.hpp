// What long-running work (an analysis, a training run, a forward pass) gets from whoever started it: a stop
// token to poll, a place to report progress, and how many threads it may use. The GUI's job bar and the
// CLI's stderr progress both read the same TaskProgress.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <stop_token>
#include <string>

#include "core/error.hpp"

namespace sharelens {

// Thread-safe progress: a fraction in [0, 1] and the current stage name.
class TaskProgress {
 public:
  void set(double fraction, std::string stage = {});
  void setFraction(double fraction) { m_fraction.store(fraction, std::memory_order_relaxed); }
  double fraction() const { return m_fraction.load(std::memory_order_relaxed); }
  std::string stage() const;

 private:
  std::atomic<double> m_fraction{0.0};
  mutable std::mutex m_mutex;
  std::string m_stage;
};

struct TaskContext {
  std::stop_token stop;              // default: never requested
  TaskProgress* progress = nullptr;  // may be null
  int threads = 0;                   // 0 = all hardware threads

  void throwIfCancelled() const {
    if (stop.stop_requested()) throw Cancelled();
  }
  void report(double fraction, std::string stage = {}) const {
    if (progress) progress->set(fraction, std::move(stage));
  }
  int threadCount() const;
};

}  // namespace sharelens
