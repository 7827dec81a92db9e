// User-facing errors. Every failure that a person can cause (a bad file, a bad flag, a bad topology)
// becomes a sharelens::Error that says what went wrong, where (file, tensor, field), what was expected
// versus found, and what to do about it. Code that catches it shows error.what(); code that wants to
// react to the parts reads error.details().
#pragma once

#include <exception>
#include <stdexcept>
#include <string>

namespace sharelens {

struct ErrorDetails {
  std::string what;      // the problem, e.g. "tensor byte range does not match shape x dtype"
  std::string where;     // the place, e.g. "/m/model.safetensors: tensor 'lm_head.weight'"
  std::string expected;  // optional: what a valid input has
  std::string found;     // optional: what this input has
  std::string hint;      // optional: what the user can do
};

// "WHERE: WHAT (expected E, found F). Hint: H" with empty parts left out.
std::string formatError(const ErrorDetails& details);

class Error : public std::runtime_error {
 public:
  explicit Error(ErrorDetails details);
  const ErrorDetails& details() const { return m_details; }

 private:
  ErrorDetails m_details;
};

// Any exception as the error model, for the outermost catch of an entry point (a command, a job, a training
// thread): a sharelens::Error as it is; a std::filesystem::filesystem_error with its path and the system's
// reason (a symlink loop, a path through a file, no permission); std::bad_alloc and length errors as "out of
// memory" with a hint; anything else as an internal error. `internal` says which of these it was not.
Error errorFromException(std::exception_ptr exception, bool* internal = nullptr);

// Thrown when a job is cancelled through its stop token; never shown as an error.
class Cancelled : public std::runtime_error {
 public:
  Cancelled() : std::runtime_error("cancelled") {}
};

}  // namespace sharelens
