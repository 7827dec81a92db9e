// The message of the sharelens::Error that `fn` throws, or "" when it throws none: tests then check that
// the message names the file, field, expected vs found and a hint.
#pragma once

#include <functional>
#include <string>

#include "core/error.hpp"

namespace sharelens::testing {

inline std::string errorOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace sharelens::testing
