// parallelFor: body(i) for i in [0, n) on the task's threads, dynamically scheduled (items differ in cost),
// stopping at the next item once the task is cancelled. The first exception is rethrown on the caller.
#pragma once

#include <cstddef>
#include <functional>

#include "core/task.hpp"

namespace sharelens {

void parallelFor(size_t n, const TaskContext& ctx, const std::function<void(size_t)>& body);

}  // namespace sharelens
