// A CLI task: a TaskContext whose stop token Ctrl-C (SIGINT) triggers, and a thread that prints its progress
// to stderr ("\r" updates on a terminal, a line every 10 s otherwise). Restores the old SIGINT handler when
// finished or destroyed.
#pragma once

#include <atomic>
#include <stop_token>
#include <thread>

#include "core/task.hpp"

namespace sharelens::cli {

class CancellableTask {
 public:
  explicit CancellableTask(int threads = 0);
  ~CancellableTask();
  CancellableTask(const CancellableTask&) = delete;
  CancellableTask& operator=(const CancellableTask&) = delete;

  const TaskContext& context() const { return m_context; }
  TaskProgress& progress() { return m_progress; }
  void finish();  // stops the printer and clears its line

 private:
  std::stop_source m_stop;
  TaskProgress m_progress;
  TaskContext m_context;
  std::jthread m_printer;
  bool m_finished = false;
};

}  // namespace sharelens::cli
