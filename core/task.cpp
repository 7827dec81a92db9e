#include "core/task.hpp"

#include <thread>

namespace sharelens {

void TaskProgress::set(double fraction, std::string stage) {
  m_fraction.store(fraction, std::memory_order_relaxed);
  if (!stage.empty()) {
    std::lock_guard lock(m_mutex);
    m_stage = std::move(stage);
  }
}

std::string TaskProgress::stage() const {
  std::lock_guard lock(m_mutex);
  return m_stage;
}

int TaskContext::threadCount() const {
  if (threads > 0) return threads;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

}  // namespace sharelens
